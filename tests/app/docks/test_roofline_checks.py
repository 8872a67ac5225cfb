"""The roofline dock places a spec lane's verification steps as their own points (stars, labelled): each
at exactly the recorded FLOPs ÷ bytes of that check step and its FLOPs ÷ measured time, inside the plot,
and to the right of the plain kv lane's decode point of the same step (k+1 rows for one weight read)."""

from __future__ import annotations

import math

from helpers import ready_window

LLAMA = "random:family=llama,layers=2,heads=4,kv_heads=2,dim=64,vocab=300,ctx=256,seed=11"


def test_verification_steps_are_their_own_labelled_points(qtbot, qapp, monkeypatch) -> None:
    import kvsim.costs.hardware as hardware

    real = hardware.measure_peaks
    monkeypatch.setattr(hardware, "measure_peaks", lambda *a, **k: real(*a, **{**k, "budget_s": 0.2}))
    w = ready_window(qtbot, qapp, LLAMA, "the cat the cat the cat", lanes="kv,spec:4:lookup", size=(1600, 900))
    dock = w.extra_docks["roofline"]
    dock.setVisible(True)
    view = dock.view
    assert view is not None
    assert w.controller.run_steps(16, timeout_s=120)
    qtbot.waitUntil(lambda: view.peaks is not None, timeout=20_000)
    view.dirty = True
    view.redraw()
    s = w.session
    checks = [r for r in s.records if r.lanes[1].drafted and r.phase == "decode"]
    assert checks, "the run had no decode step that checked drafts"
    group = view.groups[(1, "check", "total")]
    points = list(group.data["data"])
    assert sorted(p.step for p in points) == [r.step for r in checks]  # exactly the check steps, nothing else
    assert all(p.step not in {r.step for r in checks} for p in view.groups[(1, "decode", "total")].data["data"])
    (x0, x1), (y0, y1) = view.plot.getPlotItem().viewRange()
    for spot in group.points():
        p = spot.data()
        lane = s.record(p.step).lanes[1]
        flops, nbytes = sum(lane.flops_by_component.values()), sum(lane.bytes_by_component.values())
        assert p.flops == flops and p.bytes == nbytes
        assert math.isclose(spot.pos().x(), math.log10(flops / nbytes), rel_tol=1e-12)  # x: recorded FLOPs ÷ bytes
        assert math.isclose(spot.pos().y(), math.log10(flops / (lane.wall_ms / 1e3)), rel_tol=1e-12)
        assert x0 <= spot.pos().x() <= x1 and y0 <= spot.pos().y() <= y1  # inside the plot
        # k+1 rows for one weight read: more FLOP per byte than the kv lane's one-row step
        kv = s.record(p.step).lanes[0]
        assert flops / nbytes > sum(kv.flops_by_component.values()) / sum(kv.bytes_by_component.values())
    # the label sits beside the latest check at or before the cursor, and says its rows
    last = max(checks, key=lambda r: r.step)
    placed = view.check_labels.placed[1]
    assert placed.step == last.step and placed.component == "total"
    item = view.check_labels.items[1]
    rows = last.lanes[1].kv_positions + last.lanes[1].drafted
    assert item.isVisible() and f"{rows} rows" in item.textItem.toPlainText()
    assert math.isclose(item.pos().x(), math.log10(placed.intensity), rel_tol=1e-12)
    assert math.isclose(item.pos().y(), math.log10(placed.achieved), rel_tol=1e-12)
    assert "★" in view.key.text()
    # the prefill over the decode steps, the checks over both: a run's one prefill square is never hidden
    z = {phase: view.groups[(0 if phase != "check" else 1, phase, "total")].zValue() for phase in ("prefill", "decode", "check")}
    assert z["decode"] < z["prefill"] < z["check"], z
    # the roof's words above the roof (no measured point lies there): anchored by their bottom edge
    assert view.plot.ridge_text.anchor.y() == 1 and view.plot.slope_text.anchor.y() == 1
    # the ceiling's too (a line higher when the ridge's share its line), and the two never overlap
    ceiling, ridge_words = view.plot.ceiling_text, view.plot.ridge_text
    assert ceiling.anchor.y() >= 1
    box = ceiling.mapRectToScene(ceiling.boundingRect())
    assert not box.intersects(ridge_words.mapRectToScene(ridge_words.boundingRect())), (box, ridge_words.pos())
    # before the first check the label is hidden
    w.controller.scrub_to(checks[0].step - 1)
    qtbot.waitUntil(lambda: not view.check_labels.items[1].isVisible(), timeout=5_000)
