"""Write PySide6's enum values by their full, scoped names: ``Qt.AlignRight`` → ``Qt.AlignmentFlag.AlignRight``.

PySide6 still answers the old unscoped names at run time (its "forgiveness mode"), but its type stubs
know only the scoped ones, so mypy reports every unscoped use. This rewrites them in place; the value
is the same object, so nothing changes at run time. Idempotent: a merge that brings unscoped names
back is fixed by running it again.

    python scripts/qt_scoped_enums.py [FILES OR FOLDERS …]      # default: ui/
"""

from __future__ import annotations

import enum
import io
import sys
import tokenize
from pathlib import Path

from PySide6 import QtCore, QtGui, QtWidgets

ROOT = Path(__file__).resolve().parent.parent
# dir() and getattr, not vars(): PySide6 creates a module's classes when they are first asked for
CLASSES = {name: getattr(mod, name) for mod in (QtCore, QtGui, QtWidgets) for name in dir(mod) if name.startswith("Q")}


def scoped(owner: str, name: str) -> str | None:
    """``Enum.name`` when ``owner.name`` is an enum value reached without its enum, else None."""
    cls = CLASSES.get(owner)
    if not isinstance(cls, type) or not name[:1].isupper():
        return None
    value = getattr(cls, name, None)
    if not isinstance(value, enum.Enum):
        return None
    enum_name = type(value).__name__
    if getattr(cls, enum_name, None) is not type(value):  # the enum must be reachable from the owner
        return None
    return f"{enum_name}.{name}"


def rewrite(text: str) -> tuple[str, int]:
    """``text`` with every unscoped enum value scoped, and how many were."""
    tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    lines = text.splitlines(keepends=True)
    edits: list[tuple[int, int, str]] = []  # (row, col of the value's name, replacement)
    for i in range(len(tokens) - 2):
        owner, dot, name = tokens[i], tokens[i + 1], tokens[i + 2]
        if owner.type == tokenize.NAME and dot.string == "." and name.type == tokenize.NAME:
            if i > 1 and tokens[i - 1].string == "." and tokens[i - 2].string not in ("QtCore", "QtGui", "QtWidgets"):
                continue  # something.Qt.X where something is not a Qt module: not ours
            new = scoped(owner.string, name.string)
            if new is not None and name.start[0] == dot.end[0] == owner.end[0]:
                edits.append((name.start[0], name.start[1], new))
    for row, col, new in sorted(edits, reverse=True):
        line = lines[row - 1]
        old = new.rsplit(".", 1)[1]
        assert line[col : col + len(old)] == old
        lines[row - 1] = line[:col] + new + line[col + len(old) :]
    return "".join(lines), len(edits)


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or [ROOT / "ui"]
    files = [f for p in paths for f in (sorted(p.rglob("*.py")) if p.is_dir() else [p])]
    total = 0
    for f in files:
        text = f.read_text(encoding="utf-8")
        new, n = rewrite(text)
        if n:
            f.write_text(new, encoding="utf-8")
            print(f"{f}: {n}")
            total += n
    print(f"{total} enum values scoped in {len(files)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
