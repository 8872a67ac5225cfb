"""The Requests dock's offload and disaggregation views, drawn from runs of the bundled tiny model made here
(the decode instance of the split run in a thread, as tests/engine/serving/test_disagg_decode_instance.py does):
each view shows what the records say — the blocks per tier are the snapshot's tiers, the timeline's move marks
are the run's moves, the table's tier rows are the run's recalls and TTFT differences, the two pools and the
lines between them are the transfers' blocks — and the free queue's "next" block is the one handed out next
under vLLM's semantics. Text is not cut and does not overlap at 853×480 and 1920×1080."""

from __future__ import annotations

import multiprocessing
import threading

import pytest
from helpers import SyncHost
from PySide6.QtGui import QColor, QFontMetrics

A = "It is a truth universally acknowledged, that a single man in possession"
B = "The family of Dashwood had long been settled in Sussex. Their estate was large"
PROMPTS = (A + " said", B + " and", A + " was", B + " then")
SIZES = [(853, 480), (1920, 1080)]


@pytest.fixture(scope="module")
def tiers(tiny):
    """Four requests behind two alternating openings through a 9-block pool: each opening is evicted by the other
    and comes back from the host tier (2 blocks) or from disk."""
    from kvsim.ui.docks.requests.job import RequestsInput, RequestsSettings, compute

    settings = RequestsSettings(
        block_size=4, pool_blocks=9, steps=3, schedule="sequential", repeats=1, offload="host:16KiB,disk:1MB"
    )
    return compute(tiny, RequestsInput(PROMPTS), settings)


class _ThreadProcess:
    def __init__(self, target, args, daemon: bool) -> None:
        self._thread = threading.Thread(target=target, args=args, daemon=daemon)

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def terminate(self) -> None:
        self._thread.join(10)


class _InProcess:
    Pipe = staticmethod(multiprocessing.Pipe)
    Process = _ThreadProcess


@pytest.fixture(scope="module")
def split(tiny):
    from kvsim.serving import disagg
    from kvsim.ui.docks.requests.split import compute_split

    real = disagg.mp.get_context
    disagg.mp.get_context = lambda _method: _InProcess
    try:
        return compute_split(tiny, PROMPTS, None, block_size=4, steps=3)
    finally:
        disagg.mp.get_context = real


@pytest.fixture
def view(qtbot, qapp, tiny, tiers, split):
    from kvsim.ui import theme
    from kvsim.ui.docks.requests.dock import RequestsView

    theme.apply(qapp)
    v = RequestsView(SyncHost(tiny))
    qtbot.addWidget(v)
    v.resize(1000, 900)
    v.show()
    v.show_result(tiers)
    v.split.show_result(split)
    qtbot.waitExposed(v)
    return v


def test_the_run_loads_from_both_tiers(tiers) -> None:
    run = tiers.both.on
    assert run.meta["offload"]["recalled"][2:] == [[2, 0], [1, 1]]
    assert {(m["tier"], m["direction"]) for m in run.moves} == {
        ("host", "store"),
        ("host", "load"),
        ("disk", "store"),
        ("disk", "load"),
    }


def test_the_blocks_per_tier_are_the_snapshots_and_coloured_by_tier(view, tiers) -> None:
    from kvsim.ui.docks.requests.blocks import TIER_BAND, tier_color, tier_heading

    run = tiers.both.on
    seen = set()
    for i, snap in enumerate(run.snapshots):
        view.show_step(i)
        cells = view.grid.cells()
        counts = {t: sum(1 for c in cells if c.tier == t) for t in ("device", "host", "disk")}
        assert counts == {"device": snap.n_blocks, "host": len(snap.tier("host").hashes), "disk": len(snap.tier("disk").hashes)}
        for t in ("host", "disk"):
            assert tuple(c.block_hash for c in cells if c.tier == t) == snap.tier(t).hashes  # the next out first
            assert all(c.color == tier_color(t) for c in cells if c.tier == t)
        assert [text for _, text in view.grid.headings()] == [tier_heading(t) for t in snap.tiers]
        moves = run.moves_at(i)
        stored = {(m["block_hash"], m["tier"]) for m in moves if m["direction"] == "store"}
        loaded = {m["block_hash"]: m["tier"] for m in moves if m["direction"] == "load"}
        for c in cells:
            if c.tier != "device":  # what this step did to the block in this tier
                read = loaded.get(c.block_hash) == c.tier
                assert c.event == ("loaded" if read else "stored" if (c.block_hash, c.tier) in stored else "")
            elif snap.hashes[c.block] in loaded and snap.events[c.block] == "hit":
                assert c.event == f"from {loaded[snap.hashes[c.block]]}"
                seen.add(c.event)
        rects = [c.rect for c in cells] + [r for r, _ in view.grid.headings()]
        assert all(not a.intersects(b) for k, a in enumerate(rects) for b in rects[k + 1 :])
    assert seen == {"from host", "from disk"}
    # the painted band of each tier's first cell is the tier's colour
    view.show_step(len(run.snapshots) - 1)
    image = view.grid.grab().toImage()
    ratio = image.devicePixelRatio()
    for t in ("device", "host", "disk"):
        c = next(c for c in view.grid.cells() if c.tier == t)
        x, y = c.rect.center().x(), c.rect.top() + 1 + TIER_BAND / 2
        assert QColor(image.pixel(int(x * ratio), int(y * ratio))).name() == QColor(tier_color(t)).name()
    assert "host" in view.legend.text() and "disk" in view.legend.text() and "device" in view.legend.text()


