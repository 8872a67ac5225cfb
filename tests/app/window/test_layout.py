"""Layouts that fit: offscreen geometry at 1920×1080, 1280×720 with QT_SCALE_FACTOR=1.5, 1024×768, in
lanes-only mode and presenter mode.

The screen size and scale are fixed when the QApplication starts, so each screen runs in its own
process (tests/stage_probe.py's ``screen``: every fit and every probe of that screen, one start-up of
Python, Qt and torch rather than one per case) on the offscreen platform with a screen of that size (its
``configfile`` option), and reports what it measured as JSON; the assertions are here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from helpers import ROOT

from kvsim.ui.export.screenshot import offscreen_platform

# one process per screen (tests/stage_probe.py's ``screen``): what each check of that screen needs, fits first
FITS = {  # the window's geometry after 6 steps: (width, height, QT_SCALE_FACTOR, mode)
    "1920x1080": (1920, 1080, 1.0, "normal"),
    "1280x720@1.5": (1280, 720, 1.5, "normal"),
    "1024x768": (1024, 768, 1.0, "normal"),
    "1920x1080@1.5": (1920, 1080, 1.5, "normal"),
    "lanes-only@1280x720@1.5": (1280, 720, 1.5, "lanes-only"),
    "presenter@1280x720@1.5": (1280, 720, 1.5, "presenter"),
}
SCREENS = {  # what the audience sees, every view: (width, height, QT_SCALE_FACTOR, probe mode)
    "1280x720@1.5": (1280, 720, 1.5, "normal"),
    "1024x768": (1024, 768, 1.0, "normal"),
    "1920x1080": (1920, 1080, 1.0, "normal"),
    "presenter@1280x720@1.5": (1280, 720, 1.5, "presenter"),
    "lesson@1280x720@1.5": (1280, 720, 1.5, "lesson"),
    "lesson@1920x1080": (1920, 1080, 1.0, "lesson"),
    # the scenes a talk uses past the views (tests/stage_probe.py's scenes(): 1, 3 and 4 lanes, the all-heads
    # view of a Gemma-like MQA and an MLA model, every lane preset, the hybrid and CLA models), on the projector
    # and the large screen
    "scenes@1280x720@1.5": (1280, 720, 1.5, "scenes"),
    "scenes@1920x1080": (1920, 1080, 1.0, "scenes"),
}
PROBE = ROOT / "tests" / "stage_probe.py"
LANGS = "en,pt_BR"


def _jobs() -> list[tuple[tuple[int, int, float], list[str], list[str], list[str]]]:
    """The probe processes: one per screen for its fits and its views in both languages, and the long walks — the
    lesson's (every step) and the scenes' (one window, scene after scene) — in one process per language, so that
    the processes can run side by side."""
    jobs = []
    for key in dict.fromkeys([(w, h, sc) for w, h, sc, _ in [*FITS.values(), *SCREENS.values()]]):
        fits = [mode for w, h, sc, mode in FITS.values() if (w, h, sc) == key]
        modes = [mode for w, h, sc, mode in SCREENS.values() if (w, h, sc) == key and mode not in ("lesson", "scenes")]
        if fits or modes:
            jobs.append((key, fits, modes, LANGS.split(",")))
        for long in ("lesson", "scenes"):  # the long walks: a process per language, side by side
            if any((w, h, sc) == key and mode == long for w, h, sc, mode in SCREENS.values()):
                jobs += [(key, [], [long], [lang]) for lang in LANGS.split(",")]
    return jobs


# a process's rough cost, per mode and language (its wall time measured on 2 shared cores: the lesson's and the scenes'
# walks about 90 s, the normal and presenter views about 40 s a language, a fit a few seconds)
WEIGHTS = {"lesson": 95, "scenes": 95, "normal": 40, "presenter": 40}


def _weight(job: tuple[tuple[int, int, float], list[str], list[str], list[str]]) -> int:
    _key, fits, modes, langs = job
    return 2 * len(fits) + sum(WEIGHTS.get(mode, 40) for mode in modes) * len(langs)


class Screens:
    """Every screen's probe processes, run side by side (twice as many at once as the machine has cores, at least
    four: each spends more than half its time waiting on Qt's event loop), longest first, when a test first asks for
    a screen; their results, merged per screen, are kept for the module's other tests."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.results: dict[tuple[int, int, float], dict] = {}

    def _one(self, n: int, key: tuple[int, int, float], fits: list[str], modes: list[str], langs: list[str]) -> dict:
        width, height, scale = key
        tmp = self.folder / f"{n}-{width}x{height}@{scale:g}"
        tmp.mkdir()
        env = dict(os.environ, QT_QPA_PLATFORM=offscreen_platform(width, height, tmp), QT_SCALE_FACTOR=f"{scale:g}")
        args = [sys.executable, str(PROBE), "screen", ",".join(fits) or "-", ",".join(modes) or "-", ",".join(langs)]
        proc = subprocess.run(args, env=env, cwd=ROOT, capture_output=True, text=True, timeout=3600)
        lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
        return json.loads(lines[-1][len("RESULT ") :]) if lines else {"error": f"rc {proc.returncode}: {proc.stderr[-3000:]}"}

    def _run_all(self) -> None:
        # the longest processes first, so that the last to start are short ones and none is left alone at the end
        jobs = sorted(_jobs(), key=_weight, reverse=True)
        # a probe process spends more than half its time asleep (its _settle and _until_still wait for Qt's timers and
        # relayouts: 49 s of sleep in an 85 s walk of the scenes, 24 s of CPU), so twice as many as the cores run at once
        with ThreadPoolExecutor(max_workers=min(len(jobs), 2 * max(2, os.cpu_count() or 2))) as pool:
            outs = list(pool.map(lambda numbered: self._one(numbered[0], *numbered[1]), enumerate(jobs)))
        for (key, _fits, _modes, _langs), out in zip(jobs, outs, strict=True):
            merged = self.results.setdefault(key, {"fit": {}, "probe": {}})
            if "error" in out:  # a failed process fails every test of its screen with its message
                merged["error"] = out["error"]
                continue
            merged["fit"].update(out["fit"])
            for mode, seen in out["probe"].items():  # the lesson's languages come from two processes
                into = merged["probe"].setdefault(mode, {"window": {}})
                into.update({k: v for k, v in seen.items() if k != "window"})
                into["window"].update(seen["window"])

    def _run(self, width: int, height: int, scale: float) -> dict:
        if not self.results:
            self._run_all()
        result = self.results[(width, height, scale)]
        assert "error" not in result, f"no result ({result.get('error')})"
        return result

    def fit(self, width: int, height: int, scale: float, mode: str = "normal") -> dict:
        return self._run(width, height, scale)["fit"][mode]

    def probe(self, width: int, height: int, scale: float, mode: str) -> dict:
        return self._run(width, height, scale)["probe"][mode]


