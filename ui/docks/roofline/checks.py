"""A speculative lane's verification steps on the roofline: a step whose forward checked drafted tokens
is its own point (a star, labelled), because it computes k+1 rows for about the cost of one weight read —
its arithmetic intensity is higher than a plain decode step's. The figures are the recorded ones
(``LaneStep.drafted``, its FLOPs and bytes); this module only picks and words them."""

from __future__ import annotations

import pyqtgraph as pg

from kvsim.costs.roofline import RooflinePoint

from ... import theme
from ...i18n import translate
from .plot import log10

CHECK = "check"  # the group phase of a verification step's points
CHECK_SYMBOL = "star"


def checked(session, p: RooflinePoint) -> int:
    """How many drafted tokens the point's step checked in its forward (0: not a verification step)."""
    r = session.record(p.step)
    if r is None or p.lane >= len(r.lanes):
        return 0
    lane = r.lanes[p.lane]
    return int(lane.drafted) if p.phase == "decode" and lane.forwards else 0


def group_phase(session, p: RooflinePoint) -> str:
    """The point's scatter group: ``check`` for a verification step, else its phase."""
    return CHECK if checked(session, p) else p.phase


def label_text(session, p: RooflinePoint) -> str:
    """The words beside a verification point: its rows for one weight read."""
    drafted = checked(session, p)
    return translate("views.roofline", "check: {rows} rows ({k} drafts), one weight read").format(
        rows=p.new_positions + drafted, k=drafted
    )


class CheckLabels:
    """One label per speculative lane, beside its latest verification point at or before the cursor."""

    def __init__(self, plot) -> None:
        self.plot = plot
        self.items: dict[int, pg.TextItem] = {}
        self.placed: dict[int, RooflinePoint] = {}  # lane -> the point its label is beside (tests)

    def update(self, session, shown: list[RooflinePoint]) -> None:
        cursor = session.cursor
        latest: dict[int, RooflinePoint] = {}
        order = {"total": 0, "linear": 1, "attention": 2}
        for p in shown:
            if p.step > cursor or not checked(session, p):
                continue
            best = latest.get(p.lane)
            if best is None or (p.step, -order.get(p.component, 3)) > (best.step, -order.get(best.component, 3)):
                latest[p.lane] = p
        for lane in set(self.items) - set(latest):
            self.items[lane].setVisible(False)
        self.placed = latest
        for lane, p in latest.items():
            item = self.items.get(lane)
            if item is None:
                item = pg.TextItem("", color=theme.lane_color(lane), anchor=(0, 1))
                item.setZValue(30)
                self.plot.addItem(item, ignoreBounds=True)
                self.items[lane] = item
            item.setText(" " + label_text(session, p))
            item.setColor(theme.lane_color(lane))
            item.setPos(float(log10([p.intensity])[0]), float(log10([p.achieved])[0]))
            item.setVisible(True)
