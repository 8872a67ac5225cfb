"""``kvsim run --requests FILE --batching continuous``: the requests arrive over steps and run together,
one batched forward per step (``kvsim.serving.batching``), under ``--max-batched-tokens N``.

Text: one line per step — which requests ran, how many positions each and as what (``p`` a prompt chunk,
``d`` a decode, ``r`` a recompute after preemption), who was preempted, arrived or finished, the pool's
occupancy — then one row per request: arrival, TTFT, inter-token latency (median and worst),
preemptions. ``--json``: one ``{"batch_step": …}`` object per step, one object per request, then
``{"summary": …}``. ``--save FILE`` keeps it all (``kvsim.serving.saved_runs``); ``kvsim inspect FILE``
summarises it.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, TextIO

from ..core.pool_semantics import DEFAULT_POOL_SEMANTICS
from ..costs.memory import human_bytes
from .args import UsageError, json_line, nonneg_int, positive_int

if TYPE_CHECKING:
    from ..core.sampling import Sampling
    from ..models.base import LoadedModel
    from ..serving.records import BatchStep, RequestsRun
    from ..serving.request_lists import RequestInput, RequestList

KIND_LETTERS = {"prefill": "p", "decode": "d", "recompute": "r"}


def add_batching_arguments(r: argparse.ArgumentParser) -> None:
    r.add_argument(
        "--batching",
        choices=["off", "continuous"],
        help="several requests: 'continuous' runs them together, one batched forward per step (default off)",
    )
    r.add_argument("--max-batched-tokens", type=positive_int, help="continuous batching: positions per forward (default 256)")
    r.add_argument(
        "--no-chunked-prefill", action="store_true", help="continuous batching: a prompt runs whole in one step or waits"
    )
    r.add_argument("--chunk-size", type=positive_int, help="continuous batching: prompt positions per request per step at most")
    r.add_argument("--max-running", type=positive_int, help="continuous batching: requests in the batch at most")
    r.add_argument(
        "--arrivals",
        metavar="STEPS",
        help="continuous batching: the step each request arrives at, comma-separated (default: the file's, or all at 0)",
    )
    r.add_argument(
        "--arrival-rate",
        type=float,
        metavar="R",
        help="continuous batching: requests arrive at random, R per step on average (Poisson, seeded by --seed)",
    )


def batching_flags_given(args: argparse.Namespace) -> list[tuple[str, object]]:
    return [
        ("--batching", args.batching),
        ("--max-batched-tokens", args.max_batched_tokens),
        ("--no-chunked-prefill", args.no_chunked_prefill or None),
        ("--chunk-size", args.chunk_size),
        ("--max-running", args.max_running),
        ("--arrivals", args.arrivals),
        ("--arrival-rate", args.arrival_rate),
    ]


def check_batching_flags(args: argparse.Namespace) -> None:
    if args.batching == "continuous":
        for flag, value in (
            ("--interleave", args.interleave or None),
            ("--compare-prefix-cache", args.compare_prefix_cache or None),
            ("--repeats", args.repeats),
        ):
            if value is not None:
                raise UsageError(
                    f"{flag} does not apply to --batching continuous (each step is timed once; "
                    "benchmarks/serving/batching.py repeats whole runs)"
                )
        if args.arrivals is not None and args.arrival_rate is not None:
            raise UsageError("--arrivals and --arrival-rate exclude each other")
        return
    for flag, value in batching_flags_given(args)[1:]:
        if value is not None:
            raise UsageError(f"{flag} applies to --batching continuous")


def _arrivals(args: argparse.Namespace, requests: RequestList, n: int) -> list[int]:
    from ..serving.batching import poisson_arrivals

    if args.arrivals is not None:
        try:
            steps = [nonneg_int(x.strip()) for x in args.arrivals.split(",")]
        except argparse.ArgumentTypeError as exc:
            raise UsageError(f"--arrivals: {exc}") from None
        if len(steps) != n:
            raise UsageError(f"--arrivals gives {len(steps)} steps for {n} requests")
        return steps
    if args.arrival_rate is not None:
        return poisson_arrivals(n, args.arrival_rate, args.seed)
    return list(requests.arrivals) if requests.arrivals is not None else [0] * n


def tier_hits(run: RequestsRun, index: int) -> dict[str, int]:
    """A request's prefix-hit blocks brought back from the host and disk tiers (nothing when the run had no tiers)."""
    offload = run.meta.get("offload")
    if not isinstance(offload, dict):
        return {}
    host, disk = offload["recalled"][index]
    return {"hits_from_host": host, "hits_from_disk": disk}


def print_offload(run: RequestsRun, out: TextIO) -> None:
    """What the run's offload tiers stored and loaded (nothing when it had none)."""
    offload = run.meta.get("offload")
    if not isinstance(offload, dict):
        return
    out.write(f"    offload {offload['spec']} ({offload['host_memory'] or 'no host tier'}):\n")
    for tier, t in offload["tiers"].items():
        out.write(
            f"      {tier:<4} stored {t['store_blocks']} blocks ({human_bytes(t['store_bytes'])}) in {t['store_ms']:.2f} ms, "
            f"loaded {t['load_blocks']} ({human_bytes(t['load_bytes'])}) in {t['load_ms']:.2f} ms; "
            f"holds {t['held_blocks']} of {t['capacity_blocks']} at the end\n"
        )


