"""The controller without a window: play / step / browse state against a stand-in worker that runs a
real simulator synchronously (so every record is a real one)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QObject, Signal

from kvsim.caches import parse_lanes
from kvsim.engine.simulate import Simulator
from kvsim.models.loading import load_model
from kvsim.ui.session import RunInfo, Session
from kvsim.ui.shell.animation import Animator
from kvsim.ui.shell.controller import Controller

MODEL = "random:family=llama,layers=2,heads=4,kv_heads=2,dim=32,seed=1"


class FakeWorker(QObject):
    models_listed = Signal(object)
    model_loaded = Signal(object)
    run_started = Signal(object)
    record_ready = Signal(object)
    progress = Signal(str, int, int)
    failed = Signal(str, str)
    busy_changed = Signal(bool)
    cancelled = Signal(int)

    def __init__(self) -> None:
        super().__init__()
        self.loaded = load_model(MODEL)
        self.sim: Simulator | None = None
        self.begins: list[tuple[str, str]] = []
        self.steps: list[str] = []
        self.cancels = 0

    def request_load(self, spec: str, fallback: bool = False) -> None:
        cfg = self.loaded.model.cfg
        self.model_loaded.emit({"model_id": spec, "config": cfg.to_dict(), "info": {}, "params": 1, "note": ""})

    def request_begin(self, prompt: str, lanes: str, free_running: bool = False) -> None:
        self.begins.append((prompt, lanes))
        tok = self.loaded.tokenizer
        self.sim = Simulator(self.loaded.model, tok, tok.encode(prompt), parse_lanes(lanes), free_running=free_running)
        self.run_started.emit(RunInfo.from_trace(self.sim.trace.meta, self.sim.run_id, token_text=tok.token_text))

    def request_step(self, run_id: str) -> None:
        self.steps.append(run_id)
        if self.sim is not None and self.sim.run_id == run_id:
            self.record_ready.emit(self.sim.step())

    def cancel(self) -> None:
        self.cancels += 1


@pytest.fixture
def parts(qtbot):
    session = Session()
    animator = Animator()
    animator.set_speed("instant")
    controller = Controller(session, animator, prompt_text=lambda: "Once upon a time")
    worker = FakeWorker()
    controller.attach_worker(worker)
    messages: list[tuple[str, bool]] = []
    controller.message.connect(lambda text, error: messages.append((text, error)))
    controller.load_model(MODEL)
    qtbot.waitUntil(lambda: controller.can_step, timeout=5_000)
    return controller, session, worker, messages


def test_loading_starts_one_run_and_steps_compute_then_replay(parts):
    controller, session, worker, _ = parts
    assert len(worker.begins) == 1 and worker.begins[0] == ("Once upon a time", "uncached,cached")
    assert session.run is not None and [lane.name for lane in session.lanes] == ["uncached", "cached"]
    assert controller.run_steps(3)
    assert session.n_steps == 3 and session.cursor == 2 and len(worker.steps) == 3
    controller.step_back()
    controller.step_back()
    assert session.cursor == 0 and session.n_steps == 3
    controller.step_forward()  # replays the record: nothing is asked of the worker
    assert session.cursor == 1 and len(worker.steps) == 3
    controller.scrub_to(99)
    assert session.cursor == 2


def test_repeated_resets_coalesce_into_one_run(parts, qtbot):
    controller, session, worker, _ = parts
    for _ in range(10):
        controller.reset()
    assert not controller.can_step  # until the one restart lands
    qtbot.waitUntil(lambda: controller.can_step, timeout=5_000)
    assert len(worker.begins) == 2  # the first run, then one for the ten presses
    assert session.n_steps == 0


def test_play_runs_until_paused_and_a_step_in_flight_is_not_doubled(parts, qtbot):
    controller, session, worker, _ = parts
    playing = []
    controller.playing_changed.connect(playing.append)
    controller.toggle_play()
    qtbot.waitUntil(lambda: session.n_steps >= 5, timeout=10_000)
    controller.toggle_play()
    assert playing[0] is True and playing[-1] is False and not controller.playing
    done = session.n_steps
    qtbot.wait(100)
    assert session.n_steps == done  # paused: no more steps
    controller.busy = True  # as if a step were in flight: Step must not ask for another
    controller.step_forward()
    assert len(worker.steps) == done


def test_a_stale_record_or_run_is_ignored(parts, qtbot):
    controller, session, worker, _ = parts
    assert controller.run_steps(1)
    old = worker.sim
    controller.reset()
    qtbot.waitUntil(lambda: controller.can_step and session.run.run_id != old.run_id, timeout=5_000)
    worker.record_ready.emit(old.step())  # a record of the previous run arrives late
    assert session.n_steps == 0 and session.cursor == -1


def test_open_run_refuses_a_damaged_file_and_keeps_the_live_run(parts, tmp_path):
    controller, session, worker, messages = parts
    assert controller.run_steps(2)
    bad = tmp_path / "bad.kvsim"
    bad.write_bytes(b"PK\x03\x04 not really a zip")
    assert controller.open_run(str(bad)) is False
    assert messages[-1][1] is True and "could not open" in messages[-1][0]
    assert session.n_steps == 2 and controller.can_step and not controller.browsing
    good = tmp_path / "good.kvsim"
    assert controller.save_run(str(good))
    assert controller.open_run(str(good)) is True
    assert controller.browsing and not controller.can_step and session.n_steps == 2 and session.cursor == 1
    controller.step_forward()  # at the end of an opened run: a message, no worker request
    assert messages[-1][1] is True and "browsing" in messages[-1][0] and len(worker.steps) == 2
