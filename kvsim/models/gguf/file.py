"""GGUF files (llama.cpp's format) → kvsim's Llama-family Transformer and a tokenizer.

Contract: ``load_gguf(path, model_id)`` reads a Llama-architecture ``.gguf`` file with
``gguf.GGUFReader``, dequantizes every tensor to float32 with ``gguf.quants.dequantize`` (F32, F16,
BF16, Q4_0/Q4_1/Q5_x/Q8_0, the K-quants …), undoes llama.cpp's row permutation of the Q and K
projections (llama.cpp stores RoPE pairs interleaved; kvsim, like Hugging Face, rotates halves),
takes the shapes from the metadata (``llama.block_count``, ``llama.attention.head_count[_kv]``,
``llama.embedding_length``, ``llama.feed_forward_length``, ``llama.rope.freq_base``,
``llama.attention.layer_norm_rms_epsilon``, ``llama.context_length``, ``llama.vocab_size``) and ties
the output projection to the embeddings when ``output.weight`` is absent. The tokenizer is built
from the ``tokenizer.ggml.*`` metadata with the ``tokenizers`` library (byte-level BPE for
``gpt2``-style vocabularies, SentencePiece-style BPE for ``llama`` ones), with the file's BOS/EOS
ids and chat template. Anything else — another architecture, RoPE scaling, an unknown tensor, a
truncated or corrupt file — raises ``ModelLoadError`` naming what is supported. Nothing here uses
the network or pickle.

Gemma 3 files (``general.architecture = gemma3``) differ from Llama ones in what llama.cpp's
converter does to them: Q/K rows are *not* permuted (Gemma rotates halves, as kvsim does), every
norm weight is stored as 1 + w (kvsim, like transformers, keeps Gemma's offset w, so 1 is taken
off), and the layout that the metadata does not spell out is llama.cpp's own: five local layers
then one global (``gemma3.attention.sliding_window_pattern`` when present), local RoPE base 10k
(``gemma3.rope.freq_base_swa`` when present), scores scaled by 1/sqrt(head_dim).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..base import LoadedModel, ModelLoadError
from ..checkpoints import build_with_weights
from ..config import MAX_SIZES, ConfigError, ModelConfig
from ..tensors import check_finite, check_size, check_tensor_set
from ..tokenizer import check_vocabulary
from .reader import open_gguf, read_metadata
from .tokenizer import tokenizer_from_gguf

SUPPORTED = (
    "Llama-architecture GGUF files (general.architecture = llama: Llama, Mistral, SmolLM, …) and Gemma 3 text ones (gemma3)"
)

# llama.cpp tensor names (after ``blk.{i}.``) → kvsim module names (after ``layers.{i}.``)
_BLOCK_TENSORS = {
    "attn_norm.weight": "attn_norm.weight",
    "attn_q.weight": "attn.wq.weight",
    "attn_k.weight": "attn.wk.weight",
    "attn_v.weight": "attn.wv.weight",
    "attn_q.bias": "attn.wq.bias",
    "attn_k.bias": "attn.wk.bias",
    "attn_v.bias": "attn.wv.bias",
    "attn_output.weight": "attn.wo.weight",
    "attn_output.bias": "attn.wo.bias",
    "ffn_gate.bias": "mlp.w_gate.bias",
    "ffn_up.bias": "mlp.w_up.bias",
    "ffn_down.bias": "mlp.w_down.bias",
    "ffn_norm.weight": "mlp_norm.weight",
    "ffn_gate.weight": "mlp.w_gate.weight",
    "ffn_up.weight": "mlp.w_up.weight",
    "ffn_down.weight": "mlp.w_down.weight",
}
# Gemma 3's extra tensors: QK-norm and the norms after attention and after the MLP
_GEMMA3_BLOCK_TENSORS = {
    "attn_q_norm.weight": "attn.q_norm.weight",
    "attn_k_norm.weight": "attn.k_norm.weight",
    "post_attention_norm.weight": "post_attn_norm.weight",
    "post_ffw_norm.weight": "post_mlp_norm.weight",
}
_TOP_TENSORS = {
    "token_embd.weight": "tok_embeddings.weight",
    "output_norm.weight": "norm.weight",
    "output.weight": "lm_head.weight",
}

# llama.cpp token types (tokenizer.ggml.token_type)


def unpermute_qk(w: np.ndarray, n_heads: int) -> np.ndarray:
    """Undo llama.cpp's ``permute`` of a Q or K projection (rows, or a bias), as transformers does.

    llama.cpp's converter writes, per head, the rows of the two RoPE halves interleaved:
    ``w.reshape(n_heads, 2, d/2, …).swapaxes(1, 2)``. Reading it back swaps the same two axes the
    other way: ``reshape(n_heads, d/2, 2, …).swapaxes(1, 2)``.
    """
    half = w.shape[0] // n_heads // 2
    return w.reshape(n_heads, half, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def _meta_int(meta: dict[str, Any], key: str, name: str, default: int | None = None) -> int:
    value = meta.get(key)
    if value is None:
        if default is None:
            raise ModelLoadError(f"{name}: GGUF metadata lacks {key}")
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ModelLoadError(f"{name}: GGUF metadata {key} must be an integer, got {str(value)[:60]!r}")
    return value


def _meta_float(meta: dict[str, Any], key: str, name: str, default: float) -> float:
    value = meta.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ModelLoadError(f"{name}: GGUF metadata {key} must be a number, got {str(value)[:60]!r}")
    return float(value)


def _gemma3_layout(meta: dict[str, Any], name: str, n_layers: int) -> dict[str, Any]:
    """The Gemma 3 fields llama.cpp's loader fills in itself (src/llama-model.cpp, LLM_ARCH_GEMMA3):
    the local/global pattern, the local RoPE base and the attention scale."""
    if not 0 < n_layers <= MAX_SIZES["n_layers"]:  # before a per-layer list is sized by it
        raise ModelLoadError(f"{name}: GGUF gemma3.block_count must be from 1 to {MAX_SIZES['n_layers']:,}, got {n_layers}")
    window = _meta_int(meta, "gemma3.attention.sliding_window", name)
    pattern = meta.get("gemma3.attention.sliding_window_pattern", 6)
    if isinstance(pattern, list):  # newer converters: one flag per layer, true = local
        if len(pattern) != n_layers or not all(isinstance(p, bool) for p in pattern):
            raise ModelLoadError(
                f"{name}: GGUF gemma3.attention.sliding_window_pattern must hold one true/false per layer ({n_layers})"
            )
        local = list(pattern)
    elif isinstance(pattern, int) and not isinstance(pattern, bool) and pattern >= 1:
        local = [(i + 1) % pattern != 0 for i in range(n_layers)]  # every pattern-th layer is global
    else:
        raise ModelLoadError(
            f"{name}: GGUF gemma3.attention.sliding_window_pattern must be a positive integer, got {str(pattern)[:40]!r}"
        )
    if meta.get("gemma3.attn_logit_softcapping") is not None:
        raise ModelLoadError(f"{name}: attention logit soft-capping (Gemma 2's) is not supported")
    heads, dim = meta.get("gemma3.attention.head_count"), meta.get("gemma3.embedding_length")
    # llama.cpp scales by 1/sqrt(head_dim), except for the 27B (62 layers) whose query_pre_attn_scalar is dim/heads
    scalar = dim / heads if n_layers == 62 and isinstance(dim, int) and isinstance(heads, int) and heads else None
    return {
        "layer_windows": tuple(window if w else None for w in local),
        "qk_norm": True,
        "rope_theta_local": _meta_float(meta, "gemma3.rope.freq_base_swa", name, 10000.0),
        "query_pre_attn_scalar": scalar,
        "final_logit_softcap": _meta_float(meta, "gemma3.final_logit_softcapping", name, 0.0) or None,
    }


def config_from_gguf(meta: dict[str, Any], name: str, tensor_names: set[str]) -> ModelConfig:
    """A kvsim ``ModelConfig`` from a Llama or Gemma 3 GGUF's metadata (and which tensors it holds).
    Numbers are taken as written and checked (kind, range); the tensors are checked against them afterwards."""
    arch = meta.get("general.architecture")
    if arch == "gemma3":
        # the same keys under the architecture's own prefix
        meta = {("llama." + k[len("gemma3.") :] if k.startswith("gemma3.") else k): v for k, v in meta.items()} | meta
    elif arch != "llama":
        shown = arch if isinstance(arch, str) else str(arch)[:40]
        raise ModelLoadError(f"{name}: GGUF architecture {shown!r} is not supported (supported: {SUPPORTED})")
    if meta.get("llama.expert_count"):
        raise ModelLoadError(
            f"{name}: mixture-of-experts GGUF files ({str(meta['llama.expert_count'])[:20]} experts) "
            f"are not supported (supported: {SUPPORTED}, dense)"
        )
    scaling = meta.get("llama.rope.scaling.type")
    if scaling not in (None, "none") or "rope_freqs.weight" in tensor_names:
        kind = str(scaling)[:40] if scaling not in (None, "none") else "llama3 (rope_freqs)"
        raise ModelLoadError(f"{name}: RoPE scaling {kind!r} is not supported yet (supported: {SUPPORTED} with plain RoPE)")
    heads = _meta_int(meta, "llama.attention.head_count", name)
    tokens = meta.get("tokenizer.ggml.tokens")
    vocab = meta.get("llama.vocab_size")
    if vocab is None:
        vocab = len(tokens) if isinstance(tokens, list) and tokens else None
    if vocab is None:
        raise ModelLoadError(f"{name}: GGUF metadata gives no vocabulary size")
    gemma = _gemma3_layout(meta, name, _meta_int(meta, "llama.block_count", name)) if arch == "gemma3" else {}
    try:
        cfg = ModelConfig(
            family="gemma3" if gemma else "llama",
            vocab_size=vocab,
            n_layers=_meta_int(meta, "llama.block_count", name),
            n_heads=heads,
            n_kv_heads=_meta_int(meta, "llama.attention.head_count_kv", name, heads),
            dim=_meta_int(meta, "llama.embedding_length", name),
            head_dim=_meta_int(meta, "llama.attention.key_length", name, 0),
            hidden_dim=_meta_int(meta, "llama.feed_forward_length", name),
            max_seq_len=_meta_int(meta, "llama.context_length", name, 2048),
            norm_eps=_meta_float(meta, "llama.attention.layer_norm_rms_epsilon", name, 1e-5),
            rope_theta=_meta_float(meta, "llama.rope.freq_base", name, 10000.0),
            tie_embeddings="output.weight" not in tensor_names,
            qkv_bias="blk.0.attn_q.bias" in tensor_names,
            out_bias="blk.0.attn_output.bias" in tensor_names,
            mlp_bias="blk.0.ffn_up.bias" in tensor_names,
            name=name,
            **gemma,
        )
    except ConfigError as exc:
        raise ModelLoadError(f"{name}: GGUF metadata: {_gguf_names(str(exc), str(arch))}") from exc
    value_length = meta.get("llama.attention.value_length")
    if value_length is not None and value_length != cfg.head_dim:
        raise ModelLoadError(
            f"{name}: different key and value head sizes ({cfg.head_dim}, {str(value_length)[:20]}) are not supported"
        )
    rotary = meta.get("llama.rope.dimension_count")
    if rotary is not None and rotary != cfg.head_dim:
        raise ModelLoadError(f"{name}: partial RoPE ({str(rotary)[:20]} of {cfg.head_dim} head dims) is not supported")
    return cfg


_GGUF_KEYS = {
    "vocab_size": "llama.vocab_size",
    "n_layers": "llama.block_count",
    "n_heads": "llama.attention.head_count",
    "n_kv_heads": "llama.attention.head_count_kv",
    "dim": "llama.embedding_length",
    "hidden_dim": "llama.feed_forward_length",
    "max_seq_len": "llama.context_length",
    "head_dim": "llama.attention.key_length",
    "norm_eps": "llama.attention.layer_norm_rms_epsilon",
    "rope_theta": "llama.rope.freq_base",
}


def _gguf_names(message: str, arch: str = "llama") -> str:
    """A ModelConfig message with its field name spelled as the GGUF metadata spells it."""
    for field, key in sorted(_GGUF_KEYS.items(), key=lambda kv: -len(kv[0])):
        if message.startswith(field + " "):
            return key.replace("llama.", arch + ".", 1) + message[len(field) :]
    return message


def gguf_tensor_shapes(cfg: ModelConfig) -> dict[str, tuple[int, ...]]:
    """Every tensor a Llama GGUF of this config holds, with its shape as numpy reads it (rows, cols)."""
    d, ff, v = cfg.dim, cfg.hidden_dim, cfg.vocab_size
    q, kv = cfg.n_heads * cfg.head_dim, cfg.n_kv_heads * cfg.head_dim
    out: dict[str, tuple[int, ...]] = {"token_embd.weight": (v, d), "output_norm.weight": (d,)}
    if not cfg.tie_embeddings:
        out["output.weight"] = (v, d)
    for i in range(cfg.n_layers):
        b = f"blk.{i}."
        out.update(
            {
                b + "attn_norm.weight": (d,),
                b + "attn_q.weight": (q, d),
                b + "attn_k.weight": (kv, d),
                b + "attn_v.weight": (kv, d),
                b + "attn_output.weight": (d, q),
                b + "ffn_norm.weight": (d,),
                b + "ffn_gate.weight": (ff, d),
                b + "ffn_up.weight": (ff, d),
                b + "ffn_down.weight": (d, ff),
            }
        )
        if cfg.qkv_bias:
            out.update({b + "attn_q.bias": (q,), b + "attn_k.bias": (kv,), b + "attn_v.bias": (kv,)})
        if cfg.out_bias:
            out[b + "attn_output.bias"] = (d,)
        if cfg.mlp_bias:
            out.update({b + "ffn_gate.bias": (ff,), b + "ffn_up.bias": (ff,), b + "ffn_down.bias": (d,)})
        if cfg.family == "gemma3":
            out.update(
                {
                    b + "attn_q_norm.weight": (cfg.head_dim,),
                    b + "attn_k_norm.weight": (cfg.head_dim,),
                    b + "post_attention_norm.weight": (d,),
                    b + "post_ffw_norm.weight": (d,),
                }
            )
    return out


def _state_dict(reader: Any, cfg: ModelConfig, name: str) -> dict[str, torch.Tensor]:
    from gguf.quants import dequantize

    gemma = cfg.family == "gemma3"
    block_tensors = _BLOCK_TENSORS | (_GEMMA3_BLOCK_TENSORS if gemma else {})
    state: dict[str, torch.Tensor] = {}
    for tensor in reader.tensors:
        key = tensor.name
        if key in _TOP_TENSORS:
            target = _TOP_TENSORS[key]
        else:
            parts = key.split(".", 2)
            if len(parts) != 3 or parts[0] != "blk" or parts[2] not in block_tensors:
                raise ModelLoadError(f"{name}: unexpected tensor {key!r} in the GGUF file (supported: {SUPPORTED})")
            target = f"layers.{parts[1]}.{block_tensors[parts[2]]}"
        try:
            values = dequantize(tensor.data, tensor.tensor_type)
        except NotImplementedError as exc:
            raise ModelLoadError(f"{name}: tensor {key}: {exc}") from exc
        values = np.asarray(values, dtype=np.float32).reshape([int(n) for n in reversed(tensor.shape)])
        if gemma:
            if key.endswith("norm.weight"):  # llama.cpp stores Gemma's norm scale (1 + w); kvsim keeps w
                values = values - np.float32(1.0)
        elif ".attn_q." in key:
            values = unpermute_qk(values, cfg.n_heads)
        elif ".attn_k." in key:
            values = unpermute_qk(values, cfg.n_kv_heads)
        values = np.ascontiguousarray(values)
        if not values.flags.writeable:  # an F32 tensor is a view of the read-only memory map
            values = values.copy()
        state[target] = torch.from_numpy(values)
        check_finite(name, key, state[target])
    if cfg.tie_embeddings and "tok_embeddings.weight" in state:
        state["lm_head.weight"] = state["tok_embeddings.weight"]
    return state


def load_gguf(path: Path, model_id: str) -> LoadedModel:
    """Load a Llama-architecture ``.gguf`` file as a float32 kvsim model plus its tokenizer."""
    path = Path(path)
    reader = open_gguf(path)
    try:
        meta = read_metadata(reader)
        found = {t.name: tuple(int(n) for n in reversed(t.shape)) for t in reader.tensors}
    except Exception as exc:  # malformed key/value section
        raise ModelLoadError(f"{path}: GGUF metadata cannot be read, the file may be corrupt ({type(exc).__name__})") from exc
    if len(found) != len(reader.tensors):
        raise ModelLoadError(f"{path}: the GGUF file names a tensor twice")
    cfg = config_from_gguf(meta, model_id, set(found))
    # before anything is dequantized or built: the metadata's shape must be what the tensors are
    check_size(model_id, cfg.n_params(), found, "the GGUF metadata")
    check_tensor_set(model_id, gguf_tensor_shapes(cfg), found, what="the GGUF metadata")
    tokenizer = tokenizer_from_gguf(meta, model_id)
    check_vocabulary(tokenizer, cfg.vocab_size, model_id)
    try:
        state = _state_dict(reader, cfg, model_id)
    except ModelLoadError:
        raise
    except Exception as exc:  # a tensor whose bytes do not fit its declared shape/type
        raise ModelLoadError(
            f"{path}: GGUF tensor data cannot be read, the file may be truncated or corrupt "
            f"({type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''})"
        ) from exc
    try:
        model = build_with_weights(cfg, state)
    except RuntimeError as exc:
        raise ModelLoadError(f"{path}: GGUF tensors do not fit its metadata ({str(exc).splitlines()[0]})") from exc
    quant = sorted({t.tensor_type.name for t in reader.tensors})
    info = {
        "source": str(path),
        "format": "gguf",
        "gguf_name": meta.get("general.name"),
        "gguf_tensor_types": quant,
        "file_bytes": path.stat().st_size,
    }
    model.gguf_path = str(path)  # the file whose own blocks a kv@gguf lane keeps (kvsim.models.gguf.blocks)
    return LoadedModel(model.eval(), tokenizer, model_id, info)
