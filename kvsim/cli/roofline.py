"""``kvsim roofline``: this machine's measured roof, and what one decode step and one prefill of a real
model cost on real GPUs by the roofline (FLOPs, bytes, intensity, max(FLOPs ÷ peak, bytes ÷ bandwidth)).

    kvsim roofline                                # this machine's peaks (measured once, then cached)
    kvsim roofline --refresh                      # measure again
    kvsim roofline --preset llama-3.1-70b --context 131072 [--gpu H100] [--prompt-len P] [--batch B]
    kvsim roofline --gpus                         # the GPU figures and their sources
"""

from __future__ import annotations

import argparse
import json
import math

from ..core.units import human_bytes
from ..costs.hardware import GPUS, gpu, measure_peaks
from ..costs.presets import LATENT_PRESETS, PRESETS
from ..costs.roofline import Bound, num, preset_bound, ratio
from .args import Subcommands, UsageError, positive_int

HELP = "this machine's measured roof; a model's decode/prefill bound on GPUs"
MAX_CONTEXT = 2**26


def add_parser(sub: Subcommands) -> None:
    """`kvsim roofline`: its arguments."""
    r = sub.add_parser(
        "roofline",
        help=HELP,
        epilog="examples:\n  kvsim roofline --preset llama-3-8b --gpu H100\n"
        "  kvsim roofline --preset mistral-7b --context 32768 --batch 8 --weight-bits 4\n"
        "  kvsim roofline --gpus",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    r.add_argument("--preset", help="a model preset (`kvsim memory --list`): its decode and prefill on GPUs")
    r.add_argument("--gpu", action="append", help=f"a GPU ({', '.join(GPUS)}); repeat for several (default: all)")
    r.add_argument("--context", type=positive_int, help="n: tokens in the context (default: the preset's own)")
    r.add_argument("--prompt-len", type=positive_int, help="P: tokens the prefill computes (default: n)")
    r.add_argument("--batch", type=positive_int, default=1, help="sequences per step (weights read once for all)")
    r.add_argument("--weight-bits", type=int, choices=(16, 8, 4), default=16, help="bits per weight (default 16)")
    r.add_argument("--kv-bits", type=int, choices=(16, 8, 4), default=16, help="bits per cached K/V value (default 16)")
    r.add_argument("--gpus", action="store_true", help="list the GPU figures and their sources")
    r.add_argument("--device", default="cpu", help="the device to measure: cpu (default) or cuda[:N]")
    r.add_argument("--dtype", default="float32", choices=("float32", "float16", "bfloat16"), help="the matmul's dtype")
    r.add_argument("--refresh", action="store_true", help="measure this machine again (else the cached figures)")
    r.add_argument("--json", action="store_true", help="one JSON object with every figure")


def _bound_dict(b: Bound, chip: str) -> dict:
    return {
        "gpu": chip,
        "step": b.what,
        "new_tokens": b.new,
        "context": b.context,
        "batch": b.batch,
        "flops": b.flops,
        "bytes": b.bytes,
        "weight_bytes": b.weight_bytes,
        "kv_bytes": b.kv_bytes,
        "intensity": b.intensity,
        "compute_s": b.compute_s,
        "memory_s": b.memory_s,
        "time_s": b.time_s,
        "limit": b.limit,
        "fits": b.fits,
    }


def _time(s: float) -> str:
    return f"{s * 1e6:.3g} µs" if s < 1e-3 else f"{s * 1e3:.3g} ms" if s < 1 else f"{s:.3g} s"


def run(args: argparse.Namespace) -> int:
    out: dict = {}
    if args.gpus:
        out["gpus"] = [
            {
                "name": c.name,
                "bf16_flops": c.bf16_flops,
                "fp32_flops": c.fp32_flops,
                "bandwidth": c.bandwidth,
                "memory": c.memory,
                "ridge": c.ridge(),
                "source": c.source,
                "note": c.note,
            }
            for c in GPUS.values()
        ]
    try:
        chips = [gpu(name) for name in args.gpu] if args.gpu else list(GPUS.values())
    except ValueError as exc:
        raise UsageError(f"--gpu: {exc}") from None
    if args.preset is not None:
        p = PRESETS.get(args.preset)
        if p is None and args.preset.lower() in LATENT_PRESETS:
            raise UsageError(
                f"{args.preset} is a memory preset only (`kvsim memory --preset {args.preset}`): its latent attention and "
                "mixture of experts are not in the roofline's formulas"
            )
        if p is None:
            raise UsageError(f"unknown preset {args.preset!r} (known: {', '.join(PRESETS)})")
        n = args.context or p.context
        if n > MAX_CONTEXT:
            raise UsageError(f"--context {n} is beyond any model (at most {MAX_CONTEXT:,})")
        prompt = args.prompt_len or n
        if prompt > n:
            raise UsageError(f"--prompt-len {prompt} exceeds the context {n}")
        kw = {"batch": args.batch, "weight_bits": args.weight_bits, "kv_bits": args.kv_bits}
        rows = []
        for c in chips:
            rows.append(_bound_dict(preset_bound(p, c, "decode", n, **kw), c.name))
            rows.append(_bound_dict(preset_bound(p, c, "prefill", n, prompt=prompt, **kw), c.name))
        out["preset"] = {"name": p.name, "context": n, "model_context": p.context, "bounds": rows}
    if args.refresh or (args.preset is None and not args.gpus):  # this machine, unless asked for figures only
        if args.device.startswith("cuda"):
            import torch

            if not torch.cuda.is_available():
                raise UsageError("--device cuda: no CUDA device is available here")
        elif args.device != "cpu":
            raise UsageError(f"--device must be cpu or cuda[:N], got {args.device!r}")
        from ..models.loading import set_threads  # measured with the runs' thread count; figures alone never load torch

        set_threads(getattr(args, "threads", None))
        m = measure_peaks(args.device, args.dtype, refresh=args.refresh)
        if not (math.isfinite(m.flops) and math.isfinite(m.bandwidth)):
            raise UsageError("the measurement gave no finite figure: try --refresh on a quieter machine")
        out["machine"] = {
            "device": m.device,
            "name": m.name,
            "dtype": m.dtype,
            "flops": m.flops,
            "bandwidth": m.bandwidth,
            "ridge": m.ridge,
            "threads": m.threads,  # torch threads during the measurement: the runs' own (kvsim --threads N)
            "bandwidth_method": m.method,
            "read_bytes": m.read_bytes,
            "cached": m.cached,
            "measured_at": m.measured_at,
            "key": m.key,
        }
    if args.json:
        print(json.dumps(out))
        return 0
    _print(out)
    return 0


def _print(out: dict) -> None:
    if "machine" in out:
        m = out["machine"]
        how = "cached; --refresh measures again" if m["cached"] else "just measured"
        print(f"this machine: {m['name']} ({m['device']}, {m['dtype']})")
        print(
            f"  peak {num(m['flops'])}FLOP/s (matmul) · {human_bytes(m['bandwidth'])}/s (read: a sum over "
            f"{human_bytes(m['read_bytes'])}) · ridge {m['ridge']:.3g} FLOP/byte"
        )
        threads = f"{m['threads']} thread{'s' if m['threads'] != 1 else ''}"
        print(f"  measured with {threads}, as runs use (kvsim --threads N measures with N)")
        print(f"  {how}, {m['measured_at']}")
    for g in out.get("gpus", []):
        print(
            f"{g['name']:<14} {num(g['bf16_flops'])}FLOP/s dense BF16 · {num(g['fp32_flops'])}FLOP/s FP32 · "
            f"{human_bytes(g['bandwidth'])}/s · {human_bytes(g['memory'])} · ridge {g['ridge']:.0f} FLOP/byte"
        )
        print(f"  {g['source']}")
        print(f"  {g['note']}")
    if "preset" in out:
        p = out["preset"]
        print(f"{p['name']} at {p['context']:,} tokens (dense BF16 peak; attention counted causally)")
        if p["context"] > p["model_context"]:
            print(f"  note: {p['name']}'s own context is {p['model_context']:,} tokens")
        print(f"  {'GPU':<14} {'step':<16} {'FLOPs':>9} {'bytes':>10} {'FLOP/B':>8} {'compute':>9} {'memory':>9} {'bound':>9}")
        for b in p["bounds"]:
            step = "decode" if b["step"] == "decode" else f"prefill {b['new_tokens']:,}"
            fits = "" if b["fits"] else "  (does not fit in one card)"
            print(
                f"  {b['gpu']:<14} {step:<16} {num(b['flops']):>9} {human_bytes(b['bytes']):>10} {ratio(b['intensity']):>8} "
                f"{_time(b['compute_s']):>9} {_time(b['memory_s']):>9} {_time(b['time_s']):>9} {b['limit']}{fits}"
            )
