"""Bottom panel: what the run has cost so far, both lanes on the same axes.

Cumulative K/V rows (Σt = n(n+1)/2 without a cache, n with one), cumulative FLOPs, measured time
per step, and the figures a lecture quotes: cache bytes, TTFT, ITL. Everything is read from the
session's per-lane counters up to the cursor; curves are created once and fed with setData.
"""

from __future__ import annotations

from html import escape

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from kvsim.units import si

from .. import theme


def _nice(x: float) -> float:
    """The smallest of 1, 2, 5 × 10^k that is ≥ x."""
    if x <= 0:
        return 1.0
    e = 10 ** np.floor(np.log10(x))
    for m in (1, 2, 5, 10):
        if m * e >= x:
            return float(m * e)
    return float(10 * e)


class SIAxis(pg.AxisItem):
    """Left axis with k / M / G / T tick labels (FLOPs reach 1e12 quickly)."""

    def tickStrings(self, values, scale, spacing):  # noqa: N802 - pyqtgraph API
        return [_si(10**v if self.logMode else v) for v in values]


def _si(v: float) -> str:
    return si(v, ".3g")


def _short(session, lane) -> str:
    """A lane's name in a narrow column: its label, or its spec when the label is long."""
    label = session.lane_label(lane.index)
    return label if len(label) <= 12 else lane.name if len(lane.name) <= 12 else lane.name[:11] + "…"


