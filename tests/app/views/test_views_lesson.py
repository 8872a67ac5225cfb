"""The lesson on the screen (issue 11): what the lanes and the costs panel write and draw — the
formulas beside the cumulative curves with live values, the step's q rows beside K, K after RoPE,
row labels that fit, one count during the recompute sweep, outside-the-window vs masked, tooltips."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

pytest.importorskip("pytestqt")
from helpers import ready_window  # noqa: E402

from kvsim.ui import theme  # noqa: E402
from kvsim.ui.lanes.plots import TokenAxis, unseen_cells  # noqa: E402
from kvsim.ui.lanes.text import readout_html, recompute_label, step_progress  # noqa: E402
from kvsim.ui.panels.costs import STATS_TIP, formulas  # noqa: E402

MODEL = "random:family=llama,layers=2,heads=4,kv_heads=2,dim=64,seed=1"
GPT2 = "random:family=gpt2,layers=2,heads=4,dim=64,vocab=300,ctx=512,seed=1"
PROMPT = "The cache remembers"


@pytest.fixture
def window(qtbot, qapp):
    w = ready_window(qtbot, qapp, MODEL, PROMPT, size=(1280, 720))
    yield w
    w.shutdown()


# ---------------------------------------------------------------------------------- pure
@pytest.mark.parametrize("n,prompt", [(1, 1), (7, 1), (36, 25), (60, 5), (500, 17)])
def test_the_sum_formula_is_the_sum_over_steps(n, prompt):
    total, formula, values = formulas(n, prompt)
    assert total == sum(range(prompt, n + 1))  # each step t recomputes t rows, from the prompt's P to n
    assert formula.startswith("Σt = n(n+1)/2")
    assert values.endswith(f"= {total:,}")


def test_mid_sweep_counts_agree_with_the_label_and_the_pictures():
    comp_lo, new_lo, n = 0, 59, 60  # no cache: 59 old rows recomputed, then the new one
    seen = []
    for t in np.linspace(0, 1, 101):
        pr = step_progress(t, comp_lo, new_lo, n)
        swept = int(pr.sweep_to) - comp_lo + (n - new_lo if pr.fade_alpha < 1.0 or t >= 0.7 else 0)
        assert pr.done == swept and pr.total == 60
        label = recompute_label(pr)
        assert label.startswith("all 60") if pr.finished else label.startswith(f"{pr.done} of 60")
        seen.append(pr.done)
    assert seen == sorted(seen) and seen[0] == 0 and seen[-1] == 60
    cached = step_progress(0.3, 59, 59, 60)  # a KV cache: only the new row, computed at once
    assert cached.done == cached.total == 1 and cached.finished


def test_readout_says_the_count_the_label_says():
    class Lane:
        kv_positions, flops, wall_ms, context, cache_tokens, cache_bytes = 60, 1.2e6, 3.0, 60, 0, 0
        recompute_diff, logit_diff, kl_div = 0.0, 0.0, 0.0

    pr = step_progress(0.35, 0, 59, 60)
    html = readout_html(Lane, None, "#E69F00", pr, False, False, False)
    assert f">{pr.done} of 60</b> K/V rows computed so far" in html and f"{pr.done} of 60 rows recomputed" == recompute_label(pr)
    done = readout_html(Lane, None, "#E69F00", step_progress(1.0, 0, 59, 60), False, False, False)
    assert ">60</b> K/V rows computed ·" in done and recompute_label(step_progress(1.0, 0, 59, 60)) == "all 60 rows recomputed"


def test_token_axis_names_every_row_when_they_fit_else_numbers_and_the_hovered_token(qapp):
    tokens = [f"tok{i}" for i in range(60)]
    axis = TokenAxis(lambda row: tokens[row])
    axis.newest = 59
    axis.line_px = 17.0
    ((_, values),) = axis.tickValues(-0.0, 20.0, 400)  # 20 rows in 400 px: 20 px a row
    assert [int(v) for v in values] == list(range(20))
    assert axis.tickStrings(values, 1, 1) == tokens[:20]
    ((_, values),) = axis.tickValues(0.0, 60.0, 300)  # 5 px a row: numbers at round steps, no tokens
    strings = axis.tickStrings(values, 1, 1)
    assert axis.numbered and all(s.isdigit() for s in strings)
    assert {int(s) % 5 for s in strings} == {0}
    axis.set_hover(42)
    ((_, values),) = axis.tickValues(0.0, 60.0, 300)
    strings = axis.tickStrings(values, 1, 1)
    assert "▸ tok42" in strings and "40" not in strings  # the hovered token, no number under it


def test_unseen_cells_are_the_ones_before_the_rows_own_position():
    rgba = np.full((4, 6, 4), 255, np.uint8)
    rgba[:, :, 3] = 0
    for r in range(4):  # rows 2..5 of a window of 2: row p sees p-1 and p
        p = r + 2
        rgba[r, p - 1 : p + 1, 3] = 255
    mask = unseen_cells(rgba, 2, 1.0)
    expect = np.zeros((4, 6), bool)
    for r in range(4):
        expect[r, : r + 1] = True  # before the window; after the row's position: the future, not "unseen"
    np.testing.assert_array_equal(mask, expect)
    assert unseen_cells(rgba, 2, None).sum() == (rgba[..., 3] == 0).sum()  # K/V: every transparent cell


# ---------------------------------------------------------------------------------- on screen
def test_formulas_beside_the_cumulative_curves_with_live_values(window, qtbot):
    window.resize(1600, 900)
    assert window.controller.run_steps(8)
    window.costs.redraw()
    s = window.session
    n, prompt = s.n_rows(), s.prompt_len
    sums = {lane.index: s.cumulative(lane.index)[0] for lane in s.lanes}
    assert sums[0] == sum(range(prompt, n + 1)) and sums[1] == n  # what the curves plot
    shown = window.costs.shown_formulas
    assert shown.get("n") == f"n = {n}"
    assert "sum" in shown and shown["sum"].endswith(f"= {sums[0]:,}")
    window.controller.scrub_to(3)  # the values follow the cursor
    window.costs.redraw()
    assert window.costs.shown_formulas.get("n") == f"n = {s.n_rows()}"
    assert window.costs.shown_formulas["sum"].endswith(f"= {s.cumulative(0)[0]:,}")


def test_the_formulas_are_written_on_the_narrow_stage_plot(qtbot, qapp):
    """At 853×480 (a projector at ×1.5) the rows plot is ~120 px wide: the curves' ends leave no room beside
    them, so the formula goes in the plot's free top band (on two lines) — the formula, not only its value."""
    w = ready_window(qtbot, qapp, MODEL, PROMPT, size=(853, 480))
    try:
        if not w.stage.active:
            w.stage.toggle_forced()
        w.stage.show("costs")
        assert w.controller.run_steps(24)
        qtbot.wait(50)
        w.costs.redraw()
        shown = w.costs.shown_formulas
        assert shown.get("n", "").startswith("n"), shown
        assert shown.get("sum", "").startswith("Σt = n(n+1)/2"), shown
        vb = w.costs.plots[0].getViewBox()
        inside = vb.mapRectToScene(vb.rect()).adjusted(-1, -1, 1, 1)
        for kind in shown:
            item = w.costs.formula_items[kind]
            assert inside.contains(item.mapRectToScene(item.boundingRect())), kind  # whole, inside the plot
    finally:
        w.shutdown()


