"""The engine's words, marked for translation without importing Qt.

``QT_TRANSLATE_NOOP(context, text)`` returns ``text``. ``pyside6-lupdate`` finds calls by that name in
every source the translation project lists (``resources/translations/kvsim.json``), so the text lands in
the .ts under ``context``; the app translates it where it shows it, the engine (and the CLI) use the
English. Templates name their placeholders ("keeps the last {window} rows"): a translation keeps them,
and whoever shows the text fills them. Every cache policy's words are in one context, ``"policies"``
(written out as a literal in each call: lupdate reads the call, not a variable).
"""

from __future__ import annotations

POLICIES = "policies"  # the context of the cache policies' words (titles, explanations, parameters, bills)


def QT_TRANSLATE_NOOP(context: str, text: str) -> str:  # the name pyside6-lupdate looks for
    """``text``, marked for translation under ``context``."""
    return text