SERIES = ("rows", "flops", "ms", "bytes")  # the plots, left to right (session.series names)
MAX_LEGEND = 4  # lanes named in the legend (more would cover the curves; the table names them all)


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
        self.plots, self.curves, self.bands = [], {}, {}
        # short titles: a title's width is its column's minimum, and four columns share the dock
        titles = ("K/V rows computed, Σ", "FLOPs, Σ", "time per step (ms)", "cache held (bytes)")
        for col, title in enumerate(titles):
            p = self.glw.addPlot(row=0, col=col, axisItems={"left": SIAxis("left")})
            p.setTitle(title, color=theme.MUTED, size="12pt")
            p.setMenuEnabled(False)
            p.hideButtons()
            p.setMouseEnabled(False, False)
            # no grid: pyqtgraph draws it with the axes, which would repaint them with every new point
            for ax in ("left", "bottom"):
                p.getAxis(ax).setTickFont(font)
            p.disableAutoRange()
            self.glw.ci.layout.setColumnStretchFactor(col, 1)
            self.plots.append(p)
        self.plots[0].addLegend(offset=(70, 2), labelTextSize="11pt", brush=pg.mkBrush(18, 20, 24, 200))
        lay.addWidget(self.glw, 1)

        side = QVBoxLayout()
        self.stats = QLabel()
        self.stats.setTextFormat(Qt.RichText)
        self.stats.setToolTip(
            "TTFT: measured time of the prefill step (prompt → first token)\n"
            "ITL: mean measured time of the decode steps so far (inter-token latency)\n"
            "K/V rows: rows computed so far, summed over steps (Σ per step)\n"
            "cache: bytes of K and V the lane holds now (all layers)"
        )
        self.stats.setFixedWidth(int(self.stats.fontMetrics().horizontalAdvance("M") * 19))  # no relayout per step
        self.stats.setAlignment(Qt.AlignTop | Qt.AlignLeft)
        side.addWidget(self.stats, 1)
        self.log_box = QCheckBox("log scale")
        self.log_box.toggled.connect(self.set_log)
        side.addWidget(self.log_box)
        lay.addLayout(side)

        self._dirty_plots: set[int] = set()
        session.run_started.connect(self._rebuild)
        self.dirty = False
        session.cursor_moved.connect(self._mark)

    def _mark(self, _step: int) -> None:
        self.dirty = True  # redrawn on flush(): the window staggers it after the lanes
        self._dirty_plots = set(range(len(SERIES)))

    def flush(self) -> None:
        if self.dirty:
            self.dirty = False
            for i in sorted(self._dirty_plots):
                self._redraw_plot(i)
            self._stats()

    def flush_part(self, i: int) -> None:
        """Redraw plot ``i`` only (the window spreads the three plots over three frames)."""
        if i in self._dirty_plots:
            self._redraw_plot(i)

    def stages(self) -> list:
        """One redraw stage per plot; the stats table follows with ``flush``."""
        return [lambda i=i: self.flush_part(i) for i in range(len(SERIES))]

    def _rebuild(self) -> None:
        """Curves for the run's lanes: kept where a lane index stays (a new run costs no new items),
        made or dropped only for the difference; the legend names at most MAX_LEGEND lanes."""
        lanes = self.session.lanes
        legend = self.plots[0].legend
        labels = [self.session.lane_label(lane.index) for lane in lanes][:MAX_LEGEND]
        if legend is not None and labels != getattr(self, "_legend_labels", None):
            legend.clear()
        for index in [i for i in self.curves if i >= len(lanes)]:
            for plot, curve in zip(self.plots, self.curves.pop(index), strict=True):
                plot.removeItem(curve)
            self.plots[2].removeItem(self.bands.pop(index))
        # fixed (no relayout per step) and wide enough for the widest cells: a label, then per lane the
        # wider of its (bold) header and a value
        fm = self.stats.fontMetrics()
        bold = QFont(self.stats.font())
        bold.setBold(True)
        value = fm.horizontalAdvance("\u00a0888.88 KB")
        columns = sum(
            max(value, QFontMetrics(bold).horizontalAdvance("\u00a0" + _short(self.session, lane))) + 4 for lane in lanes
        )
        width = fm.horizontalAdvance("K/V rows\u00a0") + columns + 16
        self.stats.setFixedWidth(min(width, 60 * fm.horizontalAdvance("M")))
        for lane in lanes:
            if lane.index not in self.curves:
                color = theme.lane_color(lane.index)
                pen = pg.mkPen(color, width=3)
                self.curves[lane.index] = [
                    self.plots[0].plot([], [], pen=pen, skipFiniteCheck=True),
                    self.plots[1].plot([], [], pen=pen, skipFiniteCheck=True),
                    self.plots[2].plot([], [], pen=pg.mkPen(color, width=2), skipFiniteCheck=True),
                    self.plots[3].plot([], [], pen=pen, skipFiniteCheck=True),
                ]
                # the spread of the step's repeated timings (min to max) around the median
                band = pg.ErrorBarItem(x=np.zeros(0), y=np.zeros(0), pen=pg.mkPen(color, width=1), beam=0.25)
                self.plots[2].addItem(band)
                self.bands[lane.index] = band
        if legend is not None and labels != getattr(self, "_legend_labels", None):
            for index, label in enumerate(labels):
                legend.addItem(self.curves[index][0], label)
            self._legend_labels = labels
        self.redraw()

    def set_log(self, on: bool) -> None:
        self.log = bool(on)
        for curves in self.curves.values():  # emptied first: the switch would map their zeros to log(0)
            for curve in curves:
                curve.setData([], [])
        for p in self.plots:
            p.setLogMode(x=False, y=self.log)
        self.redraw()

    def redraw(self) -> None:
        self.dirty = False
        if self.session.run is None:
            return
        for i in range(len(SERIES)):
            self._redraw_plot(i)
        self._stats()

    def _redraw_plot(self, i: int) -> None:
        self._dirty_plots.discard(i)
        s = self.session
        if s.run is None:
            return
        k = s.cursor + 1
        x = np.arange(k, dtype=np.float64)
        which = SERIES[i]
        few = k <= 40  # dots while there are few steps (a single step is a point, not a line)
        for lane, curves in self.curves.items():
            if getattr(curves[i], "_kv_dots", None) != few:
                curves[i]._kv_dots = few
                color = theme.lane_color(lane)
                curves[i].setSymbol("o" if few else None)
                curves[i].setSymbolSize(7)
                curves[i].setSymbolBrush(color)
                curves[i].setSymbolPen(None)
            y = np.asarray(s.series(which, lane)[:k], dtype=np.float64)
            if self.log and not (y > 0).all():  # a log axis has no 0 (no cache: 0 bytes): those points are left out
                keep = y > 0
                curves[i].setData(x[keep], y[keep])
            else:
                curves[i].setData(x, y)
            if which == "ms":
                lo, hi = (np.asarray(s.series(key, lane)[:k], dtype=np.float64) for key in ("ms_min", "ms_max"))
                band = self.bands[lane]
                band.setVisible(not self.log and bool((hi > lo).any()))  # ErrorBarItem has no log mode
                if band.isVisible():
                    band.setData(x=x, y=y, top=hi - y, bottom=y - lo)
        self._fit_range(i, k)

    def _fit_range(self, i: int, k: int) -> None:
        """Explicit ranges rounded up to 1-2-5 steps: axes are redrawn only when a bound is crossed."""
        s = self.session
        x_hi = _nice(max(k - 1, 5))
        p = self.plots[i]
        which = "ms_max" if SERIES[i] == "ms" else SERIES[i]  # the time plot fits its bands too
        series = {lane.index: s.series(which, lane.index) for lane in s.lanes}
        top = max((max(v[:k]) for v in series.values() if k > 0 and v[:k]), default=1.0)
        if self.log:
            low = min(
                (min(x for x in v[:k] if x > 0) for v in series.values() if k > 0 and any(x > 0 for x in v[:k])), default=1.0
            )
            rng = (np.floor(np.log10(max(low, 1e-9))), np.ceil(np.log10(max(top, 1e-9))) + 0.05)
        else:
            rng = (0.0, _nice(top))
        key = (x_hi, rng)
        if getattr(p, "_kv_range", None) != key:
            p._kv_range = key
            p.setRange(xRange=(0, x_hi), yRange=rng, padding=0.02)
            p.getViewBox().prepareForPaint()  # settle the transform now: one paint, not two

    def _stats(self) -> None:
        s = self.session
        r = s.record()
        if r is None:
            self.stats.setText(f"<span style='color:{theme.MUTED}'>no steps yet</span>")
            return
        names = [lane.index for lane in s.lanes]

        head = "".join(
            f"<th align=right style='color:{theme.lane_color(lane.index)}'>&nbsp;{escape(_short(s, lane))}</th>"
            for lane in s.lanes
        )
        rows = {n: s.cumulative(n)[0] for n in names}
        ttft_itl = {n: s.ttft_itl(n) for n in names}

        def ms(v):
            return "–" if v is None else (f"{v:.1f} ms" if v >= 10 else f"{v:.2f} ms")

        lines = [
            ("TTFT", [ms(ttft_itl[n][0]) for n in names]),
            ("ITL", [ms(ttft_itl[n][1]) for n in names]),
            ("K/V rows", [f"{rows[n]:,}" for n in names]),
            ("cache", [theme.human_bytes(r.lanes[n].cache_bytes) for n in names]),
        ]
        body = "".join(
            f"<tr><td style='color:{theme.MUTED}'>{label}</td>"
            + "".join(f"<td align=right>&nbsp;{v}</td>" for v in values)
            + "</tr>"
            for label, values in lines
        )
        ratio = ""
        if len(rows) == 2 and min(rows.values()) > 0:
            ratio = f"<div style='color:{theme.ACCENT}'>{max(rows.values()) / min(rows.values()):.1f}× the K/V rows</div>"
        self.stats.setText(f"<table cellspacing=0 cellpadding=1><tr><th></th>{head}</tr>{body}</table>{ratio}")
