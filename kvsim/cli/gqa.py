"""``kvsim gqa``: one random model shape with H, H/2, …, 1 K/V heads (and a latent), its cache's bytes and its
decode steps' times measured side by side."""

from __future__ import annotations

import argparse

from ..core.units import human_bytes
from .args import Subcommands, UsageError, examples, json_line, positive_int

HELP = "MHA → GQA → MQA → MLA: one model shape with fewer K/V heads (and a latent), bytes and times measured"


def add_parser(sub: Subcommands) -> None:
    """`kvsim gqa`: its arguments."""
    q = sub.add_parser("gqa", help=HELP, **examples("kvsim gqa", "kvsim gqa --layers 2 --heads 4 --json"))
    q.add_argument("--family", default="llama", choices=["llama"], help="the architecture (default: llama)")
    q.add_argument("--layers", type=positive_int, default=4, help="transformer layers (default 4)")
    q.add_argument("--heads", type=positive_int, default=8, help="query heads; K/V heads go H, H/2, …, 1 (default 8)")
    q.add_argument("--dim", type=positive_int, default=256, help="model width, a multiple of --heads (default 256)")
    q.add_argument("--prompt-len", type=positive_int, default=64, help="tokens in the prompt (default 64)")
    q.add_argument(
        "--steps",
        type=positive_int,
        default=64,
        help="at most this many tokens; the decode steps are interleaved until every ratio to MHA is known (default 64)",
    )
    q.add_argument("--latent", type=positive_int, help="the MLA row's latent width r (default 4 × head dim, as DeepSeek-V2)")
    q.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="time the steps by the wall clock (default) or by this thread's CPU time (time.thread_time: "
        "a step descheduled by other jobs is not charged for the wait; exact with --threads 1)",
    )
    q.add_argument("--json", action="store_true", help="one JSON object with a row per K/V head count")


def run(args: argparse.Namespace) -> int:
    """The same random model shape with H_kv = H, H/2, …, 1: what the cache holds per token, measured."""
    from ..models.loading import set_threads

    set_threads(getattr(args, "threads", None))
    from ..costs.gqa import compare_kv_heads

    if args.dim % args.heads:
        raise UsageError(f"--dim ({args.dim}) must be a multiple of --heads ({args.heads})")
    if args.layers * args.dim * args.dim > 2**31 or args.prompt_len + args.steps > 8192:
        raise UsageError("that shape is too large for a comparison on this machine (layers·dim² ≤ 2^31, prompt + steps ≤ 8192)")
    import time

    from ..core.compare import load_average, load_note

    clock = time.thread_time if getattr(args, "clock", "wall") == "cpu" else time.perf_counter
    load_start = load_average()
    rows = compare_kv_heads(
        args.family,
        args.layers,
        args.heads,
        args.dim,
        args.prompt_len,
        args.steps,
        latent=getattr(args, "latent", None),
        clock=clock,
    )
    load_end = load_average()
    if args.json:
        fields = {"order": _gqa_order(rows), "clock": args.clock, "threads": torch_threads(), "load": [load_start, load_end]}
        print(json_line({"rows": [row.__dict__ for row in rows], **fields}))
        return 0
    pairs = rows[0].pairs
    print(
        f"{args.layers} layers, {args.heads} query heads, dim {args.dim}; prompt {args.prompt_len}, up to "
        f"{args.steps - 1} decode steps, KV cache, fp32; the models' steps interleaved ({pairs} rounds, order rotating); "
        f"{'CPU time of this thread' if args.clock == 'cpu' else 'wall clock'}, {torch_threads()} thread(s)"
    )
    print(
        f"{'kv heads':>8} {'group':>6} {'kind':>5} {'bytes/token':>12} {'cache':>10} {'ITL (median)':>13}  "
        "ITL / MHA's, paired (95% interval): verdict"
    )
    for r in rows:
        if r.itl_ratio_vs_mha is None or r.itl_ratio_spread is None:
            vs = "the baseline" if r.kind == "MHA" else "-"
        else:
            lo, hi = r.itl_ratio_spread
            vs = f"{r.itl_ratio_vs_mha:.3f}× ({lo:.3f}–{hi:.3f}, {100 * (r.itl_ratio_coverage or 0):.0f}%): {r.verdict}"
        print(
            f"{r.kv_heads:>8} {r.group_size:>6} {r.kind:>5} {human_bytes(r.bytes_per_token):>12} "
            f"{human_bytes(r.cache_bytes):>10} {r.itl_ms_median:>10.3f} ms  {vs}"
        )
    if pairs:
        print(f"fastest first: {_gqa_order(rows)} ('<' faster than the next, paired; '≈' within noise of it)")
    print(load_note(load_start, load_end))
    mla = [r for r in rows if r.kind == "MLA"]
    if mla:
        print(f"MLA: one latent of {mla[0].latent} values (r + d_R) per token and layer, shared by all {args.heads} heads")
    return 0


def torch_threads() -> int:
    import torch

    return torch.get_num_threads()


def _gqa_order(rows: list) -> str:
    """``MQA < GQA ≈ MHA ≈ MLA``: the rows by rank, each joined to the next by its paired verdict."""
    ranked = sorted(rows, key=lambda r: r.rank)
    words = {"faster": " < ", "within noise": " ≈ ", "slower": " > "}
    return "".join(r.kind + (f" ({r.kv_heads})" if r.kind == "GQA" else "") + words.get(r.vs_next or "", "") for r in ranked)
