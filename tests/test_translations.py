"""Portuguese: every message has a translation (placeholders kept), the shipped .qm is built from the
.ts sources, numbers follow the locale, and the app started in pt_BR shows no English on any screen."""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from helpers import ready_window

ROOT = Path(__file__).resolve().parents[1]
TS_DIR = ROOT / "resources" / "translations" / "pt_BR"
QM = ROOT / "resources" / "translations" / "kvsim_pt_BR.qm"
PLACEHOLDER = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*(?:[:!][^{}]*)?\}|%n|%\d")

SPEC = r"\b(?:window|sink|int[48]|paged|kv|none|cached|uncached)(?::\w+)*(?:\+\w+(?::\w+)*)*"
# words that are English and not Portuguese: one of them in a visible string means it was not translated
# (technical words Portuguese uses as they are — cache, token, prompt, prefill, decode, lane, query, bytes — are not here)
ENGLISH = {
    "the", "of", "and", "with", "without", "to", "is", "are", "this", "that", "for", "from", "each", "every",
    "step", "steps", "rows", "row", "computed", "recomputed", "time", "memory", "show", "open", "save", "run",
    "heads", "head", "layer", "layers", "read", "new", "next", "previous", "after", "before", "speed", "loading",
    "ready", "error", "warning", "click", "press", "here", "all", "only", "keys", "values", "value", "key",
    "window", "blocks", "block", "requests", "request", "weights", "context", "hidden", "export", "theme",
    "light", "dark", "lesson", "language", "settings", "default", "layout", "free", "running", "size", "frames",
    "cancel", "close", "help", "shortcuts", "reset", "back", "play", "pause", "model", "bundled", "fetched",
    "cached", "masked", "future", "seen", "formula", "live", "plot", "measured", "per", "total", "what", "which",
}  # fmt: skip


def _messages() -> list[tuple[str, str, str, ET.Element]]:
    out = []
    for ts in sorted(TS_DIR.glob("*.ts")):
        for context in ET.parse(ts).getroot().iter("context"):
            name = context.findtext("name") or ""
            for message in context.iter("message"):
                tr = message.find("translation")
                out.append((ts.name, name, message.findtext("source") or "", tr))
    return out


def test_every_message_is_translated_and_keeps_its_placeholders() -> None:
    messages = _messages()
    assert len(messages) >= 300, f"only {len(messages)} translatable strings: is the interface wrapped in translate()?"
    for file, context, source, tr in messages:
        text = "".join(tr.itertext()) if tr is not None else ""
        assert tr is not None and tr.get("type") is None and text.strip(), f"{file} [{context}] untranslated: {source!r}"
        assert sorted(PLACEHOLDER.findall(source)) == sorted(PLACEHOLDER.findall(text)), (file, source, text)


def test_the_shipped_qm_is_built_from_the_ts_sources(qapp) -> None:
    from PySide6.QtCore import QTranslator

    t = QTranslator()
    assert t.load(str(QM)), f"{QM} is missing: run scripts/build_translations.py"
    for file, context, source, tr in _messages():
        assert t.translate(context, source) == "".join(tr.itertext()), f"{file}: the .qm is older than the .ts for {source!r}"


