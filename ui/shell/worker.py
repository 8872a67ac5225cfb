"""The worker: loads models and runs the Simulator on its own QThread, one step per request.

It never touches a widget. Requests arrive as queued signals (``load``, ``begin``, ``step``);
results leave as signals carrying immutable objects (``LoadedModel`` info, ``RunInfo``,
``StepRecord``). A long step reports progress per layer and can be cancelled from the GUI thread
(``cancel()`` sets a flag the per-layer callback checks and raises on).
"""

from __future__ import annotations

import threading
import traceback

from PySide6.QtCore import QObject, QThread, Signal, Slot

from kvsim.caches import SpecError, parse_lanes
from kvsim.engine.simulate import SimulationError, Simulator
from kvsim.models.base import LoadedModel
from kvsim.models.catalog import list_models

# Importing this module imports the engine (and torch): the window does it after its first paint,
# on the GUI thread — PySide6's import hook is not safe for imports on other threads.
from kvsim.models.config import ConfigError
from kvsim.models.loading import ModelLoadError, load_model

from ..i18n import translate
from ..session import RunInfo

for _lazy in ("tokenizers", "safetensors", "gguf", "jinja2", "platformdirs"):
    try:  # the engine imports these lazily; import them here, on the GUI thread, not in the worker
        __import__(_lazy)
    except Exception:  # noqa: BLE001 - optional at this point; load_model reports what is missing
        pass

FALLBACK_MODEL = "random:family=llama,layers=4,heads=8,kv_heads=2,dim=256,seed=0"
SMALL_MODEL_PARAMS = 50_000_000  # below this a step's forward takes a few ms: timing it 3× costs nothing visible
USER_ERRORS = (ModelLoadError, SimulationError, SpecError, ConfigError, ValueError, OSError)


class Cancelled(Exception):
    """Raised from the progress callback to abandon a step."""


class SimWorker(QObject):
    models_listed = Signal(object)  # list of dicts from kvsim.models.catalog.list_models()
    model_loaded = Signal(object)  # dict: model_id, config, info, fallback note
    run_started = Signal(object)  # RunInfo
    record_ready = Signal(object)  # StepRecord
    progress = Signal(str, int, int)  # lane, layers done, layers total
    failed = Signal(str, str)  # what (load / run / step), message
    busy_changed = Signal(bool)
    cancelled = Signal(int)  # the step that was abandoned
    job_done = Signal(int, object)  # ticket, what the job returned
    job_failed = Signal(int, str)  # ticket, message

    def __init__(self) -> None:
        super().__init__()
        self.latest = {"load": 0, "begin": 0}  # the newest request of each kind (older ones are skipped)
        self.loaded: LoadedModel | None = None
        self.sim: Simulator | None = None
        self._cancel = threading.Event()
        self._listed = False

    def cancel(self) -> None:
        """Thread-safe: the running step stops at the next layer boundary."""
        self._cancel.set()

    # -------------------------------------------------------------- slots (worker thread)
    @Slot(str, bool, int)
    def load(self, spec: str, fallback: bool = False, ticket: int = 0) -> None:
        if ticket and ticket != self.latest["load"]:
            return  # a newer load was asked for while this one waited: only the last one runs
        self._cancel.clear()
        self.busy_changed.emit(True)
        note = ""
        if not self._listed:
            self._listed = True
            try:
                self.models_listed.emit(list_models())
            except Exception:  # noqa: BLE001 - a broken user dir must not stop the app
                traceback.print_exc()
        try:
            try:
                loaded = load_model(spec)
            except ModelLoadError as exc:
                if not fallback:
                    raise
                note = translate("worker", "bundled model {model} not available ({error}); using a random model").format(
                    model=repr(spec), error=exc
                )
                loaded = load_model(FALLBACK_MODEL)
            self.loaded = loaded
            self.sim = None
            cfg = loaded.model.cfg
            self.model_loaded.emit(
                {
                    "model_id": loaded.model_id,
                    "config": cfg.to_dict(),
                    "info": dict(loaded.info),
                    "note": note,
                    "params": loaded.model.n_params(),
                }
            )
        except USER_ERRORS as exc:
            self.failed.emit(
                "load", translate("worker", "could not load model {model}: {error}").format(model=repr(spec), error=exc)
            )
        except Exception as exc:  # noqa: BLE001 - the app must stay usable
            error = f"{type(exc).__name__}: {exc}"
            self.failed.emit(
                "load", translate("worker", "could not load model {model}: {error}").format(model=repr(spec), error=error)
            )
            traceback.print_exc()
        finally:
            self.busy_changed.emit(False)

    @Slot(str, str, int, bool)
    def begin(self, prompt: str, lanes: str, ticket: int = 0, free_running: bool = False) -> None:
        """Start a new run: tokenize the prompt and build the simulator (no step yet)."""
        if ticket and ticket != self.latest["begin"]:
            return  # superseded by a newer restart (ten Home presses build one run, not ten)
        self._cancel.clear()
        self.sim = None
        if self.loaded is None:
            self.failed.emit("run", translate("worker", "no model is loaded"))
            return
        try:
            specs = parse_lanes(lanes)
            tok = self.loaded.tokenizer
            text = tok.format_prompt(prompt, chat=True)
            ids = tok.encode(text)
            sim = Simulator(
                self.loaded.model,
                tok,
                ids,
                specs,
                free_running=free_running,
                # each step's forward timed 3 times (median shown, spread as a band) where that stays quick
                repeats=3 if self.loaded.model.n_params() < SMALL_MODEL_PARAMS else 1,
                model_id=self.loaded.model_id,
                prompt_text=text,
                progress=self._on_progress,
            )
        except (*USER_ERRORS, KeyError) as exc:
            self.failed.emit("run", translate("worker", "could not start the run: {error}").format(error=exc))
            return
        self.sim = sim
        self.run_started.emit(
            RunInfo.from_trace(
                sim.trace.meta,
                sim.run_id,
                info=dict(self.loaded.info),
                eos_id=getattr(tok, "eos_id", None),
                token_text=tok.token_text,
            )
        )

    @Slot(str)
    def step(self, run_id: str) -> None:
        """One Simulator.step() for run ``run_id`` (requests for an older run are dropped)."""
        sim = self.sim
        if sim is None or sim.run_id != run_id:
            return
        self._cancel.clear()
        self.busy_changed.emit(True)
        index = sim.steps_done
        try:
            record = sim.step()
        except Cancelled:
            # Simulator.step rolled every cache back to the last complete step: the run goes on
            self.cancelled.emit(index)
        except USER_ERRORS as exc:
            self.failed.emit("step", translate("worker", "step {n} failed: {error}").format(n=index, error=exc))
        except Exception as exc:  # noqa: BLE001
            error = f"{type(exc).__name__}: {exc}"
            self.failed.emit("step", translate("worker", "step {n} failed: {error}").format(n=index, error=error))
            traceback.print_exc()
        else:
            self.record_ready.emit(record)
        finally:
            self.busy_changed.emit(False)

    @Slot(int, object)
    def job(self, ticket: int, fn) -> None:
        """Run ``fn(loaded_model_or_None)`` here, off the GUI thread (docks' own computations: several
        requests through a paged pool, a roofline's peak measurement); the result goes back as is."""
        self.busy_changed.emit(True)
        try:
            result = fn(self.loaded)
        except (*USER_ERRORS, KeyError) as exc:
            self.job_failed.emit(ticket, str(exc))
        except Exception as exc:  # noqa: BLE001 - the app must stay usable
            self.job_failed.emit(ticket, f"{type(exc).__name__}: {exc}")
            traceback.print_exc()
        else:
            self.job_done.emit(ticket, result)
        finally:
            self.busy_changed.emit(False)

    def _on_progress(self, lane: str, done: int, total: int) -> None:
        if self._cancel.is_set():
            raise Cancelled()
        self.progress.emit(lane, done, total)