def test_q_rows_beside_k_and_k_named_after_rope(window):
    assert window.controller.run_steps(3)
    s = window.session
    n = s.n_rows()
    un, ca = window.lane_panels
    layer, head = un.layer, un.head
    q = np.concatenate([r.q[layer, head] for r in s.records], axis=0)  # (n, D): every row's query
    m = window.derived.q_levels[(layer, head)]
    expect = theme.colorize(q, -m, m, theme.KV_CMAP)
    np.testing.assert_array_equal(un.q.image.image, expect)  # no cache: every row's q recomputed
    alpha = ca.q.image.image[:, 0, 3]
    assert list(alpha) == [0] * (n - 1) + [255]  # a cache: only the new token's q (Q is never cached)
    np.testing.assert_array_equal(ca.q.image.image[-1], expect[-1])
    assert ca.q_text.isVisible() and "not cached" in ca.q_text.toPlainText()
    assert un.shown()["titles"][0].startswith("K after RoPE") and "RoPE" in un.titles[0].toolTip()


def test_gpt2_keys_are_not_called_rotated(qtbot, qapp):
    w = ready_window(qtbot, qapp, GPT2, PROMPT, size=(1280, 720))
    try:
        assert w.controller.run_steps(2)
        title = w.lane_panels[0].shown()["titles"][0]
        assert title.startswith("K") and "RoPE" not in title
        assert "no RoPE" in w.lane_panels[0].titles[0].toolTip()
    finally:
        w.shutdown()


