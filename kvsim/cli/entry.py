"""The ``kvsim`` command line: the subcommands of ``COMMANDS`` (``run``, ``memory``, ``roofline``, ``models``,
``gqa``, ``inspect``, ``screenshot``, ``export``), one module each; no arguments opens the app.

Bad input exits with status 2 and one ``error: …`` line on stderr, never a traceback. The desktop
app lives in ``kvsim.ui`` (Qt); ``main`` imports it only when asked for, as the ``screenshot`` and
``export`` modules do theirs — the places the engine reaches the app (the import-linter contract names them).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType

from .. import __version__
from .args import Parser, UsageError, examples, positive_int

# The engine's bad-input errors (exit 2, one line), by module: looked up among the modules imported so far
# (an error of a module never imported cannot have been raised), so that this file imports no engine part
# and `kvsim --help`, `--version`, `memory`, `roofline`, `models list` and `inspect` never import torch.
_USER_ERRORS = {
    "kvsim.models.base": "ModelLoadError",
    "kvsim.core.sampling": "SimulationError",
    "kvsim.caches.base": "SpecError",
    "kvsim.models.config": "ConfigError",
    "kvsim.costs.memory": "MemoryInputError",
    "kvsim.engine.trace_checks": "TraceError",
    "kvsim.models.chat_template": "ChatTemplateError",
}


def user_errors() -> tuple[type[BaseException], ...]:
    """The engine's bad-input error classes among the modules imported so far."""
    return tuple(getattr(sys.modules[m], name) for m, name in _USER_ERRORS.items() if m in sys.modules)


@dataclass(frozen=True)
class Command:
    """One subcommand: the module under ``kvsim.cli`` that exports ``HELP``, ``add_parser(sub)`` and ``run(args)``,
    and its help line (the module's ``HELP``, repeated here so that listing the commands imports none of them)."""

    module: str
    help: str


# The subcommands, the only place they are registered: a new one is one module and one line here. `kvsim` builds
# the full parser of the command asked for only (importing its module then); the others are listed by name and
# help line (tests/processes/test_cli_startup.py checks each line against its module's HELP).
COMMANDS = {
    "run": Command("run", "generate in several lanes and print each step (the terminal app)"),
    "memory": Command("memory", "KV-cache and weight memory for a model shape"),
    "roofline": Command("roofline", "this machine's measured roof; a model's decode/prefill bound on GPUs"),
    "models": Command("models", "list or fetch models"),
    "gqa": Command("gqa", "MHA → GQA → MQA → MLA: one model shape with fewer K/V heads (and a latent), bytes and times measured"),
    "inspect": Command("inspect", "check a saved run (.kvsim) and print what it holds"),
    "screenshot": Command("screenshot", "render the main window offscreen and write PNGs"),
    "export": Command(
        "export", "render a run offscreen to an animation (GIF or MP4, from the extension) or write it as a web page (--html)"
    ),
}
_TOP_LEVEL_VALUES = ("--model", "--threads", "--lang", "--scale", "--lanes", "--prompt")  # kvsim's own options that take a value


def command_module(name: str) -> ModuleType:
    """Subcommand ``name``'s module (imported now, not before: `kvsim memory` never imports `run`'s torch)."""
    return importlib.import_module(f"{__package__}.{COMMANDS[name].module}")


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
            "kvsim --model tiny --lanes kv,kv@w8,kv@w4:g64 --prompt 'Once upon a time'",
            "kvsim run --prompt 'Once upon a time' --steps 8",
            "kvsim memory --preset llama-3-8b --context 8192",
        ),
    )
    p.add_argument("--version", action="version", version=f"kvsim {__version__}")
    p.add_argument(
        "--model",
        help="model to open the app with: a name, a Hugging Face repository ORG/NAME, a folder or a .gguf (default: tiny)",
    )
    p.add_argument(
        "--lanes",
        help="the lanes the app opens with, comma-separated lane specs as the lanes box takes them (e.g. kv,kv@w8,kv@w4:g64)",
    )
    p.add_argument("--prompt", help="the prompt the app opens with (default: the model's first example)")
    p.add_argument("--threads", type=positive_int, help="torch compute threads (default: half the cores, ≤ 4)")
    p.add_argument("--lang", help="the app's language: pt_BR or en (default: the remembered choice, else the system's)")
    p.add_argument("--scale", type=float, help="the app's size factor, e.g. 1.5 for a projector (0.5 to 4)")
    if only is None:
        import shtab  # shell completion from this parser (only the full parser knows every option)

        shtab.add_argument_to(p, "--print-completion", help="print a shell completion script (bash, zsh or tcsh) and exit")
    sub = p.add_subparsers(dest="command", parser_class=Parser, metavar="COMMAND", help="none opens the app")
    for name, command in COMMANDS.items():
        if only is None or only == name:
            command_module(name).add_parser(sub)
        else:
            sub.add_parser(name, help=command.help, add_help=False)  # listed only
    return p


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
        if args.command is not None:
            # each command's run sets torch's threads if it computes (the app sets them once its splash is up)
            return command_module(args.command).run(args)
        if sys.platform.startswith("linux") and not any(
            os.environ.get(v) for v in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")
        ):
            # Qt would abort with a core dump; say what to do instead
            raise UsageError(
                "no display to open the window on (set DISPLAY, e.g. under Xvfb); `kvsim run` is the terminal version"
            )
        if args.lanes is not None and not args.lanes.strip(" ,"):
            raise UsageError("--lanes needs at least one lane spec, e.g. --lanes kv,kv@w8")
        known = ("en", "en_us", "en_gb", "pt", "pt_br")
        if args.lang is not None and args.lang.replace("-", "_").lower().split(".")[0] not in known:
            raise UsageError(f"--lang must be pt_BR or en, got {args.lang!r}")
        if args.scale is not None:
            if not 0.5 <= args.scale <= 4:
                raise UsageError(f"--scale must be between 0.5 and 4, got {args.scale}")
            os.environ["QT_SCALE_FACTOR"] = f"{args.scale:g}"  # read when the QApplication starts
        from ..ui import app  # the app, imported only when asked for (the engine never needs it)

        return app.main(model=args.model, lang=args.lang, threads=args.threads, lanes=args.lanes, prompt=args.prompt)
    except UsageError as exc:
        return _fail(str(exc))
    except user_errors() as exc:
        return _fail(str(exc))
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except MemoryError as exc:  # (its message is often empty: say what it means)
        detail = f": {str(exc).splitlines()[0][:200]}" if str(exc).strip() else ""
        return _fail(f"not enough memory (MemoryError{detail}); fewer steps, lanes or requests, or a smaller model, need less")
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
