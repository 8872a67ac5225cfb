"""Layouts that fit: the window never larger than the screen it opens on, the toolbar's second row
wrapped below the first when both do not fit side by side, and a compact arrangement of the docks on
short screens (a projector at 1280×720 with ``--scale 1.5`` is 853×480 logical pixels) so the lanes
keep a readable K/V/attention area.

Sizes here are Qt's logical pixels (``QT_SCALE_FACTOR`` divides the screen: a 1920×1080 screen at 1.5
is 1280×720 logical), so one rule serves every scale.
"""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QFrame, QMainWindow, QScrollArea, QWidget

from .lanes.area import LANES_MIN_HEIGHT  # noqa: F401 - the lanes never shrink below it (tests read it here)

DEFAULT_SIZE = QSize(1600, 900)  # on a large screen
COMPACT_HEIGHT = 640  # below this window height the text dock shares the costs dock's place (tabs)
WINDOW_MIN = QSize(560, 400)  # smaller than any supported screen (1024×768 at 1.5 is 683×512)


def available(window: QMainWindow) -> QRect:
    """The available geometry (without task bars) of the screen the window is on, else the primary one."""
    screen = window.screen() if window.windowHandle() is not None else None
    screen = screen or QGuiApplication.primaryScreen()
    return screen.availableGeometry() if screen is not None else QRect(0, 0, DEFAULT_SIZE.width(), DEFAULT_SIZE.height())


def initial_size(window: QMainWindow) -> QSize:
    """The size a fresh window opens at: 1600×900 where it fits, else the available screen."""
    room = available(window)
    return QSize(min(DEFAULT_SIZE.width(), room.width()), min(DEFAULT_SIZE.height(), room.height()))


def clamp_to_screen(window: QMainWindow) -> bool:
    """Shrink and move the window so its frame lies inside the available screen (a geometry saved on a
    larger screen or at a smaller scale must not open off-screen); True if it changed anything."""
    if window.isFullScreen() or window.isMaximized():
        return False
    room = available(window)
    frame = window.frameGeometry()
    extra_w = frame.width() - window.width()  # the window manager's decorations (0 offscreen)
    extra_h = frame.height() - window.height()
    w = min(window.width(), room.width() - extra_w)
    h = min(window.height(), room.height() - extra_h)
    changed = False
    if (w, h) != (window.width(), window.height()):
        window.resize(max(w, 1), max(h, 1))
        changed = True
    frame = window.frameGeometry()
    x = min(max(frame.x(), room.x()), room.right() + 1 - frame.width())
    y = min(max(frame.y(), room.y()), room.bottom() + 1 - frame.height())
    if (x, y) != (frame.x(), frame.y()):
        window.move(x, y)
        changed = True
    return changed


def wrap_toolbars(window: QMainWindow, first, second) -> bool:
    """Put ``second`` on its own row below ``first`` when both do not fit side by side in the window's
    width (and back beside it when they do); True when they are now on two rows."""
    need = first.sizeHint().width() + second.sizeHint().width() + 8
    wrapped = window.toolBarBreak(second)
    if need > window.width() and not wrapped:
        window.insertToolBarBreak(second)
        return True
    if need <= window.width() and wrapped:
        window.removeToolBarBreak(second)
        return False
    return wrapped


def arrange_docks(window: QMainWindow, costs_dock, text_dock, compact: bool) -> None:
    """Compact: the text dock becomes a tab beside the costs dock (one of the two shows, both are a click
    away), so a short window still gives the lanes their height; not compact: one above the other."""
    tabbed = text_dock in window.tabifiedDockWidgets(costs_dock)
    if compact and not tabbed:
        window.tabifyDockWidget(costs_dock, text_dock)
        costs_dock.raise_()
    elif not compact and tabbed:
        window.splitDockWidget(costs_dock, text_dock, Qt.Orientation.Vertical)


def is_compact(height: int) -> bool:
    return height < COMPACT_HEIGHT


def scrollable(widget: QWidget) -> QScrollArea:
    """``widget`` in a scroll area that fills the space it gets and scrolls only below the widget's own
    minimum: a dock holding it can be made shorter than its content on a short screen."""
    area = QScrollArea()
    area.setWidgetResizable(True)
    area.setFrameShape(QFrame.Shape.NoFrame)
    area.setWidget(widget)
    return area