def test_the_next_block_is_the_one_the_pool_hands_out_next(view, tiers) -> None:
    """Under vLLM's order the cell marked "next" (q1) is the block the following step takes first: every block a
    step takes from the free queue (new, evicted, or filled by a tier's load) is, in order, the head of the
    queue the step before drew, less the cached blocks that step's hits took back."""
    run = tiers.both.on
    assert run.pool_semantics == "vllm"
    checked = 0
    for i in range(1, len(run.snapshots)):
        before, after = run.snapshots[i - 1], run.snapshots[i]
        view.show_step(i - 1)
        marked = [c.block for c in view.grid.cells() if c.tier == "device" and c.queue_place == 0]
        assert marked == ([before.next_block] if before.free_queue else [])
        loaded = {m["block_hash"] for m in run.moves_at(i) if m["direction"] == "load"}
        taken = {
            b
            for b, e in enumerate(after.events)
            if e in ("allocated", "evicted", "written") and b in before.free_queue or (e == "hit" and after.hashes[b] in loaded)
        }
        hits = {b for b, e in enumerate(after.events) if e == "hit" and after.hashes[b] not in loaded and b in before.free_queue}
        if taken:
            queue = [b for b in before.free_queue if b not in hits]
            assert taken == set(queue[: len(taken)]), i
            assert queue[0] in taken
            checked += 1
    assert checked >= 3  # the three prefills after the first


def test_the_timeline_marks_every_move_recorded(view, tiers) -> None:
    from kvsim.ui.docks.requests.timeline import move_lines

    run = tiers.both.on
    view.tabs.setCurrentIndex(3)
    marks = view.timeline.marks
    assert sum(m.blocks for m in marks) == len(run.moves)
    assert sum(m.nbytes for m in marks) == sum(m["nbytes"] for m in run.moves)
    assert sum(m.ms for m in marks) == pytest.approx(sum(m["ms"] for m in run.moves))
    for m in marks:
        here = [x for x in run.moves_at(m.step) if (x["owner"], x["tier"], x["direction"]) == (m.request, m.tier, m.direction)]
        assert len(here) == m.blocks and m.request == run.snapshots[m.step].request
    drawn = view.timeline.mark_rects()
    assert len(drawn) == len(marks)
    assert all(not a.intersects(b) for k, (_, a) in enumerate(drawn) for _, b in drawn[k + 1 :])
    assert all(view.timeline.rect().contains(r.toRect()) for _, r in drawn)
    text = view.latency.text()
    assert all(line in text for line in move_lines(run))
    m = marks[0]
    assert "KB" in view.timeline.describe(max(0, m.request), m.step)


def test_the_off_vs_on_table_shows_the_hits_from_each_tier_and_the_ttft_saved(view, tiers) -> None:
    table = view.numbers.table
    from kvsim.ui.docks.requests.numbers import ROW_KEYS

    off, on = tiers.both.off.requests, tiers.both.on.requests
    recalled = tiers.both.on.meta["offload"]["recalled"]
    for i in range(len(on)):
        assert table.value("from_host", i) == recalled[i][0] and table.value("from_disk", i) == recalled[i][1]
        assert table.value("saved", i) == pytest.approx(off[i].ttft_ms - on[i].ttft_ms)
    assert table.value("from_host", len(on)) == 3 and table.value("from_disk", len(on)) == 1
    assert not any(table.isRowHidden(ROW_KEYS.index(k)) for k in ("from_host", "from_disk", "saved"))


