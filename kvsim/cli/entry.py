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
from typing import Any

from .. import __version__
from .args import Parser, Subcommands, UsageError, nonneg_int, positive_int

# The engine's bad-input errors (exit 2, one line), by module: looked up among the modules imported so far
# (an error of a module never imported cannot have been raised), so that this file imports no engine part
# and `kvsim --help`, `--version`, `memory`, `roofline`, `models list` and `inspect` never import torch.
_USER_ERRORS = {
    "kvsim.models.base": "ModelLoadError",
    "kvsim.core.sampling": "SimulationError",
    "kvsim.caches.base": "SpecError",
    "kvsim.models.config": "ConfigError",
    "kvsim.costs.memory": "MemoryError_",
    "kvsim.engine.trace_checks": "TraceError",
    "kvsim.models.chat_template": "ChatTemplateError",
}


def user_errors() -> tuple[type[BaseException], ...]:
    """The engine's bad-input error classes among the modules imported so far."""
    return tuple(getattr(sys.modules[m], name) for m, name in _USER_ERRORS.items() if m in sys.modules)


# Each subcommand's one-line help. `kvsim` builds the full parser of the command asked for only (importing
# its module then); the others are listed by name and this line (tests/commands/test_cli.py keeps both in step).
COMMANDS = {
    "run": "generate in several lanes and print each step (the terminal app)",
    "memory": "KV-cache and weight memory for a model shape",
    "roofline": "this machine's measured roof; a model's decode/prefill bound on GPUs",
    "models": "list or fetch models",
    "gqa": "MHA → GQA → MQA → MLA: one model shape with fewer K/V heads (and a latent), bytes and times measured",
    "inspect": "check a saved run (.kvsim) and print what it holds",
    "screenshot": "render the main window offscreen and write PNGs",
    "export": "render a run offscreen to an animation (GIF or MP4, from the extension)",
}
_TOP_LEVEL_VALUES = ("--model", "--threads", "--lang", "--scale")  # kvsim's own options that take a value


def examples(*lines: str) -> dict[str, Any]:
    """A subcommand's epilog: two or three example command lines, kept as written."""
    return {
        "epilog": "examples:\n" + "\n".join(f"  {line}" for line in lines),
        "formatter_class": argparse.RawDescriptionHelpFormatter,
    }


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line (``only=None``), or with only subcommand ``only`` in full: the others are
    listed by name and help line, so their modules (and torch) are not imported (``only=""``: none in full)."""
    from ..core.logfile import log_path

    p = Parser(
        prog="kvsim",
        description="See the KV cache: a transformer run token by token,\n"
        "without and with a cache, with real tensors, counts and times.\n"
        f"Warnings and errors (with tracebacks) are logged to {log_path()} (KVSIM_LOG_DIR moves it).",
        **examples(
            "kvsim",
            "kvsim run --prompt 'Once upon a time' --steps 8",
            "kvsim memory --preset llama-3-8b --context 8192",
        ),
    )
    p.add_argument("--version", action="version", version=f"kvsim {__version__}")
    p.add_argument(
        "--model",
        help="model to open the app with: a name, a Hugging Face repository ORG/NAME, a folder or a .gguf (default: tiny)",
    )
    p.add_argument("--threads", type=positive_int, help="torch compute threads (default: half the cores, ≤ 4)")
    p.add_argument("--lang", help="the app's language: pt_BR or en (default: the remembered choice, else the system's)")
    p.add_argument("--scale", type=float, help="the app's size factor, e.g. 1.5 for a projector (0.5 to 4)")
    if only is None:
        import shtab  # shell completion from this parser (only the full parser knows every option)

        shtab.add_argument_to(p, "--print-completion", help="print a shell completion script (bash, zsh or tcsh) and exit")
    sub = p.add_subparsers(dest="command", parser_class=Parser, metavar="COMMAND", help="none opens the app")

    def full(name: str) -> bool:
        if only is None or only == name:
            return True
        sub.add_parser(name, help=COMMANDS[name], add_help=False)  # listed only
        return False

    if full("run"):
        from .run import add_run_parser

        add_run_parser(sub)
    if full("memory"):
        from .reports import add_memory_parser

        add_memory_parser(sub)
    if full("roofline"):
        from .roofline import add_roofline_parser

        add_roofline_parser(sub)
    if full("models"):
        models = sub.add_parser(
            "models", help=COMMANDS["models"], **examples("kvsim models list", "kvsim models get smollm2-135m")
        )
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
        mg.add_argument(
            "name", help="a fetchable name from `kvsim models list`, or a Hugging Face repository ORG/NAME[@REVISION]"
        )
        mg.add_argument(
            "--accept-license", action="store_true", help="accept the model's terms without being asked (for scripts)"
        )
    if full("gqa"):
        q = sub.add_parser("gqa", help=COMMANDS["gqa"], **examples("kvsim gqa", "kvsim gqa --layers 2 --heads 4 --json"))
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
    if full("inspect"):
        i = sub.add_parser(
            "inspect",
            help=COMMANDS["inspect"],
            **examples(
                "kvsim run --prompt Hi --steps 4 --save run.kvsim", "kvsim inspect run.kvsim", "kvsim inspect run.kvsim --json"
            ),
        )
        i.add_argument("file", help="a .kvsim file written by `kvsim run --save` or the app's Save run")
        i.add_argument("--json", action="store_true", help="the run's metadata and summary as one JSON object")
    if full("screenshot"):
        s = sub.add_parser(
            "screenshot",
            help=COMMANDS["screenshot"],
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
        s.add_argument(
            "--show", action="append", metavar="DOCK", help="open an extra dock: memory, roofline, requests (repeatable)"
        )
        s.add_argument("--theme", choices=["dark", "light"], help="the colour theme (default: dark)")
        s.add_argument("--lang", default=argparse.SUPPRESS, help="the pictures' language: pt_BR or en (default: English)")
    if full("export"):
        add_export_parser(sub)
    return p


def add_export_parser(sub: Subcommands) -> None:
    """`kvsim export`: a run rendered headless to a GIF or an MP4 for slides."""
    e = sub.add_parser(
        "export",
        help=COMMANDS["export"],
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


def _command_in(argv: Sequence[str]) -> str:
    """The subcommand ``argv`` names ("" for none), read before parsing: the first word that is not an option
    or the value of one of kvsim's own options."""
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word == "--print-completion":
            return "*"
        elif word in _TOP_LEVEL_VALUES:
            skip = True
        elif not word.startswith("-"):
            return word if word in COMMANDS else "*"
    return ""


