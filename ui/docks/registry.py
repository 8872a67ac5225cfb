"""Every dock of the window, declared in one list (``DOCKS``) with its view, its key and its stage
views: costs, text and all heads are built with the window; the optional ones (memory bill, roofline,
requests through a paged pool) the first time they are shown, so a window that never opens them never
pays for them. A new dock is one entry here: the menu, its key, the shortcut sheet and the stage
(``ui/shell/stage.py``) read this list.

Each dock's widget is made by ``factory(host)``: the ``DockHost`` gives it the session (what the
runs recorded), the settings, a way to show a message, and ``submit`` — a computation run on the
worker thread (never on the GUI thread) whose result comes back to a callback on the GUI thread.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QObject, QSettings, Qt
from PySide6.QtWidgets import QDockWidget, QFrame, QLabel, QMainWindow, QScrollArea, QWidget

from kvsim.core.words import QT_TRANSLATE_NOOP  # typed str, found by pyside6-lupdate as Qt's

from ..i18n import translate
from ..session import Session

UI_PACKAGE = __package__.rsplit(".", 1)[0]  # kvsim.ui: the factories' modules are named from there


@dataclass(frozen=True)
class StageEntry:
    """One view of the stage (small screens, presenter mode): the dock's widget fills the window."""

    name: str  # unique among the stage's views
    words: str  # in English (marked for translation): the menu's and the shortcut sheet's words
    key: str  # shows this view on the stage; toggles the dock on the desktop layout
    part: str = ""  # passed to the view's ``show_part`` (one widget, several views: the requests dock)


@dataclass(frozen=True)
class DockSpec:
    name: str  # objectName: the saved layout remembers it
    title: str  # in English (marked for translation): translated when the dock is made
    # "module:Class" inside kvsim.ui (named, not imported: the registry imports no view), or a callable;
    # called with the DockHost, or with the host's fields named in ``args``
    factory: str | Callable[..., QWidget]
    area: Qt.DockWidgetArea = Qt.DockWidgetArea.RightDockWidgetArea
    shortcut: str = ""  # the key of its first stage view
    stage: tuple[StageEntry, ...] = ()  # its stage views (none given: one, named as the dock, with its title and key)
    eager: bool = False  # built with the window (the views every run shows), not on first show
    args: tuple[str, ...] = ()  # the DockHost's fields the factory takes (none: the host itself)
    scroll: str = ""  # "xy" / "y": the view in a scroll area (both ways / up and down): a short dock scrolls

    def entries(self) -> tuple[StageEntry, ...]:
        return self.stage or (StageEntry(self.name, self.title, self.shortcut),)


COSTS = QT_TRANSLATE_NOOP("docks", "Costs so far")
TEXT = QT_TRANSLATE_NOOP("docks", "Text (prompt = prefill, then one token per decode step)")
HEADS = QT_TRANSLATE_NOOP("docks", "All heads (selected layer)")
# every dock of the window: its view, its key, its stage views (the window's order)
DOCKS = [
    DockSpec(
        "costs",
        COSTS,
        "panels.costs:CostsPanel",
        Qt.DockWidgetArea.BottomDockWidgetArea,
        "C",
        eager=True,
        args=("session",),
        scroll="y",
    ),
    DockSpec(
        "text",
        TEXT,
        "panels.tokens:TokenStrip",
        Qt.DockWidgetArea.BottomDockWidgetArea,
        "T",
        (StageEntry("text", QT_TRANSLATE_NOOP("docks", "Text"), "T"),),
        eager=True,
        args=("session",),
        scroll="y",
    ),
    DockSpec("heads", HEADS, "lanes.overview:HeadsOverview", shortcut="H", eager=True, args=("session", "derived")),
    DockSpec(
        "memory",
        QT_TRANSLATE_NOOP("docks", "Memory: the KV cache bill"),
        "docks.memory.dock:MemoryDock",
        shortcut="M",
        stage=(
            StageEntry("memory", QT_TRANSLATE_NOOP("docks", "Memory: the KV cache bill"), "M", "bill"),
            StageEntry("memory-growth", QT_TRANSLATE_NOOP("docks", "Memory: context 1k → 1M"), "G", "growth"),
        ),
    ),
    DockSpec(
        "roofline",
        QT_TRANSLATE_NOOP("docks", "Roofline: compute-bound or memory-bound"),
        "docks.roofline.dock:RooflineView",
        shortcut="R",
    ),
    DockSpec(
        "requests",
        QT_TRANSLATE_NOOP("docks", "Requests: paged blocks and prefix caching"),
        "docks.requests.dock:RequestsView",
        shortcut="B",
        stage=(
            StageEntry("requests", QT_TRANSLATE_NOOP("docks", "Requests: paged blocks"), "B", "blocks"),
            StageEntry("offon", QT_TRANSLATE_NOOP("docks", "Requests: prefix caching off vs on"), "O", "numbers"),
            StageEntry("batching", QT_TRANSLATE_NOOP("docks", "Requests: continuous batching"), "Q", "timeline"),
        ),
    ),
]
EXTRA_DOCKS = [spec for spec in DOCKS if not spec.eager]  # built the first time they are shown


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
    derived: Any = None  # the lanes' derived images (the all-heads view reads them)
    extras: dict[str, Any] = field(default_factory=dict)

    def submit(self, fn: Callable[[Any], Any], done: Callable[[Any], None], failed: Callable[[str], None] | None = None) -> bool:
        return self.jobs.submit(fn, done, failed or (lambda message: self.say(message, True)))


