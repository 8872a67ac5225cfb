"""The roofline: points from real records (intensity = counts ÷ bytes), the lesson's shape (prefill right
of decode, the uncached lane drifting right), the GPU table, the preset arithmetic against the engine's
own counter and closed forms, the measured peaks' cache, and the dock with a live session."""

from __future__ import annotations

import json
import math
import os

import pytest
from helpers import ROOT

from kvsim.caches import parse_lanes
from kvsim.costs.hardware import GPUS, cache_file, gpu, measure_peaks, peaks_key
from kvsim.costs.presets import PRESETS
from kvsim.costs.roofline import ATTENTION, LINEAR, points_from_records, preset_bound, preset_counts, ridge, roof
from kvsim.engine.counting import MATMUL_COMPONENTS, step_cost
from kvsim.engine.simulate import Simulator
from kvsim.models.config import ModelConfig
from kvsim.models.loading import load_model

PROMPT = [5, 17, 42, 7, 99, 3, 250, 11]


@pytest.fixture(scope="module")
def records():
    lm = load_model("random:family=llama,layers=2,heads=4,kv_heads=2,dim=64,vocab=300,ctx=512,seed=2")
    sim = Simulator(lm.model, lm.tokenizer, PROMPT, parse_lanes("uncached,cached"))
    return list(sim.run(12, stop_at_eos=False))


def test_intensities_are_counts_over_bytes_from_the_records(records):
    points = points_from_records(records)
    assert len(points) == len(records) * 2 * 3  # every step, both lanes, three components
    for p in points:
        lane = records[p.step].lanes[p.lane]
        f, b = lane.flops_by_component, lane.bytes_by_component
        want = {
            "total": (sum(f.values()), sum(b.values())),
            "linear": (sum(f[c] for c in LINEAR), b["weights"]),
            "attention": (f["attn_scores"] + f["attn_values"], b["kv_read"] + b["kv_write"]),
        }[p.component]
        assert (p.flops, p.bytes) == want
        assert p.intensity == pytest.approx(want[0] / want[1], rel=1e-12)
        assert p.achieved == pytest.approx(want[0] / (lane.wall_ms / 1e3), rel=1e-12)
        assert p.lane_name == lane.name and p.phase == records[p.step].phase


