"""The engine's import on a Python thread, after the main window's first paint (``kvsim`` at launch).

    engine_import.expect()                    # app.main, before the window exists: its boot will wait
    engine_import.start(work, plain, after)   # app.main, once the window is painted
    engine_import.when_ready(callback)        # the window's boot: True at once, or callback later

Importing torch takes ~1.2 s on a quiet machine (7–10 s under load): imported first, it kept the main
window off the screen; imported on the GUI thread after the window was up, it froze it. Here it runs
on a plain ``threading.Thread`` while the GUI thread keeps painting. What made imports off the GUI
thread unsafe is shiboken6's ``builtins.__import__`` hook (it reads each module's source, not thread
safely; see docs/launch.md): for the duration of this import Python's own ``__import__`` is in
``builtins`` for every thread — the hook serves PySide's ``__feature__`` switches, which kvsim does not
use — and the GUI thread puts the hook back when the import is done (``_finish``). No other thread runs
Python meanwhile: the worker thread (``ui/shell/worker.py``) is started by the window's boot, after it.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, Signal


class _Relay(QObject):
    done = Signal()


class _State:
    def __init__(self) -> None:
        self.thread: threading.Thread | None = None
        self.expected = False  # a background import will be started (the window's boot waits for it)
        self.finished = False
        self.error: BaseException | None = None
        self.waiting: list[Callable[[], None]] = []
        self.hook: Callable | None = None
        self.after: Callable[[], None] | None = None
        self.relay: _Relay | None = None


_state = _State()


def expect() -> None:
    """A background import will be started: until it has finished, ``when_ready`` waits for it."""
    _state.expected = True


def started() -> bool:
    return _state.thread is not None


def error() -> BaseException | None:
    """What the import raised, if it did (the window's boot then imports the engine again and reports it)."""
    return _state.error


def running() -> bool:
    """True while the import thread is alive."""
    thread = _state.thread
    return thread is not None and thread is not threading.current_thread() and thread.is_alive()


def ready() -> bool:
    """True when no background import is expected or running (none was, or it finished)."""
    return (_state.thread is None and not _state.expected) or _state.finished


def start(work: Callable[[], None], plain: Callable | None, after: Callable[[], None] | None = None) -> None:
    """Run ``work`` (imports) on a Python thread with ``plain`` (Python's own ``__import__``) in ``builtins``
    meanwhile; then, on the GUI thread, put the hook back, call ``after`` and every ``when_ready`` callback.
    ``plain`` None (unknown: Qt came first): ``work`` runs here, on the GUI thread. Call it on the GUI thread, once."""
    if _state.thread is not None:
        raise RuntimeError("the engine import was started already")
    relay = _Relay()
    relay.done.connect(_finish, Qt.ConnectionType.QueuedConnection)
    _state.relay, _state.after = relay, after
    _state.hook = builtins.__import__
    if plain is None:  # Qt was imported before the app module: no hook-free import to give a thread
        _state.thread = threading.current_thread()
        try:  # so the import runs here, on the GUI thread (the window is painted already)
            work()
        except BaseException as exc:  # noqa: BLE001 - reported by the window's boot, as below
            _state.error = exc
        _finish()
        return
    builtins.__import__ = plain

    def run() -> None:
        try:
            work()
        except BaseException as exc:  # noqa: BLE001 - reported by the GUI thread's import of the worker module
            _state.error = exc
        finally:
            relay.done.emit()

    _state.thread = threading.Thread(target=run, name="kvsim-engine-import", daemon=True)
    _state.thread.start()


def _finish() -> None:
    if _state.hook is not None:
        builtins.__import__ = _state.hook
    _state.finished = True
    callbacks, _state.waiting = _state.waiting, []
    if _state.after is not None:
        _state.after()
    for callback in callbacks:
        callback()


def when_ready(callback: Callable[[], None]) -> bool:
    """True when the engine may be imported now (no background import, or it is done); otherwise False
    and ``callback`` is called on the GUI thread once it is done (once, however often it was asked)."""
    if ready():
        return True
    if callback not in _state.waiting:
        _state.waiting.append(callback)
    return False


def wait(timeout: float | None = None) -> None:
    """Block until the background import has ended (the app's exit: no thread left inside an import)."""
    if running():
        _state.thread.join(timeout)  # type: ignore[union-attr]
