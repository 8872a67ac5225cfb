"""The pieces of a lane's plots: the token axis that labels rows, and one image plot with the
overlays a lane animates (dim, fade, sweep, outline, hover) — rectangles, cheap to move per frame —
and the two backgrounds that show through transparent cells: masked (a future position: hatched)
and not seen by the lane (outside its window, or evicted: cross-hatched in another colour)."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFontMetrics, QPainterPath, QPen
from PySide6.QtWidgets import QGraphicsPathItem, QGraphicsRectItem

from .. import theme


class TokenAxis(pg.AxisItem):
    """Left axis that names the rows: every row's token when the rows are tall enough for a line of
    text; otherwise position numbers at round steps (ticks), and the hovered row's token."""

    def __init__(self, label_of) -> None:
        super().__init__("left")
        self.label_of = label_of
        self.newest = 0
        self.hover = -1
        self.line_px = 17.0
        self.numbered = False  # True when the rows are too thin for their tokens (tests, tooltips)
        self.max_chars = 12  # a token's characters shown (fewer on a narrow lane's narrower axis)
        self.setWidth(118)
        self.setStyle(tickLength=0, tickTextOffset=6, autoExpandTextSpace=False, hideOverlappingLabels=False)

    def setTickFont(self, font) -> None:  # noqa: N802 - pyqtgraph API
        super().setTickFont(font)
        self.line_px = QFontMetrics(font).height() * 0.95

    def set_hover(self, row: int) -> None:
        if row != self.hover:
            self.hover = row
            if self.numbered:  # the hovered token is drawn only when rows are not all named
                self.picture = None
                self.update()

    def tickValues(self, minVal, maxVal, size):  # noqa: N802, N803 - pyqtgraph API
        minVal, maxVal = min(minVal, maxVal), max(minVal, maxVal)  # the y axis is inverted
        rows = max(maxVal - minVal, 1e-9)
        px = size / rows
        lo, hi = max(0, math.ceil(minVal - 0.5)), min(self.newest, math.floor(maxVal - 0.5)) + 1
        self.numbered = px < self.line_px
        if not self.numbered:
            return [(1.0, [i + 0.5 for i in range(lo, hi)])]
        step = next(s for s in (2, 5, 10, 20, 50, 100, 200, 500, 1000, 10**9) if s * px >= 1.6 * self.line_px)
        values = [i + 0.5 for i in range(lo, hi) if i % step == 0]
        if lo <= self.hover < hi:  # the hovered row's token, and no number close enough to overlap it
            values = [v for v in values if abs(v - 0.5 - self.hover) * px >= self.line_px] + [self.hover + 0.5]
        return [(1.0, values)]

    def tickStrings(self, values, scale, spacing):  # noqa: N802
        out = []
        for v in values:
            row = int(v)
            if self.numbered and row != self.hover:
                out.append(f"{row}")
                continue
            text = theme.show_token(self.label_of(row))
            n = int(self.max_chars)
            text = text if len(text) <= n else text[: n - 1] + "…"
            out.append(f"▸ {text}" if self.numbered else text)
        return out

    def retheme(self) -> None:
        self.setPen(theme.TEXT)
        self.setTextPen(theme.TEXT)


def _rect_item(vb, fill: str | None, pen: str | None = None, width: float = 2.0, z: float = 10) -> QGraphicsRectItem:
    item = QGraphicsRectItem()
    item.setBrush(QBrush(QColor(fill)) if fill else QBrush(Qt.BrushStyle.NoBrush))
    if pen:
        p = QPen(QColor(pen), width)
        p.setCosmetic(True)
        item.setPen(p)
    else:
        item.setPen(QPen(Qt.PenStyle.NoPen))
    item.setZValue(z)
    item.setVisible(False)
    vb.addItem(item, ignoreBounds=True)
    return item


def _path_item(vb, z: float) -> QGraphicsPathItem:
    item = QGraphicsPathItem()
    item.setPen(QPen(Qt.PenStyle.NoPen))
    item.setZValue(z)
    item.setVisible(False)
    vb.addItem(item, ignoreBounds=True)
    return item


def unseen_cells(rgba: np.ndarray, lo: int, keys_per_col: float | None) -> np.ndarray:
    """(rows, cols) bool: the transparent cells that a lane did not see — in a K/V table every
    transparent row (evicted); in attention (``keys_per_col`` given) only cells at or before the row's
    own position (later ones are the future: masked)."""
    clear = rgba[..., 3] == 0
    if keys_per_col is None:
        return clear
    rows = np.arange(lo, lo + rgba.shape[0])
    own = np.ceil((rows + 1) / keys_per_col).astype(np.int64)  # the pooled columns row p may see
    return clear & (np.arange(rgba.shape[1])[None, :] < own[:, None])


