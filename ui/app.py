"""``kvsim`` with no arguments: the desktop simulator.

    main(model=None) -> exit status

Opens the main window on the bundled model (or ``model``) with an example prompt loaded, so Step
and Play work at once. Model loading and every simulator step run on a worker thread.

No exception is silent and none is a crash: ``install_error_handlers()`` (``make_app`` calls it)
routes an exception no code caught — one raised in a slot, a timer callback, on the worker thread —
to the window's error banner and to one line on stderr (identical repeats are counted, not
reprinted), and filters Qt's messages: platform-capability notes of the offscreen/minimal plugins
("This plugin does not support propagateSizeHints()") never reach the terminal; other warnings
are one ``kvsim: qt …`` line each.
"""

from __future__ import annotations

import builtins
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from .startup.launch import T0 as _T0  # the clock starts as the app module loads
from .startup.launch import launch_mark

if TYPE_CHECKING:  # Qt is imported when the app starts, not with this module
    from PySide6.QtWidgets import QApplication

# Python's own import, kept before PySide6 replaces it with shiboken's hook (None when Qt came first)
_PLAIN_IMPORT = None if "shiboken6" in sys.modules else builtins.__import__

# Qt messages that say nothing to a user: capability notes of headless platform plugins, and
# environment remarks Qt makes on every start on some systems
HARMLESS_QT_MESSAGES = (
    "This plugin does not support",  # propagateSizeHints(), raise(), grabbing the keyboard/mouse, …
    "QStandardPaths: XDG_RUNTIME_DIR not set",
    "QStandardPaths: wrong permissions on runtime directory",
    "QStandardPaths: runtime directory",
    "Unable to detect default application",
)
REPEAT_QUIET_S = 5.0  # the same error (type and place) again within this time is counted, not reprinted


def is_harmless_qt_message(message: str) -> bool:
    return any(message.startswith(prefix) for prefix in HARMLESS_QT_MESSAGES)


def _where(tb) -> str:
    frames = traceback.extract_tb(tb) if tb is not None else []
    if not frames:
        return ""
    f = frames[-1]
    return f"{os.path.basename(f.filename)}:{f.lineno} in {f.name}"


