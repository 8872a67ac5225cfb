"""Export for slides: GIF/MP4 of a run (decoded back with imageio: frame count, size, timing),
PNG at 1×/2× pixels, SVG of the plots, CSV of the per-step figures, the menu, and the command
lines (``kvsim export``, ``kvsim screenshot``'s new flags) with their one-line errors."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

pytest.importorskip("pytestqt")
iio = pytest.importorskip("imageio.v3")
from helpers import ready_window  # noqa: E402

from kvsim.cli.entry import main as cli_main  # noqa: E402
from kvsim.ui.export import menu as export  # noqa: E402
from kvsim.ui.export.dialogs import MovieChoice  # noqa: E402
from kvsim.ui.export.movie import ExportError, frame_plan, frames_per_step  # noqa: E402

MODEL = "random:family=llama,layers=2,heads=4,kv_heads=2,dim=64,seed=1"
PROMPT = "The cache remembers"
STEPS = 20


def _window(qtbot, qapp, steps: int):
    w = ready_window(qtbot, qapp, MODEL, PROMPT, size=(1280, 720))
    w.resize(1280, 720)  # a shown window is first fitted to the offscreen screen
    assert w.controller.run_steps(steps, timeout_s=120), w.controller.last_error
    return w


@pytest.fixture
def window(qtbot, qapp):
    """A run of 20 steps (the movies)."""
    w = _window(qtbot, qapp, STEPS)
    yield w
    w.shutdown()


@pytest.fixture
def short(qtbot, qapp):
    """A run of 4 steps (pictures, figures, the menu)."""
    w = _window(qtbot, qapp, 4)
    yield w
    w.shutdown()


def _film(window, qtbot, choice: MovieChoice, path) -> tuple[object, int]:
    """Export and wait; returns the export and how often the event loop ran meanwhile."""
    from PySide6.QtCore import QTimer

    beats = []
    heart = QTimer()
    heart.setInterval(1)
    heart.timeout.connect(lambda: beats.append(time.perf_counter()))
    heart.start()
    e = export.start_movie(window, choice, path, progress=True)
    qtbot.waitUntil(lambda: bool(e.result), timeout=120_000)
    heart.stop()
    e.encoder.join(30)
    return e, len(beats)


def test_frame_plan_samples_each_step_animation():
    assert frames_per_step(700, 5) == 4 and frames_per_step(0, 30) == 1 and frames_per_step(250, 1) == 1
    plan = frame_plan(3, 5, 700, 5)
    assert [s for s, _ in plan] == [3] * 4 + [4] * 4 + [5] * 4
    assert [t for _, t in plan[:4]] == [0.25, 0.5, 0.75, 1.0]  # every step ends settled (t = 1)


def test_gif_and_mp4_of_20_steps_decode_with_their_frames(window, qtbot, tmp_path):
    cursor = window.session.cursor
    # GIF, one frame per step ("instant"): 20 frames, each a different picture
    e, beats = _film(window, qtbot, MovieChoice("gif", 0, STEPS - 1, (320, 180), 10.0, "instant", "window"), tmp_path / "a.gif")
    assert e.result == str(tmp_path / "a.gif"), e.result
    gif = iio.imread(tmp_path / "a.gif", index=None)
    assert gif.shape[:3] == (STEPS, 180, 320)
    assert beats > STEPS  # the event loop ran between the frames: the window was never frozen
    from PIL import Image

    delays = []
    with Image.open(tmp_path / "a.gif") as im:
        for i in range(im.n_frames):
            im.seek(i)
            delays.append(im.info["duration"])
    assert sum(delays) == pytest.approx(STEPS * 100, abs=STEPS * 10)  # 10 fps: 0.1 s a frame
    # MP4 with the animation between steps: 4 frames per step at 5 fps ("normal" = 0.7 s per step)
    e, _ = _film(window, qtbot, MovieChoice("mp4", 0, STEPS - 1, (320, 180), 5.0, "normal", "lanes"), tmp_path / "a.mp4")
    assert e.result == str(tmp_path / "a.mp4"), e.result
    mp4 = iio.imread(tmp_path / "a.mp4", index=None, plugin="FFMPEG")
    assert mp4.shape == (STEPS * 4, 180, 320, 3)
    meta = iio.immeta(tmp_path / "a.mp4", plugin="FFMPEG")
    assert meta["fps"] == pytest.approx(5.0)
    # the frames show the run: consecutive steps differ, and the animation moves within a step
    assert np.abs(mp4[3].astype(int) - mp4[7].astype(int)).mean() > 0.5
    assert np.abs(mp4[4].astype(int) - mp4[5].astype(int)).max() > 40
    assert window.session.cursor == cursor  # the window shows what it showed before
    assert not list(tmp_path.glob(".*partial*"))


def test_cancel_leaves_no_file(short, qtbot, tmp_path):
    window = short
    e = export.start_movie(window, MovieChoice("gif", 0, 3, (320, 180), 10.0, "normal", "window"), tmp_path / "c.gif")
    qtbot.waitUntil(lambda: e.done >= 3, timeout=60_000)
    e.cancel()
    assert e.result == "error: cancelled"
    e.encoder.join(30)
    assert list(tmp_path.iterdir()) == []


def test_png_2x_has_twice_the_pixels_of_the_same_picture(short, tmp_path):
    one = export.save_view(short, "window", tmp_path / "w1.png", "png")
    two = export.save_view(short, "window", tmp_path / "w2.png", "png2")
    a, b = iio.imread(one)[..., :3].astype(float), iio.imread(two)[..., :3].astype(float)
    assert (b.shape[0], b.shape[1]) == (2 * a.shape[0], 2 * a.shape[1])
    assert (a.shape[1], a.shape[0]) == (short.width(), short.height())
    # the same picture, drawn sharper: 2×2 blocks of the 2× image average close to the 1× pixels
    down = b.reshape(a.shape[0], 2, a.shape[1], 2, 3).mean(axis=(1, 3))
    assert np.abs(down - a).mean() < 12
    lane = short.lane_panels[0]
    p = export.save_view(short, f"lane {lane.name}", tmp_path / "lane.png", "png2")
    assert iio.imread(p).shape[:2] == (2 * lane.height(), 2 * lane.width())


def test_svg_parses_and_holds_the_plots(short, tmp_path):
    ns = "{http://www.w3.org/2000/svg}"
    costs = ET.parse(export.save_view(short, "costs", tmp_path / "costs.svg", "svg")).getroot()
    assert costs.tag == f"{ns}svg"
    curves = [e for e in costs.iter() if e.tag in (f"{ns}path", f"{ns}polyline")]
    assert len(curves) > 10
    texts = " ".join("".join(e.itertext()) for e in costs.iter(f"{ns}text"))
    assert "K/V rows computed" in texts and "FLOPs" in texts
    lane = ET.parse(export.save_view(short, f"lane {short.lane_panels[1].name}", tmp_path / "lane.svg", "svg")).getroot()
    assert len(list(lane.iter(f"{ns}image"))) >= 3  # K, V and attention heatmaps, embedded
    with pytest.raises(ExportError, match="no vector form"):
        export.save_view(short, "window", tmp_path / "w.svg", "svg")


def test_csv_has_the_recorded_numbers(short, tmp_path):
    path = export.save_csv(short, tmp_path / "run.csv")
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    records, lanes = short.session.records, short.session.lanes
    assert len(rows) == 4 * len(lanes)
    p = short.session.prompt_len
    for row in rows:
        r = records[int(row["step"])]
        lane = r.lane(row["lane"])
        assert row["phase"] == r.phase and int(row["token_id"]) == r.token_id and row["token"] == r.token
        assert int(row["flops"]) == lane.flops and int(row["cache_bytes"]) == lane.cache_bytes
        assert float(row["wall_ms"]) == lane.wall_ms and float(row["logit_diff"]) == lane.logit_diff
        assert int(row["cache_tokens"]) == lane.cache_tokens
        # independent of the records: without a cache step s computes all P + s rows, with one 1 (P at the prefill)
        s = int(row["step"])
        expected = p + s if lane.policy == "none" else (p if s == 0 else 1)
        assert int(row["rows_computed"]) == expected


def test_install_is_idempotent_and_keys_work_with_the_menu_closed(short, tmp_path):
    from PySide6.QtGui import QKeySequence

    from kvsim.engine.html_page import read_page_data

    menu = export.install(short)
    assert export.install(short) is menu
    keys = [a.shortcut().toString() for a in short.actions()]
    assert keys.count(QKeySequence("Ctrl+E").toString()) == 1
    assert keys.count(QKeySequence("Ctrl+Shift+H").toString()) == 1
    assert len(menu.actions()) == 5
    report = export.save_web_page(short, tmp_path / "run.html")  # the web page item's writer: the run shown, every step
    data = read_page_data(report.path)
    assert data["n_steps"] == short.session.n_steps == 4 and report.dropped == ()
    assert [lane["name"] for lane in data["lanes"]] == [lane.name for lane in short.session.lanes]


def test_movie_refuses_bad_requests(short, tmp_path):
    with pytest.raises(ExportError, match="steps must lie"):
        export.start_movie(short, MovieChoice("gif", 0, 4, (320, 180), 10.0, "normal", "window"), tmp_path / "x.gif")
    with pytest.raises(ExportError, match="even"):
        export.start_movie(short, MovieChoice("mp4", 0, 3, (321, 180), 10.0, "normal", "window"), tmp_path / "x.mp4")


@pytest.mark.parametrize(
    "extra, fragment",
    [
        (["--out", "{tmp}/a.avi"], "must end in .gif or .mp4"),
        (["--out", "{tmp}/a.gif", "--size", "big"], "--size must look like"),
        (["--out", "{tmp}/a.gif", "--size", "10x10"], "size must be between"),
        (["--out", "{tmp}/a.mp4", "--size", "321x240"], "even"),
        (["--out", "{tmp}/a.gif", "--fps", "0"], "frame rate"),
        (["--out", "{tmp}/a.gif", "--fps", "nan"], "frame rate"),
        (["--out", "{tmp}/a.gif", "--fps", "55"], "between 1 and 50"),
        (["--out", "{tmp}/no/such/dir/a.gif"], "no such folder"),
        (["--out", "{tmp}"], "must end in"),
        (["--out", "{tmp}/a.gif", "--lanes", "bogus"], "bogus"),
        (["--out", "{tmp}/a.gif", "--show", "nope"], "no such dock"),
        (["--out", "{tmp}/a.gif", "--speed", "warp"], "invalid choice"),
    ],
)
def test_export_command_errors_are_one_line(extra, fragment, tmp_path, capsys):
    args = ["export", "--model", MODEL, "--prompt", "x", *[a.replace("{tmp}", str(tmp_path)) for a in extra]]
    assert cli_main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and fragment in err, err


def test_a_directory_named_like_the_movie_is_refused(tmp_path, capsys):
    (tmp_path / "d.gif").mkdir()
    assert cli_main(["export", "--model", MODEL, "--prompt", "x", "--out", str(tmp_path / "d.gif")]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_export_command_writes_a_movie(tmp_path):
    out = tmp_path / "run.mp4"
    proc = subprocess.run(
        [sys.executable, "-m", "kvsim", "export", "--model", MODEL, "--prompt-ids", "5,6,7,8", "--steps", "3",
         "--out", str(out), "--size", "320x180", "--fps", "8", "--speed", "fast", "--lanes-only"],
        capture_output=True, text=True, timeout=240, env=dict(os.environ, QT_QPA_PLATFORM="offscreen"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    frames = iio.imread(out, index=None, plugin="FFMPEG")
    assert frames.shape == (3 * frames_per_step(250, 8), 180, 320, 3)  # 3 steps × 2 frames
    assert "6 frames" in proc.stdout and "320x180" in proc.stdout


def test_screenshot_flags(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "kvsim", "screenshot", "--model", MODEL, "--prompt", "Hello", "--steps", "4", "--step", "1",
         "--out", str(tmp_path), "--size", "1280x720", "--scale", "1.5", "--lanes-only", "--theme", "light"],
        capture_output=True, text=True, timeout=240, env=dict(os.environ, QT_QPA_PLATFORM="offscreen"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    shot = iio.imread(tmp_path / "kvsim.png")
    assert shot.shape[:2] == (720, 1280)  # --size is the PNG's pixels; the window was laid out at 853x480
    assert [p.name for p in tmp_path.glob("*.png")] == ["kvsim.png"]  # what was asked for, and nothing else


def test_a_lanes_only_frame_with_a_dock_films_both_and_no_toolbar(short, qapp):
    """``--lanes-only --show memory`` at the stage's size (853×480: one view at a time) lays the lanes and the
    memory dock side by side, and a lanes-only frame has no toolbars — also where the stage stays."""
    from kvsim.ui.export.screenshot import prepare

    w = short
    w.resize(853, 480)
    qapp.processEvents()
    assert w.stage.active  # the size alone would make it a stage
    prepare(w, lanes_only=True, show=["memory"])
    w.resize(853, 480)  # the export resizes to the frame again: the layout stays
    for _ in range(5):
        qapp.processEvents()
    assert not w.stage.active
    assert w.lanes_page.isVisible() and w.extra_docks["memory"].isVisible()
    assert not w.costs_dock.isVisible() and not w.text_dock.isVisible()
    assert not w.toolbar.isVisible() and not w.toolbar.more.isVisible()
    # lanes only, no dock: the stage's lanes view, still no toolbars
    w.extra_docks["memory"].setVisible(False)
    w.stage.forced = None
    w.stage.update()
    prepare(w, lanes_only=True)
    w.resize(853, 480)
    qapp.processEvents()
    assert w.stage.active and w.stage.current_page() is w.lanes_page
    assert not w.toolbar.isVisible() and not w.toolbar.more.isVisible()


@pytest.mark.parametrize(
    "extra, fragment",
    [
        (["--step", "4"], "--step must be between 0"),
        (["--show", "nope"], "no such dock"),
        (["--scale", "9"], "--scale must be between"),
        (["--theme", "neon"], "invalid choice"),
    ],
)
def test_screenshot_errors_are_one_line(extra, fragment, tmp_path, capsys):
    assert cli_main(["screenshot", "--model", MODEL, "--steps", "4", "--out", str(tmp_path), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and fragment in err, err


def test_export_at_a_scale_fills_the_frame_in_portuguese(tmp_path, qapp, monkeypatch):
    """`kvsim export --scale 1.5 --lang pt_BR`: the 853×480 stage drawn over the whole 1280×720 frame (not in
    its corner), and the window filmed speaks Portuguese."""
    out = tmp_path / "pt.gif"
    proc = subprocess.run(
        [sys.executable, "-m", "kvsim", "export", "--model", MODEL, "--prompt-ids", "5,6,7,8", "--steps", "2",
         "--out", str(out), "--size", "1280x720", "--fps", "4", "--speed", "instant", "--scale", "1.5", "--lang", "pt_BR"],
        capture_output=True, text=True, timeout=300, env=dict(os.environ, QT_QPA_PLATFORM="offscreen"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    frames = iio.imread(out, index=None)
    assert frames.shape[1:3] == (720, 1280)
    last = frames[-1][..., :3].astype(int)
    for part in (last[:, 900:], last[500:, :]):  # beyond 853×480: drawn, not blank
        assert len(np.unique(part.reshape(-1, 3), axis=0)) > 20
    # the language: the same command in process, the window it films looked at
    from kvsim.ui import i18n
    from kvsim.ui.export import cli

    seen = {}
    real = cli.film

    def film(window, spec, app):
        seen["step"] = window.toolbar.step_action.text()
        seen["title"] = window.costs_dock.windowTitle()
        return real(window, spec, app)

    monkeypatch.setattr(cli, "film", film)
    try:
        args = ["export", "--model", MODEL, "--prompt-ids", "5,6,7", "--steps", "1", "--out", str(tmp_path / "b.gif"),
                "--size", "320x180", "--speed", "instant", "--lang", "pt_BR"]  # fmt: skip
        assert cli_main(args) == 0
    finally:
        i18n.install(qapp, "en")
    assert seen["step"].startswith("Avançar") and seen["title"] == "Custos até agora", seen


def test_qt_own_dialogs_speak_portuguese(qapp):
    """The file dialogs are Qt's own: qtbase's translations are loaded beside kvsim's."""
    from PySide6.QtWidgets import QFileDialog, QLabel

    from kvsim.ui import i18n

    i18n.install(qapp, "pt_BR")
    try:
        d = QFileDialog(None, "x")
        d.setOption(QFileDialog.DontUseNativeDialog)
        d.setAcceptMode(QFileDialog.AcceptSave)
        texts = {label.text() for label in d.findChildren(QLabel)}
        plain = {t.replace("&", "") for t in texts}
        assert "Procurar em:" in plain and "Arquivos do tipo:" in plain and "Nome do arquivo:" in plain, texts
        assert not any("Look in" in t or "Files of" in t for t in plain), texts
    finally:
        i18n.install(qapp, "en")


