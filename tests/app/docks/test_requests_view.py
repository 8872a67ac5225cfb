"""The Requests dock (ui/views/requests*.py, blocks*.py) drawn from a real run of the bundled tiny model:
one grid cell per physical block with the snapshot's owners, colours and reference counts (checked on
the painted pixels too), the selected request's mapping equal to the snapshot's block table, the
side-by-side numbers equal to the RequestResult fields (and to closed forms), errors as one line in the
dock, and Run through a real window without blocking the GUI thread."""

from __future__ import annotations

import math

import pytest
from helpers import SyncHost, ready_window
from PySide6.QtCore import QElapsedTimer, Qt, QTimer
from PySide6.QtGui import QColor

SYSTEM = "It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want of a wife."
PROMPTS = ("Mrs. Bennet said", "Mr. Darcy was", "The ball at Meryton")
BLOCK = 4


@pytest.fixture(scope="module")
def computed(tiny):
    """Three requests behind a shared opening, interleaved (so shared blocks have several holders),
    computed directly with the engine's compare_prefix_caching."""
    from kvsim.serving.request_lists import RequestList, encode_requests
    from kvsim.serving.requests import compare_prefix_caching
    from kvsim.ui.docks.requests.job import Computed, RequestsInput, RequestsSettings, last_owners

    settings = RequestsSettings(block_size=BLOCK, steps=3, schedule="interleaved", repeats=1)
    inputs = encode_requests(tiny.tokenizer, RequestList(PROMPTS, SYSTEM))
    both = compare_prefix_caching(
        tiny.model, tiny.tokenizer, inputs, block_size=BLOCK, steps=3, schedule="interleaved", repeats=1, model_id="tiny"
    )
    ids = {t for r in both.on.requests for t in (*r.prompt_ids, *r.output_ids)}
    return Computed(
        both=both,
        settings=settings,
        given=RequestsInput(PROMPTS, SYSTEM),
        model_id="tiny",
        token_text={t: tiny.tokenizer.token_text(t) for t in ids},
        last_owner={False: last_owners(both.off.snapshots), True: last_owners(both.on.snapshots)},
        paged_waste_by_size=((BLOCK, both.on.waste.paged_waste),),
    )


@pytest.fixture
def view(qtbot, qapp, tiny, computed):
    from kvsim.ui import theme
    from kvsim.ui.docks.requests.dock import RequestsView

    theme.apply(qapp)
    v = RequestsView(SyncHost(tiny))
    qtbot.addWidget(v)
    v.resize(700, 1000)
    v.show()
    v.show_result(computed)
    qtbot.waitExposed(v)
    return v


def test_the_engine_run_shares_the_opening(computed):
    """The fixture is what the view tests need: hits on every later request, several holders at once."""
    on, off = computed.both.on, computed.both.off
    assert all(r.hit_blocks == 0 for r in off.requests)
    assert on.requests[0].hit_blocks == 0 and all(r.hit_blocks > 0 for r in on.requests[1:])
    assert max(int(s.ref_counts.max()) for s in on.snapshots) >= 2