class ErrorHandlers:
    """The installed hooks; ``uninstall()`` puts back what was there before (tests)."""

    def __init__(self, stream=None) -> None:
        from PySide6.QtCore import QObject, Qt, Signal

        class _Relay(QObject):  # made on the GUI thread: a report from any thread is shown there
            report = Signal(str)

        self.stream = stream  # None: sys.stderr at the time of the report
        self.relay = _Relay()
        self.relay.report.connect(self._show, Qt.ConnectionType.QueuedConnection)
        self.lines: list[str] = []  # what was printed (tests)
        self.count = 0  # unexpected exceptions seen
        self._last: dict[str, tuple[float, int]] = {}  # place -> (last printed at, repeats since)
        self._lock = threading.Lock()
        self._previous_hook = sys.excepthook
        self._previous_thread_hook = threading.excepthook
        self._previous_qt: Callable[..., Any] | None = None  # Qt's message handler before ours
        self._installed = False
        self.log: Path | None = None  # the log file the last error went to

    def install(self) -> ErrorHandlers:
        from PySide6.QtCore import qInstallMessageHandler

        sys.excepthook = self.excepthook
        threading.excepthook = lambda args: self.excepthook(args.exc_type, args.exc_value, args.exc_traceback)
        self._previous_qt = qInstallMessageHandler(self.qt_message)
        self._installed = True
        return self

    def uninstall(self) -> None:
        from PySide6.QtCore import qInstallMessageHandler

        if not self._installed:
            return
        self._installed = False
        sys.excepthook = self._previous_hook
        threading.excepthook = self._previous_thread_hook
        qInstallMessageHandler(self._previous_qt)

    def _print(self, line: str) -> None:
        self.lines.append(line)
        try:
            print(line, file=self.stream or sys.stderr, flush=True)
        except (OSError, ValueError):  # a closed terminal must not turn one error into another
            pass

    # ------------------------------------------------------------------ exceptions
    def excepthook(self, kind, value, tb) -> None:
        if issubclass(kind, KeyboardInterrupt):  # Ctrl+C in the terminal: leave, as a console program does
            from PySide6.QtCore import QCoreApplication

            QCoreApplication.quit()
            return
        where = _where(tb)
        text = f"{kind.__name__}: {value}" + (f" (at {where})" if where else "")
        key = f"{kind.__name__}@{where}"
        now = time.monotonic()
        with self._lock:
            self.count += 1
            last, repeats = self._last.get(key, (-1e9, 0))
            quiet = now - last < REPEAT_QUIET_S
            self._last[key] = (last, repeats + 1) if quiet else (now, 0)
        if quiet:
            return  # the banner already says it; a slot failing 60 times a second is one line, not 60
        more = f" (and {repeats} more like it)" if repeats else ""
        from kvsim.core.logfile import log_exception

        log = log_exception(f"unexpected error: {text}", (kind, value, tb))  # the whole traceback, in the log file
        self.log = log
        self._print(f"kvsim: unexpected error: {text}{more}" + (f" (traceback in {log})" if log is not None else ""))
        if os.environ.get("KVSIM_DEBUG"):
            traceback.print_exception(kind, value, tb, file=self.stream or sys.stderr)
        from .i18n import translate

        shown = translate(
            "app", "unexpected error: {error} — the app may show something stale; Reset (Home) starts the run afresh"
        )
        self.relay.report.emit(shown.format(error=text) + (f" — {log}" if log is not None else ""))

    def _show(self, text: str) -> None:
        from PySide6.QtWidgets import QApplication

        for w in QApplication.topLevelWidgets():
            controller = getattr(w, "controller", None)
            if controller is not None and hasattr(controller, "say"):
                controller.say(text, error=True)
            elif hasattr(w, "show_message"):
                w.show_message(text, error=True)

    # ------------------------------------------------------------------ Qt's messages
    def qt_message(self, mode, context, message: str) -> None:
        from PySide6.QtCore import QtMsgType

        if is_harmless_qt_message(message):
            return
        if mode in (QtMsgType.QtDebugMsg, QtMsgType.QtInfoMsg) and not os.environ.get("KVSIM_DEBUG"):
            return
        kind = {
            QtMsgType.QtDebugMsg: "debug",
            QtMsgType.QtInfoMsg: "info",
            QtMsgType.QtWarningMsg: "warning",
            QtMsgType.QtCriticalMsg: "critical",
            QtMsgType.QtFatalMsg: "fatal",
        }.get(mode, "message")
        self._print(f"kvsim: qt {kind}: {message}")
        if kind in ("warning", "critical", "fatal"):
            import logging

            logging.getLogger("kvsim").warning("qt %s: %s", kind, message)  # the log file keeps it too


_handlers: ErrorHandlers | None = None


def install_error_handlers(stream=None) -> ErrorHandlers:
    """Route uncaught exceptions to the banner + one stderr line and filter Qt's messages. Once per
    process (a second call returns the installed handlers); call it on the GUI thread."""
    global _handlers
    if _handlers is not None and _handlers._installed:
        return _handlers
    _handlers = ErrorHandlers(stream).install()
    return _handlers


