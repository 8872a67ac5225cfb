"""``kvsim screenshot``: the main window rendered offscreen to PNGs (the app's, imported only when asked for)."""

from __future__ import annotations

import argparse

from .args import Subcommands, examples, nonneg_int, positive_int, prepare_render

HELP = "render the main window offscreen and write PNGs"


def add_parser(sub: Subcommands) -> None:
    """`kvsim screenshot`: its arguments."""
    s = sub.add_parser(
        "screenshot",
        help=HELP,
        **examples("kvsim screenshot --out shots/", "kvsim screenshot --out shots/ --size 1280x720 --theme light"),
    )
    s.add_argument("--model", default="tiny", help="bundled/fetched name, random:..., HF dir or .gguf (default: tiny)")
    s.add_argument("--prompt", default="Once upon a time", help="prompt text (default: 'Once upon a time')")
    s.add_argument("--steps", type=positive_int, default=12, help="steps: 1 prefill + decodes (default 12)")
    s.add_argument("--out", required=True, help="the folder the PNGs are written to")
    s.add_argument("--size", default="1920x1080", help="window size WxH (default 1920x1080)")
    s.add_argument("--lanes", default="uncached,cached", help="the lanes, as for `kvsim run --lanes`")
    s.add_argument(
        "--scale",
        type=float,
        default=argparse.SUPPRESS,
        help="the app's size factor (0.5 to 4): the PNGs keep --size, the type grows",
    )
    s.add_argument("--lanes-only", action="store_true", help="the lanes-only layout (F): no costs, text or legend")
    s.add_argument("--step", type=nonneg_int, help="show step K of the run (0 = the prefill; default: the last)")
    s.add_argument("--show", action="append", metavar="DOCK", help="open an extra dock: memory, roofline, requests (repeatable)")
    s.add_argument("--theme", choices=["dark", "light"], help="the colour theme (default: dark)")
    s.add_argument("--lang", default=argparse.SUPPRESS, help="the pictures' language: pt_BR or en (default: English)")
    s.add_argument(
        "--variants",
        action="store_true",
        help="also write kvsim-1280x720.png and kvsim-1920x1080.png (default: only kvsim.png, at --size)",
    )


def run(args: argparse.Namespace) -> int:
    prepare_render(args)
    from ..ui.export import screenshot  # the app, imported only when asked for (the engine never needs it)

    return screenshot.main(args)
