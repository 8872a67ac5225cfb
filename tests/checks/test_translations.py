"""Portuguese: one .ts for the language, made by pyside6-lupdate from the project file that lists every
source; every message translated (placeholders kept) in the glossary's words; the shipped .qm compiled
from it; numbers follow the locale, and the app started in pt_BR shows no English on any screen."""

from __future__ import annotations

import json
import re
import sys
import xml.etree.ElementTree as ET

import pytest
from glossary_check import problems, words_only
from helpers import ROOT, ready_window

TRANSLATIONS = ROOT / "resources" / "translations"
TS = TRANSLATIONS / "kvsim_pt_BR.ts"
QM = TRANSLATIONS / "kvsim_pt_BR.qm"
PROJECT = TRANSLATIONS / "kvsim.json"
GLOSSARY = TRANSLATIONS / "glossary.json"
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


def _messages() -> list[tuple[str, str, ET.Element | None]]:
    """(context, source, translation) of every message of the one Portuguese .ts."""
    out = []
    for context in ET.parse(TS).getroot().iter("context"):
        name = context.findtext("name") or ""
        for message in context.iter("message"):
            out.append((name, message.findtext("source") or "", message.find("translation")))
    return out


def _text(tr: ET.Element | None) -> str:
    return "".join(tr.itertext()) if tr is not None else ""


def test_one_ts_per_language_and_no_other() -> None:
    """Qt's convention: one .ts per language, opened whole in Qt Linguist (the per-module files are gone)."""
    assert sorted(p.name for p in TRANSLATIONS.rglob("*.ts")) == ["kvsim_pt_BR.ts"]
    assert ET.parse(TS).getroot().get("language") == "pt_BR"
    project = json.loads(PROJECT.read_text(encoding="utf-8"))
    assert project["translations"] == ["resources/translations/kvsim_pt_BR.ts"]
    # the project lists every module of the engine and the app, each one there
    listed = set(project["sources"])
    on_disk = {p.relative_to(ROOT).as_posix() for part in ("kvsim", "ui") for p in (ROOT / part).rglob("*.py")}
    on_disk = {p for p in on_disk if not p.startswith(("kvsim/ui/", "kvsim/resources/"))}  # a worktree's links to ui/, resources/
    assert listed == on_disk
    assert "ui/shell/window.py" in listed and "kvsim/caches/kv.py" in listed


def test_every_message_is_translated_and_keeps_its_placeholders() -> None:
    messages = _messages()
    assert len(messages) >= 500, f"only {len(messages)} translatable strings: is the interface wrapped in translate()?"
    assert len({c for c, _, _ in messages}) >= 40  # every module's context, in the one file
    for context, source, tr in messages:
        text = _text(tr)
        assert tr is not None and tr.get("type") is None and text.strip(), f"[{context}] untranslated: {source!r}"
        assert sorted(PLACEHOLDER.findall(source)) == sorted(PLACEHOLDER.findall(text)), (context, source, text)


def _term(text: str) -> str:
    return r"(?<![\w-])" + re.escape(text) + r"(?![\w-])"


