"""The memory formula against hand-computed figures and the seeds' tables."""

from __future__ import annotations

import json

import pytest
from helpers import cli_json

from kvsim.cli.entry import main
from kvsim.costs.memory import MemoryInputError, kv_cache_bytes, weight_bytes
from kvsim.costs.presets import PRESETS, get_preset, preset_from_hf_config


def test_seed_formula_mha_fp16() -> None:
    # memória = 2 × n_layers × n_heads × d_head × seq_len × batch × 2 bytes (Llama-2-7B is MHA)
    assert get_preset("llama-2-7b").kv_bytes(4096) == 2 * 32 * 32 * 128 * 4096 * 1 * 2 == 2_147_483_648


def test_gqa_uses_kv_heads_not_query_heads() -> None:
    p = get_preset("llama-2-70b")
    assert (p.heads, p.kv_heads) == (64, 8)
    assert p.kv_bytes(4096) == 2 * 80 * 8 * 128 * 4096 * 2 == 1_342_177_280
    # the same shape with MHA would be 8x larger
    assert kv_cache_bytes(80, 64, 128, 4096) == 8 * p.kv_bytes(4096)
    assert get_preset("llama-3-70b").kv_bytes(128_000) == 41_943_040_000  # "dezenas de GB"


def test_mqa_single_kv_head() -> None:
    p = get_preset("falcon-7b")
    assert p.kv_heads == 1
    assert p.kv_bytes(2048, batch=4) == 2 * 32 * 1 * 64 * 2048 * 4 * 2 == 67_108_864


def test_sliding_window_caps_memory() -> None:
    p = get_preset("mistral-7b")
    cap = 2 * 32 * 8 * 128 * 4096 * 2  # 4096-token window on every layer
    assert p.kv_bytes(32768) == cap == 536_870_912
    assert p.kv_bytes(1000) == 2 * 32 * 8 * 128 * 1000 * 2
    # Gemma 2: 21 local layers capped at 4096, 21 global layers hold all 8192 tokens
    g = get_preset("gemma-2-9b")
    assert g.kv_bytes(8192) == 2 * 8 * 256 * 2 * (21 * 4096 + 21 * 8192) == 2_113_929_216
    assert kv_cache_bytes(4, 2, 8, 100, window=10) == 2 * 4 * 10 * 2 * 8 * 2


def test_quantized_bits() -> None:
    full = kv_cache_bytes(32, 8, 128, 1000)
    assert kv_cache_bytes(32, 8, 128, 1000, bits=8) * 2 == full
    assert kv_cache_bytes(32, 8, 128, 1000, bits=4) * 4 == full


def test_seed_weight_table_70b() -> None:
    expected_gb = {"fp32": 280, "fp16": 140, "bf16": 140, "int8": 70, "int4": 35, "int2": 17.5}
    for dtype, gb in expected_gb.items():
        assert weight_bytes(70_000_000_000, dtype) == gb * 1e9


def test_parameter_counts_match_published_totals() -> None:
    for preset in PRESETS.values():
        assert preset.n_params == preset.published_params, preset.name


def test_required_presets_exist() -> None:
    for name in (
        "gpt2",
        "gpt2-xl",
        "llama-2-7b",
        "llama-2-70b",
        "llama-3-8b",
        "llama-3.1-8b",
        "llama-3-70b",
        "llama-3.1-70b",
        "mistral-7b",
        "gemma-2-9b",
        "qwen2.5-0.5b",
        "smollm2-135m",
        "falcon-7b",
    ):
        assert name in PRESETS
    assert get_preset("smollm2-135m").kv_heads == 3


def test_bad_values_raise() -> None:
    with pytest.raises(MemoryInputError):
        kv_cache_bytes(2, 2, 8, -1)
    with pytest.raises(MemoryInputError):
        kv_cache_bytes(0, 2, 8, 10)
    with pytest.raises(MemoryInputError):
        get_preset("no-such-model")


def test_config_json_matches_preset(tmp_path) -> None:
    cfg = {
        "model_type": "llama",
        "num_hidden_layers": 80,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "hidden_size": 8192,
        "intermediate_size": 28672,
        "vocab_size": 32000,
        "max_position_embeddings": 4096,
    }
    p = preset_from_hf_config(cfg)
    assert p.kv_bytes(4096) == get_preset("llama-2-70b").kv_bytes(4096)
    assert p.n_params == get_preset("llama-2-70b").published_params


