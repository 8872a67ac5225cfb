"""The lanes view on a hybrid model (``family=qwen3_next``): a Gated DeltaNet layer shows its recurrent state as a
tile of one size at every step — the engine's recorded matrix (``StepRecord.states``), drawn over the lane's empty
plots, inside them, clear of the header, the readout and the other lane — and an attention layer its growing table
with no tile. Offscreen, a small random model, one window for the module."""

from __future__ import annotations

import time

import numpy as np
import pytest
from helpers import ready_window

from kvsim.ui.lanes import layer_kinds

HYBRID = (
    "random:family=qwen3_next,layers=4,heads=4,kv_heads=2,dim=64,head_dim=16,hidden=96,vocab=256,"
    "linear_heads=2,linear_value_heads=4,linear_head_dim=16,conv=4,seed=2"
)


class _Bot:
    """What ready_window needs of a qtbot, for one window shared by this module's tests."""

    def __init__(self, qapp) -> None:
        self.qapp = qapp

    def addWidget(self, widget) -> None:  # noqa: N802 - qtbot's API
        pass

    def waitUntil(self, condition, timeout: int = 5000) -> None:  # noqa: N802
        deadline = time.monotonic() + timeout / 1000
        while not condition():
            assert time.monotonic() < deadline, "timed out"
            self.qapp.processEvents()
            time.sleep(0.01)


@pytest.fixture(scope="module")
def window(qapp):
    w = ready_window(_Bot(qapp), qapp, HYBRID, "the cat sat", lanes="none,kv", size=(1600, 900))
    assert w.controller.run_steps(4), w.controller.last_error
    w.lanes.settle()
    yield w
    w.shutdown()
    w.close()


def _rect_in(panel, widget):
    """``widget``'s rectangle in the panel's coordinates."""
    top_left = widget.mapTo(panel, widget.rect().topLeft())
    return widget.rect().translated(top_left)


def _show(w, qapp, layer: int, step: int):
    w.session.set_cursor(step)
    for panel in w.lane_panels:
        panel.set_selection(layer, 0)
        panel.redraw()
    qapp.processEvents()
    return w.lane_panels


def test_a_recurrent_layer_shows_its_recorded_state_at_one_size(window, qapp) -> None:
    w = window
    cfg = w.session.config
    layer = cfg.linear_layers[1]
    sizes = []
    for step in range(w.session.n_steps):
        panels = _show(w, qapp, layer, step)
        states = w.session.record(step).states
        assert states is not None and states.shape == (3, 4, 16, 16)
        for panel in panels:
            tile = panel.state_tile
            assert tile.isVisible() and not panel.k.image.isVisible() and not panel.a.image.isVisible()
            assert tile.tile_shape == (16, 16)  # the dk × dv matrix itself (at most 32 a side: not averaged)
            assert "the same at every n" in tile.lines[1] and f"{layer_kinds.state_bytes(cfg):,}" in tile.lines[1]
            # the image is the recorded matrix of value head 0, coloured
            matrix = states[cfg.linear_layers.index(layer), 0]
            assert tile.image is not None and (tile.image.width(), tile.image.height()) == matrix.shape[::-1]
            sizes.append((tile.side, tile.width(), tile.height()))
            # inside the lane's plots, clear of its header and readout
            box = _rect_in(panel, tile)
            plots = panel._plots_rect().translated(panel.glw.mapTo(panel, panel.glw.rect().topLeft()))
            assert plots.contains(box), (box, plots)
            assert not box.intersects(_rect_in(panel, panel.header)) and not box.intersects(_rect_in(panel, panel.readout))
        held, recomputed = panels[1].state_tile, panels[0].state_tile
        assert "held in the cache" in held.lines[2] and "from token 0" in recomputed.lines[2]
        # the two lanes' tiles do not overlap each other
        a = _rect_in(w, panels[0].state_tile)
        b = _rect_in(w, panels[1].state_tile)
        assert not a.intersects(b)
    assert len(set(sizes)) == 1 and sizes[0][0] >= 64  # one size at every step, in both lanes


def test_an_attention_layer_draws_its_table_and_no_tile(window, qapp) -> None:
    w = window
    cfg = w.session.config
    attention = next(i for i in range(cfg.n_layers) if i not in cfg.linear_layers)
    panels = _show(w, qapp, attention, w.session.n_steps - 1)
    for panel in panels:
        assert not panel.state_tile.isVisible() and panel.k.image.isVisible()
        rows = panel.k.image.image
        assert rows is not None and rows.shape[0] == w.session.n_rows()
    recurrent = cfg.linear_layers[0]
    _show(w, qapp, recurrent, 0)
    assert all(p.state_tile.isVisible() for p in w.lane_panels)
    assert np.isfinite(w.session.record(0).states).all()
