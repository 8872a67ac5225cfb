"""INT8 weight-only matmul on this machine: torch's ``_weight_int8pack_mm`` against dequantize-then-
``F.linear`` and plain fp32, for one decode row (M = 1) and a short verification block (M = 5), on
the weight shapes of SmolLM2-135M (576 wide, MLP 1536, vocab 49152). Decides
``kvsim.models.kernels.quantized_weights.INT8_KERNEL``; figures in docs/weights-and-speculation.md.

    python benchmarks/weights/weight_kernels.py [--threads 1] [--repeats 50]
    python benchmarks/weights/weight_kernels.py --model smollm2-135m --repeats 15   # whole decode steps, A/B

With ``--model``: one decode step (one new row over a 16-token cache) of the model in fp32, in INT8 per row
and as Q8_0 blocks with each kernel, and in INT4 g32, interleaved round by round so that load on a shared
machine hits them alike; the median per variant.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from kvsim.models.loading import set_threads

sys.path.append(str(Path(__file__).resolve().parents[1]))  # benchmarks/, where the shared _load.py is
from _load import LoadWatch  # noqa: E402


def timed(fn, repeats: int) -> float:
    for _ in range(3):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main() -> None:
    LoadWatch()  # the machine's load at start and end, printed beside the figures (benchmarks/_load.py)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=50)
    ap.add_argument("--model", default=None, help="time whole decode steps of this model instead")
    args = ap.parse_args()
    set_threads(args.threads)  # torch's and numpy's BLAS (the decode kernel's) threads
    if args.model:
        model_ab(args.model, args.repeats)
        return
    print(f"torch {torch.__version__}, {args.threads} thread(s), median of {args.repeats} (ms)")
    print(f"{'weight (out×in)':>18} {'M':>2} {'fp32':>9} {'int8pack':>9} {'w8 deq+mm':>9} {'w4 deq+mm':>9}")
    for out, inp in ((576, 576), (1536, 576), (576, 1536), (49152, 576)):
        for m in (1, 5):
            print(f"{f'{out}×{inp}':>18} {m:>2} " + " ".join(f"{t:>9.3f}" for t in row(out, inp, m, args.repeats)))


def row(out: int, inp: int, m: int, repeats: int) -> list[float]:
    """fp32, int8pack, INT8 dequantize+matmul, INT4 (g32) dequantize+matmul: median ms of one matmul."""
    from torch import nn

    from kvsim.models.kernels.quantized_weights import QuantizedLinear

    linear = nn.Linear(inp, out, bias=False)
    x = torch.randn(m, inp)
    w8 = QuantizedLinear(linear, 8, None)
    w4 = QuantizedLinear(linear, 4, 32)
    times = [timed(lambda: F.linear(x, linear.weight), repeats)]
    w8.kernel = "int8pack"
    times.append(timed(lambda: w8(x), repeats))
    w8.kernel = "dequant"
    times.append(timed(lambda: w8(x), repeats))
    times.append(timed(lambda: w4(x), repeats))
    return times


def model_ab(name: str, repeats: int) -> None:
    """One decode step of each variant, interleaved round by round (the order rotating): fp32; INT8 per row
    (``w8:row``) and INT8 as Q8_0 blocks (``w8``, the default), each through the codes kernel
    (``kvsim.models.kernels.int8_matmul``) and dequantize-then-matmul (the kernel switched off for that variant);
    INT8 per row through ``_weight_int8pack_mm``; INT4 g32."""
    from kvsim.caches import KVCache
    from kvsim.models.kernels import int8_matmul
    from kvsim.models.kernels import quantized_weights as qw
    from kvsim.models.loading import load_model

    model = load_model(name).model
    cfg = model.cfg
    variants = {"fp32": model}
    qw.INT8_KERNEL["cpu"] = "int8pack"
    variants["w8:row int8pack"] = qw.quantize_model(model, 8)
    qw.INT8_KERNEL["cpu"] = "dequant"
    variants["w8:row dequant"] = variants["w8:row kernel"] = qw.quantize_model(model, 8)
    variants["w8 (Q8_0) dequant"] = variants["w8 (Q8_0) kernel"] = qw.quantize_model(model, 8, 32, blocks="Q8_0")
    variants["w4:g32 dequant"] = qw.quantize_model(model, 4, 32)
    kernel = int8_matmul.int8_kernel()  # None where numba is not installed: every variant dequantizes
    ids = torch.arange(1, 18)[None]
    caches = {}
    with torch.inference_mode():
        for key, m in variants.items():
            caches[key] = KVCache(cfg.n_layers)
            m(ids[:, :16], torch.arange(16), caches[key], last_only=True)
        times: dict[str, list[float]] = {k: [] for k in variants}
        keys = list(variants)
        for r in range(repeats):
            for key in keys[r % len(keys) :] + keys[: r % len(keys)]:
                int8_matmul._kernel = kernel if key.endswith("kernel") else False  # the codes kernel on or off
                caches[key].truncate(16)
                t0 = time.perf_counter()
                variants[key](ids[:, 16:17], torch.tensor([16]), caches[key], last_only=True)
                times[key].append((time.perf_counter() - t0) * 1e3)
        int8_matmul._kernel = kernel
    print(f"{name}: one decode step, median of {repeats} interleaved rounds (ms); weight bytes held")
    for key, t in times.items():
        held = qw.weight_bytes(variants[key])["total"]
        print(f"  {key:<20} {statistics.median(t):9.2f}  (min {min(t):.2f}, max {max(t):.2f})  {held:>13,} B")


if __name__ == "__main__":
    main()
