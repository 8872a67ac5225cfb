"""Presenter mode, the window-wide keys, the shortcut sheet, the theme setting, recent runs and the
bundled demo runs — in the real window on the bundled model (offscreen)."""

from __future__ import annotations

import json

import pytest
from helpers import ready_window
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QApplication

from kvsim.engine.trace import Trace
from kvsim.ui import theme
from kvsim.ui.menu import recent, shortcuts
from kvsim.ui.shell.animation import SPEEDS

PROMPT = "It is a truth universally acknowledged"


@pytest.fixture
def window(qtbot, qapp):
    w = ready_window(qtbot, qapp, "tiny", PROMPT)
    w.activateWindow()
    yield w
    if w.presenter.active:
        w.presenter.leave()
    theme.set_theme(qapp, "dark")
    w.shutdown()


def press(qtbot, w, key, text: str = "") -> None:
    qtbot.keyClick(w.focusWidget() or w, key)
    QApplication.processEvents()


def test_presenter_mode_enters_and_leaves_restoring_everything(window, qtbot):
    w = window
    size = QApplication.instance().font().pointSizeF()
    assert theme.current() == "dark" and w.toolbar.isVisible()
    press(qtbot, w, Qt.Key_F5)
    assert w.presenter.active and w.isFullScreen()
    assert not w.toolbar.isVisible() and not w.toolbar.more.isVisible()
    assert theme.current() == "light"
    assert QApplication.instance().font().pointSizeF() > size * 1.3
    # the keys still drive the simulator with the toolbars hidden
    before = w.session.cursor
    press(qtbot, w, Qt.Key_Right)
    qtbot.waitUntil(lambda: w.session.cursor == before + 1, timeout=20_000)
    press(qtbot, w, Qt.Key_Left)
    assert w.session.cursor == before
    press(qtbot, w, Qt.Key_Escape)
    assert not w.presenter.active and not w.isFullScreen()
    assert w.toolbar.isVisible() and w.toolbar.more.isVisible()
    assert theme.current() == "dark"
    assert QApplication.instance().font().pointSizeF() == pytest.approx(size)


def test_escape_outside_presenter_mode_does_nothing_and_f11_toggles_full_screen(window, qtbot):
    w = window
    press(qtbot, w, Qt.Key_Escape)
    assert not w.presenter.active and not w.isFullScreen()
    press(qtbot, w, Qt.Key_F11)
    assert w.isFullScreen() and not w.presenter.active
    press(qtbot, w, Qt.Key_F11)
    assert not w.isFullScreen()


def test_speed_layer_and_lanes_keys(window, qtbot):
    w = window
    order = list(SPEEDS)
    w.toolbar.show_speed("normal")
    press(qtbot, w, Qt.Key_Plus)
    assert w.toolbar.speed_box.currentData() == order[order.index("normal") + 1]
    assert w.animator.duration_ms == SPEEDS[w.toolbar.speed_box.currentData()]
    press(qtbot, w, Qt.Key_Minus)
    press(qtbot, w, Qt.Key_Minus)
    assert w.toolbar.speed_box.currentData() == order[order.index("normal") - 1]
    n_layers = w.session.config.n_layers
    press(qtbot, w, Qt.Key_1)
    assert w.toolbar.layer_box.currentData() == 0 and w.lanes.selection[0] == 0
    press(qtbot, w, Qt.Key_0 + n_layers)  # the last layer
    assert w.toolbar.layer_box.currentData() == n_layers - 1 and w.lanes.selection[0] == n_layers - 1
    if n_layers < 9:
        press(qtbot, w, Qt.Key_9)  # no such layer: the selection stays
        assert w.toolbar.layer_box.currentData() == n_layers - 1
    lanes = w.toolbar.lanes_box.currentData()
    press(qtbot, w, Qt.Key_L)
    assert w.toolbar.lanes_box.currentData() != lanes
    assert w.controller.lanes == w.toolbar.lanes_box.currentData()


def test_shortcut_sheet_lists_every_key(window, qtbot):
    w = window
    sheet = shortcuts.show(w)
    keys = {k for k, _ in sheet.rows}
    for expected in ("Space", "Right", "Left", "Home", "F", "F5", "Esc", "F11", "L", "1 … 9", "? / F1", "+ / =", "-"):
        assert expected in keys, f"{expected} missing from the sheet: {sorted(keys)}"
    # every shortcut of every window action is on the sheet (none forgotten when a key is added)
    from PySide6.QtGui import QAction, QKeySequence

    listed = " / ".join(keys)
    for action in w.findChildren(QAction):
        for seq in action.shortcuts():
            text = seq.toString(QKeySequence.NativeText)
            assert text in listed or action.data() == "layer-key", f"{text} ({action.text()}) not on the sheet"
    sheet.close()


def test_theme_setting_is_applied_and_remembered(qtbot, qapp):
    w = ready_window(qtbot, qapp, "tiny", PROMPT, persist=True)
    try:
        w.theme_setting.choose("light")
        assert theme.current() == "light"
        assert QSettings("kvsim", "kvsim-ui").value("theme") == "light"
        w.theme_setting.choose("system")
        assert theme.current() == w.theme_setting.resolved() in ("dark", "light")
        w.theme_setting.choose("dark")
        assert theme.current() == "dark"
    finally:
        theme.set_theme(qapp, "dark")
        w.shutdown()


def test_demos_are_small_and_open_instantly(window):
    w = window
    found = recent.demos()
    index = json.loads((recent.demos_dir() / "demos.json").read_text(encoding="utf-8"))
    assert [p.name for _, p in found] == [d["file"] for d in index] and len(found) >= 3
    for (_title, path), entry in zip(found, index, strict=True):
        assert path.stat().st_size < 1_200_000  # scripts/make_demos.py's LIMIT_BYTES
        assert w.open_run(str(path))
        assert w.controller.browsing
        assert w.session.n_steps == entry["steps"] == len(Trace.load(path).records)
        assert [lane.name for lane in w.session.lanes] == entry["lanes"].split(",")
    assert w.recent.paths() == []  # the demos have their own menu


def test_recent_runs_remember_and_drop_missing_files(window, tmp_path):
    w = window
    w.controller.run_steps(2)
    a, b = tmp_path / "a.kvsim", tmp_path / "b.kvsim"
    assert w.save_run(str(a)) and w.save_run(str(b))
    assert w.recent.paths()[:2] == [str(b.resolve()), str(a.resolve())]
    assert w.open_run(str(a)) and w.recent.paths()[0] == str(a.resolve())
    a.unlink()
    assert not w.recent.open(str(a.resolve()))
    assert str(a.resolve()) not in w.recent.paths()
    assert "no longer exists" in w.banner.text()
    titles = [act.text() for act in w.recent.menu.actions()]
    assert any("b.kvsim" in t for t in titles) and not any("a.kvsim" in t for t in titles)
