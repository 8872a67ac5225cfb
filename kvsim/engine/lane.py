"""A lane (a spec, its cache and its policy's description) and what its records say it read and held:
its key positions as runs, and — for a lossy lane — which of its stored rows changed since they were
last recorded (so a trace stays O(n))."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import torch

from ..caches import Cache, LaneSpec, PolicyInfo
from ..caches.weights import weights_label

if TYPE_CHECKING:
    from ..models.transformer import Transformer
    from .speculative import SpeculativeLane


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
        self.known: torch.Tensor | None = None  # (L, H_kv, N) bool: that layer's head has recorded that row

    def _reserve(self, k: torch.Tensor, v: torch.Tensor, layers: int, need: int) -> None:
        """Room for positions below ``need`` (k, v: one layer's rows, for the heads, widths and dtype)."""
        if self.k is not None and self.k.shape[2] >= need:
            return
        cap = max(64, need, 2 * (self.k.shape[2] if self.k is not None else 0))
        heads = k.shape[-3]
        new_k = k.new_zeros((layers, heads, cap, k.shape[-1]))
        new_v = v.new_zeros((layers, heads, cap, v.shape[-1]))
        known = torch.zeros((layers, heads, cap), dtype=torch.bool, device=k.device)
        if self.k is not None and self.v is not None and self.known is not None:  # allocated together
            n = self.k.shape[2]
            new_k[:, :, :n], new_v[:, :, :n], known[:, :, :n] = self.k, self.v, self.known
        self.k, self.v, self.known = new_k, new_v, known

    def changed(self, k: torch.Tensor, v: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Positions (sorted) whose rows are new or differ from the recorded ones; updates the mirror."""
        self._reserve(k[0], v[0], k.shape[0], int(positions.max()) + 1 if positions.numel() else 0)
        assert self.k is not None and self.v is not None and self.known is not None  # allocated together
        old_k, old_v = self.k[:, :, positions], self.v[:, :, positions]
        differs = (old_k != k).flatten(0, 1).any(-1).any(0) | (old_v != v).flatten(0, 1).any(-1).any(0)
        mask = differs | ~self.known[:, :, positions].flatten(0, 1).all(0)
        self.k[:, :, positions], self.v[:, :, positions] = k, v
        self.known[:, :, positions] = True
        return positions[mask]

    def changed_held(self, held: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]) -> torch.Tensor:
        """As ``changed`` for layers or heads that hold different rows — ``held`` is each layer's
        ``Cache.held_rows``: (1, H_kv, S, D) twice and positions (S,) or, one set per head, (H_kv, S)
        (eviction by attention; ``kv`` on Gemma 3, whose local layers keep only their window). Each
        layer's head is compared at its own positions; the union of the changed ones is returned. A head
        that does not hold a returned position keeps in the mirror what it last held there (zeros if never)."""
        need = max((int(pos.max()) + 1 for _, _, pos in held if pos.numel()), default=0)
        self._reserve(held[0][0][0], held[0][1][0], len(held), need)
        assert self.k is not None and self.v is not None and self.known is not None  # allocated together
        hit = torch.zeros(self.k.shape[2], dtype=torch.bool, device=self.k.device)
        for layer, (k, v, pos) in enumerate(held):
            heads = k.shape[1]
            per_head = pos if pos.ndim == 2 else pos.expand(heads, -1)
            for h in range(heads):
                p = per_head[h]
                old_k, old_v = self.k[layer, h, p], self.v[layer, h, p]
                differs = (old_k != k[0, h]).any(-1) | (old_v != v[0, h]).any(-1) | ~self.known[layer, h, p]
                hit[p[differs]] = True
                self.k[layer, h, p], self.v[layer, h, p] = k[0, h], v[0, h]
                self.known[layer, h, p] = True
        return torch.nonzero(hit).flatten()

    def rows(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The recorded rows at ``positions``: (L, H_kv, R, D) twice."""
        assert self.k is not None and self.v is not None
        return self.k[:, :, positions], self.v[:, :, positions]

    def truncate(self, n_tokens: int) -> None:
        if self.known is not None:
            self.known[:, :, n_tokens:] = False


class Lane:
    """One lane of a run: its spec, its cache and what its policy says of itself."""

    def __init__(self, spec: LaneSpec, cache: Cache) -> None:
        self.spec = spec
        self.cache = cache
        self.info: PolicyInfo = cache.describe()
        if spec.weights:  # quantized weights: its rows and logits differ from full precision's
            self.info = replace(self.info, title=f"{self.info.title} · weights {weights_label(spec.weights).upper()}", lossy=True)
        self.mirror = RowMirror() if self.info.lossy else None  # the rows recorded so far
        self.model: Transformer = None  # type: ignore[assignment]  # set by kvsim.engine.model_side.attach
        self.driver: SpeculativeLane | None = None  # a speculative lane's drafter and checker (spec:K:DRAFT)
        self.weight_bytes: dict[str, int] = {}

    @property
    def name(self) -> str:
        return self.spec.name
