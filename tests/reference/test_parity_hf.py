"""kvsim's own transformer matches Hugging Face ``transformers`` (the reference, used in tests only).

For each family kvsim reads from a checkpoint directory — GPT-2, Llama with GQA and with MQA, Qwen2
(QKV biases) and Mistral (a sliding window shorter than the sequence) — a tiny random model is built
with ``transformers``, saved as safetensors + tokenizer.json, loaded back with
``kvsim.loading.load_model`` and compared in fp32:

* prefill: logits at every prompt position (kvsim with a ``NoCache``, ``last_only=False``);
* decode: 32 greedy steps, kvsim's ``KVCache`` against transformers' ``past_key_values``;
  logits within 1e-4 at every step and the same tokens chosen.
"""

from __future__ import annotations

import inspect
import math
import os
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")

from kvsim.caches import KVCache, NoCache  # noqa: E402
from kvsim.models.loading import load_model  # noqa: E402

# KVSIM_TEST_DEVICE=cuda runs the same comparisons on a GPU (benchmarks/gpu_check.sh), fp32 both sides
DEVICE = torch.device(os.environ.get("KVSIM_TEST_DEVICE", "cpu"))
VOCAB = 96
PROMPT_LEN = 8
DECODE_STEPS = 32
ATOL = 1e-4


def write_tokenizer(path: Path, vocab_size: int = VOCAB) -> None:
    """A tiny word-level tokenizer.json (``w0 … wN``) — enough for kvsim to load the directory."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"<unk>": 0, **{f"w{i}": i for i in range(1, vocab_size)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.save(str(path / "tokenizer.json"))


def randomize(model: torch.nn.Module, seed: int) -> None:
    """Weights large enough that logits are spread out (a 0.02 init gives near-ties everywhere):
    matrices ~ N(0, 1/fan_in), embeddings ~ N(0, 1), norm weights ~ 1 ± 0.1, biases ~ N(0, 0.1²)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen)
            if "norm" in name or name.split(".")[-2].startswith("ln_"):
                p.copy_(1.0 + 0.1 * noise if name.endswith("weight") else 0.1 * noise)
            elif name.endswith("bias"):
                p.copy_(0.1 * noise)
            elif "wte" in name or "wpe" in name or "embed" in name:
                p.copy_(noise)
            else:
                fan_in = p.shape[0] if "transformer.h." in name else p.shape[1]  # GPT-2 Conv1D is (in, out)
                p.copy_(noise / math.sqrt(fan_in))


def _common(**kw: object) -> dict[str, object]:
    return {
        "vocab_size": VOCAB,
        "hidden_size": 64,
        "intermediate_size": 160,
        "num_hidden_layers": 2,
        "max_position_embeddings": 128,
        "rms_norm_eps": 1e-6,
        "tie_word_embeddings": False,
        **kw,
    }


def _configs() -> dict[str, object]:
    T = transformers
    return {
        "gpt2": (
            T.GPT2Config(vocab_size=VOCAB, n_embd=64, n_layer=2, n_head=4, n_positions=128, bos_token_id=0, eos_token_id=0),
            T.GPT2LMHeadModel,
        ),
        "llama-gqa": (
            T.LlamaConfig(
                **_common(
                    num_attention_heads=4, num_key_value_heads=2, rope_parameters={"rope_type": "default", "rope_theta": 500.0}
                )
            ),
            T.LlamaForCausalLM,
        ),
        "llama-mqa-tied": (
            T.LlamaConfig(**_common(num_attention_heads=4, num_key_value_heads=1, tie_word_embeddings=True)),
            T.LlamaForCausalLM,
        ),
        "qwen2-bias": (T.Qwen2Config(**_common(num_attention_heads=4, num_key_value_heads=2)), T.Qwen2ForCausalLM),
        "mistral-window8": (
            T.MistralConfig(**_common(num_attention_heads=4, num_key_value_heads=2, sliding_window=8)),
            T.MistralForCausalLM,
        ),
        # Llama's attention_bias puts biases on q, k, v *and* o; mlp_bias on gate, up and down
        "llama-attention-bias": (
            T.LlamaConfig(**_common(num_attention_heads=4, num_key_value_heads=2, attention_bias=True)),
            T.LlamaForCausalLM,
        ),
        "llama-mlp-bias": (
            T.LlamaConfig(**_common(num_attention_heads=4, num_key_value_heads=2, mlp_bias=True)),
            T.LlamaForCausalLM,
        ),
    }


