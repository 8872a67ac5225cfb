"""The stage (one view fills the window: small screens, presenter mode, S): its views come from the
dock registry — a dock declared there (here, a test-only one) is in the menu, on the shortcut sheet,
behind its key and on the stage with no other file touched; the docks' own widgets move to the stage
and back (no second copies); PgDown / PgUp walk the views; presenter mode is always on the stage."""

from __future__ import annotations

import pytest
from helpers import ready_window
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QLabel

from kvsim.ui.docks import registry
from kvsim.ui.menu import shortcuts
from kvsim.ui.shell import stage as stage_module

PROMPT = "It is a truth universally acknowledged"


class ProbeView(QLabel):
    """A test-only dock's view: made by the registry with the DockHost, like every dock."""

    def __init__(self, host) -> None:
        super().__init__("the test-only view")
        self.host = host
        self.parts: list[str] = []

    def show_part(self, part: str) -> None:
        self.parts.append(part)


def press(qtbot, w, key) -> None:
    qtbot.keyClick(w.focusWidget() or w, key)
    QApplication.processEvents()


def test_a_dock_declared_once_is_in_the_menu_the_sheet_its_key_and_the_stage(qtbot, qapp, monkeypatch):
    spec = registry.DockSpec(
        "probe",
        "Test-only dock",
        ProbeView,
        shortcut="Y",
        stage=(
            registry.StageEntry("probe", "Test-only view", "Y", "first"),
            registry.StageEntry("probe-b", "Test-only view, second part", "U", "second"),
        ),
    )
    monkeypatch.setattr(registry, "DOCKS", [*registry.DOCKS, spec])
    w = ready_window(qtbot, qapp, "tiny", PROMPT, size=(1600, 900))
    try:
        dock = w.extra_docks["probe"]
        assert dock.windowTitle() == "Test-only dock" and dock.view is None  # lazy: built when first shown
        views = next(a.menu() for a in w.toolbar.menu.actions() if a.menu() is not None and a.menu().title() == "Views")
        assert {"Test-only view", "Test-only view, second part"} <= {a.text() for a in views.actions()}
        rows = dict(shortcuts.key_rows(w))
        assert rows["Y"] == "Test-only view" and rows["U"] == "Test-only view, second part"
        assert not w.stage.active  # 1600×900: the docks
        press(qtbot, w, Qt.Key_Y)
        assert dock.isVisible() and isinstance(dock.view, ProbeView) and dock.widget() is dock.view
        assert dock.view.parts == ["first"]
        press(qtbot, w, Qt.Key_S)  # the stage on request
        assert w.stage.active and not dock.isVisible()
        press(qtbot, w, Qt.Key_U)
        assert w.stage.current == "probe-b" and w.stage.current_page() is dock.view  # the same widget, moved
        assert dock.view.parent() is w.stage.stack and dock.view.isVisible() and dock.view.parts[-1] == "second"
        press(qtbot, w, Qt.Key_S)  # back to the docks: the view goes home, the dock as it was
        assert not w.stage.active and dock.widget() is dock.view and dock.isVisible()
    finally:
        w.shutdown()


def test_stage_views_keys_and_page_down_walk(qtbot, qapp):
    w = ready_window(qtbot, qapp, "tiny", PROMPT, size=(1600, 900))
    try:
        costs_holder = w.costs_dock.widget()
        w.stage.toggle_forced()
        assert w.stage.active and w.stage.current == "lanes" and w.stage.current_page() is w.lanes_page
        press(qtbot, w, Qt.Key_C)
        assert w.stage.current_page() is costs_holder and w.costs.isVisible() and not w.costs_dock.isVisible()
        assert w.stage.stack.geometry().height() > 0.6 * w.centralWidget().height()  # the view fills the window
        order = list(w.stage.entries)
        press(qtbot, w, Qt.Key_PageDown)
        assert w.stage.current == order[order.index("costs") + 1]
        press(qtbot, w, Qt.Key_PageUp)
        press(qtbot, w, Qt.Key_PageUp)
        assert w.stage.current == "lanes"
        press(qtbot, w, Qt.Key_PageUp)
        assert w.stage.current == order[-1]  # round the views
        press(qtbot, w, Qt.Key_B)
        requests = w.extra_docks["requests"].view
        assert w.stage.current == "requests" and requests.part == "blocks" and not requests.bar.isVisible()
        press(qtbot, w, Qt.Key_O)
        assert w.stage.current == "offon" and requests.part == "numbers"
        press(qtbot, w, Qt.Key_Q)  # the timeline: the demo list through continuous batching, run for it
        assert w.stage.current == "batching" and requests.part == "timeline"
        qtbot.waitUntil(lambda: requests.computed is not None and not requests.busy, timeout=300_000)
        assert requests.computed.settings.schedule == "continuous" and requests.current_run().batches
        cursor, shown = w.session.cursor, requests.step
        press(qtbot, w, Qt.Key_Right)  # the app's step keys step the batching view, not the lanes behind it
        assert requests.step == min(shown + 1, requests.slider.maximum()) and w.session.cursor == cursor
        press(qtbot, w, Qt.Key_Left)
        assert requests.step == max(shown, 0) and w.session.cursor == cursor
        press(qtbot, w, Qt.Key_F)
        assert w.stage.current == "lanes" and w.lanes.isVisible()
        w._on_selection(0, -1)  # "all heads" from the toolbar: on the stage, its view
        qtbot.waitUntil(lambda: w.stage.current == "heads", timeout=5_000)
        w.stage.toggle_forced()
        assert not w.stage.active and w.costs_dock.widget() is costs_holder and w.costs_dock.isVisible()
        assert not requests.staged and not requests.bar.isHidden() and w.extra_docks["requests"].widget() is requests
    finally:
        w.shutdown()


