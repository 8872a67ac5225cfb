"""``kvsim export``: a run rendered headless to a GIF or an MP4 for slides (the app's, imported only when asked for)."""

from __future__ import annotations

import argparse

from .args import Subcommands, examples, positive_int, prepare_render

HELP = "render a run offscreen to an animation (GIF or MP4, from the extension)"


def add_parser(sub: Subcommands) -> None:
    """`kvsim export`: its arguments."""
    e = sub.add_parser(
        "export",
        help=HELP,
        **examples("kvsim export --prompt 'Once upon a time' --out run.gif", "kvsim export --prompt Hi --out run.mp4 --fps 30"),
    )
    e.add_argument("--model", default="tiny", help="bundled/fetched name, random:..., HF dir or .gguf")
    g = e.add_mutually_exclusive_group(required=True)
    g.add_argument("--prompt", help="prompt text")
    g.add_argument("--prompt-ids", help="comma-separated token ids, e.g. 1,2,3")
    e.add_argument("--steps", type=positive_int, default=20, help="steps: 1 prefill + decodes (default 20)")
    e.add_argument("--out", required=True, help="FILE.gif or FILE.mp4")
    e.add_argument("--size", default="1280x720", help="frame size WxH in pixels (default 1280x720; MP4: even)")
    e.add_argument("--fps", type=float, default=15.0, help="frames per second (1 to 50 for GIF, 60 for MP4; default 15)")
    e.add_argument(
        "--speed",
        default="normal",
        choices=["slow", "normal", "fast", "instant"],
        help="each step's animation: 1.6 s / 0.7 s / 0.25 s / none (one frame per step); default normal",
    )
    e.add_argument("--lanes-only", action="store_true", help="the lanes-only layout (F): no costs, text or legend")
    e.add_argument("--lanes", default="uncached,cached", help="the lanes, as for `kvsim run --lanes`")
    e.add_argument("--show", action="append", metavar="DOCK", help="open an extra dock: memory, roofline, requests (repeatable)")
    e.add_argument("--theme", choices=["dark", "light"], help="the colour theme (default: dark)")
    e.add_argument(
        "--scale",
        type=float,
        default=argparse.SUPPRESS,
        help="the app's size factor (0.5 to 4): frames keep --size, the type grows",
    )
    e.add_argument("--no-chat-template", action="store_true", help="feed the prompt as is")
    e.add_argument("--lang", default=argparse.SUPPRESS, help="the frames' language: pt_BR or en (default: English)")


def run(args: argparse.Namespace) -> int:
    prepare_render(args)
    from ..ui.export import cli as export_cli  # the app, imported only when asked for (the engine never needs it)

    return export_cli.main(args)
