"""A lane panel's pointer: the row or attention cell under the mouse (named in the status bar), and
the hovered token's row highlighted in every plot; ``shown()`` says what the panel draws (tests)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
from PySide6.QtCore import QRectF

from .. import theme
from ..i18n import num, translate
from .derived import MAX_COLS

if TYPE_CHECKING:
    from PySide6.QtWidgets import QLabel

    from ..session import Session
    from .derived import DerivedImages
    from .plots import ImagePlot, TokenAxis


class LaneHover:
    """Mixed into LanePanel: needs ``session``, ``derived``, ``index``, ``plots``, ``a``, ``axis``,
    ``layer``, ``head``, ``_geom``, ``hover_pos`` and the ``hovered`` / ``pointed`` signals."""

    # what LanePanel provides, for the type checker (annotations only: nothing is set here)
    session: Session
    derived: DerivedImages
    index: int
    plots: tuple[ImagePlot, ...]
    k: ImagePlot
    q: ImagePlot
    v: ImagePlot
    a: ImagePlot
    axis: TokenAxis
    titles: list[Any]
    readout: QLabel
    layer: int
    head: int
    hover_pos: int
    _geom: tuple[int, int, int, int, int] | None  # (lo, hi, computed_lo, new_lo, n) of the drawn step
    hovered: Any  # Signal(int) of the panel
    pointed: Any  # Signal(str) of the panel

    # ------------------------------------------------------------------ hover
    def _mouse_moved(self, scene_pos) -> None:
        geom = self._geom
        if geom is None:
            return
        row = -1
        for p in self.plots:
            if p.vb.sceneBoundingRect().contains(scene_pos):
                pt = p.vb.mapSceneToView(scene_pos)
                row = int(math.floor(pt.y()))
                if not geom[0] <= row < geom[1]:
                    row = -1
                elif p is self.a:
                    self._point_attention(row, pt.x())
                else:
                    self._point_row(row)
                break
        if row != self.hover_pos:
            self.hovered.emit(row)

    def _point_row(self, row: int) -> None:
        """The token of a K/q/V row (the axis names every row only when they are tall enough)."""
        s = self.session
        assert self._geom is not None  # pointed at only inside a drawn step
        lo, n, comp_lo, _, _ = self._geom
        token = repr(theme.show_token(s.token_label(row, self.index)))
        if row >= comp_lo:
            text = translate("views.lane_hover", "row {row}: {token} · computed this step")
        else:
            text = translate("views.lane_hover", "row {row}: {token} · read from the cache")
        self.pointed.emit(text.format(row=row, token=token))

    def _point_attention(self, row: int, x: float) -> None:
        s = self.session
        assert self._geom is not None  # pointed at only inside a drawn step
        n = self._geom[1]
        col = int(math.floor(x)) if self.a.width else -1  # the image's x axis is in key units
        if not 0 <= col < n:
            return
        cfg = s.config
        assert cfg is not None  # a drawn step has its model
        layer, head = min(self.layer, cfg.n_layers - 1), min(self.head, cfg.n_heads - 1)
        p = self.derived.attention_values(self.index, layer, head, row)
        q, k = theme.show_token(s.token_label(row, self.index)), theme.show_token(s.token_label(col, self.index))
        p_text = ""
        if col >= p.shape[0]:
            text = translate(
                "views.lane_hover", "attention of {q} (position {row}) to {k} (position {col}): masked (a future position)"
            )
        elif np.isnan(p[col]):
            text = translate(
                "views.lane_hover",
                "attention of {q} (position {row}) to {k} (position {col}):"
                " not seen by this lane (outside its window, or evicted)",
            )
        else:
            text = translate("views.lane_hover", "attention of {q} (position {row}) to {k} (position {col}): p = {p}")
            p_text = num(float(p[col]), 4)
        self.pointed.emit(text.format(q=repr(q), row=row, k=repr(k), col=col, p=p_text))

    def set_hovered(self, position: int) -> None:
        self.hover_pos = position
        self.axis.set_hover(position)
        self._hover_items()

    def _hover_items(self) -> None:
        p_ = self.hover_pos
        geom = self._geom
        for p in self.plots:
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
            "q_shape": None if self.q.image.image is None or not self.q.image.isVisible() else self.q.image.image.shape[:2],
            "titles": [label.text for label in self.titles],
            "attn_shape": None if a is None or not self.a.image.isVisible() else a.shape[:2],
            "geom": self._geom,
            "readout": self.readout.text(),
        }
