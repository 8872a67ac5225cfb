"""``tova:B``: Token Omission Via Attention (Oren et al. 2024, "Transformers are Multi-State RNNs").

A fixed budget of ``B`` rows per layer. After each step's attention, a layer holding more than ``B``
rows drops the ones the *current* query attends to least — the newest token itself included — until
``B`` remain. The score is the last query's attention averaged over every query head of the layer, so
all KV heads of a layer keep the same rows (the paper's choice; as ``TOVACache.reduce`` in
schwartz-lab-NLP/TOVA). A prompt longer than ``B`` is attended in full, then cut to ``B`` by its last
query's attention. Nothing is accumulated: only this step's attention ranks the rows. Ties go to the
older row.

Bytes: the rows held (K and V); TOVA keeps no scores between steps.
"""

from __future__ import annotations

from typing import Any

import torch

from ..core.formulas import KVShape, LaneBill, kv_cache_bytes
from ..core.words import QT_TRANSLATE_NOOP
from .base import PolicyInfo, PolicyWords, SpecError
from .registry import register_policy
from .scored import ScoredCache, _Held, parse_count, top_rows


@register_policy
class TOVACache(ScoredCache):
    terms = ("tova",)
    grammar = "tova:B"
    example = "tova:16"
    score_meaning = "the newest query's attention, averaged over the layer's query heads"

    @classmethod
    def parse_options(cls, args: list[list[str]]) -> dict[str, Any]:
        given = args[0]
        if not given:
            raise SpecError("tova needs B (rows kept), e.g. tova:64")
        if len(given) > 1:
            raise SpecError(f"tova takes one parameter, B (rows kept); got {':'.join(given)!r}")
        return {"budget": parse_count("tova", given[0], "B", "rows kept", 1, "tova:64")}

    def __init__(self, n_layers: int, budget: int) -> None:
        if budget < 1:
            raise ValueError(f"tova needs B ≥ 1, got {budget}")
        self.budget = budget
        super().__init__(n_layers)

    @classmethod
    def words(cls, options: dict[str, Any]) -> PolicyWords:
        return PolicyWords(
            QT_TRANSLATE_NOOP("policies", "TOVA: drop the least attended"),
            QT_TRANSLATE_NOOP("policies", "keeps {budget} rows; each step drops the row the newest query reads least"),
            {"budget": int(options["budget"])},
            {"B": QT_TRANSLATE_NOOP("policies", "rows kept")},
            short=QT_TRANSLATE_NOOP("policies", "TOVA {budget}"),
        )

    @classmethod
    def bill(cls, options: dict[str, Any], shape: KVShape, tokens: int, new_tokens: int, elem_bits: int) -> LaneBill:
        """B rows per layer (every KV head keeps the same rows), like ``window:B``'s count."""
        budget = int(options["budget"])
        b = kv_cache_bytes(*shape, tokens, 1, elem_bits, budget)
        return LaneBill(b, b, elem_bits, budget, "")

    def describe(self) -> PolicyInfo:
        words = self.words({"budget": self.budget})
        return PolicyInfo.from_words(f"tova:{self.budget}", words, reuses_past=True, lossy=False, evicts=True)

    def evict_reason(self, layer: int) -> str:
        return "lowest_current_attention"

    def _keep(self, layer: int, held: _Held, probs: torch.Tensor, new: int) -> torch.Tensor | None:
        score = probs[:, :, -1, :].mean(dim=(0, 1))  # (S,): the last query, averaged over all query heads
        held.score = score.expand_as(held.score).clone()
        if score.shape[0] <= self.budget:
            return None
        return top_rows(score[None], self.budget).expand(held.pos.shape[0], -1)
