"""``kvsim models``: the bundled, fetched and fetchable models (``list``), and fetching one (``get``)."""

from __future__ import annotations

import argparse
import json

from ..core.units import human_bytes
from .args import Parser, Subcommands, UsageError, examples

HELP = "list or fetch models"


def add_parser(sub: Subcommands) -> None:
    """`kvsim models list` and `kvsim models get NAME`: their arguments."""
    models = sub.add_parser("models", help=HELP, **examples("kvsim models list", "kvsim models get smollm2-135m"))
    msub = models.add_subparsers(dest="models_command", parser_class=Parser, metavar="ACTION", help="list or get")
    ml = msub.add_parser(
        "list", help="bundled, fetched and fetchable models", **examples("kvsim models list", "kvsim models list --json")
    )
    ml.add_argument("--json", action="store_true", help="one JSON object: the models and where they are")
    mg = msub.add_parser(
        "get",
        help="fetch a model (the only command that uses the network)",
        **examples(
            "kvsim models get smollm2-135m",
            "kvsim models get gemma3-270m --accept-license",
            "kvsim models get HuggingFaceTB/SmolLM2-360M-Instruct",
        ),
    )
    mg.add_argument("name", help="a fetchable name from `kvsim models list`, or a Hugging Face repository ORG/NAME[@REVISION]")
    mg.add_argument("--accept-license", action="store_true", help="accept the model's terms without being asked (for scripts)")


def run(args: argparse.Namespace) -> int:
    from ..models.catalog import fetch_model, list_models

    if args.models_command == "get":
        path = fetch_model(args.name, accept_license=args.accept_license)
        print(f"{args.name}: ready at {path}")
        return 0
    if args.models_command != "list":
        raise UsageError("use `kvsim models list` or `kvsim models get NAME`")
    rows = list_models()
    if getattr(args, "json", False):
        print(json.dumps({"models": rows}))
        return 0
    # the weights' licence has its own column: a model carries the licences of the text it was trained on
    width = max([len("licence")] + [len(r.get("licence") or "-") for r in rows])
    print(f"{'name':<18} {'kind':<10} {'size':>10}  {'licence':<{width}}  description")
    for r in rows:
        size = human_bytes(r["size_bytes"]) if r.get("size_bytes") else "-"
        licence = r.get("licence") or "-"
        print(f"{r['name']:<18} {r['kind']:<10} {size:>10}  {licence:<{width}}  {r.get('description', r.get('path', ''))}")
    print(
        "also: random:family=llama,layers=4,heads=8,kv_heads=2,dim=256,seed=0 · a Hugging Face repository "
        "ORG/NAME[@REVISION] or checkpoint directory · a .gguf file"
    )
    return 0
