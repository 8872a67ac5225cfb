"""The ``kvsim`` command line: ``run``, ``memory``, ``models``, ``inspect``, ``screenshot``, ``export``, ``roofline``;
no arguments opens the app.

Bad input exits with status 2 and one ``error: …`` line on stderr, never a traceback. The desktop
app and the screenshot command live in ``kvsim.ui`` (Qt); ``main`` imports them only when asked
for — the one place the engine reaches the app (the import-linter contract names it).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from .. import __version__
from ..caches import SpecError, parse_lanes
from ..core.sampling import SimulationError
from ..costs.memory import MemoryError_
from ..engine.trace import TraceError
from ..models.base import ModelLoadError
from ..models.config import ConfigError
from ..models.tokenizer import ChatTemplateError
from .args import Parser, nonneg_int, positive_int
from .reports import UsageError, add_memory_parser, cmd_gqa, cmd_inspect, cmd_memory, cmd_models
from .roofline import add_roofline_parser, cmd_roofline
from .run import add_run_parser, cmd_run

USER_ERRORS = (ModelLoadError, SimulationError, SpecError, ConfigError, MemoryError_, TraceError, ChatTemplateError)


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="kvsim",
        description="See the KV cache: a transformer run token by token, "
        "without and with a cache, with real tensors, counts and times.",
    )
    p.add_argument("--version", action="version", version=f"kvsim {__version__}")
    p.add_argument("--model", help="model to open the app with (default: the bundled model)")
    p.add_argument("--threads", type=positive_int, help="torch compute threads (default: half the cores, ≤ 4)")
    p.add_argument("--lang", help="the app's language: pt_BR or en (default: the remembered choice, else the system's)")
    p.add_argument("--scale", type=float, help="the app's size factor, e.g. 1.5 for a projector (0.5 to 4)")
    sub = p.add_subparsers(dest="command", parser_class=Parser)

    add_run_parser(sub)
    add_memory_parser(sub)
    add_roofline_parser(sub)

    models = sub.add_parser("models", help="list or fetch models")
    msub = models.add_subparsers(dest="models_command", parser_class=Parser)
    ml = msub.add_parser("list", help="bundled, fetched and fetchable models")
    ml.add_argument("--json", action="store_true")
    mg = msub.add_parser("get", help="fetch a model (the only command that uses the network)")
    mg.add_argument("name")

    q = sub.add_parser("gqa", help="MHA → GQA → MQA: one model shape with fewer K/V heads, bytes and times measured")
    q.add_argument("--family", default="llama", choices=["llama"])
    q.add_argument("--layers", type=positive_int, default=4)
    q.add_argument("--heads", type=positive_int, default=8)
    q.add_argument("--dim", type=positive_int, default=256)
    q.add_argument("--prompt-len", type=positive_int, default=64)
    q.add_argument("--steps", type=positive_int, default=32)
    q.add_argument("--json", action="store_true")

    i = sub.add_parser("inspect", help="check a saved run (.kvsim) and print what it holds")
    i.add_argument("file")
    i.add_argument("--json", action="store_true", help="the run's metadata and summary as one JSON object")

    s = sub.add_parser("screenshot", help="render the main window offscreen and write PNGs")
    s.add_argument("--model", default="tiny")
    s.add_argument("--prompt", default="Once upon a time")
    s.add_argument("--steps", type=positive_int, default=12)
    s.add_argument("--out", required=True)
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
    add_export_parser(sub)
    return p


def add_export_parser(sub) -> None:
    """`kvsim export`: a run rendered headless to a GIF or an MP4 for slides."""
    e = sub.add_parser("export", help="render a run offscreen to an animation (GIF or MP4, from the extension)")
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


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(argv)
        if args.command in ("run", "screenshot", "export", None):
            from ..models.loading import set_threads

            set_threads(getattr(args, "threads", None))
        if args.command == "run":
            return cmd_run(args)
        if args.command == "memory":
            return cmd_memory(args)
        if args.command == "models":
            return cmd_models(args)
        if args.command == "inspect":
            return cmd_inspect(args)
        if args.command == "gqa":
            return cmd_gqa(args)
        if args.command == "roofline":
            return cmd_roofline(args)
        if args.command == "screenshot":
            parse_lanes(args.lanes)  # a bad spec is one error line before any window opens
            from ..ui.export import screenshot  # the app, imported only when asked for (the engine never needs it)

            return screenshot.main(args)
        if args.command == "export":
            parse_lanes(args.lanes)  # a bad spec is one error line before anything loads
            from ..ui.export import cli as export_cli  # the app, imported only when asked for

            return export_cli.main(args)
        if sys.platform.startswith("linux") and not any(
            os.environ.get(v) for v in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")
        ):
            # Qt would abort with a core dump; say what to do instead
            raise UsageError(
                "no display to open the window on (set DISPLAY, e.g. under Xvfb); `kvsim run` is the terminal version"
            )
        known = ("en", "en_us", "en_gb", "pt", "pt_br")
        if args.lang is not None and args.lang.replace("-", "_").lower().split(".")[0] not in known:
            raise UsageError(f"--lang must be pt_BR or en, got {args.lang!r}")
        if args.scale is not None:
            if not 0.5 <= args.scale <= 4:
                raise UsageError(f"--scale must be between 0.5 and 4, got {args.scale}")
            os.environ["QT_SCALE_FACTOR"] = f"{args.scale:g}"  # read when the QApplication starts
        from ..ui import app  # the app, imported only when asked for (the engine never needs it)

        return app.main(model=args.model, lang=args.lang)
    except UsageError as exc:
        return _fail(str(exc))
    except USER_ERRORS as exc:
        return _fail(str(exc))
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except SystemExit:
        raise
    except BaseException as exc:  # noqa: BLE001 - last resort (a Rust panic is not an Exception): one line
        message = str(exc).splitlines()[0][:300] if str(exc) else ""
        print(f"error: unexpected failure: {type(exc).__name__}: {message}", file=sys.stderr)
        return 1


def _fail(message: str) -> int:
    print(f"error: {message.splitlines()[0] if message else 'bad input'}", file=sys.stderr)
    return 2