def test_the_ts_sources_hold_every_string_of_the_code() -> None:
    """Run lupdate over the code into a copy: nothing new, nothing stale (the script's --check)."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "build_translations.py"), "--check"], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]


def test_numbers_follow_the_locale(qapp) -> None:
    from kvsim.ui import i18n

    try:
        i18n.install(qapp, "pt_BR")
        assert i18n.num(1.5, 1) == "1,5" and i18n.integer(12345) == "12.345"
        assert i18n.local("1.23 M FLOP · 12,345 rows · 56.2 KB") == "1,23 M FLOP · 12.345 rows · 56,2 KB"
        i18n.install(qapp, "en")
        assert i18n.num(1.5, 1) == "1.5" and i18n.local("1.23 M") == "1.23 M"
    finally:
        i18n.install(qapp, "en")


@pytest.mark.parametrize("text", ["pt", "pt-BR", "pt_BR.UTF-8", "PT_br"])
def test_language_names_are_understood(text) -> None:
    from kvsim.ui import i18n

    assert i18n.normalize(text) == "pt_BR"
    with pytest.raises(i18n.LanguageError, match="pt_BR"):
        i18n.normalize("klingon")


def _english_words(text: str) -> set[str]:
    text = re.sub(r"<[^>]+>", " ", text)  # rich text
    text = re.sub(r"`[^`]*`", " ", text)  # code: commands, specs
    text = re.sub(SPEC, " ", text)  # lane specs are names (window:8, sink:4+window:12), never translated
    return {w for w in re.findall(r"[^\W\d_]+", text) if w.lower() in ENGLISH}


def _visible_strings(window) -> list[tuple[str, str]]:
    """(where, text) of every string a person can see: widgets, menus, tooltips, dock titles, plots."""
    import pyqtgraph as pg
    from PySide6.QtWidgets import (
        QAbstractButton,
        QComboBox,
        QDockWidget,
        QGroupBox,
        QLabel,
        QLineEdit,
        QMenu,
        QTableWidget,
        QTabWidget,
        QWidget,
    )

    skip = {id(window.toolbar.prompt_box), id(window.tokens)}  # the prompt and the model's own text are data
    found: list[tuple[str, str]] = [("title", window.windowTitle())]
    menus = [window.toolbar.menu]
    while menus:
        menu = menus.pop()
        found.append(("menu", menu.title()))
        for action in menu.actions():
            found += [("menu item", action.text()), ("menu tip", action.toolTip() if action.toolTip() != action.text() else "")]
            if action.menu() is not None:
                menus.append(action.menu())
    for w in window.findChildren(QWidget):
        if id(w) in skip or any(id(p) in skip for p in _parents(w)):
            continue
        name = type(w).__name__
        found.append((f"{name} tooltip", w.toolTip()))
        if isinstance(w, QLabel):
            found.append((name, w.text()))
        elif isinstance(w, QAbstractButton):
            found.append((name, w.text()))
        elif isinstance(w, QComboBox):
            found += [(f"{name} item", w.itemText(i)) for i in range(w.count())]
        elif isinstance(w, QDockWidget):
            found.append((name, w.windowTitle()))
        elif isinstance(w, QGroupBox):
            found.append((name, w.title()))
        elif isinstance(w, QLineEdit):
            found.append((f"{name} placeholder", w.placeholderText()))
        elif isinstance(w, QTabWidget):
            found += [(f"{name} tab", w.tabText(i)) for i in range(w.count())]
        elif isinstance(w, QTableWidget):
            for c in range(w.columnCount()):
                item = w.horizontalHeaderItem(c)
                found.append((f"{name} header", item.text() if item else ""))
        elif isinstance(w, QMenu):
            menus.append(w)
        if isinstance(w, pg.GraphicsView):
            for item in w.scene().items():
                if isinstance(item, pg.LabelItem):
                    found.append(("plot label", item.text))
                elif isinstance(item, pg.AxisItem):
                    found.append(("axis label", item.labelText))
                elif hasattr(item, "toPlainText") and not isinstance(item.parentItem(), pg.AxisItem):
                    found.append(("plot text", item.toPlainText()))
    found.append(("status", window.statusBar().currentMessage()))
    return [(where, text) for where, text in found if text and text.strip()]


def _parents(w):
    p = w.parentWidget()
    while p is not None:
        yield p
        p = p.parentWidget()


def test_the_app_in_portuguese_has_no_english_left(qtbot, qapp) -> None:
    from kvsim.ui import i18n

    i18n.install(qapp, "pt_BR")
    try:
        w = ready_window(qtbot, qapp, "tiny", "O cache de chaves e valores", size=(1920, 1080))
        w.controller.set_lanes("uncached,cached,window:8,int8")
        qtbot.waitUntil(lambda: w.controller.can_step and len(w.session.lanes) == 4, timeout=30_000)
        assert w.controller.run_steps(10)
        for dock in (w.costs_dock, w.text_dock, w.overview_dock, w.lesson_dock, *w.extra_docks.values()):
            dock.setVisible(True)
            if hasattr(dock, "build"):
                dock.build()
        qtbot.waitUntil(lambda: w.lesson.done or bool(w.lesson.problem), timeout=120_000)
        qapp.processEvents()
        english = [(where, text) for where, text in _visible_strings(w) if _english_words(text)]
        assert not english, "English left in pt_BR:\n" + "\n".join(f"  {where}: {text!r}" for where, text in english[:60])
        w.shutdown()
    finally:
        i18n.install(qapp, "en")
