"""The lanes, side by side: one panel per shown lane of the run, built from the session's lane
descriptions; any lane can be hidden (a hidden lane still runs, it is only not drawn).

Panels are built lazily, because one costs ~60–100 ms of the GUI thread (three pyqtgraph plots):

* a new run whose lanes differ re-targets the panels that exist (panel i shows lane i: its colour
  is the lane's index, so only its header changes) instead of destroying and rebuilding them;
* a lane that opens hidden (beyond the first ``MAX_SHOWN_LANES``, or hidden by the user) gets no
  panel until it is first shown (the Lanes menu, ``show_lane``);
* missing panels are built inside the run's start only until ``SYNC_BUILDS`` panels exist (a run
  of one or two lanes is drawn at once, as before); every other one is built one per turn of the
  event loop, so opening a run with many lanes never freezes the window.

``panels`` is the list of built panels in lane order (the shown ones, and hidden ones that were
shown once); ``panel(index)`` is lane ``index``'s panel or None; ``pending`` says whether panels
are still to be built (``settle()`` builds them at once, for tests and screenshots).
"""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QLabel, QMenu, QSplitter

from .. import theme
from ..i18n import translate
from . import policy_text
from .view import LanePanel

MAX_SHOWN_LANES = 4  # more lanes than this open hidden (the Lanes menu shows any of them)
LANES_MIN_HEIGHT = 180  # header, a readable K/V/attention area (~8 rows) and the readout
SYNC_BUILDS = 2  # panels that exist as soon as a run starts; more are built one per event-loop turn


