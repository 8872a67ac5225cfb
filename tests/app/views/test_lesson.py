"""The guided lesson: its file is complete in both languages, and walking it puts the window in
each step's state (model, lanes, prompt, the step shown, the dock opened, the highlight on screen)."""

from __future__ import annotations

import pytest
from helpers import ready_window

from kvsim.caches import parse_lanes
from kvsim.ui.lesson.guide import LANGUAGES, load_lesson

SEED_IDEAS = {
    "second-token",
    "k-and-v",
    "past-never-changes",
    "n-squared",
    "prefill-decode",
    "memory-formula",
    "70b-128k",
    "weight-quantization",
    "kv-quantization",
    "gqa",
    "window-sinks",
    "paged",
    "prefix-caching",
    "input-output-price",  # prefill parallel and compute-bound, decode serial and memory-bound
    "per-step-cost",  # O(d²) projections, O(t·d) attention
    "append-only",
}


def test_lesson_file_covers_the_articles_in_both_languages() -> None:
    steps = load_lesson()
    assert 12 <= len(steps) <= 24
    assert SEED_IDEAS <= {s.id for s in steps}
    assert len({s.id for s in steps}) == len(steps)
    for s in steps:
        parse_lanes(s.lanes)  # every lane spec is one the registry builds
        for lang in LANGUAGES:
            assert 80 <= len(s.text[lang]) <= 520, (s.id, lang, len(s.text[lang]))  # one short paragraph
        assert s.text["en"] != s.text["pt"] and s.title["en"] != s.title["pt"] or s.id == "prefix-caching"


# one language here: the runs are the same in both but for the prompt, and the Portuguese walk is made by the layout
# probe (tests/app/window/test_layout.py: every step reached, in both languages, on the projector's stage) and the
# clicker test below (every page of every step, in both languages); a second walk here cost a minute of a core
@pytest.mark.parametrize("lang", ["en"])
def test_walking_the_lesson_reaches_every_state(qtbot, qapp, lang) -> None:
    w = ready_window(qtbot, qapp, "tiny", "Hello", size=(1600, 900))
    dock, lesson = w.lesson_dock, w.lesson
    lesson.set_language(lang)
    dock.setVisible(True)
    for i, step in enumerate(lesson.steps):
        if i:
            lesson.next()
        assert lesson.index == i
        qtbot.waitUntil(lambda: lesson.done or bool(lesson.problem), timeout=150_000)
        assert not lesson.problem, (step.id, lesson.problem)
        s = w.session
        assert s.cursor == step.step, step.id
        assert [lane.name for lane in s.run.lanes] == step.lanes.split(",")
        assert w.toolbar.prompt_text() == step.prompt[lang]
        assert w.controller.loaded_info["model_id"] == step.model
        assert lesson.panel.title.toolTip() == step.title[lang]
        assert lesson.panel.text.text() == step.text[lang]
        assert " ".join(lesson.panel.pages) == " ".join(step.text[lang].split())  # the pages say it all, in order
        if step.dock is not None:
            assert lesson._dock(step.dock).isVisible(), step.id
        # one view at a time: the docks earlier steps opened are closed again
        opened = [d for d in (w.overview_dock, *w.extra_docks.values()) if d.isVisible()]
        assert opened == ([lesson._dock(step.dock)] if step.dock not in (None, "costs") else []), (step.id, opened)
        if step.highlight is not None:
            target = lesson._target(step.highlight)
            assert target is not None and target.isVisible(), step.id
            assert lesson.highlight.isVisible() and lesson.highlight.geometry().intersects(
                target.geometry() if target.parentWidget() is w else lesson.highlight.geometry()
            )
    lesson.back()
    qtbot.waitUntil(lambda: lesson.done or bool(lesson.problem), timeout=150_000)
    assert lesson.index == len(lesson.steps) - 2 and w.session.cursor == lesson.steps[-2].step
    w.shutdown()


def _walk(qtbot, w, key) -> list[tuple[int, int, str]]:
    """(step, page, page text) after each press of ``key`` until a press changes nothing."""
    from PySide6.QtWidgets import QApplication

    lesson, seen = w.lesson, []
    for _ in range(200):  # far more pages than the lesson has: a walk that never ends fails below
        before = (lesson.index, lesson.panel.at)
        qtbot.keyClick(w.focusWidget() or w, key)
        QApplication.processEvents()
        if (lesson.index, lesson.panel.at) == before:
            return seen
        seen.append((lesson.index, lesson.panel.at, lesson.panel.page.text()))
    raise AssertionError(f"{key} never reached the end of the lesson")