def test_one_cell_per_physical_block_with_the_snapshots_owners_and_refs(view, computed):
    from kvsim.ui.docks.requests.blocks import EVENT_WORDS, request_color, slot_grid

    run = computed.both.on
    seen_shared = False
    for i, snap in enumerate(run.snapshots):
        view.show_step(i)
        cells = view.grid.cells()
        assert [c.block for c in cells] == list(range(snap.n_blocks)) == list(range(run.pool_blocks))
        for c in cells:
            b = c.block
            assert c.owners == snap.owners[b]
            assert c.refs == int(snap.ref_counts[b]) == len(snap.owners[b])  # a live block's count = its holders
            assert c.filled == int(snap.filled[b])
            assert c.event == EVENT_WORDS.get(snap.events[b], snap.events[b])
            assert c.stripes == tuple(request_color(o) for o in snap.owners[b])
            if c.owners:
                assert c.color == request_color(c.owners[0])
            seen_shared |= c.refs >= 2
        rects = [c.rect for c in cells]  # no two cells overlap, all inside the grid
        assert all(not a.intersects(b) for k, a in enumerate(rects) for b in rects[k + 1 :])
        assert all(view.grid.rect().contains(r.toRect()) for r in rects)
    assert seen_shared
    # the painted pixels: the first slot of every held block is its owner's colour
    view.show_step(view.prefill_step(1))
    image = view.grid.grab().toImage()
    line = view.grid.fontMetrics().height()
    cols, _ = slot_grid(BLOCK)
    for c in view.grid.cells():
        if c.owners and c.filled:
            slot = min(12, (c.rect.width() - 10) / cols)
            x, y = c.rect.left() + 7 + slot / 2, c.rect.top() + line + 3 + slot / 2
            px = QColor(image.pixel(int(x * image.devicePixelRatio()), int(y * image.devicePixelRatio())))
            assert px.name() == QColor(c.color).name().lower(), c.block


def test_request_twos_prefill_hits_the_shared_blocks(view, computed):
    run = computed.both.on
    step = view.prefill_step(1)
    view.show_step(step)
    snap = run.snapshots[step]
    assert (snap.request, snap.phase) == (1, "prefill")
    r2 = run.requests[1]
    hits = [c for c in view.grid.cells() if c.event == "hit"]
    assert len(hits) == r2.hit_blocks > 0
    assert all(c.refs == 2 and set(c.owners) == {0, 1} and c.logical is not None for c in hits)
    text = view.summary.text()
    assert "Request 2" in text and f"{r2.hit_blocks} block(s) found by hash" in text and f"{r2.reused_rows} rows reused" in text
    # the same step without prefix caching: nothing is found
    view.which_run.setCurrentIndex(1)
    assert not [c for c in view.grid.cells() if c.event == "hit"]
    assert "caching off" in view.summary.text()


def test_the_selected_requests_mapping_equals_the_snapshot_table(view, computed):
    run = computed.both.on
    for i, snap in enumerate(run.snapshots):
        view.show_step(i)
        for state in snap.tables:
            view.request_box.setCurrentIndex(view.request_box.findData(state.request))
            expected = () if state.finished else tuple(enumerate(state.blocks))
            assert view.table.mapping == expected
            assert [view.table.item(1, j).text() for j in range(view.table.columnCount())] == [f"#{b}" for _, b in expected]
            logical = {c.block: c.logical for c in view.grid.cells() if c.logical is not None}
            assert logical == {b: j for j, b in expected}
            for j, _ in expected:  # rows held in each logical block; the leading hits marked
                held = min(BLOCK, state.n_tokens - j * BLOCK)
                assert view.table.item(2, j).text().startswith(f"{held}/{BLOCK}")
                assert view.table.item(2, j).text().endswith("hit") == (j < state.hit_blocks)


def test_the_blocks_row_says_physical_blocks_held_apart_from_logical_blocks_mapped(view, computed):
    """As vLLM's allocator counts them: the requests' tables map 3 × 11 logical blocks, the 8 blocks of the shared
    opening are one physical block each, so the pool holds 17 physical blocks for them — the "all" column no
    longer adds the shared blocks once per request (the issue's "blocks held · all 36" of a pool holding 12)."""
    run = computed.both.on
    t = view.numbers.table
    n = len(run.requests)
    mapped = [r.blocks_held for r in run.requests]
    distinct = set()  # every (physical block, the rows it holds) behind the tables, from the snapshots themselves
    for r in run.requests:
        snap = run.snapshots[r.last_step]
        distinct |= {(b, snap.token_ids[b]) for b in snap.table(r.index).blocks}
    physical_all, mapped_all = t.value("blocks", n)  # one row: physical blocks held / logical blocks mapped
    assert mapped_all == sum(mapped)
    assert physical_all == len(distinct) == run.waste.paged_shared_slots // BLOCK  # nothing evicted here
    assert len(distinct) < sum(mapped)  # the shared opening: fewer physical blocks than mapped ones
    per_request = [t.value("blocks", i) for i in range(n)]
    assert [p for p, _ in per_request] == list(run.physical_blocks()) and [m for _, m in per_request] == mapped
    assert per_request[0][0] == mapped[0] and all(per_request[i][0] < mapped[i] for i in range(1, n))
    assert t.text("blocks", n) == f"{len(distinct)} / {sum(mapped)}"  # both figures on screen, physical first
    labels = [t.verticalHeaderItem(i).text().strip() for i in range(t.rowCount())]
    assert "blocks: physical / mapped" in labels and "blocks held" not in labels