def test_an_mp4_encoder_that_stops_is_one_line_naming_the_cause(tmp_path, monkeypatch):
    import shutil
    from collections import namedtuple

    from kvsim.ui.export.movie import encoder_failure

    said = "[Errno 32] Broken pipe\n\nFFMPEG COMMAND:\nffmpeg -y ...\n\nFFMPEG STDERR OUTPUT:\nNo space left on device\n"
    usage = namedtuple("usage", "total used free")
    target = tmp_path / "run.mp4"
    monkeypatch.setattr(shutil, "disk_usage", lambda _: usage(10**9, 10**9, 4096))  # a full disk
    assert encoder_failure(BrokenPipeError(said), target, "mp4") == (
        f"cannot write {target}: the MP4 encoder (ffmpeg) stopped: no space left on the disk"
    )
    monkeypatch.setattr(shutil, "disk_usage", lambda _: usage(10**12, 0, 10**12))
    assert encoder_failure(BrokenPipeError(said), target, "mp4") == (
        f"cannot write {target}: the MP4 encoder (ffmpeg) stopped: [Errno 32] Broken pipe"
    )
    assert encoder_failure(OSError(f"cannot write {target}: File too large"), target, "mp4").count("\n") == 0
    assert encoder_failure(ValueError("the GIF holds 3 frames\nmore"), target, "gif") == "ValueError: the GIF holds 3 frames"
