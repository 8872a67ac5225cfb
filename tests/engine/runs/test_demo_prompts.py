"""Demo content that works: the lesson's prompts and every model's example prompts (ui/prompts.json)
make the model write, not loop. Greedy decoding of 40 tokens, as the app runs them (the model's chat
template applied, the KV cache lane), must not repeat any 4-gram of tokens more than twice. The bundled
`tiny` is always checked; SmolLM2 and Gemma 3 270M when fetched and asked for (KVSIM_SMOLLM2=1,
KVSIM_GEMMA3=1, as the other opt-in tests)."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from helpers import ROOT, opt_in_model_file

from kvsim.caches import parse_lanes
from kvsim.engine.simulate import Simulator
from kvsim.models.loading import load_model

PROMPTS = json.loads((ROOT / "ui" / "prompts.json").read_text(encoding="utf-8"))
LESSON = json.loads((ROOT / "resources" / "lesson" / "lesson.json").read_text(encoding="utf-8"))
STEPS = 40
MOST = 2  # times one 4-gram may occur in the 40 tokens
OPT_IN = {"smollm2-135m": "KVSIM_SMOLLM2", "gemma3-270m": "KVSIM_GEMMA3"}


def most_repeated_4gram(ids: list[int]) -> tuple[int, tuple[int, ...]]:
    """How often the most frequent run of 4 consecutive tokens occurs in ``ids`` (overlaps count), and which."""
    grams = Counter(tuple(ids[i : i + 4]) for i in range(len(ids) - 3))
    if not grams:
        return 0, ()
    gram, n = grams.most_common(1)[0]
    return n, gram


def greedy(loaded, prompt: str, steps: int = STEPS) -> list[int]:
    """The tokens the app's default lane (the KV cache) writes for ``prompt``: its chat template applied as
    the app applies it, greedy, stopping at the end-of-sequence token as the app does."""
    tok = loaded.tokenizer
    ids = tok.encode(tok.format_prompt(prompt, chat=True))
    sim = Simulator(loaded.model, tok, ids, parse_lanes("kv"), repeats=1)
    for _record in sim.run(steps):
        pass
    return sim.tokens[len(ids) :]


def check(loaded, prompt: str) -> None:
    out = greedy(loaded, prompt)
    text = loaded.tokenizer.decode(out)
    assert len(out) >= 12, f"{prompt!r}: the model stops after {len(out)} tokens: {text!r}"  # it says something
    n, gram = most_repeated_4gram(out)
    assert n <= MOST, f"{prompt!r} loops: {loaded.tokenizer.decode(list(gram))!r} {n}× in {text!r}"


def test_the_count_sees_a_loop() -> None:
    assert most_repeated_4gram([1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4]) == (3, (1, 2, 3, 4))
    assert most_repeated_4gram([1, 2, 3, 4, 5, 1, 2, 3, 4, 6])[0] == 2
    assert most_repeated_4gram(list(range(40)))[0] == 1 and most_repeated_4gram([7, 7, 7])[0] == 0
    assert most_repeated_4gram([9] * 40)[0] == 37  # "A just just just …"


def tiny_prompts() -> list[str]:
    lesson = {s["state"]["prompt"][lang] for s in LESSON["steps"] for lang in ("en", "pt")}
    return sorted(lesson | set(PROMPTS["en"]) | set(PROMPTS["pt"]))


def test_the_lesson_prompts_are_examples() -> None:
    """The lesson runs on prompts the box offers (so this file checks them, in both languages)."""
    for step in LESSON["steps"]:
        assert step["state"]["prompt"]["en"] in PROMPTS["en"] and step["state"]["prompt"]["pt"] in PROMPTS["pt"], step["id"]


@pytest.mark.parametrize("prompt", tiny_prompts())
def test_tiny_writes_without_looping(tiny, prompt) -> None:
    check(tiny, prompt)


def test_the_check_fails_a_prompt_that_makes_tiny_loop(tiny) -> None:
    """Not vacuous: a Portuguese opening tiny is known to loop on ("o que não se sabe o que não se sabe …")."""
    n, _ = most_repeated_4gram(greedy(tiny, "Hoje de manhã, o professor chegou à escola e"))
    assert n > MOST


@pytest.mark.parametrize("model", sorted(PROMPTS["models"]))
def test_a_fetched_models_examples_make_it_write(model) -> None:
    assert model in OPT_IN, f"{model}: name its opt-in variable here"
    path = opt_in_model_file(OPT_IN[model], model, f"run {model}'s example prompts")
    loaded = load_model(str(path))
    if model == "smollm2-135m":  # its old default, a story opening fed to a chat model, degenerated
        n, gram = most_repeated_4gram(greedy(loaded, PROMPTS["en"][0]))
        assert n > MOST, "the check no longer sees SmolLM2's 'A just just just …'"
    for lang, prompts in PROMPTS["models"][model].items():
        assert lang in ("en", "pt") and prompts
        for prompt in prompts:
            check(loaded, prompt)


def test_the_prompt_box_offers_the_loaded_models_own_examples(qtbot, qapp) -> None:
    """Loading SmolLM2 turns an untouched example into SmolLM2's first (an instruction for its chat
    template); a prompt the user typed stays; back on tiny, tiny's examples return."""
    from PySide6.QtWidgets import QMainWindow

    from kvsim.ui import i18n
    from kvsim.ui.shell.toolbar import ControlsToolBar, example_prompts

    host = QMainWindow()
    qtbot.addWidget(host)
    tb = ControlsToolBar(host)
    box = tb.prompt_box
    assert tb.prompt_text() == PROMPTS["en"][0] and example_prompts("tiny") == example_prompts()
    tb.show_examples("smollm2-135m")
    assert tb.prompt_text() == PROMPTS["models"]["smollm2-135m"]["en"][0]
    assert [box.itemText(i) for i in range(box.count())] == PROMPTS["models"]["smollm2-135m"]["en"]
    tb.show_examples("tiny")
    assert tb.prompt_text() == PROMPTS["en"][0] and box.count() == len(PROMPTS["en"]) + len(PROMPTS["pt"])
    box.setEditText("My own prompt")
    tb.show_examples("smollm2-135m")
    assert tb.prompt_text() == "My own prompt"  # typed: kept
    try:
        i18n.install(qapp, "pt_BR")  # Portuguese first where the model has Portuguese examples
        assert example_prompts("gemma3-270m")[0] == ("pt", PROMPTS["models"]["gemma3-270m"]["pt"][0])
        assert example_prompts("smollm2-135m")[0][0] == "en"  # SmolLM2 writes English only
    finally:
        i18n.install(qapp, "en")
