"""``adakv:B[:wW]``: Ada-KV (Feng et al. 2024, "Ada-KV: Optimizing KV Cache Eviction by Adaptive Budget
Allocation for Efficient LLM Inference") on SnapKV's scores.

SnapKV (``snapkv``) gives every KV head the same ``B`` prompt rows. Ada-KV observes that heads differ:
some spread their attention, some put it on a few rows, so an equal split wastes rows on the focused
heads and starves the spread ones. It keeps the layer's total, ``H_kv · B`` prompt rows, and splits it
across the heads by their scores: of the rows before the observation window, the layer keeps the
``H_kv · (B − W)`` with the highest SnapKV score *over all its heads at once*, so a head whose attention
mass is spread gets more rows and a focused one fewer. Every head also keeps its window's ``W`` rows
and, as a safeguard, its own ``⌊α · (B − W)⌋`` best rows (α = 0.2), so no head is left with nothing.
Decoding then appends every new row in every head. A prompt of at most ``B`` tokens is kept whole.

As in NVIDIA kvpress's ``AdaKVPress`` (α = 0.20; its ``compress`` raises each head's safeguard rows to
the highest score, then keeps the layer's top rows of all heads flattened), with the scores of kvsim's
``snapkv`` (the window's attention summed over its queries and the group's query heads, average-pooled,
kernel 5). Ties go to the lower head, then to the older row.

Heads now hold different counts; attention reads them as one (H_kv, S) block, a head with fewer rows
padded with rows at position ``PAD`` (after every query, so the causal mask hides them: they get zero
attention). The padding is how this simulator lays rows out, not what is held: the bytes count only
real rows (the authors' kernel stores the heads' rows flattened, one varlen block). ``n_tokens`` is the
widest head's count; the records' context is that width.

Bytes: the rows each head holds (K and V), the same total as ``snapkv:B``; the scores are not kept.
"""

from __future__ import annotations

from typing import Any

import torch

from ..core.words import QT_TRANSLATE_NOOP
from .base import PolicyInfo, PolicyWords, SpecError
from .registry import register_policy
from .scored import _Held, parse_count
from .snapkv import DEFAULT_WINDOW, KERNEL, SnapKVCache

ALPHA = 0.2  # the safeguard: each head keeps at least ⌊α·(B − W)⌋ of its own best rows (kvpress's default)
PAD = 1 << 30  # the position of a padding row: after every query, so the causal mask hides it


def safeguard_rows(budget: int, window: int) -> int:
    """The rows each head keeps of its own, before the layer's shared choice: ⌊α · (B − W)⌋."""
    return int((budget - window) * ALPHA)


def head_choice(scores: torch.Tensor, per_head: int, safe: int) -> torch.Tensor:
    """(H, P) bool: the rows the layer keeps of ``scores`` (H, P), ``H · per_head`` in all: each head's
    ``safe`` best, then the best of all heads flattened (ties to the lower head, then the older row)."""
    h, p = scores.shape
    raised = scores.clone()
    if safe:
        best = torch.sort(-scores, dim=1, stable=True).indices[:, :safe]
        raised.scatter_(1, best, float("inf"))
    chosen = torch.sort(-raised.reshape(-1), stable=True).indices[: h * per_head]
    keep = torch.zeros(h * p, dtype=torch.bool, device=scores.device)
    keep[chosen] = True
    return keep.view(h, p)