def test_side_by_side_numbers_equal_the_request_results(view, computed):
    off, on = computed.both.off.requests, computed.both.on.requests
    t = view.numbers.table
    assert t.columnCount() == len(on) + 1
    for i, (a, b) in enumerate(zip(off, on, strict=True)):
        assert t.value("prompt", i) == len(b.prompt_ids)
        assert t.value("computed_off", i) == a.prefill_rows == len(a.prompt_ids)
        assert t.value("computed_on", i) == b.prefill_rows
        assert t.value("reused", i) == b.reused_rows == b.hit_blocks * BLOCK
        assert b.prefill_rows + b.reused_rows == len(b.prompt_ids)
        assert t.value("hits", i) == (b.hit_blocks, b.miss_blocks)
        assert b.hit_blocks + b.miss_blocks == math.ceil(len(b.prompt_ids) / BLOCK)
        assert t.value("ttft_off", i) == a.ttft_ms and t.value("ttft_on", i) == b.ttft_ms
        assert t.value("spread_off", i) == (a.ttft_ms_min, a.ttft_ms_max)
        assert t.value("spread_on", i) == (b.ttft_ms_min, b.ttft_ms_max)
        assert t.value("ratio", i) == pytest.approx(b.ttft_ms / a.ttft_ms)
        assert t.text("ratio", i) == f"{b.ttft_ms / a.ttft_ms:.2f}×"
        paired = computed.both.ttft[i]  # the engine's paired comparison, shown as it is (never recomputed)
        assert t.value("verdict", i) is paired and t.text("verdict", i) == paired.verdict
        assert paired.pairs >= 8 and paired.low <= paired.ratio <= paired.high
        assert t.value("blocks", i)[1] == b.blocks_held == math.ceil(b.rows_held / BLOCK)  # (physical, mapped)
    n = len(on)
    assert t.value("reused", n) == sum(r.reused_rows for r in on)
    assert t.value("computed_on", n) == sum(r.prefill_rows for r in on)
    # the waste bars: the three schemes, against closed forms
    w = computed.both.on.waste
    rows = [r.rows_held for r in on]
    bars = view.numbers.bars.rows
    assert [s for _, s, _ in bars] == [
        n * w.max_len,  # contiguous, preallocated to the context
        sum(rows),  # contiguous, exact
        sum(math.ceil(r / BLOCK) for r in rows) * BLOCK,  # paged: whole blocks
        w.paged_shared_slots,  # paged, the shared prefix blocks counted once (caching on)
    ]
    assert [waste for _, _, waste in bars[:3]] == [1 - sum(rows) / (n * w.max_len), 0.0, w.paged_waste]
    assert f"{100 * w.paged_waste:.1f}%" in view.numbers.trade_off.text()


def test_keys_walk_the_steps_and_jump_between_prefills(view, qtbot, computed):
    run = computed.both.on
    view.setFocus()
    view.show_step(0)
    qtbot.keyClick(view, Qt.Key_Right)
    assert view.step == 1
    qtbot.keyClick(view, Qt.Key_Left)
    assert view.step == 0
    starts = sorted(r.first_step for r in run.requests)
    qtbot.keyClick(view, Qt.Key_Right, Qt.ShiftModifier)
    assert view.step == starts[1]
    qtbot.keyClick(view, Qt.Key_End)
    assert view.step == len(run.snapshots) - 1 == view.slider.maximum()
    view.show_step(10_000)  # clamped
    assert view.step == len(run.snapshots) - 1
    assert view.step_label.text() == f"step {len(run.snapshots)} / {len(run.snapshots)}"