@pytest.fixture(scope="module", params=list(_configs()))
def pair(request, tmp_path_factory):
    """(transformers model, kvsim LoadedModel) with the same weights, via a saved checkpoint dir."""
    cfg, cls = _configs()[request.param]
    cfg._attn_implementation = "eager"
    torch.manual_seed(0)
    hf = cls(cfg).eval()
    randomize(hf, seed=1)
    if getattr(cfg, "tie_word_embeddings", False):
        hf.tie_weights()
    path = tmp_path_factory.mktemp(request.param)
    hf.save_pretrained(path, safe_serialization=True)
    write_tokenizer(path)
    hf = cls.from_pretrained(path, attn_implementation="eager").eval().to(DEVICE)  # on disk = the reference
    ours = load_model(str(path), device=DEVICE.type)
    return request.param, hf, ours


def hf_step(hf, ids: torch.Tensor, past: object | None) -> tuple[torch.Tensor, object]:
    """One cached forward of the reference: transformers ≥ 5.2x names the cache ``cache``, older
    releases ``past_key_values``."""
    key = "cache" if "cache" in inspect.signature(hf.forward).parameters else "past_key_values"
    with torch.no_grad():
        out = hf(ids, use_cache=True, **({key: past} if past is not None else {}))
    return out.logits, out[key]


def _prompt() -> torch.Tensor:
    return torch.randint(1, VOCAB, (1, PROMPT_LEN), generator=torch.Generator().manual_seed(7)).to(DEVICE)


def test_config_read_from_checkpoint(pair):
    name, hf, ours = pair
    cfg, c = ours.model.cfg, hf.config
    assert cfg.n_layers == 2 and cfg.dim == 64 and cfg.vocab_size == VOCAB
    if name != "gpt2":
        assert cfg.n_kv_heads == c.num_key_value_heads
        assert cfg.rope_theta == c.rope_parameters["rope_theta"]
        assert cfg.qkv_bias == (name in ("qwen2-bias", "llama-attention-bias"))
        assert cfg.out_bias == (name == "llama-attention-bias")
        assert cfg.mlp_bias == (name == "llama-mlp-bias")
        assert cfg.tie_embeddings == (name == "llama-mqa-tied")
        assert cfg.sliding_window == (8 if name == "mistral-window8" else None)


def test_every_bias_of_the_reference_is_loaded(pair):
    """Each bias transformers holds is a parameter of kvsim's model with the same values (none dropped)."""
    name, hf, ours = pair
    hf_biases = {k for k in hf.state_dict() if k.endswith(".bias") and ".attn.bias" not in k}
    ours_biases = {k for k in ours.model.state_dict() if k.endswith(".bias") and "norm" not in k}
    hf_linear_biases = {k for k in hf_biases if "ln_" not in k and "norm" not in k}
    if name == "gpt2":  # one fused c_attn bias is three kvsim biases
        assert len(ours_biases) == len(hf_linear_biases) + 2 * 2
    else:
        assert len(ours_biases) == len(hf_linear_biases)
    if name == "llama-attention-bias":
        torch.testing.assert_close(ours.model.layers[1].attn.wo.bias, hf.model.layers[1].self_attn.o_proj.bias)
    if name == "llama-mlp-bias":
        torch.testing.assert_close(ours.model.layers[1].mlp.w_down.bias, hf.model.layers[1].mlp.down_proj.bias)


