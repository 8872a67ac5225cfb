"""The memory dock: its numbers equal `kvsim memory --json` for every preset and edited term, and the
live cache bytes of a real run's lanes (tiny model; kv, window and int8 lanes) at any step."""

from __future__ import annotations

import helpers
import pytest
from helpers import ready_window

from kvsim.costs.memory import human_bytes
from kvsim.costs.presets import PRESETS, get_preset


def cli_json(capsys, *args: str) -> dict:
    return helpers.cli_json(capsys, "memory", *args, "--json")


@pytest.fixture
def bare_dock(qtbot, qapp):
    """The dock over a session with no run (no worker, no model): the form and the plot alone."""
    from kvsim.ui import theme
    from kvsim.ui.docks.memory.dock import MemoryDock
    from kvsim.ui.docks.registry import DockHost, Jobs
    from kvsim.ui.session import Session

    theme.apply(qapp)
    said: list[tuple] = []
    host = DockHost(Session(), Jobs(), lambda *a: said.append(a), None)
    dock = MemoryDock(host)
    dock.said = said
    qtbot.addWidget(dock)
    dock.resize(460, 900)
    dock.show()
    return dock


def choose(dock, name: str) -> None:
    dock.model.setCurrentIndex(dock.model.findData(name))
    assert dock.model.currentData() == name


def test_every_preset_in_the_dock_equals_the_cli(bare_dock, capsys):
    dock = bare_dock
    names = [dock.model.itemData(i) for i in range(dock.model.count())]
    assert set(PRESETS) | {"tiny"} <= set(names)  # all 14 presets, tiny and the model on screen
    for name in [*PRESETS, "tiny"]:
        choose(dock, name)
        p = get_preset(name)
        terms = dock.form.terms
        assert (terms.layers, terms.kv_heads, terms.head_dim, terms.tokens) == (p.layers, p.kv_heads, p.head_dim, p.context)
        out = cli_json(capsys, "--preset", name, "--context", str(terms.tokens))
        assert terms.bytes() == out["bytes"], name
        assert terms.bytes_per_token == out["bytes_per_token"], name
        assert terms.bytes_per_new_token == out["bytes_per_new_token"], name
        assert f"{out['bytes']:,} B" in dock.form.formula.text()
        assert human_bytes(out["weights_bytes"]["fp16"]) in dock.weights.text().replace("\u00a0", " ")
        assert not dock.follow.isChecked()


@pytest.mark.parametrize(
    "preset, edits, flags",
    [
        ("gemma-2-9b", {"layers": 5, "window": 1000, "bits": 8, "batch": 3, "tokens": 9000}, []),
        ("mistral-7b", {"layers": 16, "tokens": 8000}, []),  # the window stays (the CLI used to drop it)
        ("llama-3-8b", {"pattern": "512, full", "tokens": 3000, "bits": 4}, ["--layer-windows", "512, full"]),
        ("falcon-7b", {"kv_heads": 71, "head_dim": 64, "tokens": 2048, "bits": 2}, []),
    ],
)
def test_edited_terms_equal_the_cli_with_the_same_flags(bare_dock, capsys, preset, edits, flags):
    dock = bare_dock
    choose(dock, preset)
    form = dock.form
    cli = ["--preset", preset, *flags]
    for key, value in edits.items():
        if key == "bits":
            form.bits.setCurrentIndex(form.bits.findData(value))
            cli += ["--kv-bits", str(value)]
        elif key == "pattern":
            form.pattern.setText(value)
            form.pattern.editingFinished.emit()
        else:
            getattr(form, {"window": "window_spin"}.get(key, key)).setValue(value)  # form.window: QWidget's
            cli += [{"tokens": "--context", "kv_heads": "--kv-heads", "head_dim": "--head-dim"}.get(key, f"--{key}"), str(value)]
    out = cli_json(capsys, *cli)
    assert form.terms.bytes() == out["bytes"]
    assert form.terms.bytes_per_new_token == out["bytes_per_new_token"]
    assert (list(form.terms.layer_windows) if form.terms.layer_windows else None) == out["layer_windows"]
    assert f"= {out['bytes']:,} B" in form.formula.text().replace("<b>", "").replace("</b>", "")


def test_a_context_past_the_models_maximum_is_warned_in_the_dock(bare_dock):
    dock = bare_dock
    choose(dock, "llama-3-70b")
    dock.form.tokens.setValue(128_000)
    assert dock.warning.isVisible()
    assert "8,192" in dock.warning.text() and "llama-3.1-70b" in dock.warning.text()
    choose(dock, "llama-3.1-70b")
    dock.form.tokens.setValue(128_000)
    assert not dock.warning.isVisible()


