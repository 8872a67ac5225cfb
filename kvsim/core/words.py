"""The engine's words, marked for translation without importing Qt.

``QT_TRANSLATE_NOOP(context, text)`` returns ``text``. ``pyside6-lupdate`` finds calls by that name in
every source the translation project lists (``resources/translations/kvsim.json``), so the text lands in
the .ts under ``context``; the app translates it where it shows it, the engine (and the CLI) use the
English. Templates name their placeholders ("keeps the last {window} rows"): a translation keeps them,
and whoever shows the text fills them. Every cache policy's words are in one context, ``"policies"``
(written out as a literal in each call: lupdate reads the call, not a variable).
"""

from __future__ import annotations

import re
import string

POLICIES = "policies"  # the context of the cache policies' words (titles, explanations, parameters, bills)


def QT_TRANSLATE_NOOP(context: str, text: str) -> str:  # the name pyside6-lupdate looks for
    """``text``, marked for translation under ``context``."""
    return text


# What a template read from a file may ask of ``str.format``: a plain name, and a format spec without a width
# (alignment, sign, grouping, a precision of at most two digits, a type). A width, a nested field, an attribute
# or an index would let a crafted run file build a gigabyte string ("{x:>999999999}") or reach into an object
# when the app fills the words.
_SAFE_SPEC = re.compile(r"[<>=^]?[+\- ]?[,_]?(?:\.\d{1,2})?[bdefgnosx%]?")


def unsafe_field(template: str) -> str | None:
    """The first replacement field of ``template`` that kvsim would not fill from a file (shown as written), or
    None when every field is a plain name with a harmless format spec (the kind the policies' words use)."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError:  # a lone brace
        return "an unmatched brace"
    for _, name, spec, conversion in parsed:
        if name is None:  # the text after the last field
            continue
        if not name.isidentifier() or conversion or not _SAFE_SPEC.fullmatch(spec or ""):
            return "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
    return None
