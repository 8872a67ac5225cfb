"""Memory: the KV-cache formula and weight bytes by precision (the presets of real models: ``presets``).

    kv bytes = 2 (K and V) · Σ_layers min(n, window_l) · H_kv · d_head · batch · bits/8

The KV head count (not the query head count) sizes the cache: that is what GQA/MQA save.
"""

from __future__ import annotations

import inspect
import math
from typing import TYPE_CHECKING, Any

from ..core.formulas import (  # noqa: F401 - re-exported: the closed forms live in core, where the caches use them
    DTYPE_BITS,
    QUANT_DEFAULTS,
    KVShape,
    LaneBill,
    MemoryInputError,
    kv_cache_bytes,
    nothing_held,
    quantized_kv_cache_bytes,
    quantized_rows,
)
from ..core.units import human_bytes  # noqa: F401 - re-exported: the memory report's unit
from ..core.words import QT_TRANSLATE_NOOP

if TYPE_CHECKING:
    from ..caches.base import Cache

# bytes per parameter, as in the seed's table (FP32 … INT2)
WEIGHT_DTYPE_BYTES = {"fp32": 4.0, "fp16": 2.0, "bf16": 2.0, "int8": 1.0, "int4": 0.5, "int2": 0.25}


def mla_cache_bytes(layers: int, latent: int, rope_dim: int, tokens: int, batch: int = 1, bits: float = 16) -> int:
    """Bytes of a latent-attention (MLA, DeepSeek-V2/V3) cache: per token and layer one latent of ``latent``
    values and one RoPE key of ``rope_dim`` shared by every head — ``L · (r + d_R) · n · batch · bits/8`` (no
    factor 2: the latent stands for both K and V)."""
    for name, value in (("layers", layers), ("latent", latent), ("rope_dim", rope_dim), ("batch", batch)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise MemoryInputError(f"{name} must be a positive integer, got {value!r}")
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
        raise MemoryInputError(f"context must be ≥ 0 tokens, got {tokens!r}")
    return math.ceil(layers * (latent + rope_dim) * tokens * batch * bits / 8)


def model_facts(cfg: Any) -> dict[str, Any]:
    """The facts of a model's shape ``lane_bill`` takes beside the layers, heads and width (a ``ModelConfig``): an
    mla model's latent, a sparse-attention model's indexer, a hybrid's recurrent layers, the layers that own K/V."""
    facts: dict[str, Any] = {}
    if cfg.latent:
        facts["latent"] = (cfg.kv_lora_rank, cfg.qk_rope_head_dim)
    if cfg.family == "deepseek_v32":
        facts["indexer"] = (cfg.index_head_dim, cfg.index_topk)
    if len(cfg.kv_layers) != cfg.n_layers:  # a hybrid's attention layers / a CLA model's owners hold the rows
        facts["kv_layers"] = len(cfg.kv_layers)
    if cfg.linear_layers:  # a hybrid's others a state each
        facts["recurrent"] = (len(cfg.linear_layers), *cfg.recurrent_state_values())
    return facts


def sparse_read_bytes(cfg: Any, rows_read: int, tokens: int, elem_bits: int) -> tuple[int, int]:
    """(bytes held, bytes read) by one decode step of a sparse-attention model (deepseek_v32) whose layers hold
    ``tokens`` rows: held L · (r + d_R + d_I) · n; read, every indexer key and ``rows_read`` latents a layer —
    L · (d_I · n + (r + d_R) · rows_read). At a decode step rows_read = min(index_topk, n)."""
    r, dr, di, layers = cfg.kv_lora_rank, cfg.qk_rope_head_dim, cfg.index_head_dim, cfg.n_layers
    held = layers * (r + dr + di) * tokens * elem_bits // 8
    read = layers * (di * tokens + (r + dr) * rows_read) * elem_bits // 8
    return held, read


def weight_bytes(n_params: int, dtype: str) -> float:
    if dtype not in WEIGHT_DTYPE_BYTES:
        raise MemoryInputError(f"unknown weight precision {dtype!r} (known: {', '.join(WEIGHT_DTYPE_BYTES)})")
    return n_params * WEIGHT_DTYPE_BYTES[dtype]


def read_hf_config(path: str) -> dict:
    """A config.json's contents, read safely: a FIFO or device (which would block the read forever),
    a huge file, bad UTF-8 or JSON, or JSON that is not an object are one ``MemoryInputError`` line."""
    import json
    import os
    import stat

    try:
        info = os.stat(path)
    except (OSError, ValueError) as exc:
        raise MemoryInputError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        raise MemoryInputError(f"{path} is not a regular file (a config.json is)")
    if info.st_size > 4_000_000:
        raise MemoryInputError(f"{path} is {info.st_size:,} bytes: not a config.json")
    try:
        with open(path, encoding="utf-8") as fh:
            config = json.load(fh)
    except OSError as exc:
        raise MemoryInputError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (ValueError, RecursionError) as exc:  # bad JSON or UTF-8, a 5,000-digit number, deep nesting
        raise MemoryInputError(f"{path} is not valid JSON ({type(exc).__name__})") from None
    if not isinstance(config, dict):
        raise MemoryInputError(f"{path} is not a config.json (expected a JSON object)")
    return config


# ------------------------------------------------------------------------------- bounds of a report
#: the largest figures a memory report computes (far past any real model: the largest have ~10^2 layers,
#: ~10^2 K/V heads, head dims of ~10^3 and contexts of ~10^7). A per-layer table is built for the layers,
#: so an absurd count would cost minutes and gigabytes before it answered.
SHAPE_LIMITS = {
    "layers": 100_000,
    "kv_heads": 100_000,
    "head_dim": 1_000_000,
    "context": 10**15,
    "batch": 10**9,
    "window": 10**15,
}


def check_shape(**figures: int | None) -> None:
    """``MemoryInputError`` naming the first figure past its ``SHAPE_LIMITS`` bound (None: not given)."""
    for name, value in figures.items():
        limit = SHAPE_LIMITS[name]
        if value is not None and value > limit:
            text = str(value) if len(str(value)) <= 20 else f"{str(value)[:12]}… ({len(str(value))} digits)"
            flag = "--" + name.replace("_", "-")
            raise MemoryInputError(f"{flag} {text} is more than a memory report computes (at most {limit:,})")


# ------------------------------------------------------------------------------- per-layer windows
def parse_layer_windows(text: str) -> tuple[int | None, ...]:
    """``"4096, full"`` → ``(4096, None)``: one entry per layer, a window in tokens or ``full``
    (``none``, ``-`` and ``global`` too). A list shorter than the layers repeats (see ``repeat_pattern``)."""
    out: list[int | None] = []
    for part in text.replace(";", ",").split(","):
        word = part.strip().lower()
        if not word:
            continue
        if word in ("full", "none", "-", "global", "g"):
            out.append(None)
        elif word.isascii() and word.isdigit() and len(word) <= 9 and int(word) > 0:
            out.append(int(word))
        else:
            raise MemoryInputError(f"a layer's window is a positive number of tokens or 'full', got {part.strip()!r}")
    if not out:
        raise MemoryInputError("no layer windows given (e.g. '4096, full' for Gemma 2's alternation)")
    return tuple(out)


def pattern_of(windows: tuple[int | None, ...]) -> tuple[int | None, ...]:
    """The shortest run that repeats to make ``windows``: Gemma 2's (4096, None), Mistral's (4096,)."""
    for p in range(1, len(windows) + 1):
        if all(windows[i] == windows[i % p] for i in range(len(windows))):
            return windows[:p]
    return windows


def repeat_pattern(windows: tuple[int | None, ...], layers: int) -> tuple[int | None, ...]:
    """``windows``' repeating pattern laid over ``layers`` layers (a model cut or grown keeps its kind)."""
    pattern = pattern_of(windows)
    return tuple(pattern[i % len(pattern)] for i in range(layers))


def format_layer_windows(windows: tuple[int | None, ...] | None) -> str:
    """The pattern as ``parse_layer_windows`` reads it: ``"512, 512, 512, 512, 512, full"``."""
    if not windows:
        return ""
    return ", ".join("full" if w is None else str(w) for w in pattern_of(windows))


def formula_rows_text(layers: int, window: int | None, layer_windows: tuple[int | None, ...] | None) -> str:
    """The rows term of the formula in words: ``"15 layers × min(n, 512) + 3 layers × n"``."""
    if layer_windows:
        windows = [w if window is None else (window if w is None else min(w, window)) for w in layer_windows]
        counts = {w: windows.count(w) for w in dict.fromkeys(windows)}  # window → layers, first-seen order
    else:
        counts = {window: layers}
    return " + ".join(f"{c} layers × {'n' if w is None else f'min(n, {w})'}" for w, c in counts.items())


# ------------------------------------------------------------------------------- kvsim's own lanes
AHEAD = QT_TRANSLATE_NOOP("policies", "{n} drafted tokens the model accepted ahead of the text are held too (+{extra:,} B)")


def lane_bill(
    lane: dict,
    layers: int,
    kv_heads: int,
    head_dim: int,
    tokens: int,
    new_tokens: int,
    dtype: str = "float32",
    held_tokens: int | None = None,
    *,
    prompt_tokens: int | None = None,
    layer_windows: tuple[int | None, ...] | None = None,
    latent: tuple[int, int] | None = None,
    kv_layers: int | None = None,
    recurrent: tuple[int, int, int] | None = None,
    indexer: tuple[int, int] | None = None,
) -> LaneBill | None:
    """The formula for one lane of a kvsim run (``lane``: its entry in a trace's ``meta["lanes"]``) after a
    step that fed ``new_tokens`` and left ``tokens`` positions in the sequence: the lane's policy, found in
    the registry by the name the run recorded, says it (``Cache.bill``). None when the policy has no closed
    form (or is not installed); a lane that reuses nothing holds nothing whatever its policy.
    ``held_tokens``: the rows the lane reported holding; a lane that holds rows ahead of the text (a
    speculative lane's accepted drafts) is billed for them too, by its own formula.
    ``prompt_tokens`` (the prompt's length) and ``layer_windows`` (the model's own window of each layer, None =
    global) are facts of the run, handed as one ``context`` mapping to every policy whose ``bill`` takes one
    (``kv`` honours the windows, ``snapkv`` needs the prompt's length); a fact not given is absent.
    ``kv_layers``: the layers that hold K/V rows when not all do (``ModelConfig.kv_layers``: a hybrid model's
    attention layers, a CLA model's owners); ``recurrent``: a hybrid model's (recurrent layers, conv values,
    recurrent values) a layer (``ModelConfig.recurrent_state_values``), whose states a policy that holds them
    adds (``kvsim.caches.state``); ``indexer``: a sparse-attention model's (index_head_dim, index_topk)
    (deepseek_v32: each token's indexer key is held beside its latent, ``sparse_bill``)."""
    from ..caches.registry import policy_class  # the policies import torch: only when a run is there

    elem_bits = DTYPE_BITS.get(dtype, 32)
    cls = policy_class(str(lane.get("policy", lane.get("name", ""))))
    options = dict(lane.get("options") or {})
    shape = KVShape(layers if kv_layers is None else kv_layers, kv_heads, head_dim)
    # latent: an mla model's (kv_lora_rank, qk_rope_head_dim): kv holds L · (r + d_R) values a token
    facts = {"prompt_tokens": prompt_tokens, "layer_windows": layer_windows, "latent": latent, "indexer": indexer}
    context = {k: v for k, v in facts.items() if v is not None}
    bill = _bill(cls, options, shape, tokens, new_tokens, elem_bits, context) if cls is not None else None
    if bill is None and not lane.get("reuses_past", True):
        return nothing_held(elem_bits)
    if bill is not None and cls is not None and recurrent is not None and cls.holds_state and lane.get("reuses_past", True):
        from ..caches.state import state_bytes, with_states

        n_rec, conv, rec = recurrent
        return with_states(bill, state_bytes(conv, rec, n_rec, elem_bits), n_rec, shape.layers)
    ahead = max(0, held_tokens - tokens) if held_tokens is not None else 0
    if bill is not None and cls is not None and ahead and lane.get("reuses_past", True):
        with_ahead = _bill(cls, options, shape, tokens + ahead, new_tokens + ahead, elem_bits, context)
        if with_ahead is not None:
            extra = with_ahead.expected_bytes - bill.expected_bytes
            return LaneBill.explained(
                bill.formula_bytes, with_ahead.expected_bytes, bill.bits, bill.window, AHEAD, {"n": ahead, "extra": extra}
            )
    return bill


def _bill(
    cls: type[Cache],
    options: dict[str, Any],
    shape: KVShape,
    tokens: int,
    new_tokens: int,
    elem_bits: int,
    context: dict[str, Any],
) -> LaneBill | None:
    """``cls.bill``, with the run's ``context`` when that bill takes one (a plug-in's may not)."""
    if "context" in inspect.signature(cls.bill).parameters:
        return cls.bill(options, shape, tokens, new_tokens, elem_bits, context=context)  # type: ignore[call-arg]
    return cls.bill(options, shape, tokens, new_tokens, elem_bits)


def describe_windows(layers: int, window: int | None, layer_windows: tuple[int | None, ...] | None) -> str | None:
    """The windows in words ("every layer keeps at most 4,096 tokens"), None when every layer keeps all."""
    if layer_windows:
        windows = [w if window is None else (window if w is None else min(w, window)) for w in layer_windows]
    elif window is not None:
        windows = [window] * layers
    else:
        return None
    if all(w is None for w in windows):
        return None
    counts = {w: windows.count(w) for w in dict.fromkeys(windows)}
    if len(counts) == 1:
        return f"every layer keeps at most {windows[0]:,} tokens"
    keep = {w: "keep every token" if w is None else f"keep at most {w:,} tokens" for w in counts}
    return ", ".join(f"{c} of {layers} layers {keep[w]}" for w, c in counts.items())