def test_small_windows_and_presenter_mode_are_on_the_stage(qtbot, qapp):
    assert stage_module.wanted(stage_module.QSize(853, 480)) and stage_module.wanted(stage_module.QSize(1024, 768))
    assert not stage_module.wanted(stage_module.QSize(1600, 900))
    w = ready_window(qtbot, qapp, "tiny", PROMPT, size=(1600, 900))
    try:
        assert not w.stage.active
        w.resize(1000, 700)
        qtbot.waitUntil(lambda: w.stage.active, timeout=5_000)
        w.resize(1600, 900)
        qtbot.waitUntil(lambda: not w.stage.active, timeout=5_000)
        w.presenter.enter()
        assert w.stage.active
        w.presenter.leave()
        qtbot.waitUntil(lambda: not w.stage.active, timeout=5_000)
    finally:
        if w.presenter.active:
            w.presenter.leave()
        from kvsim.ui import theme

        theme.set_theme(qapp, "dark")
        w.shutdown()


# ---------------------------------------------------------------------- the ten ideas, two keys each
# docs/stage.md lists, for each idea of the articles, the keys that put it on the stage from a fresh start
# at 1280×720 ×1.5 (853×480 logical): each row is checked here on a fresh window of that size, by pressing
# exactly those keys, then asking the view that is current whether it shows what the idea needs.
ALT = Qt.KeyboardModifier.AltModifier


def _sum_and_n(w) -> bool:
    """Idea 1: the costs view, both curves with their formulas (Σt = n(n+1)/2 and n) written beside them."""
    return w.stage.current == "costs" and w.costs.isVisible() and {"sum", "n"} <= set(w.costs.shown_formulas)


def _table_grows(w) -> bool:
    """Idea 2: the lanes view, and the cached lane's K/V table one row longer per step."""
    return (
        w.stage.current == "lanes" and w.lanes.isVisible() and w.session.cursor >= 2 and w.session.n_rows() > w.session.prompt_len
    )


def _prefill_and_decode(w) -> bool:
    view = w.extra_docks["roofline"].view
    phases = {p.phase for p in view.shown()}
    return w.stage.current == "roofline" and view.plot.isVisible() and {"prefill", "decode"} <= phases


def _bill(w) -> bool:
    view = w.extra_docks["memory"].view
    return (
        w.stage.current == "memory"
        and view.form.isVisible()
        and view.live.isVisible()
        and len(view.live.rows) == len(w.session.lanes)
        and all("✓" in words for _lane, _live, _formula, words in view.live.rows)  # the bill accounts for every real byte
    )


def _weights(w) -> bool:
    view = w.extra_docks["memory"].view
    return (
        w.stage.current == "memory-growth"
        and view.plot.isVisible()
        and {"FP32", "INT4"} <= {k.split()[0] for k in view.plot.lines}
    )


def _lanes(*names: str):
    def shown(w) -> bool:
        return w.stage.current == "lanes" and w.lanes.isVisible() and [lane.name for lane in w.session.lanes] == list(names)

    return shown


def _heads(w) -> bool:
    """Idea 7: every query head of the layer, each framed in the colour of the K/V head its group shares."""
    cfg = w.session.config
    return (
        w.stage.current == "heads"
        and w.overview.isVisible()
        and len(w.overview.items) == cfg.n_heads
        and len(set(w.overview.frames)) == cfg.n_kv_heads < cfg.n_heads
    )


def _blocks(w) -> bool:
    view = w.extra_docks["requests"].view
    return w.stage.current == "requests" and view.part == "blocks" and view.computed is not None and view.grid.isVisible()


def _off_on(w) -> bool:
    view = w.extra_docks["requests"].view
    return w.stage.current == "offon" and view.part == "numbers" and view.computed is not None and view.numbers.table.isVisible()