def cmd_batching(
    args: argparse.Namespace, loaded: LoadedModel, requests: RequestList, inputs: list[RequestInput], sampling: Sampling
) -> int:
    from ..serving.core import DEFAULT_MAX_BATCHED_TOKENS, BatchLimits, RunOptions
    from ..serving.study import engine_for

    arrivals = _arrivals(args, requests, len(inputs))
    options = RunOptions(
        block_size=args.block_size or 16,
        pool_blocks=args.pool_blocks,
        prefix_caching=not args.no_prefix_cache,
        pool_semantics=args.pool_semantics or DEFAULT_POOL_SEMANTICS,
        steps=args.steps,
        sampling=sampling,
        stop_at_eos=not args.ignore_eos,
        model_id=loaded.model_id,
        keep_snapshots=bool(args.save),
        offload=getattr(args, "offload_spec", None),
    )
    limits = BatchLimits(
        max_batched_tokens=args.max_batched_tokens or DEFAULT_MAX_BATCHED_TOKENS,
        chunked_prefill=not args.no_chunked_prefill,
        chunk_size=args.chunk_size,
        max_running=args.max_running,
    )
    run = engine_for(loaded.model, loaded.tokenizer, inputs, options, "continuous", limits=limits, arrivals=arrivals).run()
    if args.save:
        from ..serving.saved_runs import save_runs

        try:
            save_runs([run], args.save)
        except OSError as exc:
            raise UsageError(f"could not save the run to {args.save}: {exc.strerror or exc}") from None
    out = sys.stdout
    if args.json:
        for step in run.batches:
            out.write(json_line({"batch_step": step.as_dict()}) + "\n")
        for req in run.requests:
            out.write(json_line({**req.as_dict(), "prefix_cache": run.prefix_caching, **tier_hits(run, req.index)}) + "\n")
        out.write(json_line({"summary": run.summary()}) + "\n")
        return 0
    cfg = loaded.model.cfg
    s = run.summary()
    out.write(
        f"model {loaded.model_id}: {cfg.n_layers} layers, {cfg.n_kv_heads} kv heads × {cfg.head_dim}; "
        f"{len(inputs)} requests{' (' + requests.title + ')' if requests.title else ''}, continuous batching, "
        f"≤ {s['max_batched_tokens']} positions a step, chunked prefill {'on' if s['chunked_prefill'] else 'off'}; "
        f"blocks of {run.block_size} slots ({human_bytes(run.block_bytes)} each), pool {pool_words(run)}, "
        f"prefix caching {'on' if run.prefix_caching else 'off'}\n\n"
    )
    write_steps(run, out)
    out.write(f"\n{'req':>3} {'arrives':>7} {'prompt':>6} {'reused':>6} {'TTFT ms':>9} {'ITL ms':>7} {'worst':>7} ")
    out.write(f"{'preempt':>7}  text\n")
    for r in run.requests:
        gaps = r.itl_gaps_ms
        itl = f"{r.itl_ms:.2f}" if r.itl_ms is not None else "-"
        worst = f"{max(gaps):.2f}" if gaps else "-"
        out.write(
            f"{r.index + 1:>3} {r.arrival_step:>7} {len(r.prompt_ids):>6} {r.reused_rows:>6} {r.ttft_ms:>9.2f} {itl:>7} "
            f"{worst:>7} {r.preemptions:>7}  {repr(r.output_text)[1:-1][:40]}\n"
        )
    out.write(
        f"    {s['batch_steps']} steps in {s['clock_ms']:.1f} ms, largest batch {s['largest_batch']}; "
        f"{s['tokens_per_forward']:.2f} tokens a forward, {_rate(s['tokens_per_s'])} tokens/s; "
        f"{s['preemptions']} preemptions ({s['recomputed_rows']} rows recomputed), {run.evictions} evictions\n"
    )
    print_offload(run, out)
    return 0


def _rate(tokens_per_s: object) -> str:
    """A throughput as a reader takes it in: "787" or "12.5" (the JSON keeps 4 decimals), "-" when the run took no time."""
    if not isinstance(tokens_per_s, int | float):  # None: the run took no time
        return "-"
    return f"{tokens_per_s:.0f}" if tokens_per_s >= 100 else f"{tokens_per_s:.1f}"


def pool_words(run: RequestsRun) -> str:
    """The pool's size as a line says it: the blocks requests can be handed (and vLLM's null block)."""
    if run.null_block is None:
        return f"{run.usable_blocks} blocks"
    return f"{run.usable_blocks} blocks + null block {run.null_block} (vLLM's order)"


def step_line(step: BatchStep, pool_blocks: int) -> str:
    """``step 3  r1:d1 r2:p7  | preempted r3 · arrived r4 · finished r1 · pool 11/12`` (requests from 1)."""
    batch = " ".join(f"r{e.request + 1}:{KIND_LETTERS.get(e.kind, '?')}{e.tokens}" for e in step.entries)
    notes = [
        f"{word} " + ",".join(f"r{i + 1}" for i in ids)
        for word, ids in (("preempted", step.preempted), ("arrived", step.arrived), ("finished", step.finished))
        if ids
    ]
    notes.append(f"pool {step.held_blocks}/{pool_blocks}")
    if step.waiting:
        notes.append(f"{len(step.waiting)} waiting")
    return f"step {step.step:>4} {step.ms:8.2f} ms  {batch:<40} | {' · '.join(notes)}"


def write_steps(run: RequestsRun, out: TextIO, limit: int | None = None) -> None:
    steps = run.batches if limit is None else run.batches[:limit]
    for step in steps:
        out.write(step_line(step, run.usable_blocks) + "\n")
    if limit is not None and len(run.batches) > limit:
        out.write(f"… {len(run.batches) - limit} more steps\n")
