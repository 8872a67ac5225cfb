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

Heads now hold different counts: ``padded_heads`` lays them out (the shorter heads padded with rows the
causal mask hides; the bytes count only real rows, as the authors' kernel stores the heads flattened).

Bytes: the rows each head holds (K and V), the same total as ``snapkv:B``; the scores are not kept.
"""

from __future__ import annotations

from typing import Any

import torch

from ..core.words import QT_TRANSLATE_NOOP
from .base import PolicyInfo, PolicyWords
from .padded_heads import PaddedHeadsCache
from .registry import register_policy
from .snapkv import DEFAULT_WINDOW, KERNEL, SnapKVCache

ALPHA = 0.2  # the safeguard: each head keeps at least ⌊α·(B − W)⌋ of its own best rows (kvpress's default)


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
class AdaKVCache(PaddedHeadsCache, SnapKVCache):
    terms = ("adakv",)
    grammar = "adakv:B[:wW]"
    example = "adakv:8:w4"  # a budget the app's example prompts exceed
    score_meaning = "the observation window's attention at prefill, pooled (kernel 5); the heads share the layer's budget"
    budget_meaning = "prompt rows kept per KV head on average"

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
            short=QT_TRANSLATE_NOOP("policies", "AdaKV {budget}"),
        )

    # bill: SnapKVCache's: the layer holds H_kv · min(prompt, B) prompt rows, split differently across heads

    def describe(self) -> PolicyInfo:
        b, w = self.budget, self.window
        words = self.words({"budget": b, "window": w})
        return PolicyInfo.from_words(f"adakv:{b}:w{w}", words, reuses_past=True, lossy=False, evicts=True)

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
        self.keep_only(layer, keep, score)
