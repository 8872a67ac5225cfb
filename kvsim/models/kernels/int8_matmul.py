"""The one-row product of a decode step over INT8 codes in groups, multiplying the codes where they are stored.

A weight-only INT8 layer holds, per output row, groups of ``block`` int8 codes, each group with one scale:
``W[r, b·block + i] = scale[r, b] · q[r, b·block + i]``. kvsim's ``w8:row`` and ``w8:gG`` store the codes as an
(out, in) int8 matrix and float32 scales (groups one after another: ``stride = block``, ``offset = 0``); llama.cpp's
Q8_0 (``w8``, and every Q8_0 head) stores blocks of 34 bytes, an fp16 scale then 32 codes (``stride = 34``,
``offset = 2``), read here in place through an int8 view of the bytes (the fp16 scales widened to float32 per call:
one per 32 weights).

Dequantizing first (``q · s`` into a float32 matrix, then ``F.linear``) writes and reads four bytes per weight where
the codes are one: measured on the build CPU (one thread, ``benchmarks/weights/weight_kernels.py``), it was 50–300×
slower than this kernel, which sums ``q[i] · x[i]`` per group and adds ``scale · sum`` per group (numba; LLVM
vectorises the widening multiply-add). Same products in another summation order than dequantize-then-matmul: the
results agree to float32 rounding (tests/engine/models/test_quantized_weights.py bounds it), not bit for bit.

One row, float32, CPU, no gradients, numba installed and not turned off (``KVSIM_ROW_MATMUL=torch|numpy``); anything
else (prefill, batches, GPUs) dequantizes and calls ``F.linear``. The product is a registered torch operator
(``torch.ops.kvsim.int8_linear``) with its FLOP formula, so ``FlopCounterMode`` counts it as the matmul it replaces.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch.utils.flop_counter import register_flop_formula

from . import row_matmul

_kernel: Any = None  # the compiled kernel once built (False: numba cannot be used here)


def int8_kernel() -> Any:
    """The compiled grouped-INT8 one-row kernel (built on first call), or None where numba is not used."""
    global _kernel
    if _kernel is None:
        _kernel = _build() or False
    return _kernel or None


def _build() -> Any:
    numba = row_matmul.numba_module(quiet=True)  # None: the dequantizing path serves (row_matmul's kernel says why)
    if numba is None:
        return None
    import numpy as np

    # per output row: per group, the sum of code · x (widened to float32), times the group's scale. reassoc lets LLVM
    # split the sums into vector accumulators; no flag assumes finite values (NaN and infinities propagate)
    @numba.njit(
        "void(int8[:, ::1], float32[:, ::1], float32[::1], float32[::1], int64, int64, int64)",
        fastmath={"reassoc", "contract"},
        boundscheck=False,
        nogil=True,
        cache=False,
    )
    def gemv_int8_groups(q, scales, x, out, block, stride, offset):  # type: ignore[no-untyped-def]  # pragma: no cover
        rows = q.shape[0]
        groups = scales.shape[1]
        for r in range(rows):
            acc = np.float32(0.0)
            for b in range(groups):
                s = np.float32(0.0)
                at = b * stride + offset
                xs = b * block
                for i in range(block):
                    s += np.float32(q[r, at + i]) * x[xs + i]
                acc += scales[r, b] * s
            out[r] = acc

    return gemv_int8_groups


def usable(x: torch.Tensor, codes: torch.Tensor) -> bool:
    """Whether ``x`` times a layer of these stored codes takes the kernel: one float32 row on the CPU, no gradients."""
    return (
        x.device.type == "cpu"
        and codes.device.type == "cpu"
        and x.dtype == torch.float32
        and x.numel() == x.shape[-1]
        and not x.requires_grad
        and int8_kernel() is not None
    )


_LIBRARY = torch.library.Library("kvsim", "FRAGMENT")  # noqa: TOR901 - an operator kvsim defines, not an override
_LIBRARY.define("int8_linear(Tensor x, Tensor q, Tensor scales, int out_features, int block, int stride, int offset) -> Tensor")


def _int8_linear_cpu(
    x: torch.Tensor, q: torch.Tensor, scales: torch.Tensor, out_features: int, block: int, stride: int, offset: int
) -> torch.Tensor:
    out = x.new_empty((*x.shape[:-1], out_features))
    int8_kernel()(q.numpy(), scales.numpy(), x.contiguous().view(-1).numpy(), out.view(-1).numpy(), block, stride, offset)
    return out


def _int8_linear_shape(
    x: torch.Tensor, q: torch.Tensor, scales: torch.Tensor, out_features: int, block: int, stride: int, offset: int
) -> torch.Tensor:
    return x.new_empty((*x.shape[:-1], out_features))


_LIBRARY.impl("int8_linear", _int8_linear_cpu, "CPU")
torch.library.register_fake("kvsim::int8_linear", _int8_linear_shape, lib=_LIBRARY)


@register_flop_formula(torch.ops.kvsim.int8_linear)
def _int8_linear_flops(x_shape: Any, q_shape: Any, s_shape: Any, out_features: int, *args: Any, **kwargs: Any) -> int:
    return 2 * math.prod(x_shape[:-1]) * x_shape[-1] * out_features  # as aten::mm counts the product it replaces


def int8_linear(
    x: torch.Tensor, q: torch.Tensor, scales: torch.Tensor, out_features: int, block: int, stride: int, offset: int = 0
) -> torch.Tensor:
    """``x Wᵀ`` for one row ``x`` (float32, CPU) over codes ``q`` (int8, (out, ·) C-contiguous) whose group ``b`` of
    row ``r`` starts at ``q[r, b · stride + offset]`` and holds ``block`` codes scaled by ``scales[r, b]`` (float32,
    (out, groups) contiguous). Callers check ``usable`` first."""
    return torch.ops.kvsim.int8_linear(x, q, scales, out_features, block, stride, offset)
