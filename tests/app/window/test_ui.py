"""GUI tests (pytest-qt, offscreen): what every view shows after N steps, scrubbing, play/pause,
switching models, errors, cancelling, and the Signal(object) stress regression."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import subprocess  # noqa: E402
import sys  # noqa: E402
import textwrap  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

pytest.importorskip("pytestqt")
from helpers import ready_window  # noqa: E402
from PySide6.QtCore import Qt  # noqa: E402

from kvsim.ui import theme  # noqa: E402
from kvsim.ui.lanes.attention import attention_rows, kv_head_of  # noqa: E402
from kvsim.ui.lanes.view import MAX_ROWS, dim_rows  # noqa: E402

MODEL = "random:family=llama,layers=2,heads=4,kv_heads=2,dim=64,seed=1"
PROMPT = "The cache remembers"


@pytest.fixture
def window(qtbot, qapp):
    w = ready_window(qtbot, qapp, MODEL, PROMPT, size=(1280, 720))
    yield w
    w.shutdown()


def _kv_from_records(records, layer, g):
    k = np.concatenate([r.k[layer, g] for r in records], axis=0)
    v = np.concatenate([r.v[layer, g] for r in records], axis=0)
    return k, v


# ---------------------------------------------------------------------------------- pure helper
def test_attention_rows_match_softmax_and_mask():
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(3, 8)), rng.normal(size=(5, 8))
    p = attention_rows(q, k, np.array([2, 3, 4]), np.arange(5))
    assert p.shape == (3, 5)
    assert np.isnan(p[0, 3:]).all() and np.isnan(p[1, 4:]).all() and not np.isnan(p[2]).any()
    s = q[0] @ k[:3].T / np.sqrt(8)
    np.testing.assert_allclose(p[0, :3], np.exp(s) / np.exp(s).sum(), rtol=1e-5)
    np.testing.assert_allclose(np.nansum(p, axis=1), 1.0, rtol=1e-5)
    w = attention_rows(q, k, np.array([2, 3, 4]), np.arange(5), window=2)
    assert np.isnan(w[2, :3]).all() and np.isfinite(w[2, 3:]).all()
    assert [kv_head_of(h, 8, 2) for h in range(8)] == [0, 0, 0, 0, 1, 1, 1, 1]


def test_attention_matches_the_model():
    """The derived attention equals the probabilities the engine's own forward computes."""
    import torch

    from kvsim.caches import NoCache
    from kvsim.models.loading import load_model

    loaded = load_model(MODEL)
    m = loaded.model
    ids = torch.tensor([loaded.tokenizer.encode(PROMPT)])
    n = ids.shape[1]
    captured = {}

    def hook(_mod, _inp, out):
        captured["probs"] = out

    layer = m.layers[1].attn
    handle_softmax = torch.nn.functional.softmax

    def spy(x, dim=-1, **kw):
        out = handle_softmax(x, dim=dim, **kw)
        captured.setdefault("all", []).append(out)
        return out

    torch.softmax, orig = spy, torch.softmax
    try:
        out = m(ids, torch.arange(n), NoCache(m.cfg.n_layers), record=True)
    finally:
        torch.softmax = orig
    probs = captured["all"][1]  # layer 1: (B, H_kv, g, T, S)
    cfg = m.cfg
    g = cfg.group_size
    for head in range(cfg.n_heads):
        kvh = kv_head_of(head, cfg.n_heads, cfg.n_kv_heads)
        mine = attention_rows(out.q[1, 0, head].numpy(), out.k[1, 0, kvh].numpy(), np.arange(n), np.arange(n))
        ref = probs[0, kvh, head % g].numpy()
        np.testing.assert_allclose(np.nan_to_num(mine), ref, atol=1e-5)
    assert layer is not None


