"""Memory: the KV-cache formula and weight bytes by precision (the presets of real models: ``presets``).

    kv bytes = 2 (K and V) · Σ_layers min(n, window_l) · H_kv · d_head · batch · bits/8

The KV head count (not the query head count) sizes the cache: that is what GQA/MQA save.
"""

from __future__ import annotations

from ..core.formulas import (  # noqa: F401 - re-exported: the closed forms live in core, where the caches use them
    DTYPE_BITS,
    QUANT_DEFAULTS,
    KVShape,
    LaneBill,
    MemoryError_,
    kv_cache_bytes,
    nothing_held,
    quantized_kv_cache_bytes,
    quantized_rows,
)
from ..core.units import human_bytes  # noqa: F401 - re-exported: the memory report's unit

# bytes per parameter, as in the seed's table (FP32 … INT2)
WEIGHT_DTYPE_BYTES = {"fp32": 4.0, "fp16": 2.0, "bf16": 2.0, "int8": 1.0, "int4": 0.5, "int2": 0.25}


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
def lane_bill(
    lane: dict, layers: int, kv_heads: int, head_dim: int, tokens: int, new_tokens: int, dtype: str = "float32"
) -> LaneBill | None:
    """The formula for one lane of a kvsim run (``lane``: its entry in a trace's ``meta["lanes"]``) after a
    step that fed ``new_tokens`` and left ``tokens`` positions in the sequence: the lane's policy, found in
    the registry by the name the run recorded, says it (``Cache.bill``). None when the policy has no closed
    form (or is not installed); a lane that reuses nothing holds nothing whatever its policy."""
    from ..caches.registry import policy_class  # the policies import torch: only when a run is there

    elem_bits = DTYPE_BITS.get(dtype, 32)
    cls = policy_class(str(lane.get("policy", lane.get("name", ""))))
    options = dict(lane.get("options") or {})
    bill = cls.bill(options, KVShape(layers, kv_heads, head_dim), tokens, new_tokens, elem_bits) if cls is not None else None
    if bill is None and not lane.get("reuses_past", True):
        return nothing_held(elem_bits)
    return bill


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
