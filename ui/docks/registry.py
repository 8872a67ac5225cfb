"""The optional docks (memory bill, roofline, requests through a paged pool): declared in one list,
built the first time they are shown, so a window that never opens them never pays for them.

Each dock's widget is made by ``factory(host)``: the ``DockHost`` gives it the session (what the
runs recorded), the settings, a way to show a message, and ``submit`` — a computation run on the
worker thread (never on the GUI thread) whose result comes back to a callback on the GUI thread.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QT_TRANSLATE_NOOP, QObject, QSettings, Qt
from PySide6.QtWidgets import QDockWidget, QLabel, QMainWindow, QWidget

from ..i18n import translate
from ..session import Session


@dataclass(frozen=True)
class DockSpec:
    name: str  # objectName: the saved layout remembers it
    title: str  # in English (marked for translation): translated when the dock is made
    factory: str  # "module:Class" inside kvsim.ui.docks, called with the DockHost
    area: Qt.DockWidgetArea = Qt.DockWidgetArea.RightDockWidgetArea
    shortcut: str = ""


EXTRA_DOCKS = [
    DockSpec("memory", QT_TRANSLATE_NOOP("docks", "Memory: the KV cache bill"), "memory.dock:MemoryDock", shortcut="M"),
    DockSpec(
        "roofline",
        QT_TRANSLATE_NOOP("docks", "Roofline: compute-bound or memory-bound"),
        "roofline.dock:RooflineView",
        shortcut="R",
    ),
    DockSpec(
        "requests",
        QT_TRANSLATE_NOOP("docks", "Requests: paged blocks and prefix caching"),
        "requests.dock:RequestsView",
        shortcut="B",
    ),
]


class Jobs(QObject):
    """Routes the worker's ``job_done`` / ``job_failed`` to the callbacks of whoever submitted."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.worker = None
        self._waiting: dict[int, tuple[Callable[[Any], None], Callable[[str], None] | None]] = {}

    def attach(self, worker) -> None:
        self.worker = worker
        worker.job_done.connect(self._done)
        worker.job_failed.connect(self._failed)

    def submit(self, fn: Callable[[Any], Any], done: Callable[[Any], None], failed: Callable[[str], None] | None = None) -> bool:
        """Run ``fn(loaded_model_or_None)`` on the worker thread; False (and ``failed`` called) before it exists."""
        if self.worker is None:
            if failed is not None:
                failed(translate("docks", "the engine is still starting"))
            return False
        self._waiting[self.worker.submit(fn)] = (done, failed)
        return True

    def _done(self, ticket: int, result: Any) -> None:
        done, _ = self._waiting.pop(ticket, (None, None))
        if done is not None:
            done(result)

    def _failed(self, ticket: int, message: str) -> None:
        _, failed = self._waiting.pop(ticket, (None, None))
        if failed is not None:
            failed(message)


@dataclass
class DockHost:
    session: Session
    jobs: Jobs
    say: Callable[..., None]  # say(text, error=False): the status bar, or the banner for errors
    settings: QSettings | None = None
    window: QMainWindow | None = None  # a parent for dialogs only
    extras: dict[str, Any] = field(default_factory=dict)

    def submit(self, fn: Callable[[Any], Any], done: Callable[[Any], None], failed: Callable[[str], None] | None = None) -> bool:
        return self.jobs.submit(fn, done, failed or (lambda message: self.say(message, True)))


class LazyDock(QDockWidget):
    """A dock whose widget is built on first show."""

    def __init__(self, spec: DockSpec, host: DockHost, parent: QWidget | None = None) -> None:
        super().__init__(translate("docks", spec.title), parent)
        self.spec, self.host, self.view = spec, host, None
        self.setObjectName(spec.name)
        self.setFeatures(
            QDockWidget.DockWidgetFeature.DockWidgetMovable
            | QDockWidget.DockWidgetFeature.DockWidgetFloatable
            | QDockWidget.DockWidgetFeature.DockWidgetClosable
        )
        self.setWidget(QLabel("…"))
        self.visibilityChanged.connect(self._on_visible)

    def _on_visible(self, visible: bool) -> None:
        if visible and self.view is None:
            self.build()

    def build(self) -> QWidget:
        if self.view is None:
            module, cls = self.spec.factory.split(":")
            factory = getattr(importlib.import_module(f".{module}", __package__), cls)
            self.view = factory(self.host)
            self.setWidget(self.view)
        return self.view


def install(window: QMainWindow, host: DockHost, menu) -> dict[str, LazyDock]:
    """Add every extra dock (hidden, tabbed together on the right) and a menu entry to show each."""
    made: dict[str, LazyDock] = {}
    first = None
    for spec in EXTRA_DOCKS:
        dock = LazyDock(spec, host, window)
        window.addDockWidget(spec.area, dock)
        if first is not None:
            window.tabifyDockWidget(first, dock)
        first = first or dock
        dock.setVisible(False)
        action = dock.toggleViewAction()
        if spec.shortcut:
            action.setShortcut(spec.shortcut)
            window.addAction(action)  # the shortcut works with the menu closed
        menu.addAction(action)
        made[spec.name] = dock
    return made
