"""A Hugging Face ``config.json`` → kvsim's ``ModelConfig``, and the tensors that config implies.

Every value is checked for kind and range (a layer count of 2.5, a string, an infinity is a clear
error naming the config key), and ``hf_tensor_shapes`` lists the exact tensor names and shapes a
checkpoint of that config must hold, so a loader can use every tensor of a file or refuse it.
"""

from __future__ import annotations

from typing import Any

from .base import ModelLoadError
from .config import ConfigError, ModelConfig

LLAMA_TYPES = ("llama", "mistral", "qwen2", "smollm", "smollm2")
GEMMA3_TYPES = ("gemma3_text",)
SUPPORTED = "gpt2, llama, mistral, qwen2 (SmolLM checkpoints are llama), gemma3_text"


_UNSET = object()


def _get(hf: dict, key: str, default: object = _UNSET, name: str = "") -> Any:  # a JSON value: ModelConfig checks its kind
    """``hf[key]``, with ``null`` read as unset (transformers' ``to_dict`` writes unset values as null)."""
    value = hf.get(key)
    if value is None:
        if default is _UNSET:
            raise ModelLoadError(f"{name}: config.json lacks {key!r}")
        return default
    return value


def _needed(hf: dict, key: str, default: Any, name: str, family: str = "Gemma 3") -> Any:
    """``hf[key]``, its default when the key is absent — but an explicit ``null`` is refused: the
    architecture needs a value there and transformers fails on it (no default is invented)."""
    if key in hf and hf[key] is None:
        raise ModelLoadError(
            f"{name}: config.json's {key} is null, but a {family} model needs a value there (transformers refuses it too)"
        )
    return hf.get(key, default)


def _flag(hf: dict, key: str, default: bool, name: str) -> bool:
    value = _get(hf, key, default, name)
    if not isinstance(value, bool):
        raise ModelLoadError(f"{name}: config.json's {key} must be true or false, got {value!r}")
    return value


def _sliding_window(hf: dict, model_type: str, name: str) -> int | None:
    """One window for every layer, or none. Qwen2 windows only when ``use_sliding_window``; a
    per-layer mix (``layer_types`` with both kinds, e.g. Qwen2's ``max_window_layers``) is refused."""
    window = hf.get("sliding_window")
    if model_type == "qwen2" and not _flag(hf, "use_sliding_window", False, name):
        return None
    layer_types = hf.get("layer_types") or []
    if not isinstance(layer_types, list) or not all(isinstance(t, str) for t in layer_types):
        raise ModelLoadError(f"{name}: config.json's layer_types must be a list of names, got {layer_types!r}")
    kinds = set(layer_types)
    if len(kinds) > 1:
        raise ModelLoadError(
            f"{name}: a different attention per layer ({', '.join(sorted(kinds))}) is not supported "
            "yet (kvsim applies one sliding window to every layer)"
        )
    if kinds == {"full_attention"} or window is None:
        return None
    return window  # type-checked (a positive integer) by ModelConfig


def _gemma3_layer_windows(hf: dict, n_layers: object, name: str) -> tuple[int | None, ...]:
    """Gemma 3's per-layer windows: ``layer_types`` as written, or (older configs) every
    ``sliding_window_pattern``-th layer global (default 6, as transformers assumes)."""
    layer_types = hf.get("layer_types")
    if layer_types is None:
        every = _needed(hf, "sliding_window_pattern", 6, name)
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ModelLoadError(f"{name}: config.json's sliding_window_pattern must be a positive integer, got {every!r}")
        if isinstance(n_layers, bool) or not isinstance(n_layers, int) or not 0 < n_layers <= 10**4:
            raise ModelLoadError(f"{name}: config.json's num_hidden_layers must be a positive integer, got {n_layers!r}")
        layer_types = ["full_attention" if (i + 1) % every == 0 else "sliding_attention" for i in range(n_layers)]
    if not isinstance(layer_types, list) or not all(t in ("sliding_attention", "full_attention") for t in layer_types):
        raise ModelLoadError(
            f"{name}: config.json's layer_types must list sliding_attention or full_attention "
            f"per layer, got {str(layer_types)[:80]!r}"
        )
    window = _needed(hf, "sliding_window", 4096, name)  # transformers' default when absent; null fails there even
    if "sliding_attention" not in layer_types:  # without sliding layers
        return tuple(None for _ in layer_types)
    if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
        raise ModelLoadError(f"{name}: config.json's sliding_window must be a positive integer, got {window!r}")
    return tuple(window if t == "sliding_attention" else None for t in layer_types)


