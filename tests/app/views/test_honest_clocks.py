"""Honest clocks (issue 31): the costs panel compares lane times as the CLI does and says "within noise"
when a difference is inside its measured spread. A real (random, tiny) run's records are given fake
clocks — equal times with noise, a clear gap, identical prefills timed 7.9 vs 24.9 ms — and the words
the panel writes are read back, in English and in Portuguese."""

from __future__ import annotations

import dataclasses
import os
import random

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402

MODEL = "random:family=llama,layers=2,heads=4,kv_heads=2,dim=64,ctx=256,seed=0"
LANES = "none,kv,window:64"  # the window holds the whole short run: the same work as kv at every step
STEPS = 16


@pytest.fixture(scope="module")
def recorded():
    from kvsim.caches import parse_lanes
    from kvsim.engine.simulate import Simulator
    from kvsim.models.loading import load_model

    loaded = load_model(MODEL)
    ids = loaded.tokenizer.encode("The cache remembers what the model computed before.")[:12]
    sim = Simulator(loaded.model, loaded.tokenizer, ids, parse_lanes(LANES), model_id=MODEL, prompt_text="")
    return sim, list(sim.run(STEPS, stop_at_eos=False)), loaded.tokenizer


def _clocked(records, clock):
    """The records with each lane's step time from ``clock(step, lane)`` -> (ms, min, max)."""
    out = []
    for r in records:
        lanes = []
        for i, lane in enumerate(r.lanes):
            ms, lo, hi = clock(r.step, i)
            lanes.append(dataclasses.replace(lane, wall_ms=ms, wall_ms_min=lo, wall_ms_max=hi))
        out.append(dataclasses.replace(r, lanes=tuple(lanes)))
    return out


def _session(recorded, clock):
    from kvsim.ui.session import RunInfo, Session

    sim, records, tok = recorded
    s = Session()
    s.start_run(RunInfo.from_trace(sim.trace.meta, sim.run_id, token_text=tok.token_text))
    for r in _clocked(records, clock):
        assert s.add_record(r)
    s.set_cursor(len(records) - 1)
    return s


def _noisy(seed: int, centre: dict[int, float], spread: float = 0.15):
    """Decode steps around ``centre[lane]`` ms with ±``spread`` relative noise; the prefill one timing each."""
    rng = random.Random(seed)

    def clock(step, lane):
        ms = centre[lane] * (1 + rng.uniform(-spread, spread))
        return ms, None, None

    return clock


def test_equal_times_with_noise_read_within_noise_and_the_caption_says_why(recorded, qapp):
    from kvsim.ui import i18n
    from kvsim.ui.panels import costs_text

    s = _session(recorded, _noisy(1, {0: 10.0, 1: 10.0, 2: 10.0}))
    c = s.itl_compared(1)
    assert c.verdict == "within noise" and c.low <= 1.0 <= c.high and not c.same_work
    lines = dict(costs_text.verdict_lines(s))
    assert lines[1].endswith("ITL: within noise")
    assert "fixed cost" in lines[-1]  # none vs kv within noise: the caption on the per-step cost
    assert "faster" not in costs_text.stats_html(s) and "slower" not in costs_text.stats_html(s)
    assert "fixed cost" in costs_text.verdicts_tip(s)  # the caption in full: in the table's tooltip
    panel = _panel(s)  # on screen: the words beside the check box, on its line (no line of their own)
    assert "≈\u00a0within noise" in panel.verdict.text() and "fixed cost" in panel.verdict.toolTip()
    assert _fits(panel)
    i18n.install(qapp, "pt_BR")
    try:
        lines = dict(costs_text.verdict_lines(s))
        assert lines[1].endswith("ITL: dentro do ruído")
        assert "custo fixo" in lines[-1]
        panel = _panel(s)
        assert "≈\u00a0dentro do ruído" in panel.verdict.text() and _fits(panel)
    finally:
        i18n.install(qapp, "en")