def test_the_two_pools_and_the_transfers_are_the_records(view, split) -> None:
    sv = view.split
    view.tabs.setCurrentIndex(5)
    order = sorted(range(len(split.split.transfers)), key=lambda k: split.split.transfers[k].arrived_ms)
    for k in range(len(order)):
        sv.slider.setValue(k)
        t = split.split.transfers[order[k]]
        assert sv.shown_transfer() is t
        cells = sv.pools.cells()
        prefill = [c for c in cells if c.pool == "prefill"]
        decode = [c for c in cells if c.pool == "decode"]
        assert len(prefill) == t.prefill_pool_blocks and len(decode) == t.decode_pool_blocks
        assert {c.block for c in prefill if c.request is not None} == set(t.prefill_blocks)
        assert {c.block: c.request for c in decode if c.request is not None} == {b: r for r, bs in t.decode_held for b in bs}
        assert len(sv.pools.lines()) == t.blocks
        assert max(c.rect.right() for c in prefill) < min(c.rect.left() for c in decode)  # side by side
        assert f"request {t.request + 1}:" in sv.transfer_text.text()
    assert len(sv.clock.bars()) == len(split.split.transfers)
    ticks = sv.clock.ticks()
    assert len(ticks) == sum(len(r.token_ms) for run in (split.colocated, split.split) for r in run.requests)
    table = sv.table
    for i, (a, b) in enumerate(zip(split.colocated.requests, split.split.requests, strict=True)):
        assert table.value("ttft_co", i) == a.ttft_ms and table.value("ttft_split", i) == b.ttft_ms
        assert table.value("moved", i) == (split.split.transfers[i].blocks, split.split.transfers[i].nbytes)
        assert table.value("same", i) is True


def _painted_texts_fit(view) -> list[str]:
    """The texts the custom views paint: each within its room and no two overlapping."""
    problems = []
    fm = QFontMetrics(view.grid.font())
    for rect, text in view.grid.headings():
        if fm.horizontalAdvance(text) > rect.width():
            problems.append(f"heading cut: {text!r}")
    clock = view.split.clock
    for text in clock.labels():
        if clock.fontMetrics().horizontalAdvance(text) > clock.label_width() - 4:
            problems.append(f"clock label cut: {text!r}")
    from kvsim.ui.docks.requests.blocks import event_label

    small = QFontMetrics(view.grid.small_font())
    for c in view.grid.cells():  # a cell's word beside its logical index, in the footer (the cell less 10 px)
        logical = small.horizontalAdvance(f"L{c.logical}") + 3 if c.logical is not None else 0
        if c.event and small.horizontalAdvance(event_label(c.event)) > c.rect.width() - 10 - logical:
            problems.append(f"cell word cut: {c.event!r} in {c.rect.width()} px")
    return problems


@pytest.mark.parametrize("size", SIZES, ids=["853x480", "1920x1080"])
def test_no_text_is_cut_or_overlapping(qtbot, view, tiers, size) -> None:
    from PySide6.QtWidgets import QMainWindow
    from stage_probe import audit

    window = QMainWindow()
    qtbot.addWidget(window)
    window.setCentralWidget(view)
    window.resize(*size)
    window.show()
    qtbot.waitExposed(window)
    run = tiers.both.on
    view.show_step(next(i for i in range(len(run.snapshots)) if len({m["tier"] for m in run.moves_at(i)}) == 2))
    try:
        for tab in (0, 1, 3, 5):
            view.tabs.setCurrentIndex(tab)
            qtbot.wait(30)
            # the dock's tabs scroll on a short screen by design: text below the fold of a scroll area is reached
            # by scrolling, not cut; everything else the audit sees (overlaps, text wider than its label, elision) counts
            problems = [
                p
                for p in audit(window)
                if not p.startswith("scrolls") and not p.startswith("text cut by") or "scrollarea" not in p
            ]
            assert not problems, f"tab {tab} at {size}: {problems}"
            assert not _painted_texts_fit(view)
    finally:
        window.takeCentralWidget()  # the view is the fixture's: it outlives the window