def test_prefill_logits_match_at_every_position(pair):
    _, hf, ours = pair
    ids = _prompt()
    with torch.no_grad():
        ref = hf(ids, use_cache=False).logits  # (1, T, V)
    model = ours.model
    got = model(ids, torch.arange(ids.shape[1], device=DEVICE), NoCache(model.cfg.n_layers), last_only=False).logits
    assert got.shape == ref.shape
    torch.testing.assert_close(got, ref, atol=ATOL, rtol=0)


def test_cached_decode_matches_past_key_values(pair):
    name, hf, ours = pair
    model = ours.model
    ids = _prompt()
    n = ids.shape[1]
    cache = KVCache(model.cfg.n_layers)
    ref, past = hf_step(hf, ids, None)
    got = model(ids, torch.arange(n, device=DEVICE), cache, last_only=True).logits
    torch.testing.assert_close(got[:, -1], ref[:, -1], atol=ATOL, rtol=0)
    ref_tok, our_tok = int(ref[0, -1].argmax()), int(got[0, -1].argmax())
    ref_tokens, our_tokens = [ref_tok], [our_tok]
    worst = 0.0
    for step in range(DECODE_STEPS):
        ref, past = hf_step(hf, torch.tensor([[ref_tok]], device=DEVICE), past)
        got = model(
            torch.tensor([[our_tok]], device=DEVICE), torch.tensor([n + step], device=DEVICE), cache, last_only=True
        ).logits
        diff = float((got[0, -1] - ref[0, -1]).abs().max())
        worst = max(worst, diff)
        assert diff <= ATOL, f"{name}: decode step {step + 1} logits differ by {diff:.2e}"
        ref_tok, our_tok = int(ref[0, -1].argmax()), int(got[0, -1].argmax())
        ref_tokens.append(ref_tok)
        our_tokens.append(our_tok)
    assert our_tokens == ref_tokens
    assert n + DECODE_STEPS > 8  # the Mistral case really runs past its window
    if name != "llama-mqa-tied":  # tied N(0, 1) embeddings make a model echo its input token
        assert len(set(our_tokens)) > 1, "degenerate run: one token repeated (weights too small?)"


def test_config_from_full_transformers_dicts():
    """``to_dict()`` spells unset attributes as None (attention_bias, rope_theta …): read them as unset."""
    from kvsim.models.hf_config import config_from_hf

    qwen = transformers.Qwen2Config(**_common(num_attention_heads=4, num_key_value_heads=2)).to_dict()
    cfg = config_from_hf(qwen, "q")
    assert cfg.qkv_bias and cfg.sliding_window is None and cfg.rope_theta == qwen["rope_parameters"]["rope_theta"]
    uniform = transformers.Qwen2Config(
        **_common(num_attention_heads=4, num_key_value_heads=2, use_sliding_window=True, sliding_window=8, max_window_layers=0)
    ).to_dict()
    assert config_from_hf(uniform, "q").sliding_window == 8
    llama = transformers.LlamaConfig(**_common(num_attention_heads=4, num_key_value_heads=4)).to_dict()
    assert not config_from_hf(llama, "l").qkv_bias


@pytest.mark.parametrize(
    "change, message",
    [
        ({"use_sliding_window": True, "sliding_window": 8, "max_window_layers": 1}, "different attention per layer"),
        ({"rope_parameters": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1e4}}, "RoPE scaling 'linear'"),
        ({"hidden_act": "gelu"}, "activation 'gelu'"),
    ],
)
def test_unsupported_checkpoint_variants_are_refused(change, message):
    from kvsim.models.hf_config import config_from_hf
    from kvsim.models.loading import ModelLoadError

    hf = transformers.Qwen2Config(**_common(num_attention_heads=4, num_key_value_heads=2)).to_dict()
    hf.update(change)
    if "max_window_layers" in change:  # transformers derives layer_types from these at construction
        hf["layer_types"] = transformers.Qwen2Config(
            **_common(num_attention_heads=4, num_key_value_heads=2, **change)
        ).layer_types
    with pytest.raises(ModelLoadError, match=message):
        config_from_hf(hf, "m")