def _gemma3_rope_thetas(hf: dict, name: str, kinds: set[str]) -> tuple[Any, Any]:
    """(global, local) RoPE bases: transformers 5 writes ``rope_parameters`` per layer type; 4.x wrote
    ``rope_theta``, ``rope_local_base_freq`` and ``rope_scaling`` (global layers only). A ``null`` base
    for a kind of layer the model has is refused (transformers fails on it); ``kinds`` are those kinds."""
    params = hf.get("rope_parameters")
    if params is None:
        scaling = hf.get("rope_scaling")
        full = _needed(hf, "rope_theta", 1_000_000.0, name) if "full_attention" in kinds else hf.get("rope_theta")
        local = _needed(hf, "rope_local_base_freq", 10_000.0, name) if "sliding_attention" in kinds else None
        params = {
            "full_attention": {
                "rope_type": "default",
                "rope_theta": 1_000_000.0 if full is None else full,
                **(scaling if isinstance(scaling, dict) else {}),
            },
            "sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0 if local is None else local},
        }
    if not isinstance(params, dict) or not all(isinstance(params.get(k), dict) for k in ("full_attention", "sliding_attention")):
        raise ModelLoadError(f"{name}: config.json's rope_parameters must hold full_attention and sliding_attention objects")
    thetas = []
    for kind, default in (("full_attention", 1_000_000.0), ("sliding_attention", 10_000.0)):
        rope_type = params[kind].get("rope_type", params[kind].get("type", "default"))
        if rope_type not in (None, "default"):
            raise ModelLoadError(f"{name}: RoPE scaling {str(rope_type)[:40]!r} ({kind} layers) is not supported yet")
        if kind in kinds and "rope_theta" in params[kind] and params[kind]["rope_theta"] is None:
            raise ModelLoadError(
                f"{name}: config.json's rope_parameters.{kind}.rope_theta is null, but the model has {kind} layers"
            )
        thetas.append(params[kind].get("rope_theta") if params[kind].get("rope_theta") is not None else default)
    return thetas[0], thetas[1]


def _gemma3_config(hf: dict, name: str) -> ModelConfig:
    """Gemma 3 text checkpoints, with transformers' ``Gemma3TextConfig`` defaults for absent keys."""
    act = _needed(hf, "hidden_activation", "gelu_pytorch_tanh", name)
    if act not in ("gelu_pytorch_tanh", "gelu_new"):
        raise ModelLoadError(f"{name}: Gemma 3 activation {act!r} is not supported (kvsim uses tanh GELU)")
    if _flag(hf, "use_bidirectional_attention", False, name):
        raise ModelLoadError(f"{name}: bidirectional Gemma 3 attention (an encoder) is not a model kvsim runs")
    if hf.get("attn_logit_softcapping") is not None:
        raise ModelLoadError(f"{name}: attention logit soft-capping (Gemma 2's) is not supported")
    n_layers = _get(hf, "num_hidden_layers", name=name)
    layer_windows = _gemma3_layer_windows(hf, n_layers, name)
    kinds = {"sliding_attention" if w is not None else "full_attention" for w in layer_windows}
    global_theta, local_theta = _gemma3_rope_thetas(hf, name, kinds)
    bias = _flag(hf, "attention_bias", False, name)
    return ModelConfig(
        family="gemma3",
        vocab_size=_get(hf, "vocab_size", name=name),
        n_layers=n_layers,
        n_heads=_get(hf, "num_attention_heads", name=name),
        n_kv_heads=_get(hf, "num_key_value_heads", name=name),
        dim=_get(hf, "hidden_size", name=name),
        head_dim=_needed(hf, "head_dim", 256, name),
        hidden_dim=_get(hf, "intermediate_size", name=name),
        max_seq_len=_needed(hf, "max_position_embeddings", 131_072, name),
        norm_eps=_needed(hf, "rms_norm_eps", 1e-6, name),
        rope_theta=global_theta,
        rope_theta_local=local_theta,
        layer_windows=layer_windows,
        qk_norm=True,
        query_pre_attn_scalar=_needed(hf, "query_pre_attn_scalar", 256, name),
        final_logit_softcap=hf.get("final_logit_softcapping"),
        tie_embeddings=_flag(hf, "tie_word_embeddings", True, name),
        qkv_bias=bias,
        out_bias=bias,
        name=name,
    )


