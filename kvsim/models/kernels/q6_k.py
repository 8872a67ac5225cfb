"""llama.cpp's Q6_K blocks of a weight matrix, as ``quantize_row_q6_K_ref`` (ggml-quants.c) writes them.

``llama-quantize`` gives the output matrix — and the token embedding of a tied model, the same matrix — Q6_K when
it quantizes the rest to 4 bits or fewer (``llama_tensor_get_type_impl`` in src/llama-quant.cpp: "else if
(new_type != GGML_TYPE_Q8_0) new_type = GGML_TYPE_Q6_K"), provided its rows split into super-blocks of 256
(``tensor_type_fallback``: a Q6_K tensor whose rows do not falls back to Q8_0). gguf-py (``gguf.quants``) can
dequantize Q6_K but not quantize it, so this is a numpy port of the reference, vectorised over the sub-blocks:

A super-block of 256 weights: 16 sub-blocks of 16. Per sub-block, ``make_qx_quants(16, 32, x, L, 1, NULL)``: the
weight ``max`` of largest magnitude sets ``iscale = −32 / max``, codes ``l = nearest_int(iscale · x)`` clamped to
[−32, 31], and the scale ``Σ w·x·l / Σ w·l²`` with ``w = x²``; then 18 other ``iscale = −(32 + 0.1·k) / max``
(k = ±1…±9) are tried and the one whose ``(Σ w·x·l)² / Σ w·l²`` is largest (strictly) kept. Over the 16 scales, the
one of largest magnitude sets ``iscale = −128 / max_scale``; ``d = fp16(1 / iscale)``; the 16 int8 scales are
``min(127, nearest_int(iscale · scale))``; each weight's code is re-rounded against ``d · scale_j``
(``nearest_int(x / (d · scale_j))`` clamped to [−32, 31], + 32); a sub-block whose ``d · scale_j`` is 0 keeps its codes
from make_qx_quants. Bytes (210 per 256): ``ql`` (128: low nibbles), ``qh`` (64: high 2-bit pairs), 16 int8 scales,
fp16 ``d``; in ``ql``/``qh`` each 128 weights are four runs of 32 (runs 0 and 2 share ``ql[l]``'s low and high
nibble, runs 1 and 3 ``ql[l + 32]``; ``qh[l]`` holds the four runs' top two bits at shifts 0, 2, 4, 6).

``nearest_int`` is round half to even (the C code adds 1.5·2²³ in float32); every product and sum is float32 in
the reference's order, though a C compiler may fuse multiply-adds where numpy does not, so a weight can differ from
a llama.cpp binary's in the last code on an exact tie. The test round-trips the bytes through gguf-py's own
``dequantize`` (tests/engine/models/test_q6_k.py).
"""

from __future__ import annotations

import numpy as np

QK_K = 256
Q6_K_BYTES = 210  # per 256 weights: 6.5625 bits a weight
GROUP_MAX_EPS = np.float32(1e-15)
_ROWS_PER_CHUNK = 4096  # super-blocks quantized at once (bounds the temporaries: ~20 MB of float32 per chunk)


def _nearest_int(v: np.ndarray) -> np.ndarray:
    return np.rint(v).astype(np.int32)  # round half to even, as the reference's float32 magic-number trick


