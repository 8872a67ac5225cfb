"""Frames do no work twice (issue 24: five lanes at 60 fps): the cross-hatch over cells a lane did not see
is one rectangle per block of equal runs and fills exactly the pixels the rectangle-per-row path filled;
playing a run of five lanes of different kinds sets each image once per step and none while a step
only animates. Work is counted, not timed (benchmarks/frontend/ui.py times the frames)."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

pytest.importorskip("pytestqt")
from PySide6.QtCore import QRectF, Qt  # noqa: E402
from PySide6.QtGui import QBrush, QColor, QImage, QPainter, QPainterPath, QTransform  # noqa: E402

from kvsim.ui.lanes.plots import cells_path  # noqa: E402

MODEL = "random:family=llama,layers=2,heads=4,kv_heads=2,dim=64,ctx=512,seed=0"
LANES = "none,kv,window:16,int8,paged:16"


def _row_by_row(mask: np.ndarray, lo: int, col_w: float) -> QPainterPath:
    """The reference: one rectangle per run per row (what cells_path drew before)."""
    path = QPainterPath()
    padded = np.zeros((mask.shape[0], mask.shape[1] + 2), dtype=np.int8)
    padded[:, 1:-1] = mask
    edges = np.diff(padded, axis=1)
    for i, (starts, ends) in enumerate(zip(edges == 1, edges == -1, strict=True)):
        for a, b in zip(np.flatnonzero(starts), np.flatnonzero(ends), strict=True):
            path.addRect(QRectF(a * col_w, lo + i, (b - a) * col_w, 1))
    return path


def _render(path: QPainterPath, sx: float, sy: float, brush: QBrush) -> QImage:
    img = QImage(240, 320, QImage.Format.Format_ARGB32_Premultiplied)
    img.fill(0)
    p = QPainter(img)
    p.setRenderHint(QPainter.RenderHint.Antialiasing, True)  # as the lanes draw (theme: antialias=True)
    p.setTransform(QTransform.fromScale(sx, sy).translate(0, -40))
    p.setPen(Qt.PenStyle.NoPen)
    p.setBrush(brush)
    p.drawPath(path)
    p.end()
    return img


def test_unseen_cells_path_merges_rows_and_fills_the_same_pixels(qapp) -> None:
    rng = np.random.default_rng(0)
    rows, cols = np.arange(200)[:, None], np.arange(120)[None, :]
    evicted = np.zeros((200, 48), dtype=bool)
    evicted[:150] = True  # a window lane's K/V: every row before the window evicted
    masks = [rng.random((200, 40)) < 0.3, evicted, (cols < rows - 30) & (cols >= 4), np.zeros((0, 0), dtype=bool)]
    masks.append(((cols < 10) | (cols >= rows // 2)) & (rows % 3 != 0))  # one run a row mostly, rows left out between
    masks.append((cols >= rows // 4) & (cols < rows // 4 + 7) & (rows % 5 != 0))  # one run a row: the merged-at-once path
    for mask in masks:
        for sx, sy in ((1.37, 1.53), (0.71, 0.83), (3.0, 1.0)):
            for brush in (QBrush(QColor(200, 10, 10)), QBrush(QColor(30, 200, 30), Qt.BrushStyle.DiagCrossPattern)):
                assert _render(cells_path(mask, 40, 1.3), sx, sy, brush) == _render(_row_by_row(mask, 40, 1.3), sx, sy, brush)
    assert cells_path(evicted, 40, 1.3).elementCount() == 5  # one rectangle (move + 4 lines), not 150
    assert cells_path(masks[0], 40, 1.3).elementCount() < _row_by_row(masks[0], 40, 1.3).elementCount()


def test_five_lanes_set_each_image_once_a_step_and_none_while_animating(qtbot, qapp) -> None:
    import pyqtgraph as pg

    from kvsim.caches import parse_lanes
    from kvsim.engine.simulate import Simulator
    from kvsim.models.loading import load_model
    from kvsim.ui import theme
    from kvsim.ui.lanes import plots
    from kvsim.ui.session import RunInfo
    from kvsim.ui.shell.window import MainWindow

    loaded = load_model(MODEL)
    ids = loaded.tokenizer.encode("The cache remembers what the model computed before. " * 3)[:120]
    sim = Simulator(loaded.model, loaded.tokenizer, ids, parse_lanes(LANES), model_id=MODEL, prompt_text="")
    records = list(sim.run(6, stop_at_eos=False))
    theme.apply(qapp)
    w = MainWindow(model=MODEL, persist=False)
    qtbot.addWidget(w)
    w.resize(1920, 1080)
    w.show()
    assert w.controller.wait_ready(60), w.controller.last_error
    run = RunInfo.from_trace(sim.trace.meta, sim.run_id, token_text=loaded.tokenizer.token_text)
    w.controller.browsing, w.controller.can_step = True, False
    w.session.start_run(run)
    w.session.add_record(records[0])  # the prefill
    w.session.set_cursor(0)
    w.lanes.show_lane("paged:16")  # a fifth lane opens hidden (MAX_SHOWN_LANES): shown, as the Lanes menu does
    qtbot.waitUntil(lambda: len(w.lanes.shown()) == 5, timeout=30_000)  # the lane area builds panels on later turns
    w.flush_views()
    w.animator.timer.stop()
    panels = w.lanes.shown()

    images: dict[int, int] = {}
    paths = [0]
    set_image, make_path = pg.ImageItem.setImage, plots.cells_path

    def counting_set_image(item, *args, **kwargs):
        images[id(item)] = images.get(id(item), 0) + 1
        return set_image(item, *args, **kwargs)

    def counting_path(*args, **kwargs):
        paths[0] += 1
        return make_path(*args, **kwargs)

    pg.ImageItem.setImage = counting_set_image
    plots.cells_path = counting_path
    try:
        own = {id(p.image) for panel in panels for p in panel.plots}
        for rec in records[1:]:
            images.clear()
            paths[0] = 0
            w.session.add_record(rec)
            w.session.set_cursor(rec.step)
            w._on_frame(0.0)
            qapp.processEvents()
            for i in range(1, 42):
                w._on_frame(i / 42)
                qapp.processEvents()
                if i == 20:  # every lane, cost plot, and the text redrawn by now: the frames after only animate
                    settled = dict(images), paths[0]
            w._on_frame(1.0)
            qapp.processEvents()
            mine = {k: v for k, v in images.items() if k in own}
            assert len(mine) == 4 * len(panels) and set(mine.values()) == {1}, (rec.step, sorted(mine.values()))
            assert (dict(images), paths[0]) == settled  # frames 21–42 and the last one: no image or path made again
            # the cross-hatch is built only for images with unseen cells: the window lane's K, V, attention
            assert paths[0] <= 3 * len(panels)
            _drawn_as_from_scratch(w, panels)
    finally:
        pg.ImageItem.setImage = set_image
        plots.cells_path = make_path
        w.shutdown()


def _drawn_as_from_scratch(w, panels) -> None:
    """Every shown lane's four images (kept rows, sliced) equal the images a fresh DerivedImages builds
    from the session at this step (every row coloured now), dimmed as the panel dims them."""
    from kvsim.ui.lanes.derived import DerivedImages
    from kvsim.ui.lanes.plots import dim_rows

    s = w.session
    fresh = DerivedImages(s)
    n = s.n_rows()
    for panel in panels:
        lo = panel._geom[0]
        comp_lo = n - s.lane_step(panel.index).kv_positions
        k, v = fresh.kv(panel.index, panel.layer, panel.head, lo, n)
        a, _ = fresh.attention(panel.index, panel.layer, panel.head, lo, n)
        q = fresh.q(panel.index, panel.layer, panel.head, lo, n, comp_lo)
        if comp_lo > lo:
            k, v, a = (dim_rows(img, comp_lo - lo) for img in (k, v, a))
        for plot, img in zip(panel.plots, (k, q, v, a), strict=True):
            np.testing.assert_array_equal(plot.image.image, img, err_msg=f"{panel.name} step {s.cursor}")
