"""A lane (a spec, its cache and its policy's description) and what its records say it read and held:
its key positions as runs, and — for a lossy lane — which of its stored rows changed since they were
last recorded (so a trace stays O(n))."""

from __future__ import annotations

import numpy as np
import torch

from ..caches import Cache, LaneSpec, PolicyInfo


def lane_spans(positions: np.ndarray, n: int) -> tuple[tuple[int, int], ...] | None:
    """Key positions as [start, end) runs; None when they are exactly 0..n-1 (nothing evicted)."""
    if positions.size == n and (n == 0 or (positions[0] == 0 and positions[-1] == n - 1 and np.all(np.diff(positions) == 1))):
        return None
    if positions.size == 0:
        return ()
    breaks = np.nonzero(np.diff(positions) != 1)[0]
    starts = np.concatenate([[positions[0]], positions[breaks + 1]])
    ends = np.concatenate([positions[breaks] + 1, [positions[-1] + 1]])
    return tuple((int(a), int(b)) for a, b in zip(starts, ends, strict=True))


class RowMirror:
    """The rows of a lossy lane as last recorded, by absolute position, to record only what changed."""

    def __init__(self) -> None:
        self.k: torch.Tensor | None = None  # (L, H_kv, N, D)
        self.v: torch.Tensor | None = None
        self.known: torch.Tensor | None = None  # (N,) bool

    def changed(self, k: torch.Tensor, v: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Positions (sorted) whose rows are new or differ from the recorded ones; updates the mirror."""
        need = int(positions.max()) + 1 if positions.numel() else 0
        if self.k is None or self.k.shape[2] < need:
            cap = max(64, need, 2 * (self.k.shape[2] if self.k is not None else 0))
            shape = (k.shape[0], k.shape[1], cap, k.shape[3])
            new_k, new_v = k.new_zeros(shape), v.new_zeros(shape)
            known = torch.zeros(cap, dtype=torch.bool, device=k.device)
            if self.k is not None and self.v is not None and self.known is not None:  # allocated together
                n = self.k.shape[2]
                new_k[:, :, :n], new_v[:, :, :n], known[:n] = self.k, self.v, self.known
            self.k, self.v, self.known = new_k, new_v, known
        assert self.v is not None and self.known is not None  # allocated with self.k
        old_k, old_v = self.k[:, :, positions], self.v[:, :, positions]
        differs = (old_k != k).flatten(0, 1).any(-1).any(0) | (old_v != v).flatten(0, 1).any(-1).any(0)
        mask = differs | ~self.known[positions]
        self.k[:, :, positions], self.v[:, :, positions] = k, v
        self.known[positions] = True
        return positions[mask]

    def truncate(self, n_tokens: int) -> None:
        if self.known is not None:
            self.known[n_tokens:] = False


class Lane:
    """One lane of a run: its spec, its cache and what its policy says of itself."""

    def __init__(self, spec: LaneSpec, cache: Cache) -> None:
        self.spec = spec
        self.cache = cache
        self.info: PolicyInfo = cache.describe()
        self.mirror = RowMirror() if self.info.lossy else None  # the rows recorded so far

    @property
    def name(self) -> str:
        return self.spec.name
