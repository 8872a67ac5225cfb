"""Weights in huge pages or in ordinary pages: cached decode steps of the same model, interleaved.

The model is loaded twice in one process: once as kvsim loads it (its column-major weight copies in
2 MiB pages where the system gives them, ``kvsim.models.kernels.huge_pages``), once with that turned off. Each
round runs one decode step of each, the order alternating; the figure is the paired ratio of their
step times with its 95 % interval (``kvsim.core.compare``) — "within noise" when it includes 1. The
read bandwidth (``torch.sum``, the floor's figure) is measured both ways too: huge pages speed up a
plain read as well, so the floor of the benchmarks is measured on huge-page memory when the weights are.

    python benchmarks/weights/huge_pages.py --model smollm2-135m [--steps 40]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

from kvsim.caches import KVCache
from kvsim.core.compare import compare_paired
from kvsim.costs.hardware import read_bandwidth
from kvsim.models.base import user_models_dir
from kvsim.models.kernels import huge_pages
from kvsim.models.loading import load_model, set_threads

sys.path.append(str(Path(__file__).resolve().parents[1]))  # benchmarks/, where the shared _load.py is
from _load import LoadWatch  # noqa: E402


def _spec(name: str) -> str:
    folder = user_models_dir() / name
    files = sorted(folder.glob("*.gguf")) if folder.is_dir() else []
    return str(files[0]) if files else name


def _weights(model: torch.nn.Module) -> list[torch.Tensor]:
    seen: dict[int, torch.Tensor] = {}
    for block in model.layers:  # type: ignore[attr-defined]
        for t in (block.attn.fused_qkv, block.mlp.fused_gate_up):
            if t is not None:
                seen[t[0].data_ptr()] = t[0]
    for p in model.parameters():
        seen.setdefault(p.data_ptr(), p)
    return list(seen.values())


def main() -> int:
    watch = LoadWatch()
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="smollm2-135m", help="a fetched model's name, or any kvsim model spec")
    p.add_argument("--steps", type=int, default=40, help="decode steps of each, interleaved")
    args = p.parse_args()
    if not huge_pages.ENABLED:
        print("huge pages are off here (no MADV_HUGEPAGE on this platform, or KVSIM_HUGE_PAGES=0): nothing to compare")
        return 1
    set_threads(1)
    spec = _spec(args.model)
    if Path(spec).is_file():
        Path(spec).read_bytes()  # the file in the page cache before either load is timed
    t0 = time.perf_counter()
    huge = load_model(spec).model
    t1 = time.perf_counter()
    huge_pages.ENABLED = False
    try:
        plain = load_model(spec).model
    finally:
        huge_pages.ENABLED = True
    t2 = time.perf_counter()
    weights = _weights(huge)
    big = [w for w in weights if w.numel() * w.element_size() >= huge_pages.HUGE_PAGE]
    backed = sum(huge_pages.is_huge_page_backed(w) for w in big)
    nbytes = huge.weight_bytes()  # every parameter once (the fused matrices are their views)
    print(f"# {args.model}: {nbytes / 1e6:.0f} MB of weights, {len(big)} matrices of ≥ 2 MiB, {backed} of them in huge pages now")
    # a huge page is zeroed when first touched: loading pays for it (on a VM whose host takes freed memory back,
    # every first touch of a 2 MiB page is the host's fault too)
    print(f"load: {t1 - t0:.2f} s with huge pages, {t2 - t1:.2f} s without (one each)")
    caches = {"huge": KVCache(len(huge.layers)), "plain": KVCache(len(plain.layers))}
    models = {"huge": huge, "plain": plain}
    prompt = torch.arange(16)[None] + 100
    token = torch.tensor([[5]])
    times: dict[str, list[float]] = {"huge": [], "plain": []}
    with torch.inference_mode():
        for name, m in models.items():
            m(prompt, torch.arange(16), caches[name])
            for i in range(3):  # warm
                m(token, torch.arange(16 + i, 17 + i), caches[name])
        for i in range(args.steps):
            order = ("huge", "plain") if i % 2 == 0 else ("plain", "huge")
            pos = torch.arange(19 + i, 20 + i)
            for name in order:
                t0 = time.perf_counter()
                models[name](token, pos, caches[name])
                times[name].append(time.perf_counter() - t0)
    cmp = compare_paired(times["plain"], times["huge"], name="huge pages", baseline_name="ordinary pages")
    print(f"decode step, ordinary pages: {statistics.median(times['plain']) * 1e3:.1f} ms (median of {args.steps})")
    print(f"decode step, huge pages:     {statistics.median(times['huge']) * 1e3:.1f} ms")
    print(f"huge / ordinary: {watch.ratio(cmp.ratio, '.3f')} ({cmp.low:.3f}–{cmp.high:.3f}, {cmp.pairs} pairs): {cmp.verdict}")
    bw = {}
    for name, on in (("ordinary", False), ("huge", True)):
        huge_pages.ENABLED = on
        bw[name] = read_bandwidth(nbytes)
    huge_pages.ENABLED = True
    ordinary, in_huge = bw["ordinary"] / 1e9, bw["huge"] / 1e9
    print(f"read bandwidth (torch.sum, 1 thread): ordinary pages {ordinary:.2f} GB/s, huge pages {in_huge:.2f} GB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
