"""What is on screen while the engine loads: a small kvsim window painted before torch is imported.

``show_splash(app)`` paints it at once (``kvsim`` shows it within the first second; importing torch takes
1–10 s on a laptop); the main window ``finish``-es it when it appears. Qt only: never imports the engine.
"""

from __future__ import annotations

from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QColor, QFont, QPainter, QPixmap
from PySide6.QtWidgets import QApplication, QLabel

from .. import theme
from ..i18n import translate

WIDTH, HEIGHT = 480, 200


def splash_pixmap(ratio: float = 1.0) -> QPixmap:
    """The splash's picture in the current theme: the name, what kvsim is, and "loading the engine …"."""
    pixmap = QPixmap(int(WIDTH * ratio), int(HEIGHT * ratio))
    pixmap.setDevicePixelRatio(ratio)
    pixmap.fill(QColor(theme.BG))
    p = QPainter(pixmap)
    try:
        p.setPen(QColor(theme.BORDER))
        p.drawRect(0, 0, WIDTH - 1, HEIGHT - 1)
        title = QFont()
        title.setPointSize(28)
        title.setBold(True)
        p.setFont(title)
        p.setPen(QColor(theme.ACCENT))
        p.drawText(QRect(24, 24, WIDTH - 48, 56), Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, "kvsim")
        body = QFont()
        body.setPointSize(11)
        p.setFont(body)
        p.setPen(QColor(theme.TEXT))
        p.drawText(
            QRect(24, 84, WIDTH - 48, 48),
            Qt.AlignmentFlag.AlignLeft | Qt.TextFlag.TextWordWrap,
            translate("splash", "See the KV cache: a transformer run token by token, without and with a cache."),
        )
        p.setPen(QColor(theme.MUTED))
        p.drawText(
            QRect(24, HEIGHT - 48, WIDTH - 48, 24), Qt.AlignmentFlag.AlignLeft, translate("splash", "loading the engine …")
        )
    finally:
        p.end()
    return pixmap


class Splash(QLabel):
    """A frameless window holding the splash picture; ``painted`` once Qt has painted it."""

    def __init__(self, pixmap: QPixmap) -> None:
        super().__init__()
        self.setObjectName("kvsim-splash")
        self.setWindowFlags(Qt.WindowType.SplashScreen | Qt.WindowType.FramelessWindowHint | Qt.WindowType.WindowStaysOnTopHint)
        self.setPixmap(pixmap)
        self.setFixedSize(WIDTH, HEIGHT)
        self.painted = False

    def paintEvent(self, event) -> None:  # noqa: N802
        super().paintEvent(event)
        self.painted = True

    def finish(self, window) -> None:
        """Close once the main window is there (QSplashScreen's name for it)."""
        self.close()
        self.deleteLater()


def show_splash(app: QApplication) -> Splash:
    """The splash, shown and painted now (before the caller blocks on the engine's import). Not a
    QSplashScreen: its ``show`` waits up to a second for the window system to expose it."""
    screen = app.primaryScreen()
    splash = Splash(splash_pixmap(screen.devicePixelRatio() if screen is not None else 1.0))
    if screen is not None:
        splash.move(screen.availableGeometry().center() - splash.rect().center())
    splash.show()
    splash.repaint()  # painted now, not when the event loop next runs
    app.processEvents()
    return splash
