"""The controller: play / step / browse state, between the toolbar's intents and the worker.

A QObject with no widgets (tested without a window). It turns intents (step, back, reset, play,
scrub, open, save, load, lanes) into cursor moves on the Session or requests to the worker, and
reports what the window should show through signals (messages, playing, progress, a new run's
model). It owns the one rule of the data flow: the session starts a run before any view is asked
to draw it, and a record reaches the session only if it belongs to the run being shown.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication, QEventLoop, QObject, QTimer, Signal

from kvsim.models.config import ModelConfig

from .. import i18n
from ..i18n import translate
from ..session import RunInfo, Session
from .animation import Animator
from .toolbar import DEFAULT_LANES

if TYPE_CHECKING:  # imported by the window after the first paint (it imports torch)
    from .worker import WorkerThread

RESTART_QUIET_MS = 250  # a Reset this soon after the last restart (or the run it showed) waits for more presses
RESTART_COALESCE_MS = 80  # how long it waits: a held Home key (auto-repeat ~30 a second) is one restart


class Controller(QObject):
    message = Signal(str, bool)  # text, is_error
    playing_changed = Signal(bool)
    busy_changed = Signal(bool)
    progress = Signal(str, int, int, bool)  # lane, layers done, total, visible (after a short delay)
    progress_done = Signal()
    model_loaded = Signal(object)  # the worker's info dict (model_id, config, params, note)
    models_listed = Signal(object)
    selectors_changed = Signal(object)  # ModelConfig: the layer/head choices to offer
    run_shown = Signal(object)  # RunInfo, after the session started it
    browsed = Signal()  # the cursor moved without an animation: views redraw at once
    requests_opened = Signal(object, str)  # a saved requests run's runs (checked whole), its path: the Requests dock shows it

    def __init__(self, session: Session, animator: Animator, prompt_text=lambda: "", parent=None) -> None:
        super().__init__(parent)
        self.session, self.animator, self.prompt_text = session, animator, prompt_text
        self.worker: WorkerThread | None = None  # attached once the engine is imported (attach_worker)
        self.busy = False
        self.playing = False
        self.can_step = False  # a simulator exists for the current run
        self.browsing = False  # showing a run opened from a .kvsim file
        self.lanes = DEFAULT_LANES
        self.free_running = False  # each lane continues on its own choice (lossy lanes' texts diverge)
        self.model_spec = ""
        self.loaded_info: dict | None = None
        self.last_error = ""
        self.load_failed = False
        self.run_failed = False  # the last run could not start (e.g. its prompt does not fit the context)
        self._progress_delay = QTimer(self)
        self._progress_delay.setSingleShot(True)
        self._progress_delay.setInterval(300)
        # repeated Reset / Enter presses coalesce into one restart (the last one wins)
        self._reset_soon = QTimer(self)
        self._reset_soon.setSingleShot(True)
        self._reset_soon.setInterval(0)
        self._reset_soon.timeout.connect(self._restart)
        self._last_restart = -1e9  # time.monotonic() of the last restart or run shown
        animator.finished.connect(self._on_anim_finished)

    def attach_worker(self, worker) -> None:
        """``worker``: a ``WorkerThread`` (or a stand-in with the same signals and requests)."""
        self.worker = worker
        worker.models_listed.connect(self.models_listed)
        worker.model_loaded.connect(self._on_model_loaded)
        worker.run_started.connect(self._on_run_started)
        worker.record_ready.connect(self._on_record)
        worker.failed.connect(self._on_failed)
        worker.busy_changed.connect(self._on_busy)
        worker.progress.connect(self._on_progress)
        worker.cancelled.connect(self._on_cancelled)

    # ================================================================== intents
    def load_model(self, spec: str, fallback: bool = False) -> None:
        self.stop_play()
        self.can_step = False
        self.load_failed = False
        self.run_failed = False
        self.model_spec = spec
        self.say(translate("controller", "loading model {model} …").format(model=spec))
        if self.worker is not None:
            self.worker.cancel()
            self.worker.request_load(spec, fallback)

    def set_free_running(self, on: bool) -> None:
        self.free_running = bool(on)
        self.say(
            translate("controller", "free-running lanes: each continues on its own choice — a new live run")
            if on
            else translate("controller", "lockstep lanes: every lane continues on the reference's token — a new live run")
        )
        self.reset()

    def set_lanes(self, specs: str) -> None:
        self.lanes = specs
        self.reset()

    def reset(self) -> None:
        """Restart the run with the current prompt (the model stays loaded); presses coalesce."""
        self.stop_play()
        self.animator.stop()
        self.can_step = False
        self.run_failed = False
        recent = (time.monotonic() - self._last_restart) * 1000 < RESTART_QUIET_MS
        self._reset_soon.start(RESTART_COALESCE_MS if recent else 0)

    def _restart(self) -> None:
        self._last_restart = time.monotonic()
        if self.browsing:  # back from an opened run: the selectors follow the loaded model again
            self.browsing = False
            if self.loaded_info is not None:
                self.selectors_changed.emit(ModelConfig.from_dict(self.loaded_info["config"]))
        if self.worker is None:
            return
        self.worker.cancel()
        self.worker.request_begin(self.prompt_text(), self.lanes, self.free_running)

    def step_forward(self) -> None:
        s = self.session
        if s.run is None:
            return
        self.animator.stop()
        if s.cursor < s.n_steps - 1:
            s.set_cursor(s.cursor + 1)
            self.animator.start()
            return
        if self.busy or self._reset_soon.isActive():
            return
        if not self.can_step or self.worker is None:  # can_step: the worker built this run's simulator
            if self.browsing:
                self.say(
                    translate("controller", "an opened run is for browsing: press Reset (Home) to start a live run"), error=True
                )
            else:
                self.say(translate("controller", "this run cannot continue: press Reset (Home) to start a live run"), error=True)
            self.stop_play()
            return
        if s.n_rows(s.n_steps) > s.run.max_seq_len:
            context = i18n.integer(s.run.max_seq_len)
            self.say(translate("controller", "the model's context of {n} tokens is full").format(n=context), error=True)
            self.stop_play()
            return
        self.busy = True
        self._progress_delay.start()  # progress shows only for steps longer than a blink
        self.worker.request_step(s.run.run_id)

    def step_back(self) -> None:
        self.stop_play()
        self.animator.stop()
        self.session.set_cursor(self.session.cursor - 1)
        self.browsed.emit()

    def scrub_to(self, step: int) -> None:
        self.stop_play()
        self.animator.stop()
        self.session.set_cursor(step)
        self.browsed.emit()

    def toggle_play(self) -> None:
        if self.playing:
            self.stop_play()
            return
        self.playing = True
        self.playing_changed.emit(True)
        if not self.animator.running and not self.busy:
            self.step_forward()

    def stop_play(self) -> None:
        if self.playing:
            self.playing = False
        self.playing_changed.emit(False)

    def cancel(self) -> None:
        self.stop_play()
        if self.worker is not None:
            self.worker.cancel()

    # ------------------------------------------------------------------ runs on disk (.kvsim)
    def save_run(self, path: str) -> bool:
        """Write the current run's records (all of them, whatever the cursor) to a .kvsim file."""
        from kvsim.engine.trace import Trace

        run = self.session.run
        if run is None or not self.session.records:
            self.say(translate("controller", "nothing to save yet: run a step first"), error=True)
            return False
        try:
            Trace(meta=dict(run.meta), records=list(self.session.records)).save(path)
        except OSError as exc:
            self.say(
                translate("controller", "could not save {path}: {error}").format(path=path, error=exc.strerror or exc), error=True
            )
            return False
        self.say(translate("controller", "saved {n} steps to {path}").format(n=i18n.integer(self.session.n_steps), path=path))
        return True

    def open_run(self, path: str) -> bool:
        """Show a saved run (browse only: its model need not be loaded). Reset starts a live run again.
        The file is validated whole before anything is drawn; a bad one leaves the current run as it was."""
        from kvsim.engine.trace import OtherKindError, Trace, TraceError

        try:
            trace = Trace.load(path)
            if not trace.records:
                raise TraceError(f"{path}: the run has no steps")
            run = RunInfo.from_trace(trace.meta, trace.records[0].run_id, info={"source": path})
            if not run.prompt_ids:
                run.prompt_ids = [int(i) for i in trace.records[0].input_ids]
        except OtherKindError:  # several requests through a paged pool: the Requests dock shows them
            return self._open_requests(path)
        except Exception as exc:  # noqa: BLE001 - any failure of a damaged file is one banner, never a crash
            self._cannot_open(path, exc)
            return False
        self.show_recorded(run, trace.records, len(trace.records) - 1)
        self.say(
            translate(
                "controller",
                "opened {path}: {n} steps of {model} — browse with ← →; Reset (Home) starts a live run on the loaded model",
            ).format(path=Path(path).name, n=i18n.integer(len(trace.records)), model=run.model_id)
        )
        return True

    def show_recorded(self, run: RunInfo, records: list, cursor: int) -> None:
        """Show ``records`` of ``run`` — an opened file's, or a run computed earlier in this session (the
        lesson's way back to a step it already reached) — for browsing, at step ``cursor``, without computing
        anything. Reset (or new lanes) starts a live run again."""
        self.stop_play()
        self.animator.stop()
        self._reset_soon.stop()
        if self.worker is not None:
            self.worker.cancel()
        self.browsing = True
        self.can_step = False
        self.busy = False
        self.selectors_changed.emit(run.config)
        self._show_run(run)
        for record in records:
            self.session.add_record(record)
        self.session.set_cursor(cursor)
        self.browsed.emit()

    def _cannot_open(self, path: str, exc: BaseException) -> None:
        text = str(exc) or type(exc).__name__  # a TraceError already names the file
        if text.startswith(str(path)):
            self.say(translate("controller", "could not open {error}").format(error=text), error=True)
        else:
            self.say(translate("controller", "could not open {path}: {error}").format(path=path, error=text), error=True)

    def _open_requests(self, path: str) -> bool:
        """A saved requests run (``kvsim run --requests … --save``, a batched run too), checked whole by its reader
        (``kvsim.serving.saved_runs``); the Requests dock shows it (``requests_opened``), the lanes' run stays."""
        from kvsim.core.text import printable
        from kvsim.serving.saved_runs import load_runs

        try:
            runs = load_runs(path)
        except Exception as exc:  # noqa: BLE001 - any failure of a damaged file is one banner, never a crash
            self._cannot_open(path, exc)
            return False
        self.requests_opened.emit(runs, str(path))
        self.say(
            translate("controller", "opened {path}: {n} requests of {model} — shown in the Requests view (B)").format(
                path=Path(path).name, n=i18n.integer(len(runs[0].requests)), model=printable(runs[0].model_id, 120)
            )
        )
        return True

    # ------------------------------------------------------------------ synchronous helpers (tests, screenshots)
    def run_steps(self, n: int, timeout_s: float = 120.0) -> bool:
        """Compute/show ``n`` more steps, processing events until they are drawn."""
        s = self.session
        target = s.n_steps + n if s.cursor == s.n_steps - 1 else s.cursor + 1 + n
        deadline = time.monotonic() + timeout_s
        while s.cursor + 1 < target and time.monotonic() < deadline:
            if not self.busy and not self.animator.running and not self._reset_soon.isActive():
                before = s.cursor
                self.step_forward()
                if s.cursor == before and not self.busy:
                    return False
            QCoreApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 20)
            if self.busy:
                time.sleep(0.002)
        self.animator.stop()
        return s.cursor + 1 >= target

    def wait_ready(self, timeout_s: float = 60.0) -> bool:
        """Process events until a run exists and the worker is idle; False at once if the load failed."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            QCoreApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 20)
            if self.session.run is not None and self.can_step and not self.busy and not self._reset_soon.isActive():
                return True
            if (self.load_failed or self.run_failed) and not self.busy:
                return False  # never wait for a run that cannot start (a headless export would idle for ever)
            time.sleep(0.002)
        return False

    # ================================================================== worker results
    def _on_model_loaded(self, info: dict) -> None:
        self.loaded_info = info
        self.model_spec = info["model_id"]
        self.model_loaded.emit(info)
        self.selectors_changed.emit(ModelConfig.from_dict(info["config"]))
        self.reset()

    def _on_run_started(self, run: RunInfo) -> None:
        if self.browsing or self._reset_soon.isActive():
            return  # a newer request (an opened run, another reset) supersedes this run
        self.busy = False  # a step asked of the previous run is dropped by the worker
        self._show_run(run)
        self.can_step = True
        self._last_restart = time.monotonic()

    def _show_run(self, run: RunInfo) -> None:
        self.animator.stop()
        self.session.start_run(run)  # views rebuild from the session, which now holds this run
        self.run_shown.emit(run)

    def _on_record(self, record) -> None:
        self.busy = False
        self._progress_delay.stop()
        self.progress_done.emit()
        if self.session.add_record(record):
            self.session.set_cursor(record.step)
            self.animator.start()

    def _on_failed(self, what: str, message: str) -> None:
        self.busy = False
        if what == "load":
            self.load_failed = True
        elif what == "run":
            self.run_failed = True
        self.stop_play()
        self.progress_done.emit()
        self.say(message, error=True)

    def _on_cancelled(self, step: int) -> None:
        self.busy = False
        self.progress_done.emit()
        if step == 0:
            text = translate("controller", "prefill cancelled — nothing was kept of it; Step (→) runs it again")
        else:
            text = translate("controller", "step {n} cancelled — nothing was kept of it; Step (→) runs it again").format(n=step)
        self.say(text, error=True)

    def _on_progress(self, lane: str, done: int, total: int) -> None:
        self.progress.emit(lane, done, total, not self._progress_delay.isActive())

    def _on_busy(self, busy: bool) -> None:
        if not busy:
            self.progress_done.emit()
        self.busy_changed.emit(busy)

    def _on_anim_finished(self) -> None:
        if not self.playing:
            return
        r, run = self.session.record(), self.session.run
        if r is not None and run is not None and run.eos_id is not None and r.token_id == run.eos_id:
            self.stop_play()  # as `kvsim run` does; Step (→) continues past it
            self.say(
                translate(
                    "controller", "the model produced its end-of-sequence token (its answer ends here); Step (→) continues anyway"
                )
            )
            return
        QTimer.singleShot(0, self._play_next)

    def _play_next(self) -> None:
        if self.playing and not self.busy and not self.animator.running:
            self.step_forward()

    def say(self, text: str, error: bool = False) -> None:
        if error:
            self.last_error = text
        self.message.emit(text, error)
