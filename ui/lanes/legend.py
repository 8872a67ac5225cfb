"""One line explaining the colours: the K/V diverging scale, the attention scale, the masked hatch,
the dimmed rows read from a cache; with a speculative lane on screen, its drafted and rejected rows."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QLinearGradient, QPainter, QPen
from PySide6.QtWidgets import QWidget

from .. import theme
from ..i18n import translate


class Legend(QWidget):
    """One line explaining the colours: K/V diverging scale, attention scale, masked hatch."""

    def __init__(self, session=None, parent=None) -> None:
        super().__init__(parent)
        self.session = session  # its lanes: a speculative one adds its rows' marks
        if session is not None:
            session.run_started.connect(self.update)
        self.setFixedHeight(26)
        self.setToolTip(
            translate(
                "views.legend",
                "K, V, q: a diverging scale, the same for every lane (0 in the middle)\n"
                "K is stored after RoPE (rotated by its position) in RoPE models\n"
                "attention p: the probability a query gives a key (colour ∝ √p, so small weights show)\n"
                "hatched: masked — a future position, no query may see it\n"
                "cross-hatched: not seen by this lane — outside its window, or evicted\n"
                "dim rows: read from the cache (not computed this step)\n"
                "speculative lanes: a drafted row is faint until the target checks it (solid once accepted); "
                "a rejected row is struck out in red (rolled back)",
            )
        )
        theme.on_change(self.retheme)

    def retheme(self, _name: str = "") -> None:
        self.update()

    def drafts(self) -> bool:
        """A speculative lane on screen (its drafted and rejected rows are explained too)."""
        return self.session is not None and any(getattr(lane, "draft", "") for lane in self.session.lanes)

    def parts(self) -> list[tuple]:
        """(kind, long words, short words): the legend's pieces, in order."""
        dim = QColor(*theme.dimmed(theme.lut(theme.KV_CMAP)[40]).astype(int))
        # (kind, long words, short words): the longest form that fits the width is drawn
        parts: list[tuple[str, Any, Any]] = [  # the second and third by kind: words, a colour map, px, a brush
            ("text", "K, q, V:  −", "K q V −"),
            ("ramp", theme.KV_CMAP, None),
            ("text", translate("views.legend", "+   (0 = black)"), "+"),
            ("gap", 16, 6),
            ("text", translate("views.legend", "attention p:  0"), "p 0"),
            ("ramp", theme.ATTN_CMAP, None),
            ("text", translate("views.legend", "1   (colour ∝ √p)"), "1"),
            ("gap", 16, 6),
            ("swatch", QBrush(QColor(theme.MASKED), Qt.BrushStyle.BDiagPattern), None),
            ("text", translate("views.legend", "masked (future)"), translate("views.legend", "future")),
            ("gap", 8, 4),
            ("swatch", QBrush(QColor(theme.UNSEEN), Qt.BrushStyle.DiagCrossPattern), None),
            ("text", translate("views.legend", "outside the window / evicted"), translate("views.legend", "not seen")),
            ("gap", 8, 4),
            ("swatch", QBrush(dim), None),
            ("text", translate("views.legend", "dim = read from cache"), translate("views.legend", "cached")),
        ]
        if self.drafts():
            ghost = QColor(theme.TEXT)
            ghost.setAlpha(70)
            parts += [
                ("gap", 16, 6),
                ("draft", QBrush(ghost), None),
                ("text", translate("views.legend", "drafted (solid once accepted)"), translate("views.legend", "drafted")),
                ("gap", 8, 4),
                ("strike", QBrush(ghost), None),
                ("text", translate("views.legend", "rejected (rolled back)"), translate("views.legend", "rejected")),
            ]

        return parts

    def form(self, fm) -> tuple[bool, int, int]:
        """(short words, ramp width, width it takes): the longest form that fits the widget's width, else the narrowest."""
        parts = self.parts()

        def width(short: bool, ramp_w: int) -> int:
            total = 8
            for kind, long_, short_ in parts:
                if kind == "text":
                    total += fm.horizontalAdvance(short_ if short else long_) + 8
                elif kind == "ramp":
                    total += ramp_w + 8
                elif kind == "gap":
                    total += short_ if short else long_
                else:
                    total += 36
            return total

        forms = ((False, 120), (False, 80), (True, 80), (True, 48), (True, 32), (True, 20))
        short, ramp_w = next(((s, r) for s, r in forms if width(s, r) <= self.width()), forms[-1])
        return short, ramp_w, width(short, ramp_w)

    def fits(self) -> bool:
        """Its words whole in its width (what the layout audit asks of it)."""
        return self.form(self.fontMetrics())[2] <= self.width()

    def paintEvent(self, event) -> None:  # noqa: N802
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        fm = p.fontMetrics()
        h = self.height()
        parts = self.parts()
        short, ramp_w, _width = self.form(fm)
        x = 8
        for kind, long_, short_ in parts:
            if kind == "text":
                words = short_ if short else long_
                p.setPen(QColor(theme.MUTED))
                p.drawText(x, int(h / 2 + fm.ascent() / 2 - 2), words)
                x += fm.horizontalAdvance(words) + 8
            elif kind == "ramp":
                grad = QLinearGradient(x, 0, x + ramp_w, 0)
                table = theme.lut(long_)
                for i in range(0, 256, 32):
                    grad.setColorAt(i / 255, QColor(*table[i]))
                grad.setColorAt(1.0, QColor(*table[255]))
                p.fillRect(x, 6, ramp_w, h - 12, grad)
                x += ramp_w + 8
            elif kind == "gap":
                x += short_ if short else long_
            else:
                p.fillRect(x, 6, 28, h - 12, long_)
                if kind == "draft":  # a drafted row: faint, its outline dashed, as the lane draws it
                    p.setPen(QPen(QColor(theme.MUTED), 1.0, Qt.PenStyle.DashLine))
                    p.drawRect(x, 6, 28, h - 12)
                if kind == "strike":  # a rejected row: struck out in red, as the lane draws it
                    p.setPen(QPen(QColor(theme.ERROR), 2.0))
                    p.drawLine(x, h // 2, x + 28, h // 2)
                x += 36
        p.end()