def parse(argv: Sequence[str]) -> argparse.Namespace:
    """``argv`` parsed with only the subcommand asked for built in full (its module imported, no other);
    anything unexpected is parsed again by the whole parser, whose message is then the one shown."""
    only = _command_in(argv)
    if only != "*":
        try:
            args = build_parser(only).parse_args(argv)
            if args.command in (None, only):
                return args
        except UsageError:
            pass
    return build_parser().parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    from ..core.logfile import setup as setup_log

    setup_log()  # warnings (e.g. a special token outside the vocabulary) and errors also go to the log file
    try:
        args = parse(argv)
        # the app sets them once its splash is up; roofline sets them when it measures
        if args.command in ("run", "screenshot", "export", "gqa"):
            from ..models.loading import set_threads

            set_threads(getattr(args, "threads", None))
        if args.command == "run":
            from .run import cmd_run

            return cmd_run(args)
        if args.command in ("memory", "models", "inspect", "gqa"):
            from . import reports

            return {"memory": reports.cmd_memory, "models": reports.cmd_models, "inspect": reports.cmd_inspect}.get(
                args.command, reports.cmd_gqa
            )(args)
        if args.command == "roofline":
            from .roofline import cmd_roofline

            return cmd_roofline(args)
        if args.command in ("screenshot", "export"):
            from ..caches import parse_lanes

            parse_lanes(args.lanes)  # a bad spec is one error line before any window opens or anything loads
        if args.command == "screenshot":
            from ..ui.export import screenshot  # the app, imported only when asked for (the engine never needs it)

            return screenshot.main(args)
        if args.command == "export":
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

        return app.main(model=args.model, lang=args.lang, threads=args.threads)
    except UsageError as exc:
        return _fail(str(exc))
    except user_errors() as exc:
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
        from ..core.logfile import log_exception

        log = log_exception(f"kvsim {' '.join(argv)[:500]}: unexpected failure")  # the traceback, for a bug report
        where = f" (traceback in {log})" if log is not None else ""
        print(f"error: unexpected failure: {type(exc).__name__}: {message}{where}", file=sys.stderr)
        return 1


def _fail(message: str) -> int:
    from ..core.text import printable  # a message may quote a file's text: its escape codes are shown, not obeyed

    print(f"error: {printable(message.splitlines()[0]) if message else 'bad input'}", file=sys.stderr)
    return 2
