"""The kv lane's decode step on a GPU: eager against CUDA graphs (issue 37's GPU plan). Needs a CUDA device.

A 135M model's decode step on a GPU is launch-bound: ~2,000 kernel launches of a few µs each against a ~0.1 ms
read of the weights from HBM (an H200). kvsim keeps each lane's cache policy in Python, so a step cannot be one
captured graph (the cache's lengths are Python integers and a policy may evict, re-encode or grow its buffers);
what can be captured is every part of a step that touches no cache: each block's projection (QKV, QK-norm, RoPE)
and its finish (residuals, norms, MLP), and the final norm with the LM head (``kvsim.models.kernels.compiled``).
Variants, each a ``Simulator`` with the ``kv`` lane (its whole step timed: forward and record) on its own copy of
the model:

* ``eager``: what ``kvsim run --device cuda`` does;
* ``compiled``: those parts through ``torch.compile`` (inductor's fused kernels, launched one by one);
* ``graphs``: the same with ``mode="reduce-overhead"``: each part replayed as a CUDA graph (one launch each).

Each decode step runs every variant once in an order rotating each step (lockstep); per step the ratio
variant / eager, reported as the median with its 10–90 % spread. Tokens: every variant's greedy choices against
the eager lane's over the whole run (they must be identical in fp32); the largest |Δlogit| of the last step. Kernel
launches per step (``torch.profiler``: ``cudaLaunchKernel`` and ``cudaGraphLaunch`` calls) beside each variant.

    python benchmarks/decode/gpu_graphs.py [--model smollm2-135m] [--dtype fp32|bf16] [--steps 48] [--prompt-len 16]

With no CUDA device it says so in one line and exits 0 (``--device cpu`` runs the same code on the CPU, without
graphs: a check that the script works, not a figure).
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.append(str(Path(__file__).resolve().parents[1]))  # benchmarks/, where the shared _load.py is
from _load import LoadWatch  # noqa: E402

TEXT = "The key-value cache is a technique that lets a transformer reuse what it computed for earlier tokens, so"


def launches(step: object, device: torch.device) -> int:
    """Kernel launches (and graph launches) one call of ``step()`` makes, counted by torch.profiler."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        step()  # type: ignore[operator]
    names = ("cudaLaunchKernel", "cudaGraphLaunch", "cuLaunchKernel", "cudaLaunchKernelExC")
    return sum(e.count for e in prof.key_averages() if e.key in names)


@torch.no_grad()
def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="smollm2-135m", help="a fetched model, or any kvsim model spec (random:...)")
    p.add_argument("--dtype", default="fp32", choices=("fp32", "bf16"))
    p.add_argument("--steps", type=int, default=48)
    p.add_argument("--warmup", type=int, default=4, help="lockstep steps before the timed ones (graphs record here)")
    p.add_argument("--prompt-len", type=int, default=16)
    p.add_argument("--device", default="cuda", help="cuda (the point) or cpu (a check that the script runs)")
    args = p.parse_args()
    LoadWatch()  # the host's load at the start, and at exit how far it moved
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print(f"gpu_graphs: no CUDA device here (torch {torch.__version__}): nothing to time")
        return 0
    from kvsim.caches import parse_lanes
    from kvsim.core.devices import sync
    from kvsim.engine.simulate import Simulator
    from kvsim.models.catalog import FETCHABLE, is_fetched
    from kvsim.models.kernels.compiled import compile_decode
    from kvsim.models.loading import load_model

    device = torch.device(args.device)
    spec = args.model
    if spec in FETCHABLE and not is_fetched(FETCHABLE[spec]):
        spec = "random:family=llama,layers=30,heads=9,kv_heads=3,dim=576,hidden=1536,vocab=49152,seed=0"
        print(f"({args.model} is not fetched: a random model of its shape instead)")
    dtype = args.dtype if device.type == "cuda" else "fp32"
    loaded = load_model(spec, device=args.device, dtype=dtype)
    ids = loaded.tokenizer.encode(TEXT)
    ids = (ids * (args.prompt_len // max(1, len(ids)) + 1))[: args.prompt_len]
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        print(f"# GPU: {props.name}, torch {torch.__version__}, CUDA {torch.version.cuda}; {spec} {dtype}, prompt {len(ids)}")
    else:
        print(f"# device: cpu (a check of the script: no CUDA graphs here); {spec} {dtype}, prompt {len(ids)}")

    models = {
        "eager": loaded.model,
        "compiled": compile_decode(copy.deepcopy(loaded.model)),
        "graphs": compile_decode(copy.deepcopy(loaded.model), mode="reduce-overhead"),
    }
    sims = {}
    t0 = time.perf_counter()
    for name, model in models.items():
        sims[name] = Simulator(model, loaded.tokenizer, ids, parse_lanes("kv"), model_id=name)
        sims[name].keep_records = False
        sims[name].step()  # the prefill (compiles the prompt's shapes)
    print(f"set-up (prefills, compiling the prompt's shapes): {time.perf_counter() - t0:.1f} s")

    def step(name: str) -> object:
        if name == "graphs":
            torch.compiler.cudagraph_mark_step_begin()  # a new step: the graphs' earlier outputs may be reused
        return sims[name].step()

    names = list(sims)
    times: dict[str, list[float]] = {n: [] for n in names}
    tokens: dict[str, list[int]] = {n: [] for n in names}
    t0 = time.perf_counter()
    for i in range(args.warmup + args.steps):
        order = names[i % len(names) :] + names[: i % len(names)]
        for name in order:
            sync(device)
            start = time.perf_counter()
            record = step(name)
            sync(device)
            if i >= args.warmup:
                times[name].append(time.perf_counter() - start)
            tokens[name].append(record.token_id)  # type: ignore[attr-defined]
        if i == args.warmup - 1:
            print(f"warm-up steps (graphs recorded, decode shapes compiled): {time.perf_counter() - t0:.1f} s")
    counts = {n: launches(lambda n=n: step(n), device) for n in names}
    print("| variant | median ms/step | kernel + graph launches per step | greedy tokens = eager's |")
    print("|---|---:|---:|---|")
    for n in names:
        same = tokens[n] == tokens["eager"]
        first = next((i for i, (a, b) in enumerate(zip(tokens[n], tokens["eager"], strict=True)) if a != b), None)
        verdict = "identical" if same else f"differ from step {first}"
        print(f"| {n} | {statistics.median(times[n]) * 1e3:.3f} | {counts[n]} | {verdict} ({len(tokens[n])} steps) |")
    for n in names[1:]:
        ratios = sorted(a / b for a, b in zip(times[n], times["eager"], strict=True))
        lo, mid, hi = (ratios[int(q * (len(ratios) - 1))] for q in (0.1, 0.5, 0.9))
        noise = " (within noise)" if lo <= 1.0 <= hi else ""
        print(f"{n} / eager: {mid:.3f} (10–90%: {lo:.3f}–{hi:.3f}){noise}")
    ok = all(tokens[n] == tokens["eager"] for n in names) or dtype != "fp32"
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
