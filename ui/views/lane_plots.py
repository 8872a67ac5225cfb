"""The pieces of a lane's plots: the token axis that labels rows, and one image plot with the
overlays a lane animates (dim, fade, sweep, outline, hover) — rectangles, cheap to move per frame."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QPen
from PySide6.QtWidgets import QGraphicsRectItem

from .. import theme


class TokenAxis(pg.AxisItem):
    """Left axis whose ticks are the tokens of the rows (every k-th when rows are thin)."""

    def __init__(self, label_of) -> None:
        super().__init__("left")
        self.label_of = label_of
        self.newest = 0
        self.setWidth(118)
        self.setStyle(tickLength=0, tickTextOffset=6, autoExpandTextSpace=False, hideOverlappingLabels=False)

    def tickValues(self, minVal, maxVal, size):  # noqa: N802, N803 - pyqtgraph API
        minVal, maxVal = min(minVal, maxVal), max(minVal, maxVal)  # the y axis is inverted
        rows = max(maxVal - minVal, 1e-9)
        px = size / rows
        every = max(1, math.ceil(17 / max(px, 1e-9)))
        lo, hi = max(0, math.ceil(minVal - 0.5)), min(self.newest, math.floor(maxVal - 0.5)) + 1
        values = [i + 0.5 for i in range(lo, hi) if (self.newest - i) % every == 0]
        return [(1.0, values)]

    def tickStrings(self, values, scale, spacing):  # noqa: N802
        out = []
        for v in values:
            text = theme.show_token(self.label_of(int(v)))
            out.append(text if len(text) <= 12 else text[:11] + "…")
        return out


def _rect_item(vb, fill: str | None, pen: str | None = None, width: float = 2.0, z: float = 10) -> QGraphicsRectItem:
    item = QGraphicsRectItem()
    item.setBrush(QBrush(QColor(fill)) if fill else QBrush(Qt.NoBrush))
    if pen:
        p = QPen(QColor(pen), width)
        p.setCosmetic(True)
        item.setPen(p)
    else:
        item.setPen(QPen(Qt.NoPen))
    item.setZValue(z)
    item.setVisible(False)
    vb.addItem(item, ignoreBounds=True)
    return item


class ImagePlot:
    """One image plot with the lane's overlays (dim, fade, sweep, outline, hover)."""

    def __init__(self, glw: pg.GraphicsLayoutWidget, row: int, col: int, axis_left, color: str, masked: bool = False) -> None:
        axes = {"left": axis_left} if axis_left is not None else {}
        self.plot = glw.addPlot(row=row, col=col, axisItems=axes)
        self.plot.setMenuEnabled(False)
        self.plot.hideButtons()
        vb = self.vb = self.plot.getViewBox()
        vb.setMouseEnabled(False, False)
        vb.invertY(True)
        vb.setDefaultPadding(0.0)
        if axis_left is None:
            self.plot.hideAxis("left")
        self.plot.hideAxis("bottom")  # columns are named in the titles; axes cost a frame each step
        self.plot.setContentsMargins(0, 0, 0, 10)  # room for the last row's label below the image
        # masked cells are transparent: this hatched background is what shows through
        self.masked_bg = _rect_item(vb, None, z=-20)
        self.masked_bg.setBrush(QBrush(QColor(theme.MASKED), Qt.BDiagPattern))
        self.has_masked = masked
        self.image = pg.ImageItem(axisOrder="row-major")
        self.image.setZValue(0)
        vb.addItem(self.image)
        self.dim = _rect_item(vb, "#000000", z=5)
        self.pending = _rect_item(vb, "#000000", z=6)
        self.fade = _rect_item(vb, "#000000", z=7)
        self.sweep = _rect_item(vb, None, pen=None, z=8)
        self.sweep.setBrush(QBrush(QColor(255, 255, 255, 110)))
        self.outline = _rect_item(vb, None, pen=color, width=2.5, z=9)
        self.hover = _rect_item(vb, None, pen="#ffffff", width=1.5, z=11)
        self.hover_col = _rect_item(vb, None, pen="#ffffff", width=1.5, z=11)
        self.width = 1.0

    def set_rows(self, rgba: np.ndarray | None, lo: int, hi: int, width: float) -> None:
        self.width = width
        if rgba is None or hi <= lo:
            self.image.setVisible(False)
            self.masked_bg.setVisible(False)
        else:
            self.image.setImage(rgba, levels=(0, 255), autoLevels=False)
            self.image.setRect(QRectF(0, lo, width, hi - lo))
            self.image.setVisible(True)
            self.masked_bg.setRect(QRectF(0, lo, width, hi - lo))
            self.masked_bg.setVisible(self.has_masked)
        rng = (0, width, lo, max(hi, lo + 1))
        if rng != getattr(self, "_range", None):
            self._range = rng
            self.vb.setRange(xRange=(0, width), yRange=(lo, max(hi, lo + 1)), padding=0)
            self.vb.prepareForPaint()  # settle the transform now: one paint per step, not two

    def band(self, item: QGraphicsRectItem, a: float, b: float, alpha: float | None = None) -> None:
        if b <= a:
            item.setVisible(False)
            return
        item.setRect(QRectF(0, a, self.width, b - a))
        if alpha is not None:
            c = QColor(theme.BG)
            c.setAlphaF(max(0.0, min(1.0, alpha)))
            item.setBrush(QBrush(c))
        item.setVisible(True)


DIM = 0.5  # rows read from the cache: half way to the background


def dim_rows(rgba: np.ndarray, upto: int) -> np.ndarray:
    """A copy of ``rgba`` with rows ``:upto`` blended half way (DIM) to the background (transparent
    stays). In uint8 shifts, not floats: it runs on every lane's three images at every step."""
    out = np.ascontiguousarray(rgba).copy()
    # whole pixels as uint32 (byte masks built through the same view, so any byte order works):
    # (x >> 1) per byte, plus half the background, alpha kept — ~30× faster than per-channel floats
    as_u32 = lambda b: np.array(b, dtype=np.uint8).view(np.uint32)[0]  # noqa: E731
    half_bg = as_u32([*(c >> 1 for c in QColor(theme.BG).getRgb()[:3]), 0])
    px = out[:upto].view(np.uint32)
    alpha = px & as_u32([0, 0, 0, 255])
    px >>= 1
    px &= as_u32([127, 127, 127, 0])
    px += half_bg  # ≤ 127 + 127 per byte: no carry into the next channel
    px |= alpha
    return out
