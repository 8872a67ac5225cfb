"""Presenter mode (F5; Esc leaves): full screen, the toolbars hidden, large type and the high-contrast
light theme for a washed-out projector; leaving puts back the theme, the type size, the toolbars and
the window state there were. F11 toggles full screen alone.

The keys keep working with the toolbars hidden: the window owns the step actions too (a hidden
toolbar's shortcuts are dead in Qt), and ``install_keys`` adds + / − (speed), 1–9 (layer) and L (the
next set of lanes) to the window for every mode.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QAction, QFont, QKeySequence
from PySide6.QtWidgets import QMainWindow

from .. import theme
from ..i18n import translate
from .toolbar import ControlsToolBar

PRESENTER_THEME = "light"
PRESENTER_TYPE = 1.4  # × the theme's base point size on an unscaled screen (divided by the screen's scale)


def _action(window: QMainWindow, text: str, keys: list[str], slot, enabled: bool = True) -> QAction:
    a = QAction(text, window)
    a.setShortcuts([QKeySequence(k) for k in keys])
    a.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
    a.triggered.connect(lambda _checked=False: slot())
    a.setEnabled(enabled)
    window.addAction(a)
    return a


def install_keys(window: QMainWindow, tb: ControlsToolBar) -> list[QAction]:
    """Window-wide keys: + / − speed, 1–9 layer, L lanes; and the toolbar's step keys owned by the window
    as well, so they work while the toolbars are hidden."""
    window.addActions([tb.reset_action, tb.back_action, tb.step_action, tb.play_action])
    made = [
        _action(window, translate("presenter", "Faster animation"), ["+", "="], lambda: tb.step_speed(+1)),
        _action(window, translate("presenter", "Slower animation"), ["-"], lambda: tb.step_speed(-1)),
        _action(window, translate("presenter", "Next set of lanes"), ["L"], tb.next_lanes),
    ]
    for i in range(1, 10):
        text = translate("presenter", "Layer {n}").format(n=i - 1)
        made.append(_action(window, text, [str(i)], lambda layer=i - 1: tb.choose_layer(layer)))
        made[-1].setData("layer-key")  # the shortcut sheet lists the nine as one line
    return made


class Presenter(QObject):
    changed = Signal(bool)  # presenting or not

    def __init__(self, window: QMainWindow, toolbar: ControlsToolBar) -> None:
        super().__init__(window)
        self.window = window
        self.toolbar = toolbar
        self.active = False
        self._saved: dict = {}
        self.present_action = _action(window, translate("presenter", "Presenter mode"), ["F5"], self.toggle)
        self.present_action.setCheckable(True)
        self.leave_action = _action(window, translate("presenter", "Leave presenter mode"), ["Esc"], self.leave, enabled=False)
        self.fullscreen_action = _action(window, translate("presenter", "Full screen"), ["F11"], self.toggle_fullscreen)

    def toggle(self) -> None:
        (self.leave if self.active else self.enter)()

    def toggle_fullscreen(self) -> None:
        w = self.window
        if w.isFullScreen():
            w.showMaximized() if self._saved.get("maximized") else w.showNormal()
        else:
            self._saved["maximized"] = w.isMaximized()
            w.showFullScreen()

    def enter(self) -> None:
        if self.active:
            return
        w = self.window
        app = theme.application()
        bars = [self.toolbar, self.toolbar.more]
        self._saved = {
            "theme": theme.current(),
            "full": w.isFullScreen(),
            "maximized": w.isMaximized(),
            "bars": [b.isVisible() for b in bars],
        }
        self.active = True
        theme.set_theme(app, PRESENTER_THEME)
        font = QFont(app.font())
        # large type for the back row — but a screen already scaled up (kvsim --scale 1.5 on a projector)
        # has it: the factor is what the scale leaves to do, so the stage's views keep their room
        font.setPointSizeF(theme.BASE_POINT_SIZE * max(1.0, PRESENTER_TYPE / max(w.devicePixelRatioF(), 1.0)))
        app.setFont(font)
        for b in bars:
            b.setVisible(False)
        if not w.isFullScreen():
            w.showFullScreen()
        self.leave_action.setEnabled(True)
        self._sync()
        if (central := w.centralWidget()) is not None:
            central.setFocus()  # Space / → / ← at once, not into a text box
        from .layout import fitting

        long = translate(
            "presenter", "presenter mode: Space play · → step · ← back · Home reset · +/− speed · 1–9 layer · Esc leaves · ? keys"
        )
        w.statusBar().showMessage(fitting(w.statusBar(), [long, translate("presenter", "presenter mode · Esc leaves · ? keys")]))

    def leave(self) -> None:
        if not self.active:
            return
        w = self.window
        saved = self._saved
        self.active = False
        theme.set_theme(theme.application(), saved.get("theme", "dark"))  # also the theme's own type size
        for b, visible in zip([self.toolbar, self.toolbar.more], saved.get("bars", [True, True]), strict=True):
            b.setVisible(visible)
        if not saved.get("full"):
            w.showMaximized() if saved.get("maximized") else w.showNormal()
        self.leave_action.setEnabled(False)
        self._sync()
        w.statusBar().showMessage(translate("presenter", "presenter mode left (F5 enters again)"), 4000)

    def _sync(self) -> None:
        self.present_action.blockSignals(True)
        self.present_action.setChecked(self.active)
        self.present_action.blockSignals(False)
        self.changed.emit(self.active)
