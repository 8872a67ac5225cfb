"""Continuous batching, measured: throughput against batch size, and TTFT / inter-token latency with and
without chunked prefill, on the same model in the same process (``kvsim.serving.batching``).

    python benchmarks/serving/batching.py [--model tiny] [--sizes 1,2,4,8,16] [--steps 24] [--prompt-len 16]
        [--long-len 400] [--budget 64] [--rounds 3] [--threads 1] [--device cpu] [--only throughput|latency]

Throughput: for each batch size b, b requests (distinct random prompts of ``--prompt-len`` tokens) arrive
at step 0 and generate ``--steps`` tokens each, at most b running; a *decode step* is a step in which
all b requests decode one token. Printed: the median decode step's time, decode tokens/s (b / that
time), tokens per forward, and the whole run's generated tokens/s (prefills included). Rounds
interleave the sizes (1, 2, …, 16, 1, 2, …), so machine noise hits every size alike; each figure is
the median over rounds, [min–max] its spread.

Latency: 4 short requests start decoding at step 0; at step 4 a request with a ``--long-len``-token
prompt arrives. With chunked prefill (budget ``--budget`` positions a step) its prompt is spread over
several steps; without it, it runs whole in one step (the budget raised to fit it). Printed: the long
request's TTFT, the short requests' inter-token latency (median, and the worst gap: the stall the long
prefill causes). Chunked and unchunked alternate in every round.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from kvsim.models.loading import load_model, set_threads
from kvsim.serving.batching import run_batched

sys.path.append(str(Path(__file__).resolve().parents[1]))  # benchmarks/, where the shared _load.py is
from _load import LoadWatch  # noqa: E402


def spread(values: list[float], fmt: str = "{:.2f}") -> str:
    return f"{fmt.format(statistics.median(values))} [{fmt.format(min(values))}–{fmt.format(max(values))}]"


def prompts(rng, n: int, length: int, vocab: int) -> list[list[int]]:
    return [[int(t) for t in rng.integers(3, vocab, size=length)] for _ in range(n)]


def throughput(loaded, args) -> None:
    sizes = [int(s) for s in args.sizes.split(",")]
    vocab = loaded.model.cfg.vocab_size
    rng = np.random.default_rng(0)
    batches = {b: prompts(rng, b, args.prompt_len, vocab) for b in sizes}
    results: dict[int, dict[str, list[float]]] = {b: {"step": [], "decode_tps": [], "run_tps": [], "tpf": []} for b in sizes}
    for _ in range(args.rounds):
        for b in sizes:
            run = run_batched(
                loaded.model,
                loaded.tokenizer,
                batches[b],
                steps=args.steps,
                max_batched_tokens=max(args.budget, b * args.prompt_len),
                max_running=b,
                stop_at_eos=False,
                keep_snapshots=False,
                block_size=16,
            )
            decode = [s.ms for s in run.batches if len(s.entries) == b and all(e.kind == "decode" for e in s.entries)]
            generated = sum(len(r.output_ids) for r in run.requests)
            med = statistics.median(decode)
            results[b]["step"].append(med)
            results[b]["decode_tps"].append(1e3 * b / med)
            results[b]["run_tps"].append(1e3 * generated / run.batches[-1].clock_ms)
            results[b]["tpf"].append(generated / len(run.batches))
    print(
        f"\nthroughput: {args.steps} tokens per request, prompts of {args.prompt_len}, medians over {args.rounds} "
        "interleaved rounds [min–max]"
    )
    print(f"{'batch':>5}  {'decode step ms':>24}  {'× batch 1':>9}  {'decode tokens/s':>24}  {'run tokens/s':>24}  tok/fwd")
    base = statistics.median(results[sizes[0]]["step"])
    for b in sizes:
        r = results[b]
        print(
            f"{b:>5}  {spread(r['step']):>24}  {args.watch.ratio(statistics.median(r['step']) / base, short=True):>9}  "
            f"{spread(r['decode_tps'], '{:.1f}'):>24}  {spread(r['run_tps'], '{:.1f}'):>24}  {statistics.median(r['tpf']):.2f}"
        )


def latency(loaded, args) -> None:
    vocab = loaded.model.cfg.vocab_size
    rng = np.random.default_rng(1)
    short = prompts(rng, 4, args.prompt_len, vocab)
    long = prompts(rng, 1, args.long_len, vocab)
    reqs = short + long
    arrivals = [0, 0, 0, 0, 4]
    out: dict[bool, dict[str, list[float]]] = {c: {"ttft": [], "itl": [], "worst": [], "steps": []} for c in (True, False)}
    for _ in range(args.rounds):
        for chunked in (True, False):
            run = run_batched(
                loaded.model,
                loaded.tokenizer,
                reqs,
                arrivals=arrivals,
                steps=args.steps,
                max_batched_tokens=args.budget if chunked else args.long_len + args.steps + 4 * args.prompt_len,
                chunked_prefill=chunked,
                stop_at_eos=False,
                keep_snapshots=False,
                block_size=16,
            )
            gaps = [g for r in run.requests[:4] for g in r.itl_gaps_ms]
            out[chunked]["ttft"].append(run.requests[4].ttft_ms)
            out[chunked]["itl"].append(statistics.median(gaps))
            out[chunked]["worst"].append(max(gaps))
            chunks = [s for s in run.batches if any(e.request == 4 and e.kind == "prefill" for e in s.entries)]
            out[chunked]["steps"].append(len(chunks))
    print(
        f"\nlatency: 4 requests of {args.prompt_len} tokens decoding; one of {args.long_len} arrives at step 4; "
        f"medians over {args.rounds} interleaved rounds [min–max]"
    )
    print(f"{'':<28} {'long TTFT ms':>26} {'short ITL ms (median)':>24} {'short ITL ms (worst)':>24}  prefill steps")
    for chunked in (True, False):
        r = out[chunked]
        name = f"chunked prefill, {args.budget}/step" if chunked else "no chunking (whole prompt)"
        print(
            f"{name:<28} {spread(r['ttft'], '{:.1f}'):>26} {spread(r['itl']):>24} {spread(r['worst']):>24}  "
            f"{statistics.median(r['steps']):.0f}"
        )


def main() -> None:
    watch = LoadWatch()  # the machine's load at start and end, printed beside the figures (benchmarks/_load.py)
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="tiny")
    p.add_argument("--sizes", default="1,2,4,8,16")
    p.add_argument("--steps", type=int, default=24)
    p.add_argument("--prompt-len", type=int, default=16)
    p.add_argument("--long-len", type=int, default=400)
    p.add_argument("--budget", type=int, default=64)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--device", default="cpu")
    p.add_argument("--only", choices=["throughput", "latency"])
    args = p.parse_args()
    args.watch = watch  # a ratio is withheld when the load moved during the run
    set_threads(args.threads)
    loaded = load_model(args.model, device=args.device)
    cfg = loaded.model.cfg
    print(
        f"model {loaded.model_id}: {cfg.n_layers} layers, dim {cfg.dim}, {cfg.n_kv_heads} kv heads × {cfg.head_dim}; "
        f"{loaded.model.device}, {args.threads} thread(s)"
    )
    t0 = time.perf_counter()
    if args.only != "latency":
        throughput(loaded, args)
    if args.only != "throughput":
        latency(loaded, args)
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
