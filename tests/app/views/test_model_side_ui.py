"""The app runs speculative and weight-quantized lanes beside the others: the worker drives them,
the panels draw them with their titles, and the drawn K rows of a spec lane are the kv lane's."""

from __future__ import annotations

import os

import numpy as np
from helpers import ready_window

LLAMA = "random:family=llama,layers=2,heads=4,kv_heads=2,dim=64,vocab=300,ctx=256,seed=11"


def test_the_app_draws_spec_and_weight_lanes(qtbot, qapp) -> None:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    w = ready_window(qtbot, qapp, LLAMA, "abcabcabcab", size=(1920, 1080))
    w.controller.set_lanes("kv,spec:3:lookup,kv@w8")
    qtbot.waitUntil(lambda: w.controller.can_step and len(w.lane_panels) == 3, timeout=20_000)
    assert w.controller.run_steps(8), w.controller.last_error
    s = w.session
    assert "Speculative (k=3, lookup)" in w.lane_panels[1].header.text()
    assert "weights INT8" in w.lane_panels[2].header.text()
    records = s.records
    assert len(records) >= 8
    spec = [r.lane("spec:3:lookup") for r in records]
    assert sum(x.drafted for x in spec) > 0  # it really drafted (the prompt repeats itself)
    assert all(r.lane("spec:3:lookup").token_id == r.token_id for r in records)
    # the spec lane is exact: it draws the record's shared rows, as the kv lane does (no rejected draft shown)
    np.testing.assert_array_equal(w.lane_panels[0].k.image.image, w.lane_panels[1].k.image.image)
    # the memory dock's check: the formula accounts for every byte of each lane (spec: its rows held ahead too)
    from kvsim.ui.docks.memory.live import lane_bills, verdict

    for _, live, bill in lane_bills(s):
        assert verdict(live, bill)[1] is True
    # the memory dock's weights line: each lane's real weight bytes (a quantized lane's codes + scales)
    from kvsim.costs.memory import human_bytes

    dock_widget = w.extra_docks["memory"]
    dock_widget.setVisible(True)
    dock = dock_widget.build()
    text = dock.weights.text().replace("\u00a0", " ")  # a figure and its unit are joined by a no-break space
    for lane in s.run.meta["lanes"]:
        assert f"{lane['name']} {human_bytes(lane['weight_bytes'])}" in text, text
    sizes = {lane["name"]: lane["weight_bytes"] for lane in s.run.meta["lanes"]}
    assert sizes["kv@w8"] < sizes["kv"] == sizes["spec:3:lookup"]
    assert "kv@w8 " in text and "(LM head in Q8_0)" in text  # the bill says how the head is held
    w.shutdown()


def test_the_app_refuses_model_copies_over_the_memory_free_in_one_line(qtbot, qapp, monkeypatch) -> None:
    """Lanes whose copies of the model (@w8, @w4) need more than the memory free: the run is refused with one
    line in the banner before any copy is made; the window keeps working (a run of lanes that fit starts)."""
    from kvsim.caches import blocks

    w = ready_window(qtbot, qapp, LLAMA, "abcabc", size=(1280, 720))
    c = w.controller
    monkeypatch.setattr(blocks, "available_memory", lambda: 1000)
    with qtbot.captureExceptions() as raised:
        c.set_lanes("kv,kv@w8,kv@w4")
        qtbot.waitUntil(lambda: c.run_failed, timeout=20_000)
        text = w.banner.text()
        assert w.banner.isVisible() and "model copies need" in text and "\n" not in text, text
        assert "Traceback" not in c.last_error
        monkeypatch.undo()
        c.set_lanes("kv,kv@w8")
        qtbot.waitUntil(lambda: c.can_step and len(w.session.lanes) == 2, timeout=20_000)
        assert c.run_steps(2), c.last_error
    assert not raised, raised
    w.shutdown()
