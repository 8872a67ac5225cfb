"""``int8`` / ``int4[:gG][:rR]``: a quantized KV cache, KIVI-style (Liu et al. 2024, "KIVI: A Tuning-Free
Asymmetric 2bit Quantization for KV Cache").

What is held, per layer:

* **keys per channel**: every group of G consecutive tokens gets, for each channel, its own minimum
  (the zero point) and step (the scale). Key outliers live in a few channels, so a channel's range
  is narrow over time while a token's range across channels is wide;
* **values per token**: every token gets a zero point and a scale for each group of ``gcd(G, D)``
  channels (values have no channel outliers, and attention mixes them token by token);
* asymmetric ``b``-bit codes: ``code = round((x - zero) / scale)`` in ``0..2^b - 1``,
  ``x̂ = code · scale + zero``, so ``|x - x̂| ≤ scale / 2``. int8 codes are one byte; int4 codes are
  packed two to a byte (the low nibble is the even channel). Scales and zero points are stored in
  the model's dtype (fp32 here on the CPU, fp16 with an fp16 model, as KIVI keeps them);
* the **residual**: the most recent tokens in full precision. When the residual holds a whole group
  of G tokens beyond the last R, that group is quantized (keys need G tokens per channel group, so
  keys and values are both quantized G tokens at a time and a row changes at most once).

When a group is quantized: at the start of the next step's ``update``, i.e. after the step that
completed it has read it in full precision. KIVI and transformers' ``QuantizedCache`` do the same
(the step that fills the residual attends to the original rows and quantizes afterwards), and it keeps
the promise that ``held_rows`` is exactly what this step's attention read.

The quantization arithmetic is written here in torch (a dozen lines): optimum-quanto and HQQ (the
backends of transformers' ``QuantizedCache``) both install from PyPI, but they would be a new
dependency for those lines, quanto's packed int4 layout and HQQ's optimised (half-quadratic) zero
points are not KIVI's min/max grouping, and the lecture needs to see exactly which numbers are held.

Bytes: ``bytes_split()`` is (codes at bits/8 bytes each + residual rows at the model's element size,
scales + zero points); it equals the ``nbytes`` of the tensors in ``stored_tensors()``. Besides them
the simulator keeps the dequantized rows that attention reads (a fused kernel would dequantize on the
fly) and, until the next step begins, the full-precision rows of groups the current step quantized
(so ``truncate`` can undo that step bit for bit); neither is part of what a real cache holds, and
neither is counted.
"""

from __future__ import annotations

import math
import re
from typing import Any

import torch

from ..core.formulas import QUANT_DEFAULTS, KVShape, LaneBill, kv_cache_bytes, quantized_kv_cache_bytes, quantized_rows
from ..core.words import QT_TRANSLATE_NOOP
from .base import Cache, PolicyInfo, PolicyWords, SpecError
from .registry import register_policy

_MAX_GROUP = 4096
_MAX_RESIDUAL = 1 << 20


def pack_codes(codes: torch.Tensor, bits: int) -> torch.Tensor:
    """uint8 codes (…, D) → what is stored: int8 as is, int4 two per byte (…, ceil(D/2))."""
    if bits == 8:
        return codes.to(torch.uint8)
    if codes.shape[-1] % 2:  # an odd head dim: the last byte's high nibble is padding
        codes = torch.nn.functional.pad(codes, (0, 1))
    codes = codes.to(torch.uint8)
    return codes[..., 0::2] | (codes[..., 1::2] << 4)


def unpack_codes(packed: torch.Tensor, bits: int, d: int) -> torch.Tensor:
    """The inverse of ``pack_codes``: (…, D) uint8 codes."""
    if bits == 8:
        return packed
    out = torch.stack((packed & 0x0F, packed >> 4), dim=-1).flatten(-2)
    return out[..., :d]


