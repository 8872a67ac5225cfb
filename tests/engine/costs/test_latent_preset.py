"""DeepSeek-V3 among the memory presets: its published shape (config.json of deepseek-ai/DeepSeek-V3: 61 layers,
kv_lora_rank 512, qk_rope_head_dim 64), its cache by the latent's closed form L × (d_c + d_R) × n × bytes,
671B parameters counted tensor by tensor, `kvsim memory --preset deepseek-v3` printing the latent formula, and
the memory dock showing it."""

from __future__ import annotations

import pytest
from helpers import kvsim_in_process
from test_memory_dock import bare_dock, choose, cli_json  # noqa: F401 - the fixture, used by name

from kvsim.cli.entry import main
from kvsim.costs.presets import LATENT_PRESETS, PRESETS, get_preset, kind_of, kv_variants

# deepseek-ai/DeepSeek-V3 config.json, as published
CONFIG = {
    "num_hidden_layers": 61, "hidden_size": 7168, "num_attention_heads": 128, "kv_lora_rank": 512,
    "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128, "q_lora_rank": 1536, "vocab_size": 129280,
    "intermediate_size": 18432, "moe_intermediate_size": 2048, "n_routed_experts": 256, "n_shared_experts": 1,
    "first_k_dense_replace": 3, "max_position_embeddings": 163840, "tie_word_embeddings": False,
}  # fmt: skip


def _tensors(c: dict) -> dict[str, tuple[int, ...]]:
    """The main model's weight tensors, named as in the checkpoint (one layer of each kind, counted per layer)."""
    d, h = c["hidden_size"], c["num_attention_heads"]
    nope, rope, v, r, ql = c["qk_nope_head_dim"], c["qk_rope_head_dim"], c["v_head_dim"], c["kv_lora_rank"], c["q_lora_rank"]
    attn = {
        "q_a_proj": (ql, d), "q_a_layernorm": (ql,), "q_b_proj": (h * (nope + rope), ql),
        "kv_a_proj_with_mqa": (r + rope, d), "kv_a_layernorm": (r,), "kv_b_proj": (h * (nope + v), r),
        "o_proj": (d, h * v), "input_layernorm": (d,), "post_attention_layernorm": (d,),
    }  # fmt: skip
    e, m = c["n_routed_experts"], c["moe_intermediate_size"]
    out = {f"attn.{k}": s for k, s in attn.items()}
    out["dense.mlp"] = (3, c["intermediate_size"], d)  # gate, up, down
    out["moe.experts"] = (e + c["n_shared_experts"], 3, m, d)
    out["moe.gate.weight"] = (e, d)
    out["moe.gate.e_score_correction_bias"] = (e,)
    return out


def _count(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def test_parameters_are_the_published_671b_tensor_by_tensor() -> None:
    c, t = CONFIG, _tensors(CONFIG)
    L, dense = c["num_hidden_layers"], c["first_k_dense_replace"]
    per_layer = sum(_count(s) for k, s in t.items() if k.startswith("attn."))
    moe = sum(_count(s) for k, s in t.items() if k.startswith("moe."))
    total = L * per_layer + dense * _count(t["dense.mlp"]) + (L - dense) * moe
    total += 2 * c["vocab_size"] * c["hidden_size"] + c["hidden_size"]  # embed_tokens, lm_head, the final norm
    p = get_preset("deepseek-v3")
    assert p.n_params == total == 671_026_419_200
    assert round(p.n_params / 1e9) == 671  # the technical report's 671B (the 14B MTP module is apart)
    assert (p.layers, p.heads, p.kv_lora_rank, p.qk_rope_head_dim, p.context) == (61, 128, 512, 64, 163840)
    assert "deepseek-v3" in LATENT_PRESETS and "deepseek-v3" not in PRESETS  # the roofline's list is K/V heads only


@pytest.mark.parametrize("tokens, batch, bits", [(0, 1, 16), (1, 1, 16), (4096, 1, 16), (163840, 4, 8), (1000, 2, 4)])
def test_the_cache_is_the_latent_closed_form(tokens: int, batch: int, bits: int) -> None:
    p = get_preset("deepseek-v3")
    want = 61 * (512 + 64) * tokens * batch * bits // 8
    assert p.kv_bytes(tokens, batch, bits) == want
    mha, own = kv_variants(p)
    assert kind_of(own) == "MLA" and kind_of(mha) == "MHA"
    assert mha.kv_bytes(tokens, batch, bits) == 2 * 61 * 128 * 128 * tokens * batch * bits // 8  # DeepSeek-V2's Table 1


def test_kvsim_memory_prints_the_latent_formula(capsys) -> None:
    assert main(["memory", "--preset", "deepseek-v3", "--context", "4096"]) == 0
    out = capsys.readouterr().out
    assert "61 layers × (512 latent d_c + 64 RoPE key d_R) × n × batch 1 × 2 B" in out
    assert f"= {61 * 576 * 4096 * 2:,} bytes" in out and "70,272 bytes per token" in out
    report = cli_json(capsys, "--preset", "deepseek-v3", "--context", "4096", "--batch", "3", "--kv-bits", "8")
    assert report["bytes"] == 61 * 576 * 4096 * 3 and (report["latent"], report["rope_dim"]) == (512, 64)
    assert report["params"] == 671_026_419_200
    listed = cli_json(capsys, "--list")["presets"]
    assert [r["latent"] for r in listed if r["name"] == "deepseek-v3"] == [[512, 64]]
    ratio = 2 * 128 * 128 / 576  # MHA's K and V of 128 heads × 128 over one latent of 512 + 64, per token
    for context in (0, 4096):  # nothing held yet is the same ratio, not "0.0×"
        assert main(["memory", "--preset", "deepseek-v3", "--context", str(context)]) == 0
        assert f": {ratio:.1f}× the latent's" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args, words",
    [
        (["memory", "--preset", "deepseek-v3", "--context", "10", "--kv-heads", "8"], "caches a latent, not K/V heads"),
        (["roofline", "--preset", "deepseek-v3"], "memory preset only"),
    ],
)
def test_what_does_not_apply_is_refused_in_one_line(capsys, args: list[str], words: str) -> None:
    got = kvsim_in_process(capsys, *args)
    assert got.returncode == 2 and got.stderr.startswith("error:") and words in got.stderr
    assert got.stderr.strip().count("\n") == 0


def test_the_memory_dock_shows_the_latent_formula(bare_dock, capsys) -> None:  # noqa: F811 - the fixture
    dock = bare_dock
    choose(dock, "deepseek-v3")
    terms = dock.form.terms
    assert terms.latent == (512, 64) and terms.tokens == 163840
    out = cli_json(capsys, "--preset", "deepseek-v3", "--context", str(terms.tokens))
    assert terms.bytes() == out["bytes"] == 61 * 576 * 163840 * 2
    assert terms.bytes_per_token == out["bytes_per_token"] == 70_272
    text = dock.form.formula.text()
    assert "d_c 512 + d_R 64" in text and f"{out['bytes']:,} B" in text and "H_kv" not in text
    assert "MLA" in dock.form.kind.text()
    dock.form.tokens.setValue(1000)  # an edit keeps the latent
    assert dock.form.terms.bytes() == 61 * 576 * 1000 * 2
    choose(dock, "llama-3-8b")  # another preset: K/V heads again
    assert dock.form.terms.latent is None and "H_kv" in dock.form.formula.text()
