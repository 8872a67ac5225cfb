"""``kv`` (alias ``cached``): the contiguous KV cache. Each step computes the new row(s), appends
them and reads every stored row: the linear n rows of the seeds.

On a model whose layers have their own attention windows (Gemma 3: five local layers of 512 positions
for each global one; Mistral: every layer), ``kv`` holds on a windowed layer only the rows that layer
can still see — the last W, as ``window:W`` keeps them — and every row on a global layer, as the
reference engines do (transformers' ``DynamicSlidingWindowLayer``, vLLM's hybrid allocator). Its
logits are those of the model's own mask, which already hides the older rows. ``kv:full`` keeps every
row on every layer (and masks), to show what the per-layer windows save.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import torch

from ..core.formulas import KVShape, LaneBill, kv_cache_bytes
from ..core.words import QT_TRANSLATE_NOOP
from .base import Cache, PolicyInfo, PolicyWords, SpecError
from .registry import register_policy
from .state import RecurrentStates
from .window import SlidingWindowCache

#: the memory dock's line on a sparse-attention model's bill (deepseek_v32): the indexer's keys beside the latents
INDEXER_WHY = QT_TRANSLATE_NOOP(
    "policies",
    "+ {index:,} B of indexer keys: {layers} layers × {width} values a token, held beside each latent; a step reads "
    "all of them to choose the {topk} latents its attention reads",
)


@register_policy
class KVCache(Cache):
    """Append-only. Capacity doubles when full, so appends stay amortised O(1) and a stored row is
    never rewritten (its bytes stay bit-identical for the rest of the run). A windowed layer's rows
    live in a ``window:W`` strip of their own (``layer_windows``)."""

    terms = ("kv",)
    aliases: ClassVar[tuple[str, ...]] = ("cached", "kvcache")
    grammar = "kv[:full]"
    holds_latent: ClassVar[bool] = True  # stores rows of any width: an mla model's latents (values 0 wide)
    holds_state: ClassVar[bool] = True  # and a hybrid model's recurrent states (kvsim.caches.state)

    @classmethod
    def parse_options(cls, args: list[list[str]]) -> dict[str, Any]:
        given = args[0]
        if not given:
            return {}
        if [a.lower() for a in given] != ["full"]:
            raise SpecError(f"kv takes nothing or 'full' (every row on every layer), got {':'.join(given)!r}")
        return {"full": True}

    def __init__(
        self,
        n_layers: int,
        initial_capacity: int = 64,
        full: bool = False,
        layer_windows: tuple[int | None, ...] | None = None,
    ) -> None:
        self.n_layers = n_layers
        self.initial_capacity = initial_capacity
        self.full = full
        if layer_windows is not None and len(layer_windows) != n_layers:
            raise ValueError(f"layer_windows has {len(layer_windows)} entries for {n_layers} layers")
        # the model's own windows, one per layer (None: global); ignored by kv:full
        self.layer_windows = None if full or not layer_windows or all(w is None for w in layer_windows) else tuple(layer_windows)
        self.reset()

    @classmethod
    def words(cls, options: dict[str, Any]) -> PolicyWords:
        """``options``: the lane's (``full``); ``describe`` adds ``windowed`` when the model has local layers."""
        if options.get("full"):
            return PolicyWords(
                QT_TRANSLATE_NOOP("policies", "KV cache, every row"),
                QT_TRANSLATE_NOOP(
                    "policies", "computes the new row, reads the rest; keeps every row on every layer, local ones too"
                ),
                short=QT_TRANSLATE_NOOP("policies", "KV, all rows"),
            )
        if options.get("windowed"):
            return PolicyWords(
                QT_TRANSLATE_NOOP("policies", "KV cache"),
                QT_TRANSLATE_NOOP("policies", "computes the new row, reads the rest; a local layer keeps only its window"),
            )
        return PolicyWords(
            QT_TRANSLATE_NOOP("policies", "KV cache"), QT_TRANSLATE_NOOP("policies", "computes the new row, reads the rest")
        )

    @classmethod
    def bill(
        cls,
        options: dict[str, Any],
        shape: KVShape,
        tokens: int,
        new_tokens: int,
        elem_bits: int,
        context: Mapping[str, Any] | None = None,
    ) -> LaneBill:
        """Every position's row on every layer, except that a local layer of the model (``context``'s
        ``layer_windows``, Gemma 3) holds only its window; ``kv:full`` holds every row everywhere."""
        latent = (context or {}).get("latent")
        if latent is not None:  # an mla model: one latent of r values and one RoPE key of d_R per token and layer
            r, dr = latent
            b = shape.layers * (int(r) + int(dr)) * tokens * elem_bits // 8
            indexer = (context or {}).get("indexer")
            if indexer is not None:  # deepseek_v32: each token's indexer key too (d_I a layer), read whole each step
                width, topk = indexer
                extra = shape.layers * int(width) * tokens * elem_bits // 8
                values = {"index": extra, "layers": shape.layers, "width": width, "topk": topk}
                return LaneBill.explained(b, b + extra, elem_bits, None, INDEXER_WHY, values)
            return LaneBill(b, b, elem_bits, None, "")
        lw = (context or {}).get("layer_windows")
        windows = None if options.get("full") or not lw or all(w is None for w in lw) else tuple(lw)
        b = kv_cache_bytes(*shape, tokens, 1, elem_bits, layer_windows=windows)
        return LaneBill(b, b, elem_bits, None, "")

    def describe(self) -> PolicyInfo:
        spec = "kv:full" if self.full else "kv"
        options = {"full": True} if self.full else {"windowed": True} if self.layer_windows is not None else {}
        return PolicyInfo.from_words(spec, self.words(options), reuses_past=True, lossy=False, evicts=False)

    def reset(self) -> None:
        self._k: list[torch.Tensor | None] = [None] * self.n_layers
        self._v: list[torch.Tensor | None] = [None] * self.n_layers
        self._pos: list[torch.Tensor | None] = [None] * self.n_layers
        self._len = [0] * self.n_layers
        self._row_bytes = [0] * self.n_layers  # a K and a V row of each layer (its buffers' shapes), for bytes_split
        self._written_from = 0  # the lowest slot written since take_rewritten_from last looked
        windows = self.layer_windows or (None,) * self.n_layers
        self._local = {i: SlidingWindowCache(1, w) for i, w in enumerate(windows) if w is not None}
        self._states = RecurrentStates()  # a hybrid model's recurrent layers: no rows, a fixed-size state each

    def layer_state(self, layer: int, n_tokens: int) -> tuple[torch.Tensor, ...] | None:
        return self._states.get(layer, n_tokens)

    def keep_state(self, layer: int, states: dict[int, tuple[torch.Tensor, ...]]) -> None:
        self._states.keep(layer, states)

    @property
    def record_layer(self) -> int:
        """The layer whose rows the records show: a global one (it holds every row) when there is one, and one
        that holds rows at all (not a recurrent layer, not a layer that reads another's: CLA)."""
        if not self._local and self._k[0] is not None:  # every layer global, the first holds rows
            return 0
        global_layers = [i for i in range(self.n_layers) if i not in self._local]
        return next((i for i in global_layers if self._k[i] is not None), global_layers[0] if global_layers else 0)

    def _ensure_capacity(self, layer: int, like: torch.Tensor, needed: int, v_like: torch.Tensor | None = None) -> None:
        buf = self._k[layer]
        if buf is not None and buf.shape[2] >= needed:
            return
        capacity = max(self.initial_capacity, needed, 2 * (buf.shape[2] if buf is not None else 0))
        b, h, _, d = like.shape
        new_k = like.new_empty((b, h, capacity, d))
        # values may be narrower than keys (an MLA latent is all keys: its values are part of them)
        new_v = like.new_empty((b, h, capacity, d if v_like is None else v_like.shape[3]))
        new_pos = torch.empty(capacity, dtype=torch.long, device=like.device)
        n = self._len[layer]
        old_v, old_pos = self._v[layer], self._pos[layer]
        if buf is not None and n:
            assert old_v is not None and old_pos is not None  # allocated together with buf
            new_k[:, :, :n] = buf[:, :, :n]
            new_v[:, :, :n] = old_v[:, :, :n]
            new_pos[:n] = old_pos[:n]
        self._k[layer], self._v[layer], self._pos[layer] = new_k, new_v, new_pos
        self._row_bytes[layer] = b * h * (new_k.shape[3] + new_v.shape[3]) * new_k.element_size()

    def update(
        self, layer: int, k_new: torch.Tensor, v_new: torch.Tensor, positions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        local = self._local.get(layer)
        if local is not None:
            return local.update(0, k_new, v_new, positions)
        start = self._len[layer]
        end = start + k_new.shape[2]
        self._written_from = min(self._written_from, start)
        self._ensure_capacity(layer, k_new, end, v_new)
        k, v, pos = self._buffers(layer)
        k[:, :, start:end] = k_new  # (B, H_kv, T, D) appended after the S stored rows
        v[:, :, start:end] = v_new
        pos[start:end] = positions
        self._len[layer] = end
        return k[:, :, :end], v[:, :, :end]

    def _buffers(self, layer: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The layer's K, V and position buffers (allocated by its first update)."""
        k, v, pos = self._k[layer], self._v[layer], self._pos[layer]
        if k is None or v is None or pos is None:
            raise TypeError(f"layer {layer} holds no rows yet")
        return k, v, pos

    def key_positions(self, layer: int) -> torch.Tensor:
        local = self._local.get(layer)
        if local is not None:
            return local.key_positions(0)
        return self._buffers(layer)[2][: self._len[layer]]

    def truncate(self, n_tokens: int) -> None:
        # rows are appended in position order, so the first n_tokens rows are positions 0..n-1
        self._len = [min(n, n_tokens) for n in self._len]
        self._written_from = min(self._written_from, n_tokens)
        for local in self._local.values():
            local.truncate(n_tokens)
        self._states.truncate(n_tokens)

    def stored(self, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The rows held for ``layer`` (views, not copies)."""
        local = self._local.get(layer)
        if local is not None:
            return local.held_rows(0)[:2]
        n = self._len[layer]
        k, v, _ = self._buffers(layer)
        return k[:, :, :n], v[:, :, :n]

    def take_rewritten_from(self) -> int:
        """Append-only: the slot the first append since the last call went to (a cut lowers it). A windowed layer's
        strip rewrites its slots: 0 then, every row compared."""
        low = 0 if self._local else self._written_from
        self._written_from = min(self._len)
        return low

    def held_rows(self, layer: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        local = self._local.get(layer)
        if local is not None:
            return local.held_rows(0)
        return (*self.stored(layer), self.key_positions(layer))

    @property
    def fewest_rows(self) -> int:
        """Rows held by the layer that holds the fewest (0 while some layer holds none)."""
        return min(self._len)

    @property
    def n_tokens(self) -> int:
        """Rows held by the layer that holds the most (a global one): the tokens whose K/V some layer keeps."""
        if not self._local:
            return max(self._len)  # a layer that holds no rows (recurrent, or reading another's) holds 0
        held = [self._len[i] for i in range(self.n_layers) if i not in self._local]
        return max(held + [c.n_tokens for c in self._local.values()])

    def bytes_split(self) -> tuple[int, int]:
        total = sum(local.bytes_split()[0] for local in self._local.values()) if self._local else 0
        # a K and a V row of each layer, kept when its buffers were allocated (0 for a layer that holds none)
        total += sum(row * n for row, n in zip(self._row_bytes, self._len, strict=True))
        return total + self._states.nbytes, 0

    @property
    def allocated_bytes(self) -> int:
        """Bytes reserved (capacity), which is what a contiguous allocator really holds."""
        own = sum(
            (k.numel() + v.numel()) * k.element_size()
            for k, v in zip(self._k, self._v, strict=True)
            if k is not None and v is not None
        )
        return own + sum(local.allocated_bytes for local in self._local.values())