def _sums(x: np.ndarray, w: np.ndarray, ell: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Σ w·x·l and Σ w·l² over the last axis (16), float32, accumulated left to right as the C loop does."""
    lf = ell.astype(np.float32)
    wx, wl = w * x * lf, w * lf * lf
    sumlx = np.zeros(x.shape[:-1], np.float32)
    suml2 = np.zeros(x.shape[:-1], np.float32)
    for i in range(x.shape[-1]):
        sumlx = sumlx + wx[..., i]
        suml2 = suml2 + wl[..., i]
    return sumlx, suml2


def _make_qx_quants(x: np.ndarray, nmax: int = 32) -> tuple[np.ndarray, np.ndarray]:
    """make_qx_quants(n, nmax, x, L, rmse_type=1, NULL) over sub-blocks x (..., n): (scales (...), L (..., n) uint8)."""
    ax = np.abs(x)
    at = np.argmax(ax, axis=-1)[..., None]  # the first of the largest magnitude (the C loop's strict ">")
    mx = np.take_along_axis(x, at, axis=-1)  # (..., 1), signed
    zero = np.take_along_axis(ax, at, axis=-1)[..., 0] < GROUP_MAX_EPS
    safe = np.where(mx == 0, np.float32(1), mx).astype(np.float32)
    fmax = np.float32(nmax)
    w = x * x

    def codes(iscale: np.ndarray) -> np.ndarray:
        return np.clip(_nearest_int(iscale * x), -nmax, nmax - 1)

    ell = codes(np.float32(-fmax) / safe)
    sumlx, suml2 = _sums(x, w, ell)
    scale = np.where(suml2 != 0, sumlx / np.where(suml2 != 0, suml2, np.float32(1)), np.float32(0)).astype(np.float32)
    best = scale * sumlx
    for step in [s for s in range(-9, 10) if s]:
        iscale = np.float32(-(fmax + np.float32(0.1) * np.float32(step))) / safe
        trial = codes(iscale)
        slx, sl2 = _sums(x, w, trial)
        better = (sl2 > 0) & (slx * slx > best * sl2)
        ell = np.where(better[..., None], trial, ell)
        scale = np.where(better, slx / np.where(sl2 > 0, sl2, np.float32(1)), scale).astype(np.float32)
        best = np.where(better, scale * slx, best).astype(np.float32)
    scale = np.where(zero, np.float32(0), scale)
    ell = np.where(zero[..., None], 0, ell + nmax)
    return scale.astype(np.float32), ell.astype(np.uint8)


def _quantize_superblocks(x: np.ndarray) -> np.ndarray:
    """Q6_K bytes (n, 210) of super-blocks x (n, 256) float32."""
    n = x.shape[0]
    sub = x.reshape(n, 16, 16)
    scales, ell = _make_qx_quants(sub)  # (n, 16), (n, 16, 16)
    at = np.argmax(np.abs(scales), axis=-1)[:, None]
    max_scale = np.take_along_axis(scales, at, axis=-1)[:, 0]
    empty = np.abs(max_scale) < GROUP_MAX_EPS
    iscale = np.float32(-128.0) / np.where(empty, np.float32(1), max_scale).astype(np.float32)
    d16 = (np.float32(1) / iscale).astype(np.float16)
    sc = np.minimum(127, _nearest_int(iscale[:, None] * scales)).astype(np.int8)  # (n, 16)
    d = d16.astype(np.float32)[:, None] * sc.astype(np.float32)  # (n, 16): each sub-block's step
    nz = d != 0
    again = np.clip(_nearest_int(sub / np.where(nz, d, np.float32(1))[..., None]), -32, 31) + 32
    ell = np.where(nz[..., None], again, ell).astype(np.uint8).reshape(n, 2, 4, 32)  # (half, run, l)
    ql = np.concatenate(
        [(ell[:, h, 0] & 0xF) | ((ell[:, h, 2] & 0xF) << 4) for h in range(2)]
        + [(ell[:, h, 1] & 0xF) | ((ell[:, h, 3] & 0xF) << 4) for h in range(2)],
        axis=-1,
    )
    # ql per half: [l 0..31 from runs 0|2, l 32..63 from runs 1|3]; reorder to the reference's half-by-half layout
    ql = np.concatenate([ql[:, 0:32], ql[:, 64:96], ql[:, 32:64], ql[:, 96:128]], axis=-1).astype(np.uint8)
    top = ell >> 4  # each code's top two bits
    qh = np.concatenate(
        [top[:, h, 0] | (top[:, h, 1] << 2) | (top[:, h, 2] << 4) | (top[:, h, 3] << 6) for h in range(2)], axis=-1
    ).astype(np.uint8)
    out = np.concatenate([ql, qh, sc.view(np.uint8), d16.reshape(n, 1).view(np.uint8)], axis=-1)
    out[empty] = 0  # an all-zero super-block: every byte 0 (d = +0)
    return out


def quantize_q6_k(w: np.ndarray) -> np.ndarray:
    """Q6_K bytes, uint8 (out, in / 256 · 210), of a float (out, in) matrix whose ``in`` is a multiple of 256."""
    x = np.ascontiguousarray(w, dtype=np.float32)
    out, inp = x.shape
    if inp % QK_K:
        raise ValueError(f"{inp} inputs do not split into Q6_K super-blocks of {QK_K}")
    blocks = x.reshape(-1, QK_K)
    raw = np.concatenate(
        [_quantize_superblocks(blocks[i : i + _ROWS_PER_CHUNK]) for i in range(0, blocks.shape[0], _ROWS_PER_CHUNK)]
    )
    return raw.reshape(out, inp // QK_K * Q6_K_BYTES)
