"""Prefix caching and paged memory, measured: several requests behind one system prompt, run with prefix
caching off and on through one shared block pool, on the same model in the same process.

    python benchmarks/serving/requests.py [--model smollm2-135m] [--requests resources/requests/system-prompt.json]
        [--steps 32] [--block-size 16] [--block-sizes 4,8,16,32] [--repeats 5] [--rounds 3] [--threads 1]

Prints, per request: prompt tokens, prefill rows computed without/with reuse, TTFT without/with reuse
(each prefill timed ``--repeats`` times, median; off and on alternate ``--rounds`` times so machine
noise hits both alike; the median over rounds is printed) and their ratio. Then the waste of three
ways to allocate the same rows (contiguous preallocated to the model's context, contiguous exact,
paged) for several block sizes, from this run's lengths, and the pool blocks prefix sharing saves.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from kvsim.models.loading import load_model, set_threads
from kvsim.serving.request_lists import encode_requests, load_requests
from kvsim.serving.requests import compare_prefix_caching
from kvsim.serving.waste import allocation_waste

sys.path.append(str(Path(__file__).resolve().parents[1]))  # benchmarks/, where the shared _load.py is
from _load import LoadWatch  # noqa: E402


def main() -> None:
    watch = LoadWatch()  # the machine's load at start and end, printed beside the figures (benchmarks/_load.py)
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--requests", default="resources/requests/system-prompt.json")
    p.add_argument("--steps", type=int, default=32, help="tokens generated per request (1 prefill + decodes)")
    p.add_argument("--block-size", type=int, default=16, help="the pool's block size for the timed runs")
    p.add_argument("--block-sizes", default="4,8,16,32", help="block sizes for the waste table")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--ignore-eos", action="store_true")
    args = p.parse_args()
    set_threads(args.threads)
    loaded = load_model(args.model)
    cfg = loaded.model.cfg
    reqs = load_requests(args.requests)
    inputs = encode_requests(loaded.tokenizer, reqs)
    t0 = time.perf_counter()
    rounds = [
        compare_prefix_caching(
            loaded.model,
            loaded.tokenizer,
            inputs,
            block_size=args.block_size,
            steps=args.steps,
            repeats=args.repeats,
            stop_at_eos=not args.ignore_eos,
            keep_snapshots=False,
        )
        for _ in range(args.rounds)
    ]
    wall = time.perf_counter() - t0
    off, on = rounds[0].off, rounds[0].on
    print(
        f"model {loaded.model_id}: {cfg.n_layers} layers, {cfg.n_kv_heads} kv heads × {cfg.head_dim}, context {cfg.max_seq_len}; "
        f"{args.requests}: {len(inputs)} requests; blocks of {args.block_size}; {args.steps} steps; "
        f"TTFT = median of {args.repeats} repeats, median of {args.rounds} rounds (off/on alternating); "
        f"{args.threads} thread(s); {wall:.0f} s in all"
    )
    head = f"{'req':>3} {'prompt':>6} {'rows off':>8} {'rows on':>7} {'reused':>6} {'TTFT off':>9} {'TTFT on':>8} {'on/off':>6}"
    print(f"\n{head}  answer")
    ttft_off, ttft_on = [], []
    for i, (a, b) in enumerate(zip(off.requests, on.requests, strict=True)):
        t_off = statistics.median(r.off.requests[i].ttft_ms for r in rounds)
        t_on = statistics.median(r.on.requests[i].ttft_ms for r in rounds)
        ttft_off.append(t_off)
        ttft_on.append(t_on)
        answer = repr(b.output_text)[1:-1][:36]
        print(
            f"{i + 1:>3} {len(a.prompt_ids):>6} {a.prefill_rows:>8} {b.prefill_rows:>7} {b.reused_rows:>6} "
            f"{t_off:>9.2f} {t_on:>8.2f} {watch.ratio(t_on / t_off, short=True):>6}  {answer}"
        )
    same = all(a.output_ids == b.output_ids for a, b in zip(off.requests, on.requests, strict=True))
    rows_off = sum(r.prefill_rows for r in off.requests)
    rows_on = sum(r.prefill_rows for r in on.requests)
    later_off, later_on = sum(ttft_off[1:]), sum(ttft_on[1:])
    print(
        f"\nprefill rows computed: {rows_off} off, {rows_on} on ({100 * (1 - rows_on / rows_off):.1f}% skipped); "
        f"TTFT of requests 2..{len(inputs)}: {later_off:.1f} ms off, {later_on:.1f} ms on "
        f"(ratio {watch.ratio(later_on / later_off)}); "
        f"answers identical: {same}"
    )
    rows = [r.rows_held for r in on.requests]
    prompts = [r.prompt_ids for r in on.requests]
    bytes_per_slot = on.waste.bytes_per_slot
    print(f"\nwaste for these {len(rows)} requests held at once ({sum(rows)} rows, {bytes_per_slot:,} bytes a row):")
    print(f"{'B':>4} {'preallocated':>22} {'exact':>8} {'paged':>18} {'paged + prefix sharing':>26}")
    for size in (int(s) for s in args.block_sizes.split(",")):
        w = allocation_waste(rows, size, cfg.max_seq_len, bytes_per_slot, prompts)
        print(
            f"{size:>4} {w.preallocated_slots:>8} slots {100 * w.preallocated_waste:5.1f}% "
            f"{w.exact_slots:>5} 0% {w.paged_slots:>6} slots {100 * w.paged_waste:4.1f}% "
            f"{w.paged_shared_slots:>7} slots ({w.paged_slots - w.paged_shared_slots} saved)"
        )


if __name__ == "__main__":
    main()
