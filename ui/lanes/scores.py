"""A lane that evicts by attention (h2o, tova, snapkv): what its records say it held and dropped.

* ``ScoreBars`` — beside K (over K's right edge), each held row's score as a bar, for the drawn layer
  and the KV head of the drawn query head; the rows dropped this step struck through in the error
  colour, and why in words ("lowest accumulated score", "outside the recent window", …).
* ``HeldRowsStrip`` — under the all-heads view: one row per KV head of the selected layer, a cell per
  position, filled where that head holds the row (heads may hold different rows), struck where it
  dropped it this step.

Both only draw what the lane's ``LaneStep.held`` and ``evict_reason`` recorded; nothing is recomputed.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor, QFont, QFontMetrics

from .. import theme
from ..i18n import translate
from .attention import kv_head_of


def reason_text(reason: str) -> str:
    """The words for a recorded ``evict_reason`` ("" when nothing was dropped)."""
    words = {
        "lowest_accumulated_score": translate("views.scores", "lowest accumulated score"),
        "lowest_current_attention": translate("views.scores", "read least by the newest query"),
        "outside_recent_window": translate("views.scores", "outside the recent window"),
        "compressed_at_prefill": translate("views.scores", "compressed at prefill"),
    }
    return words.get(reason, reason)


def dropped_count(count: int) -> str:
    return translate("views.scores", "{count} dropped").format(count=count)


def dropped_text(count: int, reason: str) -> str:
    return translate("views.scores", "{count} dropped: {why}").format(count=count, why=reason_text(reason))


class ScoreBars:
    """Score bars and evicted rows over one lane panel's K plot (``plot``: an ``ImagePlot``)."""

    SHARE = 0.45  # of K's width, the longest bar

    def __init__(self, plot) -> None:
        self.plot = plot
        self.bars = pg.BarGraphItem(x0=[], y0=[], width=[], height=[])
        self.struck = pg.BarGraphItem(x0=[], y0=[], width=[], height=[])
        self.label = pg.TextItem("", anchor=(0, 1))
        for item, z in ((self.bars, 12), (self.struck, 13), (self.label, 21)):
            item.setZValue(z)
            item.setVisible(False)
            plot.vb.addItem(item, ignoreBounds=True)
        self.bars.setToolTip(
            translate(
                "views.scores",
                "bars: each held row's score, the attention the policy ranks it by; struck rows: dropped after this step",
            )
        )
        self.values: dict[int, float] = {}  # position → the drawn bar's score (tests read these)
        self.evicted: np.ndarray = np.zeros(0, dtype=np.int64)  # positions drawn struck through
        self.reason = ""  # the words for why they were dropped
        self.text = ""  # what the label over them says (the reason, or the count alone where K is narrow)

    def clear(self) -> None:
        self.values, self.evicted, self.reason, self.text = {}, np.zeros(0, dtype=np.int64), "", ""
        for item in (self.bars, self.struck, self.label):
            item.setVisible(False)

    def show(self, lane_step, cfg, layer: int, head: int, lo: int, hi: int, width: float) -> None:
        """Draw ``lane_step``'s recorded scores and evictions of ``layer`` and ``head``'s KV head, rows lo..hi-1."""
        held = getattr(lane_step, "held", None)
        if held is None or hi <= lo:
            self.clear()
            return
        g = kv_head_of(head, cfg.n_heads, cfg.n_kv_heads)
        positions, scores = held.positions[layer, g], held.scores[layer, g].astype(np.float64)
        inside = (positions >= lo) & (positions < hi)
        top = float(scores.max()) if scores.size and float(scores.max()) > 0 else 1.0
        pos, val = positions[inside], scores[inside]
        self.values = {int(p): float(s) for p, s in zip(pos, val, strict=True)}
        lengths = np.clip(val / top, 0.0, 1.0) * width * self.SHARE
        fill = QColor(theme.TEXT)
        fill.setAlpha(170)
        self.bars.setOpts(
            x0=width - lengths, y0=pos + 0.15, width=lengths, height=np.full(pos.size, 0.7), brush=fill, pen=pg.mkPen(None)
        )
        self.bars.setVisible(bool(pos.size))
        gone = held.evicted[layer, g]
        self.evicted = gone[(gone >= lo) & (gone < hi)]
        self.reason = reason_text(lane_step.evict_reason) if gone.size else ""
        self.struck.setOpts(
            x0=np.zeros(self.evicted.size),
            y0=self.evicted + 0.4,
            width=np.full(self.evicted.size, width),
            height=np.full(self.evicted.size, 0.2),
            brush=QColor(theme.ERROR),
            pen=pg.mkPen(None),
        )
        self.struck.setVisible(bool(self.evicted.size))
        if self.evicted.size:
            # the whole sentence where K is wide enough, else the count alone (the tooltip says why)
            forms = (dropped_text(int(gone.size), lane_step.evict_reason), dropped_count(int(gone.size)))
            fm = QFontMetrics(QFont())
            room = self.plot.vb.width() - 8
            self.text = next((f for f in forms if fm.horizontalAdvance(f) <= room), "")
            self.label.setText(self.text, color=theme.ERROR)
            fill_bg = QColor(theme.BG)
            fill_bg.setAlpha(200)
            self.label.fill = pg.mkBrush(fill_bg)
            self.label.setPos(0, float(self.evicted[0]))
            self.label.setVisible(bool(self.text))
            self.struck.setToolTip(forms[0])
        else:
            self.text = ""
            self.label.setVisible(False)


