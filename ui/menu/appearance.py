"""The theme as a setting: dark, light or system (☰ → Theme), remembered in QSettings ("theme").
"system" follows the OS colour scheme (``QStyleHints.colorScheme()``, Qt ≥ 6.5) and its changes; where
Qt cannot tell, it is dark."""

from __future__ import annotations

from PySide6.QtCore import QObject, QSettings, Qt
from PySide6.QtGui import QActionGroup, QGuiApplication
from PySide6.QtWidgets import QApplication, QMenu

from .. import theme
from ..i18n import translate

CHOICES = ("dark", "light", "system")


def system_theme() -> str:
    """The OS colour scheme as a theme name ("dark" when unknown)."""
    hints = QGuiApplication.styleHints()
    scheme = getattr(hints, "colorScheme", None)
    if scheme is None:
        return "dark"
    return "light" if scheme() == Qt.ColorScheme.Light else "dark"


class ThemeSetting(QObject):
    def __init__(self, settings: QSettings | None, menu: QMenu, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.settings = settings
        saved = settings.value("theme") if settings is not None else None
        self.choice = saved if saved in CHOICES else "dark"
        self.suspended = False  # presenter mode owns the theme while it lasts
        self.menu = menu.addMenu(translate("appearance", "Theme"))
        labels = {
            "dark": translate("appearance", "dark"),
            "light": translate("appearance", "light"),
            "system": translate("appearance", "system (follow the OS)"),
        }
        group = QActionGroup(self)
        self.actions = {}
        for name in CHOICES:
            a = self.menu.addAction(labels[name])
            a.setCheckable(True)
            a.setChecked(name == self.choice)
            a.triggered.connect(lambda _checked=False, n=name: self.choose(n))
            group.addAction(a)
            self.actions[name] = a
        hints = QGuiApplication.styleHints()
        if hasattr(hints, "colorSchemeChanged"):
            hints.colorSchemeChanged.connect(self._on_scheme_changed)

    def _on_scheme_changed(self, _scheme: Qt.ColorScheme) -> None:
        if self.choice == "system":
            self.apply()

    def resolved(self) -> str:
        return system_theme() if self.choice == "system" else self.choice

    def choose(self, name: str) -> None:
        if name not in CHOICES:
            raise ValueError(f"unknown theme setting {name!r}")
        self.choice = name
        self.actions[name].setChecked(True)
        if self.settings is not None:
            self.settings.setValue("theme", name)
        self.apply()

    def apply(self) -> None:
        """Switch the app to the chosen theme (not while presenter mode holds its own)."""
        if self.suspended:
            return
        app = QApplication.instance()
        if theme.current() != self.resolved() and isinstance(app, QApplication):
            theme.set_theme(app, self.resolved())
