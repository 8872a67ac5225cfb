"""Text from files, made safe to print: control characters shown as escapes, never obeyed.

A model name or a prompt read from a saved run may hold terminal escape codes (``\\x1b[2J`` clears
the screen), carriage returns, bidirectional overrides or line separators; printed raw they would
rewrite what the terminal (or a label) shows. ``printable`` spells every such character as a Python
escape (``\\x1b``, ``\\u202e``) and leaves all other text as it is."""

from __future__ import annotations

import unicodedata

__all__ = ["printable"]

_UNSAFE = ("Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn")  # controls, format (bidi), line/paragraph separators, unassigned


def printable(text: object, limit: int | None = None) -> str:
    """``text`` (``str()`` of anything) with every control/format character escaped; cut to ``limit``
    characters with "…" when it is longer."""
    s = str(text)
    if limit is not None and len(s) > limit:
        s = s[:limit] + "…"
    if s.isprintable():
        return s
    out = []
    for ch in s:
        if ch == " " or unicodedata.category(ch) not in _UNSAFE:
            out.append(ch)
        else:
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    return "".join(out)