@register_policy
class AdaKVCache(SnapKVCache):
    terms = ("adakv",)
    grammar = "adakv:B[:wW]"
    example = "adakv:64:w16"
    score_meaning = "the observation window's attention at prefill, pooled (kernel 5); the heads share the layer's budget"

    @classmethod
    def parse_options(cls, args: list[list[str]]) -> dict[str, Any]:
        given = args[0]
        if not given:
            raise SpecError("adakv needs B (prompt rows kept per KV head on average), e.g. adakv:64:w16")
        budget = parse_count("adakv", given[0], "B", "prompt rows kept per KV head on average", 1, "adakv:64")
        options: dict[str, Any] = {"budget": budget}
        for arg in given[1:]:
            if arg[:1].lower() != "w" or "window" in options:
                raise SpecError(f"adakv takes B and then wW (the observation window), got {arg!r}")
            window = parse_count("adakv", arg[1:], "wW", "observation window", 1, "adakv:64:w16")
            if window > budget:
                raise SpecError(f"adakv's window W = {window} is larger than its budget B = {budget}")
            options["window"] = window
        return options

    @classmethod
    def words(cls, options: dict[str, Any]) -> PolicyWords:
        budget = int(options["budget"])
        window = int(options.get("window") or min(DEFAULT_WINDOW, budget))
        return PolicyWords(
            QT_TRANSLATE_NOOP("policies", "AdaKV: heads share the layer's budget"),
            QT_TRANSLATE_NOOP(
                "policies",
                "keeps {budget} prompt rows per KV head on average; the heads split the layer's rows by the "
                "attention of the last {window} tokens (each keeps at least {floor} of its own); then appends",
            ),
            {"budget": budget, "window": window, "floor": safeguard_rows(budget, window)},
            {
                "B": QT_TRANSLATE_NOOP("policies", "prompt rows kept per KV head on average"),
                "W": QT_TRANSLATE_NOOP("policies", "observation window"),
            },
        )

    # bill: SnapKVCache's: the layer holds H_kv · min(prompt, B) prompt rows, split differently across heads

    def describe(self) -> PolicyInfo:
        b, w = self.budget, self.window
        words = self.words({"budget": b, "window": w})
        return PolicyInfo.from_words(f"adakv:{b}:w{w}", words, reuses_past=True, lossy=False, evicts=True)

    # ---------------------------------------------------------------- heads of different counts
    def update(
        self, layer: int, k_new: torch.Tensor, v_new: torch.Tensor, positions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        k, v = super().update(layer, k_new, v_new, positions)
        held = self._held[layer]
        assert held is not None  # set by the update
        if bool((held.pos == PAD).any()):  # the new rows went after the padding: padding back to the end
            held = _in_order(held)
            self._held[layer], self._read[layer] = held, held.pos
            return held.k, held.v
        return k, v

    def observe_attention(self, layer: int, probs: torch.Tensor) -> None:
        held = self._held[layer]
        if held is None:
            return
        s = held.pos.shape[1]
        if self._before[layer] is not None or s <= self.budget:  # decode appends; a short prompt stays whole
            return
        w = self.window
        observed = probs[0][:, :, -w:, :].sum(dim=(1, 2))  # (H_kv, S): the window's queries, the group's heads
        pooled = torch.nn.functional.avg_pool1d(observed[:, None, : s - w], KERNEL, stride=1, padding=KERNEL // 2)[:, 0]
        keep = head_choice(pooled, self.budget - w, safeguard_rows(self.budget, w))
        keep = torch.cat([keep, torch.ones((keep.shape[0], w), dtype=torch.bool, device=keep.device)], 1)
        score = torch.cat([pooled, observed[:, s - w :]], 1)
        pos = torch.where(keep, held.pos, torch.full_like(held.pos, PAD))
        self._held[layer] = _trimmed(_in_order(_Held(held.k, held.v, pos, torch.where(keep, score, 0.0))))

    def truncate(self, n_tokens: int) -> None:
        """Undo the last update of every layer that stored positions ≥ ``n_tokens``; then drop any held row at
        or past ``n_tokens`` (each head its own: the padding takes their place)."""
        for layer in range(self.n_layers):
            first = self._first[layer]
            if first is not None and first >= n_tokens:
                self._held[layer] = self._before[layer]
                self._first[layer] = None
            held = self._held[layer]
            if held is not None:
                late = (held.pos >= n_tokens) & (held.pos != PAD)
                if bool(late.any()):
                    pos = torch.where(late, torch.full_like(held.pos, PAD), held.pos)
                    held = _trimmed(_in_order(_Held(held.k, held.v, pos, held.score)))
                    held = None if held.pos.shape[1] == 0 else held
                self._held[layer] = held
            self._read[layer] = None if held is None else held.pos

    def head_rows(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, str] | None:
        """None: the heads hold different counts, which the records' per-head rows (one count) cannot carry."""
        return None

    def kept_positions(self, layer: int) -> list[list[int]]:
        """The positions each KV head of ``layer`` holds, in order, the padding left out."""
        held = self._held[layer]
        if held is None:
            return []
        return [[p for p in row if p != PAD] for row in held.pos.tolist()]

    def bytes_split(self) -> tuple[int, int]:
        """(K and V of the rows the heads hold, all layers, the padding left out; 0: no scores are kept)."""
        payload = 0
        for held in self._held:
            if held is not None:
                real = int((held.pos != PAD).sum())
                payload += 2 * real * held.k.shape[3] * held.k.element_size()
        return payload, 0


def _in_order(held: _Held) -> _Held:
    """``held`` with each head's rows in position order, its padding (position ``PAD``) last."""
    order = torch.sort(held.pos, dim=1, stable=True).indices
    index = order[None, :, :, None].expand(1, -1, -1, held.k.shape[3])
    return _Held(held.k.gather(2, index), held.v.gather(2, index), held.pos.gather(1, order), held.score.gather(1, order))


def _trimmed(held: _Held) -> _Held:
    """``held`` (in order) without the columns that are padding in every head."""
    width = int((held.pos != PAD).sum(1).max()) if held.pos.numel() else 0
    return _Held(held.k[:, :, :width], held.v[:, :, :width], held.pos[:, :width], held.score[:, :width])