# ---------------------------------------------------------------------------------- views
def test_after_n_steps_every_view_shows_the_records(window):
    N = 5
    assert window.controller.run_steps(N)
    s = window.session
    P = s.prompt_len
    records = s.records
    assert len(records) == N and s.cursor == N - 1
    cfg = s.run.config
    D = cfg.head_dim
    # after N steps the K/V tables hold P + N - 1 rows: the N-th produced token is not fed yet
    assert s.n_rows() == P + N - 1
    assert s.n_text_tokens() == P + N
    for panel in window.lane_panels:
        shown = panel.shown()
        assert shown["k_shape"] == (P + N - 1, D)
        assert shown["v_shape"] == (P + N - 1, D)
        assert shown["attn_shape"] == (P + N - 1, P + N - 1)  # query rows × key positions
        lane = records[-1].lane(panel.name)
        assert f"<b style='color:{panel.color}'>{lane.kv_positions}</b>" in shown["readout"]
        assert f"{lane.wall_ms:.2f}&nbsp;ms" in shown["readout"]
    # images are the records' rows through the colormap, with symmetric levels
    layer, head = window.lane_panels[0].layer, window.lane_panels[0].head
    g = kv_head_of(head, cfg.n_heads, cfg.n_kv_heads)
    k, v = _kv_from_records(records, layer, g)
    m = window.derived.levels[(layer, g)]
    un, ca = window.lane_panels  # no cache | KV cache
    np.testing.assert_array_equal(un.k.image.image, theme.colorize(k, -m, m, theme.KV_CMAP))
    np.testing.assert_array_equal(un.v.image.image, theme.colorize(v, -m, m, theme.KV_CMAP))
    # the cached lane: the same values, rows read from the cache dimmed, the new row as computed
    np.testing.assert_array_equal(ca.k.image.image, dim_rows(theme.colorize(k, -m, m, theme.KV_CMAP), P + N - 2))
    np.testing.assert_array_equal(ca.k.image.image[-1], un.k.image.image[-1])
    # the last attention row: one decode row over P + N - 1 keys, equal to softmax(q·Kᵀ/√d)
    q_last = records[-1].q[layer, head]  # (1, D)
    expect = attention_rows(q_last, k, np.array([P + N - 2]), np.arange(P + N - 1))[0]
    got = window.derived.attention_values(0, layer, head, P + N - 2)
    np.testing.assert_allclose(got, expect, rtol=1e-5, atol=1e-7)
    # lane geometry: uncached computed every row, cached only the new one
    un = next(p for p in window.lane_panels if p.name == "uncached")
    ca = next(p for p in window.lane_panels if p.name == "cached")
    assert un.shown()["geom"][2] == 0 and ca.shown()["geom"][2] == P + N - 2
    # counters equal the engine's records
    for i, name in enumerate(lane.name for lane in s.lanes):
        assert s.cumulative(i) == (sum(r.lane(name).kv_positions for r in records), sum(r.lane(name).flops for r in records))
        rows_curve, flops_curve, time_curve, bytes_curve = window.costs.curves[i]
        np.testing.assert_array_equal(rows_curve.yData, np.cumsum([r.lane(name).kv_positions for r in records]))
        np.testing.assert_array_equal(flops_curve.yData, np.cumsum([r.lane(name).flops for r in records]).astype(float))
        np.testing.assert_allclose(time_curve.yData, [r.lane(name).wall_ms for r in records])
        np.testing.assert_array_equal(bytes_curve.yData, [r.lane(name).cache_bytes for r in records])
    assert s.cumulative(0)[0] == N * P + N * (N - 1) // 2  # Σ over steps of every row: n(n+1)/2 less the prompt's
    assert s.cumulative(1)[0] == P + N - 1
    # timeline and phase
    assert window.timeline.phase.text() == "DECODE"
    assert window.timeline.slider.value() == N - 1


def test_scrubbing_back_shows_step_k_exactly(window):
    assert window.controller.run_steps(6)
    s = window.session
    P = s.prompt_len
    before = len(s.records)
    for k in (0, 2, 4):
        window.controller.scrub_to(k)
        assert s.cursor == k and len(s.records) == before  # no recompute
        cfg = s.run.config
        layer, head = window.lane_panels[0].layer, window.lane_panels[0].head
        g = kv_head_of(head, cfg.n_heads, cfg.n_kv_heads)
        kk, _ = _kv_from_records(s.records[: k + 1], layer, g)
        m = window.derived.levels[(layer, g)]
        for panel in window.lane_panels:
            assert panel.shown()["k_shape"] == (P + k, cfg.head_dim)
            expect = theme.colorize(kk, -m, m, theme.KV_CMAP)
            if panel.name == "cached" and k > 0:
                expect = dim_rows(expect, P + k - 1)
            np.testing.assert_array_equal(panel.k.image.image, expect)
            lane = s.records[k].lane(panel.name)
            assert f"{lane.wall_ms:.2f}&nbsp;ms" in panel.readout.text()
        assert window.timeline.phase.text() == ("PREFILL" if k == 0 else "DECODE")
        assert len(window.costs.curves[1][0].yData) == k + 1
    # stepping forward from the middle replays the record, it does not compute
    window.controller.step_forward()
    assert s.cursor == 5 and len(s.records) == before
    window.controller.step_back()
    assert s.cursor == 4