IDEAS = {  # idea: (the keys of docs/stage.md, what the stage must then show)
    "sum-vs-n": (((Qt.Key_1, ALT), (Qt.Key_C, None)), _sum_and_n),
    "table-grows": (((Qt.Key_Space, None),), _table_grows),
    "prefill-vs-decode": (((Qt.Key_1, ALT), (Qt.Key_R, None)), _prefill_and_decode),
    "memory-bill": (((Qt.Key_Right, None), (Qt.Key_M, None)), _bill),  # a fresh start has no step yet: one, then the bill
    "weight-quantization": (((Qt.Key_G, None),), _weights),
    "kv-quantization": (((Qt.Key_3, ALT),), _lanes("kv", "int8:r2", "int4:r2")),
    "mqa-gqa": (((Qt.Key_H, None),), _heads),
    "window-and-sinks": (((Qt.Key_2, ALT),), _lanes("kv", "window:16", "sink:4+window:12")),
    "paged-blocks": (((Qt.Key_B, None),), _blocks),
    "prefix-caching": (((Qt.Key_O, None),), _off_on),
}


@pytest.mark.parametrize("idea", list(IDEAS))
def test_each_idea_of_the_articles_is_on_the_stage_two_keys_from_a_fresh_start(qtbot, qapp, idea):
    keys, shows = IDEAS[idea]
    assert len(keys) <= 2
    w = ready_window(qtbot, qapp, "tiny", PROMPT, size=(853, 480))
    try:
        qtbot.waitUntil(lambda: w.stage.active and w.stage.current == "lanes", timeout=5_000)  # a fresh start: the lanes
        for key, modifier in keys:
            qtbot.keyClick(w.focusWidget() or w, key, modifier or Qt.KeyboardModifier.NoModifier)
            QApplication.processEvents()
        qtbot.waitUntil(lambda: shows(w), timeout=120_000)
    finally:
        w.shutdown()


def test_the_status_bar_names_the_view_a_key_or_page_down_just_showed(qtbot, qapp):
    """On the stage each view key, PgDn and PgUp leave the status bar naming the view now shown, after the
    events that follow (a dock shown late, a view's own message) have run."""
    w = ready_window(qtbot, qapp, "tiny", PROMPT, size=(1280, 720))
    try:
        w.stage.toggle_forced()
        assert w.stage.active
        bar = w.statusBar()

        def check(how) -> None:
            qtbot.wait(120)  # the timers a switch starts (a dock shown a moment later, a view's first draw)
            entry, _dock = w.stage.entries[w.stage.current]
            words = w.stage.words(entry)
            assert words in bar.currentMessage(), (how, w.stage.current, bar.currentMessage())

        keys = [(name, entry.key) for name, (entry, _d) in w.stage.entries.items() if entry.key]
        for name, key in keys:
            w.stage.actions[name].trigger()
            assert w.stage.current == name, name
            check(key)
        for key in (Qt.Key_PageDown,) * 4 + (Qt.Key_PageUp,) * 3:
            before = w.stage.current
            press(qtbot, w, key)
            assert w.stage.current != before
            check(key)
    finally:
        w.shutdown()


def _names_another_view(w) -> str:
    """The words of a stage view other than the one shown that the status bar names ("" when none)."""
    message = w.statusBar().currentMessage()
    shown = w.stage.words(w.stage.entries[w.stage.current][0])
    others = [w.stage.words(entry) for name, (entry, _d) in w.stage.entries.items() if name != w.stage.current]
    return next((words for words in others if words in message and words not in shown), "")


