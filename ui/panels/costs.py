"""Bottom panel: what the run has cost so far, both lanes on the same axes.

Cumulative K/V rows (Σt = n(n+1)/2 without a cache, n with one — written beside the two curves with
the live values), cumulative FLOPs, measured time per step, and the figures a lecture quotes: cache
bytes, TTFT, ITL. Everything is read from the session's per-lane counters up to the cursor; curves
are created once and fed with setData.
"""

from __future__ import annotations

import math
from html import escape as escape_html

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtGui import QColor, QFont, QFontMetrics, QTextDocument
from PySide6.QtWidgets import QBoxLayout, QCheckBox, QHBoxLayout, QLabel, QSizePolicy, QVBoxLayout, QWidget

from .. import theme
from ..i18n import plain_tip
from ..lanes import policy_text
from .costs_text import (
    STATS_TIP,
    formulas,
    grouped,
    log_scale,
    plot_tip,
    plot_titles,
    si_text,
    stats_html,
    stats_tip,
    stats_width,
    verdict_html,
    verdicts_tip,
)

STRETCH = (3, 2, 2, 2)  # the plots' shares of the row: the rows plot writes its formulas inside (Σt = n(n+1)/2)


def _wrap(text: str, fm: QFontMetrics, width: float) -> list[str]:
    """``text`` on as few lines of at most ``width`` pixels as its words allow."""
    lines: list[str] = []
    for word in text.split(" "):
        if lines and fm.horizontalAdvance(f"{lines[-1]} {word}") <= width:
            lines[-1] = f"{lines[-1]} {word}"
        else:
            lines.append(word)
    return lines


def rich_width(html: str, font: QFont) -> float:
    """The width a rich text takes on one line per paragraph in ``font`` (as a QLabel lays it out)."""
    doc = QTextDocument()
    doc.setDefaultFont(font)
    doc.setDocumentMargin(0)
    doc.setHtml(html)
    return doc.idealWidth()


def _nice(x: float, fine: bool = False) -> float:
    """The smallest of 1, 2, 5 × 10^k that is ≥ x; ``fine``: of 1, 1.5, 2, 3, 4, 5, 6, 8 × 10^k (the steps' axis:
    1-2-5 left up to 54 % of every plot empty, 23 steps on an axis to 50)."""
    if x <= 0:
        return 1.0
    e = 10 ** np.floor(np.log10(x))
    for m in (1, 1.5, 2, 3, 4, 5, 6, 8, 10) if fine else (1, 2, 5, 10):
        if m * e >= x:
            return float(m * e)
    return float(10 * e)


