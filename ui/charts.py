"""Bottom panel: what the run has cost so far, both lanes on the same axes.

Cumulative K/V rows (Σt = n(n+1)/2 without a cache, n with one), cumulative FLOPs, measured time
per step, and the figures a lecture quotes: cache bytes, TTFT, ITL. Everything is read from the
session's per-lane counters up to the cursor; curves are created once and fed with setData.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from . import theme


class SIAxis(pg.AxisItem):
    """Left axis with k / M / G / T tick labels (FLOPs reach 1e12 quickly)."""

    def tickStrings(self, values, scale, spacing):  # noqa: N802 - pyqtgraph API
        if self.logMode:
            return [theme.human_count(10 ** v).strip() for v in values]
        return [theme.human_count(v).strip() for v in values]


class CostsPanel(QWidget):
    def __init__(self, session, parent=None) -> None:
        super().__init__(parent)
        self.session = session
        self.log = False
        lay = QHBoxLayout(self)
        lay.setContentsMargins(4, 2, 4, 2)
        self.glw = pg.GraphicsLayoutWidget()
        self.glw.ci.setContentsMargins(0, 0, 0, 0)
        font = QFont(self.font())
        self.plots, self.curves = [], {}
        titles = ("K/V rows computed (cumulative)", "FLOPs (cumulative)", "time per step (ms, measured)")
        for col, title in enumerate(titles):
            p = self.glw.addPlot(row=0, col=col, axisItems={"left": SIAxis("left")})
            p.setTitle(title, color=theme.MUTED, size="12pt")
            p.setMenuEnabled(False)
            p.hideButtons()
            p.setMouseEnabled(False, False)
            p.showGrid(x=True, y=True, alpha=0.15)
            p.getAxis("bottom").setLabel("step", color=theme.MUTED)
            for ax in ("left", "bottom"):
                p.getAxis(ax).setTickFont(font)
            p.setClipToView(True)
            p.setDownsampling(auto=True, mode="peak")
            self.plots.append(p)
        self.plots[0].addLegend(offset=(8, 4), labelTextSize="11pt", brush=pg.mkBrush(18, 20, 24, 200))
        lay.addWidget(self.glw, 1)

        side = QVBoxLayout()
        self.stats = QLabel()
        self.stats.setTextFormat(Qt.RichText)
        self.stats.setMinimumWidth(250)
        self.stats.setAlignment(Qt.AlignTop | Qt.AlignLeft)
        side.addWidget(self.stats, 1)
        self.log_box = QCheckBox("log scale")
        self.log_box.toggled.connect(self.set_log)
        side.addWidget(self.log_box)
        lay.addLayout(side)

        session.run_started.connect(self._rebuild)
        self.dirty = False
        session.cursor_moved.connect(self._mark)

    def _mark(self, _step: int) -> None:
        self.dirty = True  # redrawn on flush(): the window staggers it one frame after the lanes

    def flush(self) -> None:
        if self.dirty:
            self.redraw()

    def _rebuild(self) -> None:
        for p in self.plots:
            for item in list(p.listDataItems()):
                p.removeItem(item)
        legend = self.plots[0].legend
        if legend is not None:
            legend.clear()
        self.curves = {}
        for name in self.session.lane_names:
            color = theme.lane_color(name)
            pen = pg.mkPen(color, width=3)
            self.curves[name] = [
                self.plots[0].plot([], [], pen=pen, name=theme.lane_title(name), skipFiniteCheck=True),
                self.plots[1].plot([], [], pen=pen, skipFiniteCheck=True),
                self.plots[2].plot([], [], pen=pg.mkPen(color, width=2), skipFiniteCheck=True),
            ]
        self.redraw()

    def set_log(self, on: bool) -> None:
        self.log = bool(on)
        for p in self.plots:
            p.setLogMode(x=False, y=self.log)
        self.redraw()

    def redraw(self) -> None:
        self.dirty = False
        s = self.session
        if s.run is None:
            return
        k = s.cursor + 1
        x = np.arange(k, dtype=np.float64)
        for name, (rows_c, flops_c, time_c) in self.curves.items():
            rows_c.setData(x, np.asarray(s.cum_rows[name][:k], dtype=np.float64))
            flops_c.setData(x, np.asarray(s.cum_flops[name][:k], dtype=np.float64))
            time_c.setData(x, np.asarray(s.wall_ms[name][:k], dtype=np.float64))
        for p in self.plots:
            p.enableAutoRange()
        self._stats()

    def _stats(self) -> None:
        s = self.session
        r = s.record()
        if r is None:
            self.stats.setText(f"<span style='color:{theme.MUTED}'>no steps yet</span>")
            return
        names = s.lane_names
        head = "".join(f"<th align=right style='color:{theme.lane_color(n)}'>&nbsp;{theme.lane_title(n)}</th>"
                       for n in names)
        rows = {n: s.cumulative(n)[0] for n in names}
        ttft_itl = {n: s.ttft_itl(n) for n in names}

        def ms(v):
            return "–" if v is None else (f"{v:.1f} ms" if v >= 10 else f"{v:.2f} ms")

        lines = [("TTFT", [ms(ttft_itl[n][0]) for n in names]),
                 ("ITL", [ms(ttft_itl[n][1]) for n in names]),
                 ("K/V rows", [f"{rows[n]:,}" for n in names]),
                 ("cache", [theme.human_bytes(r.lane(n).cache_bytes) for n in names])]
        body = "".join(f"<tr><td style='color:{theme.MUTED}'>{label}</td>" +
                       "".join(f"<td align=right>&nbsp;{v}</td>" for v in values) + "</tr>" for label, values in lines)
        ratio = ""
        if len(rows) == 2 and min(rows.values()) > 0:
            ratio = f"<div style='color:{theme.ACCENT}'>{max(rows.values()) / min(rows.values()):.1f}× the K/V rows</div>"
        self.stats.setText(f"<table cellspacing=0 cellpadding=1><tr><th></th>{head}</tr>{body}</table>{ratio}")
