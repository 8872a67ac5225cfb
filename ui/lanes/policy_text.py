"""A cache policy's words in the app's language, the same way for every policy, built-in or plug-in.

Each policy marks its words in its own file (``kvsim/caches/*.py``) as templates with named
placeholders, ``QT_TRANSLATE_NOOP("policies", "keeps the last {window} rows; …")``, and a run records
them with their values in the lane's meta (``PolicyWords``). Here a template is translated, then
filled, its numbers written in the locale's way. A policy that marks no words is shown as the engine
wrote it (its English title and explanation).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import asdict
from functools import cache
from typing import Any

from kvsim.core.words import QT_TRANSLATE_NOOP

from ..i18n import LocalFormatter, integer, translate

CONTEXT = "policies"  # kvsim.core.words.POLICIES: the context every policy marks its words in
WEIGHTS = QT_TRANSLATE_NOOP("policies", " · weights {weights}")
WEIGHTS_ALONE = QT_TRANSLATE_NOOP("policies", "weights {weights}")  # a plain cache's short header: what differs
PER_ROW = QT_TRANSLATE_NOOP("policies", "per row")  # w8:row: one scale per row of each matrix


_FORMATTER = LocalFormatter()  # named placeholders only, numbers in the locale's way


def fill(template: str, values: Mapping[str, Any]) -> str:
    """``template`` translated (context "policies") and filled with ``values``; when the translation lost
    or misspelt a placeholder, the English; when that does not fit the values either, the template as is."""
    for text in (translate(CONTEXT, template), template):
        try:
            return _FORMATTER.format(text, **values)
        except (KeyError, IndexError, ValueError, TypeError, AttributeError):
            continue
    return template


@cache
def _registered_words(policy: str, options: str) -> dict[str, Any] | None:
    """The words of a registered policy (for a run saved before runs recorded them)."""
    from kvsim.caches import policy_class  # the engine's registry imports torch: only for such a run

    cls = policy_class(policy)
    try:
        words = cls.words(json.loads(options)) if cls is not None else None
    except (KeyError, TypeError, ValueError):
        words = None
    return asdict(words) if words is not None else None


def words_of(lane) -> dict[str, Any] | None:
    """A lane's recorded ``PolicyWords`` (as a dict), else its registered policy's, else None."""
    if lane.words is not None:
        return lane.words
    if not lane.policy:
        return None
    return _registered_words(lane.policy, json.dumps(lane.options, sort_keys=True))


def title(lane) -> str:
    """A lane's policy title (``LaneInfo``) in the app's language."""
    words = words_of(lane)
    if not (words and words.get("title")):
        return lane.title  # the recorded title already names the weights
    text = fill(words["title"], words.get("values", {}))
    if getattr(lane, "weights", ""):  # the same policy over quantized weights (a lane spec's @w8 suffix)
        text += fill(WEIGHTS, {"weights": weights_words(lane.weights)})
    return text


def weights_words(weights: str) -> str:
    """A weights suffix as its format's name: "w8" → "INT8" (llama.cpp's Q8_0 blocks), "w8:row" → "INT8 (per row)",
    "w4:g64" → "INT4 (g64)", "w8:fphead" → "INT8 (fp head)", "gguf" → "GGUF"; the group and the head are notation,
    the same in every language, "per row" is words."""
    parts = [p for p in weights.lower().split(":") if p]
    if not parts:
        return ""
    head, rest = parts[0], parts[1:]
    name = f"INT{head[1:]}" if head in ("w8", "w4") else head.upper()
    said = {"fphead": "fp head", "row": translate(CONTEXT, PER_ROW)}
    notes = [said.get(part, part) for part in rest]
    return f"{name} ({', '.join(notes)})" if notes else name


def brief_title(lane) -> str:
    """A lane's title cut before its details ("H2O: most read + recent" → "H2O", "Speculative (k=4, lookup)" →
    "Speculative"); "" when it has none to cut (or a weights lane: its format is what tells it apart)."""
    if not getattr(lane, "title", None) or getattr(lane, "weights", None):
        return ""
    text = title(lane)
    cut = min((i for i in (text.find(" ("), text.find(": ")) if i > 0), default=-1)
    return text[:cut] if cut > 0 else ""


def short_words(lane) -> str:
    """A lane in a few words with its key number, for a narrow header ("window 16", "H2O 8+8", "janela 16"),
    and its weights' format where it has some ("window 16 · INT8"); "" when its policy gives no short form.
    A run saved before policies gave one takes its registered policy's."""
    words = words_of(lane) or {}
    template = words.get("short")
    if template is None and getattr(lane, "policy", None):
        words = _registered_words(lane.policy, json.dumps(lane.options, sort_keys=True)) or {}
        template = words.get("short")
    if not template:
        return ""
    text = fill(template, words.get("values", {}))
    weights = getattr(lane, "weights", "")
    return f"{text} · {weights_words(weights)}" if weights else text


