"""Weight-quantized and speculative lanes, measured (issue 22; figures in docs/weights-and-speculation.md).

Weights: the full-precision ``kv`` lane against ``kv@w8`` and ``kv@w4:gG`` in lockstep — the weights'
real bytes, the bytes a decode step reads (what the roofline's memory-bound time is proportional
to), max and mean |Δlogit|, mean KL, the first step whose own choice differs, perplexity of the
reference continuation, and the median decode step time (INT8 with both matmul paths).
Speculation: ``kv`` against ``spec:K:lookup``, ``spec:K:early:N`` (and ``spec:K:model:NAME`` when
given) on two prompts — one that copies from its context, one that does not — acceptance rate,
tokens per target forward, and time per produced token against the plain lane's.

    python benchmarks/decode/model_side.py --model tiny --steps 48
    python benchmarks/decode/model_side.py --model smollm2-135m --steps 32 --early 8
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.append(str(Path(__file__).resolve().parents[1]))  # benchmarks/, where the shared _load.py is
from _load import LoadWatch  # noqa: E402

COPY_TEXT = (
    "Elizabeth walked to the window. Mr. Darcy said nothing, and the room was quiet. "
    "Elizabeth walked to the window. Mr. Darcy said nothing, and the room was quiet. "
    "Elizabeth walked to the window. Mr. Darcy"
)
FREE_TEXT = "Once upon a time, in a small village by the sea, there lived"


def _run(loaded, ids, lanes: str, steps: int, repeats: int = 1):
    from kvsim.caches import parse_lanes
    from kvsim.engine.simulate import Simulator, summarize

    sim = Simulator(loaded.model, loaded.tokenizer, ids, parse_lanes(lanes), repeats=repeats, model_id=loaded.model_id)
    records = list(sim.run(steps, stop_at_eos=False))
    return sim, records, summarize(sim.trace)


def load_line() -> str:
    load = os.getloadavg()
    return f"load average {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f} on {os.cpu_count()} CPUs ({time.strftime('%H:%M:%S')})"


def weights_table(loaded, ids, steps: int, formats: list[str], kernels: list[str]) -> None:
    """*predicted* = the fp32 lane's measured median step × this lane's read/step ÷ fp32's: the time a
    memory-bound step would take for these bytes (the roofline's slope, calibrated on the fp32 lane)."""
    from kvsim.models.kernels import quantized_weights as qw

    print(f"\n## weights ({loaded.model_id}, prompt {len(ids)} tokens, {steps} steps, lockstep on the kv lane's tokens)")
    print(load_line())
    print(
        f"{'lane':<14} {'kernel':<9} {'weight bytes':>13} {'read/step':>11} {'max|Δlogit|':>12} {'mean|Δlogit|':>12} "
        f"{'mean KL':>9} {'1st diff':>8} {'ppl(ref)':>9} {'ms/step':>8} {'predicted':>9}"
    )
    base: tuple[float, int] | None = None  # the fp32 lane's median ms and read/step
    for kernel in kernels:
        qw.INT8_KERNEL["cpu"] = kernel
        lanes = ",".join(["kv"] + [f"kv@{f}" for f in formats if kernel == "dequant" or f == "w8"])
        sim, records, summary = _run(loaded, ids, lanes, steps)
        for lane in sim.lanes:
            s = summary["lanes"][lane.name]
            decode = [r.lane(lane.name) for r in records[1:]]
            ms = statistics.median(d.wall_ms for d in decode)
            kl = statistics.fmean(r.lane(lane.name).kl_div for r in records)
            read = decode[-1].bytes_by_component["weights"]
            first = s["first_divergent_step"]
            if not lane.spec.weights and base is None:
                base = (ms, read)
            elif kernel != kernels[0] and lane.name == "kv":
                continue  # the fp32 lane is the same in each run: printed (and the base taken) once
            predicted = base[0] * read / base[1] if base else float("nan")
            print(
                f"{lane.name:<14} {kernel if lane.spec.weights else 'fp32':<9} {lane.weight_bytes['total']:>13,} {read:>11,} "
                f"{s['max_abs_logit_diff']:>12.4f} {s['mean_abs_logit_diff']:>12.4f} {kl:>9.5f} "
                f"{'-' if first is None else first:>8} {s['perplexity_of_reference']:>9.3f} {ms:>8.2f} {predicted:>9.2f}"
            )
        print(load_line(), flush=True)
    qw.INT8_KERNEL["cpu"] = "dequant"


def spec_table(loaded, prompts: dict[str, list[int]], steps: int, k: int, sources: list[str]) -> None:
    print(f"\n## speculative decoding ({loaded.model_id}, k = {k}, {steps} steps, greedy)")
    print(
        f"{'prompt':<8} {'lane':<26} {'accepted/drafted':>17} {'rate':>6} {'tok/fwd':>8} {'fwds':>5} "
        f"{'ms/token':>9} {'vs kv':>6} {'same tokens':>11}"
    )
    lanes = ",".join(["kv"] + [f"spec:{k}:{src}" for src in sources])
    print(load_line())
    for kind, ids in prompts.items():
        sim, records, summary = _run(loaded, ids, lanes, steps)
        decode = records[1:]
        base = None
        for lane in sim.lanes:
            s = summary["lanes"][lane.name]
            per_token = sum(r.lane(lane.name).wall_ms for r in decode) / len(decode)  # every step produces one token
            base = per_token if base is None else base
            rate = "-" if s["acceptance_rate"] is None else f"{s['acceptance_rate']:.0%}"
            ratio = f"{s['accepted_total']}/{s['drafted_total']}"
            print(
                f"{kind:<8} {lane.name:<26} {ratio:>17} {rate:>6} {s['tokens_per_forward']:>8.2f} {s['target_forwards']:>5} "
                f"{per_token:>9.2f} {per_token / base:>6.2f} {str(s['tokens_identical']):>11}"
            )
        print(load_line(), flush=True)


def main() -> None:
    LoadWatch()  # the machine's load at start and end, printed beside the figures (benchmarks/_load.py)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="tiny")
    ap.add_argument("--steps", type=int, default=48)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--early", type=int, default=2, help="layers of the early-exit draft")
    ap.add_argument("--draft-model", default=None, help="a smaller model with the same tokenizer (spec:K:model:NAME)")
    ap.add_argument("--formats", default="w8,w8:g64,w4:g32,w4:g64")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--kernels", default="dequant,int8pack", help="INT8 matmul paths to time (int8pack: w8 lanes only)")
    ap.add_argument("--skip", choices=["weights", "spec"], default=None)
    args = ap.parse_args()
    from kvsim.models.loading import load_model, set_threads

    set_threads(args.threads)  # torch's and numpy's BLAS (the decode kernel's) threads

    t0 = time.time()
    loaded = load_model(args.model)
    tok = loaded.tokenizer
    print(f"torch {torch.__version__}, {args.threads} thread(s); model {args.model}: {loaded.model.n_params():,} parameters")
    prompts = {"copies": tok.encode(COPY_TEXT), "free": tok.encode(FREE_TEXT)}
    if args.skip != "weights":
        weights_table(loaded, prompts["free"], args.steps, args.formats.split(","), args.kernels.split(","))
    if args.skip != "spec":
        sources = ["lookup", f"early:{args.early}"] + ([f"model:{args.draft_model}"] if args.draft_model else [])
        spec_table(loaded, prompts, args.steps, args.k, sources)
    print(f"\n({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
