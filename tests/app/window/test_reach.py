"""Reach from a script and the keyboard (issue 31): ``kvsim --model M --lanes … --prompt …`` opens the app on
that run; Enter in the lane or prompt box gives the keys back to the stage; the step buttons keep their
width (Play ↔ Pause moves nothing); the popups show whole items; lane headers in words, the spec in the
tooltip. One window serves every check."""

from __future__ import annotations

import os
import sys
import types

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402

MODEL = "random:family=llama,layers=2,heads=4,kv_heads=2,dim=64,ctx=256,seed=0"  # small: the window is what is tested
LANES = "kv,kv@w8,kv@w4:g32"
PROMPT = "Era uma vez um cache"


def test_the_command_line_hands_model_lanes_and_prompt_to_the_app(monkeypatch):
    """``kvsim --model … --lanes … --prompt …`` parses at the top level (no subcommand) and reaches ``app.main``."""
    import kvsim.ui
    from kvsim.cli import entry

    called = {}
    fake = types.ModuleType("kvsim.ui.app")
    fake.main = lambda **kwargs: called.update(kwargs) or 0  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "kvsim.ui.app", fake)
    monkeypatch.setattr(kvsim.ui, "app", fake, raising=False)
    assert entry.main(["--model", MODEL, "--lanes", LANES, "--prompt", PROMPT]) == 0
    assert called == {"model": MODEL, "lang": None, "threads": None, "lanes": LANES, "prompt": PROMPT}
    assert entry.parse(["--prompt", "run", "--lanes", "kv"]).command is None  # "run" here is the prompt's text
    assert entry.main(["--lanes", " , "]) == 2  # no lane at all: one error line, no window


@pytest.fixture(scope="module")
def window(qapp):
    from kvsim.ui import theme
    from kvsim.ui.shell.window import MainWindow

    theme.apply(qapp)
    w = MainWindow(model=MODEL, prompt=PROMPT, lanes=LANES, persist=False)
    w.animator.set_speed("instant")
    w.resize(1280, 720)
    w.show()
    assert w.controller.wait_ready(60), w.controller.last_error
    yield w
    w.shutdown()
    w.close()


def test_the_app_opens_on_the_run_the_command_line_asked_for(window):
    s = window.session
    assert [lane.name for lane in s.lanes] == LANES.split(",")
    assert PROMPT in s.run.prompt_text
    assert window.toolbar.lanes_box.currentData() == LANES


def test_enter_in_the_lane_or_prompt_box_gives_the_keys_back_to_the_stage(window, qtbot):
    from kvsim.ui.shell.toolbar import editor

    central = window.centralWidget()
    for box in (window.toolbar.lanes_box, window.toolbar.prompt_box):
        line = editor(box)
        line.setFocus()
        assert window.focusWidget() in (line, box)  # the box is its line edit's focus proxy
        QTest.keyClick(line, Qt.Key.Key_Return)
        assert window.focusWidget() is central, box
    qtbot.waitUntil(lambda: window.controller.can_step, timeout=20_000)  # the restart Enter asked for


def test_play_and_pause_keep_every_step_button_in_place(window):
    tb = window.toolbar
    buttons = [tb.widgetForAction(a) for a in (tb.reset_action, tb.back_action, tb.step_action, tb.play_action)]
    before = [(b.x(), b.width()) for b in buttons]
    play = tb.widgetForAction(tb.play_action)
    texts = tb.button_texts()[tb.play_action]
    assert all(play.fontMetrics().horizontalAdvance(t) < play.width() for t in texts)  # either text fits whole
    tb.show_playing(True)
    tb.layout().activate()  # the toolbar lays its buttons out again now, as a paint would
    assert [(b.x(), b.width()) for b in buttons] == before
    tb.show_playing(False)
    tb.layout().activate()
    assert [(b.x(), b.width()) for b in buttons] == before


def test_the_lane_and_prompt_popups_show_whole_items(window):
    for box in (window.toolbar.lanes_box, window.toolbar.prompt_box):
        view = box.view()
        widest = max(view.fontMetrics().horizontalAdvance(box.itemText(i)) for i in range(box.count()))
        room = box.screen().availableGeometry().width() - 16
        assert view.textElideMode() == Qt.TextElideMode.ElideNone
        assert view.minimumWidth() >= min(widest, room), box.itemText(0)


def test_lane_headers_say_the_lane_in_words_with_the_spec_in_the_tooltip(window, qapp):
    from kvsim.ui import i18n
    from kvsim.ui.lanes import policy_text

    s = window.session
    header = window.lane_panels[2].header
    assert "kv@w4:g32" in header.toolTip()
    assert "kv@w4:g32" not in header.text()
    i18n.install(qapp, "pt_BR")
    try:
        assert policy_text.lane_label(s, 1) == "KV cache · pesos INT8"
    finally:
        i18n.install(qapp, "en")


def test_weight_lane_headers_stay_in_words_three_lanes_at_853_px(window, qapp):
    """Three lanes on a projector (853 px logical): ~260 px a header. "KV cache · weights INT4 (g32)" does not
    fit, so a weights lane's header says its format alone ("weights INT4 (g32)"), never its spec."""
    from kvsim.ui import i18n

    window.resize(853, 480)
    try:
        for lang, word in (("en", "weights"), ("pt_BR", "pesos")):
            i18n.install(qapp, lang)
            for _ in range(20):
                qapp.processEvents()
            for panel in window.lane_panels:
                panel._set_header()  # the language changed: the header is written again (as on a new run)
                text = panel.header.text()
                assert panel.info.name not in text, (lang, text)
            assert f"{word} INT8" in window.lane_panels[1].header.text()
            assert f"{word} INT4 (g32)" in window.lane_panels[2].header.text()
    finally:
        i18n.install(qapp, "en")
        window.resize(1280, 720)


