"""What every subcommand's parser shares: an ArgumentParser whose errors are one line (exit 2), the examples
that close each command's help, and the checked argument types."""

from __future__ import annotations

import argparse
import json
import math
from typing import Any, NoReturn, TypeAlias


class UsageError(Exception):
    """A command line that cannot be carried out as given (exit 2, one line)."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2 (argparse prints usage + two lines)
        raise UsageError(message)


#: what ``add_subparsers`` returns, to which each subcommand's module adds its parser
Subcommands: TypeAlias = "argparse._SubParsersAction[Parser]"


def examples(*lines: str) -> dict[str, Any]:
    """A subcommand's epilog: two or three example command lines, kept as written."""
    return {
        "epilog": "examples:\n" + "\n".join(f"  {line}" for line in lines),
        "formatter_class": argparse.RawDescriptionHelpFormatter,
    }


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be ≥ 1, got {value}")
    return value


def nonneg_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be ≥ 0, got {value}")
    return value


def seed_int(text: str) -> int:
    value = nonneg_int(text)
    if value >= 2**63:
        raise argparse.ArgumentTypeError(f"must be below 2^63, got {text}")
    return value


def _finite(value: object) -> object:
    """``value`` with every float that is not a number (NaN, ±inf) replaced by null."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def json_line(obj: object) -> str:
    """Strict JSON (never a bare NaN or Infinity): a number that is not one is written as null."""
    return json.dumps(_finite(obj), allow_nan=False)


def prepare_render(args: argparse.Namespace) -> None:
    """Before `kvsim screenshot` or `kvsim export` opens a window: torch's threads set, and the lanes parsed, so a bad
    spec is one error line before anything loads."""
    from ..caches import parse_lanes
    from ..models.loading import set_threads

    set_threads(getattr(args, "threads", None))
    parse_lanes(args.lanes)