def test_the_clicker_walks_every_page_of_every_step_and_back_in_both_languages(qtbot, qapp) -> None:
    """Page Down shows every page of every step's caption, then the next step, up to the closing
    summary's last page; Page Up retraces exactly that path; → / ← do the same in the caption. At the
    stage's smallest size (853×480 logical: 1280×720 at 150 %), in English and in Portuguese. The
    walk is about the keys, so the steps' states are not reached (the driver's timer is unhooked):
    one window, no run computed."""
    from PySide6.QtCore import Qt

    from kvsim.ui import i18n

    w = ready_window(qtbot, qapp, "tiny", "Hello", size=(853, 480))
    lesson, band = w.lesson, w.lesson_dock
    lesson._timer.timeout.disconnect()  # navigation only: no state to reach
    try:
        for lang, ui_lang in (("en", "en"), ("pt", "pt_BR")):
            i18n.install(qapp, ui_lang)
            lesson.set_language(lang)
            band.setVisible(True)
            lesson.go(0)
            assert w.stage.active and band.isVisible()
            start = (0, 0, band.page.text())
            forward = _walk(qtbot, w, Qt.Key.Key_PageDown)
            path = [start, *forward]
            pages_of: dict[int, list[str]] = {}
            for (i, at, _text), (j, at2, _) in zip(path, path[1:], strict=False):
                assert (j, at2) in ((i, at + 1), (i + 1, 0)), (lang, i, at, j, at2)  # one page, or the next step's first
            for i, _at, text in path:
                pages_of.setdefault(i, []).append(text)
            assert sorted(pages_of) == list(range(len(lesson.steps)))  # every step visited, in order
            for i, step in enumerate(lesson.steps):
                assert " ".join(pages_of[i]) == " ".join(step.text[lang].split()), (lang, step.id)  # every page, in order
            assert sum(len(p) > 1 for p in pages_of.values()) >= 3, lang  # at 853×480 many captions have a 2nd page
            last = path[-1]
            assert last[0] == len(lesson.steps) - 1 and last[1] == len(band.pages) - 1  # the closing summary's last page
            assert not band.next.isEnabled() and band.back.isEnabled()
            backward = _walk(qtbot, w, Qt.Key.Key_PageUp)
            assert backward == path[-2::-1], lang  # the same pages, the other way, back to the first
            assert not band.back.isEnabled() and band.next.isEnabled()
            # → / ← in the caption (clicked, it takes the keys the toolbar's Step / Back otherwise have)
            w.activateWindow()
            band.setFocus()
            cursor = w.session.cursor
            for key, expect in ((Qt.Key.Key_Right, path[1][:2]), (Qt.Key.Key_Left, (0, 0))):
                qtbot.keyClick(band, key)
                assert (lesson.index, band.at) == expect, (lang, key)
            assert w.session.cursor == cursor  # the run did not step
        # the lane sets L cycles through are in ☰ too, the weights set among them (reached in two keys: L, or ☰)
        from kvsim.ui.shell.toolbar import WEIGHTS_LANES

        menu = w.toolbar.menu
        (sets,) = [a.menu() for a in menu.actions() if a.menu() is not None and a.menu().title().startswith("Lane sets")]
        sets.aboutToShow.emit()
        box = w.toolbar.lanes_box
        assert [a.text() for a in sets.actions()] == [box.itemText(i) for i in range(box.count())]
        assert box.findData(WEIGHTS_LANES) >= 0
    finally:
        i18n.install(qapp, "en")
        w.shutdown()


def test_going_back_a_step_shows_its_recorded_run_without_computing_it_again(qtbot, qapp) -> None:
    """Back (Page Up) to a step whose run the lesson already computed: that run's records are shown again at the
    step (browsing them), nothing is asked of the worker; going on past what was recorded computes live again."""
    from kvsim.ui.lesson.guide import LessonStep

    model = "random:family=llama,layers=2,heads=4,kv_heads=2,dim=64,ctx=256,seed=2"
    w = ready_window(qtbot, qapp, model, "Hello", size=(1280, 720))
    lesson, c = w.lesson, w.controller
    name = c.loaded_info["model_id"]

    def step(sid: str, lanes: str, at: int) -> LessonStep:
        words = {"en": sid, "pt": sid}
        return LessonStep(
            id=sid, title=words, text=words, model=name, lanes=lanes, prompt={"en": "abc abc", "pt": "abc"}, step=at
        )

    lesson.steps = [step("a", "uncached,cached", 3), step("b", "kv,window:4", 2), step("c", "uncached,cached", 5)]
    lesson.set_language("en")
    asked: list[str] = []
    for what in ("request_begin", "request_step"):
        real = getattr(c.worker, what)
        setattr(c.worker, what, lambda *a, _real=real, _what=what, **k: (asked.append(_what), _real(*a, **k))[1])
    try:

        def reach(index: int) -> None:
            lesson.go(index)
            qtbot.waitUntil(lambda: lesson.done or bool(lesson.problem), timeout=60_000)
            assert not lesson.problem, lesson.problem

        reach(0)
        first = w.session.run
        reach(1)
        assert w.session.run is not first and asked
        asked.clear()
        lesson.back()  # to "a": its run, as it was recorded, at its step
        qtbot.waitUntil(lambda: lesson.done or bool(lesson.problem), timeout=60_000)
        assert asked == [] and w.session.run is first and w.session.cursor == 3 and c.browsing
        assert [lane.name for lane in w.session.lanes] == ["uncached", "cached"]
        reach(2)  # further than "a" was computed: a live run again
        assert "request_begin" in asked and not c.browsing and w.session.cursor == 5
    finally:
        w.shutdown()
