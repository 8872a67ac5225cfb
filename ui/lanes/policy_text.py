"""The cache policies' titles and explanations in the app's language.

The engine describes each policy in English (``PolicyInfo.title`` / ``.explanation``, written in
``kvsim/caches/*.py``, with their parameters filled in: "keeps the last 64 rows; …"). The views show
them through here: every registered policy's text is a template below (marked for ``pyside6-lupdate``
with ``QT_TRANSLATE_NOOP``); the engine's text is matched against the English template, its numbers
taken out and put into the translated one. A text no template matches (a plug-in policy kvsim does
not know) is shown as the engine wrote it.
"""

from __future__ import annotations

import re
from functools import cache

from PySide6.QtCore import QT_TRANSLATE_NOOP

from ..i18n import translate

CONTEXT = "views.policy_text"

# the titles (kvsim/caches/*.py describe()); {b}, {g}, {r}: the quantized cache's bits, group, residual
TITLES = (
    QT_TRANSLATE_NOOP("views.policy_text", "no cache"),
    QT_TRANSLATE_NOOP("views.policy_text", "KV cache"),
    QT_TRANSLATE_NOOP("views.policy_text", "paged KV cache"),
    QT_TRANSLATE_NOOP("views.policy_text", "sliding window"),
    QT_TRANSLATE_NOOP("views.policy_text", "attention sinks + window"),
    QT_TRANSLATE_NOOP("views.policy_text", "INT{b} cache (g{g}, r{r})"),
    QT_TRANSLATE_NOOP("views.policy_text", "KV cache, every row"),
    QT_TRANSLATE_NOOP("views.policy_text", "H2O: heavy hitters + recent"),
    QT_TRANSLATE_NOOP("views.policy_text", "TOVA: drop the least attended"),
    QT_TRANSLATE_NOOP("views.policy_text", "SnapKV: prompt compressed once"),
    QT_TRANSLATE_NOOP("views.policy_text", "StreamingLLM: positions in the cache"),
)

# the one-line explanations, with their parameters as named placeholders
EXPLANATIONS = (
    QT_TRANSLATE_NOOP("views.policy_text", "recomputes all rows, every step"),
    QT_TRANSLATE_NOOP("views.policy_text", "computes the new row, reads the rest"),
    QT_TRANSLATE_NOOP("views.policy_text", "rows in blocks of {b} slots, read through a block table"),
    QT_TRANSLATE_NOOP("views.policy_text", "keeps the last {w} rows; older ones are evicted"),
    QT_TRANSLATE_NOOP(
        "views.policy_text",
        "keeps the first {s} rows forever and the last {w}, at their original positions; the rows between are evicted",
    ),
    QT_TRANSLATE_NOOP("views.policy_text", "computes the new row, reads the rest; a local layer keeps only its window"),
    QT_TRANSLATE_NOOP(
        "views.policy_text", "computes the new row, reads the rest; keeps every row on every layer, local ones too"
    ),
    QT_TRANSLATE_NOOP("views.policy_text", "keeps the {b} rows read most so far and the last {r}; each KV head chooses its own"),
    QT_TRANSLATE_NOOP("views.policy_text", "keeps {b} rows; each step drops the row the newest query reads least"),
    QT_TRANSLATE_NOOP("views.policy_text", "keeps {b} prompt rows chosen by the attention of its last {w} tokens; then appends"),
    QT_TRANSLATE_NOOP(
        "views.policy_text",
        "keeps the first {s} rows and the last {w}; RoPE by slot in the cache, so no distance exceeds {d}",
    ),
    QT_TRANSLATE_NOOP(
        "views.policy_text",
        "keys per channel, values per token, {b}-bit codes in groups of {g}; the last {r} tokens in full precision",
    ),
    QT_TRANSLATE_NOOP(
        "views.policy_text",
        "keys per channel, values per token, {b}-bit codes in groups of {g}; only an unfinished group in full precision",
    ),
)


@cache
def _pattern(template: str) -> re.Pattern[str]:
    """The English ``template`` as a regular expression: each ``{name}`` a run of digits."""
    parts = re.split(r"\{(\w+)\}", template)
    regex = "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>[0-9]+)" for i, p in enumerate(parts))
    return re.compile(regex + r"\Z")


def _translated(text: str, templates: tuple[str, ...]) -> str:
    for template in templates:
        m = _pattern(template).match(text)
        if m is not None:
            return translate(CONTEXT, template).format(**m.groupdict())
    return text


def title(text: str) -> str:
    """A policy's title (``PolicyInfo.title``) in the app's language; an unknown one as it is."""
    return _translated(text, TITLES)


def explanation(text: str) -> str:
    """A policy's one-line explanation in the app's language; an unknown one as it is."""
    return _translated(text, EXPLANATIONS)


def lane_label(session, index: int) -> str:
    """``session.lane_label(index)`` (the title, with the spec where it says more) with the title translated."""
    label = session.lane_label(index)
    english = session.lanes[index].title
    if english and label.startswith(english):
        return title(english) + label[len(english) :]
    return label
