"""One lane's panel: its K and V tables, its attention rows, and what this step cost.

Rows are tokens (the same rows in all four plots, so a token's K, q, V and attention line up);
K/q/V columns are head dimensions; attention columns are key positions. The q column holds only the
query rows the lane computed this step (Q is never cached: the new token's q reads the cache).
Images are rebuilt only when the cursor, layer or head changes; animation only moves overlay rectangles (cheap), so a frame
costs almost nothing while a step animates:

* rows this lane computed this step: the *old* ones are swept top to bottom (the recompute), the
  *new* ones fade in and stay outlined;
* rows it did not compute (read from its cache) are dimmed and labelled.
"""

from __future__ import annotations

import re
from html import escape

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics, QTextDocument
from PySide6.QtWidgets import QLabel, QSizePolicy, QSplitter, QVBoxLayout, QWidget

from .. import theme
from ..i18n import plain_tip, translate
from . import layer_kinds, policy_text
from .attention import kv_head_of
from .derived import DerivedImages
from .drafts import DraftOverlay, spec_line
from .hover import LaneHover
from .plots import DIM, ImagePlot, TokenAxis, dim_rows  # noqa: F401 - DIM, dim_rows: the dimming tests check
from .scores import ScoreBars
from .text import (
    cached_forms,
    not_recomputed_forms,
    q_not_cached_forms,
    readout_html,
    readout_tip,
    recompute_forms,
    step_progress,
    title_options,
    title_tips,
    weights_line,
)

MAX_ROWS = 256  # rows drawn at most (the newest ones); older rows scroll off the top


