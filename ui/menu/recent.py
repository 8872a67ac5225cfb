"""Recent runs and demo sessions in the ☰ menu.

* **Recent runs**: the saved runs (.kvsim) last opened or saved, newest first, remembered in QSettings
  ("recent"); a file that no longer exists is dropped from the list with a message when picked.
* **Demos**: the runs bundled in ``resources/demos`` (made by ``scripts/make_demos.py`` from the bundled
  model): they open at once, without a model or a computation — for a talk.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, QSettings, Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QMenu, QWidget

from kvsim.core.words import QT_TRANSLATE_NOOP  # typed str, found by pyside6-lupdate as Qt's

from ..i18n import translate

MAX_RECENT = 8
DEMO_TITLES = (  # the bundled demos' titles (demos.json), so the menu shows them in the app's language
    QT_TRANSLATE_NOOP("recent", "No cache vs KV cache (the default pair) — tiny"),
    QT_TRANSLATE_NOOP("recent", "KV cache vs a sliding window vs sinks + window — tiny"),
    QT_TRANSLATE_NOOP("recent", "KV cache vs int8 and int4 caches (R = 2 exact rows) — tiny"),
)


def demos_dir() -> Path:
    from kvsim.models.base import resources_dir

    return resources_dir() / "demos"


def demos() -> list[tuple[str, Path]]:
    """(title, path) of every bundled demo run, in the order of ``demos.json`` (then any others)."""
    folder = demos_dir()
    if not folder.is_dir():
        return []
    titles: dict[str, str] = {}
    index = folder / "demos.json"
    if index.is_file():
        try:
            titles = {str(d["file"]): str(d["title"]) for d in json.loads(index.read_text(encoding="utf-8"))}
        except (ValueError, KeyError, TypeError):
            titles = {}
    files = sorted(folder.glob("*.kvsim"), key=lambda p: (list(titles).index(p.name) if p.name in titles else 99, p.name))
    return [(titles.get(p.name, p.stem), p) for p in files]


class RecentRuns(QObject):
    def __init__(
        self, settings: QSettings | None, menu: QMenu, open_path: Callable[[str], bool], say: Callable[..., None], parent=None
    ) -> None:
        super().__init__(parent)
        self.settings, self.open_path, self.say = settings, open_path, say
        saved = settings.value("recent") if settings is not None else None
        if isinstance(saved, str):
            saved = [saved]
        self._paths: list[str] = [str(p) for p in (saved or []) if p][:MAX_RECENT]
        self.menu = menu.addMenu(translate("recent", "Recent runs"))
        self.demos_menu = menu.addMenu(translate("recent", "Demos (open instantly)"))
        self.menu.aboutToShow.connect(self._fill)
        self._fill()
        self._fill_demos()

    def paths(self) -> list[str]:
        return list(self._paths)

    def add(self, path: str) -> None:
        """``path`` was opened or saved: first in the list."""
        p = str(Path(path).resolve())
        if Path(p).parent == demos_dir().resolve():
            return  # the demos have their own menu
        self._paths = [p] + [q for q in self._paths if q != p]
        del self._paths[MAX_RECENT:]
        self._save()
        self._fill()

    def remove(self, path: str) -> None:
        self._paths = [q for q in self._paths if q != path]
        self._save()
        self._fill()

    def open(self, path: str) -> bool:
        if not Path(path).is_file():
            self.remove(path)
            self.say(translate("recent", "{path} no longer exists: removed from the recent runs").format(path=path), True)
            return False
        return self.open_path(path)

    def _save(self) -> None:
        if self.settings is not None:
            self.settings.setValue("recent", self._paths)

    def _fill(self) -> None:
        self.menu.clear()
        for p in self._paths:
            self.menu.addAction(f"{Path(p).name} — {Path(p).parent}", _call(self.open, p))
        if not self._paths:
            self.menu.addAction(translate("recent", "(none yet: runs you open or save appear here)")).setEnabled(False)
        else:
            self.menu.addSeparator()
            self.menu.addAction(translate("recent", "Clear the list"), self._clear)

    def _clear(self) -> None:
        self._paths = []
        self._save()
        self._fill()

    def _fill_demos(self) -> None:
        self.demos_menu.clear()
        found = demos()
        parent = self.parent()
        window = parent if isinstance(parent, QWidget) else None
        for i, (title, path) in enumerate(found):
            shown = translate("recent", title) if title in DEMO_TITLES else title  # a demo added later: as written
            action = self.demos_menu.addAction(shown, _call(self.open_path, str(path)))
            if i < 9 and window is not None:  # Alt+1 … Alt+9: a demo in one key, the menu closed (the stage's ideas)
                action.setShortcut(QKeySequence(f"Alt+{i + 1}"))
                action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
                window.addAction(action)
        if not found:
            self.demos_menu.addAction(translate("recent", "(no demos bundled: scripts/make_demos.py makes them)")).setEnabled(
                False
            )


def _call(slot: Callable[[str], object], path: str) -> Callable[[], object]:
    """A menu item's slot: ``slot(path)`` with the item's own path (no argument from the menu)."""
    return lambda: slot(path)
