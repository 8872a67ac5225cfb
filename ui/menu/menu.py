"""The ☰ menu of the main window and the window-wide keys it lists: runs (save, open, recent), the
views (each view's key: a dock on the desktop layout, the view on the stage), the lesson, the lanes'
options, presenter mode, theme, language, the shortcut sheet, export, the default layout."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtGui import QKeySequence

from ..export import menu as export
from ..i18n import translate
from ..shell import dialogs
from ..shell.presenter import Presenter, install_keys
from . import shortcuts
from .appearance import ThemeSetting
from .language_menu import LanguageSetting
from .recent import RecentRuns


@dataclass
class WindowMenu:
    """What ``build`` made; the window keeps each as its own attribute."""

    recent: RecentRuns
    presenter: Presenter
    theme_setting: ThemeSetting
    language_setting: LanguageSetting


def build(w) -> WindowMenu:
    """Fill ``w.toolbar.menu`` and give ``w`` its keys (they work with the menu closed). ``w`` is the
    main window (not annotated: the window imports this module)."""
    menu = w.toolbar.menu
    save = menu.addAction(translate("window", "Save run…"), lambda: (path := dialogs.ask_save_run(w)) and w.save_run(path))
    save.setShortcut(QKeySequence.StandardKey.Save)
    opened = menu.addAction(translate("window", "Open run…"), lambda: (path := dialogs.ask_open_run(w)) and w.open_run(path))
    opened.setShortcut(QKeySequence.StandardKey.Open)
    w.addActions([save, opened])
    recent = RecentRuns(w.settings, menu, w.open_run, w.show_message, w)
    menu.addSeparator()
    menu.addMenu(w.lanes.menu)
    sets = menu.addMenu(translate("window", "Lane sets (L: the next one)"))
    sets.aboutToShow.connect(lambda: _fill_lane_sets(sets, w.toolbar))
    w.stage.install_keys(w, menu)  # ☰ → Views: one key per view
    menu.addAction(w.lesson_action)
    w.lesson_action.toggled.connect(w.stage.set_lesson)
    free = menu.addAction(translate("window", "Free-running lanes (each continues on its own choice)"))
    free.setCheckable(True)
    free.toggled.connect(w.controller.set_free_running)
    errors = menu.addAction(translate("window", "K/V error vs exact (lossy lanes)"))
    errors.setCheckable(True)
    errors.toggled.connect(lambda on: (w.derived.set_show_error(on), [p.redraw() for p in w.lanes.shown()]))
    menu.addSeparator()
    presenter = Presenter(w, w.toolbar)
    theme_setting = ThemeSetting(w.settings, menu, w)
    language_setting = LanguageSetting(w.settings, menu, lambda text: w.statusBar().showMessage(text, 8000), w)
    presenter.changed.connect(w._on_presenting)
    menu.addActions([presenter.present_action, presenter.fullscreen_action, shortcuts.install(w)])
    install_keys(w, w.toolbar)
    export.install(w)  # ☰ → Export for slides, and its keys
    menu.addAction(translate("window", "Default layout"), w.default_layout)
    return WindowMenu(recent, presenter, theme_setting, language_setting)


def _fill_lane_sets(sets, toolbar) -> None:
    """☰ → Lane sets: the lane chooser's presets (what L cycles through), the current one checked."""
    sets.clear()
    box = toolbar.lanes_box
    for i in range(box.count()):
        action = sets.addAction(box.itemText(i))
        action.setCheckable(True)
        action.setChecked(i == box.currentIndex())
        action.triggered.connect(lambda _checked=False, i=i: toolbar.choose_lanes_at(i))