def cells_path(mask: np.ndarray, lo: int, col_w: float) -> QPainterPath:
    """One path of rectangles over the True cells: the runs of each row, found for the whole mask at once,
    and a run that continues the same columns as the row above extends that row's rectangle (an evicted
    K/V block is one rectangle, not one a row). The union — what is filled — is the same as a rectangle
    per run per row."""
    path = QPainterPath()
    if mask.size == 0:
        return path
    # one run a row at most (evicted rows, a window's attention): each row's run from its first and last True
    # cell, and rows with the same run one after another merged at once (no per-cell edges to find)
    filled = mask.any(axis=1)
    first_col = mask.argmax(axis=1)
    end_col = mask.shape[1] - mask[:, ::-1].argmax(axis=1)
    if np.array_equal(np.count_nonzero(mask, axis=1)[filled], (end_col - first_col)[filled]):
        run_rows = np.flatnonzero(filled)
        run_starts, run_ends = first_col[run_rows], end_col[run_rows]
        new = np.ones(run_rows.size, dtype=bool)
        new[1:] = (np.diff(run_rows) != 1) | (np.diff(run_starts) != 0) | (np.diff(run_ends) != 0)
        group_first = np.flatnonzero(new)
        group_last = np.append(group_first[1:], run_rows.size) - 1
        for i, j in zip(group_first.tolist(), group_last.tolist(), strict=True):
            left, right, top, bottom = int(run_starts[i]), int(run_ends[i]), int(run_rows[i]), int(run_rows[j])
            path.addRect(QRectF(left * col_w, lo + top, (right - left) * col_w, bottom - top + 1))
        return path
    padded = np.zeros((mask.shape[0], mask.shape[1] + 2), dtype=np.int8)
    padded[:, 1:-1] = mask
    edges = np.diff(padded, axis=1)
    rows, starts = np.nonzero(edges == 1)  # row-major: runs in row order, left to right
    ends = np.nonzero(edges == -1)[1]
    open_runs: dict[tuple[int, int], list[int]] = {}  # (first col, end col) → [first row, last row]
    rects: list[tuple[int, int, int, int]] = []
    for r, a, b in zip(rows.tolist(), starts.tolist(), ends.tolist(), strict=True):
        run = open_runs.get((a, b))
        if run is not None and run[1] == r - 1:
            run[1] = r
            continue
        if run is not None:
            rects.append((run[0], run[1], a, b))
        open_runs[(a, b)] = [r, r]
    rects += [(first, last, a, b) for (a, b), (first, last) in open_runs.items()]
    for first, last, a, b in rects:
        path.addRect(QRectF(a * col_w, lo + first, (b - a) * col_w, last - first + 1))
    return path


