"""The lanes, side by side: one panel per lane of the run, built from the session's lane
descriptions; any lane can be hidden (a hidden lane still runs, it is only not drawn)."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QMenu, QSplitter

from .. import theme
from .lanes import LanePanel

MAX_SHOWN_LANES = 4  # more lanes than this open hidden (the Lanes menu shows any of them)


class LaneArea(QSplitter):
    hovered = Signal(int)
    pointed = Signal(str)

    def __init__(self, session, derived, parent=None) -> None:
        super().__init__(Qt.Horizontal, parent)
        self.session, self.derived = session, derived
        self.setChildrenCollapsible(False)
        self.panels: list[LanePanel] = []
        self.hidden: set[str] = set()
        self.selection = (0, 0)
        self.menu = QMenu("Lanes")
        self.placeholder: QLabel | None = QLabel("loading the model …")
        self.placeholder.setAlignment(Qt.AlignCenter)
        self.placeholder.setStyleSheet(f"color: {theme.MUTED}; font-size: 20pt;")
        self.addWidget(self.placeholder)
        # connected before any panel exists, so the panels match a new run before they draw it
        session.run_started.connect(self.rebuild)

    def rebuild(self) -> None:
        lanes = self.session.lanes
        if [p.info for p in self.panels] == lanes:
            return
        for p in self.panels:
            p.detach()
            p.setParent(None)
            p.deleteLater()
        if self.placeholder is not None:
            self.placeholder.setParent(None)
            self.placeholder.deleteLater()
            self.placeholder = None
        self.panels = []
        self.menu.clear()
        for lane in lanes:
            panel = LanePanel(self.session, self.derived, lane.index)
            self.addWidget(panel)
            panel.hovered.connect(self.hovered)
            panel.pointed.connect(self.pointed)
            panel.set_selection(*self.selection)
            panel.setVisible(lane.name not in self.hidden and lane.index < MAX_SHOWN_LANES)
            self.panels.append(panel)
            action = self.menu.addAction(f"{self.session.lane_label(lane.index)} — {lane.name}")
            action.setCheckable(True)
            action.setChecked(not panel.isHidden())
            action.toggled.connect(lambda on, name=lane.name: self.show_lane(name, on))

    def show_lane(self, name: str, visible: bool = True) -> None:
        (self.hidden.discard if visible else self.hidden.add)(name)
        for p in self.panels:
            if p.info.name == name and p.isHidden() == visible:
                p.setVisible(visible)
                if visible:
                    p.redraw()

    def shown(self) -> list[LanePanel]:
        return [p for p in self.panels if not p.isHidden()]

    def set_selection(self, layer: int, head: int) -> None:
        self.selection = (layer, head)
        for p in self.panels:
            p.set_selection(layer, head)

    def set_hovered(self, position: int) -> None:
        for p in self.panels:
            p.set_hovered(position)
