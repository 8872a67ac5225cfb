"""``kvsim run`` with several requests (``--prompt A --prompt B …`` or ``--requests FILE``): they run
through one shared paged block pool (``kvsim.serving.requests``), with prefix caching on (default), off
(``--no-prefix-cache``) or both, side by side (``--compare-prefix-cache``); or, with ``--batching
continuous``, all together in one batched forward per step (``kvsim.cli.batching``).

Text: one row per request — prefill rows computed and reused, block hits, TTFT, blocks held — then the
waste of three ways to allocate the same rows. ``--json``: one object per request (``"request"``,
``"prefix_cache"``, …), then ``{"summary": …}``. ``--save FILE`` writes the run(s) with the pool's
step-by-step snapshots (``kvsim.serving.saved_runs``).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, TextIO

from ..core.sampling import Sampling
from ..costs.memory import human_bytes
from ..serving.request_lists import RequestList, check_prompts, encode_requests, load_requests
from .args import UsageError, json_line, positive_int
from .batching import add_batching_arguments, batching_flags_given, check_batching_flags

if TYPE_CHECKING:
    from ..serving.records import RequestsRun

DEFAULT_BLOCK_SIZE = 16
DEFAULT_REQUEST_REPEATS = 3


def add_requests_arguments(r: argparse.ArgumentParser) -> None:
    """The several-requests flags of ``kvsim run``."""
    r.add_argument(
        "--block-size", type=positive_int, help=f"several requests: token slots per block (default {DEFAULT_BLOCK_SIZE})"
    )
    r.add_argument(
        "--pool-blocks", type=positive_int, help="several requests: blocks in the shared pool (default: room for all at once)"
    )
    r.add_argument("--no-prefix-cache", action="store_true", help="several requests: do not reuse shared prefix blocks")
    r.add_argument(
        "--compare-prefix-cache", action="store_true", help="several requests: run them without, then with prefix caching"
    )
    r.add_argument(
        "--interleave", action="store_true", help="several requests: decode them round-robin (default: one after another)"
    )
    add_batching_arguments(r)


def check_single_prompt_flags(args: argparse.Namespace) -> None:
    """The several-requests flags make no sense with one prompt: say so rather than ignore them."""
    given = [
        flag
        for flag, value in (
            ("--block-size", args.block_size),
            ("--pool-blocks", args.pool_blocks),
            ("--no-prefix-cache", args.no_prefix_cache or None),
            ("--compare-prefix-cache", args.compare_prefix_cache or None),
            ("--interleave", args.interleave or None),
            *batching_flags_given(args),
        )
        if value is not None
    ]
    if given:
        raise UsageError(
            f"{given[0]} applies to several requests (give --prompt more than once, or --requests FILE); "
            "one prompt through a paged cache is --lanes paged:B"
        )


def _request_list(args: argparse.Namespace) -> RequestList:
    if args.requests is not None:
        return load_requests(args.requests)
    return RequestList(check_prompts(list(args.prompt), "--prompt"))


def cmd_requests(args: argparse.Namespace) -> int:
    from ..models.loading import load_model
    from ..serving.core import OneAtATime, RunOptions
    from ..serving.requests import PrefixComparison
    from ..serving.study import engine_for

    if args.steps <= 0:
        raise UsageError(f"--steps must be ≥ 1, got {args.steps}")
    for flag, value in (("--free-running", args.free_running or None), ("--reference", args.reference)):
        if value is not None:
            raise UsageError(f"{flag} applies to one prompt, not to several requests")
    if args.lanes.replace(" ", "") != "uncached,cached":
        raise UsageError("--lanes applies to one prompt; several requests run through one paged pool (--block-size B)")
    if args.no_prefix_cache and args.compare_prefix_cache:
        raise UsageError("--no-prefix-cache and --compare-prefix-cache exclude each other")
    from ..caches.blocks import check_pool_figures

    check_pool_figures(args.block_size or DEFAULT_BLOCK_SIZE, args.pool_blocks)  # sizes before the model loads
    if args.save is not None:
        from ..core.atomic import WriteError, check_target

        try:  # an empty path, a device or a FIFO is refused before the model loads
            check_target(args.save)
        except WriteError as exc:
            raise UsageError(f"--save: {exc}") from None
        folder = os.path.dirname(os.path.abspath(args.save))
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            raise UsageError(f"--save: cannot write into {folder} (no such folder or no permission)")
    check_batching_flags(args)
    requests = _request_list(args)  # a bad file is one error line before the model loads
    sampling = Sampling(temperature=args.temperature, top_k=args.top_k, top_p=args.top_p, seed=args.seed)
    loaded = load_model(args.model, device=args.device, dtype=args.dtype)
    if loaded.model.cfg.linear_layers:  # the paged pool holds K/V blocks; a recurrent layer's state is no block (yet)
        raise UsageError(
            "several requests through the paged pool hold K/V blocks; a hybrid (qwen3_next) model's Gated DeltaNet "
            "layers hold a recurrent state instead, which the pool does not keep yet: run one prompt at a time"
        )
    if loaded.model.cfg.kv_share > 1 and args.batching == "continuous":  # a packed row attends per request
        raise UsageError(
            "continuous batching packs the requests into one row; a CLA model's borrowing layers read their owner's "
            "rows per sequence, which a packed row does not give them yet: leave --batching off"
        )
    inputs = encode_requests(loaded.tokenizer, requests, chat=not args.no_chat_template)
    if args.batching == "continuous":
        from .batching import cmd_batching

        return cmd_batching(args, loaded, requests, inputs, sampling)
    options = RunOptions(
        block_size=args.block_size or DEFAULT_BLOCK_SIZE,
        pool_blocks=args.pool_blocks,
        prefix_caching=not args.no_prefix_cache,
        steps=args.steps,
        sampling=sampling,
        stop_at_eos=not args.ignore_eos,
        model_id=loaded.model_id,
        keep_snapshots=bool(args.save),  # the pool's step-by-step snapshots go into the saved file
    )
    schedule = "interleaved" if args.interleave else "sequential"
    repeats = args.repeats or DEFAULT_REQUEST_REPEATS
    both = None
    from ..core.compare import load_average, load_note

    load_start = load_average()
    if args.compare_prefix_cache:
        both = PrefixComparison(loaded.model, loaded.tokenizer, inputs, options, OneAtATime(schedule, repeats)).run()
        runs = [both.off, both.on]
    else:
        runs = [engine_for(loaded.model, loaded.tokenizer, inputs, options, schedule, repeats=repeats).run()]
    if args.save:
        from ..serving.saved_runs import save_runs

        try:
            save_runs(runs, args.save)
        except OSError as exc:  # a WriteError names the file: the file as it was is kept
            raise UsageError(f"could not save the run: {exc.strerror and f'{args.save}: {exc.strerror}' or exc}") from None
    out = sys.stdout
    if args.json:
        for run in runs:
            for req in run.requests:
                out.write(json_line({**req.as_dict(), "prefix_cache": run.prefix_caching}) + "\n")
        summaries: dict[str, object] = {("on" if run.prefix_caching else "off"): run.summary() for run in runs}
        if len(runs) == 2:
            summaries["ttft_ratio_on_off"] = [
                round(b.ttft_ms / a.ttft_ms, 4) if a.ttft_ms > 0 else None
                for a, b in zip(runs[0].requests, runs[1].requests, strict=True)
            ]
        if both is not None and both.ttft:  # per request, on against off, paired: ratio, interval, verdict
            summaries["on_vs_off"] = both.comparisons()
            summaries["load"] = [load_start, load_average()]
        out.write(json_line({"summary": summaries}) + "\n")
        return 0
    cfg = loaded.model.cfg
    out.write(
        f"model {loaded.model_id}: {cfg.n_layers} layers, {cfg.n_kv_heads} kv heads × {cfg.head_dim}; "
        f"{len(inputs)} requests{' (' + requests.title + ')' if requests.title else ''}, "
        f"blocks of {runs[0].block_size} slots ({human_bytes(runs[0].block_bytes)} each), pool {runs[0].pool_blocks} blocks, "
        f"{runs[0].schedule}, TTFT = median of "
        f"{'the interleaved trials' if both is not None else runs[0].repeats}\n"
    )
    for run in runs:
        _print_run(run, out)
    if both is not None:
        out.write(
            "\nwith / without prefix caching, per request (the two runs' prefills and decode steps interleaved, "
            "paired; 95% interval of the median ratio):\n"
        )
        for i, (ttft, itl) in enumerate(zip(both.ttft, both.itl, strict=True)):
            t = ttft.describe() if ttft is not None else "-"
            d = itl.describe() if itl is not None else "-"
            out.write(f"  request {i + 1}: TTFT {t}; ITL {d}\n")
        out.write(f"  {load_note(load_start, load_average())}\n")
    _print_waste(runs[-1], out)
    return 0


def _print_run(run: RequestsRun, out: TextIO) -> None:
    out.write(f"\nprefix caching {'on' if run.prefix_caching else 'off'}:\n")
    out.write(
        f"{'req':>3} {'prompt':>6} {'computed':>8} {'reused':>6} {'hits':>4} {'TTFT ms':>9} {'ITL ms':>7} {'blocks':>6}  text\n"
    )
    for r in run.requests:
        itl = f"{r.itl_ms:.2f}" if r.itl_ms is not None else "-"
        text = repr(r.output_text)[1:-1][:40]
        out.write(
            f"{r.index + 1:>3} {len(r.prompt_ids):>6} {r.prefill_rows:>8} {r.reused_rows:>6} {r.hit_blocks:>4} "
            f"{r.ttft_ms:>9.2f} {itl:>7} {r.blocks_held:>6}  {text}\n"
        )
    s = run.summary()
    out.write(
        f"    prefill rows computed {s['prefill_rows_total']}, reused {s['reused_rows_total']}; "
        f"TTFT total {s['ttft_ms_total']:.2f} ms; evictions {run.evictions}\n"
    )


def _print_waste(run: RequestsRun, out: TextIO) -> None:
    w = run.waste
    out.write(f"\nmemory for these requests held at once ({w.exact_slots} rows; blocks of {w.block_size}):\n")
    rows: list[tuple[str, int, float | None]] = [
        (f"contiguous, preallocated to {w.max_len}", w.preallocated_slots, w.preallocated_waste),
        ("contiguous, exact (length known in advance)", w.exact_slots, w.exact_waste),
        ("paged (last block's tail empty)", w.paged_slots, w.paged_waste),
    ]
    if run.prefix_caching:
        rows.append(("paged, shared prefix blocks counted once", w.paged_shared_slots, None))
    for name, slots, waste in rows:
        wasted = f"{100 * waste:5.1f}% wasted" if waste is not None else "saves " + f"{w.paged_slots - slots} slots"
        out.write(f"  {name:<44} {slots:>8} slots {human_bytes(slots * w.bytes_per_slot):>10}  {wasted}\n")
