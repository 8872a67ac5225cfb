"""``kvsim export``: a run rendered headless to a GIF or an MP4 for slides (the app's, imported only when asked for),
or written as one self-contained web page (``--html``: the engine's ``kvsim.engine.html_page``, no Qt) from a
live run's flags or a saved run (``--from RUN.kvsim``)."""

from __future__ import annotations

import argparse

from .args import Subcommands, UsageError, examples, positive_int, prepare_render

HELP = "render a run offscreen to an animation (GIF or MP4, from the extension) or write it as a web page (--html)"


def add_parser(sub: Subcommands) -> None:
    """`kvsim export`: its arguments."""
    e = sub.add_parser(
        "export",
        help=HELP,
        **examples(
            "kvsim export --prompt 'Once upon a time' --out run.gif",
            "kvsim export --prompt Hi --out run.mp4 --fps 30",
            "kvsim export --from run.kvsim --html run.html --lang pt_BR",
        ),
    )
    e.add_argument("--model", default="tiny", help="bundled/fetched name, random:..., HF dir or .gguf")
    g = e.add_mutually_exclusive_group()
    g.add_argument("--prompt", help="prompt text")
    g.add_argument("--prompt-ids", help="comma-separated token ids, e.g. 1,2,3")
    g.add_argument("--from", dest="from_run", metavar="RUN.kvsim", help="a saved run (--html only): the page replays it")
    e.add_argument("--steps", type=positive_int, default=20, help="steps: 1 prefill + decodes (default 20)")
    e.add_argument("--out", help="FILE.gif or FILE.mp4")
    e.add_argument("--html", metavar="FILE.html", help="write one self-contained web page that replays the run (no Qt)")
    e.add_argument(
        "--max-mb",
        type=float,
        default=10.0,
        help="the web page's size budget in MB (default 10): (layer, head) views past it are left out, and said",
    )
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
    if args.html is not None:
        return write_html(args)
    if args.out is None:
        raise UsageError("give --out FILE.gif|FILE.mp4 (an animation) or --html FILE.html (a web page)")
    if args.prompt is None and args.prompt_ids is None:
        why = " (--from opens a saved run for --html only)" if args.from_run is not None else ""
        raise UsageError(f"one of the arguments --prompt --prompt-ids is required{why}")
    prepare_render(args)
    from ..ui.export import cli as export_cli  # the app, imported only when asked for (the engine never needs it)

    return export_cli.main(args)


def write_html(args: argparse.Namespace) -> int:
    """``--html``: the run (computed from the flags, or ``--from`` a saved one) as one web page; no Qt imported."""
    if args.out is not None:
        raise UsageError("give --out (an animation) or --html (a web page), not both")
    if not 0.05 <= args.max_mb <= 2000:
        raise UsageError(f"--max-mb must be between 0.05 and 2000, got {args.max_mb:g}")
    lang = getattr(args, "lang", None) or "en"
    lang = {"en": "en", "pt": "pt_BR", "pt_br": "pt_BR"}.get(lang.replace("-", "_").lower().split(".")[0])
    if lang is None:
        raise UsageError(f"--lang must be pt_BR or en, got {args.lang!r}")
    from ..core.atomic import WriteError, check_target
    from ..engine.html_page import write_page
    from ..engine.trace import Trace

    try:  # an empty path, a folder, a device or a missing folder is refused before a model is loaded
        check_target(args.html)
    except WriteError as exc:
        raise UsageError(f"--html: {exc}") from None
    if args.from_run is not None:
        trace = Trace.load(args.from_run)
    elif args.prompt is None and args.prompt_ids is None:
        raise UsageError("give --prompt, --prompt-ids or --from RUN.kvsim")
    else:
        prepare_render(args)  # threads set, lanes parsed (a bad spec: one line before the model loads)
        from .run import compute_run

        records, meta = compute_run(args)
        trace = Trace(meta=meta, records=records)
    try:
        report = write_page(trace, args.html, lang=lang, budget_bytes=round(args.max_mb * 1e6))
    except OSError as exc:  # a WriteError names the file: the file as it was is kept
        raise UsageError(str(exc)) from None
    print(
        f"{report.path}: web page, {len(trace.records)} steps, {len(trace.records[0].lanes)} lanes, "
        f"{report.views} of {report.views_recorded} (layer, head) views, {report.size_bytes / 1e6:.2f} MB "
        f"(budget {report.budget_bytes / 1e6:g} MB)"
    )
    for what in report.dropped:
        print(f"left out: {what}")
    return 0
