"""Hugging Face checkpoint directories → kvsim's Transformer.

Reads ``config.json``, every ``*.safetensors`` file (never pickle) and ``tokenizer.json``, maps the
tensor names of the GPT-2 and Llama families (Llama, Mistral, Qwen2, SmolLM) onto kvsim's modules,
and refuses anything else with a message that names what is supported.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from .base import LoadedModel, ModelLoadError
from .config import ConfigError, ModelConfig
from .tokenizer import TextTokenizer
from .transformer import Transformer

LLAMA_TYPES = ("llama", "mistral", "qwen2", "smollm", "smollm2")
SUPPORTED = "gpt2, llama, mistral, qwen2 (SmolLM checkpoints are llama)"


def _sliding_window(hf: dict, model_type: str, name: str) -> int | None:
    """One window for every layer, or none. Qwen2 windows only when ``use_sliding_window``; a
    per-layer mix (``layer_types`` with both kinds, e.g. Qwen2's ``max_window_layers``) is refused."""
    window = hf.get("sliding_window")
    if model_type == "qwen2" and not hf.get("use_sliding_window"):
        return None
    kinds = set(hf.get("layer_types") or [])
    if len(kinds) > 1:
        raise ModelLoadError(f"{name}: a different attention per layer ({', '.join(sorted(kinds))}) is not supported "
                             "yet (kvsim applies one sliding window to every layer)")
    if kinds == {"full_attention"}:
        return None
    return int(window) if window else None


def config_from_hf(hf: dict, name: str) -> ModelConfig:
    """A kvsim ``ModelConfig`` from a Hugging Face ``config.json`` (transformers 4.x or 5.x names)."""
    if not isinstance(hf, dict):
        raise ModelLoadError(f"{name}: config.json is not a JSON object")
    model_type = str(hf.get("model_type", "")).lower()
    try:
        if model_type == "gpt2":
            act = hf.get("activation_function") or "gelu_new"
            if act not in ("gelu_new", "gelu_pytorch_tanh"):
                raise ModelLoadError(f"{name}: GPT-2 activation {act!r} is not supported (kvsim uses tanh GELU)")
            if hf.get("scale_attn_by_inverse_layer_idx") or hf.get("scale_attn_weights") is False:
                raise ModelLoadError(f"{name}: GPT-2 attention scaling variants are not supported")
            return ModelConfig(
                family="gpt2", vocab_size=hf["vocab_size"], n_layers=hf["n_layer"], n_heads=hf["n_head"],
                n_kv_heads=hf["n_head"], dim=hf["n_embd"], hidden_dim=hf.get("n_inner") or 4 * hf["n_embd"],
                max_seq_len=hf.get("n_positions") or hf.get("n_ctx") or 1024,
                norm_eps=hf.get("layer_norm_epsilon") or 1e-5, tie_embeddings=True, qkv_bias=True, name=name)
        if model_type in LLAMA_TYPES:
            # transformers 5 writes rope_parameters {"rope_type", "rope_theta"}; 4.x rope_theta + rope_scaling
            rope = hf.get("rope_parameters") or hf.get("rope_scaling") or {}
            rope_type = rope.get("rope_type", rope.get("type", "default")) if isinstance(rope, dict) else "default"
            if rope_type not in (None, "default"):
                raise ModelLoadError(f"{name}: RoPE scaling {rope_type!r} is not supported yet")
            theta = (rope.get("rope_theta") if isinstance(rope, dict) else None) or hf.get("rope_theta") or 10000.0
            act = hf.get("hidden_act") or "silu"
            if act != "silu":
                raise ModelLoadError(f"{name}: MLP activation {act!r} is not supported (Llama family: silu)")
            bias = hf.get("attention_bias")
            window = _sliding_window(hf, model_type, name)
            heads = hf["num_attention_heads"]
            return ModelConfig(
                family="llama", vocab_size=hf["vocab_size"], n_layers=hf["num_hidden_layers"], n_heads=heads,
                n_kv_heads=hf.get("num_key_value_heads") or heads, dim=hf["hidden_size"],
                head_dim=hf.get("head_dim") or hf["hidden_size"] // heads, hidden_dim=hf["intermediate_size"],
                max_seq_len=hf.get("max_position_embeddings") or 2048, norm_eps=hf.get("rms_norm_eps") or 1e-6,
                rope_theta=float(theta), tie_embeddings=bool(hf.get("tie_word_embeddings", False)),
                qkv_bias=bool(bias) if bias is not None else model_type == "qwen2",
                sliding_window=window, name=name)
    except KeyError as exc:
        raise ModelLoadError(f"{name}: config.json lacks {exc.args[0]!r}") from exc
    except ConfigError as exc:
        raise ModelLoadError(f"{name}: {exc}") from exc
    except (TypeError, ValueError, ZeroDivisionError) as exc:
        raise ModelLoadError(f"{name}: config.json has a value of the wrong kind ({exc})") from exc
    raise ModelLoadError(f"{name}: model_type {model_type or '(none)'!r} is not supported (supported: {SUPPORTED})")


def _gpt2_state(w: dict[str, torch.Tensor], cfg: ModelConfig) -> dict[str, torch.Tensor]:
    w = {k.removeprefix("transformer."): v for k, v in w.items()}
    d = cfg.dim
    out = {"tok_embeddings.weight": w["wte.weight"], "pos_embeddings.weight": w["wpe.weight"],
           "norm.weight": w["ln_f.weight"], "norm.bias": w["ln_f.bias"]}
    for i in range(cfg.n_layers):
        p, o = f"h.{i}.", f"layers.{i}."
        # GPT-2 stores Conv1D weights as (in, out): transpose to Linear's (out, in)
        qkv_w, qkv_b = w[p + "attn.c_attn.weight"].t(), w[p + "attn.c_attn.bias"]
        for j, name in enumerate(("wq", "wk", "wv")):
            out[o + f"attn.{name}.weight"] = qkv_w[j * d:(j + 1) * d]
            out[o + f"attn.{name}.bias"] = qkv_b[j * d:(j + 1) * d]
        out[o + "attn.wo.weight"] = w[p + "attn.c_proj.weight"].t()
        out[o + "attn.wo.bias"] = w[p + "attn.c_proj.bias"]
        out[o + "mlp.fc.weight"] = w[p + "mlp.c_fc.weight"].t()
        out[o + "mlp.fc.bias"] = w[p + "mlp.c_fc.bias"]
        out[o + "mlp.proj.weight"] = w[p + "mlp.c_proj.weight"].t()
        out[o + "mlp.proj.bias"] = w[p + "mlp.c_proj.bias"]
        for src, dst in (("ln_1", "attn_norm"), ("ln_2", "mlp_norm")):
            out[o + f"{dst}.weight"] = w[p + f"{src}.weight"]
            out[o + f"{dst}.bias"] = w[p + f"{src}.bias"]
    return out


def _llama_state(w: dict[str, torch.Tensor], cfg: ModelConfig) -> dict[str, torch.Tensor]:
    out = {"tok_embeddings.weight": w["model.embed_tokens.weight"], "norm.weight": w["model.norm.weight"]}
    if not cfg.tie_embeddings:
        out["lm_head.weight"] = w["lm_head.weight"]
    names = {"self_attn.q_proj": "attn.wq", "self_attn.k_proj": "attn.wk", "self_attn.v_proj": "attn.wv",
             "self_attn.o_proj": "attn.wo", "mlp.gate_proj": "mlp.w_gate", "mlp.up_proj": "mlp.w_up",
             "mlp.down_proj": "mlp.w_down", "input_layernorm": "attn_norm", "post_attention_layernorm": "mlp_norm"}
    for i in range(cfg.n_layers):
        for src, dst in names.items():
            out[f"layers.{i}.{dst}.weight"] = w[f"model.layers.{i}.{src}.weight"]
        if cfg.qkv_bias:
            for src, dst in (("q_proj", "wq"), ("k_proj", "wk"), ("v_proj", "wv")):
                out[f"layers.{i}.attn.{dst}.bias"] = w[f"model.layers.{i}.self_attn.{src}.bias"]
    return out


def build_with_weights(cfg: ModelConfig, state: dict[str, torch.Tensor]) -> Transformer:
    """A ``Transformer`` holding exactly ``state`` (strict: every tensor, right shapes), built on the
    meta device so no time goes into a random init the weights overwrite; tied embeddings stay one tensor."""
    with torch.device("meta"):
        model = Transformer(cfg)
    model.load_state_dict(state, strict=True, assign=True)
    if cfg.tie_embeddings:
        model.lm_head.weight = model.tok_embeddings.weight
    return model


def load_hf_dir(path: Path, model_id: str) -> LoadedModel:
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        hf = json.loads((path / "config.json").read_text())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ModelLoadError(f"{path}/config.json cannot be read ({exc})") from exc
    cfg = config_from_hf(hf, model_id)
    files = sorted(path.glob("*.safetensors"))
    if not files:
        bins = list(path.glob("*.bin")) + list(path.glob("*.pt"))
        extra = " (pickle .bin/.pt weights are never loaded: convert them to safetensors)" if bins else ""
        raise ModelLoadError(f"{path}: no *.safetensors weights{extra}")
    weights: dict[str, torch.Tensor] = {}
    try:
        for f in files:
            weights.update(load_file(str(f)))
    except (SafetensorError, OSError, ValueError) as exc:
        raise ModelLoadError(f"{path}: weights cannot be read, the file may be corrupt ({exc})") from exc
    if cfg.family == "llama" and not cfg.tie_embeddings and "lm_head.weight" not in weights:
        cfg = cfg.with_(tie_embeddings=True)
    try:
        state = (_gpt2_state if cfg.family == "gpt2" else _llama_state)(weights, cfg)
        state = {k: v.to(torch.float32).contiguous() for k, v in state.items()}
        if cfg.tie_embeddings:
            state["lm_head.weight"] = state["tok_embeddings.weight"]
        model = build_with_weights(cfg, state)
    except KeyError as exc:
        raise ModelLoadError(f"{path}: weights lack tensor {exc.args[0]!r}") from exc
    except RuntimeError as exc:
        raise ModelLoadError(f"{path}: weights do not fit config.json ({str(exc).splitlines()[0]})") from exc
    tok_file = path / "tokenizer.json"
    if not tok_file.is_file():
        raise ModelLoadError(f"{path}: tokenizer.json is missing")
    eos = hf.get("eos_token_id")
    eos = eos[0] if isinstance(eos, list) and eos else eos
    try:
        tokenizer = TextTokenizer.from_file(tok_file, eos_id=eos, bos_id=hf.get("bos_token_id"))
    except Exception as exc:  # tokenizers raises a bare Exception on malformed files
        raise ModelLoadError(f"{path}/tokenizer.json cannot be read ({exc})") from exc
    tokenizer.chat_template = _chat_template(path)
    return LoadedModel(model.eval(), tokenizer, model_id, {"source": str(path), "format": "hf"})


def _chat_template(path: Path) -> str | None:
    """The checkpoint's chat template: ``chat_template.jinja`` or ``tokenizer_config.json``'s entry."""
    jinja = path / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text(encoding="utf-8")
    try:
        config = json.loads((path / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    template = config.get("chat_template") if isinstance(config, dict) else None
    if isinstance(template, list):  # named templates: [{"name": "default", "template": "..."}, ...]
        named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
        template = named.get("default")
    return template if isinstance(template, str) else None