def test_a_weights_lane_says_the_bytes_it_holds_beside_the_full_weights(window):
    """The comparison a weights lane exists for, on the lane itself: "weights 1.23 MB · 0.26× fp32"."""
    from kvsim.ui.lanes.text import weights_line

    meta = window.session.run.meta
    full = meta["lanes"][0]["weight_bytes"]
    assert weights_line(meta, 0) == ""  # the weights as loaded: nothing to compare
    window.controller.run_steps(1)
    for panel in window.lane_panels[1:]:
        held = meta["lanes"][panel.index]["weight_bytes"]
        panel.redraw()
        assert f"{held / full:.2f}×</b> fp32" in panel.readout.text(), panel.readout.text()


def test_the_model_box_paints_a_whole_shorter_form_of_a_long_item(window):
    """A random model's spec or a preset's long name in a 132 px box: a shorter form of it, words whole."""
    from kvsim.ui.shell.toolbar import RANDOM_PRESETS, model_forms

    label, spec = RANDOM_PRESETS[4]  # the hybrid
    assert model_forms(label, spec)[:3] == [label, label.split(" (")[0], label.split(" (")[0].split(" · ", 1)[1]]
    assert model_forms("random:family=mla,heads=8", "random:family=mla,heads=8")[-2:] == ["random · mla", "mla"]
    assert model_forms("tiny (bundled)", "tiny") == ["tiny (bundled)", "tiny"]
    box = window.toolbar.model_box
    box.insertItem(0, spec, spec)
    try:
        box.setCurrentIndex(0)
        shown = box.shown_text()
        assert shown in model_forms(spec, spec) and box.fontMetrics().horizontalAdvance(shown) <= box.width()
    finally:
        box.removeItem(0)


def test_narrow_lane_headers_say_a_policy_by_name_and_tell_twins_apart(window, qtbot):
    """Three lanes at 853 px: "H2O", not "h2o:8:r8"; two speculative lanes by their drafts, not their specs."""
    import re

    window.resize(853, 480)
    window.controller.set_lanes("h2o:8:r8,spec:4:lookup,spec:4:early:2")
    qtbot.waitUntil(lambda: window.controller.can_step and len(window.lane_panels) == 3, timeout=20_000)
    for _ in range(20):
        qtbot.wait(10)
    heads = [re.sub(r"<[^>]+>", "", p.header.text()).lstrip("● ") for p in window.lane_panels]
    assert heads[0].startswith("H2O") and heads[1:] == ["Spec. k=4 · lookup", "Spec. k=4 · early:2"], heads


def _plain(html: str) -> str:
    import re
    from html import unescape

    return unescape(re.sub(r"<[^>]+>", "", html)).lstrip("● ")


def test_four_lane_headers_at_853_px_say_every_policy_in_words_in_both_languages(window, qapp, qtbot):
    """Every registered policy's example, four lanes at a time at 853 px (~200 px a header), in English and
    Portuguese: the header's lane name is words ("janela 16", "H2O 8+8"), never its spec or a part of it, and it
    fits the header whole. The first four are the talk's: kv, window:16, sink:4+window:12, h2o:8:r8."""
    from PySide6.QtGui import QFont, QFontMetrics

    from kvsim.caches import policy_examples
    from kvsim.ui import i18n

    specs = ["kv", "window:16", "sink:4+window:12", "h2o:8:r8"]
    specs += [e for e, _ in policy_examples() if e not in specs]
    window.resize(853, 480)
    seen: dict[tuple[str, str], str] = {}
    try:
        for start in range(0, len(specs), 4):
            batch = specs[start : start + 4]
            batch += ["none", "kv", "window:16"][: 4 - len(batch)]  # four lanes in every batch
            window.controller.set_lanes(",".join(batch))
            qtbot.waitUntil(
                lambda b=batch: window.controller.can_step and [p.info.name for p in window.lane_panels] == b, timeout=30_000
            )
            for lang in ("en", "pt_BR"):
                i18n.install(qapp, lang)
                for _ in range(10):
                    qapp.processEvents()
                for panel in window.lane_panels:
                    panel._set_header()
                    head = panel.header
                    name = _plain(head.text()).split(" — ")[0]
                    seen[(lang, panel.info.name)] = name
                    spec = panel.info.name
                    assert spec not in name and not any(part in name for part in spec.split("+") if ":" in part), (
                        lang,
                        spec,
                        name,
                    )
                    bold = QFont(head.font())
                    bold.setBold(True)
                    assert QFontMetrics(bold).horizontalAdvance(f"● {name}") <= head.width() - 12, (
                        lang,
                        spec,
                        name,
                        head.width(),
                    )
    finally:
        i18n.install(qapp, "en")
    assert seen[("pt_BR", "window:16")] in ("janela 16", "janela deslizante (últimas 16)"), seen
    assert seen[("en", "h2o:8:r8")].startswith("H2O"), seen
