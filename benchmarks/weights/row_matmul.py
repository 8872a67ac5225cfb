"""The one-row matmul kernels of a decode step, on a model's real weights: torch's ``F.linear``, numpy's BLAS and
numba's compiled dot products (``kvsim.models.kernels.row_matmul``), one thread each, interleaved.

Every projection matrix of the model (fused Q/K/V, output, fused gate+up, down) and the LM head is copied into
the layout each kernel streams fastest (column-major for torch and numpy, row-major for numba; huge pages as
kvsim keeps weights) and multiplied by one row — what a cached decode step does — once per round by each
kernel, each kernel first in turn. Per round: the time of all layers' products and of the LM head, for each
kernel; the figures are the paired ratios kernel / torch with their 95 % intervals (``kvsim.core.compare``),
and each kernel's streaming rate (bytes of the weights ÷ median time). The machine's read bandwidth
(``torch.sum`` over a weight-sized buffer, the floor's figure) is printed beside.

Then, in place: cached decode steps of the model itself (a 16-token prompt), each step's wall time and the time
spent inside its one-row products (the operator's CPU kernel wrapped with a timer), medians — what a step
spends outside the matmuls is the rest.

    python benchmarks/weights/row_matmul.py --model smollm2-135m [--rounds 15] [--steps 24]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from kvsim.caches import KVCache
from kvsim.core.compare import compare_paired
from kvsim.costs.hardware import read_bandwidth
from kvsim.models.base import user_models_dir
from kvsim.models.kernels import huge_pages, row_matmul
from kvsim.models.kernels.row_matmul import KERNEL
from kvsim.models.loading import load_model, set_threads

sys.path.append(str(Path(__file__).resolve().parents[1]))  # benchmarks/, where the shared _load.py is
from _load import LoadWatch  # noqa: E402


def main() -> int:
    watch = LoadWatch()
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="smollm2-135m", help="a fetched model's name, or any kvsim model spec")
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--steps", type=int, default=24, help="decode steps timed in place (0: skip)")
    args = p.parse_args()
    set_threads(1)  # torch's and numpy's BLAS
    folder = user_models_dir() / args.model
    files = sorted(folder.glob("*.gguf")) if folder.is_dir() else []
    model = load_model(str(files[0]) if files else args.model).model
    layers: list[torch.Tensor] = []
    for block in model.layers:
        attn = block.attn
        layers.append(attn.fused_qkv.weight if attn.fused_qkv is not None else attn.wq.weight)
        layers.append(attn.wo.weight)
        mlp = block.mlp
        if mlp.fused_gate_up is not None:  # the one gate+up matrix a decode step multiplies
            layers += [mlp.fused_gate_up.weight, mlp.w_down.weight]
        else:
            layers += [c.weight for c in mlp.children() if isinstance(c, torch.nn.Linear)]
    head = model.lm_head.weight
    # each kernel reads the layout it streams fastest: column-major for torch's and numpy's BLAS, row-major for numba
    columns = {"layers": [huge_pages.column_major(w) for w in layers], "LM head": [huge_pages.column_major(head)]}
    rows = {"layers": [huge_pages.row_major(w) for w in layers], "LM head": [huge_pages.row_major(head)]}
    gemv_rows = row_matmul.numba_kernel()

    def with_torch(g: str) -> float:
        t0 = time.perf_counter()
        for w in columns[g]:
            F.linear(torch.ones(1, 1, w.shape[1]), w)
        return time.perf_counter() - t0

    def with_numpy(g: str) -> float:
        t0 = time.perf_counter()
        for w in columns[g]:
            np.matmul(np.ones((1, 1, w.shape[1]), np.float32), w.numpy().T)
        return time.perf_counter() - t0

    def with_numba(g: str) -> float:
        t0 = time.perf_counter()
        for w in rows[g]:
            gemv_rows(w.numpy(), np.ones(w.shape[1], np.float32), np.empty(w.shape[0], np.float32))
        return time.perf_counter() - t0

    kernels: list[tuple[str, Callable[[str], float]]] = [("torch", with_torch), ("numpy", with_numpy)]
    if gemv_rows is not None:
        kernels.append(("numba", with_numba))
    times: dict[tuple[str, str], list[float]] = {(g, k): [] for g in columns for k, _ in kernels}
    for r in range(args.rounds + 1):
        order = kernels[r % len(kernels) :] + kernels[: r % len(kernels)]  # each kernel first in turn
        for kernel, run in order:
            for g in columns:
                t = run(g)
                if r:  # round 0 warms up
                    times[(g, kernel)].append(t)
    bw = read_bandwidth(sum(w.numel() * 4 for ws in columns.values() for w in ws))
    print(f"# {args.model}: {len(layers)} projection matrices + the LM head, fp32, one row, 1 thread")
    print(f"# {args.rounds} rounds, each kernel first in turn; numba on row-major copies, the others on column-major")
    kernel_here = getattr(model, "one_row_kernel", KERNEL)
    print(f"# the model's kernel: {kernel_here}; read bandwidth (torch.sum, 1 thread): {bw / 1e9:.2f} GB/s")
    names = [k for k, _ in kernels]
    heads = [f"{k} ms (GB/s)" for k in names] + [f"{k} / torch (95 %)" for k in names[1:]]
    print("| weights | MB | " + " | ".join(heads) + " |")
    print("|---|---:|" + "---:|" * len(names) + "---|" * (len(names) - 1))
    for g, ws in columns.items():
        nbytes = sum(w.numel() * 4 for w in ws)
        cells = []
        for k in names:
            ms = statistics.median(times[(g, k)]) * 1e3
            cells.append(f"{ms:.1f} ({nbytes / ms / 1e6:.1f})")
        for k in names[1:]:
            cmp = compare_paired(times[(g, "torch")], times[(g, k)], name=k, baseline_name="torch")
            cells.append(f"{watch.ratio(cmp.ratio, '.3f', short=True)} ({cmp.spread()}): {cmp.verdict}")
        print(f"| {g} | {nbytes / 1e6:.0f} | " + " | ".join(cells) + " |")
    if args.steps > 0 and getattr(model, "one_row_kernel", "torch") != "torch":
        step_ms, product_ms = in_place(model, args.steps)
        print(
            f"in place, {args.steps} decode steps: step {step_ms:.1f} ms (median), of which one-row products "
            f"{product_ms:.1f} ms, the rest {step_ms - product_ms:.1f} ms"
        )
    return 0


def use_kernel(kernel: Callable[[torch.Tensor, torch.Tensor, bool], torch.Tensor]) -> None:
    """Register ``kernel`` as ``torch.ops.kvsim.row_linear``'s CPU kernel (torch warns of the override: the point)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        row_matmul._LIBRARY.impl("row_linear", kernel, "CPU", allow_override=True)


def in_place(model: torch.nn.Module, steps: int) -> tuple[float, float]:
    """Median step time and median time inside the one-row products, of cached decode steps of ``model``."""
    inside = [0.0]
    kernel = row_matmul._row_linear_cpu

    def timed(x: torch.Tensor, weight: torch.Tensor, rows: bool) -> torch.Tensor:
        t0 = time.perf_counter()
        out = kernel(x, weight, rows)
        inside[0] += time.perf_counter() - t0
        return out

    use_kernel(timed)
    try:
        cfg = model.cfg
        cache = KVCache(cfg.n_layers, layer_windows=cfg.layer_windows)
        model(torch.arange(100, 116)[None], torch.arange(16), cache, last_only=True)
        walls, products = [], []
        for pos in range(16, 16 + steps + 4):
            inside[0] = 0.0
            t0 = time.perf_counter()
            model(torch.tensor([[101]]), torch.tensor([pos]), cache)
            if pos >= 20:  # four warm-up steps
                walls.append(time.perf_counter() - t0)
                products.append(inside[0])
    finally:
        use_kernel(kernel)
    return statistics.median(walls) * 1e3, statistics.median(products) * 1e3


if __name__ == "__main__":
    sys.exit(main())