# ------------------------------------------------------------------ every tensor used, or the file refused
@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory) -> Path:
    cfg, cls = _configs()["llama-gqa"]
    torch.manual_seed(0)
    hf = cls(cfg).eval()
    randomize(hf, seed=1)
    path = tmp_path_factory.mktemp("llama-good")
    hf.save_pretrained(path, safe_serialization=True)
    write_tokenizer(path)
    return path


def _copy_with(src: Path, dst: Path, change) -> Path:
    """A copy of checkpoint ``src`` whose weights dict went through ``change``."""
    import shutil

    from safetensors.torch import load_file, save_file

    shutil.copytree(src, dst)
    weights = load_file(str(src / "model.safetensors"))
    change(weights)
    save_file(weights, str(dst / "model.safetensors"))
    return dst


@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda w: w.update({"model.layers.0.self_attn.o_proj.bias": torch.zeros(64)}),
            "ignore.*'model.layers.0.self_attn.o_proj.bias'",
        ),
        (lambda w: w.update({"model.layers.1.mlp.up_proj.bias": torch.zeros(160)}), "ignore.*mlp.up_proj.bias"),
        (
            lambda w: w.update({"model.layers.2.self_attn.q_proj.weight": torch.zeros(64, 64)}),
            "ignore.*'model.layers.2.self_attn.q_proj.weight'",
        ),
        (lambda w: w.update({"something_else": torch.zeros(3)}), "ignore.*'something_else'"),
        (lambda w: w.pop("model.layers.1.mlp.down_proj.weight"), "lack.*'model.layers.1.mlp.down_proj.weight'"),
        (lambda w: w.pop("lm_head.weight"), "lack.*'lm_head.weight'"),
        (lambda w: w.update({"model.norm.weight": torch.ones(65)}), "'model.norm.weight' has shape \\(65,\\)"),
        (lambda w: w["model.layers.0.mlp.gate_proj.weight"].__setitem__((0, 0), float("nan")), "not numbers"),
        (lambda w: w.update({"model.embed_tokens.weight": w["model.embed_tokens.weight"].to(torch.int32)}), "not floating"),
        (lambda w: w.update({"model.layers.0.self_attn.rotary_emb.inv_freq": torch.ones(8)}), "inv_freq"),
    ],
)
def test_checkpoint_tensors_all_used_or_refused(llama_dir, tmp_path, change, message):
    from kvsim.models.loading import ModelLoadError

    bad = _copy_with(llama_dir, tmp_path / "bad", change)
    with pytest.raises(ModelLoadError, match=message):
        load_model(str(bad))


def test_checkpoint_buffers_that_agree_are_accepted(llama_dir, tmp_path):
    """Old Llama checkpoints carry rotary_emb.inv_freq: accepted when it is what the config implies."""
    d = 64 // 4
    inv = 1.0 / (500.0 ** (torch.arange(0, d, 2).float() / d))
    ok = _copy_with(llama_dir, tmp_path / "ok", lambda w: w.update({"model.layers.0.self_attn.rotary_emb.inv_freq": inv}))
    assert load_model(str(ok)).model.cfg.n_layers == 2


def test_tied_head_that_differs_from_embeddings_is_refused(llama_dir, tmp_path):
    import json

    from kvsim.models.loading import ModelLoadError

    bad = _copy_with(llama_dir, tmp_path / "tied", lambda w: None)
    cfg = json.loads((bad / "config.json").read_text())
    cfg["tie_word_embeddings"] = True
    (bad / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ModelLoadError, match="ties the output head.*differs"):
        load_model(str(bad))