def make_app(argv: list[str] | None = None, handlers: bool = True, lang: str | None = None, styled: bool = True) -> QApplication:
    """The QApplication (made once), themed and in its language (``lang``: "en" / "pt_BR"; None: the
    remembered choice, else the system's); ``handlers``: install the error handlers first, so even
    Qt's messages while the application starts are filtered; ``styled=False``: the theme (and pyqtgraph)
    left for the caller's ``theme.apply(app)`` (``main`` paints its splash first)."""
    from PySide6.QtWidgets import QApplication

    from . import theme

    if handlers:
        install_error_handlers()
    app = cast("QApplication | None", QApplication.instance())  # kvsim's processes make only QApplications
    if app is None:
        app = QApplication(argv if argv is not None else [sys.argv[0]])
        app.setApplicationName("kvsim")
        app.setOrganizationName("kvsim")
    from PySide6.QtCore import QSettings

    from . import i18n

    i18n.install(app, i18n.choose(lang, QSettings("kvsim", "kvsim-ui")))
    if styled:
        theme.apply(app)
    return app


def _preload() -> None:
    import kvsim.caches  # noqa: F401
    import kvsim.engine.simulate  # noqa: F401
    import kvsim.models.catalog  # noqa: F401
    import kvsim.models.loading  # noqa: F401

    for name in ("tokenizers", "safetensors", "gguf", "jinja2", "platformdirs"):
        try:  # the engine imports these lazily (a model load on the worker thread would)
            __import__(name)
        except Exception:  # noqa: BLE001 - optional here; load_model says what is missing
            pass


def main(
    model: str | None = None,
    lang: str | None = None,
    threads: int | None = None,
    lanes: str | None = None,
    prompt: str | None = None,
) -> int:
    """The app: Qt and a splash first, then the main window (painted before torch is imported), then the
    engine, imported on a Python thread while the window is on screen (``engine_import``). ``lanes`` and
    ``prompt`` (``kvsim --lanes … --prompt …``): the run it opens on, as if typed into the toolbar."""
    launch_mark("main")
    app = make_app(lang=lang, styled=False)
    launch_mark("qapplication")
    from . import theme
    from .startup import engine_import
    from .startup.splash import show_splash

    splash = show_splash(app)
    launch_mark("splash-shown")
    theme.apply(app)  # pyqtgraph's import and the style sheet, behind the splash
    from .shell.window import MainWindow

    engine_import.expect()
    window = MainWindow(model=model, prompt=prompt, lanes=lanes)  # the engine is not imported: the window's boot waits for it
    launch_mark("window-built")

    def engine_done() -> None:
        if engine_import.error() is None:
            from kvsim.models.loading import set_threads

            set_threads(threads)
        launch_mark("engine-preloaded")

    exit_at_first_paint = bool(os.environ.get("KVSIM_EXIT_AFTER_FIRST_PAINT"))

    def first_painted(_at: float) -> None:
        if not engine_import.started() and not exit_at_first_paint:
            engine_import.start(lambda: _preload_model_libraries(model), _PLAIN_IMPORT, engine_done)

    window.first_painted.connect(first_painted)
    if exit_at_first_paint:  # benchmarks: launch-to-first-paint (the engine is never imported)

        def done(at: float) -> None:
            print(f"first-paint-ms {(at - _T0) * 1000:.1f}", flush=True)
            from PySide6.QtCore import QTimer

            QTimer.singleShot(0, window.close)

        window.first_painted.connect(done)
    window.show()
    splash.finish(window)
    code = app.exec()
    engine_import.wait(120)  # never leave with a thread inside an import (closed while torch was imported)
    if engine_import.running() or not window.shutdown():
        # the worker is inside a model load that cannot be interrupted; destroying its running QThread
        # would abort the process, so leave at once (nothing of the user's is unsaved in a load)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(int(code))
    return int(code)


def _preload_model_libraries(model: str | None) -> None:
    """The engine and the libraries it imports lazily, for the engine-import thread (Python's own import is in place)."""
    _preload()
    if model:
        from kvsim.models import hub

        if hub.is_repo_id(model.strip()) or model.strip() in hub.HUB_MODELS:
            try:  # a model from the Hub: its client too (~0.25 s, so only then)
                import huggingface_hub._snapshot_download  # noqa: F401
            except ImportError:
                pass


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else None))
