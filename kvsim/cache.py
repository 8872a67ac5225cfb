"""Cache policies: what a lane keeps of the past K/V rows between steps.

One interface, shaped like `transformers`' ``Cache.update``::

    k_all, v_all = cache.update(layer, k_new, v_new, positions)   # (B, H_kv, S, D) each
    cache.key_positions(layer)   # (S,) absolute position of every returned row
    cache.n_tokens, cache.nbytes, cache.reset()

``NoCache`` keeps nothing (the lane must feed the whole prefix every step); ``KVCache`` appends
the new rows to a contiguous buffer and hands back everything stored. Later policies (sliding
window, quantized, paged) keep this interface: they may drop rows (so `key_positions` is not
always ``0..S-1``) or store them differently, but ``update`` always returns full-precision rows
the attention can read.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch


class Cache(ABC):
    """Per-lane K/V storage for every layer of one model."""

    #: short policy name used in records and on screen
    policy: str = "cache"
    #: True when rows computed in earlier steps are reused (the lane feeds only new tokens)
    reuses_past: bool = True

    @abstractmethod
    def update(self, layer: int, k_new: torch.Tensor, v_new: torch.Tensor,
               positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Store the new rows of ``layer`` and return every row attention may read."""

    @abstractmethod
    def key_positions(self, layer: int) -> torch.Tensor:
        """Absolute positions of the rows the last ``update`` of ``layer`` returned."""

    @abstractmethod
    def reset(self) -> None:
        """Forget everything (a new prompt)."""

    @property
    @abstractmethod
    def n_tokens(self) -> int:
        """Tokens whose K/V are held (per layer)."""

    @property
    @abstractmethod
    def nbytes(self) -> int:
        """Bytes of K/V held, all layers."""

    def truncate(self, n_tokens: int) -> None:
        """Forget rows at positions ≥ ``n_tokens`` (undo a step that did not complete)."""
        raise NotImplementedError

    def describe(self) -> dict[str, object]:
        return {"policy": self.policy}


class NoCache(Cache):
    """The uncached lane: every step recomputes K/V for the whole prefix (nanoGPT's ``generate``)."""

    policy = "none"
    reuses_past = False

    def __init__(self, n_layers: int) -> None:
        self._positions: list[torch.Tensor | None] = [None] * n_layers

    def update(self, layer: int, k_new: torch.Tensor, v_new: torch.Tensor,
               positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        self._positions[layer] = positions
        return k_new, v_new

    def key_positions(self, layer: int) -> torch.Tensor:
        pos = self._positions[layer]
        if pos is None:
            raise RuntimeError("key_positions before update")
        return pos

    def reset(self) -> None:
        self._positions = [None] * len(self._positions)

    def truncate(self, n_tokens: int) -> None:
        pass  # holds nothing between steps

    @property
    def n_tokens(self) -> int:
        return 0

    @property
    def nbytes(self) -> int:
        return 0


class KVCache(Cache):
    """Contiguous append-only cache. Capacity doubles when full, so appends stay amortised O(1)
    and a stored row is never rewritten (its bytes stay bit-identical for the rest of the run)."""

    policy = "kv"

    def __init__(self, n_layers: int, initial_capacity: int = 64) -> None:
        self.n_layers = n_layers
        self.initial_capacity = initial_capacity
        self.reset()

    def reset(self) -> None:
        self._k: list[torch.Tensor | None] = [None] * self.n_layers
        self._v: list[torch.Tensor | None] = [None] * self.n_layers
        self._pos: list[torch.Tensor | None] = [None] * self.n_layers
        self._len = [0] * self.n_layers

    def _ensure_capacity(self, layer: int, like: torch.Tensor, needed: int) -> None:
        buf = self._k[layer]
        if buf is not None and buf.shape[2] >= needed:
            return
        capacity = max(self.initial_capacity, needed, 2 * (buf.shape[2] if buf is not None else 0))
        b, h, _, d = like.shape
        new_k = like.new_empty((b, h, capacity, d))
        new_v = like.new_empty((b, h, capacity, d))
        new_pos = torch.empty(capacity, dtype=torch.long, device=like.device)
        n = self._len[layer]
        if buf is not None and n:
            new_k[:, :, :n] = self._k[layer][:, :, :n]
            new_v[:, :, :n] = self._v[layer][:, :, :n]
            new_pos[:n] = self._pos[layer][:n]
        self._k[layer], self._v[layer], self._pos[layer] = new_k, new_v, new_pos

    def update(self, layer: int, k_new: torch.Tensor, v_new: torch.Tensor,
               positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        start = self._len[layer]
        end = start + k_new.shape[2]
        self._ensure_capacity(layer, k_new, end)
        self._k[layer][:, :, start:end] = k_new  # (B, H_kv, T, D) appended after the S stored rows
        self._v[layer][:, :, start:end] = v_new
        self._pos[layer][start:end] = positions
        self._len[layer] = end
        return self._k[layer][:, :, :end], self._v[layer][:, :, :end]

    def key_positions(self, layer: int) -> torch.Tensor:
        return self._pos[layer][: self._len[layer]]

    def truncate(self, n_tokens: int) -> None:
        # rows are appended in position order, so the first n_tokens rows are positions 0..n-1
        self._len = [min(n, n_tokens) for n in self._len]

    def stored(self, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The rows held for ``layer`` (views, not copies)."""
        n = self._len[layer]
        return self._k[layer][:, :, :n], self._v[layer][:, :, :n]

    @property
    def n_tokens(self) -> int:
        return self._len[0]

    @property
    def nbytes(self) -> int:
        total = 0
        for layer, k in enumerate(self._k):
            if k is not None:
                row_bytes = k.shape[0] * k.shape[1] * k.shape[3] * k.element_size()
                total += 2 * row_bytes * self._len[layer]
        return total

    @property
    def allocated_bytes(self) -> int:
        """Bytes reserved (capacity), which is what a contiguous allocator really holds."""
        return sum(2 * k.numel() * k.element_size() for k in self._k if k is not None)


def make_cache(policy: str, n_layers: int, **options: object) -> Cache:
    """Build a cache policy by name (the names lanes use on the command line)."""
    if policy in ("none", "uncached", "nocache"):
        return NoCache(n_layers)
    if policy in ("kv", "cached", "kvcache"):
        return KVCache(n_layers)
    raise ValueError(f"unknown cache policy {policy!r} (known: none, kv)")