def test_step_back_to_prompt_only_and_hover(window, qtbot):
    assert window.controller.run_steps(2)
    window.controller.scrub_to(-1)
    assert window.session.cursor == -1
    assert window.lane_panels[0].shown()["k_shape"] is None
    window.controller.scrub_to(1)
    window.tokens.set_hover(2)
    for panel in window.lane_panels:
        assert panel.k.hover.isVisible() and panel.a.hover_col.isVisible()
    window.tokens.set_hover(-1)
    assert not window.lane_panels[0].k.hover.isVisible()
    # and the other way: a row hovered in a lane highlights the token and the other lane
    lane = window.lane_panels[1]
    lane.hovered.emit(3)
    assert window.tokens.hover == 3 and window.lane_panels[0].k.hover.isVisible()
    texts = []
    lane.pointed.connect(texts.append)
    n = window.session.n_rows()
    lane._point_attention(n - 1, 0.5 * lane.a.width / n)  # last query row, key 0
    p0 = window.derived.attention_values(lane.index, lane.layer, lane.head, n - 1)[0]
    assert texts and f"p = {p0:.4f}" in texts[-1]
    lane._point_attention(2, (n - 0.5) * lane.a.width / n)  # row 2 cannot see the last key
    assert "masked" in texts[-1]


def test_play_and_pause(window, qtbot):
    window.animator.set_speed("fast")
    window.controller.toggle_play()
    assert window.controller.playing
    qtbot.waitUntil(lambda: window.session.n_steps >= 3, timeout=30_000)
    window.controller.toggle_play()
    assert not window.controller.playing
    qtbot.wait(50)
    qtbot.waitUntil(lambda: not window.controller.busy, timeout=10_000)
    n = window.session.n_steps
    qtbot.wait(600)
    assert window.session.n_steps == n  # paused: nothing more is computed
    assert window.session.cursor == n - 1


def test_models_load_on_the_worker_thread(window, qtbot):
    """Model loading and steps run on the worker's QThread, never on the GUI thread."""
    from PySide6.QtCore import QThread

    worker = window.worker.worker
    assert worker.thread() is window.worker.qthread and worker.thread() is not QThread.currentThread()
    seen = []
    worker.model_loaded.connect(lambda _info: seen.append(QThread.currentThread() is window.worker.qthread), Qt.DirectConnection)
    window.controller.load_model(MODEL)
    qtbot.waitUntil(lambda: bool(seen) and window.controller.can_step, timeout=30_000)
    assert seen == [True]


def test_keyboard_shortcuts(window, qtbot):
    keys = {
        a.shortcut().toString()
        for a in (window.toolbar.reset_action, window.toolbar.back_action, window.toolbar.step_action, window.toolbar.play_action)
    }
    assert keys == {"Home", "Left", "Right", "Space"}
    window.toolbar.step_action.trigger()
    qtbot.waitUntil(lambda: window.session.n_steps == 1, timeout=20_000)
    window.toolbar.back_action.trigger()
    assert window.session.cursor == -1


def test_switching_model_mid_session(window, qtbot):
    assert window.controller.run_steps(3)
    other = "random:family=gpt2,layers=2,heads=2,dim=64,seed=3"
    window.controller.load_model(other)
    qtbot.waitUntil(
        lambda: window.session.run is not None and window.session.run.model_id == other and window.controller.can_step,
        timeout=30_000,
    )
    assert window.session.n_steps == 0
    assert window.controller.run_steps(2)
    assert window.lane_panels[0].shown()["k_shape"] == (window.session.prompt_len + 1, 32)
    assert window.toolbar.head_box.count() == 3  # 2 heads + "all heads"


def test_bad_model_file_shows_an_error_and_the_app_stays_usable(window, qtbot, tmp_path):
    assert window.controller.run_steps(2)
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"this is not a gguf file")
    window.controller.load_model(str(bad))
    qtbot.waitUntil(lambda: window.banner.isVisible(), timeout=30_000)
    assert "broken.gguf" in window.banner.text()
    qtbot.waitUntil(lambda: not window.controller.busy, timeout=10_000)
    # the previous model is still loaded: reset and step again
    window.controller.reset()
    qtbot.waitUntil(lambda: window.controller.can_step and window.session.n_steps == 0, timeout=20_000)
    assert window.controller.run_steps(2)
    assert window.session.n_steps == 2