class LanePanel(LaneHover, QWidget):
    """Lane ``index`` of the run: header, [K | V | attention] with shared token rows, and a per-step
    readout. Everything it shows of its lane comes from the lane's description and records."""

    hovered = Signal(int)  # token position under the mouse (-1: none)
    pointed = Signal(str)  # what the mouse points at (an attention cell's probability), for the status bar
    _readout_need: int = 0  # the readout's height this run needs so far (see _grow_readout)
    _readout_fit: tuple[object, int, int] | None = None  # (run, width, lines) the need was measured for

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
        self.header.setTextFormat(Qt.TextFormat.RichText)
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
        self.titles = [self.glw.addLabel("", row=0, col=c, size="12pt", color=theme.MUTED) for c in range(4)]
        self._col_widths = (200.0, 60.0, 100.0, 200.0)
        self.k = ImagePlot(self.glw, 1, 0, self.axis, self.color)
        self.q = ImagePlot(self.glw, 1, 1, None, self.color, unseen=False)
        self.v = ImagePlot(self.glw, 1, 2, None, self.color)
        self.a = ImagePlot(self.glw, 1, 3, None, self.color, masked=True)
        self.plots = (self.k, self.q, self.v, self.a)
        self.scores = ScoreBars(self.k)  # eviction by attention: each row's score beside K, the rows dropped
        for p in (self.q, self.v, self.a):
            p.vb.setYLink(self.k.vb)
            p.follows_y = self.k  # drawn after K: K sets the rows' range for all four
        self.drafts = DraftOverlay(self)  # a spec lane's drafted rows after the text (ghost, accepted, rejected)
        self.glw.installEventFilter(self)
        self.glw.scene().sigMouseMoved.connect(self._mouse_moved)
        self.cache_text = pg.TextItem("", color=theme.TEXT, anchor=(0.5, 0.5), fill=QColor(18, 20, 24, 200))
        self.cache_text.setZValue(20)
        self.a.vb.addItem(self.cache_text, ignoreBounds=True)
        self.kv_text = pg.TextItem("", color=theme.TEXT, anchor=(0.5, 0.5), fill=QColor(18, 20, 24, 200))
        self.kv_text.setZValue(20)
        self.k.vb.addItem(self.kv_text, ignoreBounds=True)
        self.q_text = pg.TextItem("", color=theme.MUTED, anchor=(0.5, 0.5), angle=90)  # over the rows with no q
        self.q_text.setZValue(20)
        self.q.vb.addItem(self.q_text, ignoreBounds=True)
        self._labels_state: tuple | None = None
        self.state_tile = layer_kinds.StateTile(self.glw)  # a hybrid's recurrent layer: its state, in place of tables
        self._recurrent = False  # the drawn layer is a recurrent one: no row overlays (it has no rows)
        lay.addWidget(self.glw, 1)

        self.readout = QLabel()
        self.readout.setObjectName("readout")
        self.readout.setTextFormat(Qt.TextFormat.RichText)
        rf = QFont(self.font())
        rf.setPointSizeF(rf.pointSizeF() * 1.08)
        self.readout.setFont(rf)
        self.readout.setWordWrap(True)
        # margins, not a style sheet's padding: with padding QLabel wraps its rich text 3 px inside its contents
        # (measured), so the height measured below at the contents' width missed a fifth line ('KL 1,2×10⁻⁶' cut)
        self.readout.setContentsMargins(6, 2, 6, 2)
        self.readout.setAlignment(
            Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop
        )  # lanes' first lines level, whatever follows
        self.readout.setToolTip(readout_tip())
        self.header.setWordWrap(False)  # one line in every lane, so all lanes' plots get the same height
        for label in (self.header, self.readout):
            label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self._fit_readout()
        lay.addWidget(self.readout)
        self._set_header()

        self.dirty = False
        session.run_started.connect(self.redraw)
        session.cursor_moved.connect(self._mark)
        theme.on_change(self.retheme)
        self._text_colours()  # a panel made while the light theme is on

    def _text_colours(self) -> None:
        fill = QColor(theme.BG)
        fill.setAlpha(200)
        for item in (self.cache_text, self.kv_text):
            item.setColor(theme.TEXT)
            item.fill = pg.mkBrush(fill)
        self.q_text.setColor(theme.MUTED)

    def retheme(self, _name: str = "") -> None:
        """Re-colour everything this panel made (the theme changed): plots, labels, texts, images."""
        self.color = theme.lane_color(self.index)
        self.glw.setBackground(theme.BG)
        self.axis.retheme()
        for p in self.plots:
            p.retheme(self.color)
        self._text_colours()
        for label in self.titles:
            label.setText(label.text, color=theme.MUTED)
        self._labels_state = None
        self._set_header()
        self.readout.setText("")
        self.redraw(self._t)

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
        compared = any(lane.lossy or lane.evicts or lane.window or lane.draft for lane in self.session.lanes)
        self._readout_lines = 3 if compared else 2
        self.readout.setFixedHeight(int(self.readout.fontMetrics().lineSpacing() * self._readout_lines + 8))
        self._grow_readout()

    def refit_readout(self) -> None:
        """Measure the readout afresh, forgetting the room an earlier step of the run needed (called at
        rest: while playing, the readout only grows, so a line that wraps on alternate steps does not
        re-lay out every lane twice a step)."""
        self._readout_fit = None
        self._grow_readout()

    def _grow_readout(self) -> None:
        """Taller than its lines when a narrow lane wraps them: its words are never cut off at the bottom."""
        base = int(self.readout.fontMetrics().lineSpacing() * getattr(self, "_readout_lines", 2) + 8)
        lay = self.layout()
        m = lay.contentsMargins() if lay is not None else None
        width = self.width() - (m.left() + m.right() if m is not None else 0)  # the readout's width once laid out
        need = 0
        if width > 0 and self.readout.text():  # (QLabel.heightForWidth never answers less than its fixed height)
            doc = QTextDocument()
            doc.setDefaultFont(self.readout.font())
            doc.setDocumentMargin(0)
            doc.setHtml(self.readout.text())
            doc.setTextWidth(max(width - 12, 1))  # the label's own margins and frame
            need = int(doc.size().height()) + 12
        # while the run, the lane's width and its lines stay, the need only grows: a line that wraps on one
        # step and not the next would otherwise re-lay out every lane twice a step (the worst frames, 30 ms)
        fit = (getattr(self.session.run, "run_id", None), width, base)
        if self._readout_fit == fit:
            need = max(need, self._readout_need)
        self._readout_fit = fit
        self._readout_need = max(base, need)
        area = self.parentWidget()  # the lane area (a splitter): every lane one readout height, so rows line up
        lanes = [area.widget(i) for i in range(area.count())] if isinstance(area, QSplitter) else [self]
        lanes = [p for p in lanes if isinstance(p, LanePanel) and p.isVisibleTo(area)] or [self]
        height = max(p._readout_need for p in lanes)
        for p in lanes:
            if p.readout.minimumHeight() != height or p.readout.maximumHeight() != height:
                p.readout.setFixedHeight(height)

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
        if obj is self.glw and event.type() == QEvent.Type.Resize:
            self._fit_columns(event.size().width())
            if self.state_tile.isVisible():
                self.dirty = True  # placed again once the plots have their new geometry (the next flush)
        return False

    def _fit_columns(self, width: int) -> None:
        """K and V columns equally wide (the token axis is extra), q half as wide, attention the rest; a
        narrow lane (three lanes on a projector) gets a narrower token axis (its tokens shortened)."""
        lay = self.glw.ci.layout
        axis = 118 if width >= 360 else max(44, int(width * 0.2))  # measured: 2 lanes at 853 px fit with 118
        if self.axis.width() != axis:
            self.axis.setWidth(axis)
            self.axis.max_chars = 12 if axis >= 118 else max(2, int((axis - 20) // max(self.axis.line_px * 0.5, 1)))
        rest = max(width - axis - 3 * 6 - 4, 80)
        kv, q = rest * 0.23, rest * 0.11
        self._col_widths = (kv + axis, q, kv, rest - 2 * kv - q)
        for col, w in enumerate(self._col_widths):
            lay.setColumnFixedWidth(col, w)
        self._titles(self.layer, self.head)

    # ------------------------------------------------------------------ drawing
    def _label_of(self, row: int) -> str:
        s = self.session
        draft = self.drafts.label_of(row)
        return draft if draft is not None else s.token_label(row, self.index)

    def _set_header(self) -> None:
        """One line: the lane's label, then its explanation — or, where the whole does not fit, a
        deliberate short form (the explanation's first clause, then none, then the policy's short form with its key
        number, "window 16", "H2O 8+8", "weights INT8" for a plain cache over quantized weights, then its title, then
        its title before its details; a plug-in's spec only when its policy has no words); never text cut mid-word.
        The whole label, the spec and the explanation are in the tooltip."""
        info = self.info
        label = policy_text.lane_label(self.session, self.index)
        explanation = policy_text.explanation(info)
        bold = QFont(self.header.font())
        bold.setBold(True)
        width = self.header.width() - 12
        full = label
        title = policy_text.title(info) if getattr(info, "title", "") else ""

        def brief_of(lane) -> str:
            return policy_text.short_title(lane) or policy_text.short_words(lane)

        brief = brief_of(info)
        if brief and any(brief_of(o) == brief for o in self.session.lanes if o.index != self.index):
            # two lanes of one policy: a speculative lane's drafts tell it apart ("Speculative k=4 · lookup")
            brief = f"{brief} · {info.draft}" if getattr(info, "draft", "") else brief
        cut = policy_text.brief_title(info)  # a plug-in's title before its details ("Foo: …" → "Foo")
        # its spec only for a lane whose policy has no words at all (a plug-in's): never a spec beside a short form
        spec = "" if brief or title else getattr(info, "name", "")
        forms = [form for form in (label, brief, title, cut, spec) if form]
        bold_fm = QFontMetrics(bold)
        fitting = [form for form in forms if bold_fm.horizontalAdvance(f"● {form}") <= width]
        # the first that fits: its short form with its key number ("janela 16", "H2O 8+8"), then its title; else the narrowest
        label = fitting[0] if fitting else min(forms, key=lambda form: bold_fm.horizontalAdvance(form))
        room = width - QFontMetrics(bold).horizontalAdvance(f"● {label}")
        first = re.split(r"[,;:(]", explanation or "")[0].strip()
        fm = self.header.fontMetrics()
        fits = [t for t in (f" — {explanation}", f" — {first}") if explanation and fm.horizontalAdvance(t) <= room]
        what = fits[0] if fits else ""
        text = (
            f"<span style='color:{self.color}'>●</span> <b style='color:{self.color}'>{escape(label)}</b>"
            f"<span style='color:{theme.MUTED}'>{escape(what)}</span>"
        )
        if text != self.header.text():
            self.header.setText(text)
        spec = getattr(info, "name", "")
        named = f"{full} — `{spec}`" if spec and spec != full else full  # its spec, as code: what one types for it
        self.header.setToolTip(plain_tip(f"{named}: {explanation}" if explanation else named))  # the whole explanation

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._set_header()
        self._grow_readout()

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
            for p in self.plots:
                p.set_rows(None, 0, 1, 1.0)
                for item in (p.dim, p.pending, p.fade, p.sweep, p.outline, p.hover, p.hover_col):
                    item.setVisible(False)
            for item in (self.cache_text, self.kv_text, self.q_text):
                item.setVisible(False)
            self.state_tile.hide()
            self.scores.clear()
            self.drafts.update(0, -1, 0, 0)  # nothing to draw: hides the draft rows
            self._labels_state = None
            self.axis.newest = -1  # no rows yet: no row labels
            hint = translate("views.lanes", "press Step (→) to run the prefill")
            self.readout.setText(f"<span style='color:{theme.MUTED}'>{hint}</span>")
            self._titles(self.layer, self.head)
            return
        cfg = s.config
        if cfg is None:  # no run yet: nothing to draw
            return
        layer = min(self.layer, cfg.n_layers - 1)
        head = min(self.head, cfg.n_heads - 1)
        n = s.n_rows()
        lo = max(0, n - MAX_ROWS)
        self.axis.newest = n - 1
        self._recurrent = layer_kinds.is_recurrent(cfg, layer)
        if self._recurrent:  # no rows to draw: the state, one size at every n
            self._draw_state(r, cfg, layer, head, lo, n, t)
            return
        self.state_tile.hide()
        k_img, v_img = self.derived.kv(self.index, layer, head, lo, n)
        a_img, a_width = self.derived.attention(self.index, layer, head, lo, n)
        d = cfg.row_width  # MLA: the latent [c | k_R], one row per token for every head
        lane = r.lanes[self.index]
        new_lo, _ = s.new_rows()
        comp_lo = n - lane.kv_positions
        q_img = self.derived.q(self.index, layer, head, lo, n, comp_lo)
        self._geom = (lo, n, comp_lo, new_lo, n)
        if comp_lo > lo:  # rows read from the cache are dimmed in the pixels (cheaper than an overlay)
            k_img, v_img, a_img = (dim_rows(img, comp_lo - lo) for img in (k_img, v_img, a_img))
        self.k.set_rows(k_img, lo, n, d)
        self.scores.show(lane, cfg, layer, head, lo, n, d)
        self.q.set_rows(q_img, lo, n, d)
        self.v.set_rows(v_img, lo, n, d)
        self.a.set_rows(a_img, lo, n, a_width, keys_per_col=a_width / max(a_img.shape[1], 1))
        self._show_drafts(lo, n, layer, head, t)
        self._titles(layer, head)
        self.set_progress(t)
        self._hover_items()

    def _draw_state(self, r, cfg, layer: int, head: int, lo: int, n: int, t: float) -> None:
        """A hybrid's Gated DeltaNet layer: its plots stay empty (it has no K/V rows, no attention over rows) and
        the state tile shows the recorded state over them, its size fixed whatever n."""
        lane = r.lanes[self.index]
        new_lo, _ = self.session.new_rows()
        self._geom = (lo, n, n - lane.kv_positions, new_lo, n)
        for p in self.plots:
            p.set_rows(None, lo, n, p.width or 1.0)
            for item in (p.pending, p.sweep, p.fade, p.outline):
                item.setVisible(False)
        self.scores.clear()
        self._titles(layer, head)
        self.set_progress(t)
        self._hover_items()
        self.glw.ci.layout.activate()  # the plots' geometry settled before the tile is placed over them
        self.state_tile.show_state(cfg, r.states, layer, head, bool(self.info.reuses_past), self._plots_rect())

    def _plots_rect(self):
        """The lane's four plots, from the K column's left to the attention column's right, in the view's pixels."""
        first = self.glw.mapFromScene(self.k.vb.sceneBoundingRect()).boundingRect()
        last = self.glw.mapFromScene(self.a.vb.sceneBoundingRect()).boundingRect()
        return first.united(last)

    def _show_drafts(self, lo: int, n: int, layer: int, head: int, t: float) -> None:
        """A spec lane's draft rows after the text's ``n`` (the rows and the token axis grow by them)."""
        extra = self.drafts.update(lo, n, layer, head, t)
        if extra:
            self.axis.newest = n - 1 + extra
            self.k.vb.setRange(yRange=(lo, n + extra), padding=0)  # the other plots follow (Y-linked)
            if self.drafts.attention_width > self.a.width:  # the drafts also attend to the drafts before them
                self.a.vb.setRange(xRange=(0, self.drafts.attention_width), padding=0)
            for p in self.plots:
                p.__dict__.pop("_range", None)  # forgotten: the next set_rows sets its own range again

    def _titles(self, layer: int = 0, head: int = 0) -> None:
        """Column titles, each the longest form that fits its column; a tooltip says what it shows."""
        s = self.session
        cfg = s.config
        if cfg is None:  # no run (the config is its model's)
            return
        head = min(head, cfg.n_heads - 1)
        g = kv_head_of(head, cfg.n_heads, cfg.n_kv_heads)
        err = self.derived.error_levels.get((self.index, layer, g)) if self.derived.show_error else None
        if err is not None and not self.session.has_own_rows(self.index):
            err = None
        fm = QFontMetrics(self._title_font())
        tips = title_tips(cfg, head, g, layer)
        for i, (label, options) in enumerate(zip(self.titles, title_options(cfg, layer, head, g, err), strict=True)):
            room = self._col_widths[i] - 4  # K's title may use the token axis's width too (it is centred there)
            text = next((o for o in options if fm.horizontalAdvance(o) <= room), options[-1])
            if label.text != text:
                label.setText(text, color=theme.MUTED)
            label.setToolTip(tips[i])

    def _title_font(self) -> QFont:
        font = QFont(self.font())
        font.setPointSizeF(12)
        return font

    def set_progress(self, t: float) -> None:
        """Animation frame ``t`` in [0, 1] of the current step: only overlays move."""
        self._t = t
        if self._geom is None or self.dirty:
            return
        lo, hi, comp_lo, new_lo, n = self._geom
        pr = step_progress(t, comp_lo, new_lo, n)
        sweeping = t < 1 and new_lo > comp_lo and not pr.finished
        for p in self.plots if not self._recurrent else ():
            p.band(p.pending, max(lo, pr.sweep_to), max(lo, new_lo), alpha=0.8)  # not yet recomputed
            p.band(p.sweep, max(lo, pr.sweep_to - 1), max(lo, pr.sweep_to)) if sweeping else p.sweep.setVisible(False)
            p.band(p.fade, max(lo, new_lo), n, alpha=0.95 * pr.fade_alpha) if pr.fade_alpha > 0.01 else p.fade.setVisible(False)
            p.band(p.outline, max(lo, new_lo), n)
        self._cache_label(lo, comp_lo, new_lo, n, pr)
        self.drafts.progress(t)
        self._readout(pr)

    def _cache_label(self, lo: int, comp_lo: int, new_lo: int, n: int, pr) -> None:
        """Name what the dim / swept rows are: K, V read from the cache; attention rows not recomputed;
        during a recompute, the rows swept so far (the count the readout shows)."""
        cfg = self.session.config
        recurrent = cfg is not None and layer_kinds.is_recurrent(cfg, min(self.layer, cfg.n_layers - 1))
        if recurrent:  # no rows read from a cache: the state tile says what the layer holds
            state: tuple[tuple[str, ...], tuple[str, ...], float, float | None] | None = None
        elif comp_lo > lo and comp_lo - lo >= 2:
            y = (lo + comp_lo) / 2
            read = self.session.read_positions(self.index)
            if read is not None:  # an evicting lane: over the last run of rows it still read, not the gap
                cached = read[(read >= lo) & (read < comp_lo)]
                breaks = np.nonzero(np.diff(cached) != 1)[0]
                run = cached[breaks[-1] + 1 :] if breaks.size else cached
                y = (run[0] + run[-1] + 1) / 2 if run.size >= 2 else y
            state = (tuple(cached_forms()), tuple(not_recomputed_forms()), y, (lo + comp_lo) / 2)
        elif new_lo > comp_lo and new_lo - max(lo, comp_lo) >= 2:
            y = (max(lo, comp_lo) + new_lo) / 2
            state = ((translate("views.lanes", "recomputed"),), tuple(recompute_forms(pr)), y, None)
        else:
            state = None
        key = (state, self.k.width, self.a.width, self.k.vb.width(), self.a.vb.width(), self.q.vb.height())
        if key == self._labels_state:
            return  # setting text every frame costs; only when it changes
        self._labels_state = key
        if state is None:
            for item in (self.kv_text, self.cache_text, self.q_text):
                item.setVisible(False)
            return
        fm = self.fontMetrics()
        for item, plot, forms in ((self.kv_text, self.k, state[0]), (self.cache_text, self.a, state[1])):
            # a short form (the same count), or nothing, if it would clip
            text = next((f for f in forms if fm.horizontalAdvance(f) + 12 <= plot.vb.width()), "")
            if not text:
                item.setVisible(False)
                continue
            item.setText(text)
            item.setPos(plot.width / 2, state[2])
            item.setVisible(True)
        # the q column is empty above the new row: Q is never cached (said vertically, where it fits)
        rows_px = self.q.vb.height() * (comp_lo - lo) / max(n - lo, 1)
        q_says = next((t for t in q_not_cached_forms() if fm.horizontalAdvance(t) + 8 <= rows_px), None)
        if state[3] is not None and q_says and fm.height() + 2 <= self.q.vb.width():
            self.q_text.setText(q_says)
            self.q_text.setPos(self.q.width / 2, state[3])
            self.q_text.setVisible(True)
        else:
            self.q_text.setVisible(False)

    def _readout(self, pr) -> None:
        r = self.session.record()
        if r is None:
            return
        lane = r.lanes[self.index]
        compared = self.index != self.session.reference and (self.info.lossy or self.info.evicts or self.info.window)
        # a narrow lane (three lanes on a projector) says the same in fewer words, so no line wraps
        narrow = self.readout.width() < self.readout.fontMetrics().horizontalAdvance("M") * 40
        text = readout_html(lane, self.info, self.color, pr, narrow, bool(compared), lane.token_id != r.token_id)
        run = self.session.run
        weights = weights_line(run.meta, self.index) if run is not None and self.info.weights else ""
        if weights:  # a weights lane: the bytes it holds, beside the full-precision weights
            text += f"<br><span style='color:{theme.MUTED}'>{weights}</span>"
        said = spec_line(self.session, self.index, narrow=narrow)  # "" but for a spec lane
        if said:  # a spec lane: its check, acceptance, tokens per forward, time vs the kv lane
            text += f"<br><span style='color:{theme.MUTED}'>{escape(said)}</span>"
        if text != self.readout.text():  # rich text is re-laid out on every set: skip unchanged frames
            self.readout.setText(text)
            self._grow_readout()