def config_from_hf(hf: dict, name: str) -> ModelConfig:
    """A kvsim ``ModelConfig`` from a Hugging Face ``config.json`` (transformers 4.x or 5.x names).

    Values are taken as written, never rounded or coerced: ``2.5`` or ``"2"`` layers, ``true`` heads,
    infinities and NaN are refused (``ModelConfig`` checks the kinds and ranges)."""
    if not isinstance(hf, dict):
        raise ModelLoadError(f"{name}: config.json is not a JSON object")
    model_type = hf.get("model_type", "")
    model_type = model_type.lower() if isinstance(model_type, str) else repr(model_type)
    try:
        if model_type in GEMMA3_TYPES:
            return _gemma3_config(hf, name)
        if model_type == "gemma3":  # the multimodal wrapper: a vision tower and text_config inside
            raise ModelLoadError(
                f"{name}: a multimodal Gemma 3 checkpoint (model_type gemma3) is not supported; "
                "kvsim runs the text-only ones (model_type gemma3_text, e.g. Gemma 3 270M and 1B)"
            )
        if model_type == "gpt2":
            act = _get(hf, "activation_function", "gelu_new", name)
            if act not in ("gelu_new", "gelu_pytorch_tanh"):
                raise ModelLoadError(f"{name}: GPT-2 activation {act!r} is not supported (kvsim uses tanh GELU)")
            if _flag(hf, "scale_attn_by_inverse_layer_idx", False, name) or not _flag(hf, "scale_attn_weights", True, name):
                raise ModelLoadError(f"{name}: GPT-2 attention scaling variants are not supported")
            if _flag(hf, "add_cross_attention", False, name):
                raise ModelLoadError(f"{name}: GPT-2 with cross-attention is not a decoder-only model kvsim runs")
            positions: Any = hf.get("n_positions") if hf.get("n_positions") is not None else _get(hf, "n_ctx", 1024, name)
            return ModelConfig(
                family="gpt2",
                vocab_size=_get(hf, "vocab_size", name=name),
                n_layers=_get(hf, "n_layer", name=name),
                n_heads=_get(hf, "n_head", name=name),
                n_kv_heads=_get(hf, "n_head", name=name),
                dim=_get(hf, "n_embd", name=name),
                hidden_dim=_get(hf, "n_inner", 0, name),
                max_seq_len=positions,
                norm_eps=_get(hf, "layer_norm_epsilon", 1e-5, name),
                tie_embeddings=_flag(hf, "tie_word_embeddings", True, name),
                qkv_bias=True,
                name=name,
            )
        if model_type in LLAMA_TYPES:
            # transformers 5 writes rope_parameters {"rope_type", "rope_theta"}; 4.x rope_theta + rope_scaling
            rope = hf.get("rope_parameters") or hf.get("rope_scaling") or {}
            if not isinstance(rope, dict):
                raise ModelLoadError(f"{name}: config.json's rope parameters must be an object, got {rope!r}")
            rope_type = rope.get("rope_type", rope.get("type", "default"))
            if rope_type not in (None, "default"):
                raise ModelLoadError(f"{name}: RoPE scaling {rope_type!r} is not supported yet")
            theta: Any = rope.get("rope_theta") if rope.get("rope_theta") is not None else _get(hf, "rope_theta", 10000.0)
            act = _get(hf, "hidden_act", "silu", name)
            if act != "silu":
                raise ModelLoadError(f"{name}: MLP activation {act!r} is not supported (Llama family: silu)")
            if _get(hf, "pretraining_tp", 1, name) != 1:
                raise ModelLoadError(f"{name}: pretraining_tp {hf['pretraining_tp']!r} is not supported (only 1)")
            # which projections carry biases is the modelling code's choice, as in transformers:
            # Llama/SmolLM: attention_bias (q, k, v and o) and mlp_bias; Qwen2: q, k, v always; Mistral: none
            if model_type == "qwen2":
                qkv_bias, out_bias, mlp_bias = True, False, False
            elif model_type == "mistral":
                qkv_bias = out_bias = mlp_bias = False
            else:
                qkv_bias = out_bias = _flag(hf, "attention_bias", False, name)
                mlp_bias = _flag(hf, "mlp_bias", False, name)
            window = _sliding_window(hf, model_type, name)
            heads = _get(hf, "num_attention_heads", name=name)
            return ModelConfig(
                family="llama",
                vocab_size=_get(hf, "vocab_size", name=name),
                n_layers=_get(hf, "num_hidden_layers", name=name),
                n_heads=heads,
                n_kv_heads=_get(hf, "num_key_value_heads", heads, name),
                dim=_get(hf, "hidden_size", name=name),
                head_dim=hf.get("head_dim") or 0,  # transformers: head_dim or hidden_size // heads
                hidden_dim=_get(hf, "intermediate_size", name=name),
                max_seq_len=_get(hf, "max_position_embeddings", 2048, name),
                norm_eps=_needed(hf, "rms_norm_eps", 1e-6, name),
                rope_theta=theta,
                tie_embeddings=_flag(hf, "tie_word_embeddings", False, name),
                qkv_bias=qkv_bias,
                out_bias=out_bias,
                mlp_bias=mlp_bias,
                sliding_window=window,
                name=name,
            )
    except ConfigError as exc:
        raise ModelLoadError(f"{name}: config.json: {_hf_names(str(exc), model_type)}") from exc
    except (TypeError, ValueError, ZeroDivisionError, OverflowError) as exc:
        if isinstance(exc, ModelLoadError):
            raise
        raise ModelLoadError(f"{name}: config.json has a value of the wrong kind ({exc})") from exc
    raise ModelLoadError(f"{name}: model_type {model_type or '(none)'!r} is not supported (supported: {SUPPORTED})")


