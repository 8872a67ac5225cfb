"""Layouts that fit: offscreen geometry at 1920×1080, 1280×720 with QT_SCALE_FACTOR=1.5, 1024×768, in
lanes-only mode and presenter mode.

The screen size and scale are fixed when the QApplication starts, so each case runs in its own
process (``measure`` below, run with ``python -c``) on the offscreen platform with a screen of that
size (its ``configfile`` option), and reports what it measured as JSON; the assertions are here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import ROOT

from kvsim.ui.export.screenshot import offscreen_platform

MEASURE = textwrap.dedent(
    """
    import json, sys
    from kvsim.ui.app import make_app
    app = make_app()
    from kvsim.ui.window import MainWindow
    from kvsim.ui.layout import LANES_MIN_HEIGHT
    mode = sys.argv[1]
    w = MainWindow(persist=False)
    w.animator.set_speed("instant")
    w.show()
    assert w.controller.wait_ready(120), w.controller.last_error
    w.controller.run_steps(6)
    if mode == "lanes-only":
        w.toggle_lanes_only()
    if mode == "presenter":
        w.presenter.enter()
    for _ in range(30):
        app.processEvents()
    room = w.screen().availableGeometry()
    inside = w.rect()
    def box(widget):
        top_left = widget.mapTo(w, widget.rect().topLeft())
        return [top_left.x(), top_left.y(), widget.width(), widget.height()]
    tb = w.toolbar
    controls = {n: getattr(tb, n) for n in ("model_box", "prompt_box", "speed_box", "lanes_box", "layer_box", "head_box",
                                             "view_button")}
    controls.update({a.text(): tb.widgetForAction(a) for a in (tb.reset_action, tb.back_action, tb.step_action, tb.play_action)})
    plots = []
    for p in w.lanes.shown():
        for name in ("k", "v", "a"):
            r = getattr(p, name).vb.sceneBoundingRect()
            plots.append({"lane": p.index, "plot": name, "left": r.left(), "right": r.right(), "top": r.top(),
                          "bottom": r.bottom(), "glw_w": p.glw.width(), "glw_h": p.glw.height()})
    out = {
        "screen": [room.x(), room.y(), room.width(), room.height()],
        "frame": [w.frameGeometry().x(), w.frameGeometry().y(), w.frameGeometry().width(), w.frameGeometry().height()],
        "full": w.isFullScreen(),
        "controls": {n: {"visible": c.isVisible(), "box": box(c)} for n, c in controls.items()},
        "lanes": box(w.lanes), "lanes_min": LANES_MIN_HEIGHT, "plots": plots,
        "costs_visible": w.costs_dock.isVisible(), "toolbar_visible": tb.isVisible(),
    }
    if len(sys.argv) > 2:
        w.grab().save(sys.argv[2])
    print("RESULT " + json.dumps(out))
    w.shutdown()
    """
)


def measure(tmp_path: Path, width: int, height: int, scale: float, mode: str = "normal", shot: str | None = None) -> dict:
    env = dict(os.environ, QT_QPA_PLATFORM=offscreen_platform(width, height, tmp_path), QT_SCALE_FACTOR=f"{scale:g}")
    args = [sys.executable, "-c", MEASURE, mode] + ([shot] if shot else [])
    proc = subprocess.run(args, env=env, cwd=ROOT, capture_output=True, text=True, timeout=240)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, f"no result (rc {proc.returncode}): {proc.stderr[-2000:]}"
    return json.loads(lines[-1][len("RESULT ") :])


def check_fits(m: dict) -> None:
    sx, sy, sw, sh = m["screen"]
    fx, fy, fw, fh = m["frame"]
    assert fw <= sw and fh <= sh, f"window {fw}×{fh} larger than the screen {sw}×{sh}"
    assert sx <= fx and sy <= fy and fx + fw <= sx + sw and fy + fh <= sy + sh, "window off the screen"
    assert m["lanes"][3] >= m["lanes_min"], f"lanes collapsed to {m['lanes'][3]} px"
    for p in m["plots"]:
        # every plot's view (the attention triangle included) lies inside its lane's drawing area
        assert p["left"] >= -1 and p["right"] <= p["glw_w"] + 1, f"plot {p} clipped horizontally"
        assert p["top"] >= -1 and p["bottom"] <= p["glw_h"] + 1, f"plot {p} clipped vertically"
        assert p["bottom"] - p["top"] >= 40, f"plot {p} too short to read"


def check_controls(m: dict) -> None:
    w, h = m["frame"][2], m["frame"][3]
    for name, c in m["controls"].items():
        x, y, cw, ch = c["box"]
        assert c["visible"], f"{name} hidden (behind the toolbar's extension handle?)"
        assert x >= 0 and y >= 0 and x + cw <= w and y + ch <= h, f"{name} at {c['box']} outside the {w}×{h} window"


@pytest.mark.parametrize(
    "width,height,scale",
    [(1920, 1080, 1.0), (1280, 720, 1.5), (1024, 768, 1.0), (1920, 1080, 1.5)],
    ids=["1920x1080", "1280x720@1.5", "1024x768", "1920x1080@1.5"],
)
def test_window_fits_and_every_control_is_reachable(tmp_path, width, height, scale):
    m = measure(tmp_path, width, height, scale)
    assert m["screen"][2] == round(width / scale) and m["screen"][3] == round(height / scale)
    check_fits(m)
    check_controls(m)


def test_lanes_only_is_not_clipped_on_a_projector(tmp_path):
    m = measure(tmp_path, 1280, 720, 1.5, "lanes-only")
    assert not m["costs_visible"]
    check_fits(m)
    assert m["lanes"][3] >= 300, "lanes-only gives the lanes the window's height"


def test_presenter_mode_fills_the_screen_and_fits(tmp_path):
    m = measure(tmp_path, 1280, 720, 1.5, "presenter")
    assert m["full"] and not m["toolbar_visible"]
    assert m["frame"][2:] == m["screen"][2:]
    check_fits(m)


# ---------------------------------------------------------------------- what the audience sees
# tests/stage_probe.py runs in one process per screen, both languages, every stage view (and, on the
# projector, every lesson step), and lists what is wrong on screen: overlapping widgets, text wider
# than its room (elided counts), plotted points off their plot, a view that scrolls, type under 18 px
SCREENS = {  # name: (width, height, QT_SCALE_FACTOR, probe mode)
    "1280x720@1.5": (1280, 720, 1.5, "normal"),
    "1024x768": (1024, 768, 1.0, "normal"),
    "1920x1080": (1920, 1080, 1.0, "normal"),
    "presenter@1280x720@1.5": (1280, 720, 1.5, "presenter"),
    "lesson@1280x720@1.5": (1280, 720, 1.5, "lesson"),
}
PROBE = ROOT / "tests" / "stage_probe.py"


def probe(tmp_path: Path, width: int, height: int, scale: float, mode: str, langs: str = "en,pt_BR") -> dict:
    env = dict(os.environ, QT_QPA_PLATFORM=offscreen_platform(width, height, tmp_path), QT_SCALE_FACTOR=f"{scale:g}")
    proc = subprocess.run(
        [sys.executable, str(PROBE), mode, langs], env=env, cwd=ROOT, capture_output=True, text=True, timeout=3600
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, f"no result (rc {proc.returncode}): {proc.stderr[-3000:]}"
    return json.loads(lines[-1][len("RESULT ") :])


@pytest.mark.parametrize("screen", list(SCREENS))
def test_every_view_is_readable_in_both_languages(tmp_path, screen):
    width, height, scale, mode = SCREENS[screen]
    m = probe(tmp_path, width, height, scale, mode)
    assert m["screen"] == [round(width / scale), round(height / scale)]
    for lang in ("en", "pt_BR"):
        seen = m[lang]
        if mode == "lesson":
            assert len(seen) >= 15, sorted(seen)  # every step was reached and looked at
        else:
            assert {
                "stage-lanes",
                "stage-costs",
                "stage-memory",
                "stage-roofline",
                "stage-requests",
                "stage-offon",
                "stage-heads",
            } <= set(seen), sorted(seen)
        if width >= 1920 and mode == "normal":
            assert "desktop" in seen and not m["window"][lang]["stage"], "a large screen opens with the docks"
        elif mode != "lesson":
            assert m["window"][lang]["stage"] or mode == "presenter", "a small screen opens on the stage"
        wrong = {view: problems for view, problems in seen.items() if problems}
        assert not wrong, f"{screen} {lang}:\n" + "\n".join(f"  {v}: {p}" for v, ps in wrong.items() for p in ps)


def test_the_audit_sees_cut_text_overlaps_elision_and_points_off_their_plot(qtbot):
    """The checker itself: each fault it is meant to see, it reports (and a clean window gives nothing)."""
    import pyqtgraph as pg
    from PySide6.QtWidgets import QLabel, QMainWindow, QVBoxLayout, QWidget
    from stage_probe import audit

    w = QMainWindow()
    qtbot.addWidget(w)
    body = QWidget()
    QVBoxLayout(body)
    w.setCentralWidget(body)
    w.resize(600, 400)
    fine = QLabel("fits", body)
    fine.setGeometry(5, 5, 200, 30)
    w.show()
    qtbot.waitExposed(w)
    assert audit(w) == []
    cut = QLabel("a sentence far too long for its little room", body)
    cut.setGeometry(5, 40, 40, 30)
    other = QLabel("x", body)
    other.setGeometry(20, 50, 60, 30)  # over the cut label
    elided = QLabel("ellipsis at the en…", body)
    elided.setGeometry(5, 90, 500, 30)
    plot = pg.PlotWidget(body)
    plot.setGeometry(5, 130, 300, 200)
    plot.plot([0, 1, 2], [0, 1, 50])
    plot.setXRange(0, 2, padding=0)
    plot.setYRange(0, 2, padding=0)
    for widget in (cut, other, elided, plot):
        widget.show()
    qtbot.wait(50)
    found = "\n".join(audit(w))
    assert "text " in found and "'a sentence far too long" in found
    assert "overlap" in found
    assert "elided 'ellipsis at the en…'" in found
    assert "point (2, 50) outside the plot" in found


def test_the_audit_sees_text_its_parents_cut_and_narrow_table_columns(qtbot):
    """Text that fits its own label but not what shows of it: a scroll area's viewport narrower than its page,
    a word-wrapped rich-text label wider than the window, a table column narrower than its cells."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QLabel, QMainWindow, QScrollArea, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget
    from stage_probe import audit

    w = QMainWindow()
    qtbot.addWidget(w)
    body = QWidget()
    w.setCentralWidget(body)
    w.resize(600, 400)
    area = QScrollArea(body)
    area.setGeometry(5, 5, 200, 100)
    area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    area.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    area.setWidgetResizable(True)
    page = QWidget()
    page.setMinimumWidth(450)  # a page wider than its view: what lies right of 200 px is never seen
    QVBoxLayout(page).addWidget(QLabel("a line that fits its label but not the viewport"))
    area.setWidget(page)
    w.show()
    qtbot.waitExposed(w)
    qtbot.wait(50)
    assert audit(w) == [] or all("cut by" in p for p in audit(w))
    found = "\n".join(audit(w))
    assert "text cut by" in found and "'a line that fits its label but not the viewport'" in found
    area.hide()

    wrapped = QLabel("<b>rich text</b> wrapped in a label that runs past the window's right edge", body)
    wrapped.setTextFormat(Qt.TextFormat.RichText)
    wrapped.setWordWrap(True)
    wrapped.setGeometry(300, 150, 500, 60)
    wrapped.show()
    table = QTableWidget(2, 2, body)
    table.setGeometry(5, 220, 500, 150)
    table.setItem(0, 0, QTableWidgetItem("a cell far wider than its column"))
    table.setItem(0, 1, QTableWidgetItem("ok"))
    table.setColumnWidth(0, 60)
    table.verticalHeader().hide()
    table.show()
    qtbot.wait(50)
    found = "\n".join(audit(w))
    assert "text cut by QMainWindow/QWidget: QMainWindow/QWidget/QLabel 'rich text wrapped" in found
    assert "cell text" in found and "'a cell far wider than its col" in found
    wrapped.setGeometry(300, 150, 280, 60)  # the same text wrapped inside the window: no cut
    table.setColumnWidth(0, 280)
    qtbot.wait(50)
    assert audit(w) == []
