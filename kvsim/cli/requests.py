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

from ..core.pool_semantics import DEFAULT_POOL_SEMANTICS, POOL_SEMANTICS
from ..core.sampling import Sampling
from ..costs.memory import human_bytes
from ..serving.request_lists import RequestList, check_prompts, encode_requests, load_requests
from .args import UsageError, json_line, positive_int
from .batching import (
    add_batching_arguments,
    batching_flags_given,
    check_batching_flags,
    pool_words,
    print_offload,
    tier_hits,
)

if TYPE_CHECKING:
    from ..caches.tiers import OffloadSpec
    from ..models.base import LoadedModel
    from ..models.config import ModelConfig
    from ..serving.records import RequestsRun
    from ..serving.request_lists import RequestInput

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
        "--pool-semantics",
        choices=POOL_SEMANTICS,
        help=f"several requests: the free queue's order — vllm: vLLM v1's block pool step for step (null block 0 "
        f"besides the pool, freed blocks with no hash handed out first); kvsim: every freed block to the back "
        f"(default {DEFAULT_POOL_SEMANTICS})",
    )
    r.add_argument(
        "--compare-prefix-cache", action="store_true", help="several requests: run them without, then with prefix caching"
    )
    r.add_argument(
        "--offload",
        metavar="host:BYTES,disk:BYTES",
        help="several requests: host and/or disk tiers under the pool (e.g. host:64MB,disk:1GB): evicted cached blocks "
        "are kept there and brought back on a prefix hit",
    )
    r.add_argument(
        "--disaggregate",
        action="store_true",
        help="several requests: run them colocated (continuous batching) and disaggregated (prefill here, decode in a "
        "second process, K/V moved through shared memory); greedy",
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
            ("--pool-semantics", args.pool_semantics),
            ("--compare-prefix-cache", args.compare_prefix_cache or None),
            ("--interleave", args.interleave or None),
            ("--offload", args.offload),
            ("--disaggregate", args.disaggregate or None),
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
    for flag, value in (
        ("--free-running", args.free_running or None),
        ("--reference", args.reference),
        ("--compile", getattr(args, "compile", False) or None),  # (was silently ignored)
    ):
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
    args.offload_spec = _offload_spec(args)
    _check_disaggregate(args)
    requests = _request_list(args)  # a bad file is one error line before the model loads
    sampling = Sampling(temperature=args.temperature, top_k=args.top_k, top_p=args.top_p, seed=args.seed)
    loaded = load_model(args.model, device=args.device, dtype=args.dtype)
    if loaded.model.cfg.linear_layers:  # its requests run one at a time; the pool keeps state checkpoints per block
        given = [
            flag
            for flag, on in (
                ("--batching continuous", args.batching == "continuous"),
                ("--disaggregate", args.disaggregate),
                ("--offload", args.offload is not None),
            )
            if on
        ]
        if given:
            raise UsageError(
                f"{given[0]}: a hybrid (qwen3_next) model's Gated DeltaNet layers carry a recurrent state per request, "
                "which that way of serving does not carry yet: run the requests one at a time (the default)"
            )
    if loaded.model.cfg.kv_share > 1 and args.batching == "continuous":  # a packed row attends per request
        raise UsageError(
            "continuous batching packs the requests into one row; a CLA model's borrowing layers read their owner's "
            "rows per sequence, which a packed row does not give them yet: leave --batching off"
        )
    inputs = encode_requests(loaded.tokenizer, requests, chat=not args.no_chat_template)
    if args.disaggregate:
        return _cmd_disaggregate(args, loaded, inputs)
    if args.batching == "continuous":
        from .batching import cmd_batching

        return cmd_batching(args, loaded, requests, inputs, sampling)
    options = RunOptions(
        block_size=args.block_size or DEFAULT_BLOCK_SIZE,
        pool_blocks=args.pool_blocks,
        prefix_caching=not args.no_prefix_cache,
        pool_semantics=args.pool_semantics or DEFAULT_POOL_SEMANTICS,
        steps=args.steps,
        sampling=sampling,
        stop_at_eos=not args.ignore_eos,
        model_id=loaded.model_id,
        keep_snapshots=bool(args.save),  # the pool's step-by-step snapshots go into the saved file
        offload=args.offload_spec,
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
                out.write(json_line({**req.as_dict(), "prefix_cache": run.prefix_caching, **tier_hits(run, req.index)}) + "\n")
        summaries: dict[str, object] = {("on" if run.prefix_caching else "off"): run.summary() for run in runs}
        if len(runs) == 2:
            summaries["ttft_ratio_on_off"] = [
                round(b.ttft_ms / a.ttft_ms, 4) if a.ttft_ms > 0 else None
                for a, b in zip(runs[0].requests, runs[1].requests, strict=True)
            ]
        if both is not None and both.ttft:  # per request, on against off, paired: ratio, interval, verdict
            summaries["on_vs_off"] = both.comparisons()
            if args.offload_spec is not None or "recurrent" in runs[1].meta:
                # what loading from the tiers, or resuming a hybrid's state from a checkpoint, saved against computing
                # the rows (and the recurrence) again
                summaries["ttft_saved_ms"] = [
                    round(a.ttft_ms - b.ttft_ms, 4) for a, b in zip(runs[0].requests, runs[1].requests, strict=True)
                ]
            summaries["load"] = [load_start, load_average()]
        out.write(json_line({"summary": summaries}) + "\n")
        return 0
    cfg = loaded.model.cfg
    out.write(
        f"model {loaded.model_id}: {cfg.n_layers} layers{_layer_kinds(cfg)}, {cfg.n_kv_heads} kv heads × {cfg.head_dim}; "
        f"{len(inputs)} requests{' (' + requests.title + ')' if requests.title else ''}, "
        f"blocks of {runs[0].block_size} slots ({human_bytes(runs[0].block_bytes)} each), pool {pool_words(runs[0])}, "
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
            out.write(f"  request {i + 1}: TTFT {t}; ITL {d}{_tier_note(runs, i)}\n")
        out.write(f"  {load_note(load_start, load_average())}\n")
    _print_waste(runs[-1], out)
    return 0


def _offload_spec(args: argparse.Namespace) -> OffloadSpec | None:
    """``--offload``'s tiers, checked before the model loads (they need prefix caching: nothing else is reused)."""
    if args.offload is None:
        return None
    from ..caches.tiers import OffloadSpec
    from ..core.sampling import SimulationError

    if args.no_prefix_cache:
        raise UsageError("--offload keeps evicted prefix blocks for later hits: it needs prefix caching (drop --no-prefix-cache)")
    try:
        return OffloadSpec.parse(args.offload)
    except SimulationError as exc:
        raise UsageError(f"--offload: {exc}") from None


def _check_disaggregate(args: argparse.Namespace) -> None:
    if not args.disaggregate:
        return
    given = [
        flag
        for flag, value in (
            ("--compare-prefix-cache", args.compare_prefix_cache),
            ("--offload", args.offload is not None),
            ("--save", args.save is not None),
            ("--interleave", args.interleave),
            ("--pool-blocks", args.pool_blocks is not None),
        )
        if value
    ]
    if given:
        raise UsageError(f"--disaggregate runs its own two pools (colocated and split): drop {given[0]}")
    if args.temperature != 0:
        raise UsageError("--disaggregate compares the tokens of the two runs: greedy only (--temperature 0)")
    if args.device not in (None, "cpu"):
        raise UsageError("--disaggregate runs its decode instance on the CPU: drop --device")


def _cmd_disaggregate(args: argparse.Namespace, loaded: LoadedModel, inputs: list[RequestInput]) -> int:
    from ..serving.disagg import run_colocated, run_disaggregated

    size, steps = args.block_size or DEFAULT_BLOCK_SIZE, args.steps
    colocated = run_colocated(loaded.model, loaded.tokenizer, inputs, steps, size)
    split = run_disaggregated(args.model, loaded.model, loaded.tokenizer, inputs, steps, size, dtype=args.dtype)
    same = [a.tokens == b.tokens for a, b in zip(colocated.requests, split.requests, strict=True)]
    out = sys.stdout
    if args.json:
        for run in (colocated, split):
            out.write(json_line(run.as_dict()) + "\n")
        out.write(json_line({"summary": {"tokens_identical": all(same), "block_size": size, "steps": steps}}) + "\n")
        return 0
    out.write(f"model {loaded.model_id}: {len(inputs)} requests, blocks of {size}, {steps} steps, greedy\n")
    out.write(f"{'req':>3} {'prompt':>6} {'TTFT co':>8} {'TTFT split':>10} {'ITL co':>7} {'ITL split':>9} {'ITL max co':>10} ")
    out.write(f"{'ITL max split':>13} {'moved':>9} {'transfer ms':>11} {'same':>4}\n")
    for a, b, t, ok, given in zip(colocated.requests, split.requests, split.transfers, same, inputs, strict=True):

        def median(xs: tuple[float, ...]) -> str:
            return f"{sorted(xs)[len(xs) // 2]:.2f}" if xs else "-"

        out.write(
            f"{a.index + 1:>3} {len(given.prompt_ids):>6} {a.ttft_ms:8.2f} {b.ttft_ms:10.2f} {median(a.itl_ms):>7} "
            f"{median(b.itl_ms):>9} {max(a.itl_ms, default=0):10.2f} {max(b.itl_ms, default=0):13.2f} "
            f"{human_bytes(t.nbytes):>9} {t.pack_ms + t.unpack_ms:11.2f} {'yes' if ok else 'NO':>4}\n"
        )
    out.write(
        "  (co: continuous batching in one pool; split: prefill here, decode in a second process; transfer = the copies "
        "into and out of shared memory)\n"
    )
    return 0


def _tier_note(runs: list[RequestsRun], i: int) -> str:
    """For the off-vs-on table of a run with tiers: request ``i``'s hits from host and disk, and the TTFT they
    saved against the run that computed every row (prefix caching off)."""
    hits = tier_hits(runs[-1], i)
    if not hits:
        return ""
    saved = runs[0].requests[i].ttft_ms - runs[-1].requests[i].ttft_ms
    host, disk = hits["hits_from_host"], hits["hits_from_disk"]
    return f"; hits from host {host}, from disk {disk}; TTFT saved {saved:+.2f} ms against recompute"


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
    _print_recurrent(run, out)
    print_offload(run, out)


def _layer_kinds(cfg: ModelConfig) -> str:
    """A hybrid's layers by kind (which hold K/V rows in the pool, which a recurrent state); "" for any other."""
    rec = len(cfg.linear_layers)
    return f" ({cfg.n_layers - rec} attention with K/V blocks, {rec} Gated DeltaNet with a state)" if rec else ""


def _print_recurrent(run: RequestsRun, out: TextIO) -> None:
    """A hybrid model's run: the recurrent state checkpoints the pool keeps (one per registered block), their bytes
    beside the K/V blocks', and what the hits restored from them."""
    rec = run.meta.get("recurrent")
    if not isinstance(rec, dict):
        return
    kept, each = int(rec["checkpoints_kept"]), int(rec["checkpoint_bytes_each"])
    if not run.prefix_caching:
        out.write(
            f"    recurrent state: {rec['recurrent_layers']} Gated DeltaNet layers, {human_bytes(each)} a sequence; "
            "no checkpoints without prefix caching (every prompt runs its recurrence from token 0)\n"
        )
        return
    out.write(
        f"    recurrent state checkpoints (one per registered block, the state at its last token): {kept} kept × "
        f"{human_bytes(each)} = {human_bytes(int(rec['checkpoint_bytes']))} (peak "
        f"{human_bytes(int(rec['checkpoint_bytes_peak']))}), beside {human_bytes(run.block_bytes)} of K/V a block; "
        f"{rec['states_restored']} prefill(s) resumed from one, {rec['tokens_not_recomputed']} prompt tokens not "
        "recomputed\n"
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