def _round_down(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``x`` (fp32) in ``dtype``, rounded toward −∞, so a stored zero point is never above the minimum."""
    y = x.to(dtype)
    if dtype == torch.float32:
        return y
    above = y.float() > x
    return torch.where(above, torch.nextafter(y, torch.full_like(y, -math.inf)), y)


def _round_up(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``x`` (fp32) in ``dtype``, rounded toward +∞, so zero + levels·scale still reaches the maximum."""
    y = x.to(dtype)
    if dtype == torch.float32:
        return y
    below = y.float() < x
    return torch.where(below, torch.nextafter(y, torch.full_like(y, math.inf)), y)


def quantize(x: torch.Tensor, dim: int, bits: int, stats_dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Asymmetric min/max quantization of ``x`` with statistics over ``dim`` (kept, size 1).

    Returns (uint8 codes like ``x``, scale, zero) with ``scale``/``zero`` in ``stats_dtype``; the codes
    are computed from the stored (rounded) statistics, so ``|x - dequantize(...)| ≤ scale / 2``.
    """
    levels = (1 << bits) - 1
    xf = x.float()
    zero = _round_down(xf.amin(dim, keepdim=True), stats_dtype)
    scale = _round_up((xf.amax(dim, keepdim=True) - zero.float()) / levels, stats_dtype)
    step = scale.float()
    safe = torch.where(step > 0, step, torch.ones_like(step))  # a constant group: every code is 0
    codes = torch.round((xf - zero.float()) / safe).clamp_(0, levels).to(torch.uint8)
    return codes, scale, zero


def dequantize(codes: torch.Tensor, scale: torch.Tensor, zero: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``code · scale + zero`` in fp32 (two roundings, no fused multiply-add), then in ``dtype``."""
    return (codes.float() * scale.float() + zero.float()).to(dtype)


class _Layer:
    """One layer's held state. Rows [0, q) are quantized, rows [q, n) are the full-precision residual."""

    def __init__(self) -> None:
        self.n = 0
        self.q = 0
        self.rows: torch.Tensor | None = None  # (2, B, H, cap, D): dequantized [0, q) + residual [q, n)
        self.k_codes: torch.Tensor | None = None  # (B, H, q, D or ceil(D/2)) uint8
        self.k_scale: torch.Tensor | None = None  # (B, H, q/G, D): per channel, per group of G tokens
        self.k_zero: torch.Tensor | None = None
        self.v_codes: torch.Tensor | None = None  # (B, H, q, D or ceil(D/2)) uint8
        self.v_scale: torch.Tensor | None = None  # (B, H, q, D/vg): per token, per group of vg channels
        self.v_zero: torch.Tensor | None = None
        # the undo of the last update: (n before it, q before it, the full-precision rows it quantized)
        self.undo: tuple[int, int, torch.Tensor | None] | None = None

    def held(self) -> torch.Tensor:
        """``rows``, allocated by the layer's first update."""
        if self.rows is None:
            raise RuntimeError("nothing is held yet")
        return self.rows

    def codes(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Codes, scales and zero points of K then V (set once a group is quantized, q > 0)."""
        parts = (self.k_codes, self.k_scale, self.k_zero, self.v_codes, self.v_scale, self.v_zero)
        if parts[0] is None or parts[1] is None or parts[2] is None:
            raise RuntimeError("no group is quantized yet")
        if parts[3] is None or parts[4] is None or parts[5] is None:
            raise RuntimeError("no group is quantized yet")
        return parts[0], parts[1], parts[2], parts[3], parts[4], parts[5]


class QuantizedCache(Cache):
    """KIVI-style quantized K/V: see the module's docstring."""

    bits: int = 8

    def __init__(self, n_layers: int, group: int = 32, residual: int = 32) -> None:
        if not 1 <= group <= _MAX_GROUP:
            raise SpecError(f"group size must be 1..{_MAX_GROUP}, got {group}")
        if not 0 <= residual <= _MAX_RESIDUAL:
            raise SpecError(f"residual must be 0..{_MAX_RESIDUAL}, got {residual}")
        self.n_layers = n_layers
        self.group = group
        self.residual = residual
        self.reset()

    # ------------------------------------------------------------------ the spec
    @classmethod
    def parse_options(cls, args: list[list[str]]) -> dict[str, Any]:
        options: dict[str, Any] = {}
        for arg in args[0]:
            key, digits = arg[:1].lower(), arg[1:]
            name = {"g": "group", "r": "residual"}.get(key)
            if name is None or not re.fullmatch(r"[0-9]{1,7}", digits):  # ASCII digits only, as window:W
                raise SpecError(f"{cls.terms[0]} takes gG (group size) and rR (full-precision residual), got {arg!r}")
            if name in options:
                raise SpecError(f"{cls.terms[0]}: {arg[:1]} given twice")
            options[name] = int(digits)
        if options.get("group", 32) < 1 or options.get("group", 32) > _MAX_GROUP:
            raise SpecError(f"group size must be 1..{_MAX_GROUP}")
        if options.get("residual", 0) > _MAX_RESIDUAL:
            raise SpecError(f"residual must be at most {_MAX_RESIDUAL}")
        return options

    @staticmethod
    def _group_residual(options: dict[str, Any]) -> tuple[int, int]:
        """(G, R) of a lane's options, the constructor's defaults where the spec gave none."""
        return int(options.get("group", QUANT_DEFAULTS["group"])), int(options.get("residual", QUANT_DEFAULTS["residual"]))

    @classmethod
    def words(cls, options: dict[str, Any]) -> PolicyWords:
        group, residual = cls._group_residual(options)
        values = {"bits": cls.bits, "group": group, "residual": residual}
        explanation = (
            QT_TRANSLATE_NOOP(
                "policies",
                "keys per channel, values per token, {bits}-bit codes in groups of {group}; "
                "the last {residual} tokens in full precision",
            )
            if values["residual"]
            else QT_TRANSLATE_NOOP(
                "policies",
                "keys per channel, values per token, {bits}-bit codes in groups of {group}; "
                "only an unfinished group in full precision",
            )
        )
        parameters = {
            "G": QT_TRANSLATE_NOOP("policies", "tokens per quantization group"),
            "R": QT_TRANSLATE_NOOP("policies", "newest tokens kept in full precision"),
        }
        return PolicyWords(
            QT_TRANSLATE_NOOP("policies", "INT{bits} cache (g{group}, r{residual})"),
            explanation,
            values,
            parameters,
            short=QT_TRANSLATE_NOOP("policies", "INT{bits} cache, r{residual}"),
        )

    @classmethod
    def bill(cls, options: dict[str, Any], shape: KVShape, tokens: int, new_tokens: int, elem_bits: int) -> LaneBill:
        """The seed formula at ``bits`` per value; the lane holds more: its residual in full precision and the
        quantized groups' scales and zero points (``quantized_kv_cache_bytes``, which ``bytes_split`` equals)."""
        bits = cls.bits
        group, residual = cls._group_residual(options)
        q = min(tokens, quantized_rows(tokens - new_tokens, group, residual))
        payload, overhead = quantized_kv_cache_bytes(*shape, tokens, q, bits, group, elem_bits // 8)
        formula = kv_cache_bytes(*shape, tokens, 1, bits)
        residual_bytes = kv_cache_bytes(*shape, tokens - q, 1, elem_bits - bits) if tokens > q else 0
        why = QT_TRANSLATE_NOOP(
            "policies",
            "{newest} newest tokens are still in full precision ({bits} bits: +{residual:,} B) and the "
            "{quantized} quantized ones carry scales and zero points (+{overhead:,} B)",
        )
        return LaneBill.explained(
            formula,
            payload + overhead,
            bits,
            None,
            why,
            {"newest": tokens - q, "bits": elem_bits, "residual": residual_bytes, "quantized": q, "overhead": overhead},
        )

    def describe(self) -> PolicyInfo:
        g, r = self.group, self.residual
        words = self.words({"group": g, "residual": r})
        return PolicyInfo.from_words(f"int{self.bits}:g{g}:r{r}", words, reuses_past=True, lossy=True, evicts=False)

    # ------------------------------------------------------------------ the interface
    def reset(self) -> None:
        self._layers = [_Layer() for _ in range(self.n_layers)]
        self._arange: torch.Tensor | None = None
        self._written_from = 0  # the lowest slot written since take_rewritten_from last looked

    def take_rewritten_from(self) -> int:
        """A step writes from its first newly quantized group (its rows become their dequantized values) or, with
        none, from its appended rows; a cut writes from the groups it gives back."""
        low = self._written_from
        self._written_from = min(st.n for st in self._layers)
        return low

    def update(
        self, layer: int, k_new: torch.Tensor, v_new: torch.Tensor, positions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        st = self._layers[layer]
        n_before, q_before, exact = st.n, st.q, []
        self._written_from = min(self._written_from, q_before)  # the groups quantized below, then the appended rows
        # groups the earlier steps completed: quantized now, after those steps read them in full precision
        while st.n - st.q >= self.residual + self.group:
            exact.append(st.held()[:, :, :, st.q : st.q + self.group].clone())  # kept until the next step, to undo
            self._quantize_group(st)
        st.undo = (n_before, q_before, torch.cat(exact, 3) if exact else None)
        # append the new rows to the residual
        t = k_new.shape[2]
        self._ensure_capacity(st, k_new, st.n + t)
        rows = st.held()
        rows[0, :, :, st.n : st.n + t] = k_new
        rows[1, :, :, st.n : st.n + t] = v_new
        st.n += t
        return rows[0, :, :, : st.n], rows[1, :, :, : st.n]

    def key_positions(self, layer: int) -> torch.Tensor:
        n, rows = self._layers[layer].n, self._layers[layer].rows
        device = rows.device if rows is not None else None
        if self._arange is None or self._arange.numel() < n or self._arange.device != device:
            self._arange = torch.arange(max(64, 2 * n), device=device)
        return self._arange[:n]

    def held_rows(self, layer: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        st = self._layers[layer]
        if st.rows is None:
            raise RuntimeError("nothing is held yet")
        return st.rows[0, :, :, : st.n], st.rows[1, :, :, : st.n], self.key_positions(layer)

    def truncate(self, n_tokens: int) -> None:
        for st in self._layers:
            if st.n <= n_tokens:
                continue
            # the undo writes exact rows back from its step's first group, a deeper cut from the group it cuts
            low = min(st.undo[1] if st.undo is not None else st.q, n_tokens - n_tokens % self.group, n_tokens)
            self._written_from = min(self._written_from, low)
            if st.undo is not None:
                # undo the last update (a step that did not complete): its quantized groups back to their exact rows
                _, q_before, exact = st.undo
                if exact is not None:
                    st.held()[:, :, :, q_before : st.q] = exact
                self._keep_groups(st, q_before)
            if n_tokens < st.q:
                # deeper than one step: whole groups below n_tokens stay; the rows of a cut group stay
                # as their dequantized values, now held in full precision (attention reads the same numbers)
                self._keep_groups(st, n_tokens - n_tokens % self.group)
            st.n = n_tokens
            st.undo = None

    @property
    def n_tokens(self) -> int:
        return self._layers[0].n

    def stored_tensors(self) -> list[torch.Tensor]:
        """Every tensor a real implementation holds: codes, scales, zero points, the residual rows."""
        out = []
        for st in self._layers:
            if st.rows is None:
                continue
            out += [st.rows[:, :, :, st.q : st.n]]
            if st.q:
                out += st.codes()
        return out

    def bytes_split(self) -> tuple[int, int]:
        payload = overhead = 0
        for st in self._layers:
            if st.rows is None:
                continue
            payload += st.rows[:, :, :, st.q : st.n].nbytes
            if st.q:
                k_codes, k_scale, k_zero, v_codes, v_scale, v_zero = st.codes()
                payload += k_codes.nbytes + v_codes.nbytes
                overhead += k_scale.nbytes + k_zero.nbytes + v_scale.nbytes + v_zero.nbytes
        return payload, overhead

    # ------------------------------------------------------------------ inside
    def _ensure_capacity(self, st: _Layer, like: torch.Tensor, needed: int) -> None:
        if st.rows is not None and st.rows.shape[3] >= needed:
            return
        cap = max(64, needed, 2 * (st.rows.shape[3] if st.rows is not None else 0))
        b, h, _, d = like.shape
        rows = like.new_empty((2, b, h, cap, d))
        if st.rows is not None and st.n:
            rows[:, :, :, : st.n] = st.rows[:, :, :, : st.n]
        st.rows = rows

    def _quantize_group(self, st: _Layer) -> None:
        """Quantize rows [q, q+G) of the residual; what attention reads becomes their dequantized values."""
        g, bits, a, z = self.group, self.bits, st.q, st.q + self.group
        rows = st.held()
        k, v = rows[0, :, :, a:z], rows[1, :, :, a:z]  # (B, H, G, D)
        stats = k.dtype if k.dtype in (torch.float16, torch.bfloat16) else torch.float32
        # keys: statistics over the G tokens (dim 2), one per channel
        k_codes, k_scale, k_zero = quantize(k, 2, bits, stats)
        # values: statistics over groups of vg channels within each token
        b, h, _, d = v.shape
        vg = math.gcd(g, d)
        v_codes, v_scale, v_zero = quantize(v.reshape(b, h, g, d // vg, vg), 4, bits, stats)
        v_codes = v_codes.reshape(b, h, g, d)
        v_scale, v_zero = v_scale.squeeze(4), v_zero.squeeze(4)  # (B, H, G, D/vg)
        k_packed, v_packed = pack_codes(k_codes, bits), pack_codes(v_codes, bits)
        cat = lambda old, new: new if old is None else torch.cat([old, new], 2)  # noqa: E731
        st.k_codes, st.k_scale, st.k_zero = cat(st.k_codes, k_packed), cat(st.k_scale, k_scale), cat(st.k_zero, k_zero)
        st.v_codes, st.v_scale, st.v_zero = cat(st.v_codes, v_packed), cat(st.v_scale, v_scale), cat(st.v_zero, v_zero)
        # attention reads what the stored codes say, so dequantize from them (the packing included)
        k_hat = dequantize(unpack_codes(k_packed, bits, d), k_scale, k_zero, k.dtype)
        v_hat = dequantize(
            unpack_codes(v_packed, bits, d).reshape(b, h, g, d // vg, vg), v_scale[..., None], v_zero[..., None], v.dtype
        ).reshape(b, h, g, d)
        rows[0, :, :, a:z], rows[1, :, :, a:z] = k_hat, v_hat
        st.q = z

    def _keep_groups(self, st: _Layer, q: int) -> None:
        """Forget the quantized groups at and beyond row ``q`` (a multiple of G)."""
        groups = q // self.group
        if q == 0:
            st.k_codes = st.k_scale = st.k_zero = st.v_codes = st.v_scale = st.v_zero = None
        elif q < st.q:
            k_codes, k_scale, k_zero, v_codes, v_scale, v_zero = st.codes()
            st.k_codes, st.v_codes = k_codes[:, :, :q].clone(), v_codes[:, :, :q].clone()
            st.k_scale, st.k_zero = k_scale[:, :, :groups].clone(), k_zero[:, :, :groups].clone()
            st.v_scale, st.v_zero = v_scale[:, :, :q].clone(), v_zero[:, :, :q].clone()
        st.q = min(st.q, q)


@register_policy
class Int8Cache(QuantizedCache):
    """8-bit codes: 256 levels per group."""

    terms = ("int8",)
    grammar = "int8[:gG][:rR]"
    example = "int8:r8"  # R = 8: rows quantized once 8 + 32 are held
    bits = 8


@register_policy
class Int4Cache(QuantizedCache):
    """4-bit codes, two per byte: 16 levels per group."""

    terms = ("int4",)
    grammar = "int4[:gG][:rR]"
    example = "int4:r8"
    bits = 4