def test_the_plot_draws_kv_against_context_with_weights_gpus_and_mha_gqa_mqa(bare_dock):
    dock = bare_dock
    dock.focus.setCurrentIndex(dock.focus.findData("llama-3.1-70b"))
    dock.plot_bits.setCurrentIndex(dock.plot_bits.findData(16))
    p = get_preset("llama-3.1-70b")
    curves = dock.plot.curves
    gqa = curves["llama-3.1-70b (GQA, 8 K/V heads)"]
    mha, mqa = curves["llama-3.1-70b as MHA"], curves["llama-3.1-70b as MQA"]
    assert gqa[0][0] == 1000 and gqa[0][-1] == 1_000_000
    assert list(gqa[1]) == [p.kv_bytes(int(n)) for n in gqa[0]]
    assert list(mha[1]) == [8 * v for v in gqa[1]] and list(mqa[1]) == [v / 8 for v in gqa[1]]
    lines = dock.plot.lines
    assert lines["FP16 141 GB"] == 2 * p.n_params and lines["INT2 17.6 GB"] == p.n_params / 4
    assert {v for k, v in lines.items() if "GB" in k and k[:2] in ("RT", "H1", "H2")} == {24e9, 80e9, 141e9}
    assert "430,626 tokens" in dock.plot.caption.text()  # where its cache passes its FP16 weights
    others = [name for name, action in dock.others.items() if action.isChecked()]
    assert others and all(any(c.startswith(name + " (") for c in curves) for name in others)


LANES = "uncached,cached,window:6,int8:g4:r2"


def test_the_dock_follows_the_run_and_its_lanes_live_bytes(qtbot, qapp, capsys):
    w = ready_window(qtbot, qapp, "tiny", "It is a truth universally acknowledged", lanes=LANES)
    assert w.controller.run_steps(6)
    dock_widget = w.extra_docks["memory"]
    dock_widget.setVisible(True)
    dock = dock_widget.build()
    s, cfg = w.session, w.session.config
    # the terms are the run's: its shape, fp32 (32 bits), n = the rows held at the cursor
    terms = dock.form.terms
    assert dock.follow.isChecked()
    assert (terms.layers, terms.kv_heads, terms.head_dim, terms.bits) == (cfg.n_layers, cfg.n_kv_heads, cfg.head_dim, 32)
    assert terms.tokens == s.n_rows()
    out = cli_json(capsys, "--preset", "tiny", "--context", str(terms.tokens), "--kv-bits", "32")
    kv_live = s.lane_step(s.lane_index("cached")).cache_bytes
    assert terms.bytes() == out["bytes"] == kv_live  # the formula on screen = the CLI = the real KV cache

    def check(step: int) -> None:
        n = s.n_rows(step)
        rows = {name: (live, formula, words) for name, live, formula, words in dock.live.rows}
        assert set(rows) == {lane.name for lane in s.lanes}
        for lane in s.lanes:
            assert rows[lane.name][0] == s.lane_step(lane.index, step).cache_bytes
        assert rows["uncached"][:2] == (0, 0)
        full = 2 * cfg.n_layers * cfg.n_kv_heads * cfg.head_dim * 4
        assert rows["cached"][:3] == (full * n, full * n, "formula = live ✓")
        assert rows["window:6"][:3] == (full * min(n, 6), full * min(n, 6), "formula = live ✓")
        live, formula, words = rows["int8:g4:r2"]
        assert formula == full * n // 4  # the seed formula at 8 bits…
        assert live > formula and "✓" in words and "scales" in words  # …plus the fp32 residual and the scales
        assert "formula = live ✓" in dock.live.summary.text()

    check(s.cursor)
    assert s.lane_step(s.lane_index("int8:g4:r2")).cache_overhead_bytes > 0
    w.controller.scrub_to(3)  # the cursor moves back: the dock reads that step's records
    assert dock.form.terms.tokens == s.n_rows(3)
    check(3)
    # editing a term stops following; choosing the model on screen again follows
    dock.form.layers.setValue(9)
    assert not dock.follow.isChecked()
    w.controller.scrub_to(5)
    assert dock.form.terms.layers == 9 and dock.form.terms.tokens == s.n_rows(3)
    dock.follow.setChecked(True)
    assert dock.form.terms.layers == cfg.n_layers and dock.form.terms.tokens == s.n_rows(5)
