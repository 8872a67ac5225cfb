"""What every subcommand's parser shares: an ArgumentParser whose errors are one line (exit 2),
and the checked argument types."""

from __future__ import annotations

import argparse
from typing import NoReturn, TypeAlias


class UsageError(Exception):
    """A command line that cannot be carried out as given (exit 2, one line)."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2 (argparse prints usage + two lines)
        raise UsageError(message)


#: what ``add_subparsers`` returns, to which each subcommand's module adds its parser
Subcommands: TypeAlias = "argparse._SubParsersAction[Parser]"


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
