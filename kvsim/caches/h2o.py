"""``h2o:B[:rR]``: Heavy-Hitter Oracle (Zhang et al. 2023, "H2O: Heavy-Hitter Oracle for Efficient
Generative Inference of Large Language Models").

Each layer and KV head keeps the ``B`` rows that have received the most attention so far (the heavy
hitters) plus the ``R`` most recent rows: ``B + R`` rows between steps. A row's score is the attention
it has received, summed over every query that read it since it was stored (the prompt's queries
included) and over the query heads of its KV head's group. After each step's attention (which reads
the held rows and the new one), a head holding more than ``B + R`` rows keeps its ``R`` newest and,
of the others, the ``B`` with the highest score; the rest are evicted, their scores with them.

As in the authors' code (``H2OKVCache_LayerWise`` in FMInference/H2O, ``utils_real_drop``): scores are
summed over the queries of a step, evicted per head, and a long prompt is attended in full then cut
to ``B + R``. Where kvsim differs: the paper's code sums over every query head (MHA); here a GQA model's
query heads that share a KV head sum into that head's score. ``R`` defaults to ``B`` (the paper's
experiments split the budget evenly between heavy and recent). Ties go to the older row.

Bytes: the rows held (K and V), and the scores held between steps (one float32 per row and KV head,
all layers) as overhead: H2O must keep them to rank rows at the next step.
"""

from __future__ import annotations

from typing import Any

import torch

from ..core.formulas import KVShape, LaneBill, kv_cache_bytes
from ..core.words import QT_TRANSLATE_NOOP
from .base import PolicyInfo, PolicyWords, SpecError
from .registry import register_policy
from .scored import ScoredCache, _Held, parse_count, top_rows

SCORES = QT_TRANSLATE_NOOP(
    "policies", "it also holds the attention score it ranks each row by (float32, per row and KV head: +{overhead:,} B)"
)


@register_policy
class H2OCache(ScoredCache):
    terms = ("h2o",)
    grammar = "h2o:B[:rR]"
    example = "h2o:8:r8"
    score_meaning = "attention received since the row was stored (summed over queries and the group's heads)"
    scores_held = True

    @classmethod
    def parse_options(cls, args: list[list[str]]) -> dict[str, Any]:
        given = args[0]
        if not given:
            raise SpecError("h2o needs B (heavy-hitter rows kept), e.g. h2o:32:r32")
        heavy = parse_count("h2o", given[0], "B", "heavy-hitter rows kept", 0, "h2o:32")
        options: dict[str, Any] = {"heavy": heavy}
        for arg in given[1:]:
            if arg[:1].lower() != "r" or "recent" in options:
                raise SpecError(f"h2o takes B and then rR (the recent rows kept), got {arg!r}")
            options["recent"] = parse_count("h2o", arg[1:], "rR", "recent rows kept", 0, "h2o:32:r32")
        if heavy + options.get("recent", heavy) < 1:
            raise SpecError("h2o keeps B + R rows, and that must be at least 1")
        return options

    def __init__(self, n_layers: int, heavy: int, recent: int | None = None) -> None:
        self.heavy = heavy
        self.recent = heavy if recent is None else recent
        if self.heavy < 0 or self.recent < 0 or self.heavy + self.recent < 1:
            raise ValueError(f"h2o needs B, R ≥ 0 and B + R ≥ 1, got B={heavy}, R={recent}")
        super().__init__(n_layers)

    @classmethod
    def words(cls, options: dict[str, Any]) -> PolicyWords:
        heavy = int(options["heavy"])
        return PolicyWords(
            QT_TRANSLATE_NOOP("policies", "H2O: heavy hitters + recent"),
            QT_TRANSLATE_NOOP(
                "policies", "keeps the {heavy} rows read most so far and the last {recent}; each KV head chooses its own"
            ),
            {"heavy": heavy, "recent": int(options.get("recent", heavy))},
            {
                "B": QT_TRANSLATE_NOOP("policies", "heavy-hitter rows kept"),
                "R": QT_TRANSLATE_NOOP("policies", "recent rows kept"),
            },
            short=QT_TRANSLATE_NOOP("policies", "H2O {heavy}+{recent}"),
        )

    @classmethod
    def bill(cls, options: dict[str, Any], shape: KVShape, tokens: int, new_tokens: int, elem_bits: int) -> LaneBill:
        """B + R rows per layer and KV head, and the float32 attention score each held row is ranked by."""
        budget = int(options["heavy"]) + int(options.get("recent", options["heavy"]))
        b = kv_cache_bytes(*shape, tokens, 1, elem_bits, budget)
        scores = shape.layers * shape.kv_heads * min(tokens, budget) * 4
        return LaneBill.explained(b, b + scores, elem_bits, budget, SCORES, {"overhead": scores})

    def describe(self) -> PolicyInfo:
        b, r = self.heavy, self.recent
        words = self.words({"heavy": b, "recent": r})
        return PolicyInfo.from_words(f"h2o:{b}:r{r}", words, reuses_past=True, lossy=False, evicts=True)

    def evict_reason(self, layer: int) -> str:
        """No heavy hitters (B = 0): a row leaves when it falls out of the recent R; else the lowest score goes."""
        return "outside_recent_window" if self.heavy == 0 else "lowest_accumulated_score"

    def _keep(self, layer: int, held: _Held, probs: torch.Tensor, new: int) -> torch.Tensor | None:
        held.score += probs.sum(dim=(1, 2))  # (H_kv, S): over the group's query heads and this step's queries
        s = held.pos.shape[1]
        if s <= self.heavy + self.recent:
            return None
        older = s - self.recent
        heavy = top_rows(held.score[:, :older], self.heavy)
        recent = torch.arange(older, s, device=heavy.device).expand(heavy.shape[0], -1)
        return torch.cat([heavy, recent], 1)