def test_the_status_bar_never_names_a_view_the_lesson_presenter_mode_or_a_demo_left(qtbot, qapp):
    """The lesson turning to a step on another view, presenter mode's keys and PgDn, a demo opened (Alt+1) after a
    view key: the status bar names the view now shown or says something else, never the view before (the lesson
    showed its step's view under "stage: Memory …", a view key's message, for six seconds)."""
    w = ready_window(qtbot, qapp, "tiny", PROMPT, size=(1280, 720))
    lesson = w.lesson
    try:
        w.stage.toggle_forced()
        # the lesson: a step whose next step is on another view, the view key pressed, then PgDn to that step
        steps = lesson.steps
        i = next(i for i in range(len(steps) - 1) if steps[i].view != steps[i + 1].view and steps[i].view != "memory")
        w.lesson_action.setChecked(True)
        lesson.go(i)
        qtbot.waitUntil(lambda: lesson.done or bool(lesson.problem), timeout=180_000)
        press(qtbot, w, Qt.Key_M)
        assert w.stage.current == "memory" and "Memory" in w.statusBar().currentMessage()
        while lesson.index == i:
            press(qtbot, w, Qt.Key_PageDown)
        qtbot.waitUntil(lambda: w.stage.current == steps[i + 1].view, timeout=180_000)
        qtbot.wait(120)
        assert not _names_another_view(w), (w.stage.current, w.statusBar().currentMessage())
        w.lesson_action.setChecked(False)
        # presenter mode: every view key, then PgDn / PgUp
        w.presenter.enter()
        for name, (entry, _dock) in w.stage.entries.items():
            if entry.key:
                press(qtbot, w, getattr(Qt, f"Key_{entry.key}"))
                qtbot.wait(60)
                assert w.stage.current == name and not _names_another_view(w), (name, w.statusBar().currentMessage())
        for key in (Qt.Key_PageDown,) * 3 + (Qt.Key_PageUp,) * 2:
            press(qtbot, w, key)
            qtbot.wait(60)
            assert not _names_another_view(w), (w.stage.current, w.statusBar().currentMessage())
        w.presenter.leave()
        # a demo (Alt+1) opened on another view: the bar says what opened, or the view shown
        press(qtbot, w, Qt.Key_M)
        qtbot.keyClick(w.focusWidget() or w, Qt.Key_1, Qt.KeyboardModifier.AltModifier)
        qtbot.waitUntil(lambda: w.controller.browsing, timeout=60_000)
        qtbot.wait(120)
        assert not _names_another_view(w), (w.stage.current, w.statusBar().currentMessage())
    finally:
        w.shutdown()


def test_the_costs_table_goes_under_the_plots_in_larger_type_on_a_tall_stage(qtbot, qapp):
    """On a 1920×1080 stage the costs view's table beside the plots was a small block over an empty column: there it
    goes under the plots in larger type; on a short stage it keeps the panel's type; a wider figure than the table
    was sized for ("≈1.071,5 ms") widens it rather than being cut."""
    from PySide6.QtGui import QFontMetrics
    from PySide6.QtWidgets import QBoxLayout

    from kvsim.ui.panels.costs import STAGE_TABLE, rich_width

    w = ready_window(qtbot, qapp, "tiny", PROMPT, size=(1920, 1080))
    try:
        if not w.stage.active:
            w.stage.toggle_forced()
        w.stage.show("costs")
        assert w.controller.run_steps(3)
        costs = w.costs
        qtbot.waitUntil(lambda: costs.box.direction() == QBoxLayout.Direction.TopToBottom, timeout=5_000)
        assert costs.stats.font().pointSizeF() == pytest.approx(costs.font().pointSizeF() * STAGE_TABLE)
        assert rich_width(costs.stats.text(), costs.stats.font()) <= costs.stats.width()
        w.resize(853, 480)
        qtbot.waitUntil(lambda: costs.stats.font().pointSizeF() == pytest.approx(costs.font().pointSizeF()), timeout=5_000)
        costs.redraw()
        qtbot.wait(50)
        for plot in costs.plots:  # the steps' numbers apart on a narrow plot (they read "1020" in presenter type)
            vb, axis = plot.getViewBox(), plot.getAxis("bottom")
            fm = QFontMetrics(axis.style.get("tickFont") or axis.font())
            x_hi = vb.viewRange()[0][1]
            assert plot._x_ticks * vb.width() / x_hi >= fm.horizontalAdvance(str(int(x_hi))), plot._x_ticks
        costs.stats.setFixedWidth(40)  # a table sized too narrow for its figures grows to them
        costs._stats()
        assert rich_width(costs.stats.text(), costs.stats.font()) <= costs.stats.width()
    finally:
        w.shutdown()


def test_the_lanes_legend_explains_drafted_and_rejected_rows_when_a_speculative_lane_is_shown(qtbot, qapp):
    """A speculative lane on screen: the legend adds its drafted (faint) and rejected (struck out) rows, in words that
    fit a 853 px stage in both languages (a narrower form first: "rejeitado" ran past the edge)."""
    from types import SimpleNamespace

    from PySide6.QtCore import QObject, Signal

    from kvsim.ui import i18n
    from kvsim.ui.lanes.legend import Legend

    class FakeSession(QObject):
        run_started = Signal()

    session = FakeSession()
    session.lanes = [SimpleNamespace(draft=""), SimpleNamespace(draft="")]
    legend = Legend(session)
    qtbot.addWidget(legend)
    legend.resize(853, 26)
    assert not any("drafted" in str(part[1]) for part in legend.parts())
    session.lanes.append(SimpleNamespace(draft="lookup"))
    session.run_started.emit()
    for lang in ("en", "pt_BR"):
        i18n.install(qapp, lang)
        try:
            words = [str(part[2]) for part in legend.parts() if part[0] == "text"]
            assert words[-2:] == (["drafted", "rejected"] if lang == "en" else ["rascunho", "rejeitado"])
            assert legend.fits(), (lang, legend.form(legend.fontMetrics()))
        finally:
            i18n.install(qapp, "en")
