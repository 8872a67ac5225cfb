"""``kvsim inspect``: a saved run (.kvsim) checked as the app's Open run checks it, then summarised."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ..core.text import printable
from ..core.units import human_bytes
from .args import Subcommands, examples, json_line

if TYPE_CHECKING:
    from ..serving.records import RequestsRun

HELP = "check a saved run (.kvsim) and print what it holds"


def add_parser(sub: Subcommands) -> None:
    """`kvsim inspect FILE`: its arguments."""
    i = sub.add_parser(
        "inspect",
        help=HELP,
        **examples(
            "kvsim run --prompt Hi --steps 4 --save run.kvsim", "kvsim inspect run.kvsim", "kvsim inspect run.kvsim --json"
        ),
    )
    i.add_argument("file", help="a .kvsim file written by `kvsim run --save` or the app's Save run")
    i.add_argument("--json", action="store_true", help="the run's metadata and summary as one JSON object")


def run(args: argparse.Namespace) -> int:
    """Validate a ``.kvsim`` file as the app's Open run does, then summarise it."""
    from ..engine.summary import summarize  # numpy only: inspecting a run never imports torch
    from ..engine.trace import OtherKindError, Trace
    from ..engine.trace_checks import TraceError

    try:
        trace = Trace.load(args.file)
    except TraceError as not_a_run:
        from ..serving.saved_runs import load_runs

        try:
            runs = load_runs(args.file)  # several requests through a paged pool (`kvsim run --requests … --save`)
        except TraceError:
            if isinstance(not_a_run, OtherKindError):
                raise  # a requests file: what its reader found wrong, not "not a trace"
            raise not_a_run from None
        return _inspect_requests(args, runs)
    from ..engine.summary import compared_text

    meta, summary = trace.meta, summarize(trace)
    lanes = [lane["name"] for lane in meta["lanes"]]
    if args.json:
        print(
            json_line(
                {
                    "model_id": meta.get("model_id"),
                    "config": meta["config"],
                    "lanes": meta["lanes"],
                    "steps": len(trace.records),
                    "summary": summary,
                }
            )
        )
        return 0
    cfg = meta["config"]
    print(
        f"{printable(args.file)}: {len(trace.records)} steps of {printable(meta.get('model_id', '?'), 200)} "
        f"({cfg['n_layers']} layers, {cfg['n_heads']} heads / {cfg['n_kv_heads']} kv, head dim {cfg['head_dim']})"
    )
    print(f"lanes: {printable(', '.join(lanes))}")
    width = max(12, *(len(printable(name)) for name in summary["lanes"]))
    for name, s in summary["lanes"].items():
        name = printable(name)
        itl = f"{s['itl_ms']:.2f} ms" if s["itl_ms"] is not None else "-"
        print(
            f"{name:>{width}}: TTFT {s['ttft_ms']:.2f} ms, ITL {itl}, K/V rows {s['kv_positions_total']}, "
            f"cache {human_bytes(s['cache_bytes'])}"
        )
        if compared := compared_text(s):
            print(f"{'':>{width}}  {printable(compared)}")  # (it names the first lane, read from the file)
    return 0


def _inspect_requests(args: argparse.Namespace, runs: tuple[RequestsRun, ...]) -> int:
    """A saved requests run (or the off/on pair): per run its settings and totals, per request its figures."""
    if args.json:
        print(
            json_line(
                {
                    "requests_runs": [
                        {
                            **run.summary(),
                            "requests": [r.as_dict() for r in run.requests],
                            **({"batches": [b.as_dict() for b in run.batches]} if run.batches else {}),
                        }
                        for run in runs
                    ]
                }
            )
        )
        return 0
    for run in runs:
        s = run.summary()
        caching = "on" if run.prefix_caching else "off"
        print(
            f"{printable(args.file)}: {s['requests']} requests of {printable(run.model_id, 200)} "
            f"through a pool of {run.usable_blocks} blocks of "
            f"{run.block_size} ({run.schedule}, prefix caching {caching}): {s['prefill_rows_total']} prefill rows computed, "
            f"{s['reused_rows_total']} reused"
        )
        for r in run.requests:
            print(
                f"  request {r.index + 1}: prefill {r.prefill_rows} rows computed, {r.reused_rows} reused, "
                f"TTFT {r.ttft_ms:.2f} ms, {r.blocks_held} blocks held"
                + (f", arrived at step {r.arrival_step}, {r.preemptions} preemptions" if r.token_ms else "")
            )
        if run.batches:
            from .batching import write_steps

            print(
                f"  continuous batching: {s['batch_steps']} steps, ≤ {s['max_batched_tokens']} positions a step, largest batch "
                f"{s['largest_batch']}, {s['tokens_per_forward']:.2f} tokens a forward, {s['preemptions']} preemptions "
                f"({s['recomputed_rows']} rows recomputed)"
            )
            write_steps(run, sys.stdout, limit=40)
    return 0
