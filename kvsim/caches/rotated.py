"""``int4:hadamard[:gG][:rR]`` (written ``int4:g32:hadamard``): the INT4 cache (``quantized``) with its keys
turned by a Hadamard rotation before they are quantized, as QuaRot (Ashkboos et al. 2024, "QuaRot:
Outlier-Free 4-Bit Inference in Rotated LLMs"), SpinQuant and vLLM's rotated KV caches do.

Keys have a few outlier channels: channels whose values are many times larger than the rest, in every
token. A normalized Hadamard matrix ``H`` (entries ±1/√d, ``H Hᵀ = I``) mixes every channel into every
other with equal weight, so after ``k ↦ k H`` an outlier's energy is spread over all ``d`` channels and
no channel stands out; the ranges the quantizer must cover become alike, and the 16 levels of int4 are
not spent on one channel's range. Because ``H`` is orthogonal, attention is unchanged:
``q · k = (q H) · (k H)``. A method may therefore either undo the rotation when it reads a key
(``k̂ = k̂_rot Hᵀ``) or fold it into the query (``q H`` against the rotated keys as stored) — the same
scores within rounding; here the rotation is undone where the group is dequantized (this simulator keeps
the rows attention reads dequantized, ``quantized``'s docstring says why), and the tests check that the
folded query gives the same scores.

What is quantized and how is ``int4``'s (KIVI: keys per channel over groups of G tokens, values per
token, asymmetric min/max, the newest R rows in full precision); only the keys are rotated (values have
no channel outliers, and QuaRot's value rotation is folded into the weights, which a cache cannot do).
Where kvsim differs: QuaRot quantizes rotated keys per token; here the rotation is added to KIVI's
per-channel keys so that the one difference from ``int4`` is the rotation (the bytes are the same), which
is what the measurement (``benchmarks/rotated_kv.py``) compares. A head dimension that is not a power of
two is rotated in blocks: the largest power of two that divides it (96 → three blocks of 32).

Bytes: ``int4``'s exactly. ``H`` is fixed, not part of the cache (a fast Walsh–Hadamard transform applies it
without storing it).
"""

from __future__ import annotations

import math
from typing import Any

import torch

from ..core.words import QT_TRANSLATE_NOOP
from .base import PolicyInfo, PolicyWords
from .quantized import Int4Cache, _Layer, dequantize, unpack_codes
from .registry import register_policy


def hadamard(d: int, dtype: torch.dtype = torch.float32, device: torch.device | None = None) -> torch.Tensor:
    """The normalized (d, d) Hadamard matrix, block-diagonal in blocks of the largest power of two dividing ``d``
    (Sylvester's construction: H₂ₙ = [[Hₙ, Hₙ], [Hₙ, −Hₙ]] / √2). Orthogonal and symmetric: H Hᵀ = H H = I."""
    block = d & -d  # the largest power of two dividing d
    h = torch.ones((1, 1), dtype=torch.float64)
    while h.shape[0] < block:
        h = torch.cat([torch.cat([h, h], 1), torch.cat([h, -h], 1)], 0)
    h = h / math.sqrt(block)
    return torch.block_diag(*[h] * (d // block)).to(dtype=dtype, device=device)


@register_policy
class HadamardInt4Cache(Int4Cache):
    """INT4 codes of Hadamard-rotated keys: see the module's docstring."""

    terms = ("int4:hadamard",)
    grammar = "int4:hadamard[:gG][:rR]"
    example = "int4:g32:r8:hadamard"  # R = 8, as int4's example: quantized rows within a short run
    _rotation: torch.Tensor | None = None  # H of the last head dimension seen

    @classmethod
    def words(cls, options: dict[str, Any]) -> PolicyWords:
        group, residual = cls._group_residual(options)
        plain = super().words(options)
        return PolicyWords(
            QT_TRANSLATE_NOOP("policies", "INT{bits} cache, keys rotated (g{group}, r{residual})"),
            QT_TRANSLATE_NOOP(
                "policies",
                "keys turned by a Hadamard rotation before {bits}-bit quantization, which spreads outlier channels "
                "over all; then as INT{bits}: groups of {group}, the last {residual} tokens in full precision",
            ),
            {"bits": cls.bits, "group": group, "residual": residual},
            plain.parameters,
            short=QT_TRANSLATE_NOOP("policies", "INT{bits} rotated"),
        )

    def describe(self) -> PolicyInfo:
        g, r = self.group, self.residual
        words = self.words({"group": g, "residual": r})
        return PolicyInfo.from_words(f"int4:g{g}:r{r}:hadamard", words, reuses_past=True, lossy=True, evicts=False)

    def rotation(self, d: int, device: torch.device) -> torch.Tensor:
        """H (d, d), float32, as the keys of head dimension ``d`` are turned by it (``k ↦ k H``)."""
        cached = self._rotation
        if cached is None or cached.shape[0] != d or cached.device != device:
            cached = self._rotation = hadamard(d, device=device)
        return cached

    def rotated_keys(self, layer: int) -> torch.Tensor:
        """The quantized keys of ``layer`` as stored, dequantized but not turned back: (B, H_kv, q, D), float32 —
        what a method that folds the rotation into the query multiplies ``q H`` by."""
        st = self._layers[layer]
        k_codes, k_scale, k_zero, *_ = st.codes()
        d = st.held().shape[-1]
        b, h, q, _ = k_codes.shape
        codes = unpack_codes(k_codes, self.bits, d).view(b, h, q // self.group, self.group, d)
        return dequantize(codes, k_scale[:, :, :, None], k_zero[:, :, :, None], torch.float32).view(b, h, q, d)

    def _quantize_group(self, st: _Layer) -> None:
        """``int4``'s, on keys turned by H; the dequantized keys turned back (Hᵀ = H) for attention to read."""
        a, z = st.q, st.q + self.group
        rows = st.held()
        keys = rows[0, :, :, a:z]
        h = self.rotation(keys.shape[-1], keys.device)
        rows[0, :, :, a:z] = (keys.float() @ h).to(keys.dtype)
        super()._quantize_group(st)
        rows[0, :, :, a:z] = (rows[0, :, :, a:z].float() @ h.T).to(keys.dtype)