def test_prompt_too_long_is_a_message(qtbot, qapp):
    from kvsim.ui.shell.window import MainWindow

    w = MainWindow(model="random:layers=1,heads=2,kv_heads=1,dim=32,ctx=16", prompt="x" * 40, persist=False)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitUntil(lambda: w.banner.isVisible(), timeout=30_000)
    assert "longer than the model's context" in w.banner.text()
    w.toolbar.prompt_box.setEditText("short")
    w.controller.reset()
    qtbot.waitUntil(lambda: w.controller.can_step, timeout=20_000)
    assert w.controller.run_steps(2)
    w.shutdown()


def test_cancel_a_long_step(window, qtbot):
    worker = window.worker.worker
    worker.progress.connect(lambda *_: worker.cancel(), Qt.DirectConnection)
    window.controller.step_forward()  # the prefill, cancelled after its first layer
    qtbot.waitUntil(
        lambda: "cancelled" in window.banner.text() and not window.controller.busy and window.controller.can_step, timeout=20_000
    )
    assert window.session.n_steps == 0
    worker.progress.disconnect()
    assert window.controller.run_steps(2)  # a cancelled prefill just runs again
    # a cancelled decode step keeps nothing of itself and the run goes on from where it was
    tokens_before = [r.token_id for r in window.session.records]
    worker.progress.connect(lambda *_: worker.cancel(), Qt.DirectConnection)
    window.controller.step_forward()
    c = window.controller
    qtbot.waitUntil(lambda: "step 2 cancelled" in window.banner.text() and not c.busy and c.can_step, timeout=20_000)
    worker.progress.disconnect()
    assert window.session.n_steps == 2
    assert window.controller.run_steps(2)
    assert [r.token_id for r in window.session.records][:2] == tokens_before
    # the continued run is the run an uncancelled simulator gives (caches were rolled back)
    assert all(r.lane("cached").logit_diff < 1e-4 for r in window.session.records)
    window.controller.scrub_to(0)
    assert window.session.cursor == 0


def test_long_sequences_draw_only_the_rows_that_fit(qtbot, qapp):
    from kvsim.ui.shell.window import MainWindow

    w = MainWindow(model="random:layers=1,heads=2,kv_heads=1,dim=32,ctx=1024", prompt="a" * 300, persist=False)
    qtbot.addWidget(w)
    w.animator.set_speed("instant")
    assert w.controller.wait_ready(60)
    assert w.controller.run_steps(2)
    n = w.session.n_rows()
    assert n == 301
    shown = w.lane_panels[0].shown()
    assert shown["k_shape"] == (MAX_ROWS, 16)
    assert shown["attn_shape"] == (MAX_ROWS, n)
    w.shutdown()


