"""A layer whose lane columns are not its own K/V rows, in words: a hybrid model's Gated DeltaNet layer (``family=
qwen3_next``: no K/V rows at all, a fixed-size recurrent state instead; its tables give way to ``StateTile``) and a
CLA borrower (``cla=S``: it reads its group's first layer's K and V; the tables show those). ``text.title_options`` /
``title_tips`` use these for such a layer.

``StateTile`` draws the recurrent layer's state in a lane: one value head's dk × dv matrix as the engine recorded it
after the step (``StepRecord.states``), as a heat map of one size at every n — where an attention layer's tables grow
by a row a token — with its bytes and what the lane does with it (holds it, or computes it again from token 0)."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRect, QRectF, Qt
from PySide6.QtGui import QColor, QFontMetrics, QImage, QPainter, QPen
from PySide6.QtWidgets import QWidget

from kvsim.models.config import ModelConfig

from .. import theme
from ..i18n import integer, translate


def is_recurrent(cfg: ModelConfig, layer: int) -> bool:
    return layer in getattr(cfg, "linear_layers", ())


def owner_of(cfg: ModelConfig, layer: int) -> int:
    """The layer whose K/V ``layer`` reads (itself unless it borrows)."""
    share = int(getattr(cfg, "kv_share", 1) or 1)
    return layer - layer % share


def state_bytes(cfg: ModelConfig) -> int:
    """One Gated DeltaNet layer's state in bytes (fp32 runs: conv inputs and recurrent matrices at 4 bytes)."""
    conv, rec = cfg.recurrent_state_values()
    return 4 * (conv + rec)


def recurrent_columns(cfg: ModelConfig, layer: int) -> list[list[str]]:
    """Titles of the K, q, V and attention columns of a Gated DeltaNet layer (the most words first)."""
    size = integer(state_bytes(cfg))
    return [
        [
            translate("views.layer_kinds", "layer {layer}: no K/V rows · a fixed state of {size} B").format(
                layer=layer, size=size
            ),
            translate("views.layer_kinds", "fixed state · {size} B").format(size=size),
            translate("views.layer_kinds", "state"),
            "S",
        ],
        [translate("views.layer_kinds", "Gated DeltaNet"), "—", ""],
        [translate("views.layer_kinds", "no V rows"), "—", ""],
        [
            translate("views.layer_kinds", "no attention over rows: the state answers each query"),
            translate("views.layer_kinds", "no attention over rows"),
            "—",
            "",
        ],
    ]


def borrower_columns(cfg: ModelConfig, layer: int, head: int) -> list[list[str]]:
    """Titles of the K, q and V columns of a CLA layer that reads another layer's K/V."""
    owner = owner_of(cfg, layer)
    return [
        [
            translate("views.layer_kinds", "K of layer {owner} (shared, CLA)").format(owner=owner),
            translate("views.layer_kinds", "K of L{owner}").format(owner=owner),
            "K",
        ],
        [translate("views.layer_kinds", "q · head {head}").format(head=head), "q", ""],
        [
            translate("views.layer_kinds", "V of layer {owner} (shared, CLA)").format(owner=owner),
            translate("views.layer_kinds", "V of L{owner}").format(owner=owner),
            "V",
        ],
    ]


def recurrent_tips(cfg: ModelConfig) -> list[str]:
    conv, rec = cfg.recurrent_state_values()
    tip = translate(
        "views.layer_kinds",
        "A Gated DeltaNet layer (linear attention) keeps no K/V rows in the cache: it carries a state of fixed size from token to"
        " token — the short convolution's last inputs ({conv} values) and one dk × dv matrix per value head ({rec}"
        " values) — however long the text grows. Only the attention layers' tables grow.",
    ).format(conv=integer(conv), rec=integer(rec))
    return [tip, tip, tip]


def borrower_tips(cfg: ModelConfig, layer: int) -> list[str]:
    owner = owner_of(cfg, layer)
    tip = translate(
        "views.layer_kinds",
        "Cross-layer KV sharing (CLA): layer {layer} computes no K or V; it reads layer {owner}'s, which alone are"
        " cached. Its own queries meet them.",
    ).format(layer=layer, owner=owner)
    return [tip, tip, tip]


