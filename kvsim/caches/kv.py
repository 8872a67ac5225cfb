"""``kv`` (alias ``cached``): the contiguous KV cache. Each step computes the new row(s), appends
them and reads every stored row: the linear n rows of the seeds."""

from __future__ import annotations

from typing import Any

import torch

from ..core.formulas import KVShape, LaneBill, kv_cache_bytes
from ..core.words import QT_TRANSLATE_NOOP
from .base import Cache, PolicyInfo, PolicyWords
from .registry import register_policy


@register_policy
class KVCache(Cache):
    """Append-only. Capacity doubles when full, so appends stay amortised O(1) and a stored row is
    never rewritten (its bytes stay bit-identical for the rest of the run)."""

    terms = ("kv",)
    aliases = ("cached", "kvcache")
    grammar = "kv"

    def __init__(self, n_layers: int, initial_capacity: int = 64) -> None:
        self.n_layers = n_layers
        self.initial_capacity = initial_capacity
        self.reset()

    @classmethod
    def words(cls, options: dict[str, Any]) -> PolicyWords:
        return PolicyWords(
            QT_TRANSLATE_NOOP("policies", "KV cache"), QT_TRANSLATE_NOOP("policies", "computes the new row, reads the rest")
        )

    @classmethod
    def bill(cls, options: dict[str, Any], shape: KVShape, tokens: int, new_tokens: int, elem_bits: int) -> LaneBill:
        b = kv_cache_bytes(*shape, tokens, 1, elem_bits)  # every position's row, every layer
        return LaneBill(b, b, elem_bits, None, "")

    def describe(self) -> PolicyInfo:
        return PolicyInfo.from_words("kv", self.words({}), reuses_past=True, lossy=False, evicts=False)

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

    def update(
        self, layer: int, k_new: torch.Tensor, v_new: torch.Tensor, positions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
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

    def held_rows(self, layer: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return (*self.stored(layer), self.key_positions(layer))

    @property
    def n_tokens(self) -> int:
        return self._len[0]

    def bytes_split(self) -> tuple[int, int]:
        total = 0
        for layer, k in enumerate(self._k):
            if k is not None:
                row_bytes = k.shape[0] * k.shape[1] * k.shape[3] * k.element_size()
                total += 2 * row_bytes * self._len[layer]
        return total, 0

    @property
    def allocated_bytes(self) -> int:
        """Bytes reserved (capacity), which is what a contiguous allocator really holds."""
        return sum(2 * k.numel() * k.element_size() for k in self._k if k is not None)