def test_memory_cli_json(capsys, tmp_path) -> None:
    assert main(["memory", "--preset", "llama-3-8b", "--context", "8192", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["bytes"] == 2 * 32 * 8 * 128 * 8192 * 2
    assert out["bytes_per_token"] == 2 * 32 * 8 * 128 * 2
    assert (
        main(
            [
                "memory",
                "--layers",
                "4",
                "--kv-heads",
                "2",
                "--head-dim",
                "16",
                "--context",
                "10",
                "--kv-bits",
                "8",
                "--batch",
                "3",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["bytes"] == 2 * 4 * 2 * 16 * 10 * 3
    path = tmp_path / "config.json"
    path.write_text(
        json.dumps(
            {
                "model_type": "mistral",
                "num_hidden_layers": 32,
                "num_attention_heads": 32,
                "num_key_value_heads": 8,
                "hidden_size": 4096,
                "intermediate_size": 14336,
                "vocab_size": 32000,
                "sliding_window": 4096,
            }
        )
    )
    assert main(["memory", "--config", str(path), "--context", "32768", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["bytes"] == 536_870_912
    assert main(["memory", "--list"]) == 0
    listed = capsys.readouterr().out
    assert "falcon-7b" in listed and "gemma-2-9b" in listed


@pytest.mark.parametrize("window", [-4096, 0, 2.5, "4096", True])
def test_config_sliding_window_must_be_a_positive_integer(window):
    config = {
        "num_hidden_layers": 4,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "hidden_size": 256,
        "vocab_size": 1000,
        "model_type": "mistral",
        "sliding_window": window,
    }
    with pytest.raises(MemoryInputError, match="sliding_window"):
        preset_from_hf_config(config)


@pytest.mark.parametrize(
    "key, value",
    [
        ("num_hidden_layers", 2.5),
        ("num_hidden_layers", "4"),
        ("num_hidden_layers", True),
        ("num_hidden_layers", 10**12),
        ("num_attention_heads", 0),
        ("num_key_value_heads", -2),
        ("hidden_size", None),
    ],
)
def test_config_sizes_are_taken_as_written(key, value):
    config = {
        "num_hidden_layers": 4,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "hidden_size": 256,
        "vocab_size": 1000,
        key: value,
    }
    with pytest.raises(MemoryInputError):
        preset_from_hf_config(config)


def test_huge_layer_counts_are_arithmetic_not_tuples():
    # one window for 10^12 layers: counted, never materialized per layer
    assert kv_cache_bytes(10**12, 1, 1, 10, window=4) == 2 * 10**12 * 4 * 2


def test_read_hf_config_refuses_a_fifo(tmp_path):
    import os

    from kvsim.costs.memory import read_hf_config

    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    with pytest.raises(MemoryInputError, match="not a regular file"):
        read_hf_config(str(fifo))


def test_memory_report_names_the_per_layer_windows_and_the_growth_now(capsys):
    """Gemma 3 270M at 32k: 15 local layers plateau at 512, 3 global ones grow; the next token adds only
    the global layers' rows (2 · 3 · 1 · 256 · 2 B)."""
    assert main(["memory", "--preset", "gemma-3-270m", "--context", "32768", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["bytes"] == 2 * (15 * 512 + 3 * 32768) * 1 * 256 * 2
    assert report["bytes_per_new_token"] == 2 * 3 * 1 * 256 * 2
    assert report["bytes_per_token"] == 2 * 18 * 1 * 256 * 2
    assert main(["memory", "--preset", "gemma-3-270m", "--context", "100"]) == 0
    out = capsys.readouterr().out
    assert "15 layers × min(n, 512) + 3 layers × n" in out
    assert f"{2 * 18 * 256 * 2:,} bytes for the next token now" in out  # below 512 every layer still grows


# ------------------------------------------------------------------ windows, warnings, lanes (issue 10)
def _json(capsys, *args: str) -> dict:
    return cli_json(capsys, "memory", *args, "--json")


def test_a_preset_keeps_its_window_when_its_layers_change(capsys):
    """`--preset mistral-7b --layers 16` used to drop Mistral's 4,096-token window silently."""
    out = _json(capsys, "--preset", "mistral-7b", "--layers", "16", "--context", "8000")
    assert out["bytes"] == 2 * 16 * 8 * 128 * 4096 * 2  # min(8000, 4096) rows in each of 16 layers
    assert out["layer_windows"] == [4096] * 16
    assert any("window" in note and "16 layers" in note for note in out["notes"])
    assert main(["memory", "--preset", "mistral-7b", "--layers", "16", "--context", "8000"]) == 0
    text = capsys.readouterr().out
    assert "16 layers × min(n, 4096)" in text and "window: mistral-7b's own sliding window applied" in text
    # Gemma 2 cut to 5 layers keeps its alternation: local, global, local, global, local
    out = _json(capsys, "--preset", "gemma-2-9b", "--layers", "5", "--context", "6000")
    assert out["bytes"] == 2 * (3 * 4096 + 2 * 6000) * 8 * 256 * 2


def test_windows_are_said_and_layer_windows_can_be_given(capsys):
    out = _json(capsys, "--preset", "llama-3-8b", "--context", "1000", "--window", "100")
    assert out["bytes"] == 2 * 32 * 100 * 8 * 128 * 2
    assert any("--window 100 applied" in note for note in out["notes"])
    assert _json(capsys, "--preset", "llama-3-8b", "--context", "1000")["notes"] == []  # no window, nothing said
    # a pattern laid over the layers equals the preset that has it
    given = _json(capsys, "--preset", "gemma-2-9b", "--layer-windows", "4096, full", "--context", "8000")
    assert given["bytes"] == get_preset("gemma-2-9b").kv_bytes(8000)
    assert (
        _json(capsys, "--preset", "mistral-7b", "--layer-windows", "full", "--context", "8000")["bytes"]
        == 2 * 32 * 8 * 128 * 8000 * 2
    )
    assert _json(capsys, "--preset", "llama-2-7b", "--context", "10", "--kv-bits", "2")["bytes"] == 2 * 32 * 32 * 128 * 10 // 4
    assert main(["memory", "--preset", "tiny", "--context", "5", "--layer-windows", "8,abc"]) == 2
    assert "error: a layer's window" in capsys.readouterr().err


def test_a_context_past_the_models_own_maximum_is_warned(capsys):
    assert main(["memory", "--preset", "llama-3-70b", "--context", "128000"]) == 0
    captured = capsys.readouterr()
    assert "warning: llama-3-70b reads at most 8,192 tokens" in captured.err
    assert "llama-3.1-70b has the same shape and reads 131,072" in captured.err
    assert "41,943,040,000 bytes" in captured.out  # the number is still given
    out = _json(capsys, "--preset", "llama-3-70b", "--context", "128000")
    assert len(out["warnings"]) == 1
    assert _json(capsys, "--preset", "llama-3.1-70b", "--context", "128000")["warnings"] == []
    assert capsys.readouterr().err == ""
    assert _json(capsys, "--preset", "llama-3.1-70b", "--context", "128000")["bytes"] == 41_943_040_000


def test_tiny_is_a_preset_with_the_loaded_models_shape_and_parameters():
    from kvsim.costs.presets import preset_from_model_config
    from kvsim.models.loading import load_model

    lm = load_model("tiny")
    cfg = lm.model.cfg
    tiny = get_preset("tiny")
    assert (tiny.layers, tiny.heads, tiny.kv_heads, tiny.head_dim) == (cfg.n_layers, cfg.n_heads, cfg.n_kv_heads, cfg.head_dim)
    n_params = sum(t.numel() for t in lm.model.parameters())
    assert tiny.n_params == n_params
    assert preset_from_model_config(cfg).n_params == n_params


def test_mha_gqa_mqa_variants():
    from kvsim.costs.presets import kind_of, kv_variants, outgrows_weights_at

    p = get_preset("llama-3.1-70b")
    mha, gqa, mqa = kv_variants(p)
    assert [kind_of(v) for v in (mha, gqa, mqa)] == ["MHA", "GQA", "MQA"]
    assert mha.kv_bytes(1000) == 8 * gqa.kv_bytes(1000) == 64 * mqa.kv_bytes(1000)
    at = outgrows_weights_at(p)
    assert p.kv_bytes(at) >= 2 * p.n_params > p.kv_bytes(at - 1)
    assert outgrows_weights_at(get_preset("mistral-7b")) is None  # its window caps the cache below its weights


def test_quantized_defaults_match_the_cache():
    import inspect

    from kvsim.caches.quantized import QuantizedCache
    from kvsim.costs.memory import QUANT_DEFAULTS

    params = inspect.signature(QuantizedCache.__init__).parameters
    assert {k: params[k].default for k in QUANT_DEFAULTS} == QUANT_DEFAULTS


def test_lane_bills_equal_every_lanes_live_bytes():
    """The formula for each policy (with int8/int4's residual, scales and zero points) equals the bytes
    the real caches report, every step, past several quantized groups and a full window."""
    from kvsim.caches import parse_lanes
    from kvsim.costs.memory import lane_bill
    from kvsim.engine.simulate import Simulator
    from kvsim.models.loading import load_model

    lm = load_model("random:family=llama,layers=2,heads=4,kv_heads=2,dim=40,vocab=256,ctx=128,seed=2")  # head dim 10
    cfg = lm.model.cfg
    prompt = list(range(1, 12))
    lanes = "none,kv,window:7,sink:2+window:5,int8:g4:r3,int4:g6:r0"
    sim = Simulator(lm.model, lm.tokenizer, prompt, parse_lanes(lanes), warmup=False)
    meta = sim.trace.meta["lanes"]
    quantized_seen = False
    for step in range(12):
        record = sim.step()
        for lane, done in zip(meta, record.lanes, strict=True):
            bill = lane_bill(lane, cfg.n_layers, cfg.n_kv_heads, cfg.head_dim, len(prompt) + step, done.kv_positions)
            assert bill.expected_bytes == done.cache_bytes, (step, lane["name"])
            if lane["policy"] in ("kv", "window", "sink+window"):
                assert bill.formula_bytes == bill.expected_bytes and bill.why == ""
            if lane["policy"].startswith("int") and done.cache_overhead_bytes:
                quantized_seen = True
                assert bill.formula_bytes < bill.expected_bytes and "scales" in bill.why
    assert quantized_seen
