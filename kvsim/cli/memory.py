"""``kvsim memory``: the bytes a model shape's KV cache holds for a context (and its weights), by the formula."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..costs.memory import (
    WEIGHT_DTYPE_BYTES,
    describe_windows,
    format_layer_windows,
    formula_rows_text,
    human_bytes,
    kv_cache_bytes,
    parse_layer_windows,
    read_hf_config,
    repeat_pattern,
    weight_bytes,
)
from ..costs.presets import BUNDLED, LATENT_PRESETS, PRESETS, context_warning, get_preset, preset_from_hf_config
from .args import Subcommands, UsageError, positive_int

HELP = "KV-cache and weight memory for a model shape"


def add_parser(sub: Subcommands) -> None:
    """`kvsim memory`: its arguments."""
    m = sub.add_parser(
        "memory",
        help=HELP,
        epilog="examples:\n  kvsim memory --preset llama-3-8b --context 8192\n"
        "  kvsim memory --layers 32 --kv-heads 8 --head-dim 128 --context 32768 --kv-bits 8\n"
        "  kvsim memory --list",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    src = m.add_mutually_exclusive_group()
    src.add_argument("--preset", help="a real model's shape by name (`kvsim memory --list`)")
    src.add_argument("--config", help="path to a Hugging Face config.json")
    src.add_argument("--list", action="store_true", help="name the presets")
    m.add_argument("--layers", type=positive_int, help="transformer layers (default: the preset's)")
    m.add_argument("--kv-heads", type=positive_int, help="K/V heads per layer (default: the preset's)")
    m.add_argument("--head-dim", type=positive_int, help="values per head (default: the preset's)")
    m.add_argument("--context", type=int, help="n: tokens in the cache (required)")
    m.add_argument("--batch", type=positive_int, default=1, help="sequences cached side by side (default 1)")
    m.add_argument(
        "--kv-bits",
        type=int,
        default=16,
        choices=[32, 16, 8, 4, 2],
        help="bits per cached value: 16 (fp16/bf16, the default), 32 (fp32, as kvsim runs on the CPU), 8, 4, 2",
    )
    m.add_argument("--window", type=positive_int, help="at most W tokens kept in every layer (caps a preset's own windows)")
    m.add_argument(
        "--layer-windows",
        metavar="PATTERN",
        help="a window per layer, repeated over the layers: '4096, full' (Gemma 2), '512,512,512,512,512,full' "
        "(Gemma 3); 'full' keeps every token (replaces a preset's own windows)",
    )
    m.add_argument("--json", action="store_true", help="one JSON object: bytes, the shape and any notes")


def _params(n: int) -> str:
    return f"{n / 1e9:.2f}B" if n >= 1e9 else f"{n / 1e6:.1f}M"


def run(args: argparse.Namespace) -> int:
    if args.list:
        rows: list[dict[str, Any]] = [
            {
                "name": p.name,
                "source": p.source,
                "layers": p.layers,
                "heads": p.heads,
                "kv_heads": p.kv_heads,
                "head_dim": p.head_dim,
                "context": p.context,
                "params": p.n_params,
                "latent": list(p.latent) if p.latent is not None else None,  # MLA: (d_c, d_R), the cache's per-layer width
            }
            for p in [*PRESETS.values(), *LATENT_PRESETS.values(), *(get_preset(name) for name in BUNDLED)]
        ]
        if args.json:
            print(json.dumps({"presets": rows}))
        else:
            for r in rows:
                kv = f"{r['kv_heads']:>3} kv d_head {r['head_dim']:>3}"
                if r["latent"] is not None:  # one latent + one RoPE key a token and layer, not K/V heads
                    kv = f"latent {r['latent'][0]}+{r['latent'][1]:<5}"
                print(
                    f"{r['name']:<14} {r['layers']:>3} layers {r['heads']:>3} heads {kv}  "
                    f"ctx {r['context']:>6}  {_params(r['params']):>7} params  ({r['source']})"
                )
        return 0
    if args.context is None:
        raise UsageError("--context N is required (tokens in the cache)")
    if args.context < 0:
        raise UsageError(f"--context must be ≥ 0, got {args.context}")
    from ..costs.memory import check_shape

    check_shape(layers=args.layers, kv_heads=args.kv_heads, head_dim=args.head_dim, context=args.context)
    check_shape(batch=args.batch, window=args.window)
    preset = None
    if args.preset:
        preset = get_preset(args.preset)
    elif args.config:
        preset = preset_from_hf_config(read_hf_config(args.config), name=args.config)  # FIFO/size/JSON-safe
    notes: list[str] = []  # what the report applied without being asked outright (windows)
    warnings: list[str] = []
    given = parse_layer_windows(args.layer_windows) if args.layer_windows else None
    if preset is not None:
        layers = args.layers or preset.layers
        kv_heads = args.kv_heads or preset.kv_heads
        head_dim = args.head_dim or preset.head_dim
        layer_windows = preset.layer_windows
        if given is None and layer_windows is not None:
            kept = ""
            if layers != preset.layers:
                layer_windows = repeat_pattern(layer_windows, layers)
                kept = f", its pattern ({format_layer_windows(layer_windows)}) kept over the {layers} layers asked"
            what = describe_windows(layers, None, layer_windows)
            notes.append(f"window: {preset.name}'s own sliding window applied{kept}: {what}")
        warning = context_warning(preset, args.context)
        if warning:
            warnings.append(warning)
        if preset.latent is not None:  # MLA (DeepSeek-V3): one latent and one RoPE key a token and layer
            return _latent_memory(args, preset, layers, warnings)
    else:
        missing = [
            f for f, v in (("--layers", args.layers), ("--kv-heads", args.kv_heads), ("--head-dim", args.head_dim)) if v is None
        ]
        if missing:
            raise UsageError(
                f"give --preset NAME, --config PATH or all of --layers --kv-heads --head-dim (missing {', '.join(missing)})"
            )
        layers, kv_heads, head_dim, layer_windows = args.layers, args.kv_heads, args.head_dim, None
    check_shape(layers=layers, kv_heads=kv_heads, head_dim=head_dim)  # a --config's figures too
    if given is not None:
        layer_windows = repeat_pattern(given, layers)
        if all(w is None for w in layer_windows):
            layer_windows = None
            notes.append("window: none (--layer-windows full): every layer keeps every token")
        else:
            notes.append(f"window: --layer-windows applied ({describe_windows(layers, None, layer_windows)})")
    if args.window is not None:
        capped = " (capping the per-layer windows)" if layer_windows else ""
        notes.append(f"window: --window {args.window} applied: every layer keeps at most {args.window:,} tokens{capped}")
    total = kv_cache_bytes(layers, kv_heads, head_dim, args.context, args.batch, args.kv_bits, args.window, layer_windows)
    per_token = kv_cache_bytes(layers, kv_heads, head_dim, 1, 1, args.kv_bits)
    # what one more token adds now: windowed layers have stopped growing once full
    growth = (
        kv_cache_bytes(layers, kv_heads, head_dim, args.context + 1, args.batch, args.kv_bits, args.window, layer_windows) - total
    )
    report: dict[str, Any] = {
        "bytes": total,
        "bytes_per_token": per_token,
        "bytes_per_new_token": growth,
        "human": human_bytes(total),
        "layers": layers,
        "kv_heads": kv_heads,
        "head_dim": head_dim,
        "context": args.context,
        "batch": args.batch,
        "kv_bits": args.kv_bits,
        "window": args.window,
        "layer_windows": list(layer_windows) if layer_windows else None,
        "notes": notes,
        "warnings": warnings,
    }
    if preset is not None:
        report.update(_preset_fields(preset))
    if _warned_or_json(report, warnings, args.json):
        return 0
    name = preset.name if preset else f"{layers} layers × {kv_heads} kv heads × d_head {head_dim}"
    print(f"{name}: KV cache for {args.context:,} tokens × batch {args.batch} at {args.kv_bits} bits")
    rows_text = formula_rows_text(layers, args.window, layer_windows)
    print(
        f"  = 2 × ({rows_text}) × {kv_heads} kv heads × {head_dim} × batch {args.batch} × {args.kv_bits / 8:g} B"
        f"   (n = {args.context:,})"
    )
    print(
        f"  = {total:,} bytes ({human_bytes(total)}); {per_token:,} bytes per token kept in every layer, "
        f"{growth:,} bytes for the next token now"
    )
    for line in notes:
        print(line)
    if preset is not None:
        print(_weights_line(preset.n_params, report["weights_bytes"]))
    return 0


def _preset_fields(preset: Any) -> dict[str, Any]:
    """What a memory report says of a named preset: its source, heads, parameters and their weights' bytes."""
    return {
        "preset": preset.name,
        "source": preset.source,
        "heads": preset.heads,
        "params": preset.n_params,
        "weights_bytes": {k: int(weight_bytes(preset.n_params, k)) for k in WEIGHT_DTYPE_BYTES},
    }


