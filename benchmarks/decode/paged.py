"""The paged lane's cost over the contiguous ``kv`` lane: one decode step at a fixed length, interleaved.

Both caches are prefilled with the same ``P`` tokens; then, ``--steps`` times per round, each cache
decodes one token at position ``P`` and is truncated back to ``P`` rows (outside the timed region), so
every timed step is the same step at the same length. The order alternates step by step (kv, paged,
paged, kv, …), so machine noise hits both alike. Per round the ratio of the medians is taken; the
figure is the median of the rounds' ratios with their min–max, and the machine's load (1-minute
average) before and after.

    PYTHONPATH=. python benchmarks/decode/paged.py [--model smollm2-135m] [--lengths 256,901] [--block 16]
        [--rounds 5] [--steps 40]

A third arm, "paged, full read", is the paged lane reading every row through the whole table every step
(``SequenceBlocks.gather_through_table``, what ``gather`` did before the read buffer): before and after
in one interleaved run. Also counts the K/V rows the paged lane copies per step
(``SequenceBlocks.rows_copied``): 1 per layer with the read buffer.

Run it from the repository root with ``PYTHONPATH=.`` so the checkout's kvsim is the one measured.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import torch

from kvsim.caches import make_cache, parse_spec
from kvsim.models.loading import load_model, set_threads

sys.path.append(str(Path(__file__).resolve().parents[1]))  # benchmarks/, where the shared _load.py is
from _load import LoadWatch  # noqa: E402


def _load() -> float:
    return os.getloadavg()[0]


@torch.no_grad()
def _step(model, cache, token: torch.Tensor, position: int) -> float:
    t0 = time.perf_counter()
    model(token, torch.arange(position, position + 1), cache, last_only=True)
    return time.perf_counter() - t0


def _cache(spec: str, model):
    return make_cache(parse_spec(spec), model.cfg.n_layers)


@torch.no_grad()
def measure(model, length: int, block: int, rounds: int, steps: int) -> dict:
    gen = torch.Generator().manual_seed(length)
    prompt = torch.randint(0, model.cfg.vocab_size, (1, length), generator=gen)
    kv, paged, full = _cache("kv", model), _cache(f"paged:{block}", model), _cache(f"paged:{block}", model)
    if hasattr(full.seq, "gather_through_table"):  # "before": every row read through the table every step
        full.seq.gather = full.seq.gather_through_table
    else:
        full = None
    arms = {"kv": kv, "paged": paged, **({"paged, full read": full} if full is not None else {})}
    for cache in arms.values():
        model(prompt, torch.arange(length), cache, last_only=True)
    token = torch.tensor([[7]])
    for cache in arms.values():  # warm-up
        for _ in range(3):
            _step(model, cache, token, length)
            cache.truncate(length)
    seq = paged.seq
    copied_before = getattr(seq, "rows_copied", None)
    names = list(arms)
    medians: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(rounds):
        times: dict[str, list[float]] = {name: [] for name in names}
        for i in range(steps):
            order = names[i % len(names) :] + names[: i % len(names)]  # each arm first in turn
            for name in order if i % 2 == 0 else order[::-1]:
                times[name].append(_step(model, arms[name], token, length))
                arms[name].truncate(length)
        for name in names:
            medians[name].append(statistics.median(times[name]) * 1e3)
    copied = getattr(seq, "rows_copied", None)
    per_step = None
    if copied is not None and copied_before is not None:
        per_step = (copied - copied_before) / (rounds * steps * model.cfg.n_layers)
    return {"medians": medians, "rows": per_step}


def main() -> None:
    watch = LoadWatch()  # the load beside the figures; no ratio when it moved during the run
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--lengths", default="256,901")
    ap.add_argument("--block", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    set_threads(args.threads)  # torch's and numpy's BLAS (the decode kernel's) threads
    loaded = load_model(args.model)
    model = loaded.model
    load0 = _load()
    print(
        f"{args.model}, torch {torch.__version__}, {torch.get_num_threads()} thread(s), paged:{args.block} vs kv, "
        f"{args.rounds} rounds × {args.steps} interleaved steps, load {load0:.2f}"
    )
    print(f"{'tokens':>6} {'lane':<17} {'ms':>8} {'/kv':>7} {'min–max of rounds':>18}")
    for length in (int(x) for x in args.lengths.split(",")):
        r = measure(model, length, args.block, args.rounds, args.steps)
        kv = r["medians"]["kv"]
        for name, ms in r["medians"].items():
            ratios = [m / k for m, k in zip(ms, kv, strict=True)]
            extra = ""
            if name == "paged" and r["rows"] is not None:
                extra = f"  rows copied per layer per step {r['rows']:.1f}"
            ratio = watch.ratio(statistics.median(ratios), ">7.3f", short=True)
            print(f"{length:>6} {name:<17} {statistics.median(ms):>8.2f} {ratio} {min(ratios):>9.3f}–{max(ratios):.3f}{extra}")
    print(f"load before {load0:.2f}, after {_load():.2f}")


if __name__ == "__main__":
    main()
