"""The Requests dock with schedule "continuous": the run goes through the batching engine (off and on), the
Timeline tab's cells equal what each step's batch says (derived a second way from each request's own
arrival and last token), the step summary names the batch, and a small pool shows preemptions."""

from __future__ import annotations

import pytest
from helpers import SyncHost

PROMPTS = ("Mr. Darcy walked in", "Elizabeth laughed", "The letter came", "A ball at Netherfield")


@pytest.fixture(scope="module")
def computed(tiny):
    from kvsim.ui.docks.requests.job import RequestsInput, RequestsSettings, compute

    settings = RequestsSettings(block_size=4, pool_blocks=9, steps=5, schedule="continuous", max_batched_tokens=12)
    return compute(tiny, RequestsInput(PROMPTS, "Pride and Prejudice, chapter one."), settings)


@pytest.fixture
def view(qtbot, qapp, tiny, computed):
    from kvsim.ui import theme
    from kvsim.ui.docks.requests.dock import RequestsView

    theme.apply(qapp)
    v = RequestsView(SyncHost(tiny))
    qtbot.addWidget(v)
    v._auto_tried = True
    v.resize(900, 800)
    v.show_result(computed)
    return v


def test_continuous_runs_batch_and_preempt(computed) -> None:
    for run in (computed.both.off, computed.both.on):
        assert run.schedule == "continuous" and len(run.batches) == len(run.snapshots)
        assert max(len(b.entries) for b in run.batches) >= 2
        assert all(b.tokens <= 12 for b in run.batches)
        assert [r.arrival_step for r in run.requests] == [0, 2, 4, 6]
    assert sum(r.preemptions for r in computed.both.off.requests) >= 1  # 9 blocks of 4 cannot hold them all
    assert [r.output_ids for r in computed.both.on.requests] == [r.output_ids for r in computed.both.off.requests]


def test_timeline_cells_equal_the_batches(view, computed) -> None:
    from kvsim.ui.docks.requests.timeline import KIND_STATES, PREEMPTED, WAITING

    for caching in (True, False):
        view.which_run.setCurrentIndex(0 if caching else 1)
        run = computed.run(caching)
        cells = view.timeline.cells()
        assert view.timeline.states.shape == (len(run.requests), len(run.batches))
        for s, batch in enumerate(run.batches):
            here = {c.request: c for c in cells if c.step == s}
            ran = {e.request: e for e in batch.entries}
            assert {r for r, c in here.items() if c.state in KIND_STATES.values()} == set(ran)
            for r, e in ran.items():
                assert here[r].state == KIND_STATES[e.kind] and here[r].tokens == e.tokens
            assert {r for r, c in here.items() if c.state == PREEMPTED} == set(batch.preempted)
            # arrived and not yet past the step of its last token
            live = {r.index for r in run.requests if r.arrival_step <= batch.step <= r.token_steps[-1]}
            waiting = {r for r, c in here.items() if c.state == WAITING}
            assert waiting == live - set(ran) - set(batch.preempted)
            assert set(batch.waiting) - set(batch.preempted) <= waiting


def test_the_step_summary_names_the_batch_and_the_timeline_follows(view, computed) -> None:
    run = computed.both.on
    step = next(i for i, b in enumerate(run.batches) if len(b.entries) >= 2)
    view.show_step(step)
    text = view.summary.text()
    assert f"one forward over {len(run.batches[step].entries)} request(s)" in text
    assert view.timeline.step == step
    view.which_run.setCurrentIndex(1)
    off = computed.both.off
    pre = next(i for i, b in enumerate(off.batches) if b.preempted)
    view.show_step(pre)
    assert "Preempted" in view.summary.text()
    assert "preempted" in view.timeline.describe(off.batches[pre].preempted[0], pre)
    assert not view.timeline.grab().isNull()


def test_the_settings_bar_carries_the_budget(view) -> None:
    bar = view.bar
    assert bar.budget.isEnabled() and bar.settings().max_batched_tokens == 12
    bar.schedule.setCurrentIndex(bar.schedule.findData("sequential"))
    assert not bar.budget.isEnabled()


def test_latency_and_reuse_lines(view, computed) -> None:
    run = computed.both.on
    text = view.latency.text()
    for r in run.requests:
        assert f"r{r.index + 1}: arrives at step {r.arrival_step}, TTFT {r.ttft_ms:.1f} ms" in text
        gaps = r.itl_gaps_ms
        assert f"worst {max(gaps):.1f} ms" in text
    reuse = computed.reuse
    text = view.reuse.text()  # its own line (on the stage it steps aside for the timeline's)
    # arrivals 2 steps apart: each request's prompt blocks are registered before the next one looks them
    # up, so the one-after-another replay reuses what the batched engine reused
    assert list(reuse.blocks) == [r.reused_rows for r in run.requests]
    assert sum(reuse.radix) >= sum(reuse.blocks) and f"would reuse {sum(reuse.radix)}" in text


