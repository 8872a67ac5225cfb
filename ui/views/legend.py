"""One line explaining the colours: the K/V diverging scale, the attention scale, the masked hatch,
the dimmed rows read from a cache."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QLinearGradient, QPainter
from PySide6.QtWidgets import QWidget

from .. import theme


class Legend(QWidget):
    """One line explaining the colours: K/V diverging scale, attention scale, masked hatch."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setFixedHeight(26)

    def paintEvent(self, event) -> None:  # noqa: N802
        p = QPainter(self)
        p.setRenderHint(QPainter.Antialiasing)
        fm = p.fontMetrics()
        x, h = 8, self.height()

        def text(s: str) -> None:
            nonlocal x
            p.setPen(QColor(theme.MUTED))
            p.drawText(x, int(h / 2 + fm.ascent() / 2 - 2), s)
            x += fm.horizontalAdvance(s) + 8

        def ramp(name: str, w: int = 120) -> None:
            nonlocal x
            grad = QLinearGradient(x, 0, x + w, 0)
            table = theme.lut(name)
            for i in range(0, 256, 32):
                grad.setColorAt(i / 255, QColor(*table[i]))
            grad.setColorAt(1.0, QColor(*table[255]))
            p.fillRect(x, 6, w, h - 12, grad)
            x += w + 8

        text("K, V:  −")
        ramp(theme.KV_CMAP)
        text("+   (0 = black, symmetric)")
        x += 16
        text("attention p:  0")
        ramp(theme.ATTN_CMAP)
        text("1   (colour ∝ √p)")
        x += 16
        p.fillRect(x, 6, 28, h - 12, QBrush(QColor(theme.MASKED), Qt.BDiagPattern))
        x += 36
        text("masked (future) or not seen")
        x += 16
        p.fillRect(x, 6, 28, h - 12, QColor(70, 70, 70))
        x += 36
        text("dim = read from cache")
        p.end()