_HF_KEYS = {
    "vocab_size": "vocab_size",
    "n_layers": "num_hidden_layers",
    "n_heads": "num_attention_heads",
    "n_kv_heads": "num_key_value_heads",
    "dim": "hidden_size",
    "hidden_dim": "intermediate_size",
    "max_seq_len": "max_position_embeddings",
    "norm_eps": "rms_norm_eps",
    "head_dim": "head_dim",
    "sliding window": "sliding_window",
    "sliding_window": "sliding_window",
    "rope_theta": "rope_theta",
    "layer_windows": "layer_types/sliding_window",
    "rope_theta_local": "rope_local_base_freq",
    "query_pre_attn_scalar": "query_pre_attn_scalar",
    "final_logit_softcap": "final_logit_softcapping",
}
_GPT2_KEYS = {
    "n_layers": "n_layer",
    "n_heads": "n_head",
    "n_kv_heads": "n_head",
    "dim": "n_embd",
    "hidden_dim": "n_inner",
    "max_seq_len": "n_positions",
    "norm_eps": "layer_norm_epsilon",
}


def _hf_names(message: str, model_type: str) -> str:
    """A ModelConfig message with its field name spelled as config.json spells it."""
    keys = {**_HF_KEYS, **(_GPT2_KEYS if model_type == "gpt2" else {})}
    for field, key in sorted(keys.items(), key=lambda kv: -len(kv[0])):
        if message.startswith(field + " ") or message.startswith(field + ":"):
            return key + message[len(field) :]
    return message