def _warned_or_json(report: dict[str, Any], warnings: list[str], as_json: bool) -> bool:
    """The warnings on stderr; with ``--json`` the report printed (True: nothing more to print)."""
    for line in warnings:
        print(f"warning: {line}", file=sys.stderr)
    if as_json:
        print(json.dumps(report))
    return as_json


def _weights_line(n_params: int, weights_bytes: dict[str, int]) -> str:
    sizes = ", ".join(f"{k.upper()} {human_bytes(v)}" for k, v in weights_bytes.items())
    return f"weights ({_params(n_params)} params): {sizes}"


def _latent_memory(args: argparse.Namespace, preset: Any, layers: int, warnings: list[str]) -> int:
    """``kvsim memory`` for a latent-attention preset: L × (d_c + d_R) × n × batch × bytes (no K/V heads, no 2)."""
    from ..costs.memory import mla_cache_bytes

    if args.kv_heads or args.head_dim or args.layer_windows:
        raise UsageError(f"{preset.name} caches a latent, not K/V heads: --kv-heads, --head-dim and --layer-windows do not apply")
    r, dr = preset.latent
    held = args.context if args.window is None else min(args.context, args.window)
    total = mla_cache_bytes(layers, r, dr, held, args.batch, args.kv_bits)
    per_token = mla_cache_bytes(layers, r, dr, 1, 1, args.kv_bits)
    held_next = args.context + 1 if args.window is None else min(args.context + 1, args.window)
    growth = mla_cache_bytes(layers, r, dr, held_next, args.batch, args.kv_bits) - total
    as_mha = kv_cache_bytes(layers, preset.heads, preset.head_dim, held, args.batch, args.kv_bits)
    notes = [f"window: --window {args.window} applied: at most {args.window:,} tokens kept"] if args.window else []
    report: dict[str, Any] = {
        "bytes": total,
        "bytes_per_token": per_token,
        "bytes_per_new_token": growth,
        "human": human_bytes(total),
        "layers": layers,
        "latent": r,
        "rope_dim": dr,
        "kv_heads": None,
        "head_dim": None,
        "context": args.context,
        "batch": args.batch,
        "kv_bits": args.kv_bits,
        "window": args.window,
        "layer_windows": None,
        "as_mha_bytes": as_mha,
        "notes": notes,
        "warnings": warnings,
        **_preset_fields(preset),
    }
    if _warned_or_json(report, warnings, args.json):
        return 0
    n = "min(n, W)" if args.window else "n"
    # the ratio per token when nothing is held yet (0 over 0 said "0.0×")
    mha_per_token = kv_cache_bytes(layers, preset.heads, preset.head_dim, 1, 1, args.kv_bits)
    ratio = as_mha / total if total else mha_per_token / max(per_token, 1)
    print(f"{preset.name}: latent KV cache (MLA) for {args.context:,} tokens × batch {args.batch} at {args.kv_bits} bits")
    print(
        f"  = {layers} layers × ({r} latent d_c + {dr} RoPE key d_R) × {n} × batch {args.batch} × {args.kv_bits / 8:g} B"
        f"   (n = {args.context:,}; one latent per token and layer for all {preset.heads} heads, no factor 2)"
    )
    print(
        f"  = {total:,} bytes ({human_bytes(total)}); {per_token:,} bytes per token kept in every layer, "
        f"{growth:,} bytes for the next token now"
    )
    print(
        f"  as MHA (2 × {layers} × {preset.heads} kv heads × {preset.head_dim} × {n}) it would hold {as_mha:,} bytes "
        f"({human_bytes(as_mha)}): {ratio:.1f}× the latent's"
    )
    for line in notes:
        print(line)
    print(_weights_line(preset.n_params, report["weights_bytes"]))
    return 0