class WorkerThread(QObject):
    """Owns the QThread, the worker and its cancel. The GUI calls ``request_*`` and ``cancel`` and
    listens to the same signals the worker has, re-emitted here on the GUI thread."""

    models_listed = Signal(object)
    model_loaded = Signal(object)
    run_started = Signal(object)
    record_ready = Signal(object)
    progress = Signal(str, int, int)
    failed = Signal(str, str)
    busy_changed = Signal(bool)
    cancelled = Signal(int)
    job_done = Signal(int, object)
    job_failed = Signal(int, str)
    _load = Signal(str, bool, int)
    _begin = Signal(str, str, int, bool)
    _step = Signal(str)
    _job = Signal(int, object)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.qthread = QThread()
        self.qthread.setObjectName("kvsim-worker")
        self.worker = SimWorker()
        self.worker.moveToThread(self.qthread)
        self._tickets = 0
        self._load.connect(self.worker.load)
        self._begin.connect(self.worker.begin)
        self._step.connect(self.worker.step)
        self._job.connect(self.worker.job)
        for name in (
            "models_listed",
            "model_loaded",
            "run_started",
            "record_ready",
            "progress",
            "failed",
            "busy_changed",
            "cancelled",
            "job_done",
            "job_failed",
        ):
            getattr(self.worker, name).connect(getattr(self, name))
        self.qthread.start()

    def request_load(self, spec: str, fallback: bool = False) -> None:
        self._tickets += 1
        self.worker.latest["load"] = self._tickets
        self._load.emit(spec, fallback, self._tickets)

    def request_begin(self, prompt: str, lanes: str, free_running: bool = False) -> None:
        self._tickets += 1
        self.worker.latest["begin"] = self._tickets
        self._begin.emit(prompt, lanes, self._tickets, free_running)

    def request_step(self, run_id: str) -> None:
        self._step.emit(run_id)

    def submit(self, fn) -> int:
        """Queue ``fn(loaded)`` on the worker thread (after any step already queued); its result arrives
        as ``job_done(ticket, result)`` or ``job_failed(ticket, message)`` on the GUI thread."""
        self._tickets += 1
        self._job.emit(self._tickets, fn)
        return self._tickets

    def cancel(self) -> None:
        """Thread-safe: the running step stops at its next layer boundary."""
        self.worker.cancel()

    def stop(self, timeout_ms: int = 10_000) -> bool:
        """Ask the worker to finish; False if it is still busy (a model load cannot be interrupted)."""
        self.worker.cancel()
        self.qthread.quit()
        return self.qthread.wait(timeout_ms)