def test_hovering_a_block_names_its_tokens_hash_refs_and_holders(view, computed, tiny):
    view.show_step(view.prefill_step(1))
    snap = computed.both.on.snapshots[view.step]
    shared = next(c.block for c in view.grid.cells() if c.refs == 2)
    view._hover(shared)
    text = view.readout.text()
    assert snap.hashes[shared] in text and "held by request(s) 1, 2" in text and "2 reference(s)" in text
    words = tiny.tokenizer.decode(list(snap.token_ids[shared])).replace("\n", "↵")
    assert f"“{words}”" in text


def test_errors_are_one_line_in_the_dock(view, qtbot):
    from kvsim.ui import theme

    view.editor.set_given(view.editor.given().__class__(()))
    assert not view.run()
    assert "empty" in view.status.text() and theme.ERROR in view.status.styleSheet()
    view.editor.set_given(view.editor.given().__class__(PROMPTS, SYSTEM))
    view.bar.pool.setValue(1)
    view.bar.steps.setValue(2)
    before = view.computed
    view.run()
    assert "the pool has 1" in view.status.text() and "\n" not in view.status.text()
    assert view.computed is before and not view.busy and view.bar.run_button.isEnabled()


def test_run_through_a_real_window_keeps_the_gui_turning_and_hits(qtbot, qapp):
    w = ready_window(qtbot, qapp, "tiny", "It is a truth universally acknowledged", size=(1920, 1080))
    dock = w.extra_docks["requests"]
    view = dock.build()
    view.bar.steps.setValue(2)
    ticks: list[int] = []
    clock = QElapsedTimer()
    clock.start()
    beat = QTimer()
    beat.timeout.connect(lambda: ticks.append(clock.elapsed()) if view.busy else None)
    beat.start(10)
    dock.setVisible(True)  # first shown with a model loaded and nothing run: the default demo runs
    qtbot.waitUntil(lambda: view.busy, timeout=5_000)
    assert not view.bar.run_button.isEnabled() and view.progress.isVisible()
    qtbot.waitUntil(lambda: not view.busy, timeout=240_000)
    beat.stop()
    assert view.computed is not None, view.status.text()
    assert len(ticks) >= 5  # the event loop kept turning while the worker ran (gaps: benchmarks/serving/requests.py)
    on = view.computed.both.on
    assert on.requests[1].hit_blocks > 0 and view.numbers.table.value("hits", 1)[0] == on.requests[1].hit_blocks
    view.show_step(view.prefill_step(1))
    assert "found by hash" in view.summary.text()


def test_a_small_pool_evicts_and_the_grid_says_so(qtbot, qapp, tiny):
    """A pool just large enough for the longest request: later requests take cached blocks back (LRU)."""
    from kvsim.serving.core import blocks_needed
    from kvsim.serving.request_lists import RequestList, encode_requests
    from kvsim.ui.docks.requests.dock import RequestsView
    from kvsim.ui.docks.requests.job import RequestsInput, RequestsSettings, compute

    inputs = encode_requests(tiny.tokenizer, RequestList(PROMPTS, SYSTEM))
    pool = max(blocks_needed(len(r.prompt_ids), 2, BLOCK) for r in inputs)
    settings = RequestsSettings(block_size=BLOCK, pool_blocks=pool, steps=2, schedule="sequential", repeats=1)
    result = compute(tiny, RequestsInput(PROMPTS, SYSTEM), settings)
    run = result.both.on
    assert run.evictions > 0 and run.usable_blocks == pool  # pool_blocks also counts vLLM's null block
    view = RequestsView(SyncHost(tiny))
    qtbot.addWidget(view)
    view.show_result(result)
    shown = view.bar.settings()  # the controls say what is shown (repeats is not a control)
    assert (shown.block_size, shown.pool_blocks, shown.steps, shown.schedule) == (BLOCK, pool, 2, "sequential")
    step = next(i for i, s in enumerate(run.snapshots) if "evicted" in s.events)
    view.show_step(step)
    evicted = [c.block for c in view.grid.cells() if c.event == "evict"]
    assert evicted == [b for b, e in enumerate(run.snapshots[step].events) if e == "evicted"]
    assert "evictions so far" in view.summary.text()


