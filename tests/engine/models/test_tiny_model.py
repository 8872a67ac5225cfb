"""The bundled default model `tiny` writes Portuguese and English (issue 12).

Checks the shipped checkpoint itself: its size, its GQA shape (read from the tensors, not only the
config), a tokenizer in which Portuguese accented letters are single tokens and Portuguese text
round-trips, and greedy continuations of the app's example prompts (through kvsim's own run command)
whose words are mostly found in a Portuguese word list (a subset of Debian's GPL-2 `wbrazilian`,
shipped in resources/corpus/palavras.txt.xz, see PROVENANCE.md there) for Portuguese prompts and
mostly not for English ones (so the list does tell the two languages apart).

KVSIM_TINY_DIR points the file at another checkpoint directory (used to vet a candidate before it
replaces the bundled one).
"""

from __future__ import annotations

import json
import lzma
import os
import re
from importlib.resources import files
from pathlib import Path

import pytest
from helpers import ROOT
from safetensors import safe_open

from kvsim.cli.entry import main
from kvsim.models.base import bundled_models_dir
from kvsim.models.loading import load_model

TINY = Path(os.environ.get("KVSIM_TINY_DIR") or bundled_models_dir() / "tiny")
ACCENTED = "áéíóúâêôãõçà" + "ÁÉÍÓÚÂÊÔÃÕÇÀ"
PT_TEXT = (
    "Já não há ação sem reação: à noite, a avó Conceição lê poemas de Camões — "
    "«Ó mar salgado, quanto do teu sal são lágrimas de Portugal!» É útil? Pôr, pôde, têm, açúcar, "
    "ÁGUA, ÊXODO, ÍNDIO, ÓPERA, ÚLTIMO, ÂNCORA, ÔNIBUS, ÃO, ÕES, ÇA, À."
)
# The app's example prompts (ui/prompts.json, installed as kvsim/ui/prompts.json).
APP_PROMPTS = json.loads((files("kvsim.ui") / "prompts.json").read_text(encoding="utf-8"))
WORD = re.compile(r"[A-Za-zÀ-ÖØ-öø-ÿ]+(?:-[A-Za-zÀ-ÖØ-öø-ÿ]+)*")


@pytest.fixture(scope="module")
def loaded():
    return load_model(str(TINY))


@pytest.fixture(scope="module")
def portuguese_words() -> set[str]:
    path = ROOT / "resources" / "corpus" / "palavras.txt.xz"  # not in the wheel
    return set(lzma.decompress(path.read_bytes()).decode("utf-8").split())


def portuguese_fraction(text: str, words: set[str]) -> tuple[float, list[str]]:
    found = [w.lower() for w in WORD.findall(text)]
    assert found, f"no words in {text!r}"
    return sum(w in words for w in found) / len(found), found


def greedy_continuation(capsys, prompt: str, steps: int = 40) -> str:
    assert main(["run", "--model", str(TINY), "--prompt", prompt, "--steps", str(steps), "--lanes", "kv", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()][:-1]
    assert len(rows) == steps
    return "".join(r["token"] for r in rows)


def test_size_at_most_10_mb():
    files = [p for p in TINY.iterdir() if p.is_file()]
    total = sum(p.stat().st_size for p in files)
    assert (TINY / "model.safetensors").is_file() and total <= 10_000_000, f"{total:,} bytes in {TINY}"


def test_llama_with_grouped_query_attention(loaded):
    cfg = json.loads((TINY / "config.json").read_text())
    heads, kv_heads = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    assert cfg["model_type"] == "llama" and 1 <= kv_heads < heads and heads % kv_heads == 0
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // heads
    with safe_open(str(TINY / "model.safetensors"), "pt") as f:  # the tensors agree with the config
        q = f.get_slice("model.layers.0.self_attn.q_proj.weight").get_shape()
        k = f.get_slice("model.layers.0.self_attn.k_proj.weight").get_shape()
        v = f.get_slice("model.layers.0.self_attn.v_proj.weight").get_shape()
    assert q[0] == heads * head_dim and k[0] == v[0] == kv_heads * head_dim
    assert loaded.model.cfg.n_kv_heads == kv_heads < loaded.model.cfg.n_heads == heads


def test_accented_letters_are_single_tokens(loaded):
    tok = loaded.tokenizer
    for ch in ACCENTED:
        ids = tok.encode(ch)
        assert len(ids) == 1 and tok.decode(ids) == ch, (ch, ids)
    for word in ("já", "ação", "não", "coração", "você", "três", "à"):
        pieces = [tok.decode([i]) for i in tok.encode(word)]
        assert "\ufffd" not in "".join(pieces) and "".join(pieces) == word, (word, pieces)


def test_portuguese_text_round_trips(loaded):
    from tokenizers import Tokenizer

    tok = loaded.tokenizer
    ids = tok.encode(PT_TEXT)
    assert tok.decode(ids) == PT_TEXT
    reference = Tokenizer.from_file(str(TINY / "tokenizer.json"))  # the library's own reading agrees
    assert reference.encode(PT_TEXT).ids == ids and reference.decode(ids) == PT_TEXT
    prose = PT_TEXT.split("?")[0]  # ordinary prose is merged into word pieces, not left as letters or bytes
    assert len(tok.encode(prose)) < len(prose) / 1.8 < len(prose.encode("utf-8")) / 2


def test_word_list_tells_portuguese_from_english(portuguese_words):
    pt, _ = portuguese_fraction("A memória guarda as chaves e os valores que o modelo já leu antes.", portuguese_words)
    en, _ = portuguese_fraction("The memory keeps the keys and the values that the model read before.", portuguese_words)
    assert pt == 1.0 and en < 0.4  # "the", "a", "do" are in both languages


@pytest.mark.parametrize("prompt", ["O cache de chaves e valores", *APP_PROMPTS["pt"]])
def test_greedy_portuguese_continuation_is_portuguese(capsys, portuguese_words, prompt):
    text = greedy_continuation(capsys, prompt)
    fraction, words = portuguese_fraction(text, portuguese_words)
    assert fraction > 0.5 and len(words) >= 10, (fraction, text)


@pytest.mark.parametrize("prompt", ["Once upon a time", *APP_PROMPTS["en"][:2]])
def test_greedy_english_continuation_stays_english(capsys, portuguese_words, prompt):
    text = greedy_continuation(capsys, prompt)
    fraction, words = portuguese_fraction(text, portuguese_words)
    assert fraction < 0.5 and len(words) >= 10, (fraction, text)