class LaneArea(QSplitter):
    hovered = Signal(int)
    pointed = Signal(str)

    def __init__(self, session, derived, parent=None) -> None:
        super().__init__(Qt.Orientation.Horizontal, parent)
        self.session, self.derived = session, derived
        self.setChildrenCollapsible(False)
        self.setMinimumHeight(LANES_MIN_HEIGHT)  # a short window shrinks the docks, never the lanes below this
        self.panels: list[LanePanel] = []
        self.hidden: set[str] = set()
        self.selection = (0, 0)
        self._hover = -1
        self.menu = QMenu(translate("views.lane_area", "Lanes"))
        self._lanes: list = []  # the lanes the area was built for
        self._actions: dict[str, QAction] = {}
        self.last_rebuild_ms = 0.0  # what the last new run's lanes cost the GUI thread here (tests, benchmarks)
        self._pending: list[int] = []  # lane indices to show whose panel is not built yet
        self._build_soon = QTimer(self)
        self._build_soon.setSingleShot(True)
        self._build_soon.setInterval(0)
        self._build_soon.timeout.connect(self._build_next)
        self.placeholder: QLabel | None = QLabel(translate("views.lane_area", "loading the model …"))
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.placeholder.setStyleSheet(f"color: {theme.MUTED}; font-size: 20pt;")
        self.addWidget(self.placeholder)
        # connected before any panel exists, so the panels match a new run before they draw it
        session.run_started.connect(self.rebuild)

    # ------------------------------------------------------------------ building
    def _wanted(self, lane) -> bool:
        return lane.name not in self.hidden and lane.index < MAX_SHOWN_LANES

    def rebuild(self) -> None:
        lanes = list(self.session.lanes)
        if lanes == self._lanes:
            return
        t0 = time.perf_counter()
        self._lanes = lanes
        if self.placeholder is not None:
            self.placeholder.hide()
            self.placeholder.deleteLater()
            self.placeholder = None
        keep: list[LanePanel] = []
        for p in self.panels:
            if p.index < len(lanes) and self._wanted(lanes[p.index]):
                _retarget(p, lanes[p.index])
                p.setVisible(True)
                keep.append(p)
            else:
                _destroy(p)
        self.panels = keep
        built = {p.index for p in keep}
        self._pending = [lane.index for lane in lanes if self._wanted(lane) and lane.index not in built]
        while self._pending and len(self.panels) < SYNC_BUILDS:
            self._build(self._pending.pop(0), redraw=False)  # the run's cursor_moved marks it for drawing
        if self._pending:
            self._build_soon.start()
        else:
            self._build_soon.stop()
        self._fill_menu()
        self.last_rebuild_ms = (time.perf_counter() - t0) * 1000.0

    def _fill_menu(self) -> None:
        self.menu.clear()
        self._actions = {}
        for lane in self._lanes:
            # the label tells the run's lanes apart (with the spec where the title does not): no spec after it
            action = self.menu.addAction(policy_text.lane_label(self.session, lane.index))
            action.setCheckable(True)
            action.setChecked(self._wanted(lane))
            action.toggled.connect(lambda on, name=lane.name: self.show_lane(name, on))
            self._actions[lane.name] = action

    def _build(self, index: int, redraw: bool = True) -> LanePanel:
        panel = LanePanel(self.session, self.derived, index)
        at = sum(1 for p in self.panels if p.index < index)
        after = self.panels[at] if at < len(self.panels) else None  # the splitter may still hold dropped panels
        self.insertWidget(self.indexOf(after) if after is not None else self.count(), panel)
        self.panels.insert(at, panel)
        panel.hovered.connect(self.hovered)
        panel.pointed.connect(self.pointed)
        panel.set_selection(*self.selection)
        panel.set_hovered(self._hover)
        if redraw:
            panel.redraw()
        return panel

    def _build_next(self) -> None:
        """One deferred panel per event-loop turn (a lane shown since is built already)."""
        while self._pending:
            index = self._pending.pop(0)
            if index < len(self._lanes) and self.panel(index) is None and self._wanted(self._lanes[index]):
                self._build(index)
                break
        if self._pending:
            self._build_soon.start()

    @property
    def pending(self) -> bool:
        return bool(self._pending)

    def settle(self) -> None:
        """Build every panel still waiting for its turn (tests, screenshots)."""
        self._build_soon.stop()
        while self._pending:
            self._build_next()
        self._build_soon.stop()

    def refit_readouts(self) -> None:
        """At rest (not playing, no step animating): every shown lane's readout measured afresh, so a
        long readout of an earlier step no longer takes room from the tables."""
        for p in self.shown():  # each sets the shared height; the last one's is the max of all fresh needs
            p.refit_readout()

    # ------------------------------------------------------------------ reading
    def panel(self, index: int) -> LanePanel | None:
        """Lane ``index``'s panel, or None when it was never shown."""
        return next((p for p in self.panels if p.index == index), None)

    def shown(self) -> list[LanePanel]:
        return [p for p in self.panels if not p.isHidden()]

    # ------------------------------------------------------------------ changes
    def show_lane(self, name: str, visible: bool = True) -> None:
        (self.hidden.discard if visible else self.hidden.add)(name)
        index = self.session.lane_index(name)
        if index is not None and index < len(self._lanes):
            p = self.panel(index)
            if visible and p is None:
                if index in self._pending:
                    self._pending.remove(index)
                p = self._build(index)
            elif p is not None and p.isHidden() == visible:
                p.setVisible(visible)
                if visible:
                    p.redraw()
            if not visible and index in self._pending:
                self._pending.remove(index)
        action = self._actions.get(name)
        if action is not None and action.isChecked() != visible:
            action.blockSignals(True)
            action.setChecked(visible)
            action.blockSignals(False)

    def set_selection(self, layer: int, head: int) -> None:
        self.selection = (layer, head)
        for p in self.panels:
            p.set_selection(layer, head)

    def set_hovered(self, position: int) -> None:
        self._hover = position
        for p in self.panels:
            p.set_hovered(position)


def _retarget(panel: LanePanel, lane) -> None:
    """Panel ``panel`` (already lane ``lane.index``'s place and colour) now shows ``lane``: its
    description and header; the images follow from the session when the run draws."""
    panel.set_lane(lane)


def _destroy(panel: LanePanel) -> None:
    """Drop a panel: it stops listening, hides, and is deleted by the event loop (never re-parented to
    None: that makes it a top-level window for a moment, native window and all)."""
    panel.detach()
    panel.hide()
    panel.deleteLater()
