"""☰ → Language: English or Português (Brasil), one checkable choice each, the one in use checked.

The choice is remembered in the window's settings (``i18n.SETTING``, "language") and read when kvsim
starts (``i18n.choose``): Qt's widgets keep the strings they were made with, so a new language takes
effect on the next start, and the status bar says so. A window without settings (``persist=False``,
tests and screenshots) only says so.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, QSettings
from PySide6.QtGui import QAction, QActionGroup
from PySide6.QtWidgets import QMenu

from .. import i18n
from ..i18n import translate


class LanguageSetting(QObject):
    def __init__(
        self, settings: QSettings | None, menu: QMenu, say: Callable[[str], None], parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self.settings, self.say = settings, say
        self.menu = menu.addMenu(translate("language_menu", "Language"))
        group = QActionGroup(self)
        self.actions: dict[str, QAction] = {}
        current = i18n.language()
        for code, name in i18n.LANGUAGES.items():  # each language named in itself: findable by a reader of either
            a = self.menu.addAction(name)
            a.setCheckable(True)
            a.setChecked(code == current)
            a.setData(code)
            a.triggered.connect(lambda _checked=False, c=code: self.choose(c))
            group.addAction(a)
            self.actions[code] = a

    def chosen(self) -> str:
        """The language checked in the menu (the one in use until another is chosen)."""
        return next(code for code, a in self.actions.items() if a.isChecked())

    def choose(self, code: str) -> None:
        """Check ``code`` ("en" / "pt_BR"), remember it (with settings), and say when it takes effect."""
        code = i18n.normalize(code) or i18n.DEFAULT
        self.actions[code].setChecked(True)
        if self.settings is not None:
            self.settings.setValue(i18n.SETTING, code)
        name = i18n.LANGUAGES[code]
        if code == i18n.language():
            self.say(translate("language_menu", "{language} is the language in use").format(language=name))
        else:
            self.say(translate("language_menu", "{language} takes effect when kvsim restarts").format(language=name))
