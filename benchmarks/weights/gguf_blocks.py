"""A ``.gguf`` file's own blocks kept as they are (``kv@gguf``): per block type, the time to dequantize
each block projection and multiply it by one row (``x @ W.T``, what a decode step does) against the same
matmul on float32 weights already in memory; best of ``--repeats``, one thread. Figures in
docs/weights-and-speculation.md (Gemma 3 270M's Q4_K_M file).

    python benchmarks/weights/gguf_blocks.py ~/.local/share/kvsim/models/gemma3-270m/gemma-3-270m-q4_k_m.gguf

The float32 column is cache-warm (the same matrix again and again): a lower bound of the real matmul.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

from kvsim.models.gguf.blocks import BLOCK_BYTES, dequantize_blocks
from kvsim.models.loading import set_threads

sys.path.append(str(Path(__file__).resolve().parents[1]))  # benchmarks/, where the shared _load.py is
from _load import LoadWatch  # noqa: E402


def best_ms(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times) * 1e3


def main() -> None:
    LoadWatch()  # prints the load at start and end beside the figures
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", help="a .gguf file")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    import gguf

    set_threads(1)  # torch's and numpy's BLAS (the decode kernel's) threads
    reader = gguf.GGUFReader(args.path)
    rows: dict[str, list[float]] = {}
    for t in reader.tensors:
        kind = t.tensor_type.name
        if not t.name.startswith("blk.") or len(t.shape) != 2 or kind not in BLOCK_BYTES:
            continue
        out_f, in_f = (int(n) for n in reversed(t.shape))
        raw = torch.from_numpy(np.asarray(t.data, dtype=np.uint8).reshape(out_f, -1).copy())
        w = dequantize_blocks(raw, kind, out_f, in_f)
        x = torch.randn(1, in_f)
        fp32 = best_ms(lambda x=x, w=w: x @ w.T, args.repeats)
        kept = best_ms(lambda x=x, r=raw, k=kind, o=out_f, i=in_f: x @ dequantize_blocks(r, k, o, i).T, args.repeats)
        row = rows.setdefault(kind, [0, 0, 0, 0.0, 0.0])
        for i, v in enumerate((1, out_f * in_f, raw.numel(), fp32, kept)):
            row[i] += v
    print("| type | tensors | weights | file bytes | fp32 matmul, ms | dequant + matmul, ms | ns per weight |")
    print("|---|---|---|---|---|---|---|")
    total = [0.0] * 5
    for kind, row in [*rows.items(), ("all", None)]:
        row = total if row is None else row
        if kind != "all":
            total = [a + b for a, b in zip(total, row, strict=True)]
        n, weights, nbytes, fp32, kept = row
        per = kept * 1e6 / weights
        print(f"| {kind} | {int(n)} | {int(weights):,} | {int(nbytes):,} | {fp32:.1f} | {kept:.1f} | {per:.1f} |")


if __name__ == "__main__":
    main()