def test_the_prefix_tree_tab(view, computed) -> None:
    """The tree's top level has one item per distinct first token; the system prompt's node lists every
    request; each leaf path is one request's computed tokens."""
    tree = view.prefix_tree
    held = [tuple(r.prompt_ids) + tuple(r.output_ids[:-1]) for r in computed.both.on.requests]
    assert tree.topLevelItemCount() == len({h[0] for h in held})
    top = tree.topLevelItem(0)
    assert top.text(2) == ", ".join(f"r{i + 1}" for i in range(len(held)))  # all share the system prompt
    assert int(top.text(1)) == max(n for n in range(1, len(held[0]) + 1) if len({h[:n] for h in held}) == 1)
    leaves = []

    def walk(item, count):
        count += int(item.text(1))
        if item.childCount() == 0:
            leaves.append(count)
        for k in range(item.childCount()):
            walk(item.child(k), count)

    for k in range(tree.topLevelItemCount()):
        walk(tree.topLevelItem(k), 0)
    assert sorted(leaves) == sorted(len(h) for h in held)  # no request's tokens are a prefix of another's here


def test_the_timeline_has_a_step_axis_a_legend_and_steps(view, computed, qtbot) -> None:
    """The batching view read without a tooltip: a step axis numbered as the latency lines number the steps
    (ticks thinned so their numbers never touch, and a title), a legend in words for every mark, its own
    ◀ ▶ (and a click on a column), and a pool caption that fits its width whatever the width."""
    from PySide6.QtCore import QPoint, Qt

    from kvsim.ui.docks.requests.timeline import LABEL_W, STATE_WORDS

    run = computed.both.on
    view.tabs.setCurrentIndex(view.PARTS.index("timeline"))
    view.show()
    view.show_step(0)
    timeline = view.timeline
    fm = timeline.fontMetrics()
    for width in (900, 300):  # the view's narrowest (its settings bar's width) and a wide one
        view.resize(width, 800)
        qtbot.wait(20)
        ticks = timeline.axis_ticks()
        assert ticks and ticks[0][0] == run.batches[0].step and "step" in timeline.axis_title()
        assert {n for n, _x in ticks} <= {b.step for b in run.batches}
        for (a, xa), (b, xb) in zip(ticks, ticks[1:], strict=False):  # numbers apart
            assert xb - xa >= (fm.horizontalAdvance(str(a)) + fm.horizontalAdvance(str(b))) / 2 + 2
        assert fm.horizontalAdvance(timeline.pool_caption()) <= timeline.width() - LABEL_W
        assert timeline.height() >= timeline.minimumSizeHint().height()
    legend = view.timeline_legend.text()
    for word in [*STATE_WORDS.values(), "shown step", "pool"]:
        assert word.split()[0] in legend, word
    assert view.timeline_legend.isVisibleTo(view) and view.timeline_next.isVisibleTo(view)
    view.timeline_next.click()
    assert view.step == 1 and timeline.step == 1 and f"step {run.batches[1].step}" in view.timeline_step.text()
    view.timeline_prev.click()
    assert view.step == 0
    assert view.stage_step(+1) and view.step == 1  # the app's → on the stage
    last = timeline.states.shape[1] - 1
    x = LABEL_W + (last + 0.5) * timeline._col_w()
    qtbot.mouseClick(timeline, Qt.MouseButton.LeftButton, pos=QPoint(round(x), 5))
    assert view.step == last and timeline.step == last
    view.tabs.setCurrentIndex(view.PARTS.index("blocks"))
    assert not view.stage_step(+1) and view.step == last  # the blocks leave the app's keys to the lanes


def test_the_timeline_grows_with_its_room(view, computed, qtbot) -> None:
    """On a large stage the rows, the pool and the figures in the cells grow with the view's height (to rows of
    MAX_ROW_H): no empty band under a strip of 16 px rows; a short view keeps the smallest rows, nothing cut."""
    from kvsim.ui.docks.requests.timeline import MAX_ROW_H, ROW_H

    view.tabs.setCurrentIndex(view.PARTS.index("timeline"))
    view.set_staged(True)
    view.show()
    timeline = view.timeline
    n = timeline.states.shape[0]
    view.resize(1400, 220)  # short: the smallest rows (the legend yields, nothing squeezed)
    qtbot.waitUntil(lambda: timeline.height() >= timeline.minimumSizeHint().height(), timeout=2000)
    assert timeline.sizes()[0] == ROW_H
    view.resize(1400, 900)  # tall (a 1920×1080 stage): the rows take the room
    qtbot.waitUntil(lambda: timeline.sizes()[0] == MAX_ROW_H, timeout=2000)
    row_h, pool_h = timeline.sizes()
    assert pool_h > 2 * 44 and timeline.height() <= timeline.maximumHeight()
    cells = timeline.cells()
    assert cells and all(c.rect.height() == row_h - 2 and c.rect.bottom() <= n * row_h for c in cells)
    assert timeline.cell_at(cells[-1].rect.center().x(), cells[-1].rect.center().y()) == (cells[-1].request, cells[-1].step)
    assert timeline.grown_font().pointSizeF() > timeline.font().pointSizeF()  # the figures grow with the rows
    assert timeline.pool_caption()
