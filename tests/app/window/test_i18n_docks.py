"""The export dialogs, the lesson panel, the memory and the roofline docks in Portuguese: every visible
string of theirs is translated (a walk over their widgets finds no English source string left), the
numbers use the locale's separators, and in English the sentences the views say again for the engine
(``views.memory_words``, ``views.roofline_words``) are exactly the engine's own."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
from glossary_check import problems
from helpers import ROOT, ready_window
from PySide6.QtWidgets import QAbstractButton, QComboBox, QLabel, QTabWidget, QWidget

from kvsim.costs import roofline
from kvsim.costs.memory import formula_rows_text, lane_bill
from kvsim.costs.presets import PRESETS, context_warning
from kvsim.ui import i18n
from kvsim.ui.lanes import policy_text

TS = ROOT / "resources" / "translations" / "kvsim_pt_BR.ts"
MODULES = (
    "export",
    "export_dialogs",
    "lesson",
    "views.memory_dock",
    "views.memory_form",
    "views.memory_live",
    "views.memory_plot",
    "views.memory_words",
    "views.roofline",
    "views.roofline_plot",
    "views.roofline_preset",
    "views.roofline_words",
)
LANES = "uncached,cached,window:6,int8:g4:r2"
ENGLISH_WORDS = re.compile(r"\b(the|of|and|with|per|from|this|its|is|are|at|to|by|for)\b")


def english_left() -> set[str]:
    """The source strings of these modules whose Portuguese differs (placeholders cut out: a shown
    string is matched on its fixed words)."""
    out = set()
    contexts = [c for c in ET.parse(TS).getroot().iter("context") if c.findtext("name") in MODULES]
    assert len(contexts) == len(MODULES), "a module of these docks has no strings in the .ts"
    for context in contexts:
        for m in context.iter("message"):
            source, tr = m.findtext("source") or "", m.findtext("translation") or ""
            if source != tr:
                for piece in re.split(r"\{\w*\}", re.sub(r"<[^>]+>", "", source)):
                    if len(piece.strip()) >= 12:  # a fragment long enough to be a sentence of its own
                        out.add(piece.strip())
    return out


def shown_texts(root: QWidget) -> list[str]:
    """Every label, button, tooltip, combo item and tab title under ``root``."""
    texts = []
    for w in [root, *root.findChildren(QWidget)]:
        texts.append(w.toolTip())
        if isinstance(w, QLabel | QAbstractButton):
            texts.append(re.sub(r"<[^>]+>", "", w.text()))
        if isinstance(w, QComboBox):
            texts += [w.itemText(i) for i in range(w.count())]
        if isinstance(w, QTabWidget):
            texts += [w.tabText(i) for i in range(w.count())] + [w.tabToolTip(i) for i in range(w.count())]
    return [t for t in texts if t]


@pytest.fixture
def portuguese(qapp):
    i18n.install(qapp, "pt_BR")
    yield qapp
    i18n.install(qapp, "en")


# ---------------------------------------------------------------------------------- English = the engine's
def test_the_views_words_equal_the_engines_sentences_in_english(qapp) -> None:
    from kvsim.ui.docks.memory import words as memory_words
    from kvsim.ui.docks.roofline import words as roofline_words

    i18n.install(qapp, "en")
    for p in PRESETS.values():
        for tokens in (1, p.context, p.context + 1, 128_000, 1_000_000):
            assert memory_words.context_warning(p, tokens) == context_warning(p, tokens)
    for layers, window, pattern in (
        (4, None, None),
        (26, None, (512,) * 5 + (None,) * 1),
        (32, 4096, None),
        (18, 256, (512, None)),
    ):
        windows = pattern and tuple((pattern * layers)[:layers])
        assert memory_words.rows_text(layers, window, windows) == formula_rows_text(layers, window, windows)
    lanes = [{"name": "uncached", "policy": "none", "reuses_past": False}, {"name": "int8", "policy": "int8"}]
    lanes += [{"name": "int4", "policy": "int4", "options": {"group": 4, "residual": 2}}]
    lanes += [{"name": "paged:16", "policy": "paged", "options": {"block_size": 16}}]
    for lane in lanes:
        for tokens in (1, 40, 5000):
            bill = lane_bill(lane, 30, 3, 64, tokens, 1)
            assert policy_text.why(bill) == bill.why
    sparse = lane_bill({"name": "kv", "policy": "kv"}, 4, 1, 32, 40, 1, latent=(128, 16), indexer=(32, 16))
    assert sparse is not None and "indexer keys" in sparse.why and policy_text.why(sparse) == sparse.why
    for i, (flops, nbytes, seconds) in enumerate(((3, 7, 1e-7), (2_113_929_216, 1_234_567, 0.0042), (5e17, 3e15, 12.5))):
        for component in roofline.COMPONENTS:
            held = 40 + i if i == 1 else None  # sparse attention: read 10 of 41 rows held
            p = roofline.RooflinePoint(
                i, 0, "kv", "decode" if i else "prefill", component, int(flops), int(nbytes), seconds, 1 + i, 9 + i, held
            )
            assert roofline_words.describe(p, "KV cache") == p.describe("KV cache") and roofline_words.describe(p) == p.describe()
            assert roofline_words.brief(p) == p.brief()


# ---------------------------------------------------------------------------------- Portuguese
def test_the_docks_and_the_lesson_have_no_english_left_in_portuguese(qtbot, portuguese) -> None:
    w = ready_window(qtbot, portuguese, "tiny", "O cache de chaves e valores", lanes=LANES, size=(1600, 900))
    assert w.controller.run_steps(8)
    views = {}
    for name in ("memory", "roofline"):
        dock = w.extra_docks[name]
        dock.setVisible(True)
        views[name] = dock.build()
    memory, roof = views["memory"], views["roofline"]
    qtbot.waitUntil(lambda: roof.peaks is not None, timeout=60_000)
    # sentences built from the engine's figures, in Portuguese, with the locale's separators
    live = " ".join(row[3] for row in memory.live.rows)
    assert "quantizados levam escalas e pontos zero" in live and "fórmula = real ✓" in memory.live.summary.text()
    assert re.search(r"passo 7 \(decode\) — .*linha, \d+,\d+ FLOP/byte", roof.hover.text()), roof.hover.text()
    assert "limitado por memória" in roof.preset.sentence.text() and "54,3 ms" in roof.preset.sentence.text()
    roof.show_box.setCurrentIndex(roof.show_box.count() - 1)  # all three components: the key's longer line
    texts = [roof.key.text()]
    for view in (*views.values(), roof.preset):
        texts += shown_texts(view)
    memory.show_preset("llama-3-70b", 128_000)  # the context warning
    assert "lê no máximo 8.192 tokens" in memory.warning.text() and "llama-3.1-70b" in memory.warning.text()
    assert "= <b>41.943.040.000 B</b> (41,94 GB)" in memory.form.formula.text()
    texts += shown_texts(memory)
    w.lesson_dock.setVisible(True)  # the lesson's first step (it sets its own lanes)
    qtbot.waitUntil(lambda: w.lesson.done or bool(w.lesson.problem), timeout=60_000)
    texts += shown_texts(w.lesson.panel)
    english = english_left()
    left = sorted({piece for t in texts for piece in english if piece in t})
    assert not left, left
    assert not [t for t in texts if ENGLISH_WORDS.search(t)]  # nor an English sentence that never went through translate
    assert not [(t, p) for t in texts for p in problems(t)]  # and every word is the glossary's (faixa, o cache, lote)
    assert w.lesson_dock.windowTitle() == "Lição" and w.lesson.panel.next.text() == "Próximo ▶"
    w.shutdown()


def test_export_dialogs_and_messages_in_portuguese(qtbot, portuguese, tmp_path) -> None:
    from kvsim.ui.export import menu as export
    from kvsim.ui.export.dialogs import MovieDialog, PictureDialog
    from kvsim.ui.export.movie import ExportError, check_output

    w = ready_window(qtbot, portuguese, "tiny", "O cache", size=(1280, 720))
    assert w.controller.run_steps(2)
    menu = export.install(w)
    assert menu.title() == "Exportar para slides"
    assert [a.text() for a in menu.actions()][0] == "Janela como PNG…"
    found = export.views(w)
    picture = PictureDialog({n: p is not None for n, (_, p) in found.items()}, w, {n: export.view_label(w, n) for n in found})
    qtbot.addWidget(picture)
    assert picture.view_box.currentText() == "a janela inteira" and picture.choice() == ("window", "png")
    picture.view_box.setCurrentIndex(picture.view_box.findData("costs"))
    assert picture.choice() == ("costs", "png") and picture.kind_box.count() == 3  # the costs plots have an SVG
    movie = MovieDialog(w.session.n_steps, (1280, 720), "fast", w)
    qtbot.addWidget(movie)
    assert movie.speed.currentText() == "rápida (0,25 s por passo)"
    movie.fps.setValue(12)
    assert w.session.n_steps == 2 and movie.summary.text() == "6 quadros (3 por passo), 0,5 s"  # 2 steps × 0.25 s × 12 fps
    english = english_left()
    texts = shown_texts(picture) + shown_texts(movie)
    left = sorted({piece for t in texts for piece in english if piece in t})
    assert not left, left
    assert not [t for t in texts if ENGLISH_WORDS.search(t)]
    with pytest.raises(ExportError, match="entre 1 e 50 fps, recebido 60,5"):
        check_output(tmp_path / "a.gif", (640, 360), 60.5)
    assert export.save_view(w, "window", tmp_path / "w.png").is_file()
    export._report(w, lambda: export.save_view(w, "lanes", tmp_path / "missing" / "l.png"))
    assert "a exportação falhou: a pasta não existe" in w.banner.text()
    w.shutdown()
