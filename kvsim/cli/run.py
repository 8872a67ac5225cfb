"""``kvsim run``: a prompt through several lanes, one line (or JSON object) per step, then a summary."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Collection
from typing import TYPE_CHECKING, Any, TextIO

from ..caches import known_specs, parse_lanes
from ..caches.weights import weights_label
from ..core.sampling import Sampling, SimulationError
from ..core.units import si
from ..costs.memory import human_bytes
from .args import Subcommands, UsageError, json_line, positive_int, seed_int
from .requests import add_requests_arguments, check_single_prompt_flags, cmd_requests

if TYPE_CHECKING:
    from ..caches.registry import LaneSpec
    from ..engine.records import StepRecord
    from ..engine.simulate import Simulator
    from ..models.base import LoadedModel
    from ..models.tokenizer import Tokenizer

HELP = "generate in several lanes and print each step (the terminal app)"


def add_parser(sub: Subcommands) -> None:
    """`kvsim run`: its arguments."""
    r = sub.add_parser(
        "run",
        help=HELP,
        epilog="examples:\n  kvsim run --prompt 'Once upon a time' --steps 8\n"
        "  kvsim run --prompt Hi --lanes uncached,cached,window:8 --json\n"
        "  kvsim run --prompt 'Tell me a story' --prompt 'Tell me a joke' --block-size 4",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    r.add_argument("--model", default="tiny", help="bundled/fetched name, random:..., Hugging Face ORG/NAME or folder, or .gguf")
    g = r.add_mutually_exclusive_group()
    g.add_argument(
        "--prompt", action="append", help="prompt text; give it several times for several requests through one paged pool"
    )
    g.add_argument("--prompt-ids", help="comma-separated token ids, e.g. 1,2,3")
    g.add_argument("--requests", metavar="FILE", help="several requests: one prompt per line, or a JSON list of strings")
    r.add_argument("--steps", type=int, default=16, help="steps: 1 prefill + decodes (default 16)")
    r.add_argument("--seed", type=seed_int, default=0, help="random seed for sampling (0 to 2^63-1)")
    r.add_argument("--temperature", type=float, default=0.0, help="0 = greedy (default)")
    r.add_argument("--top-k", type=positive_int, help="sample among the K most likely tokens only (default: all)")
    r.add_argument("--top-p", type=float, help="sample among the most likely tokens whose probabilities add up to P (0 < P ≤ 1)")
    r.add_argument(
        "--lanes",
        default="uncached,cached",
        help="comma-separated cache policies, one lane each, keyed in --json by the spec as given "
        f"(known: {', '.join(known_specs())}; uncached/cached are none/kv)",
    )
    r.add_argument(
        "--repeats",
        type=positive_int,
        default=None,
        help="time each step's forward this many times (the cache rolled back between): the median is the "
        "step's time, min/max its spread (1 to 100; default 1, or 3 for each prefill of several requests)",
    )
    add_requests_arguments(r)
    r.add_argument(
        "--free-running",
        action="store_true",
        help="each lane continues on its own choice (default: every lane on the reference's token); "
        "the summary's perplexity of the reference continuation still comes from a lockstep pass",
    )
    r.add_argument(
        "--reference",
        help="the lane whose token every lane continues on and that logit differences are measured from (default: the first)",
    )
    r.add_argument(
        "--device",
        default="cpu",
        choices=["cpu", "cuda", "mps", "auto"],
        help="where the model runs (default: cpu; auto = a GPU if any)",
    )
    # SUPPRESS: an absent `run --threads` must not overwrite `kvsim --threads N run …`
    r.add_argument(
        "--threads", type=positive_int, default=argparse.SUPPRESS, help="torch compute threads (default: half the cores, ≤ 4)"
    )
    r.add_argument("--dtype", default=None, choices=["fp32", "fp16", "bf16"], help="GPU only: fp16/bf16")
    r.add_argument(
        "--compile",
        action="store_true",
        help="compile the model's cache-free parts with torch.compile before the run (its time is shown; "
        "kernels are cached, so a second run compiles little)",
    )
    r.add_argument("--no-chat-template", action="store_true", help="feed the prompt as is")
    r.add_argument("--ignore-eos", action="store_true", help="keep generating after the end-of-sequence token")
    r.add_argument("--save", help="write the trace to this .kvsim file")
    r.add_argument("--json", action="store_true", help="JSON Lines: one object per step, then a summary")


def _prompt_ids(args: argparse.Namespace, tokenizer: Tokenizer) -> tuple[list[int], str | None]:
    if args.prompt_ids is not None:
        try:
            ids = [int(x) for x in args.prompt_ids.split(",") if x.strip()]
        except ValueError:
            raise UsageError(f"--prompt-ids must be comma-separated integers, got {args.prompt_ids!r}") from None
        if not ids:
            raise SimulationError("the prompt is empty: give --prompt TEXT or --prompt-ids 1,2,3")
        return ids, None
    text = args.prompt
    if text is None or not text.strip():
        raise SimulationError("the prompt is empty: give --prompt TEXT or --prompt-ids 1,2,3")
    formatted = tokenizer.format_prompt(text, chat=not args.no_chat_template)
    return tokenizer.encode(formatted), formatted


def run(args: argparse.Namespace) -> int:
    from ..engine.simulate import RunSummary, Simulator
    from ..models.loading import load_model, set_threads

    set_threads(getattr(args, "threads", None))
    if args.requests is not None or (args.prompt is not None and len(args.prompt) > 1):
        return cmd_requests(args)
    check_single_prompt_flags(args)
    args.prompt = args.prompt[0] if args.prompt else None
    args.repeats = 1 if args.repeats is None else args.repeats
    if args.steps <= 0:
        raise UsageError(f"--steps must be ≥ 1, got {args.steps}")
    lanes = parse_lanes(args.lanes)
    if args.reference is not None:
        args.reference = args.reference.strip()  # as --lanes strips its specs
    if args.reference is not None and args.reference not in [lane.name for lane in lanes]:
        raise UsageError(f"--reference {args.reference!r} is not one of the lanes ({args.lanes})")
    sampling = Sampling(temperature=args.temperature, top_k=args.top_k, top_p=args.top_p, seed=args.seed)
    if args.prompt_ids is None and (args.prompt is None or not args.prompt.strip()):  # before the model loads
        raise SimulationError("the prompt is empty: give --prompt TEXT or --prompt-ids 1,2,3")
    if args.save is not None:
        from ..core.atomic import WriteError, check_target

        try:  # an empty path, a device or a FIFO is refused before the model loads
            check_target(args.save)
        except WriteError as exc:
            raise UsageError(f"--save: {exc}") from None
        folder = os.path.dirname(os.path.abspath(args.save))
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            raise UsageError(f"--save: cannot write into {folder} (no such folder or no permission)")
    loaded = load_model(args.model, device=args.device, dtype=args.dtype)
    ids, text = _prompt_ids(args, loaded.tokenizer)
    ctx = loaded.model.cfg.max_seq_len
    if len(ids) > ctx:
        raise SimulationError(f"the prompt is {len(ids)} tokens long, longer than the model's context of {ctx}")
    if len(ids) + args.steps - 1 > ctx:
        raise SimulationError(
            f"prompt ({len(ids)} tokens) + {args.steps} steps needs {len(ids) + args.steps - 1} "
            f"positions, more than the model's context of {ctx}"
        )
    sim = Simulator(
        loaded.model,
        loaded.tokenizer,
        ids,
        lanes,
        sampling,
        reference=args.reference,
        free_running=args.free_running,
        repeats=args.repeats,
        model_id=loaded.model_id,
        prompt_text=text,
    )
    sim.trace.meta["model_info"] = loaded.info
    compile_s = _compile_lanes(sim, len(ids)) if getattr(args, "compile", False) else None
    sim.keep_records = bool(args.save)  # without --save, a step's record is printed and dropped
    out = sys.stdout
    if not args.json:
        _print_header(sim, loaded, out)
        if compile_s is not None:
            out.write(f"compiled (torch.compile) in {compile_s:.1f} s before the first step\n\n")
    running = RunSummary()
    drafting = {lane.name for lane in sim.lanes if lane.driver is not None}  # the speculative lanes (spec:K:DRAFT)
    for record in sim.run(args.steps, stop_at_eos=not args.ignore_eos):
        running.add(record)
        if args.json:
            out.write(json_line(step_json(record, drafting)) + "\n")
            out.flush()
        else:
            _print_step(record, out)
    summary = running.as_dict()
    for lane in sim.lanes:  # the bytes each lane's weights really occupy (quantized codes + scales for @w8/@w4)
        summary["lanes"][lane.name]["weight_bytes"] = lane.weight_bytes["total"]
        if lane.spec.weights:
            summary["lanes"][lane.name]["weights"] = weights_label(lane.spec.weights)
            from ..models.kernels.quantized_weights import head_format  # torch: imported once a run is under way

            summary["lanes"][lane.name]["weight_head"] = head_format(lane.model)  # "Q8_0", "Q6_K", "as loaded"
    if compile_s is not None:
        summary["compile_s"] = round(compile_s, 3)  # compiling + the warm-up forwards, outside every timed step
    if args.free_running:
        summary["free_running"] = True
        _teacher_forced(summary, loaded, ids, lanes, sampling, args, steps=running.steps)
    if args.save:
        try:
            sim.trace.save(args.save)
        except OSError as exc:  # a WriteError names the file: the file as it was is kept
            raise UsageError(f"could not save the trace: {exc.strerror and f'{args.save}: {exc.strerror}' or exc}") from None
    if args.json:
        out.write(json_line({"summary": summary}) + "\n")
    else:
        _print_summary(sim, summary, out)
    return 0


def _compile_lanes(sim: Simulator, prompt_len: int) -> float:
    """``--compile``: compile each distinct model the lanes run and warm it up on the run's shapes;
    returns the seconds it took (compile + warm-up)."""
    from ..caches import KVCache
    from ..models.kernels.compiled import compile_decode, warm_up

    total = 0.0
    models = {id(lane.model): lane.model for lane in sim.lanes if lane.model is not None}

    def say(what: str) -> None:  # on stderr: a --json run's standard output stays one JSON document a line
        print(f"--compile: {what}", file=sys.stderr, flush=True)

    say("compiling for this run's shapes (minutes the first time on a machine; compiled kernels are kept for the next run)")
    for model in models.values():
        try:
            compile_decode(model)
            total += warm_up(model, prompt_len, lambda m=model: KVCache(m.cfg.n_layers), say)
        except Exception as exc:  # no C++ compiler, an unsupported op: one clear line, not a traceback
            first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
            raise SimulationError(f"--compile failed ({type(exc).__name__}: {first}); run without --compile") from None
    return total


def _teacher_forced(
    summary: dict[str, Any],
    loaded: LoadedModel,
    ids: list[int],
    lanes: tuple[LaneSpec, ...],
    sampling: Sampling,
    args: argparse.Namespace,
    steps: int,
) -> None:
    """Free-running lanes read their own text, so the reference continuation is scored by a second,
    lockstep pass (same prompt, same draws: the reference lane produces the same tokens)."""
    from ..engine.simulate import RunSummary, Simulator

    lockstep = Simulator(loaded.model, loaded.tokenizer, ids, lanes, sampling, reference=args.reference)
    lockstep.keep_records = False
    forced = RunSummary()
    for record in lockstep.run(steps, stop_at_eos=False):
        forced.add(record)
    for name, lane in forced.as_dict()["lanes"].items():
        summary["lanes"][name]["perplexity_of_reference"] = lane["perplexity_of_reference"]
        summary["lanes"][name]["teacher_forced_max_abs_logit_diff"] = lane["max_abs_logit_diff"]


def step_json(record: StepRecord, drafting: Collection[str] = ()) -> dict[str, object]:
    """One step's JSON line; the lanes named in ``drafting`` (those with a drafter) add their check's counts."""
    lanes: dict[str, dict[str, object]] = {}
    for lane in record.lanes:
        lanes[lane.name] = {
            "policy": lane.policy,
            "kv_positions": lane.kv_positions,
            "context": lane.context,
            "flops": lane.flops,
            "flops_by_component": lane.flops_by_component,
            "bytes_by_component": lane.bytes_by_component,
            "wall_ms": round(lane.wall_ms, 4),
            **(
                {"wall_ms_min": round(lane.wall_ms_min, 4), "wall_ms_max": round(lane.wall_ms_max, 4)}
                if lane.wall_ms_min is not None and lane.wall_ms_max is not None  # (set together)
                else {}
            ),
            "cache_tokens": lane.cache_tokens,
            "cache_bytes": lane.cache_bytes,
            "cache_overhead_bytes": lane.cache_overhead_bytes,
            "first_key": lane.first_key,
            "logit_diff": lane.logit_diff,
            "kl_div": lane.kl_div,
            "ref_logprob": lane.ref_logprob,
            "token_id": lane.token_id,
            "recompute_diff": lane.recompute_diff,
        }
        if lane.spans is not None:
            lanes[lane.name]["key_spans"] = [list(span) for span in lane.spans]
        if lane.selected is not None:  # sparse attention: per layer, the rows the step's last query read
            lanes[lane.name]["rows_read"] = [lane.selected.of(layer).tolist() for layer in range(len(lane.selected.positions))]
        if lane.name in drafting:  # a speculative lane: this step's check (forwards 0: a token an earlier check verified)
            lanes[lane.name].update(
                forwards=lane.forwards,
                drafted=lane.drafted,
                accepted=lane.accepted,
                rolled_back=lane.rolled_back,
                draft_ms=round(lane.draft_ms, 4),
            )
            if lane.drafts is not None:  # the drafted tokens the check saw, at positions draft_from, draft_from + 1, …
                lanes[lane.name].update(
                    draft_from=int(lane.drafts.positions[0]), draft_ids=[int(i) for i in lane.drafts.token_ids]
                )
    return {
        "step": record.step,
        "phase": record.phase,
        "token_id": record.token_id,
        "token": record.token,
        "positions": [int(record.positions[0]), int(record.positions[-1])],
        **lanes,
    }


def _flops(n: float) -> str:
    return si(n, sep="")


def _print_header(sim: Simulator, loaded: LoadedModel, out: TextIO) -> None:
    cfg = sim.model.cfg
    out.write(
        f"model {loaded.model_id}: {cfg.family}, {cfg.n_layers} layers, {cfg.n_heads} heads "
        f"({cfg.n_kv_heads} kv), dim {cfg.dim}, {sim.model.n_params():,} parameters, "
        f"on {sim.model.device}\n"
    )
    from ..models.words import described

    for line in described(cfg.to_dict()):  # a hybrid's recurrent states, CLA's shared K/V
        out.write(f"  {line}\n")
    warnings = loaded.info.get("warnings")
    for warning in warnings if isinstance(warnings, list) else ():  # loaded, but with something the user should know
        print(f"warning: {warning}", file=sys.stderr)
    out.write(f"prompt: {sim.prompt_len} tokens\n\n")
    cols = "".join(f" | {lane.name:>10} rows  FLOPs      ms" for lane in sim.lanes)
    out.write(f"{'step':>4} {'phase':<7} {'token':<14}{cols}\n")


def _print_step(record: StepRecord, out: TextIO) -> None:
    token = repr(record.token)[1:-1][:14]
    cols = "".join(f" | {lane.kv_positions:>15} {_flops(lane.flops):>7} {lane.wall_ms:>7.2f}" for lane in record.lanes)
    out.write(f"{record.step:>4} {record.phase:<7} {token:<14}{cols}\n")
    out.flush()


def _print_summary(sim: Simulator, summary: dict[str, Any], out: TextIO) -> None:
    from ..engine.summary import compared_text

    out.write("\ntext: " + sim.tokenizer.decode(sim.tokens) + "\n\n")
    width = max(10, *(len(name) for name in summary["lanes"]))
    for name, s in summary["lanes"].items():
        itl = f"{s['itl_ms']:.2f} ms" if s["itl_ms"] is not None else "-"
        out.write(
            f"{name:>{width}}: TTFT {s['ttft_ms']:.2f} ms, ITL {itl}, K/V rows {s['kv_positions_total']}, "
            f"FLOPs {_flops(s['flops_total'])}, cache {human_bytes(s['cache_bytes'])}, "
            f"max |Δlogit| {s['max_abs_logit_diff']:.2e}\n"
        )
        extra = []
        if compared := compared_text(s):
            extra.append(compared)
        if s.get("weights"):
            head = f", LM head {s['weight_head']}" if s.get("weight_head") else ""
            extra.append(f"weights {s['weights']}: {human_bytes(s['weight_bytes'])}{head}")
        if s.get("weights") == "bf16":  # a reduced-precision lane says how far it strays from the reference
            first = s.get("first_divergent_step")
            extra.append(
                f"max |Δlogit| from the reference {s['max_abs_logit_diff']:.2e}, own greedy choice "
                + ("the reference's at every step" if first is None else f"first differs at step {first}")
            )
        if s.get("acceptance_rate") is not None or s["target_forwards"] < summary["steps"]:
            rate = s["acceptance_rate"]
            extra.append(
                f"accepted {s['accepted_total']} of {s['drafted_total']} drafted"
                + (f" ({rate:.0%})" if rate is not None else "")
                + f", {s['tokens_per_forward']:.2f} tokens per target forward, {s['rolled_back_total']} rows rolled back"
            )
        if extra:
            out.write(f"{'':>{width}}  " + "; ".join(extra) + "\n")
    same = "identical" if summary["tokens_identical"] else "DIFFERENT"
    out.write(f"tokens chosen by every lane: {same}\n")


def compute_run(args: argparse.Namespace) -> tuple[list[StepRecord], dict[str, Any]]:
    """The run's records and metadata, computed as ``kvsim run`` does (every step, EOS or not): what
    ``kvsim export`` films (``--out``) or writes as a web page (``--html``)."""
    from ..engine.simulate import Simulator
    from ..models.loading import load_model

    lanes = parse_lanes(args.lanes)
    if args.prompt is not None and not args.prompt.strip():
        raise SimulationError("the prompt is empty: give --prompt TEXT or --prompt-ids 1,2,3")
    loaded = load_model(args.model)
    ids, text = _prompt_ids(args, loaded.tokenizer)
    ctx = loaded.model.cfg.max_seq_len
    if len(ids) + args.steps - 1 > ctx:
        raise SimulationError(
            f"prompt ({len(ids)} tokens) + {args.steps} steps needs {len(ids) + args.steps - 1} "
            f"positions, more than the model's context of {ctx}"
        )
    sim = Simulator(loaded.model, loaded.tokenizer, ids, lanes, model_id=loaded.model_id, prompt_text=text)
    sim.trace.meta["model_info"] = loaded.info
    records = list(sim.run(args.steps, stop_at_eos=False))
    return records, sim.trace.meta