class HeldRowsStrip:
    """Under the all-heads view: which positions each KV head of the selected layer holds (one lane's)."""

    def __init__(self, layout: pg.GraphicsLayoutWidget, row: int, cols: int) -> None:
        self.title = layout.addLabel("", row=row, col=0, colspan=cols, size="11pt", color=theme.MUTED)
        self.plot = layout.addPlot(row=row + 1, col=0, colspan=cols)
        p = self.plot
        p.setMenuEnabled(False)
        p.hideButtons()
        p.setMouseEnabled(False, False)
        p.invertY(True)
        p.hideAxis("bottom")
        p.hideAxis("left")
        p.setMaximumHeight(120)
        self.image = pg.ImageItem(axisOrder="row-major")
        p.addItem(self.image)
        self.lane = -1  # the lane drawn (-1: none of the run evicts by attention)
        self.rows: list[list[int]] = []  # per KV head, the positions drawn held (tests read these)
        self.dropped: list[list[int]] = []  # per KV head, the positions drawn dropped this step

    @staticmethod
    def lane_of(session) -> int:
        """The first lane whose records hold rows per KV head, else -1."""
        r = session.record()
        if r is None:
            return -1
        return next((i for i, lane in enumerate(r.lanes) if getattr(lane, "held", None) is not None), -1)

    def redraw(self, session, layer: int) -> None:
        lane = self.lane_of(session)
        self.lane = lane
        if lane < 0:
            self.rows, self.dropped = [], []
            self.title.setText("")
            self.plot.setVisible(False)
            return
        r = session.record()
        step = r.lanes[lane]
        held = step.held
        layer = min(layer, held.positions.shape[0] - 1)
        n = r.n_tokens
        hkv = held.positions.shape[1]
        img = np.zeros((hkv, n, 4), dtype=np.uint8)  # transparent: not held
        self.rows, self.dropped = [], []
        for g in range(hkv):
            c = QColor(theme.group_color(g))
            pos = held.positions[layer, g]
            img[g, pos] = (c.red(), c.green(), c.blue(), 255)
            gone = held.evicted[layer, g]
            e = QColor(theme.ERROR)
            img[g, gone] = (e.red(), e.green(), e.blue(), 255)
            self.rows.append([int(p) for p in pos])
            self.dropped.append([int(p) for p in gone])
        self.image.setImage(img, levels=(0, 255), autoLevels=False)
        self.image.setRect(QRectF(0, 0, n, hkv))
        self.plot.setRange(xRange=(0, n), yRange=(0, hkv), padding=0)
        name = session.lanes[lane].name
        self.title.setText(
            translate("views.scores", "rows each K/V head holds · {lane} · layer {layer}").format(lane=name, layer=layer),
            color=theme.MUTED,
        )
        self.title.setMinimumWidth(0)  # a long title never widens the view (it is cut; the tooltip has it all)
        why = dropped_text(len(self.dropped[0]), step.evict_reason) if self.dropped and self.dropped[0] else ""
        tip = translate(
            "views.scores",
            "one row per K/V head, top to bottom; a cell per position:\n"
            "filled where that head holds the row, red where it dropped it this step",
        )
        self.plot.setToolTip(f"{tip}\n{why}" if why else tip)
        self.plot.setVisible(True)