def test_every_message_uses_the_glossarys_words() -> None:
    """Each concept one Portuguese word: a message whose English names a glossary term says it the glossary's
    way (a longer term that holds a shorter one is checked as itself: "KV cache", not "cache"), and none uses
    a form the glossary forbids ("a cache": o cache is masculine)."""
    glossary = json.loads(GLOSSARY.read_text(encoding="utf-8"))
    terms = glossary["terms"]
    english = {t["en"].lower() for t in terms}
    assert {"cache", "kv cache", "cached", "batch", "prefill", "decode", "attention sinks", "prefix caching", "lane"} <= english
    assert next(t for t in terms if t["en"] == "cache")["gender"] == "masculine"
    assert next(t for t in terms if t["en"] == "batch")["pt_BR"] == "lote"
    messages = _messages()
    checked = 0
    for term in terms:
        longer = [t["en"] for t in terms if t is not term and re.search(_term(term["en"]), t["en"], re.I)]
        accepted = [term["pt_BR"], *term.get("forms", [])]
        for context, source, tr in messages:
            english_text = re.sub(r"`[^`]*`|\{[^}]*\}|<[^>]*>", "", source)  # code, placeholders and markup are not words
            for other in longer:
                english_text = re.sub(_term(other), "", english_text, flags=re.I)
            if re.search(_term(term["en"]), english_text, re.I):
                checked += 1
                assert any(a.lower() in _text(tr).lower() for a in accepted), (
                    f"[{context}] {source!r}: {term['en']!r} is {term['pt_BR']!r} (glossary.json), not in {_text(tr)!r}"
                )
    assert checked >= 300  # the glossary's terms are the interface's everyday words
    for rule in glossary["forbidden"]:
        for context, _source, tr in messages:  # on the prose: {placeholders}, `code` and lane specs are names
            assert not re.search(rule["pattern"], words_only(_text(tr)), re.I), f"[{context}] {_text(tr)!r}: {rule['why']}"


def test_the_glossary_catches_a_feminine_cache() -> None:
    """The forbidden patterns are not vacuous: the old translations' feminine forms would fail them."""
    rules = [r["pattern"] for r in json.loads(GLOSSARY.read_text(encoding="utf-8"))["forbidden"]]
    for wrong in ("lida da cache", "a KV cache", "KV cache paginada", "sua própria cache", "nada na cache", "o cache KV"):
        assert any(re.search(p, wrong, re.I) for p in rules), wrong
    for right in ("lida do cache", "o KV cache", "KV cache paginado", "políticas de cache separadas", "nada em cache"):
        assert not any(re.search(p, right, re.I) for p in rules), right


def test_the_shipped_qm_is_built_from_the_ts(qapp, tmp_path) -> None:
    """Rebuilding the .qm from the .ts gives the shipped file, and the shipped file answers every message."""
    from PySide6.QtCore import QTranslator

    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import build_translations
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    rebuilt = tmp_path / "rebuilt.qm"
    build_translations.release(TS, rebuilt)
    shipped, fresh = QTranslator(), QTranslator()
    assert shipped.load(str(QM)), f"{QM} is missing: run scripts/build_translations.py"
    assert fresh.load(str(rebuilt))
    for context, source, tr in _messages():
        assert fresh.translate(context, source) == _text(tr)
        assert shipped.translate(context, source) == _text(tr), f"the .qm is older than the .ts for {source!r}"
    assert QM.read_bytes() == rebuilt.read_bytes()


# that the .ts holds every string of the code (lupdate over every source into a copy: nothing new, nothing stale)
# is `python scripts/build_translations.py --check`, which .ci/run runs beside pytest; the test below shows the
# check is not vacuous