def test_mid_sweep_readout_and_label_show_one_count(window):
    assert window.controller.run_steps(4)
    un = window.lane_panels[0]
    total = window.session.record().lanes[0].kv_positions
    for t in (0.2, 0.5, 0.69):
        un.set_progress(t)
        assert un.cache_text.isVisible()
        label = un.cache_text.toPlainText()  # "12 of 22 rows recomputed", or its short forms in a narrow lane
        done = int(label.replace("/", " of ").split(" of ")[0])
        assert label in (f"{done} of {total} rows recomputed", f"{done} of {total} recomputed", f"{done}/{total}")
        assert f">{done} of {total}</b>" in un.readout.text() or f">{done}/{total}</b>" in un.readout.text()
    un.set_progress(1.0)
    assert un.cache_text.toPlainText() in (f"all {total} rows recomputed", f"all {total} recomputed", f"all {total}")
    assert f">{total}</b>" in un.readout.text()


def test_outside_the_window_is_cross_hatched_not_masked(window, qtbot):
    window.controller.set_lanes("kv,window:4")
    qtbot.waitUntil(lambda: window.controller.can_step and len(window.session.lanes) == 2, timeout=20_000)
    assert window.controller.run_steps(6)
    win = window.lane_panels[1]
    n = window.session.n_rows()
    assert win.a.unseen_hatch.isVisible() and win.k.unseen_hatch.isVisible()
    assert win.a.unseen_hatch.brush().style() != win.a.masked_bg.brush().style()  # another pattern …
    assert win.a.unseen_hatch.brush().color() != win.a.masked_bg.brush().color()  # … in another colour
    for row in range(n):  # cross-hatched exactly where the lane's attention did not see a key it could have
        p = window.derived.attention_values(1, win.layer, win.head, row)
        np.testing.assert_array_equal(win.a.unseen[row, : row + 1], np.isnan(p[: row + 1]), err_msg=f"row {row}")
        assert not win.a.unseen[row, row + 1 :].any()  # the future stays hatched as masked
    read = window.session.read_positions(1)
    assert list(np.flatnonzero(~win.k.unseen[:, 0])) == list(read)  # K: the evicted rows
    assert not window.lane_panels[0].a.unseen.any()  # the KV cache lane saw everything


def test_every_number_has_a_plain_language_tooltip(window):
    assert window.controller.run_steps(2)
    assert "ITL: inter-token latency — the time per generated token after the first" in STATS_TIP
    # what the table's marks mean, then the lanes' verdicts in full (their short form beside the check box)
    assert window.costs.stats.toolTip().startswith(STATS_TIP) and "TTFT: time to first token" in STATS_TIP
    assert window.costs.verdict.toolTip() == window.costs.stats.toolTip()
    for p in window.costs.plots:
        assert len(p.toolTip()) > 40
    for panel in window.lane_panels:
        tip = panel.readout.toolTip()
        for words in ("K/V rows computed", "FLOP", "ms", "keys read", "cache rows", "|Δlogit|", "KL"):
            assert words in tip
        assert all(len(t.toolTip()) > 40 for t in panel.titles)
    assert window.timeline.label.toolTip() and window.legend.toolTip()