def spec_words(spec: str) -> str:
    """One lane spec in a few words, for the lane chooser ("h2o:8:r8" → "H2O 8+8", "window:16" → "janela 16",
    "kv@w8" → "weights INT8", "h2o:8:r8@w8" → "H2O 8+8 · INT8"); "" when its policy gives no short form, the
    spec does not parse, or the engine's registry is not loaded yet (it imports torch: never for this alone)."""
    caches = sys.modules.get("kvsim.caches")
    if caches is None:
        return ""
    try:
        lane = caches.parse_spec(spec)
    except ValueError:  # SpecError: a typed spec that does not parse keeps its own text
        return ""
    words = _registered_words(lane.policy, json.dumps(lane.options, sort_keys=True)) or {}
    text = fill(words["short"], words.get("values", {})) if words.get("short") else ""
    weights = spec.partition("@")[2]
    if not weights:
        return text
    return f"{text} · {weights_words(weights)}" if text else fill(WEIGHTS_ALONE, {"weights": weights_words(weights)})


def short_title(lane) -> str:
    """The shortest header that still tells a weights lane from the plain cache beside it: "weights INT4 (g64)"
    for a plain KV cache over quantized weights; "" for any other lane (its title is its short form)."""
    weights = getattr(lane, "weights", "")
    # a cache with no short form of its own keeps every row: only the weights tell it from the lane beside it
    short = (words_of(lane) or {}).get("short")
    plain = getattr(lane, "reuses_past", True) and not (lane.evicts or lane.window or lane.draft or short)
    if not weights or not plain:
        return ""
    return fill(WEIGHTS_ALONE, {"weights": weights_words(weights)})


def explanation(lane) -> str:
    """A lane's one-line explanation in the app's language."""
    words = words_of(lane)
    return fill(words["explanation"], words.get("values", {})) if words and words.get("explanation") else lane.explanation


def parameters(lane) -> dict[str, str]:
    """What each of the lane's spec letters means ("W" → "the rows kept"), in the app's language."""
    words = words_of(lane) or {}
    return {letter: translate(CONTEXT, text) for letter, text in (words.get("parameters") or {}).items()}


def why(bill) -> str:
    """A ``LaneBill``'s why (what the lane holds besides the seed formula) in the app's language."""
    return fill(bill.why_template, bill.why_values) if bill.why_template else bill.why


def known_policies() -> str:
    """Every registered policy's grammar with what its letters mean ("`window:W` (W: the rows kept)"), for
    the lane chooser. It reads the engine's registry, which imports torch: once the engine is loaded."""
    from kvsim.caches import parse_spec, policy_class, policy_examples

    out = []
    for example, grammar in policy_examples():
        lane = parse_spec(example)
        cls = policy_class(lane.policy)
        words = cls.words(lane.options) if cls is not None else None
        letters = words.parameters if words is not None else {}
        meanings = "; ".join(f"{letter}: {translate(CONTEXT, text)}" for letter, text in letters.items())
        out.append(f"`{grammar}`" + (f" ({meanings})" if meanings else ""))
    return ", ".join(out)


#: a lane option in words (its spec's numbers, as a label says them): what ``window:64`` means, not how it is typed
OPTION_WORDS = {
    "window": QT_TRANSLATE_NOOP("lanes", "last {n}"),
    "sinks": QT_TRANSLATE_NOOP("lanes", "first {n}"),
    "heavy": QT_TRANSLATE_NOOP("lanes", "{n} most read"),
    "recent": QT_TRANSLATE_NOOP("lanes", "{n} recent"),
    "budget": QT_TRANSLATE_NOOP("lanes", "{n} rows"),
    "block_size": QT_TRANSLATE_NOOP("lanes", "blocks of {n}"),
    "rank": QT_TRANSLATE_NOOP("lanes", "rank {n}"),
}


def option_words(lane) -> str | None:
    """A lane's options in words ("last 64", "first 4, last 60"), in the app's language; "" when it has
    none the title does not already show; None when one has no words here (a plug-in's own option)."""
    words = words_of(lane) or {}
    in_title = str(words.get("title", ""))
    said = []
    for key, value in (lane.options or {}).items():
        if "{" + key + "}" in in_title:
            continue  # "INT4 cache (g32, r16)": the title says it already
        template = OPTION_WORDS.get(key)
        if template is None or isinstance(value, bool) or not isinstance(value, int):
            return None
        said.append(translate("lanes", template).format(n=integer(value)))
    return ", ".join(said)


def lane_label(session, index: int) -> str:
    """A lane's name in words, in the app's language: its title, and its options in words where it has
    some ("sliding window (last 64)"); its spec in their place where they have no words (a plug-in's
    options) or two lanes would read alike. The spec itself is for tooltips (``lane_tooltip``)."""
    lane = session.lanes[index]

    def said(info) -> str:
        options = option_words(info)
        name = title(info) if info.title else info.name
        if options is None:
            return f"{name} ({info.name})"
        return f"{name} ({options})" if options else name

    label = said(lane)
    if any(said(other) == label for other in session.lanes if other.index != index):
        return f"{title(lane) if lane.title else lane.name} ({lane.name})"  # twins: the spec tells them apart
    return label