def test_the_view_follows_the_theme(view, qapp, computed):
    from kvsim.ui import theme
    from kvsim.ui.docks.requests.blocks import REQUEST_COLORS

    view.show_step(view.prefill_step(1))
    try:
        for name in ("light", "dark"):
            theme.set_theme(qapp, name)
            held = [c for c in view.grid.cells() if c.owners]
            assert held and all(c.color == REQUEST_COLORS[name][c.owners[0] % len(REQUEST_COLORS[name])] for c in held)
            head = view.numbers.table.horizontalHeaderItem(1).background().color().name()
            assert head == QColor(REQUEST_COLORS[name][1]).name()
            assert theme.ACCENT in view.legend.text()
    finally:
        theme.set_theme(qapp, "dark")


def test_result_is_the_shown_side_by_side(view, computed):
    """What scripts/dock_shots.py reads: the off/on runs, request 2's first snapshot its prefill."""
    assert view.result is computed.both
    second = next(i for i, s in enumerate(view.result.on.snapshots) if s.request == 1)
    assert second == view.prefill_step(1) and view.result.on.snapshots[second].phase == "prefill"


def test_the_grid_shows_the_free_queue_in_its_order_and_the_next_block(view, computed):
    """Each free block's cell carries its place in the recorded free queue (q1: handed out next, its footer
    "next"), the null block 0 of vLLM's order is marked and never queued, and the step's summary's tooltip names
    the queue in order with the next block."""
    run = computed.both.on
    assert run.pool_semantics == "vllm" and run.null_block == 0
    seen_next = 0
    for i, snap in enumerate(run.snapshots):
        view.show_step(i)
        cells = view.grid.cells()
        queued = sorted((c.queue_place, c.block) for c in cells if c.queue_place is not None)
        assert tuple(b for _, b in queued) == snap.free_queue
        assert [c.block for c in cells if c.null] == [0] and cells[0].queue_place is None
        if snap.free_queue:
            assert f"#{snap.next_block}" in view.summary.toolTip() and "next block" in view.summary.toolTip()
            seen_next += 1
    assert seen_next > 0


def test_the_off_on_table_writes_within_noise_as_a_mark_where_the_words_do_not_fit(view, computed):
    """Where the verdicts' words would push the "all" column past the view (Portuguese's "dentro do ruído" in four
    columns at 853 px), "within noise" reads ≈, said in words after the caption; with room, the words again."""
    from kvsim.ui.docks.requests.numbers import NOISE_MARK

    panel, t = view.numbers, view.numbers.table
    noisy = [i for i, c in enumerate(computed.both.ttft) if c.verdict == "within noise"]
    t.fit(t.wide + 50)
    assert not t.compact and all(t.text("verdict", i) == "within noise" for i in noisy)
    t.fit(t.wide - 1)
    assert t.compact and all(t.text("verdict", i) == NOISE_MARK for i in noisy)
    assert t.needed_width() <= t.wide and all(t.value("verdict", i) is computed.both.ttft[i] for i in noisy)
    panel._fit_table()  # the panel's own room decides again (and says what ≈ means when it is used)
    assert ("≈: within noise." in panel.caption.text()) == t.compact
    t.fit(t.wide + 50)
    assert not t.compact