def value_head_of(cfg: ModelConfig, head: int) -> int:
    """The Gated DeltaNet value head drawn for the lanes view's selected (query) head: the heads spread evenly."""
    return min(cfg.linear_value_heads - 1, head * cfg.linear_value_heads // max(cfg.n_heads, 1))


class StateTile(QWidget):
    """A recurrent layer's state in a lane: a heat map of fixed size (at most ``SIDE`` px a side, whatever n) and
    three lines under it. It draws what the record holds (``StepRecord.states``) and nothing when the record holds
    none (a run whose lanes all recompute: the words say so). Laid over the lane's plots, mouse events pass through."""

    SIDE = 176  # the heat map's side at most, px (less where the lane is smaller)
    GAP = 6

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.setObjectName("state_tile")
        self.image: QImage | None = None
        self.lines: list[str] = []
        self._reserve: list[str] = []  # the lines the tile is sized for
        self.side = 0  # the heat map's side as drawn, px
        self.tile_shape: tuple[int, int] = (0, 0)  # (rows, columns) of the matrix drawn
        self.hide()

    def show_state(self, cfg: ModelConfig, states: np.ndarray | None, layer: int, head: int, holds: bool, area: QRect) -> None:
        """Show ``layer``'s state (``states``: the record's, every recurrent layer) for the selected ``head`` inside
        ``area`` (the lane's plots, in the parent's coordinates), centred; ``holds``: the lane keeps it between steps."""
        index = cfg.linear_layers.index(layer)
        vh = value_head_of(cfg, head)
        dk = cfg.linear_head_dim
        size = integer(state_bytes(cfg))
        matrix = states[index, vh] if states is not None and index < states.shape[0] else None
        self.tile_shape = (0, 0) if matrix is None else (int(matrix.shape[0]), int(matrix.shape[1]))
        first = translate("views.layer_kinds", "state S of value head {head} · {dk} × {dv}").format(head=vh, dk=dk, dv=dk)
        if matrix is not None and matrix.shape[0] < dk:
            first += translate("views.layer_kinds", " (block means)")
        second = translate("views.layer_kinds", "{size} B in this layer, the same at every n").format(size=size)
        thirds = [  # what the lane does with it; every lane's tile is laid out for the longest, so the tiles line up
            translate("views.layer_kinds", "no lane held the state: nothing recorded to draw"),
            translate("views.layer_kinds", "held in the cache, rewritten by each token"),
            translate("views.layer_kinds", "computed again from token 0 this step, then dropped"),
        ]
        third = thirds[0] if matrix is None else thirds[1] if holds else thirds[2]
        self._reserve = [first, second, max(thirds, key=len)]
        self.lines = [first, second, third]
        if matrix is not None:
            m = float(np.percentile(np.abs(matrix), 98)) or float(np.abs(matrix).max()) or 1.0  # a few large values clip
            rgba = np.ascontiguousarray(theme.colorize(matrix.astype(np.float32), -m, m, theme.KV_CMAP))
            h, w = rgba.shape[:2]
            self.image = QImage(rgba.data, w, h, 4 * w, QImage.Format.Format_RGBA8888).copy()
        else:
            self.image = None
        self._place(area)
        self.update()

    def _text_height(self, width: int, lines: list[str]) -> int:
        """The lines' height wrapped at ``width`` (a narrow lane wraps them rather than cut them)."""
        fm = QFontMetrics(self.font())
        flags = int(Qt.AlignmentFlag.AlignHCenter | Qt.TextFlag.TextWordWrap)
        return sum(fm.boundingRect(QRect(0, 0, max(width, 1), 10_000), flags, line).height() for line in lines)

    def _place(self, area: QRect) -> None:
        """Centred in ``area``, as wide as the longest words want (at most the area), as tall as the square and the
        lines need; the size counted with the longest of the lane sentences, so every lane's tile sits alike."""
        fm = QFontMetrics(self.font())
        widest = max((fm.horizontalAdvance(line) for line in self._reserve), default=0)
        width = min(area.width(), max(min(self.SIDE, area.width()), widest + 2 * self.GAP))
        text_h = max(self._text_height(width - 2 * self.GAP, self._reserve), self._text_height(width - 2 * self.GAP, self.lines))
        side = max(16, min(self.SIDE, area.height() - text_h - 3 * self.GAP, width - 2 * self.GAP))
        self.side = side
        height = min(area.height(), side + text_h + 3 * self.GAP)
        self.setGeometry(area.left() + (area.width() - width) // 2, area.top() + (area.height() - height) // 2, width, height)
        self.show()
        self.raise_()

    def paintEvent(self, _event) -> None:  # noqa: N802 - Qt API
        painter = QPainter(self)
        fill = QColor(theme.BG)
        fill.setAlpha(235)
        painter.fillRect(self.rect(), fill)
        x = (self.width() - self.side) // 2
        square = QRectF(x, self.GAP, self.side, self.side)
        if self.image is not None:
            painter.drawImage(square, self.image)
        else:  # nothing recorded: an empty square of the same size
            painter.setPen(QPen(QColor(theme.MUTED), 1, Qt.PenStyle.DashLine))
            painter.drawRect(square)
        painter.setPen(QPen(QColor(theme.BORDER), 1))
        painter.drawRect(square)
        fm = painter.fontMetrics()
        flags = int(Qt.AlignmentFlag.AlignHCenter | Qt.TextFlag.TextWordWrap)
        y = self.GAP + self.side + self.GAP
        width = self.width() - 2 * self.GAP
        for i, line in enumerate(self.lines):
            painter.setPen(QColor(theme.TEXT if i < 2 else theme.MUTED))
            height = fm.boundingRect(QRect(0, 0, max(width, 1), 10_000), flags, line).height()
            painter.drawText(QRect(self.GAP, y, width, height), flags, line)
            y += height
        painter.end()
