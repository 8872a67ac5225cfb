"""Timing comparisons that state their noise: interleave, pair, and give the ratio with its interval.

One method for every "is B faster than A?" kvsim answers (``kvsim gqa``, ``--compare-prefix-cache``,
the lanes' ITL in a run's summary, the benchmarks):

1. **Interleave.** The things compared run one step each per round (A B C, then B C A, then C A B …:
   the order rotates so none always runs first or last), so a load change on the machine hits every
   candidate of a round alike.
2. **Pair.** Round r gives one ratio per candidate, ``time_B[r] / time_A[r]`` against the baseline A.
3. **Interval.** The ratio reported is the median of the paired ratios; its spread is the
   distribution-free confidence interval of that median from order statistics (the sign-test
   interval: the k-th smallest and k-th largest ratio, k from the binomial(n, ½) distribution) — exact
   coverage whatever the noise's shape, no resampling, nothing random. Fewer than 6 pairs cannot give
   95%: the interval is then the smallest..largest ratio, with its own (lower) coverage.
4. **Repeat until the spread is known**: rounds go on until every interval is narrower than a set
   relative width, or a maximum number of rounds (or a time budget) is reached. The stopping rule looks
   at the width only, never at whether 1 is inside, so stopping early does not bias the verdict.
5. **Verdict**: "faster" when the whole interval is below 1, "slower" when it is above 1, "within noise"
   when it includes 1 — or when there are too few pairs to reach the confidence asked for.

Stdlib only (no torch, no numpy): the clock is a parameter, so tests drive it with a fake one.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

FASTER, SLOWER, WITHIN_NOISE = "faster", "slower", "within noise"
VERDICTS = (FASTER, SLOWER, WITHIN_NOISE)
CONFIDENCE = 0.95


#: up to this many values the median's interval sums the binomial terms in exact integers (0.4 ms at 1,000); beyond,
#: in floats from log-gamma, over the terms within 40 standard deviations of the middle only (O(√n) terms: 50,000
#: pairs took 0.56 s exactly, 3 ms so; the exact sum's cost grows as n², its integers being n bits long)
EXACT_UP_TO = 1000
_TAIL_SD = 40  # binomial(n, ½) puts less than e^-800 below n/2 - 40·√n/2: nothing a float sum or a confidence sees


def median_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """(low, high, coverage): the order-statistic confidence interval of the median of ``values``.

    [x_(k), x_(n+1-k)] (1-based, sorted) covers the population median with probability
    1 - 2·P(X ≤ k-1), X ~ binomial(n, ½); k is the largest giving at least ``confidence``. When even
    k = 1 (the smallest and largest value) falls short, that interval is returned with its coverage.
    O(n log n) for the sort; the binomial sum is exact up to ``EXACT_UP_TO`` values, beyond it to about
    1e-10 (a k could differ only where the exact coverage is that close to ``confidence``)."""
    xs = sorted(float(v) for v in values)
    n = len(xs)
    if n == 0:
        raise ValueError("no values")
    if n == 1:
        return xs[0], xs[0], 0.0
    if n <= EXACT_UP_TO or not 0.0 < confidence < 1.0 - 1e-9:
        best, coverage = _exact_k(n, confidence)
    else:
        best, coverage = _float_k(n, confidence)
    return xs[best - 1], xs[n - best], coverage


def _exact_k(n: int, confidence: float) -> tuple[int, float]:
    """The largest k (and its coverage) with 1 - 2·P(X ≤ k-1) ≥ ``confidence``, in exact integers over 2**n: the
    terms C(n, i) one from the other (a 2,000-step run's comparison once summed C(n, i) afresh for each k: O(n³), 17 s)."""
    whole = 2**n
    term, below = 1, 1  # C(n, 0), and the sum C(n, 0) + … + C(n, k-1) for k = 1
    best, best_below = 1, 1
    for k in range(1, (n + 1) // 2 + 1):
        if 1 - 2 * (below / whole) >= confidence:
            best, best_below = k, below
        else:
            break
        term = term * (n - k + 1) // k  # C(n, k)
        below += term
    return best, 1 - 2 * (best_below / whole)


def _float_k(n: int, confidence: float) -> tuple[int, float]:
    """``_exact_k`` in floats: P(X = i) = exp(lgamma(n+1) - lgamma(i+1) - lgamma(n-i+1) - n·ln 2), summed from
    ``_TAIL_SD`` standard deviations below the middle (what lies below is less than e^-800)."""
    start = max(1, int(n / 2 - _TAIL_SD * math.sqrt(n) / 2))
    log_whole = math.lgamma(n + 1) - n * math.log(2)
    below = 0.0  # P(X ≤ start - 1): negligible
    best, best_below = start, 0.0
    for k in range(start + 1, (n + 1) // 2 + 1):
        i = k - 1
        below += math.exp(log_whole - math.lgamma(i + 1) - math.lgamma(n - i + 1))
        if 1 - 2 * below >= confidence:
            best, best_below = k, below
        else:
            break
    return best, 1 - 2 * best_below


def _median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


@dataclass(frozen=True)
class Comparison:
    """``name``'s time over ``baseline``'s, paired round by round: below 1 is faster."""

    name: str
    baseline: str
    ratio: float  # median of the paired ratios name / baseline
    low: float  # the interval of that median
    high: float
    coverage: float  # the interval's exact confidence (≥ the one asked for, unless too few pairs)
    pairs: int
    confidence: float = CONFIDENCE  # the confidence asked for
    #: the two did the very same work (the same counted FLOPs and bytes): whatever their times say, the
    #: difference is the machine's noise, so the verdict is "within noise" (two lanes' identical prefills)
    same_work: bool = False

    @property
    def verdict(self) -> str:
        if self.same_work or self.coverage < self.confidence or self.low <= 1.0 <= self.high:
            return WITHIN_NOISE
        return FASTER if self.high < 1.0 else SLOWER

    @property
    def relative_width(self) -> float:
        """How wide the interval is, relative to the ratio: (high - low) / ratio."""
        return (self.high - self.low) / self.ratio if self.ratio > 0 else math.inf

    def spread(self) -> str:
        """``0.52–0.56 (95%, 24 pairs)``."""
        return f"{self.low:.3g}–{self.high:.3g} ({100 * self.coverage:.0f}%, {self.pairs} pairs)"

    def describe(self) -> str:
        """``0.54× (0.52–0.56, 95%, 24 pairs): faster``."""
        return (
            f"{self.ratio:.3g}× ({self.low:.3g}–{self.high:.3g}, {100 * self.coverage:.0f}%, {self.pairs} pairs): {self.verdict}"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "baseline": self.baseline,
            "ratio": round(self.ratio, 4),
            "spread": [round(self.low, 4), round(self.high, 4)],
            "coverage": round(self.coverage, 4),
            "pairs": self.pairs,
            "verdict": self.verdict,
        }


def compare_paired(
    baseline: Sequence[float],
    other: Sequence[float],
    *,
    name: str = "B",
    baseline_name: str = "A",
    confidence: float = CONFIDENCE,
) -> Comparison:
    """``other`` against ``baseline``, sample i with sample i (times taken side by side); pairs with a
    baseline time ≤ 0 are left out."""
    if len(baseline) != len(other):
        raise ValueError(f"paired samples need equal counts, got {len(baseline)} and {len(other)}")
    ratios = [b / a for a, b in zip(baseline, other, strict=True) if a > 0 and b >= 0]
    if not ratios:
        return Comparison(name, baseline_name, math.nan, math.nan, math.nan, 0.0, 0, confidence)
    low, high, coverage = median_interval(ratios, confidence)
    return Comparison(name, baseline_name, _median(ratios), low, high, coverage, len(ratios), confidence)


def compare_ranges(
    baseline: tuple[float, float, float],
    other: tuple[float, float, float],
    *,
    name: str = "B",
    baseline_name: str = "A",
    repeats: int = 1,
) -> Comparison:
    """Two single measurements, each (median, min, max) of ``repeats`` unpaired repeats: the ratio of the
    medians, the interval from the extremes (other's min over baseline's max … other's max over baseline's
    min). Its coverage is not known, so it is given as 1 when ``repeats`` > 1 (every repeat fell inside)
    and 0 with a single repeat (no spread at all: within noise)."""
    (a, a_lo, a_hi), (b, b_lo, b_hi) = baseline, other
    if a <= 0 or a_lo <= 0:
        return Comparison(name, baseline_name, math.nan, math.nan, math.nan, 0.0, 0)
    coverage = 1.0 if repeats > 1 else 0.0
    return Comparison(name, baseline_name, b / a, b_lo / a_hi, b_hi / a_lo, coverage, repeats)


@dataclass
class Interleaved:
    """The times of an interleaved measurement, in the clock's unit, and each candidate against the baseline."""

    names: tuple[str, ...]
    baseline: str
    times: dict[str, list[float]]  # per candidate, one per round
    orders: list[tuple[str, ...]] = field(default_factory=list)  # the order each round ran in
    stopped: str = ""  # "precise" (every interval narrow enough), "rounds" (the maximum) or "budget" (time)

    @property
    def rounds(self) -> int:
        return len(self.orders)

    def comparisons(self, confidence: float = CONFIDENCE) -> dict[str, Comparison]:
        base = self.times[self.baseline]
        return {
            n: compare_paired(base, self.times[n], name=n, baseline_name=self.baseline, confidence=confidence)
            for n in self.names
            if n != self.baseline
        }

    def median(self, name: str) -> float:
        return _median(self.times[name])


def interleave(
    candidates: Mapping[str, Callable[[], object]],
    *,
    baseline: str | None = None,
    min_rounds: int = 8,
    max_rounds: int = 64,
    precision: float = 0.10,
    budget_s: float | None = None,
    confidence: float = CONFIDENCE,
    clock: Callable[[], float] = time.perf_counter,
    sync: Callable[[], object] | None = None,
    self_timed: bool = False,
) -> Interleaved:
    """Time each candidate once per round, in an order that rotates each round, until every candidate's
    ratio to ``baseline`` (default: the first) has an interval narrower than ``precision`` (relative to
    the ratio) — at least ``min_rounds``, at most ``max_rounds`` rounds, and no new round once
    ``budget_s`` seconds of ``clock`` have passed (after ``min_rounds``). A candidate may be stateful (a
    decode step that advances its cache): it is called exactly once per round. ``sync`` (e.g. a CUDA
    synchronize) runs before each clock reading. ``self_timed``: each candidate times itself and returns
    its time (in seconds, as the clock counts), so what it does around the timed part is left out."""
    names = tuple(candidates)
    if len(names) < 2:
        raise ValueError("a comparison needs at least two candidates")
    base = names[0] if baseline is None else baseline
    if base not in candidates:
        raise ValueError(f"the baseline {base!r} is not one of the candidates ({', '.join(names)})")
    if not 1 <= min_rounds <= max_rounds:
        raise ValueError(f"need 1 ≤ min_rounds ≤ max_rounds, got {min_rounds} and {max_rounds}")
    result = Interleaved(names, base, {n: [] for n in names})
    start = clock()
    for r in range(max_rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for n in order:
            if sync is not None:
                sync()
            t0 = clock()
            own = candidates[n]()
            if sync is not None:
                sync()
            result.times[n].append(float(own) if self_timed else clock() - t0)  # type: ignore[arg-type]
        result.orders.append(order)
        if r + 1 < min_rounds:
            continue
        if all(c.relative_width <= precision for c in result.comparisons(confidence).values()):
            result.stopped = "precise"
            return result
        if budget_s is not None and clock() - start >= budget_s:
            result.stopped = "budget"
            return result
    result.stopped = "rounds"
    return result


#: the 1-minute load average may move by at most this much during a comparison before its text warns
LOAD_MOVED = 1.0


def load_average() -> float | None:
    """The machine's 1-minute load average (None where the platform has none)."""
    try:
        return os.getloadavg()[0]
    except (OSError, AttributeError):
        return None


def load_note(start: float | None, end: float | None) -> str:
    """``machine load 1.02 → 1.10`` and, when it moved by more than ``LOAD_MOVED``, why the verdicts may
    not hold: a load that changes during a run hits the rounds unevenly (pairing evens out only what hits
    both sides of a pair alike)."""
    if start is None or end is None:
        return "machine load: unknown"
    said = f"machine load (1 min) {start:.2f} → {end:.2f}"
    if abs(end - start) > LOAD_MOVED:
        said += " — it moved during the run: treat the verdicts with care, or measure again on a steadier machine"
    return said
