"""The closed forms of what a KV cache holds: bytes of K and V for a shape, a window, a precision.

    kv bytes = 2 (K and V) · Σ_layers min(n, window_l) · H_kv · d_head · batch · bits/8

Pure arithmetic (no torch): the cache policies (``kvsim.caches``, each one's ``bill``) and the cost
models (``kvsim.costs.memory``, which re-exports these) both use them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .words import QT_TRANSLATE_NOOP


class MemoryInputError(ValueError):
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
            raise MemoryInputError(f"{name} must be an integer, got {value!r}")
    for name, value in (("layers", layers), ("kv_heads", kv_heads), ("head_dim", head_dim), ("batch", batch)):
        if value <= 0:
            raise MemoryInputError(f"{name} must be positive, got {value}")
    if tokens < 0:
        raise MemoryInputError(f"context must be ≥ 0 tokens, got {tokens}")
    if isinstance(bits, bool) or not isinstance(bits, int | float) or not math.isfinite(bits) or bits <= 0:
        raise MemoryInputError(f"bits must be a positive number, got {bits!r}")
    if window is not None and (isinstance(window, bool) or not isinstance(window, int) or window <= 0):
        raise MemoryInputError(f"window must be a positive integer, got {window!r}")
    if layer_windows is None:
        rows = layers * (tokens if window is None else min(tokens, window))  # no per-layer tuple: layers may be huge
    else:
        if len(layer_windows) != layers:
            raise MemoryInputError(f"layer_windows has {len(layer_windows)} entries for {layers} layers")
        if any(w is not None and (isinstance(w, bool) or not isinstance(w, int) or w <= 0) for w in layer_windows):
            raise MemoryInputError("every layer's window must be a positive integer (or none)")
        if window is not None:  # an explicit window caps every layer, local or not
            layer_windows = tuple(window if w is None else min(w, window) for w in layer_windows)
        rows = sum(tokens if w is None else min(tokens, w) for w in layer_windows)
    elements = 2 * rows * kv_heads * head_dim * batch
    if isinstance(bits, int):
        return -(-(elements * bits) // 8)  # ceil: int4 packs two per byte
    return math.ceil(elements * bits / 8)


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


class KVShape(NamedTuple):
    """What sizes one token's K/V row in one layer: the layers, the K/V heads and the head dimension."""

    layers: int
    kv_heads: int
    head_dim: int


@dataclass(frozen=True)
class LaneBill:
    """What the formula says a lane of a run holds, and why that may differ from the seed formula."""

    formula_bytes: int  # 2·L·H_kv·d·min(n, W)·b·bits/8 with the lane's window and bits
    expected_bytes: int  # what the lane should hold, overhead included (= formula_bytes when none)
    bits: int
    window: int | None
    why: str  # plain words on the difference ("" when there is none), in English
    why_template: str = ""  # ``why`` as a template marked for translation (context "policies")…
    why_values: dict[str, Any] = field(default_factory=dict)  # …and what fills it

    @classmethod
    def explained(
        cls, formula_bytes: int, expected_bytes: int, bits: int, window: int | None, template: str, values: dict[str, Any]
    ) -> LaneBill:
        """A bill whose ``why`` is ``template`` filled with ``values`` (the app translates the template)."""
        return cls(formula_bytes, expected_bytes, bits, window, template.format(**values), template, dict(values))


NOTHING_HELD = QT_TRANSLATE_NOOP("policies", "recomputes the whole prefix every step: holds nothing between steps")


def nothing_held(elem_bits: int) -> LaneBill:
    """The bill of a lane that keeps nothing between steps (it recomputes the prefix)."""
    return LaneBill.explained(0, 0, elem_bits, None, NOTHING_HELD, {})
