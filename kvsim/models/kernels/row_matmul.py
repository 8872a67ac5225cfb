"""The one-row matmul of a decode step, through the fastest exact kernel this install has.

A cached decode step multiplies one row by every weight matrix of the model: its time is the time to
stream the weights from memory. Measured on the build machine (AMD EPYC, one thread, SmolLM2-135M's
projection matrices; ``benchmarks/weights/row_matmul.py``), against a plain read (``torch.sum``) of the same bytes:

* torch's CPU build (MKL) streams a column-major fp32 weight at 12–14 GB/s, a row-major one slower;
* numpy's bundled OpenBLAS streams the column-major weight at 16–20 GB/s;
* a plain dot product per output row, compiled by numba (LLVM vectorises the sum into several
  accumulators), streams a row-major weight at 24–27 GB/s — 85–90 % of the read, where the BLAS
  kernels reach 55–65 %: ``gemv_rows`` below.

Which is fastest depends on the host (numba leads where one thread reads 31–35 GB/s, OpenBLAS where it reads
10–11 GB/s), so a model's weights are laid out for the kernel measured fastest on its own matrices when it is
loaded (``kvsim.models.kernels.kernel_choice``, called by ``Transformer.use_decode_friendly_layout``): row-major
for numba, column-major for numpy's BLAS or torch. numba is a candidate only when torch runs one thread and the
weights are large enough that numba's one-time start (~0.9 s: import and compile) is small against the load
(``NUMBA_MIN_BYTES``). ``kernel_for`` is the rule without measuring (what a model laid out before measuring got).
The module that multiplies by a weight holds that choice (``Linear.rows`` and ``.column``,
``RowLinear``; the weight itself is a plain tensor): a one-row fp32 CPU product on a row-major weight laid out for numba
goes to numba, on a column-major one to numpy; everything else (prefill, batches, other dtypes, GPUs, a weight
needing gradients) is ``F.linear``. All compute the same fp32 dot products in different summation
orders: results agree to float32 rounding (tests/engine/models/test_row_matmul.py bounds it), not bit for bit. NaN and
infinities propagate as in ``F.linear`` (numba may reassociate and fuse multiply-adds, nothing more).

The product is a registered torch operator (``torch.ops.kvsim.row_linear``) with its FLOP formula, so
torch's ``FlopCounterMode`` sees it as it sees ``aten::mm`` and kvsim's closed-form counts keep their
independent check. ``KVSIM_ROW_MATMUL=torch|numpy|numba`` in the environment forces one kernel.
numba is optional (the ``fast`` extra, ``pip install "kvsim[fast]"``): without it the column-major kernels serve
every model, and a run that asked for numba by name says so in one line.

Threads: numpy's BLAS has its own pool; ``limit_threads`` gives it torch's thread count so "one thread"
means one thread for both. numba's kernel is one thread, and releases the GIL as numpy's does.
"""

from __future__ import annotations

import importlib.util
import math
import os
import sys
import warnings
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


def _wanted_kernel() -> str:
    wanted = os.environ.get("KVSIM_ROW_MATMUL", "auto").strip().lower()
    return wanted if wanted in ("torch", "numpy", "numba") else "auto"


def _choose_column_kernel() -> str:
    if WANTED in ("torch", "numpy"):
        return WANTED
    # measured faster only for numpy's bundled OpenBLAS; another BLAS (Accelerate, MKL) is not measured
    return "numpy" if _numpy_blas() == "openblas" else "torch"


#: the kernel the environment asks for ("auto": chosen per model by ``kernel_for``)
WANTED = _wanted_kernel()
#: the kernel of column-major weights: "numpy" (numpy's BLAS) or "torch" (``F.linear``)
KERNEL = _choose_column_kernel()
#: a model takes numba's kernel (with one thread) when its weights are at least this large: numba's first use in
#: a process costs ~0.9 s (import and compile), against ~2 s to load 128 MB of weights and 20 % of each step saved
NUMBA_MIN_BYTES = 128 << 20

_numba_kernel: Any = None  # the compiled gemv_rows, once built (False: numba could not be used here)


