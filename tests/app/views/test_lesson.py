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


@pytest.mark.parametrize("lang", LANGUAGES)
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
