"""The Portuguese glossary (resources/translations/glossary.json) decides one word per concept, and every
Portuguese text kvsim ships keeps to it: the .ts, the lesson, the example prompts, the Portuguese request
lists. The walks over the app's visible widgets in Portuguese (tests/checks/test_translations.py,
tests/app/window/test_i18n_docks.py) apply the same check to what the audience sees."""

from __future__ import annotations

import json
import re

import pytest
from glossary_check import (
    GLOSSARY,
    example_prompts,
    glossary,
    kept,
    lesson_pairs,
    portuguese_texts,
    problems,
    term_pattern,
    ts_texts,
    words_only,
)


def term(en: str) -> dict:
    return next(t for t in glossary()["terms"] if t["en"] == en)


def test_one_portuguese_word_per_concept_with_its_reason() -> None:
    terms = glossary()["terms"]
    english = [t["en"].lower() for t in terms]
    assert len(english) == len(set(english)), "a concept listed twice"
    for t in terms:
        assert t["pt_BR"].strip() and isinstance(t.get("forms", []), list), t
    # the decisions the issue asks for, each with its reason
    assert term("lane")["pt_BR"] == "faixa" and term("lane")["gender"] == "feminine"
    assert term("batch")["pt_BR"] == "lote" and term("continuous batching")["pt_BR"] == "lotes contínuos"
    assert term("cache")["gender"] == "masculine" and term("KV cache")["gender"] == "masculine"
    for en in ("lane", "batch", "cache", "KV cache", "prefix caching", "attention sinks", "prefill", "decode", "forward pass"):
        assert len(term(en).get("why", "")) > 20, f"{en}: say why"
    # the ones the lecturer keeps in English, as the articles write them; the others are translated
    assert {t["en"] for t in terms if kept(t)} >= {"cache", "KV cache", "prefix caching", "prefill", "decode", "attention sinks"}
    assert not kept(term("lane")) and not kept(term("batch")) and not kept(term("system prompt"))
    for rule in glossary()["forbidden"]:
        re.compile(rule["pattern"])
        assert rule["why"].strip()


def test_the_check_catches_what_the_issue_names_and_passes_its_fixes() -> None:
    """Not vacuous: the calques and stray English of the old translations fail, their fixes pass."""
    wrong = [
        "Compare as linhas e os FLOPs sob cada lane",
        "As duas lanes rodam o mesmo modelo sobre o mesmo prompt",
        "A cache guarda o que o modelo já leu",
        "estas faixas guardam a cache inteira",
        "uma forward sobre algumas linhas novas",
        "batching contínuo: a requisição i chega no passo 2i",
        "Requisições: blocos paginados e cache de prefixos",
        "sinks de atenção + janela",
        "o cache KV",
        "o mesmo system prompt",
        "× tokens × batch × bytes",
        "Os bytes aparecem sob ela",
        "TOVA: descarta a menos atendida",
        "ITL mediano 3 ms",
    ]
    for text in wrong:
        assert problems(text), text
    right = [
        "Compare as linhas e os FLOPs abaixo de cada faixa",
        "As duas faixas rodam o mesmo modelo com o mesmo prompt",
        "O cache guarda o que o modelo já leu",
        "um forward com algumas linhas novas",
        "lotes contínuos: a requisição i chega no passo 2i",
        "Requisições: blocos paginados e prefix caching",
        "attention sinks + janela · sinks + janela",
        "o KV cache, o prefill, o decode, o TTFT, a ITL mediana",
        "o mesmo prompt de sistema · × tokens × lote × bytes",
        "o passo sob o cursor · decodificação especulativa",
        # names, not prose: placeholders, `code`, lane specs, paths
        "faixa {lane}: {lanes} · `--batching continuous` · window:8, sink:4+window:12 · resources/requests",
    ]
    for text in right:
        assert not problems(text), (text, problems(text))


def test_every_portuguese_text_keeps_to_the_glossary() -> None:
    texts = portuguese_texts()
    wheres = {where.split("[")[0].split(".")[0] for where, _ in texts}
    assert {"ts", "lesson", "prompts"} <= wheres and any(w.startswith("pt-") for w in wheres)
    assert len(texts) >= 700
    wrong = [(where, text, p) for where, text in texts for p in problems(text)]
    assert not wrong, "\n".join(f"{where}: {text[:90]!r}: {p}" for where, text, p in wrong[:40])


@pytest.mark.parametrize("source", ["ts", "lesson"])
def test_where_the_english_names_a_concept_the_portuguese_uses_its_word(source) -> None:
    """Each English term of a message (or a lesson paragraph) appears in its Portuguese as the glossary's
    word or one of its forms — the lesson is held to the same words as the interface."""
    pairs = ts_texts() if source == "ts" else lesson_pairs()
    terms = glossary()["terms"]
    checked = 0
    for t in terms:
        longer = [o["en"] for o in terms if o is not t and re.search(term_pattern(t["en"]), o["en"], re.I)]
        accepted = [t["pt_BR"], *t.get("forms", [])]
        for where, en, pt in pairs:
            english = words_only(en)
            for other in longer:  # "KV cache" is checked as itself, not as "cache"
                english = re.sub(term_pattern(other), "", english, flags=re.I)
            if re.search(term_pattern(t["en"]), english, re.I):
                checked += 1
                assert any(a.lower() in pt.lower() for a in accepted), f"{where}: {t['en']!r} is {t['pt_BR']!r}, not in {pt!r}"
    assert checked >= (300 if source == "ts" else 40)


def test_the_example_prompts_are_brazilian_and_the_lesson_prompt_is_one_of_them() -> None:
    data = json.loads((GLOSSARY.parents[2] / "ui" / "prompts.json").read_text(encoding="utf-8"))
    portuguese = [text for where, _model, text in example_prompts() if where.endswith(".pt")]
    assert portuguese and all(not problems(text) for text in portuguese)
    # European forms a Brazilian lecturer would not say in an example ("aldeia junto ao mar")
    assert not [text for text in portuguese if re.search(r"\b(aldeia|junto ao mar|autocarro|ecrã|ficheiro)\b", text)]
    assert data["models"]["gemma3-270m"]["pt"], "the model that writes Portuguese has Portuguese examples"
    lesson_pt = {pt for where, _en, pt in lesson_pairs() if where.endswith(".prompt")}
    assert lesson_pt <= set(
        data["pt"]
    )  # the lesson's prompt is an example the tests run (tests/engine/runs/test_demo_prompts.py)
