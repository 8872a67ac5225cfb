"""The one-row matmul kernels of a decode step, on a model's real weights: torch's ``F.linear`` against
numpy's BLAS (``kvsim.models.row_matmul``), one thread each, interleaved.

Every projection matrix of the model (fused Q/K/V, output, fused gate+up, down) and the LM head, in the layout kvsim keeps
them (column-major), is multiplied by one row — what a cached decode step does — once per round by each
kernel, the order alternating round by round. Per round: the time of all layers' products and of the LM
head, for each kernel; the figure is the paired ratio numpy / torch with its 95 % interval
(``kvsim.core.compare``), and each kernel's streaming rate (bytes of the weights ÷ median time). The
machine's read bandwidth (``torch.sum`` over a weight-sized buffer, the floor's figure) is printed beside.

Then, in place: cached decode steps of the model itself (a 16-token prompt), each step's wall time and the time
spent inside its one-row products (the operator's CPU kernel wrapped with a timer), medians — what a step
spends outside the matmuls is the rest.

    python benchmarks/row_matmul.py --model smollm2-135m [--rounds 15] [--steps 24]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F
from _load import LoadWatch

from kvsim.caches import KVCache
from kvsim.core.compare import compare_paired
from kvsim.costs.hardware import read_bandwidth
from kvsim.models import row_matmul
from kvsim.models.base import user_models_dir
from kvsim.models.loading import load_model, set_threads
from kvsim.models.row_matmul import KERNEL


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
        layers.append(attn.fused_qkv[0] if attn.fused_qkv is not None else attn.wq.weight)
        layers.append(attn.wo.weight)
        mlp = block.mlp
        if mlp.fused_gate_up is not None:  # the one gate+up matrix a decode step multiplies
            layers += [mlp.fused_gate_up[0], mlp.w_down.weight]
        else:
            layers += [c.weight for c in mlp.children() if isinstance(c, torch.nn.Linear)]
    head = model.lm_head.weight
    groups = {"layers": layers, "LM head": [head]}

    def with_torch(ws: list[torch.Tensor]) -> float:
        t0 = time.perf_counter()
        for w in ws:
            F.linear(torch.ones(1, 1, w.shape[1]), w)
        return time.perf_counter() - t0

    def with_numpy(ws: list[torch.Tensor]) -> float:
        t0 = time.perf_counter()
        for w in ws:
            np.matmul(np.ones((1, 1, w.shape[1]), np.float32), w.numpy().T)
        return time.perf_counter() - t0

    times: dict[tuple[str, str], list[float]] = {(g, k): [] for g in groups for k in ("torch", "numpy")}
    for r in range(args.rounds + 1):
        order = [("torch", with_torch), ("numpy", with_numpy)]
        for kernel, run in order if r % 2 else order[::-1]:
            for g, ws in groups.items():
                t = run(ws)
                if r:  # round 0 warms up
                    times[(g, kernel)].append(t)
    bw = read_bandwidth(sum(w.numel() * 4 for ws in groups.values() for w in ws))
    print(f"# {args.model}: {len(layers)} projection matrices + the LM head, fp32 column-major, one row, 1 thread")
    print(f"# {args.rounds} rounds, the order alternating")
    print(f"# kvsim's kernel here: {KERNEL}; read bandwidth (torch.sum, 1 thread): {bw / 1e9:.2f} GB/s")
    print("| weights | MB | torch ms (GB/s) | numpy ms (GB/s) | numpy / torch (95 %) |")
    print("|---|---:|---:|---:|---|")
    for g, ws in groups.items():
        nbytes = sum(w.numel() * 4 for w in ws)
        t_ms = statistics.median(times[(g, "torch")]) * 1e3
        n_ms = statistics.median(times[(g, "numpy")]) * 1e3
        cmp = compare_paired(times[(g, "torch")], times[(g, "numpy")], name="numpy", baseline_name="torch")
        print(
            f"| {g} | {nbytes / 1e6:.0f} | {t_ms:.1f} ({nbytes / t_ms / 1e6:.1f}) | {n_ms:.1f} ({nbytes / n_ms / 1e6:.1f}) "
            f"| {watch.ratio(cmp.ratio, '.3f', short=True)} ({cmp.spread()}): {cmp.verdict} |"
        )
    if args.steps > 0 and KERNEL == "numpy":
        step_ms, product_ms = in_place(model, args.steps)
        print(
            f"in place, {args.steps} decode steps: step {step_ms:.1f} ms (median), of which one-row products "
            f"{product_ms:.1f} ms, the rest {step_ms - product_ms:.1f} ms"
        )
    return 0


def use_kernel(kernel: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """Register ``kernel`` as ``torch.ops.kvsim.row_linear``'s CPU kernel (torch warns of the override: the point)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        row_matmul._LIBRARY.impl("row_linear", kernel, "CPU", allow_override=True)


def in_place(model: torch.nn.Module, steps: int) -> tuple[float, float]:
    """Median step time and median time inside the one-row products, of cached decode steps of ``model``."""
    inside = [0.0]
    kernel = row_matmul._row_linear_cpu

    def timed(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        t0 = time.perf_counter()
        out = kernel(x, weight)
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