class ImagePlot:
    """One image plot with the lane's overlays (dim, fade, sweep, outline, hover)."""

    def __init__(
        self, glw: pg.GraphicsLayoutWidget, row: int, col: int, axis_left, color: str, masked: bool = False, unseen: bool = True
    ) -> None:
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
        for name in ("left", "bottom", "right", "top"):  # no axis has a label: a range that moves a row sets no label html
            self.plot.getAxis(name).enableAutoSIPrefix(False)
        self.follows_y: ImagePlot | None = None  # the plot whose rows this one's are (Y-linked): it sets the rows' range
        self.plot.setContentsMargins(0, 0, 0, 10)  # room for the last row's label below the image
        # transparent cells show what is behind them: hatched = masked (a future position);
        # cross-hatched in UNSEEN over the background = not seen by this lane (window, eviction)
        self.masked_bg = _rect_item(vb, None, z=-20)
        self.has_masked = masked
        self.unseen_fill = _path_item(vb, z=-16)
        self.unseen_hatch = _path_item(vb, z=-15)
        self.unseen = np.zeros((0, 0), dtype=bool)
        self.marks_unseen = unseen  # False: transparent rows are simply not drawn (Q rows not computed)
        self.image = pg.ImageItem(axisOrder="row-major")
        self.image.setZValue(0)
        vb.addItem(self.image)
        self.dim = _rect_item(vb, "#000000", z=5)
        self.pending = _rect_item(vb, "#000000", z=6)
        self.fade = _rect_item(vb, "#000000", z=7)
        self.sweep = _rect_item(vb, None, pen=None, z=8)
        self.outline = _rect_item(vb, None, pen=color, width=2.5, z=9)
        self.hover = _rect_item(vb, None, pen="#ffffff", width=1.5, z=11)
        self.hover_col = _rect_item(vb, None, pen="#ffffff", width=1.5, z=11)
        self.width = 1.0
        self.retheme(color)

    def retheme(self, color: str) -> None:
        """Re-colour the backgrounds and overlays from the theme (images are redrawn by the panel)."""
        self.masked_bg.setBrush(QBrush(QColor(theme.MASKED), Qt.BrushStyle.BDiagPattern))
        self.unseen_fill.setBrush(QBrush(QColor(theme.BG)))
        self.unseen_hatch.setBrush(QBrush(QColor(theme.UNSEEN), Qt.BrushStyle.DiagCrossPattern))
        self.sweep.setBrush(QBrush(QColor(*theme.SWEEP)))
        for item, c in ((self.outline, color), (self.hover, theme.HOVER), (self.hover_col, theme.HOVER)):
            pen = QPen(item.pen())
            pen.setColor(QColor(c))
            item.setPen(pen)

    def set_rows(self, rgba: np.ndarray | None, lo: int, hi: int, width: float, keys_per_col: float | None = None) -> None:
        """Show ``rgba`` as rows lo..hi-1 over ``width`` x units; transparent cells a lane did not see are
        cross-hatched (attention: pass ``keys_per_col``, so that the future stays masked)."""
        self.width = width
        if rgba is None or hi <= lo:
            self.image.setVisible(False)
            self.masked_bg.setVisible(False)
            self._set_unseen(None, lo, 1.0)
        else:
            # RGBA bytes as they are (no levels): pyqtgraph wraps them in a QImage instead of converting every pixel
            self.image.setImage(rgba, levels=None, autoLevels=False)
            self.image.setRect(QRectF(0, lo, width, hi - lo))
            self.image.setVisible(True)
            self.masked_bg.setRect(QRectF(0, lo, width, hi - lo))
            self.masked_bg.setVisible(self.has_masked)
            mask = unseen_cells(rgba, lo, keys_per_col) if self.marks_unseen else None
            self._set_unseen(mask, lo, width / max(rgba.shape[1], 1))
        rng = (0, width, lo, max(hi, lo + 1))
        if rng != getattr(self, "_range", None):
            before, self._range = getattr(self, "_range", None), rng
            lead = self.follows_y
            if lead is not None and getattr(lead, "_range", None) is not None and lead._range[2:] == rng[2:]:
                # the rows' range is the Y-linked plot's, set there (already followed): only the columns here
                if before is None or before[:2] != rng[:2] or tuple(self.vb.viewRange()[1]) != rng[2:]:
                    self.vb.setRange(xRange=(0, width), yRange=(lo, max(hi, lo + 1)), padding=0)
            else:
                self.vb.setRange(xRange=(0, width), yRange=(lo, max(hi, lo + 1)), padding=0)
            self.vb.prepareForPaint()  # settle the transform now: one paint per step, not two

    def _set_unseen(self, mask: np.ndarray | None, lo: int, col_w: float) -> None:
        self.unseen = mask if mask is not None else np.zeros((0, 0), dtype=bool)
        show = mask is not None and bool(mask.any())
        if show and mask is not None:
            path = cells_path(mask, lo, col_w)
            self.unseen_fill.setPath(path)
            self.unseen_hatch.setPath(path)
        self.unseen_fill.setVisible(show)
        self.unseen_hatch.setVisible(show)

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


DIM = 0.5  # rows read from the cache: half way to theme.DIM_TO (the background in dark, a grey in light)


def dim_rows(rgba: np.ndarray, upto: int) -> np.ndarray:
    """A copy of ``rgba`` with rows ``:upto`` blended half way (DIM) to theme.DIM_TO (transparent
    stays). In uint8 shifts, not floats: it runs on every lane's three images at every step."""
    out = np.ascontiguousarray(rgba).copy()
    # whole pixels as uint32 (byte masks built through the same view, so any byte order works):
    # (x >> 1) per byte, plus half the target, alpha kept — ~30× faster than per-channel floats
    as_u32 = lambda b: np.array(b, dtype=np.uint8).view(np.uint32)[0]  # noqa: E731
    to = QColor(theme.DIM_TO)
    half_to = as_u32([*(c >> 1 for c in (to.red(), to.green(), to.blue())), 0])
    px = out[:upto].view(np.uint32)
    alpha = px & as_u32([0, 0, 0, 255])
    px >>= 1
    px &= as_u32([127, 127, 127, 0])
    px += half_to  # ≤ 127 + 127 per byte: no carry into the next channel
    px |= alpha
    return out