def test_the_check_notices_a_new_string(tmp_path) -> None:
    """The --check is not vacuous: lupdate over a source with a string the .ts lacks adds an unfinished message."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import build_translations
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    source = tmp_path / "extra.py"
    source.write_text('translate("test.extra", "a string no translator has seen")\n', encoding="utf-8")
    project = tmp_path / "project.json"
    project.write_text(json.dumps({"projectFile": str(project), "sources": [str(source)]}), encoding="utf-8")
    ts = tmp_path / "copy.ts"
    ts.write_bytes(TS.read_bytes())
    build_translations.update(project, ts, "pt_BR")
    assert build_translations.unfinished(ts) == ["[test.extra] 'a string no translator has seen'"]


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


def test_powers_of_ten_and_formatted_fields_follow_the_locale(qapp) -> None:
    """One place writes every number the app shows (ui/i18n.py): in Portuguese the decimal comma, the
    thousands dot and powers of ten as a lecturer writes them — "|Δ| ≤ 6e-06" was shown as the engine's
    notation — and the views' readouts use it; in English nothing changes."""
    from types import SimpleNamespace

    from kvsim.ui import i18n
    from kvsim.ui.docks.requests.timeline import latency_lines
    from kvsim.ui.lanes.text import Progress, readout_html

    lane = SimpleNamespace(
        recompute_diff=6.2e-06, logit_diff=0.0123, kl_div=4.5e-05, cache_tokens=12, cache_bytes=56_200, context=12,
        flops=1.23e9, wall_ms=3.456,
    )  # fmt: skip
    request = SimpleNamespace(
        index=0, arrival_step=2, ttft_ms=12.25, itl_gaps_ms=[3.5, 7.25], token_steps=[2, 3, 5], preemptions=0
    )
    readout = [lambda: readout_html(lane, {}, "#fff", Progress(12.0, 1.0, 12, 12), False, False, False)]
    compared = SimpleNamespace(**{**vars(lane), "recompute_diff": None})  # a lane that keeps its past: compared instead
    readout.append(lambda: readout_html(compared, {}, "#fff", Progress(12.0, 1.0, 12, 12), False, True, False))
    try:
        i18n.install(qapp, "pt_BR")
        assert i18n.local("|Δ| ≤ 6e-06") == "|Δ| ≤ 6×10⁻⁶" and i18n.fmt(2.346e-7, ".2e") == "2,35×10⁻⁷"
        assert i18n.fmt(1000.0, ".0e") == "1×10³" and i18n.fmt(12345.678, ",.1f") == "12.345,7" and i18n.fmt(3, ".0e") == "3"
        assert (
            i18n.fill("TTFT {ms:.1f} ms, {n} tokens, ±{e:.1g}", ms=12.25, n=1234, e=3e-05) == "TTFT 12,2 ms, 1234 tokens, ±3×10⁻⁵"
        )
        for name in ("gemma3-270m", "hash 3e4a1f", "int4:g8:r8", "x1e-5"):  # names and hashes are not numbers
            assert i18n.local(name) == name
        with pytest.raises(KeyError):
            i18n.fill("{x.__class__}", x=1)  # a translation cannot reach into a value
        assert "recálculo vs original |Δ| ≤ <b>6×10⁻⁶</b>" in readout[0]() and "56,20&nbsp;KB" in readout[0]()
        assert "|Δlogit| <b>0,012</b> · KL <b>4,5×10⁻⁵</b>" in readout[1]()
        assert latency_lines(SimpleNamespace(requests=[request])) == [
            "r1: chega no passo 2, TTFT 12,2 ms, ITL mediana 5,4 ms, pior 7,2 ms (passo 5)"
        ]
        i18n.install(qapp, "en")
        assert i18n.local("|Δ| ≤ 6e-06") == "|Δ| ≤ 6e-06" and i18n.fmt(2.346e-7, ".2e") == "2.35e-07"
        assert "recomputed vs first |Δ| ≤ <b>6e-06</b>" in readout[0]() and "KL <b>4.5e-05</b>" in readout[1]()
        assert latency_lines(SimpleNamespace(requests=[request]))[0].startswith(
            "r1: arrives at step 2, TTFT 12.2 ms, ITL median 5.4 ms"
        )
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
        visible = _visible_strings(w)
        english = [(where, text) for where, text in visible if _english_words(text)]
        assert not english, "English left in pt_BR:\n" + "\n".join(f"  {where}: {text!r}" for where, text in english[:60])
        # and in the glossary's words: no "lanes", no "a cache", no English term it translates, no calque it lists
        wrong = [(where, text, p) for where, text in visible for p in problems(text)]
        assert not wrong, "against glossary.json:\n" + "\n".join(f"  {w_}: {t!r}: {p}" for w_, t, p in wrong[:40])
        assert len(visible) >= 150  # the walk saw the window: menus, docks, plots, the lesson
        w.shutdown()
    finally:
        i18n.install(qapp, "en")
