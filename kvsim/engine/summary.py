"""Whole-run figures per lane, accumulated step by step (a long run need not keep its records):
TTFT/ITL, rows and FLOPs, bytes, and how far each lane is from the reference lane."""

from __future__ import annotations

import math
from typing import Any, TypedDict

import numpy as np

from .trace import StepRecord, Trace


class LaneFigures(TypedDict):
    """One lane's whole-run figures (JSON values, as ``kvsim run --json`` prints them)."""

    tokens_identical: bool
    first_divergent_step: int | None
    max_abs_logit_diff: float
    mean_abs_logit_diff: float
    max_kl_div: float
    perplexity_of_reference: float | None
    ttft_ms: float
    itl_ms: float | None
    itl_median_ms: float | None
    kv_positions_total: int
    flops_total: int
    cache_bytes: int
    max_recompute_diff: float | None
    target_forwards: int  # target forwards (a speculative check covers several tokens; else one a step)
    tokens_per_forward: float | None
    drafted_total: int
    accepted_total: int
    rolled_back_total: int
    acceptance_rate: float | None


class RunSummary:
    """Whole-run figures accumulated step by step, so a long run need not keep its records."""

    def __init__(self) -> None:
        self.steps = 0
        self.lanes: dict[str, LaneFigures] = {}
        self._decode_ms: dict[str, list[float]] = {}
        self._logprob: dict[str, float] = {}
        self._diff_sum: dict[str, float] = {}

    def add(self, record: StepRecord) -> None:
        self.steps += 1
        for s in record.lanes:
            d = self.lanes.setdefault(
                s.name,
                {
                    "tokens_identical": True,
                    "first_divergent_step": None,
                    "max_abs_logit_diff": 0.0,
                    "mean_abs_logit_diff": 0.0,
                    "max_kl_div": 0.0,
                    "perplexity_of_reference": None,
                    "ttft_ms": s.wall_ms,
                    "itl_ms": None,
                    "itl_median_ms": None,
                    "kv_positions_total": 0,
                    "flops_total": 0,
                    "cache_bytes": 0,
                    "max_recompute_diff": None,
                    "target_forwards": 0,
                    "tokens_per_forward": None,
                    "drafted_total": 0,
                    "accepted_total": 0,
                    "rolled_back_total": 0,
                    "acceptance_rate": None,
                },
            )
            # speculative lanes check several drafted tokens in one forward; every other lane does one a step
            d["target_forwards"] += s.forwards
            d["tokens_per_forward"] = self.steps / d["target_forwards"] if d["target_forwards"] else None
            d["drafted_total"] += s.drafted
            d["accepted_total"] += s.accepted
            d["rolled_back_total"] += s.rolled_back
            d["acceptance_rate"] = d["accepted_total"] / d["drafted_total"] if d["drafted_total"] else None
            self._logprob[s.name] = self._logprob.get(s.name, 0.0) + s.ref_logprob
            self._diff_sum[s.name] = self._diff_sum.get(s.name, 0.0) + s.logit_diff
            if s.token_id != record.token_id and d["first_divergent_step"] is None:
                d["first_divergent_step"] = record.step  # its own choice first differs from the reference's
            d["tokens_identical"] = d["tokens_identical"] and s.token_id == record.token_id
            d["max_abs_logit_diff"] = max(d["max_abs_logit_diff"], s.logit_diff)
            d["mean_abs_logit_diff"] = self._diff_sum[s.name] / self.steps
            d["max_kl_div"] = max(d["max_kl_div"], s.kl_div)
            # the reference's own continuation, scored by this lane (teacher-forced: lockstep feeds it)
            d["perplexity_of_reference"] = math.exp(-self._logprob[s.name] / self.steps)
            d["kv_positions_total"] += s.kv_positions
            d["flops_total"] += s.flops
            d["cache_bytes"] = s.cache_bytes
            if s.recompute_diff is not None:
                d["max_recompute_diff"] = max(d["max_recompute_diff"] or 0.0, s.recompute_diff)
            if record.step > 0:
                ms = self._decode_ms.setdefault(s.name, [])
                ms.append(s.wall_ms)
                d["itl_ms"], d["itl_median_ms"] = float(np.mean(ms)), float(np.median(ms))

    def as_dict(self) -> dict[str, Any]:
        per_lane = self.lanes
        return {
            "steps": self.steps,
            "tokens_identical": all(v["tokens_identical"] for v in per_lane.values()),
            "max_abs_logit_diff": max((v["max_abs_logit_diff"] for v in per_lane.values()), default=0.0),
            "ttft_ms": {k: v["ttft_ms"] for k, v in per_lane.items()},
            "itl_ms": {k: v["itl_ms"] for k, v in per_lane.items()},
            "lanes": per_lane,
        }


def summarize(trace: Trace) -> dict[str, Any]:
    """Whole-run figures: did every lane choose the reference's tokens, how far apart, TTFT/ITL."""
    summary = RunSummary()
    for record in trace.records:
        summary.add(record)
    return summary.as_dict()