class LazyDock(QDockWidget):
    """A dock whose widget is built on first show (or with the window: ``spec.eager``)."""

    def __init__(self, spec: DockSpec, host: DockHost, parent: QWidget | None = None) -> None:
        super().__init__(translate("docks", spec.title), parent)
        self.spec, self.host = spec, host
        # the view the spec's factory builds: each dock's own class, read by what knows it (the window reads
        # the costs, text and heads views; the stage asks any view for set_staged / show_part)
        self.view: Any = None
        self.holder: QWidget | None = None  # the view, or the scroll area around it: what the dock (or the stage) holds
        self.setObjectName(spec.name)
        self.setFeatures(
            QDockWidget.DockWidgetFeature.DockWidgetMovable
            | QDockWidget.DockWidgetFeature.DockWidgetFloatable
            | QDockWidget.DockWidgetFeature.DockWidgetClosable
        )
        self.setWidget(QLabel("…"))
        self.visibilityChanged.connect(self._on_visible)
        if spec.eager:
            self.build()

    def _on_visible(self, visible: bool) -> None:
        if visible and self.view is None:
            self.build()

    def build(self) -> QWidget:
        if self.view is None:
            spec = self.spec
            factory = spec.factory
            if isinstance(factory, str):
                module, cls = factory.split(":")
                factory = getattr(importlib.import_module(f".{module}", UI_PACKAGE), cls)
            self.view = factory(*[getattr(self.host, a) for a in spec.args]) if spec.args else factory(self.host)
            self.holder = self.view if not spec.scroll else _scrolled(self.view, spec.scroll)
            if not self.property("staged"):  # on the stage, the stage holds it
                self.setWidget(self.holder)
        return self.view


def _scrolled(view: QWidget, how: str) -> QScrollArea:
    """``view`` in a scroll area that fills the space it gets and scrolls only below the view's own minimum."""
    area = QScrollArea()
    area.setWidgetResizable(True)
    area.setFrameShape(QFrame.Shape.NoFrame)
    if how == "y":
        area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    area.setWidget(view)
    return area


def install(window: QMainWindow, host: DockHost, menu) -> dict[str, LazyDock]:
    """Add every dock: the eager ones where a fresh window shows them (costs above text at the bottom,
    all heads on the right, hidden), the lazy ones hidden and tabbed together on the right; a menu
    entry shows each (``menu`` None: the window's ☰ → Views lists their keys instead, ``stage.install_keys``)."""
    made: dict[str, LazyDock] = {}
    first = None
    for spec in DOCKS:
        dock = LazyDock(spec, host, window)
        window.addDockWidget(spec.area, dock)
        if not spec.eager:
            if first is not None:
                window.tabifyDockWidget(first, dock)
            first = first or dock
            dock.setVisible(False)
        if menu is not None:
            menu.addAction(dock.toggleViewAction())
        made[spec.name] = dock
    return made