def numba_kernel() -> Any:
    """The compiled row-major kernel (built on first call: ~0.9 s), or None when numba cannot be used here."""
    global _numba_kernel
    if _numba_kernel is None:
        _numba_kernel = _build_numba_kernel() or False
    return _numba_kernel or None


#: what a run that asked for numba's kernel prints when numba is not installed (numba is the ``fast`` extra)
NUMBA_MISSING = (
    'kvsim: KVSIM_ROW_MATMUL=numba, but numba is not installed (pip install "kvsim[fast]"); '
    "one-row products use numpy's or torch's kernel"
)


def numba_module(quiet: bool = False) -> Any:
    """numba, where one-row products may use it (not turned off by ``KVSIM_ROW_MATMUL=torch|numpy``, installed and
    importable), else None — saying why when numba was asked for by name or its import fails, unless ``quiet`` (a
    second kernel: the first said it). Every numba kernel (``gemv_rows`` here, ``int8_matmul``'s) is built from it;
    each caches its own answer, so it is said once."""
    if WANTED in ("torch", "numpy"):
        return None
    if importlib.util.find_spec("numba") is None:  # the `fast` extra is not installed: the BLAS kernels serve
        if WANTED == "numba" and not quiet:  # asked for by name: say why it is not used
            print(NUMBA_MISSING, file=sys.stderr)
        return None
    try:
        import numba
    except Exception as exc:  # a broken numba install: the column kernels stay, and the log says why
        if not quiet:
            warnings.warn(f"numba could not be imported ({exc}); one-row products use numpy's or torch's kernel", stacklevel=3)
        return None
    return numba