@pytest.fixture(scope="module")
def screens(tmp_path_factory: pytest.TempPathFactory) -> Screens:
    return Screens(tmp_path_factory.mktemp("screens"))


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
def test_window_fits_and_every_control_is_reachable(screens, width, height, scale):
    m = screens.fit(width, height, scale)
    assert m["screen"][2] == round(width / scale) and m["screen"][3] == round(height / scale)
    check_fits(m)
    check_controls(m)
    width, most = m["prompt"]
    assert m["row_spare"] <= 48 or width >= most, f"the prompt box is {width} px with {m['row_spare']} px empty beside"


def test_lanes_only_is_not_clipped_on_a_projector(screens):
    m = screens.fit(1280, 720, 1.5, "lanes-only")
    assert not m["costs_visible"]
    check_fits(m)
    assert m["lanes"][3] >= 300, "lanes-only gives the lanes the window's height"


def test_presenter_mode_fills_the_screen_and_fits(screens):
    m = screens.fit(1280, 720, 1.5, "presenter")
    assert m["full"] and not m["toolbar_visible"]
    assert m["frame"][2:] == m["screen"][2:]
    check_fits(m)


# ---------------------------------------------------------------------- what the audience sees
# tests/stage_probe.py looks, in each screen's process, in both languages, at every stage view (and, on the
# projector, every lesson step), and lists what is wrong on screen: overlapping widgets, text wider
# than its room (elided counts), plotted points off their plot, a view that scrolls, type under 18 px
@pytest.mark.parametrize("screen", list(SCREENS))
def test_every_view_is_readable_in_both_languages(screens, screen):
    width, height, scale, mode = SCREENS[screen]
    m = screens.probe(width, height, scale, mode)
    assert m["screen"] == [round(width / scale), round(height / scale)]
    for lang in ("en", "pt_BR"):
        seen = m[lang]
        if mode == "lesson":
            assert len(seen) >= 15, sorted(seen)  # every step was reached and looked at
        elif mode == "scenes":
            from stage_probe import scenes

            for name, *_rest, views in scenes():  # every scene reached, each of its views looked at
                assert {f"scene-{name}-{view}" for view in views} <= set(seen), (name, sorted(seen))
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
            # the lane chooser closed on every set, its text measured against its room (stage_probe.lane_sets)
            assert mode != "normal" or "toolbar-lane-sets" in seen, sorted(seen)
        if width >= 1920 and mode == "normal":
            assert "desktop" in seen and not m["window"][lang]["stage"], "a large screen opens with the docks"
        elif mode not in ("lesson", "scenes"):
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
