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

import math
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .base import LoadedModel, ModelLoadError
from .checkpoints import build_with_weights
from .config import MAX_SIZES, ConfigError, ModelConfig
from .tensors import check_finite, check_size, check_tensor_set
from .tokenizer import TextTokenizer, TokenizerError, check_vocabulary, guarded

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
_CONTROL, _USER_DEFINED = 3, 4


def unpermute_qk(w: np.ndarray, n_heads: int) -> np.ndarray:
    """Undo llama.cpp's ``permute`` of a Q or K projection (rows, or a bias), as transformers does.

    llama.cpp's converter writes, per head, the rows of the two RoPE halves interleaved:
    ``w.reshape(n_heads, 2, d/2, …).swapaxes(1, 2)``. Reading it back swaps the same two axes the
    other way: ``reshape(n_heads, d/2, 2, …).swapaxes(1, 2)``.
    """
    half = w.shape[0] // n_heads // 2
    return w.reshape(n_heads, half, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def permute_qk(w: np.ndarray, n_heads: int) -> np.ndarray:
    """llama.cpp's own permutation (Hugging Face layout → GGUF layout); the inverse of ``unpermute_qk``."""
    half = w.shape[0] // n_heads // 2
    return w.reshape(n_heads, 2, half, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def read_metadata(reader: Any) -> dict[str, Any]:
    """Every key/value of a ``GGUFReader`` as plain Python values (strings, numbers, lists)."""
    meta: dict[str, Any] = {}
    for key, field in reader.fields.items():
        if key.startswith("GGUF."):
            continue
        value = field.contents()
        if isinstance(value, np.generic):
            value = value.item()
        meta[key] = value
    return meta


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


def _bpe_merges(tokens: list[str], scores: list[float] | None, merges: list[str] | None) -> list[tuple[str, str]]:
    """The file's merges, or (SentencePiece files usually have none) the ones its vocabulary implies:
    every split of a token into two vocabulary tokens, best score first — the order transformers'
    ``generate_merges`` gives, so both tokenize alike."""
    if merges:
        return [tuple(m.split(" ", 1)) for m in merges]  # type: ignore[misc]
    index = {t: i for i, t in enumerate(tokens)}
    ranked = dict(zip(tokens, scores, strict=True)) if scores else index
    found: list[tuple[str, str, float]] = []
    for tok, score in ranked.items():
        local = [(tok[:cut], tok[cut:], score) for cut in range(1, len(tok)) if tok[:cut] in index and tok[cut:] in index]
        found.extend(sorted(local, key=lambda m: (index[m[0]], index[m[1]])))
    found.sort(key=lambda m: (m[2], len(m[0]), len(m[1])), reverse=bool(scores))
    return [(a, b) for a, b, _ in found]


MAX_TOKEN_CHARS_SQUARED = 50_000_000  # Σ len(token)²: the work of deriving merges from a vocabulary


def _check_tokenizer_meta(meta: dict[str, Any], name: str) -> None:
    """The ``tokenizer.ggml.*`` values must have the kinds and lengths a tokenizer needs, checked
    before the (native) tokenizer is built from them."""
    tokens = meta.get("tokenizer.ggml.tokens")
    if not tokens:
        raise ModelLoadError(f"{name}: the GGUF file has no tokenizer (tokenizer.ggml.tokens)")
    if not isinstance(tokens, list) or not all(isinstance(t, str) and t for t in tokens):
        raise ModelLoadError(f"{name}: GGUF tokenizer.ggml.tokens must be a list of non-empty strings")
    if len(set(tokens)) != len(tokens):
        raise ModelLoadError(f"{name}: GGUF tokenizer.ggml.tokens holds the same token twice")
    if sum(len(t) ** 2 for t in tokens) > MAX_TOKEN_CHARS_SQUARED:
        raise ModelLoadError(f"{name}: GGUF tokenizer tokens are implausibly long (a damaged vocabulary)")
    for key, kinds in (("tokenizer.ggml.token_type", int), ("tokenizer.ggml.scores", int | float)):
        values = meta.get(key)
        if values is None:
            continue
        if not isinstance(values, list) or len(values) != len(tokens):
            raise ModelLoadError(f"{name}: GGUF {key} must be a list of {len(tokens)} values, one per token")
        if not all(isinstance(v, kinds) and not isinstance(v, bool) for v in values):
            raise ModelLoadError(f"{name}: GGUF {key} must hold numbers only")
        if key.endswith("scores") and not all(math.isfinite(v) for v in values):
            raise ModelLoadError(f"{name}: GGUF {key} holds values that are not numbers (NaN or infinity)")
    merges = meta.get("tokenizer.ggml.merges")
    if merges is not None:
        if not isinstance(merges, list) or not all(isinstance(m, str) for m in merges):
            raise ModelLoadError(f"{name}: GGUF tokenizer.ggml.merges must be a list of strings")
        vocab = set(tokens)
        for m in merges:
            parts = m.split(" ")
            if len(parts) != 2 or parts[0] not in vocab or parts[1] not in vocab or parts[0] + parts[1] not in vocab:
                raise ModelLoadError(
                    f"{name}: GGUF merge {m[:40]!r} is not two tokens of the vocabulary "
                    "joined by one space (a damaged merges list)"
                )
    for key in ("tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id"):
        value = meta.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < len(tokens)):
            raise ModelLoadError(f"{name}: GGUF {key} {str(value)[:30]} is not a token of the vocabulary")
    for key in ("tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.chat_template"):
        if meta.get(key) is not None and not isinstance(meta[key], str):
            raise ModelLoadError(f"{name}: GGUF {key} must be a string")


def tokenizer_from_gguf(meta: dict[str, Any], name: str) -> TextTokenizer:
    """A ``TextTokenizer`` from ``tokenizer.ggml.*`` metadata (gpt2 byte-level BPE or llama SentencePiece
    BPE), checked first; failures of the native library are one ``ModelLoadError`` line."""
    _check_tokenizer_meta(meta, name)
    try:
        tok = guarded(f"{name}: the GGUF tokenizer cannot be built", lambda: _build_tokenizer(meta, name))
    except TokenizerError as exc:
        raise ModelLoadError(str(exc)) from None
    tok.probe(name)
    return tok


def _build_tokenizer(meta: dict[str, Any], name: str) -> TextTokenizer:
    from tokenizers import AddedToken, Regex, decoders, pre_tokenizers
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers.models import BPE

    kind = meta.get("tokenizer.ggml.model")
    tokens = meta["tokenizer.ggml.tokens"]
    types = meta.get("tokenizer.ggml.token_type") or [1] * len(tokens)
    vocab = {tok: i for i, tok in enumerate(tokens)}
    merges = _bpe_merges(tokens, meta.get("tokenizer.ggml.scores"), meta.get("tokenizer.ggml.merges"))
    if kind == "gpt2":
        tok = HFTokenizer(BPE(vocab, merges, fuse_unk=False))
        pre = meta.get("tokenizer.ggml.pre")
        if pre in ("llama3", "llama-v3", "llama-bpe", "smaug-bpe", "dbrx"):
            split = (
                r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
            )
            tok.pre_tokenizer = pre_tokenizers.Sequence(
                [
                    pre_tokenizers.Split(Regex(split), behavior="isolated"),
                    pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
                ]
            )
        else:  # gpt2's own split (SmolLM's "smollm" is this one)
            tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        tok.decoder = decoders.ByteLevel()
        add_bos_default = False
    elif kind == "llama":
        unk = meta.get("tokenizer.ggml.unknown_token_id")
        tok = HFTokenizer(
            BPE(vocab, merges, unk_token=tokens[unk] if unk is not None else None, fuse_unk=True, byte_fallback=True)
        )
        prefix = bool(meta.get("tokenizer.ggml.add_space_prefix", True))
        # as transformers' LlamaTokenizer: spaces → "▁", one "▁" before the first word only
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first" if prefix else "never", split=False)
        tok.decoder = decoders.Sequence(
            [
                decoders.Replace("▁", " "),
                decoders.ByteFallback(),
                decoders.Fuse(),
                *([decoders.Strip(" ", 1, 0)] if prefix else []),
            ]
        )
        add_bos_default = True
    else:
        raise ModelLoadError(
            f"{name}: GGUF tokenizer {kind!r} is not supported (supported: gpt2 byte-level BPE, llama SentencePiece)"
        )
    specials = [AddedToken(t, special=True, normalized=False) for t, k in zip(tokens, types, strict=True) if k == _CONTROL]
    added = [AddedToken(t, special=False, normalized=False) for t, k in zip(tokens, types, strict=True) if k == _USER_DEFINED]
    if specials:
        tok.add_special_tokens(specials)
    if added:
        tok.add_tokens(added)
    return TextTokenizer(
        tok,
        eos_id=meta.get("tokenizer.ggml.eos_token_id"),
        bos_id=meta.get("tokenizer.ggml.bos_token_id"),
        add_bos=bool(meta.get("tokenizer.ggml.add_bos_token", add_bos_default)),
        chat_template=meta.get("tokenizer.chat_template"),
    )


def _fast_reader_class() -> type:
    """``GGUFReader`` with array metadata read in one pass. The stock reader makes a memory-mapped
    view per array element: 28 s for Gemma 3's 262,144-token vocabulary (three arrays) on 2 cores,
    against ~1 s here. Fields keep the reader's own shape: ``contents()`` gives the same values."""
    import struct

    from gguf import GGUFReader, GGUFValueType

    class FastReader(GGUFReader):
        def _get_field_parts(self, orig_offs: int, raw_type: int) -> tuple[int, list, list[int], list]:
            if GGUFValueType(raw_type) != GGUFValueType.ARRAY or self.byte_order != "I":
                return super()._get_field_parts(orig_offs, raw_type)
            raw_itype = self._get(orig_offs, np.uint32)
            alen = self._get(orig_offs + 4, np.uint64)
            itype, count, start = GGUFValueType(raw_itype[0]), int(alen[0]), orig_offs + 12
            remaining = len(self.data) - start
            head: list = [raw_itype, alen]
            nptype = self.gguf_scalar_to_np.get(itype)
            if nptype is not None:  # numbers: one array, one part (contents() flattens the parts it names)
                size = count * np.dtype(nptype).itemsize
                if size > remaining:
                    raise ValueError(f"array of {count} items runs past the end of the file")
                return 12 + size, [*head, self._get(start, nptype, count)], [2], [GGUFValueType.ARRAY, itype]
            if itype != GGUFValueType.STRING:  # nested arrays: rare and small, the stock path
                return super()._get_field_parts(orig_offs, raw_type)
            if count * 8 > remaining:
                raise ValueError(f"array of {count} strings runs past the end of the file")
            buf = memoryview(self.data)
            spans, pos, end = [], start, len(self.data)
            for _ in range(count):  # u64 length, then the bytes
                (n,) = struct.unpack_from("<Q", buf, pos)
                if n > end - pos - 8:
                    raise ValueError("a string runs past the end of the file")
                spans.append((pos + 8 - start, pos + 8 + n - start))
                pos += 8 + n
            region = np.array(self.data[start:pos])  # one copy; the parts below are plain slices of it
            # only the strings are parts (no per-string length parts): contents() reads just these
            return (
                pos - orig_offs,
                [*head, *(region[a:b] for a, b in spans)],
                list(range(2, 2 + count)),
                [GGUFValueType.ARRAY, itype],
            )

    return FastReader


def open_gguf(path: Path) -> Any:
    """A ``GGUFReader`` over ``path``; unreadable or corrupt files raise ``ModelLoadError``."""
    if not path.is_file():  # a FIFO or a device would block the reader (or never end)
        raise ModelLoadError(f"{path}: not a regular file")
    try:
        return _fast_reader_class()(str(path))
    except OSError as exc:
        raise ModelLoadError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    except Exception as exc:  # the reader raises ValueError, IndexError, struct errors … on bad bytes
        detail = str(exc).splitlines()[0][:200] if str(exc) else ""
        raise ModelLoadError(
            f"{path}: not a valid GGUF file, it may be truncated or corrupt ({type(exc).__name__}: {detail})"
        ) from exc


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
    return LoadedModel(model.eval(), tokenizer, model_id, info)
