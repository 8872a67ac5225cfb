"""All heads at once: the attention of every query head of the selected layer, drawn in groups over
the K/V head they share (MHA: groups of one; GQA: H/H_kv heads per group; MQA: one group), for the
step under the cursor. Group colours are their own (not lane colours): the grouping is the model's."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QRectF
from PySide6.QtGui import QFont, QFontMetrics

from .. import theme
from ..i18n import translate
from .attention import kv_head_of
from .scores import HeldRowsStrip

OVERVIEW_ROWS = 48  # newest query rows shown per head
# K/V-head groups: theme.group_color — greys, greens, purples, pinks: never orange or blue, the two
# default lanes' colours (the test measures the distance)


class HeadsOverview(pg.GraphicsLayoutWidget):
    def __init__(self, session, derived, parent=None) -> None:
        super().__init__(parent)
        self.session, self.derived = session, derived
        self.layer = 0
        self.lane = 0  # the lane whose attention is shown (the first: the reference)
        self.items: list[tuple[pg.PlotItem, pg.ImageItem]] = []
        self.frames: list[str] = []  # each head's group colour (its K/V head's)
        self._shape: tuple[int, int] | None = None  # (heads, K/V heads) of the grid built
        self._built_cols = 0  # heads per row of the grid built
        self.held_strip: HeldRowsStrip | None = None  # which rows each K/V head holds (eviction by attention)
        session.run_started.connect(self._build)
        session.cursor_moved.connect(lambda _s: self.redraw())
        self.setToolTip(
            translate(
                "views.overview",
                "every query head of the selected layer; a frame's colour is its K/V head: heads framed alike\n"
                "share one K and V (GQA), so the cache holds H_kv heads, not H",
            )
        )
        theme.on_change(self.retheme)

    def retheme(self, _name: str = "") -> None:
        """New colours: the plots are made again (they are few, and only when the view is shown)."""
        self.setBackground(theme.BG)
        self._shape = None
        if self.items:
            self._build()

    def _build(self) -> None:
        """One plot per query head. Only when shown (the dock is hidden by default: a new run must not
        pay for it), and only when the head shape changed; else the plots stay and are redrawn."""
        if not self.isVisible():
            self._stale = True
            return
        self._stale = False
        cfg = self.session.config
        if cfg is None:
            return
        if self.items and self._shape == (cfg.n_heads, cfg.n_kv_heads) and self._cols() == self._built_cols:
            self.redraw()
            return
        self._shape = (cfg.n_heads, cfg.n_kv_heads)
        self.clear()
        self.items = []
        self.frames = []
        s = self.session
        cfg = s.config
        h, hkv, group = cfg.n_heads, cfg.n_kv_heads, cfg.group_size
        cols = self._cols()
        self._built_cols = cols
        kind = "MHA" if group == 1 else "MQA"
        if group > 1 and hkv > 1:
            kind = translate("views.overview", "GQA: {group} share each").format(group=group)
        if getattr(cfg, "latent", False):  # one latent a token, shared by every head (not one K/V head)
            kind = translate("views.overview", "MLA: one latent shared by all")
        self.addLabel(
            translate("views.overview", "{h} heads, {hkv} K/V · {kind}").format(h=h, hkv=hkv, kind=kind),
            row=0,
            col=0,
            colspan=cols,
            size="11pt",
            color=theme.MUTED,
        )
        font = QFont(self.font())
        for i in range(h):
            g = kv_head_of(i, h, hkv)
            color = theme.group_color(g)
            p = self.addPlot(row=(i // cols) * 2 + 2, col=i % cols)
            self.addLabel(
                translate("views.overview", "head {i} · kv {g}").format(i=i, g=g),
                row=(i // cols) * 2 + 1,
                col=i % cols,
                size="11pt",
                color=color,
            )
            p.getViewBox().setBorder(pg.mkPen(color, width=2))  # the frame says which K/V head it shares
            self.frames.append(color)
            p.setMenuEnabled(False)
            p.hideButtons()
            p.setMouseEnabled(False, False)
            p.invertY(True)
            p.hideAxis("left")
            p.hideAxis("bottom")
            p.getAxis("bottom").setTickFont(font)
            img = pg.ImageItem(axisOrder="row-major")
            p.addItem(img)
            self.items.append((p, img))
        self.held_strip = HeldRowsStrip(self, ((h - 1) // cols) * 2 + 3, cols)
        self.redraw()

    def _cols(self) -> int:
        """Heads per row: the grid whose cells are largest (the smaller of their width and height) in this view,
        each cell at least as wide as its label; a row per K/V head (or whole groups per row) preferred, so the
        heads that share one K and V stand side by side (MLA, MQA: one group, wrapped into rows)."""
        cfg = self.session.config
        if cfg is None:
            return 1
        h, group = cfg.n_heads, cfg.group_size
        font = QFont(self.font())
        font.setPointSizeF(11)
        fm = QFontMetrics(font)
        label = fm.horizontalAdvance(translate("views.overview", "head {i} · kv {g}").format(i=h - 1, g=cfg.n_kv_heads - 1))
        spacing = 8
        width = max(self.width() - 2 * spacing, 1)
        height = max(self.height() - 2 * fm.lineSpacing() - (140 if HeldRowsStrip.lane_of(self.session) >= 0 else 0), 1)
        best, best_score = 1, -1.0
        for cols in range(1, h + 1):
            rows = -(-h // cols)
            cell_w = width / cols - spacing
            cell_h = height / rows - fm.lineSpacing() - spacing
            if cell_w < label + 12 and cols > 1:
                break  # narrower cells cut their labels: wider grids only get worse
            score = min(cell_w, cell_h)
            if cols == group:
                score *= 1.1  # one row per K/V head: the grouping reads at a glance
            elif cols % group == 0 or group % cols == 0:
                score *= 1.05  # whole groups per row, or a group over whole rows
            if score > best_score:
                best, best_score = cols, score
        return best

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        if not hasattr(self, "ci"):
            return  # pyqtgraph's own resize while it is being made
        if self.items and self.isVisible() and self._cols() != getattr(self, "_built_cols", None):
            self._shape = None
            self._build()  # another grid fits the new size better
        self.ci.setGeometry(self.range)  # the grid as wide as the view (items never shrink below their least width)

    def set_layer(self, layer: int) -> None:
        self.layer = layer
        self.redraw()

    def redraw(self) -> None:
        s = self.session
        if s.run is None or not self.items or not self.isVisible():
            return
        n = s.n_rows()
        if n <= 0:
            for _, img in self.items:
                img.setVisible(False)
            return
        lo = max(0, n - OVERVIEW_ROWS)
        layer = min(self.layer, s.config.n_layers - 1)
        lane = min(self.lane, len(s.lanes) - 1)
        for head, (p, img) in enumerate(self.items):
            rgba, width = self.derived.attention(lane, layer, head, lo, n)
            img.setImage(rgba, levels=(0, 255), autoLevels=False)
            img.setRect(QRectF(0, lo, width, n - lo))
            img.setVisible(True)
            p.setRange(xRange=(0, width), yRange=(lo, n), padding=0)
        if self.held_strip is not None:
            self.held_strip.redraw(s, layer)

    def showEvent(self, event) -> None:  # noqa: N802
        super().showEvent(event)
        if getattr(self, "_stale", False):
            self._build()
        else:
            self.redraw()
