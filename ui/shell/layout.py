"""Layouts that fit: the window never larger than the screen it opens on, the toolbar's second row
wrapped below the first when both do not fit side by side, and a compact arrangement of the docks on
short screens (a projector at 1280×720 with ``--scale 1.5`` is 853×480 logical pixels) so the lanes
keep a readable K/V/attention area.

Sizes here are Qt's logical pixels (``QT_SCALE_FACTOR`` divides the screen: a 1920×1080 screen at 1.5
is 1280×720 logical), so one rule serves every scale.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QEvent, QObject, QRect, QSize, Qt, QTimer
from PySide6.QtGui import QGuiApplication, QMouseEvent
from PySide6.QtWidgets import QLabel, QMainWindow, QToolBar, QVBoxLayout, QWidget

from ..i18n import translate
from ..lanes.area import LANES_MIN_HEIGHT, LaneArea  # noqa: F401 - the lanes never shrink below it (tests read it here)
from ..lanes.derived import DerivedImages
from ..lanes.legend import Legend
from ..panels.timeline import Timeline
from ..session import Session

DEFAULT_SIZE = QSize(1760, 990)  # on a large screen (1920×1080: room for the costs dock uncut)
COMPACT_HEIGHT = 640  # below this window height the text dock shares the costs dock's place (tabs)
WINDOW_MIN = QSize(560, 400)  # smaller than any supported screen (1024×768 at 1.5 is 683×512)


def available(window: QMainWindow) -> QRect:
    """The available geometry (without task bars) of the screen the window is on, else the primary one."""
    screen = window.screen() if window.windowHandle() is not None else None
    screen = screen or QGuiApplication.primaryScreen()
    return screen.availableGeometry() if screen is not None else QRect(0, 0, DEFAULT_SIZE.width(), DEFAULT_SIZE.height())


def initial_size(window: QMainWindow) -> QSize:
    """The size a fresh window opens at: 1760×990 where it fits, else the available screen."""
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


def fitting(bar: QWidget, texts: list[str]) -> str:
    """The first of ``texts`` (longest first) that fits in ``bar``'s width, else the last: a status
    message is never cut at the window's edge."""
    room = bar.width() - 28
    return next((t for t in texts if bar.fontMetrics().horizontalAdvance(t) <= room), texts[-1])


def clauses(text: str) -> list[str]:
    """``text``, then its shorter forms that end at a clause (" — ", "; ", " · "), longest first."""
    import re

    cuts = [m.start() for m in re.finditer(r" — |; | · ", text)]
    return [text, *(text[:i] for i in reversed(cuts))]


def is_compact(height: int) -> bool:
    return height < COMPACT_HEIGHT


PROMPT_CHARS = 60  # the prompt box's width at most, in characters, when the toolbar's row has room


class _Refit(QObject):
    """Fits the window's layout again once the second toolbar's contents changed their size (the layer and head
    boxes are filled, and translated, after the model loads): the prompt's share of the row was measured before."""

    def __init__(self, window) -> None:
        super().__init__(window)
        self.window = window
        self.queued = False

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 - Qt API
        if event.type() == QEvent.Type.LayoutRequest and not self.queued:
            self.queued = True
            QTimer.singleShot(0, self._fit)
        return False

    def _fit(self) -> None:
        self.queued = False
        fit_layout(self.window)


def fit_layout(window) -> None:
    """The toolbar's second row below the first when they do not fit side by side; docks tabbed on a
    short window (and split again when it grows)."""
    if getattr(window, "_refit", None) is None:
        window._refit = _Refit(window)
        window.toolbar.more.installEventFilter(window._refit)
    prompt = window.toolbar.prompt_box
    prompt.setMinimumWidth(0)  # its own least width while the rows are decided
    if (bar := window.toolbar.layout()) is not None:
        bar.invalidate()  # the toolbar's size hint without the width the prompt was given last time
    wrapped = wrap_toolbars(window, window.toolbar, window.toolbar.more)
    # the row's spare width goes to the prompt (the toolbar area gave it to the last bar: "It is a truth u" at 1920 px
    # beside an empty stretch), at most PROMPT_CHARS characters of it
    used = window.toolbar.sizeHint().width() + (0 if wrapped else window.toolbar.more.sizeHint().width()) + 24
    spare = max(0, window.width() - used)
    most = PROMPT_CHARS * prompt.fontMetrics().horizontalAdvance("x")
    prompt.setMinimumWidth(min(prompt.sizeHint().width() + spare, max(most, prompt.sizeHint().width())))
    compact = is_compact(window.height())
    if compact != window._compact:
        window._compact = compact
        arrange_docks(window, window.costs_dock, window.text_dock, compact)


