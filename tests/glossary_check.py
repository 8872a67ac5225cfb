"""The Portuguese glossary (resources/translations/glossary.json) as a check the tests share: every
Portuguese text kvsim ships, and what a walk over the app's widgets finds, holds no form the glossary
forbids and no English term the glossary translates (the terms it keeps in English — cache, prefill,
decode, prefix caching, token — are allowed)."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GLOSSARY = ROOT / "resources" / "translations" / "glossary.json"
TS = ROOT / "resources" / "translations" / "kvsim_pt_BR.ts"
LESSON = ROOT / "resources" / "lesson" / "lesson.json"
PROMPTS = ROOT / "ui" / "prompts.json"
REQUEST_LISTS = ROOT / "resources" / "requests"
# lane specs are names one types (window:8, sink:4+window:12, paged:16, kv@w8): never translated
SPEC = re.compile(r"\b(?:window|sink|int[248]|paged|kv|none|cached|uncached|h2o|tova|snapkv|latent|spec)(?:[:@+]\w+)+")


@cache
def glossary() -> dict:
    return json.loads(GLOSSARY.read_text(encoding="utf-8"))


def term_pattern(text: str) -> str:
    """``text`` as a whole word or phrase (a hyphen or a letter on either side makes it another word)."""
    return r"(?<![\w-])" + re.escape(text) + r"(?![\w-])"


def kept(term: dict) -> bool:
    """A term the glossary keeps in English (its Portuguese word contains the English one)."""
    return re.search(term_pattern(term["en"]), term["pt_BR"], re.I) is not None


def words_only(text: str) -> str:
    """``text`` without what is not prose: rich-text markup, `code`, {placeholders}, lane specs."""
    text = re.sub(r"<[^>]+>", " ", text)
    text = re.sub(r"`[^`]*`", " ", text)
    text = re.sub(r"\{[^{}]*\}", " ", text)
    text = re.sub(r"\S*\w/\w\S*", " ", text)  # paths (resources/requests): names, not prose
    return SPEC.sub(" ", text)


def problems(text: str) -> list[str]:
    """What the glossary finds wrong in one Portuguese text: a forbidden form, or an English term it translates."""
    found = []
    prose = words_only(text)
    for rule in glossary()["forbidden"]:
        m = re.search(rule["pattern"], prose, re.I)
        if m:
            found.append(f"{m.group(0)!r}: {rule['why']}")
    for term in glossary()["terms"]:
        if not kept(term):
            m = re.search(term_pattern(term["en"]), prose, re.I)
            if m:
                found.append(f"{m.group(0)!r} is {term['pt_BR']!r} in Portuguese (glossary.json)")
    return found


def ts_texts() -> list[tuple[str, str, str]]:
    """(where, English source, Portuguese translation) of every message of the .ts."""
    out = []
    for context in ET.parse(TS).getroot().iter("context"):
        name = context.findtext("name") or ""
        for message in context.iter("message"):
            tr = message.find("translation")
            out.append((f"ts[{name}]", message.findtext("source") or "", "".join(tr.itertext()) if tr is not None else ""))
    return out


def lesson_pairs() -> list[tuple[str, str, str]]:
    """(where, English, Portuguese) of every title, paragraph and prompt of the lesson."""
    out = []
    for step in json.loads(LESSON.read_text(encoding="utf-8"))["steps"]:
        for field in ("title", "text"):
            out.append((f"lesson[{step['id']}].{field}", step[field]["en"], step[field]["pt"]))
        out.append((f"lesson[{step['id']}].prompt", step["state"]["prompt"]["en"], step["state"]["prompt"]["pt"]))
    return out


def example_prompts() -> list[tuple[str, str, str]]:
    """(where, model, text) of every example prompt: the default lists and each model's own."""
    data = json.loads(PROMPTS.read_text(encoding="utf-8"))
    out = [(f"prompts.{lang}", "tiny", text) for lang in ("en", "pt") for text in data.get(lang, [])]
    for model, lists in data.get("models", {}).items():
        out += [(f"prompts.models.{model}.{lang}", model, text) for lang, texts in lists.items() for text in texts]
    return out


def portuguese_texts() -> list[tuple[str, str]]:
    """(where, text) of every Portuguese text kvsim ships: the .ts, the lesson, the example prompts,
    the Portuguese request lists (their titles, system prompts and prompts are shown in the app)."""
    out = [(where, pt) for where, _en, pt in ts_texts()]
    out += [(where, pt) for where, _en, pt in lesson_pairs()]
    out += [(where, text) for where, _model, text in example_prompts() if ".pt" in where]
    for path in sorted(REQUEST_LISTS.glob("pt-*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        out += [(path.name, data.get("title", "")), (path.name, data.get("system", ""))]
        out += [(path.name, p) for p in data.get("prompts", [])]
    return out
