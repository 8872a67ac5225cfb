"""A log–log roofline plot: the roof (bandwidth slope, then the compute ceiling), the ridge point, and
scatter groups of points. pyqtgraph items are made once; data arrive in linear units and are drawn
as log10 (the axes label them back as 10^x with k / M / G / T)."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont

from kvsim.core.units import si
from kvsim.costs.roofline import ratio, ridge

from ... import theme
from ...i18n import local, translate


class LogAxis(pg.AxisItem):
    """Tick labels of a log10 axis, as 1 k / 10 G (FLOP/s) or 0.1 / 100 (FLOP/byte)."""

    def tickStrings(self, values, scale, spacing):  # noqa: N802 - pyqtgraph API
        return [_label(10**v) for v in values]


def _label(v: float) -> str:
    return local(ratio(v))


def log10(values) -> np.ndarray:
    return np.log10(np.maximum(np.asarray(values, dtype=float), 1e-30))


class RoofPlot(pg.PlotWidget):
    """x: arithmetic intensity (FLOP per byte moved); y: FLOP/s. ``set_roof`` draws the roof and its ridge."""

    def __init__(self, title: str = "", parent=None) -> None:
        super().__init__(parent, axisItems={"left": LogAxis("left"), "bottom": LogAxis("bottom")})
        pi = self.getPlotItem()
        pi.setMenuEnabled(False)
        pi.hideButtons()
        font = QFont(self.font())
        for ax in ("left", "bottom"):
            pi.getAxis(ax).setTickFont(font)
        pi.setLabel("bottom", translate("views.roofline_plot", "arithmetic intensity (FLOP per byte moved)"), color=theme.MUTED)
        pi.setLabel("left", "FLOP/s", color=theme.MUTED)
        if title:
            pi.setTitle(title, color=theme.MUTED, size="11pt")
        pi.showGrid(x=True, y=True, alpha=0.15)
        self.roof = pg.PlotCurveItem(pen=pg.mkPen(theme.TEXT, width=2))
        self.ridge_dot = pg.ScatterPlotItem(size=11, symbol="o", pen=pg.mkPen(theme.ACCENT, width=2), brush=pg.mkBrush(None))
        # the roof's words lie above the roof, where no measured point is: the ridge's over its dot, the slope's
        # along the slope (turned with it), the ceiling's over its right end
        self.ridge_text = pg.TextItem("", color=theme.ACCENT, anchor=(0.5, 1))
        self.slope_text = pg.TextItem("", color=theme.MUTED, anchor=(0, 1), rotateAxis=(1, 1))
        self.ceiling_text = pg.TextItem("", color=theme.MUTED, anchor=(1, 1))
        for item in (self.roof, self.ridge_dot, self.ridge_text, self.slope_text, self.ceiling_text):
            pi.addItem(item)
        self.peak: float | None = None
        self.bandwidth: float | None = None

    def set_roof(self, peak_flops: float | None, bandwidth: float | None, name: str = "") -> None:
        self.peak, self.bandwidth = peak_flops, bandwidth
        if not peak_flops or not bandwidth:
            self.roof.setData([], [])
            self.ridge_dot.setData([], [])
            for t in (self.ridge_text, self.slope_text, self.ceiling_text):
                t.setText("")
            return
        r = ridge(peak_flops, bandwidth)
        self.ridge_dot.setData([math.log10(r)], [math.log10(peak_flops)])
        self.ridge_text.setText(translate("views.roofline_plot", "ridge {ridge} FLOP/B").format(ridge=local(f"{r:.3g}")))
        self.ridge_text.setPos(math.log10(r), math.log10(peak_flops))
        memory = translate("views.roofline_plot", "memory {bandwidth}B/s").format(bandwidth=local(si(bandwidth, ".3g")))
        compute = translate("views.roofline_plot", "compute {flops}FLOP/s").format(flops=local(si(peak_flops, ".3g")))
        self.slope_text.setText(f"{name} {memory} ")
        self.ceiling_text.setText(f"{name} {compute}")

    def fit(self, intensities, flops_per_s) -> None:
        """Axis ranges holding the points and the ridge, the roof drawn across the whole x range."""
        xs = list(log10(intensities)) if len(intensities) else []
        ys = list(log10(flops_per_s)) if len(flops_per_s) else []
        if self.peak and self.bandwidth:
            xs.append(math.log10(ridge(self.peak, self.bandwidth)))
            ys.append(math.log10(self.peak))
        if not xs:
            return
        x0, x1 = math.floor(min(xs) - 0.3), math.ceil(max(xs) + 0.3)
        y0, y1 = math.floor(min(ys) - 0.3), math.ceil(max(ys) + 0.3)
        if self.peak and self.bandwidth:
            xr = np.linspace(x0, x1, 200)
            yr = np.minimum(math.log10(self.peak), math.log10(self.bandwidth) + xr)
            self.roof.setData(xr, yr)
            y0 = min(y0, math.floor(yr[0]))
            # the slope's label sits where the slope is, the ceiling's at the right end of the roof
            xs_label = x0 + 0.1 * (math.log10(ridge(self.peak, self.bandwidth)) - x0)
            self.slope_text.setPos(xs_label, math.log10(self.bandwidth) + xs_label)
            self.ceiling_text.setPos(x1, math.log10(self.peak))
        pi = self.getPlotItem()
        vb = pi.getViewBox()
        width, height = max(vb.width(), 1.0), max(vb.height(), 1.0)
        stacked = False  # the ceiling's words a line above the ridge's where both would share the line
        if self.peak and self.bandwidth:  # room above the ceiling for its words (and the ridge's)
            at = (math.log10(ridge(self.peak, self.bandwidth)) - x0) / (x1 - x0) * width
            rw, cw = self.ridge_text.boundingRect().width(), self.ceiling_text.boundingRect().width()
            ax = 0.5 if rw / 2 <= at <= width - rw / 2 else (0.0 if at < rw / 2 else 1.0)
            stacked = at + (1 - ax) * rw > width - cw - 8
            line = (self.ceiling_text.boundingRect().height() + 4) * (2 if stacked else 1)
            y1 = max(y1, math.log10(self.peak) + line * (y1 - y0) / max(height - line, 1.0))
        for axis, span in (("bottom", x1 - x0), ("left", y1 - y0)):
            step = 1 if span <= 8 else 2  # whole decades only: 1, 10, 100 (no 3.16 between)
            pi.getAxis(axis).setTickSpacing(step, step)
        pi.setRange(xRange=(x0, x1), yRange=(y0, y1), padding=0)
        if self.peak and self.bandwidth:
            # the ridge's words centred over it, or beside it at an edge; the ceiling's over the roof's right end,
            # a line higher when the ridge's would reach them (under the roof they lay on the measured decode points)
            self.ridge_text.setAnchor((ax, 1))
            self.ceiling_text.setAnchor((1, 2) if stacked else (1, 1))


def scatter(color: str, symbol: str, filled: bool, size: int = 10) -> pg.ScatterPlotItem:
    """A hoverable point group in a lane's colour: filled, or hollow (a ring of the colour)."""
    brush = pg.mkBrush(color) if filled else pg.mkBrush(None)
    pen = pg.mkPen(theme.BG, width=1) if filled else pg.mkPen(color, width=2)
    return pg.ScatterPlotItem(
        size=size,
        symbol=symbol,
        pen=pen,
        brush=brush,
        hoverable=True,
        tip=None,
        hoverSize=size + 6,
        hoverPen=pg.mkPen(theme.ACCENT, width=2),
    )


CURSOR_PEN = pg.mkPen(theme.ACCENT, width=3)
ALIGN_LEFT = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter
