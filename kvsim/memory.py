"""Memory: the KV-cache formula and weight bytes by precision (the presets of real models: ``presets``).

    kv bytes = 2 (K and V) · Σ_layers min(n, window_l) · H_kv · d_head · batch · bits/8

The KV head count (not the query head count) sizes the cache: that is what GQA/MQA save.
"""

from __future__ import annotations

import math

from .units import human_bytes  # noqa: F401 - re-exported: the memory report's unit

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