class SIAxis(pg.AxisItem):
    """Left axis with k / M / G / T tick labels (FLOPs reach 1e12 quickly). pyqtgraph sizes an axis to the
    labels it paints, so it widens when a longer label comes ("500 k" after "50 k") — after the plots were
    laid out: the row of plots then ran past its view (the fourth plot 16 px past it at 1024×768). Here a
    change of width calls ``on_width`` (the panel fits the row to its view again), and the axis narrows too
    when its labels do."""

    def __init__(self, *args, on_width=None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.on_width = on_width
        self.setStyle(autoReduceTextSpace=True)

    def _updateWidth(self) -> None:  # noqa: N802 - pyqtgraph API
        before = self.maximumWidth()
        super()._updateWidth()
        on_width = getattr(self, "on_width", None)  # None while pyqtgraph's __init__ lays the axis out
        if on_width is not None and self.maximumWidth() != before:
            on_width()

    def tickStrings(self, values, scale, spacing):  # noqa: N802 - pyqtgraph API
        return [si_text(10**v if self.logMode else v) for v in values]


__all__ = ["STATS_TIP", "CostsPanel", "formulas"]  # STATS_TIP, formulas: the tests read them here

SERIES = ("rows", "flops", "ms", "bytes")  # the plots, left to right (session.series names)
MIN_PLOT = 125  # px a costs plot needs beside the table (its axis, ticks and a readable curve), else the table goes under
VERDICT_GAP = 8  # px between the log-scale check box and the verdicts beside it
STAGE_TABLE = 1.4  # the table's type under the plots of a tall view (a 1920×1080 stage): read from the back of a room
TALL_TABLES = 4  # a view this many tables tall puts the table under the plots (beside them it left a column empty)
MAX_LEGEND = 4  # lanes named in the legend (more would cover the curves; the table names them all)


class CostsPanel(QWidget):
    def __init__(self, session, parent=None) -> None:
        super().__init__(parent)
        self.session = session
        self.log = False
        lay = QBoxLayout(QBoxLayout.Direction.LeftToRight, self)  # the table under the plots where it leaves them no room
        lay.setContentsMargins(4, 2, 4, 2)
        self.box = lay
        self.glw = pg.GraphicsLayoutWidget()
        self.glw.ci.setContentsMargins(0, 0, 0, 0)
        font = QFont(self.font())
        self.title_font = QFont(self.font())
        self.title_font.setPointSize(12)  # the titles' size="12pt"
        self.plots: list[pg.PlotItem] = []
        self.curves: dict[int, list[pg.PlotDataItem]] = {}  # lane -> its curve in each plot
        self.bands: dict[int, pg.ErrorBarItem] = {}  # lane -> the spread of its timings (the time plot)
        for col, title in enumerate(plot_titles()):
            p = self.glw.addPlot(row=0, col=col, axisItems={"left": SIAxis("left", on_width=self._axis_resized)})
            p.setTitle(title, color=theme.MUTED, size="12pt")
            p.setToolTip(plot_tip(col))
            p.setMenuEnabled(False)
            p.hideButtons()
            p.setMouseEnabled(False, False)
            # no grid: pyqtgraph draws it with the axes, which would repaint them with every new point
            for ax in ("left", "bottom"):
                p.getAxis(ax).setTickFont(font)
            p.disableAutoRange()
            self.glw.ci.layout.setColumnStretchFactor(col, STRETCH[col])
            self.plots.append(p)
        # the legend lives on the FLOPs plot: the rows plot carries the formulas beside its curves
        self.plots[1].addLegend(offset=(70, 2), labelTextSize="11pt", brush=pg.mkBrush(18, 20, 24, 200))
        self.formula_items = {kind: pg.TextItem("", anchor=(1, 1), fill=pg.mkBrush(18, 20, 24, 200)) for kind in ("sum", "n")}
        for item in self.formula_items.values():
            item.setZValue(30)
            item.setVisible(False)
            self.plots[0].addItem(item, ignoreBounds=True)
        self.shown_formulas: dict[str, str] = {}  # kind -> text now on the plot (tests)
        self.plots[0].getViewBox().sigResized.connect(self._refit_formulas)  # where they fit depends on the plot's size
        for plot in self.plots:  # the steps' ticks thinned again for the plot's new width
            plot.getViewBox().sigResized.connect(lambda _vb, plot=plot: self._thin_x(plot))
        lay.addWidget(self.glw, 1)

        side = QVBoxLayout()
        self.stats = QLabel()
        self.stats.setTextFormat(Qt.TextFormat.RichText)
        self.stats.setToolTip(stats_tip())
        self.stats.setFixedWidth(int(self.stats.fontMetrics().horizontalAdvance("M") * 19))  # no relayout per step
        self.stats.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        side.addWidget(self.stats, 1)
        # the lanes' time verdicts in words share the check box's line: the dock has no height for one more line
        # at 1920×1080 (tests/app/window/test_layout.py), nor for a wrapped one; the full sentences are in the tooltip
        bottom = QHBoxLayout()
        bottom.setSpacing(VERDICT_GAP)
        self.log_box = QCheckBox(log_scale())
        self.log_box.toggled.connect(self.set_log)
        bottom.addWidget(self.log_box)
        self.verdict = QLabel()
        self.verdict.setTextFormat(Qt.TextFormat.RichText)
        self.verdict.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        # its words are chosen to fit what the check box leaves (verdict_html): they never widen the column
        self.verdict.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        bottom.addWidget(self.verdict, 1)
        side.addLayout(bottom)
        lay.addLayout(side)

        self._dirty_plots: set[int] = set()
        session.run_started.connect(self._rebuild)
        self.dirty = False
        session.cursor_moved.connect(self._mark)
        theme.on_change(self.retheme)
        self.retheme()

    def retheme(self, _name: str = "") -> None:
        """Re-colour the plots, curves, legend, formulas and the table (the theme changed)."""
        self.glw.setBackground(theme.BG)
        fill = pg.mkBrush(QColor(theme.BG).red(), QColor(theme.BG).green(), QColor(theme.BG).blue(), 210)
        for p in self.plots:
            p.titleLabel.setText(p.titleLabel.text, color=theme.MUTED)
            for ax in ("left", "bottom"):
                p.getAxis(ax).setPen(theme.TEXT)
                p.getAxis(ax).setTextPen(theme.TEXT)
        legend = self.plots[1].legend
        if legend is not None:
            legend.setBrush(fill)
            legend.setLabelTextColor(theme.TEXT)
        for item in self.formula_items.values():
            item.fill = fill
        for lane, curves in self.curves.items():
            color = theme.lane_color(lane)
            for i, curve in enumerate(curves):
                curve.setPen(pg.mkPen(color, width=2 if i == 2 else 3))
                curve.setSymbolBrush(color)
            self.bands[lane].setData(pen=pg.mkPen(color, width=1))
        self._legend_labels: list[str] | None = None
        if self.session.run is not None:
            self._rebuild()

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

    def changeEvent(self, event) -> None:  # noqa: N802 - Qt API
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange and hasattr(self, "log_box"):  # presenter mode: the table follows
            scale, self._table_scale = getattr(self, "_table_scale", 1.0), 0.0
            self._scale_table(scale)

    def _rebuild(self) -> None:
        """Curves for the run's lanes: kept where a lane index stays (a new run costs no new items),
        made or dropped only for the difference; the legend names at most MAX_LEGEND lanes."""
        lanes = self.session.lanes
        legend = self.plots[1].legend
        labels = [policy_text.lane_label(self.session, lane.index) for lane in lanes][:MAX_LEGEND]
        if legend is not None and labels != getattr(self, "_legend_labels", None):
            legend.clear()
        for index in [i for i in self.curves if i >= len(lanes)]:
            for plot, curve in zip(self.plots, self.curves.pop(index), strict=True):
                plot.removeItem(curve)
            self.plots[2].removeItem(self.bands.pop(index))
        self.stats.setFixedWidth(stats_width(self.session, self.stats.font()))  # fixed: no relayout per step
        self._fit_titles()  # another table width: beside the plots or under them
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
                legend.addItem(self.curves[index][1], escape_html(label))  # pyqtgraph renders a legend's text as HTML
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
        if which == "rows":
            self._formulas(k)

    def _formulas(self, k: int) -> None:
        """Σt = n(n+1)/2 beside the curve of a lane that recomputes every row, n beside one that computes
        one row per step — each only when the lane's sum is exactly that, with the values at the cursor.
        Where a curve's end leaves no room (a narrow plot: the stage at 853 px with the lesson band), the
        formula goes in the plot's top left corner, above every curve (the rows axis leaves that band
        free), on as many lines as it needs: the formula is always written, never only its value."""
        s = self.session
        n, prompt = s.n_rows(), s.prompt_len
        total, formula, values = formulas(n, prompt)
        texts: dict[str, tuple[int, list[list[str]], list[list[str]]]] = {}  # kind -> lane, forms beside, in the corner
        if k >= 2 and total != n:  # at the prefill both sums are P: nothing to tell apart yet
            for lane in s.lanes:
                rows = s.cumulative(lane.index)[0]
                if rows == total and "sum" not in texts:
                    split = formula.replace(" − ", "\n− ").split("\n")  # "Σt = n(n+1)/2" / "− P(P−1)/2"
                    texts["sum"] = (
                        lane.index,
                        [[formula, values], [formula], split],
                        [[formula, values], [*split, values], [formula], split],
                    )
                elif rows == n and "n" not in texts:
                    texts["n"] = (lane.index, [[f"n = {grouped(n)}"]], [[f"n = {grouped(n)}"], ["n"]])
        x_hi = self.plots[0]._kv_range[0] if getattr(self.plots[0], "_kv_range", None) else max(k - 1, 1)
        vb = self.plots[0].getViewBox()
        fm = QFontMetrics(self._formula_font())
        (x0, x1), (y0, y1) = vb.viewRange()
        width, height = vb.width(), vb.height()
        top = max((float(s.series("rows", lane.index)[k - 1]) for lane in s.lanes), default=0.0) if texts else 0.0
        corner_h = (y1 - top) / ((y1 - y0) or 1) * height - 4  # the free band above every curve, in pixels
        used = 0.0  # pixels of that band taken by a formula placed in the corner
        self.shown_formulas = {}
        for kind, item in self.formula_items.items():
            if kind not in texts or self.log:
                item.setVisible(False)
                continue
            lane, beside, in_corner = texts[kind]
            y = float(s.series("rows", lane)[k - 1])
            left = (k - 1) < 0.5 * x_hi  # the curve ends in the left half: write to its right
            # the longest form that fits beside the curve's end (the formula with its values, the formula alone, on
            # two lines), else the longest that fits the corner (down to the formula on two lines and its value)
            px = (k - 1 - x0) / ((x1 - x0) or 1) * width
            room_w = (width - px if left else px) - 4
            room_h = (y1 - y) / ((y1 - y0) or 1) * height  # pixels above the curve's end
            lines = next((f for f in beside if max(fm.horizontalAdvance(t) for t in f) + 8 <= room_w), None)
            corner = lines is None or len(lines) * fm.height() + 4 > room_h
            if corner:  # the top left corner, under a formula already there
                lines = next(
                    (
                        f
                        for f in in_corner
                        if max(fm.horizontalAdvance(t) for t in f) + 8 <= width - 4
                        and len(f) * fm.lineSpacing() + 8 <= corner_h - used
                    ),
                    None,
                )
                if lines is None:
                    item.setVisible(False)
                    continue
                left = True
            assert lines is not None  # a form beside the curve, else (corner) one in the corner
            self.shown_formulas[kind] = "\n".join(lines)
            item.setAnchor((0, 0) if corner else (0, 1) if left else (1, 1))
            html = (
                f"<div style='color:{theme.lane_color(lane)}; font-size:11pt; text-align:{'left' if left else 'right'}'>"
                f"{'<br>'.join(lines)}</div>"
            )
            if getattr(item, "_kv_html", None) != html:  # a rich-text relayout per step only when the words change
                item._kv_html = html
                item.setHtml(html)
            if corner:
                item.setPos(x0 + 2 / (width or 1) * (x1 - x0), y1 - used / (height or 1) * (y1 - y0))
                used += len(lines) * fm.lineSpacing() + 8
            else:
                item.setPos(k - 1, y)
            item.setVisible(True)

    def _refit_formulas(self, *_args) -> None:
        if self.session.run is not None and self.session.cursor >= 0 and self.session.records:
            self._formulas(self.session.cursor + 1)

    def _formula_font(self) -> QFont:
        font = QFont(self.font())
        font.setPointSizeF(11)
        return font

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        QTimer.singleShot(0, self._fit_legend)
        self._fit_titles()

    def showEvent(self, event) -> None:  # noqa: N802
        super().showEvent(event)
        viewport = self.parentWidget()  # in a scroll area: its viewport, which may be narrower than the panel
        if viewport is not None and getattr(self, "_watching", None) is not viewport:
            viewport.installEventFilter(self)
            self._watching = viewport
        self._fit_titles()

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 - Qt API
        if event.type() == QEvent.Type.Resize and watched is getattr(self, "_watching", None):
            self._fit_titles()
        return False

    def _fit_titles(self) -> None:
        """A plot's title sets its plot's least width: on a narrow window (the stage at 853 px) a title
        that does not fit its share goes on two lines, so the four plots and the table fit side by side."""
        viewport = getattr(self, "_watching", None)
        width = viewport.width() if viewport is not None else self.width()
        room = width - self.stats.width() - 24
        # the table beside the plots while each plot keeps MIN_PLOT px; under them when it would not (three or
        # four lanes on the stage at 853 px: the table's columns took the fourth plot's place)
        # a tall view (the stage on a large screen): the table under the plots, its type larger; beside them it was
        # a small block over an empty column. Measured in the table's own lines (never in its scaled height).
        height = viewport.height() if viewport is not None else self.height()
        lines = self.stats.sizeHint().height() / max(getattr(self, "_table_scale", 1.0), 1.0)
        tall = height >= TALL_TABLES * max(lines, 1.0) and height >= 450
        stacked = room < len(self.plots) * MIN_PLOT or tall
        self._scale_table(STAGE_TABLE if tall else 1.0)
        direction = QBoxLayout.Direction.TopToBottom if stacked else QBoxLayout.Direction.LeftToRight
        if self.box.direction() != direction:
            self.box.setDirection(direction)
        if stacked:
            room = width - 24
        fm = QFontMetrics(self.title_font)
        lines_most = 1
        texts = []
        for col, title in enumerate(plot_titles()):
            share = room * STRETCH[col] / sum(STRETCH) - 72  # less the left axis ("100 k") and its gap
            self.glw.ci.layout.setColumnPreferredWidth(col, share + 72)
            lines = _wrap(title, fm, share)
            lines_most = max(lines_most, len(lines))
            texts.append("<br>".join(lines))
        changed = False
        for p, text in zip(self.plots, texts, strict=True):
            if text != p.titleLabel.text:
                p.titleLabel.setText(text, color=theme.MUTED, size="12pt")
                changed = True
            height = 8 + fm.lineSpacing() * lines_most
            if p.titleLabel.maximumHeight() != height:
                p.titleLabel.setMaximumHeight(height)
                p.layout.setRowFixedHeight(0, height)
                changed = True
        if changed:
            self._fit_plots()
            QTimer.singleShot(0, self._fit_plots)  # once more after the titles' own relayout

    def _scale_table(self, scale: float) -> None:
        """The table and its verdicts in the panel's type times ``scale`` (its width fitted again)."""
        if scale == getattr(self, "_table_scale", 1.0):
            return
        self._table_scale = scale
        font = QFont(self.font())
        font.setPointSizeF(font.pointSizeF() * scale)
        for widget in (self.stats, self.verdict, self.log_box):
            widget.setFont(font)
        if self.session.lanes:
            self.stats.setFixedWidth(stats_width(self.session, font))
            self._stats()  # the verdicts' words chosen again for the new widths

    def _axis_resized(self) -> None:
        """An axis took the width of its new labels (while painting): the row is fitted again once, after it."""
        if not getattr(self, "_refit_queued", False):
            self._refit_queued = True
            QTimer.singleShot(0, self._fit_plots)

    def _fit_plots(self) -> None:
        """The row of plots as wide as its view again. The view sizes it only when the view itself is resized,
        and a plot item never gets narrower than its least width: resized while the titles were still on one
        line, the row stayed that wide after they wrapped, and its last plot ran past the view's edge."""
        self._refit_queued = False
        self.glw.ci.setGeometry(self.glw.range)

    def _fit_legend(self) -> None:
        """The lanes' legend only where it leaves the curves room (the table beside names them too);
        the formulas are placed again for the new size."""
        legend = self.plots[1].legend
        if legend is not None:
            legend.setVisible(self.plots[1].getViewBox().width() >= legend.boundingRect().width() + 120)
        if self.session.run is not None and self.session.cursor >= 0:
            self._formulas(self.session.cursor + 1)

    def _fit_range(self, i: int, k: int) -> None:
        """Explicit ranges rounded up to 1-2-5 steps: axes are redrawn only when a bound is crossed."""
        s = self.session
        x_hi = _nice(max(k - 1, 5), fine=True)
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
            rng = (0.0, _nice(top * (1.45 if SERIES[i] == "rows" else 1.0)))  # rows: room for the formula above
        key = (x_hi, rng)
        if getattr(p, "_kv_range", None) != key:
            p._kv_range = key
            p.setRange(xRange=(0, x_hi), yRange=rng, padding=0.02)
            self._thin_x(p)
            p.getViewBox().prepareForPaint()  # settle the transform now: one paint, not two

    @staticmethod
    def _thin_x(p) -> None:
        """The steps' ticks far enough apart that their numbers never touch: every k-th step, k the smallest of
        1, 2, 5, 10 … whose numbers have room (a narrow plot in presenter type read "1020" for 10 and 20)."""
        axis, vb = p.getAxis("bottom"), p.getViewBox()
        x_hi = vb.viewRange()[0][1]
        if vb.width() <= 0 or x_hi <= 0:
            return
        fm = QFontMetrics(axis.style.get("tickFont") or axis.font())
        room = fm.horizontalAdvance(str(int(x_hi))) + fm.horizontalAdvance("  ")
        per_step = vb.width() / x_hi
        major = next((m * 10**e for e in range(7) for m in (1, 2, 5) if m * 10**e * per_step >= room), 10**7)
        if getattr(p, "_x_ticks", None) != major:
            p._x_ticks = major
            axis.setTickSpacing(major, major / 5 if major >= 5 else major)

    def _stats(self) -> None:
        self.stats.setText(stats_html(self.session))
        need = math.ceil(rich_width(self.stats.text(), self.stats.font())) + 2
        if need > self.stats.width():  # a wider figure than the table was sized for ("≈1.071,5 ms"): it grows, never cut
            self.stats.setFixedWidth(need)
            self._fit_titles()
        tip = verdicts_tip(self.session)
        tip = plain_tip(tip)  # it names the lanes (a saved run's names are data)
        self.stats.setToolTip(tip)
        self.verdict.setToolTip(tip)
        room = self.stats.width() - self.log_box.sizeHint().width() - VERDICT_GAP
        self.verdict.setText(verdict_html(self.session, room, self.verdict.fontMetrics()))
