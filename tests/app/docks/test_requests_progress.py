"""The Requests dock runs its requests a slice at a time, one worker job per slice: progress shows between
slices, a job queued meanwhile (a main-lane Step) runs before the rest of the run, Cancel stops it with
nothing kept, and the sliced result equals the run computed at once."""

from __future__ import annotations

import pytest
from helpers import ready_window
from PySide6.QtCore import QTimer

PROMPTS = ("What is 2+2?", "Name a colour.", "Say hi.")
SYSTEM = "You are a helpful assistant who answers in one short sentence."


class QueueHost:
    """A dock host whose worker is a queue the test drains one job at a time (first in, first out)."""

    session = None

    def __init__(self, loaded) -> None:
        self.loaded = loaded
        self.queue: list = []
        self.ran: list[str] = []

    def submit(self, fn, done, failed=None) -> bool:
        self.queue.append((fn, done, failed))
        return True

    def run_one(self, name: str = "slice") -> None:
        fn, done, failed = self.queue.pop(0)
        self.ran.append(name)
        try:
            result = fn(self.loaded)
        except Exception as exc:  # noqa: BLE001 - as the worker
            failed(str(exc))
        else:
            done(result)


@pytest.fixture
def view(qtbot, qapp, tiny, monkeypatch):
    from kvsim.ui.docks.requests import job
    from kvsim.ui.docks.requests.dock import RequestsView

    monkeypatch.setattr(job, "SLICE_MS", 0.0)  # one engine step a slice
    v = RequestsView(QueueHost(tiny))
    qtbot.addWidget(v)
    v._auto_tried = True  # no demo on show
    v.editor.set_given(v.editor.given().__class__(PROMPTS, SYSTEM))
    v.bar.steps.setValue(3)
    v.bar.block_size.setValue(8)
    return v


def test_slices_report_progress_let_other_jobs_in_and_equal_the_whole_run(view, tiny) -> None:
    from kvsim.ui.docks.requests.job import compute

    host = view.host
    assert view.run() and view.busy and len(host.queue) == 1
    values = []
    host.submit(lambda loaded: "step", lambda r: host.ran.append("step done"), None)  # a main Step queued meanwhile
    host.run_one()
    values.append(view.progress.value())
    host.run_one("step")  # it was queued before the next slice: it runs first
    assert host.ran == ["slice", "step", "step done"] and len(host.queue) == 1
    while host.queue:
        host.run_one()
        if view.busy:
            values.append(view.progress.value())
    slices = host.ran.count("slice")
    # off and on side by side (paired): 3 requests × (prefill + 2 decodes), one step of both a slice; one more finds both done
    assert slices == 3 * 3 + 1
    assert values == sorted(values) and 0 < values[0] < values[-1] == 1000
    assert not view.busy and view.computed is not None and view.cancel_button.isHidden()
    whole = compute(tiny, view.computed.given, view.computed.settings)
    for a, b in ((view.computed.both.on, whole.both.on), (view.computed.both.off, whole.both.off)):
        assert [r.output_ids for r in a.requests] == [r.output_ids for r in b.requests]
        assert [r.reused_rows for r in a.requests] == [r.reused_rows for r in b.requests]
        assert len(a.snapshots) == len(b.snapshots)


def test_cancel_between_slices_keeps_nothing(view) -> None:
    host = view.host
    view.run()
    host.run_one()
    host.run_one()
    assert view.busy and not view.cancel_button.isHidden() and view.cancel_button.isEnabled()
    view.cancel()
    assert not view.cancel_button.isEnabled()
    host.run_one()  # the slice under way finishes; no further slice is submitted
    assert not host.queue and not view.busy and view.computed is None
    assert "cancelled" in view.status.text() and view.bar.run_button.isEnabled()
    assert view.run() and not view._cancel_asked  # a new run starts clean


def test_a_main_step_does_not_wait_for_a_requests_run(qtbot, qapp) -> None:
    """Through the real worker: Step pressed while a long requests run is under way gives its record
    before the requests run ends."""
    w = ready_window(qtbot, qapp, "tiny", "It is a truth universally acknowledged", size=(1600, 1000))
    dock = w.extra_docks["requests"]
    view = dock.build()
    view._auto_tried = True
    view.bar.steps.setValue(24)
    dock.setVisible(True)
    before = len(w.session.records)
    assert view.run_demo()
    qtbot.waitUntil(lambda: view.progress.maximum() > 0, timeout=60_000)  # a first slice came back
    busy_when_stepped = []
    QTimer.singleShot(0, w.controller.step_forward)
    qtbot.waitUntil(lambda: len(w.session.records) > before, timeout=60_000)
    busy_when_stepped.append(view.busy)
    view.cancel()
    qtbot.waitUntil(lambda: not view.busy, timeout=60_000)
    assert busy_when_stepped == [True], "the main Step waited for the whole requests run"
