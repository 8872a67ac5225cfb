"""Memory: the KV-cache formula and weight bytes by precision (the presets of real models: ``presets``).

    kv bytes = 2 (K and V) · Σ_layers min(n, window_l) · H_kv · d_head · batch · bits/8

The KV head count (not the query head count) sizes the cache: that is what GQA/MQA save.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..core.units import human_bytes  # noqa: F401 - re-exported: the memory report's unit

# bytes per parameter, as in the seed's table (FP32 … INT2)
WEIGHT_DTYPE_BYTES = {"fp32": 4.0, "fp16": 2.0, "bf16": 2.0, "int8": 1.0, "int4": 0.5, "int2": 0.25}


class MemoryError_(ValueError):
    """Bad memory-calculator input (negative sizes, unknown preset)."""


def kv_cache_bytes(
    layers: int,
    kv_heads: int,
    head_dim: int,
    tokens: int,
    batch: int = 1,
    bits: float = 16,
    window: int | None = None,
    layer_windows: tuple[int | None, ...] | None = None,
) -> int:
    """Bytes of K and V held for ``tokens`` positions. ``layer_windows`` (one entry per layer,
    ``None`` = full attention) models alternating local/global layers such as Gemma 2's."""
    for name, value in (
        ("layers", layers),
        ("kv_heads", kv_heads),
        ("head_dim", head_dim),
        ("batch", batch),
        ("context", tokens),
    ):
        if isinstance(value, bool) or not isinstance(value, int):
            raise MemoryError_(f"{name} must be an integer, got {value!r}")
    for name, value in (("layers", layers), ("kv_heads", kv_heads), ("head_dim", head_dim), ("batch", batch)):
        if value <= 0:
            raise MemoryError_(f"{name} must be positive, got {value}")
    if tokens < 0:
        raise MemoryError_(f"context must be ≥ 0 tokens, got {tokens}")
    if isinstance(bits, bool) or not isinstance(bits, int | float) or not math.isfinite(bits) or bits <= 0:
        raise MemoryError_(f"bits must be a positive number, got {bits!r}")
    if window is not None and (isinstance(window, bool) or not isinstance(window, int) or window <= 0):
        raise MemoryError_(f"window must be a positive integer, got {window!r}")
    if layer_windows is None:
        rows = layers * (tokens if window is None else min(tokens, window))  # no per-layer tuple: layers may be huge
    else:
        if len(layer_windows) != layers:
            raise MemoryError_(f"layer_windows has {len(layer_windows)} entries for {layers} layers")
        if any(w is not None and (isinstance(w, bool) or not isinstance(w, int) or w <= 0) for w in layer_windows):
            raise MemoryError_("every layer's window must be a positive integer (or none)")
        if window is not None:  # an explicit window caps every layer, local or not
            layer_windows = tuple(window if w is None else min(w, window) for w in layer_windows)
        rows = sum(tokens if w is None else min(tokens, w) for w in layer_windows)
    elements = 2 * rows * kv_heads * head_dim * batch
    if isinstance(bits, int):
        return -(-(elements * bits) // 8)  # ceil: int4 packs two per byte
    return math.ceil(elements * bits / 8)


def weight_bytes(n_params: int, dtype: str) -> float:
    if dtype not in WEIGHT_DTYPE_BYTES:
        raise MemoryError_(f"unknown weight precision {dtype!r} (known: {', '.join(WEIGHT_DTYPE_BYTES)})")
    return n_params * WEIGHT_DTYPE_BYTES[dtype]


def read_hf_config(path: str) -> dict:
    """A config.json's contents, read safely: a FIFO or device (which would block the read forever),
    a huge file, bad UTF-8 or JSON, or JSON that is not an object are one ``MemoryError_`` line."""
    import json
    import os
    import stat

    try:
        info = os.stat(path)
    except (OSError, ValueError) as exc:
        raise MemoryError_(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        raise MemoryError_(f"{path} is not a regular file (a config.json is)")
    if info.st_size > 4_000_000:
        raise MemoryError_(f"{path} is {info.st_size:,} bytes: not a config.json")
    try:
        with open(path, encoding="utf-8") as fh:
            config = json.load(fh)
    except OSError as exc:
        raise MemoryError_(f"cannot read {path}: {exc.strerror or exc}") from None
    except (ValueError, RecursionError) as exc:  # bad JSON or UTF-8, a 5,000-digit number, deep nesting
        raise MemoryError_(f"{path} is not valid JSON ({type(exc).__name__})") from None
    if not isinstance(config, dict):
        raise MemoryError_(f"{path} is not a config.json (expected a JSON object)")
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
    """``MemoryError_`` naming the first figure past its ``SHAPE_LIMITS`` bound (None: not given)."""
    for name, value in figures.items():
        limit = SHAPE_LIMITS[name]
        if value is not None and value > limit:
            text = str(value) if len(str(value)) <= 20 else f"{str(value)[:12]}… ({len(str(value))} digits)"
            flag = "--" + name.replace("_", "-")
            raise MemoryError_(f"{flag} {text} is more than a memory report computes (at most {limit:,})")


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
            raise MemoryError_(f"a layer's window is a positive number of tokens or 'full', got {part.strip()!r}")
    if not out:
        raise MemoryError_("no layer windows given (e.g. '4096, full' for Gemma 2's alternation)")
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
#: the defaults of kvsim's int8/int4 caches (kvsim/caches/quantized.py; a test holds them equal)
QUANT_DEFAULTS = {"group": 32, "residual": 32}
DTYPE_BITS = {"float64": 64, "float32": 32, "float16": 16, "bfloat16": 16}


def quantized_rows(tokens_before: int, group: int, residual: int) -> int:
    """Rows a KIVI-style cache has quantized once it held ``tokens_before`` tokens before the last step:
    whole groups of ``group`` beyond the newest ``residual`` (a group is quantized at the start of the
    step after the one that completed it, so the step that fills it still reads it exactly)."""
    return group * (max(0, tokens_before - residual) // group)


def quantized_kv_cache_bytes(
    layers: int,
    kv_heads: int,
    head_dim: int,
    tokens: int,
    quantized: int,
    bits: int,
    group: int,
    elem_bytes: int,
    batch: int = 1,
) -> tuple[int, int]:
    """(payload, overhead) of kvsim's int8/int4 cache holding ``tokens`` tokens, ``quantized`` of them as
    codes: codes (``bits`` each, int4 two to a byte) + the full-precision residual; overhead = the keys'
    scale and zero point per channel per group of tokens, the values' per token per ``gcd(group, d)`` channels."""
    code_row = -(-head_dim * bits // 8)
    per = layers * kv_heads * batch
    payload = per * (2 * quantized * code_row + 2 * (tokens - quantized) * head_dim * elem_bytes)
    v_groups = head_dim // math.gcd(group, head_dim)
    overhead = per * elem_bytes * 2 * ((quantized // group) * head_dim + quantized * v_groups)
    return payload, overhead


@dataclass(frozen=True)
class LaneBill:
    """What the formula says a lane of a run holds, and why that may differ from the seed formula."""

    formula_bytes: int  # 2·L·H_kv·d·min(n, W)·b·bits/8 with the lane's window and bits
    expected_bytes: int  # what the lane should hold, overhead included (= formula_bytes when none)
    bits: int
    window: int | None
    why: str  # plain words on the difference ("" when there is none)


def lane_bill(
    lane: dict, layers: int, kv_heads: int, head_dim: int, tokens: int, new_tokens: int, dtype: str = "float32"
) -> LaneBill | None:
    """The formula for one lane of a kvsim run (``lane``: its entry in a trace's ``meta["lanes"]``) after a
    step that fed ``new_tokens`` and left ``tokens`` positions in the sequence; None for a policy the
    formula does not know (a plug-in)."""
    elem_bits = DTYPE_BITS.get(dtype, 32)
    policy = str(lane.get("policy", lane.get("name", "")))
    options = lane.get("options") or {}
    if not lane.get("reuses_past", True) or policy == "none":
        return LaneBill(0, 0, elem_bits, None, "recomputes the whole prefix every step: holds nothing between steps")
    if policy == "kv":
        b = kv_cache_bytes(layers, kv_heads, head_dim, tokens, 1, elem_bits)
        return LaneBill(b, b, elem_bits, None, "")
    if policy in ("window", "sink+window"):
        window = int(lane.get("window") or options.get("window")) + int(lane.get("sinks") or options.get("sinks") or 0)
        b = kv_cache_bytes(layers, kv_heads, head_dim, tokens, 1, elem_bits, window)
        return LaneBill(b, b, elem_bits, window, "")
    if policy in ("int8", "int4"):
        bits = int(policy[3:])
        group = int(options.get("group", QUANT_DEFAULTS["group"]))
        residual = int(options.get("residual", QUANT_DEFAULTS["residual"]))
        q = min(tokens, quantized_rows(tokens - new_tokens, group, residual))
        payload, overhead = quantized_kv_cache_bytes(layers, kv_heads, head_dim, tokens, q, bits, group, elem_bits // 8)
        formula = kv_cache_bytes(layers, kv_heads, head_dim, tokens, 1, bits)
        residual_bytes = kv_cache_bytes(layers, kv_heads, head_dim, tokens - q, 1, elem_bits - bits) if tokens > q else 0
        why = (
            f"{tokens - q} newest tokens are still in full precision ({elem_bits} bits: +{residual_bytes:,} B) and the "
            f"{q} quantized ones carry scales and zero points (+{overhead:,} B)"
        )
        return LaneBill(formula, payload + overhead, bits, None, why)
    return None


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