def _build_numba_kernel() -> Any:
    numba = numba_module()
    if numba is None:
        return None

    # one output per row: a dot product of the weight's row with x. reassoc lets LLVM split the sum into several
    # vector accumulators (the whole speed-up); contract lets it fuse multiply-adds. No flag that assumes finite
    # values: NaN and infinities propagate. nogil: the GUI thread runs while a step multiplies.
    @numba.njit(
        "void(float32[:, ::1], float32[::1], float32[::1])",
        fastmath={"reassoc", "contract"},
        boundscheck=False,
        nogil=True,
        cache=False,  # compiling costs what loading a cached copy does (numba's own start dominates): nothing written
    )
    # (compiled: coverage cannot see inside; tests call it through row_linear)
    def gemv_rows(weight: np.ndarray, x: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover
        rows, n = weight.shape
        for r in range(rows):
            acc = np.float32(0.0)
            for i in range(n):
                acc += weight[r, i] * x[i]
            out[r] = acc

    return gemv_rows


def kernel_for(weight_bytes: int) -> str:
    """The kernel a model whose fp32 weights take ``weight_bytes`` is laid out for: "numba" (row-major),
    "numpy" or "torch" (column-major). Builds numba's kernel when it is the one (its start is paid at load)."""
    if WANTED == "numba" or (WANTED == "auto" and weight_bytes >= NUMBA_MIN_BYTES and torch.get_num_threads() == 1):
        if numba_kernel() is not None:
            return "numba"
    return KERNEL


_LIBRARY = torch.library.Library("kvsim", "DEF")  # noqa: TOR901 - an operator kvsim defines, not an override
# rows: the weight is laid out for numba's kernel (row-major); else column-major, for numpy's BLAS
_LIBRARY.define("row_linear(Tensor x, Tensor weight, bool rows) -> Tensor")


def _row_linear_cpu(x: torch.Tensor, weight: torch.Tensor, rows: bool) -> torch.Tensor:
    gemv_rows = numba_kernel() if rows and weight.is_contiguous() else None
    if gemv_rows is not None:  # laid out for numba: its dot products, written straight into the result
        out = x.new_empty((*x.shape[:-1], weight.shape[0]))
        gemv_rows(weight.numpy(), x.contiguous().view(-1).numpy(), out.view(-1).numpy())
        return out
    # numpy's BLAS takes any strides; column-major, weight.numpy().T is the (in, out) C-ordered array, no copy. An
    # overflow gives inf/NaN silently, as torch does (the caller checks the logits and says so in one line)
    with np.errstate(all="ignore"):
        return torch.from_numpy(np.matmul(x.contiguous().numpy(), weight.numpy().T))


def _row_linear_shape(x: torch.Tensor, weight: torch.Tensor, rows: bool) -> torch.Tensor:
    return x.new_empty((*x.shape[:-1], weight.shape[0]))


_LIBRARY.impl("row_linear", _row_linear_cpu, "CPU")
torch.library.register_fake("kvsim::row_linear", _row_linear_shape, lib=_LIBRARY)


@register_flop_formula(torch.ops.kvsim.row_linear)
def _row_linear_flops(x_shape: Any, w_shape: Any, *args: Any, out_shape: Any = None, **kwargs: Any) -> int:
    return 2 * math.prod(x_shape[:-1]) * x_shape[-1] * w_shape[0]  # as aten::mm counts (rows · in) @ (in · out)


def one_row_kernel(x: torch.Tensor, weight: torch.Tensor, rows: bool = False, column: str | None = None) -> str | None:
    """The kernel ``linear(x, weight, rows=rows, column=column)`` takes: "numba" (a one-row fp32 CPU product on a
    row-major weight laid out for it: ``rows``), "numpy" (on a column-major weight, when ``column`` — the kernel its
    model measured fastest, ``kvsim.models.kernels.kernel_choice`` — is "numpy", or, not given, where numpy's BLAS is
    OpenBLAS), None: ``F.linear``. Only a weight laid out for numba (``rows``) takes numba's kernel: what kernel a
    product takes depends on how its model was laid out, never on whether some other model built numba's kernel
    earlier in the process."""
    if not (
        x.device.type == "cpu"
        and x.dtype == torch.float32
        and weight.dtype == torch.float32
        and x.numel() == x.shape[-1]  # one row
        and weight.dim() == 2
        and weight.device.type == "cpu"
        and not (x.requires_grad or weight.requires_grad)
    ):
        return None
    if weight.is_contiguous() and rows:  # laid out for numba
        return "numba" if WANTED != "torch" and numba_kernel() is not None else None
    if weight.stride(0) == 1:  # column-major
        return "numpy" if (column or KERNEL) == "numpy" else None
    return None


def linear(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, rows: bool = False, column: str | None = None
) -> torch.Tensor:
    """``F.linear(x, weight, bias)``, one-row fp32 CPU products through numba's kernel (``rows``: the weight is laid
    out for it) or numpy's (``column``: the column-major kernel its model measured fastest; see the module)."""
    if one_row_kernel(x, weight, rows, column) is None:
        return F.linear(x, weight, bias)
    y = torch.ops.kvsim.row_linear(x, weight, rows)
    return y if bias is None else y + bias


class Linear(nn.Linear):
    """``nn.Linear`` whose one-row products take ``linear`` (same parameters, same state dict); ``rows``: its
    weight is laid out for numba's kernel (set by ``Transformer.use_decode_friendly_layout``)."""

    rows: bool = False
    column: str | None = None  # a column-major weight's kernel, "numpy" or "torch", as its model measured (None: KERNEL)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear(x, self.weight, self.bias, self.rows, self.column)


class RowLinear(nn.Module):
    """``x Wᵀ + b`` over a weight a model laid out itself (a fused Q/K/V or gate+up matrix, ``fuse_columns``), and
    the kernel it is laid out for (``rows``: numba's, row-major). The weight and bias are plain tensors, not
    Parameters: the Parameters of the projections it fuses are views into them, so the state dict and the
    parameter count stay those of the projections."""

    column: str | None = None  # as ``Linear.column``

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None, rows: bool = False) -> None:
        super().__init__()
        self.weight, self.bias, self.rows = weight, bias, rows

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear(x, self.weight, self.bias, self.rows, self.column)

    def extra_repr(self) -> str:
        out_features, in_features = self.weight.shape
        return f"in_features={in_features}, out_features={out_features}, bias={self.bias is not None}, rows={self.rows}"


def limit_threads(n: int) -> None:
    """Give numpy's BLAS ``n`` threads (torch's count), so a one-thread run is one thread throughout."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - a declared dependency
        return
    threadpool_limits(limits=n, user_api="blas")
