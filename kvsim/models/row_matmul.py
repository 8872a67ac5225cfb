"""The one-row matmul of a decode step, through the fastest exact kernel this install has.

A cached decode step multiplies one row by every weight matrix of the model: its time is the time to
stream the weights from memory. On the build machine (AMD EPYC, one thread) torch's CPU build (MKL)
streams a column-major fp32 weight at 12.6 GB/s while numpy's bundled OpenBLAS streams the same
memory at 16.2 GB/s (SmolLM2-135M's 150 projection matrices: 33.6 vs 26.1 ms; `benchmarks/row_matmul.py`).
So a one-row fp32 product on the CPU goes to numpy's BLAS when that BLAS is OpenBLAS (``KERNEL``), on
zero-copy views of the same tensors; everything else (prefill, batches, other dtypes, GPUs) stays with
``F.linear``. Both compute the same fp32 dot products, in a different summation order: the results
agree to float32 rounding (tests/test_row_matmul.py bounds it), not bit for bit.

The product is a registered torch operator (``torch.ops.kvsim.row_linear``) with its FLOP formula, so
torch's ``FlopCounterMode`` sees it as it sees ``aten::mm`` and kvsim's closed-form counts keep their
independent check. ``KVSIM_ROW_MATMUL=torch`` in the environment turns the numpy path off.

Threads: numpy's BLAS has its own pool; ``limit_threads`` gives it torch's thread count so "one thread"
means one thread for both (``kvsim.models.loading.set_threads`` calls it).
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import register_flop_formula


def _numpy_blas() -> str | None:
    """The internal name of numpy's BLAS ("openblas", "mkl", …), None when threadpoolctl cannot tell."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:  # pragma: no cover - a declared dependency
        return None
    for pool in threadpool_info():
        if pool.get("user_api") == "blas" and "numpy" in str(pool.get("filepath", "")).replace("\\", "/"):
            return str(pool.get("internal_api"))
    return None


def _choose_kernel() -> str:
    wanted = os.environ.get("KVSIM_ROW_MATMUL", "auto").strip().lower()
    if wanted in ("torch", "numpy"):
        return wanted
    # measured faster only for numpy's bundled OpenBLAS; another BLAS (Accelerate, MKL) is not measured
    return "numpy" if _numpy_blas() == "openblas" else "torch"


#: "numpy" (one-row fp32 CPU products through numpy's BLAS) or "torch" (always ``F.linear``)
KERNEL = _choose_kernel()

_LIBRARY = torch.library.Library("kvsim", "DEF")  # noqa: TOR901 - an operator kvsim defines, not an override
_LIBRARY.define("row_linear(Tensor x, Tensor weight) -> Tensor")


def _row_linear_cpu(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    # weight is (out, in) column-major, so weight.numpy().T is the (in, out) C-ordered array, no copy; an
    # overflow gives inf/NaN silently, as torch does (the caller checks the logits and says so in one line)
    with np.errstate(all="ignore"):
        return torch.from_numpy(np.matmul(x.contiguous().numpy(), weight.numpy().T))


def _row_linear_shape(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return x.new_empty((*x.shape[:-1], weight.shape[0]))


_LIBRARY.impl("row_linear", _row_linear_cpu, "CPU")
torch.library.register_fake("kvsim::row_linear", _row_linear_shape, lib=_LIBRARY)


@register_flop_formula(torch.ops.kvsim.row_linear)
def _row_linear_flops(x_shape: Any, w_shape: Any, *args: Any, out_shape: Any = None, **kwargs: Any) -> int:
    return 2 * math.prod(x_shape[:-1]) * x_shape[-1] * w_shape[0]  # as aten::mm counts (rows · in) @ (in · out)


def uses_numpy(x: torch.Tensor, weight: torch.Tensor) -> bool:
    """Whether ``linear(x, weight)`` takes the numpy path."""
    return (
        KERNEL == "numpy"
        and x.device.type == "cpu"
        and x.dtype == torch.float32
        and weight.dtype == torch.float32
        and x.numel() == x.shape[-1]  # one row
        and weight.dim() == 2
        and weight.stride(0) == 1  # column-major: the order numpy's kernel streams fastest
        and not (x.requires_grad or weight.requires_grad)
    )


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``F.linear(x, weight, bias)``, one-row fp32 CPU products through numpy's BLAS (see the module)."""
    if not uses_numpy(x, weight):
        return F.linear(x, weight, bias)
    y = torch.ops.kvsim.row_linear(x, weight)
    return y if bias is None else y + bias


class Linear(nn.Linear):
    """``nn.Linear`` whose one-row products take ``linear`` (same parameters, same state dict)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear(x, self.weight, self.bias)


def limit_threads(n: int) -> None:
    """Give numpy's BLAS ``n`` threads (torch's count), so a one-thread run is one thread throughout."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - a declared dependency
        return
    threadpool_limits(limits=n, user_api="blas")
