"""One lane's panel: its K and V tables, its attention rows, and what this step cost.

Rows are tokens (the same rows in all three plots, so a token's K, V and attention line up);
K/V columns are head dimensions; attention columns are key positions. Images are rebuilt only when
the cursor, layer or head changes; animation only moves overlay rectangles (cheap), so a frame
costs almost nothing while a step animates:

* rows this lane computed this step: the *old* ones are swept top to bottom (the recompute), the
  *new* ones fade in and stay outlined;
* rows it did not compute (read from its cache) are dimmed and labelled.
"""

from __future__ import annotations

import math
from html import escape

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics
from PySide6.QtWidgets import QLabel, QSizePolicy, QVBoxLayout, QWidget

from .. import theme
from ..attention import kv_head_of
from .derived import MAX_COLS, DerivedImages
from .lane_plots import DIM, ImagePlot, TokenAxis, dim_rows  # noqa: F401 - DIM, dim_rows: the dimming tests check

MAX_ROWS = 256  # rows drawn at most (the newest ones); older rows scroll off the top


class LanePanel(QWidget):
    """Lane ``index`` of the run: header, [K | V | attention] with shared token rows, and a per-step
    readout. Everything it shows of its lane comes from the lane's description and records."""

    hovered = Signal(int)  # token position under the mouse (-1: none)
    pointed = Signal(str)  # what the mouse points at (an attention cell's probability), for the status bar

    def __init__(self, session, derived: DerivedImages, index: int, parent=None) -> None:
        super().__init__(parent)
        self.session, self.derived, self.index = session, derived, index
        self.info = session.lanes[index]
        self.name = self.info.name
        self.color = theme.lane_color(index)
        self.layer, self.head = 0, 0
        self.hover_pos = -1
        self._geom = None  # (lo, hi, computed_lo, new_lo, n) of the drawn step
        self._t = 1.0

        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 2, 4, 2)
        lay.setSpacing(2)
        self.header = QLabel()
        self.header.setTextFormat(Qt.RichText)
        hf = QFont(self.font())
        hf.setPointSizeF(hf.pointSizeF() * 1.2)
        self.header.setFont(hf)
        lay.addWidget(self.header)

        self.glw = pg.GraphicsLayoutWidget()
        self.glw.ci.setContentsMargins(0, 0, 0, 0)
        self.glw.ci.setSpacing(6)
        self.axis = TokenAxis(self._label_of)
        font = QFont(self.font())
        self.axis.setTickFont(font)
        self.titles = [self.glw.addLabel("", row=0, col=c, size="12pt", color=theme.MUTED) for c in range(3)]
        self.k = ImagePlot(self.glw, 1, 0, self.axis, self.color)
        self.v = ImagePlot(self.glw, 1, 1, None, self.color)
        self.a = ImagePlot(self.glw, 1, 2, None, self.color, masked=True)
        for p in (self.v, self.a):
            p.vb.setYLink(self.k.vb)
        self.glw.installEventFilter(self)
        self.glw.scene().sigMouseMoved.connect(self._mouse_moved)
        self.cache_text = pg.TextItem("", color=theme.TEXT, anchor=(0.5, 0.5), fill=QColor(18, 20, 24, 200))
        self.cache_text.setZValue(20)
        self.a.vb.addItem(self.cache_text, ignoreBounds=True)
        self.kv_text = pg.TextItem("", color=theme.TEXT, anchor=(0.5, 0.5), fill=QColor(18, 20, 24, 200))
        self.kv_text.setZValue(20)
        self.k.vb.addItem(self.kv_text, ignoreBounds=True)
        self._labels_state = None
        lay.addWidget(self.glw, 1)

        self.readout = QLabel()
        self.readout.setObjectName("readout")
        self.readout.setTextFormat(Qt.RichText)
        rf = QFont(self.font())
        rf.setPointSizeF(rf.pointSizeF() * 1.08)
        self.readout.setFont(rf)
        self.readout.setWordWrap(True)
        self.header.setWordWrap(False)  # one line in every lane, so all lanes' plots get the same height
        for label in (self.header, self.readout):
            label.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        self._fit_readout()
        lay.addWidget(self.readout)
        self._set_header()

        self.dirty = False
        session.run_started.connect(self.redraw)
        session.cursor_moved.connect(self._mark)

    def set_lane(self, info) -> None:
        """Show lane ``info`` (a new run's lane at this panel's place and colour): header and images follow."""
        self.info = info
        self.name = info.name
        self._set_header()
        self._fit_readout()
        self.dirty = True

    def _fit_readout(self) -> None:
        """Every lane of a run the same readout height (so their rows line up): a third line when some
        lane of the run is compared with the reference (lossy, evicting or windowed)."""
        compared = any(lane.lossy or lane.evicts or lane.window for lane in self.session.lanes)
        self.readout.setFixedHeight(int(self.readout.fontMetrics().lineSpacing() * (3 if compared else 2) + 8))

    def detach(self) -> None:
        """Stop listening to the session (before the panel is removed: a new run may have other lanes)."""
        for signal, slot in ((self.session.run_started, self.redraw), (self.session.cursor_moved, self._mark)):
            try:
                signal.disconnect(slot)
            except (RuntimeError, TypeError):
                pass

    def _mark(self, _step: int) -> None:
        self.dirty = True  # redrawn on flush(): the window spreads a step's redraws over frames

    def flush(self) -> None:
        if self.dirty:
            self.redraw(self._t)

    def eventFilter(self, obj, event) -> bool:  # noqa: N802
        if obj is self.glw and event.type() == QEvent.Resize:
            self._fit_columns(event.size().width())
        return False

    def _fit_columns(self, width: int) -> None:
        """K and V columns equally wide (the token axis is extra), attention twice as wide."""
        lay = self.glw.ci.layout
        rest = max(width - self.axis.width() - 2 * 6 - 4, 60)
        kv = rest * 0.25
        for col, w in ((0, kv + self.axis.width()), (1, kv), (2, rest - 2 * kv)):
            lay.setColumnFixedWidth(col, w)

    # ------------------------------------------------------------------ drawing
    def _label_of(self, row: int) -> str:
        s = self.session
        return s.token_label(row, self.index)

    def _set_header(self) -> None:
        """One line: the lane's label, then as much of its explanation as fits (all of it in the tooltip)."""
        info = self.info
        label = self.session.lane_label(self.index)
        bold = QFont(self.header.font())
        bold.setBold(True)
        room = self.header.width() - QFontMetrics(bold).horizontalAdvance(f"● {label}") - 12
        what = (
            self.header.fontMetrics().elidedText(f" — {info.explanation}", Qt.ElideRight, max(room, 0))
            if info.explanation
            else ""
        )
        text = (
            f"<span style='color:{self.color}'>●</span> <b style='color:{self.color}'>{escape(label)}</b>"
            f"<span style='color:{theme.MUTED}'>{escape(what)}</span>"
        )
        if text != self.header.text():
            self.header.setText(text)
        self.header.setToolTip(f"lane {info.name}: {info.explanation}")

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._set_header()

    def set_selection(self, layer: int, head: int) -> None:
        if (layer, head) != (self.layer, self.head):
            self.layer, self.head = layer, head
            self.redraw()

    def redraw(self, t: float = 1.0) -> None:
        """Rebuild the images for the session's cursor (no animation: ``t`` = 1 unless given)."""
        self.dirty = False
        s = self.session
        r = s.record()
        if s.run is None or r is None:
            self._geom = None
            for p in (self.k, self.v, self.a):
                p.set_rows(None, 0, 1, 1.0)
                for item in (p.dim, p.pending, p.fade, p.sweep, p.outline, p.hover, p.hover_col):
                    item.setVisible(False)
            self.cache_text.setVisible(False)
            self.kv_text.setVisible(False)
            self._labels_state = None
            self.axis.newest = -1  # no rows yet: no row labels
            self.readout.setText(f"<span style='color:{theme.MUTED}'>press Step (→) to run the prefill</span>")
            self._titles(self.layer, self.head)
            return
        cfg = s.config
        layer = min(self.layer, cfg.n_layers - 1)
        head = min(self.head, cfg.n_heads - 1)
        n = s.n_rows()
        lo = max(0, n - MAX_ROWS)
        self.axis.newest = n - 1
        k_img, v_img = self.derived.kv(self.index, layer, head, lo, n)
        a_img, a_width = self.derived.attention(self.index, layer, head, lo, n)
        d = cfg.head_dim
        lane = r.lanes[self.index]
        new_lo, _ = s.new_rows()
        comp_lo = n - lane.kv_positions
        self._geom = (lo, n, comp_lo, new_lo, n)
        if comp_lo > lo:  # rows read from the cache are dimmed in the pixels (cheaper than an overlay)
            k_img, v_img, a_img = (dim_rows(img, comp_lo - lo) for img in (k_img, v_img, a_img))
        self.k.set_rows(k_img, lo, n, d)
        self.v.set_rows(v_img, lo, n, d)
        self.a.set_rows(a_img, lo, n, a_width)
        self._titles(layer, head)
        self.set_progress(t)
        self._hover_items()

    def _titles(self, layer: int = 0, head: int = 0) -> None:
        s = self.session
        if s.run is None:
            return
        cfg = s.config
        g = kv_head_of(min(head, cfg.n_heads - 1), cfg.n_heads, cfg.n_kv_heads)
        d = cfg.head_dim
        texts = (f"K · kv head {g} · {d} dims", f"V · layer {layer}", f"attention of head {head} over keys")
        err = self.derived.error_levels.get((self.index, layer, g)) if self.derived.show_error else None
        if err is not None and self.session.has_own_rows(self.index):
            texts = (f"K − exact · kv head {g} · ±{err:.1g}", f"V − exact · layer {layer}", texts[2])
        for label, text in zip(self.titles, texts, strict=True):
            if label.text != text:
                label.setText(text)

    def set_progress(self, t: float) -> None:
        """Animation frame ``t`` in [0, 1] of the current step: only overlays move."""
        self._t = t
        if self._geom is None or self.dirty:
            return
        lo, hi, comp_lo, new_lo, n = self._geom
        sweep_to = comp_lo + (new_lo - comp_lo) * min(1.0, t / 0.7) if new_lo > comp_lo else new_lo
        fade_t = 1.0 if new_lo <= comp_lo else max(0.0, (t - 0.6) / 0.4)
        fade_alpha = 1.0 - (t if new_lo <= comp_lo else fade_t)
        for p in (self.k, self.v, self.a):
            p.band(p.pending, max(lo, sweep_to), max(lo, new_lo), alpha=0.8)  # not yet recomputed
            p.band(p.sweep, max(lo, sweep_to - 1), max(lo, sweep_to)) if t < 1 and new_lo > comp_lo else p.sweep.setVisible(False)
            p.band(p.fade, max(lo, new_lo), n, alpha=0.95 * fade_alpha) if fade_alpha > 0.01 else p.fade.setVisible(False)
            p.band(p.outline, max(lo, new_lo), n)
        self._cache_label(lo, comp_lo, new_lo, n)
        self._readout(t)

    def _cache_label(self, lo: int, comp_lo: int, new_lo: int, n: int) -> None:
        """Name what the dim / swept rows are: K, V read from the cache; attention rows not recomputed."""
        if comp_lo > lo and comp_lo - lo >= 2:
            y = (lo + comp_lo) / 2
            read = self.session.read_positions(self.index)
            if read is not None:  # an evicting lane: over the last run of rows it still read, not the gap
                cached = read[(read >= lo) & (read < comp_lo)]
                breaks = np.nonzero(np.diff(cached) != 1)[0]
                run = cached[breaks[-1] + 1 :] if breaks.size else cached
                y = (run[0] + run[-1] + 1) / 2 if run.size >= 2 else y
            state = ("read from cache", "earlier rows not recomputed", y)
        elif new_lo > comp_lo and new_lo - max(lo, comp_lo) >= 2:
            y = (max(lo, comp_lo) + new_lo) / 2
            state = ("recomputed", f"all {n - comp_lo} rows recomputed", y)
        else:
            state = None
        key = (state, self.k.width, self.a.width, self.k.vb.width(), self.a.vb.width())
        if key == self._labels_state:
            return  # setting text every frame costs; only when it changes
        self._labels_state = key
        if state is None:
            self.kv_text.setVisible(False)
            self.cache_text.setVisible(False)
            return
        fm = self.fontMetrics()
        for item, plot, text in ((self.kv_text, self.k, state[0]), (self.cache_text, self.a, state[1])):
            if fm.horizontalAdvance(text) + 12 > plot.vb.width():  # a short form, or nothing, if it would clip
                text = {"read from cache": "cached", "earlier rows not recomputed": "not recomputed"}.get(text, "")
                if not text or fm.horizontalAdvance(text) + 12 > plot.vb.width():
                    item.setVisible(False)
                    continue
            item.setText(text)
            item.setPos(plot.width / 2, state[2])
            item.setVisible(True)

    def _readout(self, t: float) -> None:
        r = self.session.record()
        if r is None:
            return
        lane = r.lanes[self.index]
        e = 1 - (1 - min(1.0, t / 0.5)) ** 3  # counters count up with an ease-out, done half way (then no relayout)
        rows = round(lane.kv_positions * e)
        flops = lane.flops * e
        ms = lane.wall_ms * e
        c = self.color
        diff = ""
        if lane.recompute_diff is not None:
            diff = f" · recomputed vs first |Δ| ≤ <b>{lane.recompute_diff:.0e}</b>"
        elif self.index != self.session.reference and (self.info.lossy or self.info.evicts or self.info.window):
            # what the saving costs: how far this lane's next-token distribution is from the reference's
            diff = f"<br>vs reference: |Δlogit| <b>{lane.logit_diff:.2g}</b> · KL <b>{lane.kl_div:.2g}</b>"
            if lane.token_id != r.token_id:
                diff += f" · <b style='color:{theme.ERROR}'>own choice differs</b>"
        cache = (
            f"cache <b>{lane.cache_tokens}</b> rows, <b>{theme.human_bytes(lane.cache_bytes)}</b>"
            if lane.cache_tokens
            else "nothing cached"
        )
        # a narrow lane (three lanes on a projector) says the same in fewer words, so no line wraps
        narrow = self.readout.width() < self.readout.fontMetrics().horizontalAdvance("M") * 40
        what = ("row" if rows == 1 else "rows") if narrow else "K/V rows computed"
        text = (
            f"{'' if narrow else 'this step: '}<b style='color:{c}'>{rows}</b> {what} · "
            f"<b style='color:{c}'>{theme.human_count(flops)}FLOP</b> · <b style='color:{c}'>{ms:.2f} ms</b>"
            f"<br><span style='color:{theme.MUTED}'>{lane.context} keys{'' if narrow else ' read'} · {cache}{diff}</span>"
        )
        if narrow:
            text = text.replace("vs reference: ", "").replace("recomputed vs first ", "recomputed ")
        if text != self.readout.text():  # rich text is re-laid out on every set: skip unchanged frames
            self.readout.setText(text)

    # ------------------------------------------------------------------ hover
    def _mouse_moved(self, scene_pos) -> None:
        geom = self._geom
        if geom is None:
            return
        row = -1
        for p in (self.k, self.v, self.a):
            if p.vb.sceneBoundingRect().contains(scene_pos):
                pt = p.vb.mapSceneToView(scene_pos)
                row = int(math.floor(pt.y()))
                if not geom[0] <= row < geom[1]:
                    row = -1
                elif p is self.a:
                    self._point_attention(row, pt.x())
                break
        if row != self.hover_pos:
            self.hovered.emit(row)

    def _point_attention(self, row: int, x: float) -> None:
        s = self.session
        n = self._geom[1]
        col = int(math.floor(x)) if self.a.width else -1  # the image's x axis is in key units
        if not 0 <= col < n:
            return
        cfg = s.config
        layer, head = min(self.layer, cfg.n_layers - 1), min(self.head, cfg.n_heads - 1)
        p = self.derived.attention_values(self.index, layer, head, row)
        q, k = theme.show_token(s.token_label(row, self.index)), theme.show_token(s.token_label(col, self.index))
        text = f"attention of {q!r} (position {row}) to {k!r} (position {col}): "
        if col >= p.shape[0]:
            text += "masked (a future position)"
        elif np.isnan(p[col]):
            text += "not seen by this lane (evicted, or outside its window)"
        else:
            text += f"p = {p[col]:.4f}"
        self.pointed.emit(text)

    def set_hovered(self, position: int) -> None:
        self.hover_pos = position
        self._hover_items()

    def _hover_items(self) -> None:
        p_ = self.hover_pos
        geom = self._geom
        for p in (self.k, self.v, self.a):
            if geom is None or not (geom[0] <= p_ < geom[1]):
                p.hover.setVisible(False)
                p.hover_col.setVisible(False)
                continue
            p.band(p.hover, p_, p_ + 1)
        if geom is not None and 0 <= p_ < geom[1]:
            f = max(1, math.ceil(geom[1] / MAX_COLS))  # keys per pixel column when pooled
            self.a.hover_col.setRect(QRectF((p_ // f) * f, geom[0], f, geom[1] - geom[0]))
            self.a.hover_col.setVisible(True)
        else:
            self.a.hover_col.setVisible(False)

    # ------------------------------------------------------------------ introspection (tests)
    def shown(self) -> dict[str, object]:
        """What the panel shows now: image shapes, row range, geometry (for tests and screenshots)."""
        k = self.k.image.image
        a = self.a.image.image
        return {
            "k_shape": None if k is None or not self.k.image.isVisible() else k.shape[:2],
            "v_shape": None if self.v.image.image is None or not self.v.image.isVisible() else self.v.image.image.shape[:2],
            "attn_shape": None if a is None or not self.a.image.isVisible() else a.shape[:2],
            "geom": self._geom,
            "readout": self.readout.text(),
        }