def fit_docks(window) -> None:
    """Give the lanes most of the height: the costs dock what its plots and table need (≥ 19 %), text ≈
    7.5 % of the window (compact: the two share one place as tabs, ≈ 27 %)."""
    fit_layout(window)
    h = max(window.height(), 400)
    if window._compact:
        window.resizeDocks([window.costs_dock], [int(h * 0.27)], Qt.Orientation.Vertical)
        return
    text_h = max(window.text_dock.minimumSizeHint().height(), int(h * 0.075))  # else costs pays the difference
    title = window.costs_dock.fontMetrics().height() + 12  # the dock's title bar
    costs = window.costs
    need = max(costs.minimumSizeHint().height(), costs.heightForWidth(window.width() - 16) if costs.hasHeightForWidth() else 0)
    # the figures' table gains lines once a run is there (the ratio under TTFT, ITL, rows and bytes), after
    # this is measured: room for one more line, so the check box under the table stays uncut (no scrolling)
    need += costs.fontMetrics().lineSpacing()
    costs_h = max(int(h * 0.19), need + title + 8)  # its table and check box uncut (its scroll area asks the same)
    window.costs_dock.widget().setMinimumHeight(need)  # and the dock is never made shorter than that (it would scroll)
    window.resizeDocks([window.costs_dock, window.text_dock], [costs_h, text_h], Qt.Orientation.Vertical)


class Banner(QLabel):
    """The error banner above the lanes: hidden until an error, gone again when clicked."""

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("banner")
        self.setWordWrap(True)
        self.setTextFormat(Qt.TextFormat.PlainText)  # an error may quote a file's text, a path or a prompt: shown, not rendered
        self.setVisible(False)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setToolTip(translate("window", "click to dismiss"))

    def mousePressEvent(self, _event: QMouseEvent) -> None:  # noqa: N802
        self.setVisible(False)


@dataclass
class Central:
    """What ``build_central`` makes: the window places ``widget`` and ``timeline_bar`` and keeps the rest."""

    widget: QWidget  # the central widget
    layout: QVBoxLayout  # its column: the banner, then what the window adds (the stage, the lesson's band)
    banner: Banner
    lanes_page: QWidget  # the lanes and their legend: the desktop's centre, the stage's first view
    lanes: LaneArea
    legend: Legend
    timeline: Timeline
    timeline_bar: QToolBar  # the timeline as a bottom toolbar


def build_central(session: Session, derived: DerivedImages) -> Central:
    """The central widget: the error banner, then (added by the window) the stage whose first page holds
    the lanes and their legend; the timeline in its own toolbar."""
    central = QWidget()
    lay = QVBoxLayout(central)
    lay.setContentsMargins(4, 4, 4, 0)
    lay.setSpacing(2)
    banner = Banner()
    lay.addWidget(banner)
    lanes_page = QWidget()
    page = QVBoxLayout(lanes_page)
    page.setContentsMargins(0, 0, 0, 0)
    page.setSpacing(2)
    lanes = LaneArea(session, derived)
    page.addWidget(lanes, 1)
    legend = Legend(session)
    page.addWidget(legend)
    central.setFocusPolicy(Qt.FocusPolicy.StrongFocus)  # arrows/Space drive the simulator, not a text box
    timeline = Timeline(session)
    bar = QToolBar(translate("window", "Timeline"))
    bar.setObjectName("timeline")
    bar.setMovable(False)
    bar.addWidget(timeline)
    return Central(central, lay, banner, lanes_page, lanes, legend, timeline, bar)