def test_signal_object_stress_does_not_abort():
    """Regression: PySide6 6.12.0 on CPython 3.11 aborted after ~2,000 Signal(object) emits."""
    script = textwrap.dedent("""
        import os, sys
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        from PySide6.QtCore import QCoreApplication, QObject, QThread, Signal, Slot
        app = QCoreApplication([])
        class Src(QObject):
            sig = Signal(object)
            flag = Signal(bool)
        class Sink(QObject):
            n = 0
            @Slot(object)
            def take(self, obj): self.n += 1
        src, sink = Src(), Sink()
        src.sig.connect(sink.take)
        src.flag.connect(lambda b: None)
        for i in range(6000):
            src.sig.emit({"i": i})
            src.flag.emit(i % 2 == 0)
        # and across threads, queued, as the worker does
        class Emitter(QObject):
            sig = Signal(object)
            @Slot()
            def run(self):
                for i in range(6000):
                    self.sig.emit((i, True))
        th = QThread(); em = Emitter(); em.moveToThread(th)
        sink2 = Sink(); em.sig.connect(sink2.take)
        th.started.connect(em.run); th.start()
        import time
        t0 = time.time()
        while sink2.n < 6000 and time.time() - t0 < 60:
            app.processEvents()
        th.quit(); th.wait()
        print(sink.n, sink2.n)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["6000", "6000"]


def test_screenshot_command_writes_pngs(tmp_path):
    import argparse

    from kvsim.ui.export import screenshot

    args = argparse.Namespace(
        model="random:layers=1,heads=2,kv_heads=1,dim=32", prompt="Hello", steps=3, out=str(tmp_path), size="800x600"
    )
    assert screenshot.main(args) == 0
    names = sorted(p.name for p in tmp_path.glob("*.png"))
    assert names == ["kvsim.png"]  # what was asked for and nothing else (--variants adds 1280x720 and 1920x1080)
    from PySide6.QtGui import QImage

    assert QImage(str(tmp_path / "kvsim.png")).width() == 800


def test_switching_lanes_rebuilds_the_panels(window, qtbot):
    assert window.controller.run_steps(2)
    window.toolbar.lanes_box.setCurrentIndex(1)
    window.toolbar._lanes_activated(1)
    qtbot.waitUntil(
        lambda: window.controller.can_step and [p.name for p in window.lane_panels] == ["cached", "uncached"], timeout=20_000
    )
    assert window.controller.run_steps(2)
    assert window.lane_panels[0].shown()["geom"][2] == window.session.n_rows() - 1  # cached: one row
    assert window.lane_panels[1].shown()["geom"][2] == 0


def test_log_scale_and_layout_persistence(qtbot, qapp, tmp_path):
    from PySide6.QtCore import QSettings

    from kvsim.ui.shell.window import MainWindow

    QSettings.setDefaultFormat(QSettings.IniFormat)
    QSettings.setPath(QSettings.IniFormat, QSettings.UserScope, str(tmp_path))
    w = MainWindow(model=MODEL, prompt=PROMPT, persist=True)
    qtbot.addWidget(w)
    w.show()
    assert w.controller.wait_ready(60)
    w.animator.set_speed("instant")
    assert w.controller.run_steps(3)
    w.costs.log_box.setChecked(True)
    assert all(p.getAxis("left").logMode for p in w.costs.plots)
    assert w.costs.curves[1][0].yData[-1] == w.session.cumulative(1)[0]
    w.text_dock.setVisible(False)
    w.toolbar.speed_box.setCurrentIndex(w.toolbar.speed_box.findData("fast"))
    w.close()
    w2 = MainWindow(model=MODEL, prompt=PROMPT, persist=True)
    qtbot.addWidget(w2)
    w2.show()
    assert w2.toolbar.speed_box.currentData() == "fast"
    assert not w2.text_dock.isVisible()
    assert w2.controller.wait_ready(60)
    w2.close()
    QSettings.setDefaultFormat(QSettings.NativeFormat)


def test_keys_reach_the_simulator_not_the_prompt_box(window, qtbot):
    window.activateWindow()
    qtbot.waitUntil(lambda: window.isActiveWindow(), timeout=5_000)
    assert not window.toolbar.prompt_box.lineEdit().hasFocus()
    qtbot.keyClick(window.focusWidget() or window, Qt.Key_Right)
    qtbot.waitUntil(lambda: window.session.n_steps == 1, timeout=20_000)
    qtbot.keyClick(window.focusWidget() or window, Qt.Key_Left)
    assert window.session.cursor == -1
    qtbot.keyClick(window.focusWidget() or window, Qt.Key_Space)
    assert window.controller.playing
    qtbot.keyClick(window.focusWidget() or window, Qt.Key_Space)
    assert not window.controller.playing


def test_generated_token_tooltip_names_the_candidates(window):
    assert window.controller.run_steps(3)
    s = window.session
    pos = s.prompt_len + 1  # produced by step 1
    window.tokens.set_hover(pos)
    tip = window.tokens.toolTip()
    lane = s.records[1].lanes[0]
    assert "candidates at step 1" in tip and repr(s.id_label(lane.top_ids[0])) in tip
    window.tokens.set_hover(-1)


def test_play_stops_at_end_of_sequence(window, qtbot):
    from dataclasses import replace

    assert window.controller.run_steps(3)
    s = window.session
    s.run = replace(s.run, eos_id=s.records[1].token_id)  # pretend step 1 produced the end-of-sequence token
    window.controller.scrub_to(0)
    window.animator.set_speed("fast")
    window.controller.toggle_play()
    qtbot.waitUntil(lambda: not window.controller.playing, timeout=20_000)
    assert s.cursor == 1
    assert "end-of-sequence" in window.statusBar().currentMessage()
    window.controller.step_forward()  # Step continues past it
    assert s.cursor == 2


def test_a_closed_dock_comes_back_from_the_view_menu(window, qtbot):
    window.text_dock.close()
    assert not window.text_dock.isVisible()
    actions = {a.text(): a for a in window.toolbar.view_button.menu().actions()}
    actions["Default layout"].trigger()
    assert window.text_dock.isVisible()
    window.costs_dock.close()
    views = next(a.menu() for a in window.toolbar.view_button.menu().actions() if a.menu() and a.menu().title() == "Views")
    next(a for a in views.actions() if a.text() == window.costs_dock.windowTitle()).trigger()  # ☰ → Views → its dock
    assert window.costs_dock.isVisible()


def test_save_and_open_a_run(window, qtbot, tmp_path):
    assert window.controller.run_steps(4)
    before = [(r.token_id, r.lane("cached").flops) for r in window.session.records]
    k_before = window.session.kv_rows(1, 0, 0, 0, window.session.n_rows())[0].copy()
    path = tmp_path / "lecture.kvsim"
    assert window.controller.save_run(str(path))
    window.controller.reset()
    qtbot.waitUntil(lambda: window.controller.can_step and window.session.n_steps == 0, timeout=20_000)

    assert window.controller.open_run(str(path))
    s = window.session
    assert s.n_steps == 4 and s.cursor == 3 and window.controller.browsing and not window.controller.can_step
    assert [(r.token_id, r.lane("cached").flops) for r in s.records] == before
    assert np.array_equal(s.kv_rows(1, 0, 0, 0, s.n_rows())[0], k_before)
    window.controller.step_forward()  # at the end of an opened run: a message, no new step
    assert s.n_steps == 4 and "browsing" in window.banner.text()
    window.controller.scrub_to(1)
    assert s.cursor == 1

    bad = tmp_path / "broken.kvsim"
    bad.write_bytes(path.read_bytes()[:100])
    assert not window.controller.open_run(str(bad))
    assert "could not open" in window.banner.text()
    assert s.n_steps == 4  # the run on screen is kept

    window.controller.reset()  # back to a live run on the loaded model
    qtbot.waitUntil(lambda: window.controller.can_step and window.session.n_steps == 0, timeout=20_000)
    assert not window.controller.browsing
    assert window.controller.run_steps(2)


def test_enter_in_the_prompt_box_starts_exactly_one_run(window, qtbot):
    from PySide6.QtCore import Qt as _Qt

    started = []
    window.session.run_started.connect(lambda: started.append(window.session.run.run_id))
    window.toolbar.prompt_box.lineEdit().setFocus()
    qtbot.keyClick(window.toolbar.prompt_box.lineEdit(), _Qt.Key_Return)
    qtbot.waitUntil(lambda: len(started) >= 1 and window.controller.can_step, timeout=20_000)
    qtbot.wait(300)  # a second run would have started by now
    assert len(started) == 1
    window.controller.busy = True  # as if a Step for the old run were in flight when a new run starts
    window.controller.reset()
    qtbot.waitUntil(lambda: len(started) == 2, timeout=20_000)
    assert not window.controller.busy
    assert window.controller.run_steps(1)


def test_screenshot_into_an_unwritable_place_is_one_error_line(tmp_path, capsys):
    import argparse

    from kvsim.ui.export import screenshot

    blocker = tmp_path / "file"
    blocker.write_text("x")
    args = argparse.Namespace(
        model="random:layers=1,heads=2,kv_heads=1,dim=32", prompt="Hi", steps=1, out=str(blocker / "sub"), size="800x600"
    )
    assert screenshot.main(args) == 2
    err = capsys.readouterr().err
    assert "error: cannot write" in err and "Traceback" not in err


def test_derived_attention_of_cached_decode_steps_with_a_window_matches_the_model():
    """Rows drawn from the records equal the probabilities the model's cached decode computed."""
    import torch

    from kvsim.caches import KVCache, parse_spec
    from kvsim.engine.simulate import Simulator
    from kvsim.models.loading import load_model
    from kvsim.ui.lanes.attention import AttentionRows

    loaded = load_model("random:family=llama,layers=2,heads=4,kv_heads=2,dim=32,window=6,seed=9")
    m, cfg = loaded.model, loaded.model.cfg
    sim = Simulator(m, loaded.tokenizer, list(range(30, 39)), lanes=(parse_spec("cached"),))
    records = list(sim.run(8))
    q_all = np.concatenate([r.q for r in records], axis=2)  # (L, H, n, D)
    k_all = np.concatenate([r.k for r in records], axis=2)  # (L, H_kv, n, D)
    n = q_all.shape[2]

    # replay the same tokens through a cached forward, capturing each decode step's softmax
    seen = []
    orig = torch.softmax
    cache = KVCache(cfg.n_layers)
    tokens = sim.tokens
    m(torch.tensor([tokens[:9]]), torch.arange(9), cache)
    try:
        torch.softmax = lambda x, dim=-1, **kw: seen.append(orig(x, dim=dim, **kw)) or seen[-1]
        for p in range(9, n):
            seen.clear()
            m(torch.tensor([[tokens[p]]]), torch.arange(p, p + 1), cache)
            probs = seen[1][0]  # layer 1: (H_kv, g, 1, S)
            for head in range(cfg.n_heads):
                kvh = kv_head_of(head, cfg.n_heads, cfg.n_kv_heads)
                mine = AttentionRows(cfg.sliding_window).rows(q_all[1, head], k_all[1, kvh], p, p + 1, p + 1)[0]
                ref = probs[kvh, head % cfg.group_size, 0].numpy()
                assert np.isnan(mine[: max(0, p - 5)]).all()  # outside the window of 6: masked
                np.testing.assert_allclose(np.nan_to_num(mine), ref, atol=1e-5)
    finally:
        torch.softmax = orig


def test_all_heads_are_drawn_in_groups_over_the_kv_head_they_share(window, qtbot):
    """The overview frames every query head in its K/V head's group colour (GQA drawn as such)."""
    assert window.controller.run_steps(2)
    cfg = window.session.config
    window.toolbar.head_box.setCurrentIndex(window.toolbar.head_box.findData(-1))  # "all heads"
    qtbot.waitUntil(lambda: window.overview_dock.isVisible(), timeout=5_000)
    frames = window.overview.frames
    assert len(frames) == cfg.n_heads
    for head, color in enumerate(frames):
        assert color == theme.group_color(head // cfg.group_size)
    groups = {frames[h] for h in range(cfg.n_heads)}
    assert len(groups) == min(cfg.n_kv_heads, len(theme.GROUP_COLORS))
    assert not groups & {theme.lane_color(i) for i in range(7)}  # never mistaken for a lane


def test_a_portuguese_prompt_names_the_model_that_writes_portuguese(qtbot):
    from PySide6.QtWidgets import QMainWindow

    from kvsim.ui.shell.toolbar import DEFAULT_MODEL, PORTUGUESE_MODEL, ControlsToolBar

    host = QMainWindow()
    qtbot.addWidget(host)
    tb = ControlsToolBar(host)
    pt = next(i for i in range(tb.prompt_box.count()) if tb.prompt_box.itemData(i) == "pt")
    en = next(i for i in range(tb.prompt_box.count()) if tb.prompt_box.itemData(i) == "en")
    tb.prompt_box.setCurrentIndex(en)
    assert tb.model_hint() == ""
    tb.prompt_box.setCurrentIndex(pt)
    tb.fill_models([{"name": PORTUGUESE_MODEL, "kind": "fetchable"}])
    tb.model_box.setCurrentIndex(tb.model_box.findData(DEFAULT_MODEL))
    assert tb.model_hint() == ""  # the bundled model writes Portuguese too
    tb.show_model("random:family=llama,layers=2", "")  # a model that does not write Portuguese
    assert f"kvsim models get {PORTUGUESE_MODEL}" in tb.model_hint()
    tb.fill_models([{"name": PORTUGUESE_MODEL, "kind": "fetched"}])
    assert "pick it" in tb.model_hint()
    tb.model_box.setCurrentIndex(tb.model_box.findData(PORTUGUESE_MODEL))
    assert tb.model_hint() == ""  # already on it


def test_derived_attention_follows_each_layers_own_window(qtbot, qapp):
    """Gemma 3's local layers see a window, its global layers everything: the app's attention rows
    follow each layer's own window and equal the model's softmax there."""
    import torch

    from kvsim.caches import KVCache
    from kvsim.models.loading import load_model

    spec = "random:family=gemma3,layers=2,heads=2,kv_heads=1,dim=32,window=4,global_every=2,seed=4"
    cfg = load_model(spec).model.cfg
    assert cfg.window_of(0) == 4 and cfg.window_of(1) is None
    w = ready_window(qtbot, qapp, spec, "abcdef")
    assert w.controller.run_steps(6)
    s = w.session
    n = s.n_rows()
    local, glob = w.derived.attention_values(1, 0, 0, n - 1), w.derived.attention_values(1, 1, 0, n - 1)
    assert np.isnan(local[: n - 4]).all() and not np.isnan(local[n - 4 :]).any()
    assert not np.isnan(glob).any()
    # the model's own probabilities for the newest query, layer by layer
    model = load_model(spec).model
    seen, orig = [], torch.softmax
    cache = KVCache(cfg.n_layers)
    model(torch.tensor([s.tokens[: n - 1]]), torch.arange(n - 1), cache)
    try:
        torch.softmax = lambda x, dim=-1, **kw: seen.append(orig(x, dim=dim, **kw)) or seen[-1]
        model(torch.tensor([[s.tokens[n - 1]]]), torch.arange(n - 1, n), cache)
    finally:
        torch.softmax = orig
    for layer, mine in ((0, local), (1, glob)):
        ref = seen[layer][0][0, 0, 0].numpy()  # (H_kv, g, T, S) → kv head 0, query head 0, the one row
        np.testing.assert_allclose(np.nan_to_num(mine), ref, atol=1e-5)
    w.shutdown()


def test_the_time_plot_shows_each_steps_spread(window):
    """Small models are timed 3× per step in the app: the time plot draws min…max around the median."""
    assert window.controller.run_steps(4)
    s = window.session
    assert s.records[-1].lanes[0].wall_ms_min is not None  # the worker timed it more than once
    band = window.costs.bands[0]
    assert band.isVisible()
    lo, hi = np.asarray(s.series("ms_min", 0)), np.asarray(s.series("ms_max", 0))
    y = np.asarray(s.series("ms", 0))
    np.testing.assert_allclose(band.opts["top"], hi - y)
    np.testing.assert_allclose(band.opts["bottom"], y - lo)
    assert (lo <= y).all() and (y <= hi).all()


def test_the_stats_table_shows_the_engines_paired_itl_ratio_and_says_within_noise(window):
    """The ITL row marks each lane by the engine's paired comparison of the records' own step times with the
    first lane's ("≈" when the interval includes 1) — recomputed here from the records with the engine's primitive."""
    from kvsim.core.compare import compare_paired

    assert window.controller.run_steps(8)
    s = window.session
    first = [r.lanes[0].wall_ms for r in s.records[1:]]
    cached = [r.lanes[1].wall_ms for r in s.records[1:]]
    expected = compare_paired(first, cached)
    got = s.itl_compared(1)
    assert got is not None and s.itl_compared(0) is None
    assert (got.ratio, got.low, got.high, got.pairs) == (expected.ratio, expected.low, expected.high, 7)
    text = window.costs.stats.text()
    itl = s.ttft_itl(1)[1]
    shown = f"{itl:.2f} ms" if itl < 10 else f"{itl:.1f} ms"
    assert ("≈" + shown in text) == (got.verdict == "within noise")  # ≈: within noise of the first lane
    assert shown in text
    assert s.itl_compared(1, step=0) is None  # before a decode step: nothing to pair


def test_lanes_keep_one_height_when_a_compared_lane_joins(window, qtbot):
    """Panels reused from the previous run and a new one get the same readout height, so rows line up."""
    two = {p.readout.height() for p in window.lane_panels}
    window.controller.set_lanes("kv,window:4,int4:g4:r2")
    qtbot.waitUntil(lambda: window.controller.can_step and len(window.lane_panels) == 3, timeout=20_000)
    assert window.controller.run_steps(2)
    heights = {p.readout.height() for p in window.lane_panels}
    assert len(heights) == 1 and heights.pop() > two.pop()  # a third line for |Δlogit| and KL
    assert len({p.glw.height() for p in window.lane_panels}) == 1


def test_a_readout_gives_back_room_once_playback_stops(window, qtbot):
    """While playing, a readout only grows (no re-layout of every lane twice a step); at rest — playback
    stopped, a step's animation finished — it is measured afresh, so an earlier long readout does not keep
    room the K/V tables need."""
    assert window.controller.run_steps(2)
    panel = window.lane_panels[0]
    short = panel.readout.text()
    base = panel.readout.height()
    panel.readout.setText(short + ("<br>a line an earlier step needed" * 4))
    panel._grow_readout()
    tall = panel.readout.height()
    assert tall > base + 3 * panel.readout.fontMetrics().lineSpacing()
    window.controller.playing = True  # playing: the next, shorter readout keeps the room
    panel.readout.setText(short)
    panel._grow_readout()
    window.animator.finished.emit()
    assert panel.readout.height() == tall
    window.controller.stop_play()  # at rest: measured afresh, every lane the same height again
    assert panel.readout.height() == base
    assert len({p.readout.height() for p in window.lane_panels}) == 1
