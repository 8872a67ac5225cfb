"""INT8 weight-only matmul on this machine: torch's ``_weight_int8pack_mm`` against dequantize-then-
``F.linear`` and plain fp32, for one decode row (M = 1) and a short verification block (M = 5), on
the weight shapes of SmolLM2-135M (576 wide, MLP 1536, vocab 49152). Decides
``kvsim.models.quantized_weights.INT8_KERNEL``; figures in docs/weights-and-speculation.md.

    python benchmarks/weight_kernels.py [--threads 1] [--repeats 50]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F


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
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=50)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} thread(s), median of {args.repeats} (ms)")
    print(f"{'weight (out×in)':>18} {'M':>2} {'fp32':>9} {'int8pack':>9} {'w8 deq+mm':>9} {'w4 deq+mm':>9}")
    for out, inp in ((576, 576), (1536, 576), (576, 1536), (49152, 576)):
        for m in (1, 5):
            print(f"{f'{out}×{inp}':>18} {m:>2} " + " ".join(f"{t:>9.3f}" for t in row(out, inp, m, args.repeats)))


def row(out: int, inp: int, m: int, repeats: int) -> list[float]:
    """fp32, int8pack, INT8 dequantize+matmul, INT4 (g32) dequantize+matmul: median ms of one matmul."""
    from torch import nn

    from kvsim.models.quantized_weights import QuantizedLinear

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


if __name__ == "__main__":
    main()
