"""A long run stays linear (issue 36): the whole-run summary of a valid 50,000-step two-lane run (``kvsim run``'s
summary, ``kvsim inspect``'s) does a bounded amount of work — counted, not timed: the decode clocks' mean and median
taken once per lane (they were taken again at every step: n² over the run), one paired comparison per lane against
the first, and that comparison's interval over O(√n) binomial terms (``test_compare``). Times: benchmarks/frontend/
long_runs.py, docs/benchmarks.md."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import synthetic_long_run

from kvsim.core import compare
from kvsim.engine import summary as summary_module
from kvsim.engine.summary import compared_text, summarize

STEPS = 50_000


@pytest.fixture(scope="module")
def long_trace():
    return synthetic_long_run(STEPS)


def test_the_synthetic_run_is_a_valid_run(long_trace) -> None:
    """What the benchmark and the test below read is a run ``Trace.load`` would accept (its checks, in memory)."""
    from kvsim.engine.trace_checks import check_meta, check_sequence

    check_meta(long_trace.meta)
    check_sequence(long_trace.records, long_trace.meta)
    assert len(long_trace.records) == STEPS and [lane["name"] for lane in long_trace.meta["lanes"]] == ["uncached", "cached"]


def test_the_summary_of_a_50000_step_run_is_bounded_work(long_trace, monkeypatch) -> None:
    calls = {"mean": 0, "median": 0, "compare_paired": 0, "lgamma": 0}

    class CountingNumpy:
        def __getattr__(self, name):
            return getattr(np, name)

        @staticmethod
        def mean(values):
            calls["mean"] += 1
            return np.mean(values)

        @staticmethod
        def median(values):
            calls["median"] += 1
            return np.median(values)

    class CountingMath:
        def __getattr__(self, name):
            return getattr(math, name)

        @staticmethod
        def lgamma(x):
            calls["lgamma"] += 1
            return math.lgamma(x)

    real_compare = summary_module.compare_paired

    def counted_compare(*args, **kwargs):
        calls["compare_paired"] += 1
        return real_compare(*args, **kwargs)

    monkeypatch.setattr(summary_module, "np", CountingNumpy())
    monkeypatch.setattr(summary_module, "compare_paired", counted_compare)
    monkeypatch.setattr(compare, "math", CountingMath())
    s = summarize(long_trace)
    lanes = s["lanes"]
    assert calls["mean"] == calls["median"] == 2  # once per lane, not once per step
    assert calls["compare_paired"] == 1  # the second lane against the first, once
    assert calls["lgamma"] <= 2 * (compare._TAIL_SD + 2) * math.sqrt(STEPS) / 2 + 3
    # and the figures are the run's
    decode = [r.lanes[1].wall_ms for r in long_trace.records[1:]]
    assert lanes["cached"]["itl_ms"] == pytest.approx(sum(decode) / len(decode))
    assert lanes["cached"]["itl_median_ms"] == pytest.approx(float(np.median(decode)))
    assert lanes["cached"]["itl_pairs"] == STEPS - 1 and lanes["cached"]["itl_verdict"] == "faster"
    low, high = lanes["cached"]["itl_ratio_spread"]
    assert low <= lanes["cached"]["itl_ratio"] <= high and lanes["cached"]["itl_ratio_coverage"] >= 0.95
    assert s["steps"] == STEPS and lanes["uncached"]["kv_positions_total"] > lanes["cached"]["kv_positions_total"]
    assert compared_text(lanes["cached"]).startswith("ITL ")