def test_counts_hold_against_an_independent_closed_form(records):
    """The records' counts, re-derived from the model shape without kvsim.engine.counting: the cached lane's
    decode reads every weight once (fp32) and 2·L·H_kv·D·S·4 bytes of K/V."""
    L, H, Hkv, D, dim, vocab = 2, 4, 2, 16, 64, 300
    hidden = 32 * ((int(2 * 4 * dim / 3) + 31) // 32)
    weights = L * (dim * (H + 2 * Hkv) * D + H * D * dim + 3 * dim * hidden) + dim * vocab
    r = records[5]
    lane = r.lane("cached")
    S = r.n_tokens
    kv_row = 4 * L * 2 * Hkv * D  # bytes of one position's K and V in every layer (fp32)
    assert lane.bytes_by_component == {"weights": 4 * weights, "kv_read": kv_row * S, "kv_write": kv_row}
    assert lane.flops_by_component["attn_scores"] == L * 2 * H * S * D
    # the weight matmuls of one decoded token: 2 FLOPs per weight read (multiply-add)
    linear = sum(lane.flops_by_component[c] for c in LINEAR)
    assert linear == 2 * weights


def test_prefill_right_of_decode_and_the_uncached_decode_drifts_right(records):
    total = [p for p in points_from_records(records) if p.component == "total"]
    cached = {p.step: p for p in total if p.lane_name == "cached"}
    uncached = [p for p in sorted(total, key=lambda p: p.step) if p.lane_name == "uncached"]
    assert cached[0].phase == "prefill"
    assert all(cached[0].intensity > cached[s].intensity for s in range(1, len(records)))
    # a cached decode reads every weight for one row: about 2 FLOPs per 4-byte weight
    assert 0.3 < cached[5].intensity < 1.0
    decode = [p.intensity for p in uncached if p.phase == "decode"]
    assert all(b > a for a, b in zip(decode, decode[1:], strict=False))  # recomputing a longer prefix each step
    assert decode[-1] > 2 * cached[len(records) - 1].intensity


def test_attention_intensity_is_the_group_size_for_a_cached_decode(records):
    """q·Kᵀ and ·V of one query over S cached rows: 4·H·S·D FLOPs over 2·H_kv·S·D·4 bytes (+ the new row)."""
    att = [p for p in points_from_records(records, ["attention"]) if p.lane_name == "cached" and p.phase == "decode"]
    for p in att:
        S = p.context
        assert p.intensity == pytest.approx(4 * 4 * S * 16 / (2 * 2 * 16 * 4 * (S + 1)), rel=1e-12)


def test_components_split_every_matmul_once():
    assert set(LINEAR) | set(ATTENTION) == set(MATMUL_COMPONENTS) and not set(LINEAR) & set(ATTENTION)


def test_points_refuse_unknown_components(records):
    with pytest.raises(ValueError, match="unknown component"):
        points_from_records(records, ["kernels"])
    assert {p.component for p in points_from_records(records, ["linear"])} == {"linear"}


def test_roof_and_ridge():
    h100 = GPUS["H100 SXM"]
    r = ridge(h100.bf16_flops, h100.bandwidth)
    assert r == pytest.approx(295.3, abs=0.1)
    assert roof(r / 10, h100.bf16_flops, h100.bandwidth) == pytest.approx(h100.bf16_flops / 10)
    assert roof(r * 10, h100.bf16_flops, h100.bandwidth) == h100.bf16_flops


def test_gpu_table_figures_and_sources():
    want = {  # dense BF16 TFLOP/s, FP32 TFLOP/s, TB/s, GB — the vendors' datasheets
        "H100 SXM": (989.4, 66.9, 3.35, 80),
        "H200 SXM": (989.4, 66.9, 4.8, 141),
        "A100 SXM 80GB": (312, 19.5, 2.039, 80),
        "RTX 4090": (165.2, 82.6, 1.008, 24),
    }
    assert set(GPUS) == set(want)
    for name, (bf16, fp32, bw, mem) in want.items():
        c = GPUS[name]
        got = (c.bf16_flops / 1e12, c.fp32_flops / 1e12, c.bandwidth / 1e12, c.memory / 1e9)
        assert got == pytest.approx((bf16, fp32, bw, mem))
        assert c.source.startswith("https://") and "nvidia" in c.source and c.note
        assert c.peak_flops("fp32") == c.fp32_flops and c.peak_flops("fp16") == c.bf16_flops
    assert gpu("h100") is GPUS["H100 SXM"] and gpu("rtx 4090") is GPUS["RTX 4090"] and gpu("A100") is GPUS["A100 SXM 80GB"]
    with pytest.raises(ValueError, match="known: H100 SXM"):
        gpu("B200")


@pytest.mark.parametrize("name", ["llama-3.1-70b", "llama-3.1-8b", "qwen2.5-0.5b", "gpt2-xl"])
def test_preset_counts_equal_the_engines_formula(name):
    """For presets the model can express, preset_counts (non-causal, batch 1) equals counting.step_cost."""
    p = PRESETS[name]
    cfg = ModelConfig(
        family="gpt2" if p.arch == "gpt2" else "llama",
        vocab_size=p.vocab,
        n_layers=p.layers,
        n_heads=p.heads,
        n_kv_heads=p.kv_heads,
        dim=p.hidden,
        head_dim=p.head_dim,
        hidden_dim=p.intermediate,
        max_seq_len=p.context,
    )
    for new, ctx in ((1, 4096), (512, 512), (128, 1000)):
        flops, nbytes = preset_counts(p, new, ctx, weight_bits=16, kv_bits=16)
        cost = step_cost(cfg, new, ctx, dtype_bytes=2)
        assert flops == cost.flops and nbytes == cost.bytes


def test_a_70b_decode_at_128k_on_an_h100():
    """The lecture's figure, by hand: the weights (2 bytes each, every layer's matrices + the LM head) and
    the cache (2·L·H_kv·D·n·2 bytes) are read once; bytes ÷ 3.35 TB/s bounds the step."""
    p, n = PRESETS["llama-3.1-70b"], 131_072
    b = preset_bound(p, GPUS["H100 SXM"], "decode", n)
    weights = 80 * (8192 * (64 + 16) * 128 + 64 * 128 * 8192 + 3 * 8192 * 28672) + 8192 * 128256
    assert b.weight_bytes == 2 * weights
    assert b.kv_bytes == 2 * 80 * 8 * 128 * 2 * (n + 1)
    assert abs(b.weight_bytes / 2 - p.n_params) / p.n_params < 0.02  # the input embedding is not read, only one row
    assert b.limit == "memory-bound" and b.intensity < 5
    assert b.time_s == pytest.approx((b.weight_bytes + b.kv_bytes) / 3.35e12)
    assert 0.050 < b.time_s < 0.060
    assert not b.fits  # 140 GB of weights in an 80 GB card
    # batching: the weights are read once for all sequences, so intensity grows
    b64 = preset_bound(p, GPUS["H100 SXM"], "decode", 4096, batch=64)
    assert b64.intensity > 10 * preset_bound(p, GPUS["H100 SXM"], "decode", 4096).intensity
    pre = preset_bound(p, GPUS["H100 SXM"], "prefill", 8192)
    assert pre.limit == "compute-bound" and pre.intensity > GPUS["H100 SXM"].ridge()


def test_causal_and_windowed_attention_counts():
    p = PRESETS["llama-3.1-8b"]
    T, S = 100, 300
    full, _ = preset_counts(p, T, S)
    causal, _ = preset_counts(p, T, S, causal=True)
    seen = sum(S - T + i + 1 for i in range(T))  # keys the i-th new query sees
    assert causal["attn_scores"] == p.layers * 2 * p.heads * seen * p.head_dim
    assert full["attn_scores"] == p.layers * 2 * p.heads * T * S * p.head_dim
    g = PRESETS["gemma-3-270m"]  # 5 local layers over 512 keys, then one global
    _, nb = preset_counts(g, 1, 4096, kv_bits=16)
    rows = sum(4096 if w is None else min(4096, w) for w in g.layer_windows)
    assert nb["kv_read"] == 2 * g.kv_heads * g.head_dim * rows * 2
    assert nb["kv_read"] + nb["kv_write"] - 2 * g.layers * g.kv_heads * g.head_dim * 2 == g.kv_bytes(4096)


def test_measured_peaks_cached_in_the_given_dir(tmp_path):
    first = measure_peaks(cache_dir=tmp_path, budget_s=0.2)
    assert not first.cached and first.flops > 1e6 and first.bandwidth > 1e6
    assert first.ridge == pytest.approx(first.flops / first.bandwidth)
    path = tmp_path / "peaks.json"
    stored = json.loads(path.read_text())
    assert list(stored) == [peaks_key("cpu", "float32")]
    key = list(stored)[0]
    assert "torch " in key and "threads " in key
    again = measure_peaks(cache_dir=tmp_path, budget_s=0.2)
    assert again.cached and (again.flops, again.bandwidth) == (first.flops, first.bandwidth)
    fresh = measure_peaks(cache_dir=tmp_path, refresh=True, budget_s=0.2)
    assert not fresh.cached
    # measured with the runs' thread count, the bandwidth a read of a weight-sized buffer
    import torch

    assert first.threads == torch.get_num_threads() and first.read_bytes >= 256 << 20
    assert first.method == stored[key]["method"] and "read" in first.method
    # an entry measured the old way (a copy, no method named) is measured again, never trusted
    old = {k: v for k, v in stored[key].items() if k != "method"}
    path.write_text(json.dumps({key: old}))
    assert not measure_peaks(cache_dir=tmp_path, budget_s=0.2).cached
    # a damaged cache is measured over, never trusted
    path.write_text(json.dumps({key: {"flops": "nan", "bandwidth": -1}}))
    assert not measure_peaks(cache_dir=tmp_path, budget_s=0.2).cached
    path.write_text("{not json")
    assert not measure_peaks(cache_dir=tmp_path, budget_s=0.2).cached


def test_the_roof_and_the_benchmarks_read_bandwidth_with_one_function(tmp_path, monkeypatch, capsys):
    """``measure_peaks``'s bandwidth is ``read_bandwidth``'s figure (the function the benchmarks' floor
    uses), and ``kvsim --threads N roofline`` measures with N threads and says so."""
    import torch

    import kvsim.costs.hardware as hardware
    from kvsim.cli.entry import main

    calls = []
    monkeypatch.setattr(hardware, "read_bandwidth", lambda n, device="cpu", **k: calls.append((n, device)) or 123e9)
    peaks = measure_peaks(cache_dir=tmp_path, refresh=True, budget_s=0.1)
    assert peaks.bandwidth == 123e9 and calls == [(hardware.READ_BYTES["cpu"], "cpu")]
    threads = torch.get_num_threads()
    try:
        assert main(["--threads", "1", "roofline", "--refresh", "--json"]) == 0
        machine = json.loads(capsys.readouterr().out)["machine"]
        assert machine["threads"] == 1 == torch.get_num_threads() and machine["bandwidth"] == 123e9
        assert machine["read_bytes"] == hardware.READ_BYTES["cpu"] and "read" in machine["bandwidth_method"]
        assert main(["--threads", "1", "roofline"]) == 0
        assert "measured with 1 thread, as runs use" in capsys.readouterr().out
    finally:
        torch.set_num_threads(threads)
    # every benchmark that speaks of bandwidth takes it from that same function, and none times a copy
    import ast

    for path in sorted((ROOT / "benchmarks").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "bandwidth" not in text:
            continue
        imports = [
            (node.module, alias.name)
            for node in ast.walk(ast.parse(text))
            if isinstance(node, ast.ImportFrom)
            for alias in node.names
        ]
        assert ("kvsim.costs.hardware", "read_bandwidth") in imports, path.name
        assert ".copy_(" not in text, path.name


def test_default_cache_is_the_user_cache_dir_isolated_by_the_tests(isolated_user_dirs):
    assert cache_file() == isolated_user_dirs / "cache" / "kvsim" / "peaks.json"
    assert str(cache_file()).startswith(os.environ["XDG_CACHE_HOME"])


# ---------------------------------------------------------------------------- the dock
def test_the_dock_shows_every_step_under_the_measured_roof(qtbot, qapp, monkeypatch, tmp_path):
    from helpers import ready_window

    import kvsim.costs.hardware as hardware

    real = hardware.measure_peaks
    monkeypatch.setattr(hardware, "measure_peaks", lambda *a, **k: real(*a, **{**k, "budget_s": 0.2}))
    w = ready_window(qtbot, qapp, "tiny", "Once upon a time")
    dock = w.extra_docks["roofline"]
    dock.setVisible(True)
    view = dock.view
    assert view is not None
    assert w.controller.run_steps(4, timeout_s=60)
    qtbot.waitUntil(lambda: view.peaks is not None, timeout=20_000)
    assert math.isfinite(view.peaks.flops) and view.plot.roof.xData is not None and len(view.plot.roof.xData) > 0
    assert len(view.points) == 4 * 2 * 3
    shown = view.shown()
    assert {p.component for p in shown} == {"total"} and len(shown) == 8
    drawn = sum(len(item.data) for item in view.groups.values())
    assert drawn == 8
    assert {key[1] for key in view.groups} == {"prefill", "decode"}
    # the cursor's step is ringed (one point per lane), and described in words
    assert len(view.cursor_dots.data) == 2
    assert "step 3 (decode)" in view.hover.text() and "FLOP/byte" in view.hover.text()
    w.controller.scrub_to(0)
    qtbot.waitUntil(lambda: "step 0 (prefill)" in view.hover.text(), timeout=5_000)
    view.show_box.setCurrentText("all three")
    assert sum(len(item.data) for item in view.groups.values()) == 24
    # hovering names the step, lane, component, intensity and FLOP/s
    item = next(iter(view.groups.values()))
    point = item.points()[0]
    view._hovered(item, [point], None)
    p = point.data()
    assert f"step {p.step}" in view.hover.text() and f"{p.intensity:.3g} FLOP/byte" in view.hover.text()
    # the GPU part: the 70B decode at 128k on an H100 (the defaults), and another chip
    panel = view.preset
    assert "54.3 ms" in panel.sentence.text() and "memory-bound" in panel.sentence.text()
    panel.gpu.setCurrentText("H200 SXM")
    assert "37.9 ms" in panel.sentence.text()
    panel.prompt.setValue(10**6)  # P is capped at n
    assert panel.prompt.value() == panel.context.value()


# ---------------------------------------------------------------------------- the command
def _cli(args: list[str], capsys) -> tuple[int, str, str]:
    from kvsim.cli.args import Parser, UsageError
    from kvsim.cli.roofline import add_parser, run

    parser = Parser(prog="kvsim")
    add_parser(parser.add_subparsers(dest="command", parser_class=Parser))
    try:
        rc = run(parser.parse_args(["roofline", *args]))
    except UsageError as exc:
        return 2, "", str(exc)
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_cli_preset_on_gpus_json_equals_the_functions(capsys):
    rc, out, _ = _cli(["--preset", "llama-3.1-70b", "--context", "131072", "--gpu", "h100", "--gpu", "A100", "--json"], capsys)
    assert rc == 0
    data = json.loads(out)
    assert "machine" not in data  # figures only: nothing measured
    rows = data["preset"]["bounds"]
    assert [(r["gpu"], r["step"]) for r in rows] == [
        ("H100 SXM", "decode"),
        ("H100 SXM", "prefill"),
        ("A100 SXM 80GB", "decode"),
        ("A100 SXM 80GB", "prefill"),
    ]
    want = preset_bound(PRESETS["llama-3.1-70b"], GPUS["A100 SXM 80GB"], "decode", 131072)
    assert rows[2]["time_s"] == pytest.approx(want.time_s) and rows[2]["bytes"] == want.bytes
    rc, text, _ = _cli(["--preset", "llama-3.1-70b", "--context", "131072", "--gpu", "h100"], capsys)
    assert rc == 0 and "54.3 ms" in text and "memory-bound" in text and "does not fit" in text


def test_cli_measures_this_machine_into_the_user_cache(capsys, isolated_user_dirs, monkeypatch):
    import kvsim.cli.roofline as cli

    real = cli.measure_peaks
    monkeypatch.setattr(cli, "measure_peaks", lambda *a, **k: real(*a, **{**k, "budget_s": 0.2}))
    rc, out, _ = _cli(["--json"], capsys)
    assert rc == 0
    m = json.loads(out)["machine"]
    assert m["flops"] > 0 and m["bandwidth"] > 0 and m["ridge"] == pytest.approx(m["flops"] / m["bandwidth"])
    assert (isolated_user_dirs / "cache" / "kvsim" / "peaks.json").is_file()
    rc, out, _ = _cli(["--json"], capsys)
    assert json.loads(out)["machine"]["cached"] is True


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--preset", "nope"], "unknown preset 'nope'"),
        (["--preset", "gpt2", "--gpu", "B200"], "unknown GPU 'B200'"),
        (["--preset", "gpt2", "--context", "10", "--prompt-len", "11"], "exceeds the context"),
        (["--preset", "gpt2", "--context", "0"], "must be ≥ 1"),
        (["--device", "tpu", "--refresh"], "--device must be cpu or cuda"),
    ],
)
def test_cli_bad_input_is_one_line(args, message, capsys):
    rc, _, err = _cli(args, capsys)
    assert rc == 2 and message in err and "\n" not in err
