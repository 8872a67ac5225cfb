"""``snapkv:B[:wW]``: SnapKV (Li et al. 2024, "SnapKV: LLM Knows What You are Looking for Before
Generation").

The prompt is compressed once, at prefill, to ``B`` rows per layer and KV head; decoding then appends
every new row (nothing more is evicted). The last ``W`` prompt tokens are the *observation window*:
their rows are all kept, and their queries' attention to the earlier prompt rows, summed over the
window's queries (and over the query heads of the KV head's group), then smoothed by a 1-D average
pool (kernel 5, padding 2, stride 1, zeros counted) so that a chosen row brings its neighbours, ranks
the earlier rows: the ``B - W`` highest are kept. A prompt shorter than ``B`` is kept whole.

As in the authors' code (``SnapKVCluster.update_kv`` in FasterDecoding/SnapKV, whose defaults are
window 32, kernel 5, average pooling): the window's attention is the prefill's own softmax over the
whole prompt. Where kvsim differs: ``W`` defaults to 32 but at most ``B`` (the code asserts
``B > W``; here ``W = B`` keeps only the window); the code's per-query-head selection becomes per KV
head (the group's heads summed), as kvpress does for GQA; the paper's LongBench runs used max pooling
with kernel 7 (``ablation_*_k7_maxpool.json``), the code's default is average pooling, kernel 5. On a
model with local layers (Gemma 3) the window's attention is what the layer's own mask lets it see.
Ties go to the older row.

Bytes: the rows held (K and V); the scores are used once and not kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F

from ..core.formulas import KVShape, LaneBill, kv_cache_bytes
from ..core.words import QT_TRANSLATE_NOOP
from .base import PolicyInfo, PolicyWords, SpecError
from .registry import register_policy
from .scored import ScoredCache, _Held, parse_count, top_rows

DEFAULT_WINDOW = 32
KERNEL = 5


@register_policy
class SnapKVCache(ScoredCache):
    terms = ("snapkv",)
    grammar = "snapkv:B[:wW]"
    example = "snapkv:8:w4"  # a budget the app's example prompts exceed
    score_meaning = "the observation window's attention at prefill, pooled (kernel 5)"

    budget_meaning = "prompt rows kept"  # what B counts (PyramidKV: per layer on average; AdaKV: per KV head)

    @classmethod
    def parse_options(cls, args: list[list[str]]) -> dict[str, Any]:
        """B, then wW (the observation window, at most B): the grammar of SnapKV and of the policies built on it."""
        term, given = cls.terms[0], args[0]
        if not given:
            raise SpecError(f"{term} needs B ({cls.budget_meaning}), e.g. {term}:64:w16")
        budget = parse_count(term, given[0], "B", cls.budget_meaning, 1, f"{term}:64")
        options: dict[str, Any] = {"budget": budget}
        for arg in given[1:]:
            if arg[:1].lower() != "w" or "window" in options:
                raise SpecError(f"{term} takes B and then wW (the observation window), got {arg!r}")
            window = parse_count(term, arg[1:], "wW", "observation window", 1, f"{term}:64:w16")
            if window > budget:
                raise SpecError(f"{term}'s window W = {window} is larger than its budget B = {budget}")
            options["window"] = window
        return options

    def __init__(self, n_layers: int, budget: int, window: int | None = None) -> None:
        self.budget = budget
        self.window = min(DEFAULT_WINDOW, budget) if window is None else window
        if budget < 1 or not 1 <= self.window <= budget:
            raise ValueError(f"snapkv needs B ≥ 1 and 1 ≤ W ≤ B, got B={budget}, W={window}")
        super().__init__(n_layers)

    @classmethod
    def words(cls, options: dict[str, Any]) -> PolicyWords:
        budget = int(options["budget"])
        return PolicyWords(
            QT_TRANSLATE_NOOP("policies", "SnapKV: prompt compressed once"),
            QT_TRANSLATE_NOOP(
                "policies", "keeps {budget} prompt rows chosen by the attention of its last {window} tokens; then appends"
            ),
            {"budget": budget, "window": int(options.get("window") or min(DEFAULT_WINDOW, budget))},
            {
                "B": QT_TRANSLATE_NOOP("policies", "prompt rows kept"),
                "W": QT_TRANSLATE_NOOP("policies", "observation window"),
            },
            short=QT_TRANSLATE_NOOP("policies", "SnapKV {budget}"),
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
    ) -> LaneBill | None:
        """The prompt cut to B rows once, then every new row: min(prompt, B) + n − prompt rows per layer.
        None without the prompt's length (``context``'s ``prompt_tokens``)."""
        prompt = (context or {}).get("prompt_tokens")
        if prompt is None:
            return None
        rows = min(int(prompt), int(options["budget"])) + max(0, tokens - int(prompt))
        b = kv_cache_bytes(*shape, rows, 1, elem_bits)
        return LaneBill(b, b, elem_bits, None, "")

    def describe(self) -> PolicyInfo:
        b, w = self.budget, self.window
        words = self.words({"budget": b, "window": w})
        return PolicyInfo.from_words(f"snapkv:{b}:w{w}", words, reuses_past=True, lossy=False, evicts=True)

    def evict_reason(self, layer: int) -> str:
        return "compressed_at_prefill"  # decode only appends: rows are dropped at the prefill alone

    def _keep(self, layer: int, held: _Held, probs: torch.Tensor, new: int) -> torch.Tensor | None:
        s = held.pos.shape[1]
        if self._before[layer] is not None or s <= self.budget:  # decode appends; a short prompt stays whole
            return None
        w = self.window
        observed = probs[:, :, -w:, :].sum(dim=(1, 2))  # (H_kv, S): the window's queries, the group's heads
        pooled = F.avg_pool1d(observed[:, None, : s - w], KERNEL, stride=1, padding=KERNEL // 2)[:, 0]
        held.score = torch.cat([pooled, observed[:, s - w :]], 1)
        chosen = top_rows(pooled, self.budget - w)
        window = torch.arange(s - w, s, device=chosen.device).expand(chosen.shape[0], -1)
        return torch.cat([chosen, window], 1)