def hf_tensor_shapes(cfg: ModelConfig, gpt2_prefix: str = "") -> dict[str, tuple[int, ...]]:
    """Every tensor a checkpoint of this config holds, by its Hugging Face name, with its shape in the
    file's layout (GPT-2's Conv1D weights are (in, out)). The lm_head of tied models is not listed."""
    d, ff, v = cfg.dim, cfg.hidden_dim, cfg.vocab_size
    q, kv = cfg.n_heads * cfg.head_dim, cfg.n_kv_heads * cfg.head_dim
    out: dict[str, tuple[int, ...]] = {}
    if cfg.family == "gpt2":
        p = gpt2_prefix
        out.update(
            {p + "wte.weight": (v, d), p + "wpe.weight": (cfg.max_seq_len, d), p + "ln_f.weight": (d,), p + "ln_f.bias": (d,)}
        )
        for i in range(cfg.n_layers):
            b = f"{p}h.{i}."
            out.update(
                {
                    b + "ln_1.weight": (d,),
                    b + "ln_1.bias": (d,),
                    b + "ln_2.weight": (d,),
                    b + "ln_2.bias": (d,),
                    b + "attn.c_attn.weight": (d, 3 * d),
                    b + "attn.c_attn.bias": (3 * d,),
                    b + "attn.c_proj.weight": (d, d),
                    b + "attn.c_proj.bias": (d,),
                    b + "mlp.c_fc.weight": (d, ff),
                    b + "mlp.c_fc.bias": (ff,),
                    b + "mlp.c_proj.weight": (ff, d),
                    b + "mlp.c_proj.bias": (d,),
                }
            )
        if not cfg.tie_embeddings:
            out["lm_head.weight"] = (v, d)
        return out
    out.update({"model.embed_tokens.weight": (v, d), "model.norm.weight": (d,)})
    if not cfg.tie_embeddings:
        out["lm_head.weight"] = (v, d)
    for i in range(cfg.n_layers):
        b = f"model.layers.{i}."
        out.update(
            {
                b + "self_attn.q_proj.weight": (q, d),
                b + "self_attn.k_proj.weight": (kv, d),
                b + "self_attn.v_proj.weight": (kv, d),
                b + "self_attn.o_proj.weight": (d, q),
                b + "mlp.gate_proj.weight": (ff, d),
                b + "mlp.up_proj.weight": (ff, d),
                b + "mlp.down_proj.weight": (d, ff),
                b + "input_layernorm.weight": (d,),
                b + "post_attention_layernorm.weight": (d,),
            }
        )
        if cfg.qkv_bias:
            out.update(
                {b + "self_attn.q_proj.bias": (q,), b + "self_attn.k_proj.bias": (kv,), b + "self_attn.v_proj.bias": (kv,)}
            )
        if cfg.out_bias:
            out[b + "self_attn.o_proj.bias"] = (d,)
        if cfg.mlp_bias:
            out.update({b + "mlp.gate_proj.bias": (ff,), b + "mlp.up_proj.bias": (ff,), b + "mlp.down_proj.bias": (d,)})
        if cfg.qk_norm:
            out.update({b + "self_attn.q_norm.weight": (cfg.head_dim,), b + "self_attn.k_norm.weight": (cfg.head_dim,)})
        if cfg.family == "gemma3":
            out.update({b + "pre_feedforward_layernorm.weight": (d,), b + "post_feedforward_layernorm.weight": (d,)})
    return out