def _panel(session):
    """The costs panel on ``session``'s run, its table filled; deleted by Qt before the test ends (a pyqtgraph
    widget left to Python's collector at exit crashes the process)."""
    from kvsim.ui.panels.costs import CostsPanel

    panel = CostsPanel(session)
    panel._rebuild()  # the run started before the panel: its table's width for these lanes
    panel._stats()
    _PANELS.append(panel)
    return panel


_PANELS: list = []


@pytest.fixture(autouse=True)
def _delete_panels(qapp):
    yield
    import shiboken6

    while _PANELS:
        shiboken6.delete(_PANELS.pop())


def _fits(panel) -> bool:
    """The verdicts' words fit what the check box leaves of the table's width, on one line."""
    import html
    import re

    from kvsim.ui.panels.costs import VERDICT_GAP

    room = panel.stats.width() - panel.log_box.sizeHint().width() - VERDICT_GAP
    words = html.unescape(re.sub("<[^>]+>", "", panel.verdict.text()))
    return 0 < panel.verdict.fontMetrics().horizontalAdvance(words) <= room


def test_a_clear_gap_reads_the_right_word(recorded, qapp):
    from kvsim.ui.panels import costs_text

    s = _session(recorded, _noisy(2, {0: 10.0, 1: 5.0, 2: 20.0}, spread=0.05))
    faster, slower = s.itl_compared(1), s.itl_compared(2)
    assert faster.verdict == "faster" and faster.high < 1.0
    assert slower.verdict == "slower" and slower.low > 1.0
    lines = dict(costs_text.verdict_lines(s))
    assert "faster" in lines[1] and "slower" in lines[2] and -1 not in lines  # no caption: the saving shows
    from PySide6.QtGui import QFont, QFontMetrics

    fm = QFontMetrics(QFont())
    wide = costs_text.verdict_html(s, 10_000, fm)  # room enough: each lane's verdict in its words
    assert "faster" in wide and "slower" in wide and wide.index("faster") < wide.index("slower")
    assert costs_text.verdict_html(s, 5, fm) == ""  # no room: nothing rather than a wrapped or cut line
    # the same gap reversed: the uncached lane is the faster one, and the words follow the clock
    s = _session(recorded, _noisy(3, {0: 5.0, 1: 10.0, 2: 10.0}, spread=0.05))
    assert s.itl_compared(1).verdict == "slower"


def test_lanes_with_the_same_work_read_within_noise_whatever_their_clocks(recorded, qapp):
    from kvsim.core.compare import compare_ranges
    from kvsim.engine.summary import prefill_compared, work_of
    from kvsim.ui.panels import costs_text

    # the case: identical prefills timed 7.9 and 24.9 ms, each over repeats that do not overlap
    prefill = {0: (7.9, 7.5, 8.3), 1: (24.9, 24.0, 26.0), 2: (7.0, 6.9, 7.1)}

    def clock(step, lane):
        if step == 0:
            return prefill[lane]
        return (10.0, None, None) if lane == 0 else (5.0 if step % 2 else 30.0, None, None)

    s = _session(recorded, clock)
    r0 = s.records[0]
    assert work_of(r0.lanes[0]) == work_of(r0.lanes[1])  # none and kv: the one prefill computation
    assert compare_ranges(prefill[0], prefill[1], repeats=2).verdict == "slower"  # the clocks alone would say so
    t = s.ttft_compared(1)
    assert t.same_work and t.verdict == "within noise"
    assert "≈" in costs_text.ttft_cell(s, s.lanes[1], "24.9 ms")
    # a prefill of different work keeps the clocks' verdict
    other = dataclasses.replace(r0.lanes[1], flops=r0.lanes[1].flops * 2)
    assert prefill_compared(r0.lanes[0], other).verdict == "slower"
    # kv and window:64 did the same work at every step: within noise though their clocks zig-zag
    from kvsim.engine.summary import decode_compared

    decode = s.records[1:]
    same = decode_compared([r.lanes[1] for r in decode], [r.lanes[2] for r in decode])
    assert same.same_work and same.verdict == "within noise"
