"""The comparison primitive (kvsim.core.compare), driven by a fake clock: no wall-clock time is asserted."""

from __future__ import annotations

import math
import random

import pytest

from kvsim.core.compare import (
    FASTER,
    SLOWER,
    WITHIN_NOISE,
    compare_paired,
    compare_ranges,
    interleave,
    median_interval,
)


class FakeClock:
    """A clock that only moves when a candidate runs: each candidate advances it by its scripted cost."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def task(self, cost):
        def run() -> None:
            self.now += cost()

        return run


def _noisy(mean: float, rng: random.Random, sd: float = 0.2):
    return lambda: mean * math.exp(rng.gauss(0.0, sd))


def test_the_median_interval_has_the_binomial_coverage():
    # independent reference: coverage of [x_(k), x_(n+1-k)] is 1 - 2 P(Bin(n, 1/2) < k), from the pmf
    for n in (6, 10, 25, 40):
        low, high, cov = median_interval(list(range(n)))
        k = int(low) + 1  # values are 0..n-1: x_(k) = k - 1
        assert high == n - k
        pmf = [math.comb(n, i) * 0.5**n for i in range(n + 1)]
        assert cov == pytest.approx(1 - 2 * sum(pmf[:k]))
        assert cov >= 0.95
        assert 1 - 2 * sum(pmf[: k + 1]) < 0.95  # one step narrower would fall short: k is the largest
    # 5 values cannot give 95%: min..max with 1 - 2/32
    assert median_interval([3, 1, 2, 5, 4]) == (1, 5, pytest.approx(1 - 2 / 32))


def test_the_median_interval_is_the_largest_k_of_the_direct_sum_for_every_n():
    # the direct definition, summing C(n, i) afresh for each k (what the interval once computed, in O(n³))
    def direct(n: int, confidence: float = 0.95) -> tuple[int, float]:
        def cdf(k: int) -> float:
            return sum(math.comb(n, i) for i in range(k + 1)) / 2**n

        best = 1
        for k in range(1, (n + 1) // 2 + 1):
            if 1 - 2 * cdf(k - 1) >= confidence:
                best = k
            else:
                break
        return best, 1 - 2 * cdf(best - 1)

    for n in range(2, 121):
        low, high, cov = median_interval(list(range(n)))
        k, coverage = direct(n)
        assert (low, high, cov) == (k - 1, n - k, coverage), n
    for confidence in (0.5, 0.8, 0.99):
        low, _, cov = median_interval(list(range(97)), confidence)
        assert (int(low) + 1, cov) == direct(97, confidence)


def test_a_long_run_gets_its_interval_without_freezing():
    # 6,000 pairs (a 6,000-step run): the interval around the middle, its coverage at least the confidence;
    # the O(n³) sum needed minutes here, so this test alone would time out a suite that regressed
    n = 6000
    low, high, cov = median_interval(list(range(n)))
    assert 0.95 <= cov < 1
    assert low + high == n - 1 and n / 2 - 100 < high < n / 2 + 100


def test_beyond_the_exact_sum_the_float_sum_gives_the_same_k():
    """Past ``EXACT_UP_TO`` values the binomial terms are summed in floats near the middle only: the same k as the
    exact integers (and the coverage to 1e-9) for sizes on both sides of the switch and several confidences."""
    from kvsim.core.compare import EXACT_UP_TO, _exact_k, _float_k

    for n in (EXACT_UP_TO + 1, EXACT_UP_TO + 2, 1500, 2047, 3001, 4096):
        for confidence in (0.5, 0.8, 0.95, 0.99, 0.999999):
            k, coverage = _exact_k(n, confidence)
            k_float, coverage_float = _float_k(n, confidence)
            assert k_float == k and coverage_float == pytest.approx(coverage, abs=1e-9), (n, confidence)
    low, high, cov = median_interval(list(range(EXACT_UP_TO + 1)))
    assert (int(low) + 1, cov) == pytest.approx(_exact_k(EXACT_UP_TO + 1, 0.95))


def test_the_interval_of_a_50000_step_run_is_bounded_work(monkeypatch):
    """A 50,000-step run's comparison: the binomial sum touches O(√n) terms (counted: the log-gamma calls), not n,
    and no integer of n bits is built (the exact sum's were 50,000 bits long, its cost n²)."""
    from kvsim.core import compare

    calls = [0]

    class CountingMath:
        def __getattr__(self, name):
            return getattr(math, name)

        @staticmethod
        def lgamma(x):
            calls[0] += 1
            return math.lgamma(x)

    monkeypatch.setattr(compare, "math", CountingMath())
    monkeypatch.setattr(compare, "_exact_k", lambda n, c: pytest.fail("the exact sum ran on 50,000 values"))
    n = 50_000
    low, high, cov = median_interval([float(i) for i in range(n)])
    assert 0.95 <= cov < 1 and low + high == n - 1 and n / 2 - 300 < high < n / 2 + 300
    assert calls[0] <= 2 * (compare._TAIL_SD + 2) * math.sqrt(n) / 2 + 3  # two per term, ~40 sd of terms


def test_a_clearly_faster_candidate_is_ordered_and_stops_early():
    clock, rng = FakeClock(), random.Random(1)
    got = interleave(
        {"slow": clock.task(_noisy(2.0, rng)), "fast": clock.task(_noisy(1.0, rng)), "mid": clock.task(_noisy(1.5, rng))},
        clock=clock,
        precision=0.25,
        max_rounds=200,
    )
    cmp = got.comparisons()
    assert cmp["fast"].verdict == FASTER and cmp["fast"].high < 1
    assert cmp["mid"].verdict == FASTER and cmp["fast"].ratio < cmp["mid"].ratio
    assert cmp["fast"].low < 0.5 < cmp["fast"].high  # the true ratio is inside
    assert got.stopped == "precise" and got.rounds < 200
    assert all(c.relative_width <= 0.25 for c in cmp.values())
    # against "fast", the others are slower
    flipped = compare_paired(got.times["fast"], got.times["slow"], name="slow", baseline_name="fast")
    assert flipped.verdict == SLOWER and flipped.low > 1


def test_a_noisy_equal_pair_says_within_noise():
    for seed in range(5):
        clock, rng = FakeClock(), random.Random(seed)
        got = interleave(
            {"a": clock.task(_noisy(1.0, rng, 0.3)), "b": clock.task(_noisy(1.0, rng, 0.3))}, clock=clock, max_rounds=30
        )
        c = got.comparisons()["b"]
        assert got.rounds == 30 and got.stopped == "rounds"  # ±30% noise: 30 pairs cannot pin it to 10%
        assert c.low <= 1 <= c.high and c.verdict == WITHIN_NOISE


def test_a_load_spike_that_hits_both_in_a_round_does_not_flip_the_order():
    # every 3rd round the machine is 5× slower for both: the paired ratios stay ~0.8
    clock = FakeClock()
    calls = [0]

    def load() -> float:
        calls[0] += 1
        return 5.0 if ((calls[0] - 1) // 2) % 3 == 0 else 1.0  # two calls a round

    def a() -> None:
        clock.now += 1.0 * load()

    def b() -> None:
        clock.now += 0.8 * load()

    got = interleave({"a": a, "b": b}, clock=clock, max_rounds=20)
    c = got.comparisons()["b"]
    assert max(got.times["a"]) == 5.0 and min(got.times["a"]) == 1.0  # the spike is there
    assert c.ratio == pytest.approx(0.8) and c.verdict == FASTER
    assert got.stopped == "precise" and got.rounds == 8  # min_rounds: every ratio equal, width 0


def test_the_order_rotates_and_each_candidate_runs_once_per_round():
    clock, calls = FakeClock(), []
    cands = {n: (lambda n=n: calls.append(n) or setattr(clock, "now", clock.now + 1)) for n in "ABC"}
    got = interleave(cands, clock=clock, min_rounds=6, max_rounds=6)
    assert got.orders[:3] == [("A", "B", "C"), ("B", "C", "A"), ("C", "A", "B")]
    assert [tuple(calls[i : i + 3]) for i in range(0, 18, 3)] == got.orders
    assert all(len(t) == 6 for t in got.times.values())
    assert [calls[i] for i in range(0, 18, 3)].count("A") == 2  # each first equally often


def test_the_budget_stops_new_rounds():
    clock, rng = FakeClock(), random.Random(3)
    got = interleave(
        {"a": clock.task(_noisy(1.0, rng, 0.5)), "b": clock.task(_noisy(1.0, rng, 0.5))},
        clock=clock,
        min_rounds=4,
        max_rounds=1000,
        budget_s=40.0,
    )
    assert got.stopped == "budget" and 4 <= got.rounds < 30


def test_too_few_pairs_are_within_noise_whatever_the_ratio():
    c = compare_paired([1.0] * 5, [0.5] * 5)
    assert c.ratio == 0.5 and c.coverage < 0.95 and c.verdict == WITHIN_NOISE
    assert compare_paired([1.0] * 6, [0.5] * 6).verdict == FASTER


def test_describe_and_json_say_the_same():
    c = compare_paired([1.0, 1.1, 0.9, 1.0, 1.2, 1.0, 0.95, 1.05], [2.0, 2.3, 1.7, 2.1, 2.5, 1.9, 2.0, 2.2])
    d = c.as_dict()
    assert d["verdict"] == SLOWER == c.verdict and d["spread"][0] > 1
    assert c.describe().endswith(": slower") and f"{d['spread'][0]:.3g}" in c.describe()


def test_ranges_of_unpaired_repeats():
    assert compare_ranges((10, 9, 11), (5, 4.5, 5.5), repeats=3).verdict == FASTER
    assert compare_ranges((10, 8, 12), (11, 9, 13), repeats=3).verdict == WITHIN_NOISE
    assert compare_ranges((10, 10, 10), (5, 5, 5), repeats=1).verdict == WITHIN_NOISE  # no spread known
    with pytest.raises(ValueError):
        interleave({"only": lambda: None})


def test_gqa_pairs_its_decode_steps_and_says_within_noise_when_times_are_equal():
    """``compare_kv_heads`` through a fake clock on which every step takes the same time: every ratio is
    exactly 1, the interval [1, 1] is as narrow as can be (it stops after the 8 rounds it must run), and
    nothing is called faster or slower."""
    from kvsim.costs.gqa import compare_kv_heads

    ticks = iter(range(10**6))
    rows = compare_kv_heads(layers=1, heads=4, dim=32, prompt_len=4, steps=40, clock=lambda: float(next(ticks)))
    assert [r.kind for r in rows] == ["MHA", "GQA", "MQA", "MLA"]
    assert all(r.pairs == 8 for r in rows)
    for r in rows[1:]:
        assert r.itl_ratio_vs_mha == 1.0 and r.itl_ratio_spread == (1.0, 1.0) and r.verdict == WITHIN_NOISE
        assert r.itl_ratio_coverage is not None and r.itl_ratio_coverage >= 0.95
    assert [r.vs_next for r in sorted(rows, key=lambda r: r.rank)] == [WITHIN_NOISE] * 3 + [None]
    # 8 timed decodes after the prompt: the cache holds prompt + 8 rows
    assert all(r.cache_bytes == r.bytes_per_token * (4 + 8) for r in rows)


def test_lanes_run_in_a_rotating_order_and_the_summary_pairs_their_steps():
    """The simulator's lanes take turns running first (seen through the progress hook's call order), and
    the summary's ITL ratio is the median of the per-step ratios of the records' own times, with an
    interval and a verdict that agree with it (structure and consistency: no time is asserted)."""
    import statistics

    from helpers import FAMILY_SPECS, load

    from kvsim.caches import parse_lanes
    from kvsim.engine.simulate import Simulator, summarize

    loaded = load(FAMILY_SPECS["gpt2"])
    firsts: list[str] = []

    def progress(name: str, done: int, total: int) -> None:
        if done == 1 and (not firsts or len(firsts) < sim.steps_done + 1):
            firsts.append(name)

    sim = Simulator(loaded.model, loaded.tokenizer, [5, 6, 7, 8], parse_lanes("uncached,kv,window:3"), progress=progress)
    records = list(sim.run(10, stop_at_eos=False))
    assert firsts[:4] == ["uncached", "kv", "window:3", "uncached"]
    summary = summarize(sim.trace)
    lanes = summary["lanes"]
    assert lanes["uncached"]["itl_ratio"] is None and lanes["uncached"]["ratio_vs"] == "uncached"
    for name in ("kv", "window:3"):
        f = lanes[name]
        ratios = [
            r.lanes[i].wall_ms / r.lanes[0].wall_ms for r in records[1:] for i, lane in enumerate(r.lanes) if lane.name == name
        ]
        assert f["itl_pairs"] == 9 == len(ratios) and f["ratio_vs"] == "uncached"
        assert f["itl_ratio"] == pytest.approx(statistics.median(ratios))
        lo, hi = f["itl_ratio_spread"]
        assert lo <= f["itl_ratio"] <= hi and f["itl_ratio_coverage"] >= 0.95
        assert f["itl_verdict"] == (WITHIN_NOISE if lo <= 1 <= hi else FASTER if hi < 1 else SLOWER)
        assert f["ttft_ratio"] == pytest.approx(
            records[0].lanes[[x.name for x in records[0].lanes].index(name)].wall_ms / records[0].lanes[0].wall_ms
        )
        assert f["ttft_verdict"] == WITHIN_NOISE  # one prefill each (repeats=1): no spread known


def test_the_load_note_warns_only_when_the_load_moved():
    from kvsim.core.compare import LOAD_MOVED, load_note

    assert load_note(1.0, 1.0 + LOAD_MOVED) == "machine load (1 min) 1.00 → 2.00"
    assert "moved during the run" in load_note(1.0, 1.0 + LOAD_MOVED + 0.5)
    assert load_note(None, 1.0) == "machine load: unknown"
