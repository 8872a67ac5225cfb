"""The stage (small screens and presenter mode): one view fills the window at a time — the lanes, or
one dock's view (costs, text, all heads, memory, roofline, requests' blocks or off-vs-on) — switched
by keys a keyboard or a clicker reaches (each view's letter; Page Down / Page Up step through them
when the lesson is not shown).

The stage re-parents the docks' own widgets into one ``QStackedWidget`` in the central area (no second
copies) and gives them back when the window leaves the stage. It is used automatically when the window
is smaller than ``STAGE_BELOW`` (logical pixels: 1280×720 at ``--scale 1.5`` is 853×480, 1024×768 is
1024×768), always in presenter mode, and on request (S). The views come from ``docks/registry.py``:
a dock declared there is on the stage without touching this file.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QLabel, QMainWindow, QStackedWidget, QWidget

from kvsim.core.words import QT_TRANSLATE_NOOP  # typed str, found by pyside6-lupdate as Qt's

from ..docks.registry import LazyDock, StageEntry
from ..i18n import translate

# below this size (logical pixels) the window is a stage: measured with tests/stage_probe.py's
# "desktop" mode (the docks forced), the default layout and the memory dock show without a cut at
# 1366×768 and 1440×900; at 1280×720 ×1.5 (853×480) and 1024×768 the docks cut the lanes and each
# other; 1280×720 at ×1 keeps the desktop's compact layout (costs and text tabbed), as before
STAGE_BELOW = QSize(1100, 720)
LANES = StageEntry("lanes", QT_TRANSLATE_NOOP("window", "Lanes only"), "F")


def wanted(size: QSize) -> bool:
    """True when a window of ``size`` (logical pixels) is too small for the docks."""
    return size.width() < STAGE_BELOW.width() or size.height() < STAGE_BELOW.height()


class Stage(QObject):
    changed = Signal(bool)  # on the stage, or back to the docks
    view_changed = Signal(str)  # the stage view now shown

    def __init__(
        self, window: QMainWindow, lanes_page: QWidget, docks: dict[str, LazyDock], lanes_only: Callable[[], object]
    ) -> None:
        """``lanes_only``: the window's F key on the desktop layout (the costs and text docks hidden or back)."""
        super().__init__(window)
        self.window = window
        self.lanes_page = lanes_page
        self.lanes_only = lanes_only
        self.active = False
        self.stack = QStackedWidget()
        self.stack.setObjectName("stage")
        self.stack.addWidget(lanes_page)
        self.entries: dict[str, tuple[StageEntry, LazyDock | None]] = {LANES.name: (LANES, None)}
        for dock in docks.values():
            for entry in dock.spec.entries():
                self.entries[entry.name] = (entry, dock)
            dock.visibilityChanged.connect(lambda shown, d=dock: self._dock_shown(d) if shown and self.active else None)
        self.docks = docks
        self.forced: bool | None = None  # None: automatic (the window's size decides)
        self.presenting = False
        self.lesson_on = False  # the lesson's band is shown: on the stage the toolbars step aside for it
        self.current = LANES.name
        self._said = ""  # the last message the stage put in the status bar (it says again when the view changes under it)
        self._visible_before: dict[str, bool] = {}
        self.actions: dict[str, QAction] = {}

    # ------------------------------------------------------------------ when
    def update(self) -> None:
        """Enter or leave the stage as presenter mode, the S key and the window's size say."""
        want = self.presenting or (self.forced if self.forced is not None else wanted(self.window.size()))
        if want and not self.active:
            self.enter()
        elif not want and self.active:
            self.leave()

    def set_presenting(self, on: bool) -> None:
        self.presenting = on
        self.update()

    def set_lesson(self, on: bool) -> None:
        self.lesson_on = on
        self._bars()

    def _bars(self) -> None:
        """On the stage with the lesson shown, the lesson drives the state (its keys still work): the two
        toolbars make room for its band. Presenter mode keeps its own say over them."""
        if self.presenting:
            return
        tb = getattr(self.window, "toolbar", None)
        if tb is not None:
            for bar in (tb, tb.more):
                bar.setVisible(not (self.active and self.lesson_on))

    def toggle_forced(self) -> None:
        self.forced = not self.active
        self.update()
        self.say()

    def enter(self) -> None:
        self._visible_before = {name: d.isVisible() for name, d in self.docks.items()}
        self.active = True
        for d in self.docks.values():
            d.setVisible(False)
        self.show(self.current)
        self._bars()
        self.changed.emit(True)

    def leave(self) -> None:
        self.active = False
        for dock in self.docks.values():
            holder = dock.holder
            if holder is not None and self.stack.indexOf(holder) >= 0:
                self.stack.removeWidget(holder)
                old = dock.widget()
                dock.setWidget(holder)
                holder.show()
                if hasattr(dock.view, "set_staged"):
                    dock.view.set_staged(False)
                if old is not holder and old is not None:
                    old.deleteLater()
            dock.setProperty("staged", False)
        self.stack.setCurrentWidget(self.lanes_page)
        for name, shown in self._visible_before.items():
            self.docks[name].setVisible(shown)
        self._bars()
        self.changed.emit(False)

    # ------------------------------------------------------------------ which view
    def page(self, name: str) -> QWidget:
        """The widget that fills the stage for view ``name`` (a dock's view, taken from its dock)."""
        entry, dock = self.entries[name]
        if dock is None:
            return self.lanes_page
        dock.setProperty("staged", True)
        dock.build()
        holder = dock.holder
        assert holder is not None  # build() made it
        if self.stack.indexOf(holder) < 0:
            if dock.widget() is holder:
                dock.setWidget(QLabel("…"))  # the dock keeps a placeholder while the stage holds its view
            self.stack.addWidget(holder)
            if hasattr(dock.view, "set_staged"):
                dock.view.set_staged(True)  # a view may arrange itself for the whole window
        return holder

    def show(self, name: str) -> None:
        """Show view ``name`` on the stage (on the desktop layout: its dock, raised)."""
        if name not in self.entries:
            return
        entry, dock = self.entries[name]
        if not self.active:
            if dock is not None:
                dock.setVisible(True)
                dock.raise_()
            self._select_part(entry, dock)
            return
        self.stack.setCurrentWidget(self.page(name))
        self._select_part(entry, dock)
        changed, self.current = name != self.current, name
        if changed and self._said and self.window.statusBar().currentMessage() == self._said:
            self.say()  # a view shown by the lesson, a demo, a menu: the bar never names the one before
        self.view_changed.emit(name)

    def current_page(self) -> QWidget:
        page = self.stack.currentWidget()
        return page if page is not None else self.lanes_page  # the stack always holds the lanes page

    def step(self, direction: int) -> None:
        names = list(self.entries)
        i = names.index(self.current) if self.current in names else 0
        self.show(names[(i + direction) % len(names)])
        self.say()

    def key(self, name: str) -> None:
        """A view's key: on the stage, show it; on the desktop layout, toggle its dock (F: lanes only)."""
        entry, dock = self.entries[name]
        if self.active:
            self.show(name)
            self.say()
        elif dock is None:
            self.lanes_only()
        elif dock.isVisible() and (not entry.part or getattr(dock.view, "part", entry.part) == entry.part):
            dock.setVisible(False)
        else:
            self.show(name)

    def say(self) -> None:
        from .layout import fitting

        bar = self.window.statusBar()
        if self.active:
            entry, _dock = self.entries[self.current]
            texts = [
                translate("stage", "stage: {view} · PgDn/PgUp or the view's key ({key}) · S: all docks"),
                translate("stage", "{view} ({key}) · PgDn/PgUp: the other views"),
                "{view} ({key})",
            ]
            text = fitting(bar, texts).format(view=self.words(entry), key=entry.key)
        else:
            text = translate("stage", "all docks (S: back to the stage, one view at a time)")
        bar.showMessage(text, 6000)
        self._said = text  # what the bar says of the stage, until another message replaces it

    @staticmethod
    def words(entry: StageEntry) -> str:
        return translate("window" if entry is LANES else "docks", entry.words)

    @staticmethod
    def _select_part(entry: StageEntry, dock: LazyDock | None) -> None:
        if entry.part and dock is not None and hasattr(dock.view, "show_part"):
            dock.view.show_part(entry.part)

    def _dock_shown(self, dock: LazyDock) -> None:
        """A dock asked to show while on the stage (the menu, the lesson, a head of "all"): its view
        fills the stage instead."""
        name = dock.spec.entries()[0].name

        def instead() -> None:
            if self.active:
                dock.setVisible(False)
                self.show(name)

        QTimer.singleShot(0, instead)

    # ------------------------------------------------------------------ keys
    def install_keys(self, window: QMainWindow, menu) -> list[QAction]:
        """One key per view (listed in the shortcut sheet), PgDn / PgUp (a clicker's buttons) through
        the views — or the lesson's steps while it is shown — and S for the stage itself."""
        made = []
        for name, (entry, _dock) in self.entries.items():
            if not entry.key:
                continue
            a = QAction(self.words(entry), window)
            a.setShortcut(QKeySequence(entry.key))
            a.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            a.triggered.connect(lambda _checked=False, name=name: self.key(name))
            self.actions[name] = a
            made.append(a)
        lesson = getattr(window, "lesson", None)
        for key, words, direction in (
            ("PgDown", QT_TRANSLATE_NOOP("stage", "Next lesson page or step, or the next view on the stage"), +1),
            ("PgUp", QT_TRANSLATE_NOOP("stage", "Previous lesson page or step, or the previous view on the stage"), -1),
        ):
            a = QAction(translate("stage", words), window)
            a.setShortcut(QKeySequence(key))
            a.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            a.triggered.connect(lambda _checked=False, d=direction: self._page_key(lesson, d))
            made.append(a)
        stage = QAction(translate("stage", "Stage: one view at a time (on / off)"), window)
        stage.setShortcut(QKeySequence("S"))
        stage.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        stage.triggered.connect(self.toggle_forced)
        made.append(stage)
        window.addActions(made)
        views = menu.addMenu(translate("stage", "Views"))
        views.addActions([a for a in made if a is not stage][: len(self.actions)])
        views.addSeparator()
        views.addAction(stage)
        return made

    def _page_key(self, lesson, direction: int) -> None:
        if lesson is not None and lesson.shown():
            (lesson.advance if direction > 0 else lesson.retreat)()  # its pages, then its steps
        elif self.active:
            self.step(direction)
