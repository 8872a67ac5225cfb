"""Whole-run figures per lane, accumulated step by step (a long run need not keep its records):
TTFT/ITL, rows and FLOPs, bytes, and how far each lane is from the reference lane.

Each lane's times against the first lane's (``kvsim.core.compare``): the lanes run in lockstep, in an
order that rotates each step, so their decode steps pair step by step — the ITL ratio is the median of
the per-step ratios, with the 95% interval of that median and a verdict ("within noise" when the
interval includes 1). TTFT is one prefill per lane, its repeats not interleaved: its ratio is that of
the medians and its spread the extremes' ratios (within noise with a single repeat: no spread known)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any, TypedDict

import numpy as np

from ..core.compare import Comparison, compare_paired, compare_ranges
from .records import LaneStep, StepRecord
from .trace import Trace


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
        self._ttft: dict[str, tuple[float, float, float, int]] = {}  # median, min, max, repeats

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
            if record.step == 0:
                timed = s.wall_ms_min is not None and s.wall_ms_max is not None
                self._ttft[s.name] = (s.wall_ms, s.wall_ms_min or s.wall_ms, s.wall_ms_max or s.wall_ms, 2 if timed else 1)
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
            if record.step > 0:  # the decode clocks' mean and median are taken once, by as_dict (per step: O(n²))
                self._decode_ms.setdefault(s.name, []).append(s.wall_ms)

    def as_dict(self) -> dict[str, Any]:
        per_lane = self.lanes
        for name, d in per_lane.items():
            ms = self._decode_ms.get(name)
            if ms:
                d["itl_ms"], d["itl_median_ms"] = float(np.mean(ms)), float(np.median(ms))
        return {
            "steps": self.steps,
            "tokens_identical": all(v["tokens_identical"] for v in per_lane.values()),
            "max_abs_logit_diff": max((v["max_abs_logit_diff"] for v in per_lane.values()), default=0.0),
            "ttft_ms": {k: v["ttft_ms"] for k, v in per_lane.items()},
            "itl_ms": {k: v["itl_ms"] for k, v in per_lane.items()},
            "lanes": {name: {**figures, **self.comparison(name)} for name, figures in per_lane.items()},
        }

    def comparison(self, name: str) -> dict[str, Any]:
        """Lane ``name``'s TTFT and ITL against the first lane's (None on the first lane itself; ITL None
        also for a speculative lane, whose steps are not one forward each): ratio, interval, verdict."""
        first = next(iter(self.lanes), None)
        out: dict[str, Any] = dict.fromkeys(
            (
                "ttft_ratio",
                "ttft_ratio_spread",
                "ttft_verdict",
                "itl_ratio",
                "itl_ratio_spread",
                "itl_ratio_coverage",
                "itl_pairs",
                "itl_verdict",
            )
        )
        out["ratio_vs"] = first
        if first is None or name == first:
            return out
        if first in self._ttft and name in self._ttft:
            (a, a_lo, a_hi, reps), (b, b_lo, b_hi, _) = self._ttft[first], self._ttft[name]
            t = compare_ranges((a, a_lo, a_hi), (b, b_lo, b_hi), name=name, baseline_name=first, repeats=reps)
            if t.pairs:
                out.update(ttft_ratio=t.ratio, ttft_ratio_spread=[t.low, t.high], ttft_verdict=t.verdict)
        stepwise = all(self.lanes[n]["target_forwards"] == self.steps for n in (first, name))
        a_ms, b_ms = self._decode_ms.get(first, []), self._decode_ms.get(name, [])
        if stepwise and a_ms and len(a_ms) == len(b_ms):
            c = compare_paired(a_ms, b_ms, name=name, baseline_name=first)
            if c.pairs:
                out.update(
                    itl_ratio=c.ratio,
                    itl_ratio_spread=[c.low, c.high],
                    itl_ratio_coverage=c.coverage,
                    itl_pairs=c.pairs,
                    itl_verdict=c.verdict,
                )
        return out


def work_of(step: LaneStep) -> tuple[Any, ...]:
    """What a lane's step computed and moved, as counted (rows, rows read, FLOPs, bytes per component,
    forwards): two steps with equal work ran the same computation, so their times differ only by noise."""
    return (step.kv_positions, step.context, step.flops, tuple(sorted(step.bytes_by_component.items())), step.forwards)


def prefill_compared(first: LaneStep, other: LaneStep) -> Comparison:
    """``other``'s prefill time against ``first``'s as the run summary compares them (the ratio of the medians,
    the spread from the repeats' extremes, within noise with a single timing), and within noise whatever
    the clock says when the two prefills did the same work: the one computation, timed twice."""
    timed = first.wall_ms_min is not None and first.wall_ms_max is not None
    c = compare_ranges(
        (first.wall_ms, first.wall_ms_min or first.wall_ms, first.wall_ms_max or first.wall_ms),
        (other.wall_ms, other.wall_ms_min or other.wall_ms, other.wall_ms_max or other.wall_ms),
        name=other.name,
        baseline_name=first.name,
        repeats=2 if timed else 1,
    )
    return dataclasses.replace(c, same_work=work_of(first) == work_of(other))


def decode_compared(first: Sequence[LaneStep], other: Sequence[LaneStep]) -> Comparison:
    """``other``'s decode steps against ``first``'s, paired step by step (``compare_paired``: the median
    ratio, its 95% interval, the verdict), within noise when every step did the same work as its pair."""
    c = compare_paired(
        [s.wall_ms for s in first],
        [s.wall_ms for s in other],
        name=other[0].name if other else "B",
        baseline_name=first[0].name if first else "A",
    )
    same = len(first) == len(other) and all(work_of(a) == work_of(b) for a, b in zip(first, other, strict=True))
    return dataclasses.replace(c, same_work=same and bool(first))


def compared_text(figures: dict[str, Any]) -> str | None:
    """A lane's comparison with the first lane in words (None on the first lane): ``ITL 0.52× uncached's
    (0.50–0.55, 96%, 31 steps): faster; TTFT 0.98× (0.90–1.07): within noise``."""
    vs = figures.get("ratio_vs")
    parts = []
    if figures.get("itl_ratio") is not None:
        lo, hi = figures["itl_ratio_spread"]
        parts.append(
            f"ITL {figures['itl_ratio']:.3g}× {vs}'s ({lo:.3g}–{hi:.3g}, {100 * figures['itl_ratio_coverage']:.0f}%, "
            f"{figures['itl_pairs']} steps paired): {figures['itl_verdict']}"
        )
    if figures.get("ttft_ratio") is not None:
        lo, hi = figures["ttft_ratio_spread"]
        spread = "one timing each: no spread" if lo == hi else f"{lo:.3g}–{hi:.3g}, min/max of the repeats"
        parts.append(f"TTFT {figures['ttft_ratio']:.3g}× ({spread}): {figures['ttft_verdict']}")
    return "; ".join(parts) or None


def summarize(trace: Trace) -> dict[str, Any]:
    """Whole-run figures: did every lane choose the reference's tokens, how far apart, TTFT/ITL."""
    summary = RunSummary()
    for record in trace.records:
        summary.add(record)
    return summary.as_dict()
