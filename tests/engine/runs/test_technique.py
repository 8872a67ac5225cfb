"""A technique is one file: a cache policy defined only here ("the last few rows") carries its bytes
formula and its words, and appears fully — the engine's bill, the memory dock's "formula = live" check,
its title and explanation in English and in Portuguese — with no other file touched. Nothing in
kvsim/costs or ui/ compares a policy's name; the built-in paged lane has its formula too."""

from __future__ import annotations

import json
import re

import pytest
import torch
from helpers import ROOT, ready_window

from kvsim.caches import Cache, PolicyInfo, PolicyWords, SpecError, register_policy, unregister_policy
from kvsim.core.formulas import KVShape, LaneBill, kv_cache_bytes
from kvsim.core.words import QT_TRANSLATE_NOOP

MODEL = "random:family=llama,layers=2,heads=4,kv_heads=2,dim=40,vocab=256,ctx=128,seed=2"  # head dim 10
COUNTER_BYTES = 8  # what the test policy keeps per layer besides its rows (its overhead)

# the Portuguese a translator would write for the test policy's words (a test translator serves them)
PORTUGUESE = {
    "the last few rows": "as últimas linhas",
    "reads every row, then keeps the last {keep} of them": "lê todas as linhas e guarda as últimas {keep}",
    "the rows kept after each step": "as linhas guardadas após cada passo",
    "one {size}-byte row counter per layer (+{total:,} B)": "um contador de linhas de {size} bytes por camada (+{total:,} B)",
}


class KeepLast(Cache):
    """``keep-last:K``: every step reads all the rows it held plus the new ones, then keeps the last K."""

    terms = ("keep-last",)
    grammar = "keep-last:K"
    example = "keep-last:3"

    @classmethod
    def parse_options(cls, args: list[list[str]]) -> dict:
        if len(args[0]) != 1 or not args[0][0].isdigit() or int(args[0][0]) < 1:
            raise SpecError("keep-last takes K ≥ 1, e.g. keep-last:3")
        return {"keep": int(args[0][0])}

    @classmethod
    def words(cls, options: dict) -> PolicyWords:
        return PolicyWords(
            QT_TRANSLATE_NOOP("policies", "the last few rows"),
            QT_TRANSLATE_NOOP("policies", "reads every row, then keeps the last {keep} of them"),
            {"keep": int(options["keep"])},
            {"K": QT_TRANSLATE_NOOP("policies", "the rows kept after each step")},
        )

    @classmethod
    def bill(cls, options: dict, shape: KVShape, tokens: int, new_tokens: int, elem_bits: int) -> LaneBill:
        keep = int(options["keep"])
        rows = kv_cache_bytes(*shape, tokens, 1, elem_bits, keep)
        counters = shape.layers * COUNTER_BYTES
        why = QT_TRANSLATE_NOOP("policies", "one {size}-byte row counter per layer (+{total:,} B)")
        return LaneBill.explained(rows, rows + counters, elem_bits, keep, why, {"size": COUNTER_BYTES, "total": counters})

    def __init__(self, n_layers: int, keep: int) -> None:
        self.n_layers, self.keep = n_layers, keep
        self.reset()

    def describe(self) -> PolicyInfo:
        return PolicyInfo.from_words(
            f"keep-last:{self.keep}", self.words({"keep": self.keep}), reuses_past=True, lossy=False, evicts=True
        )

    def reset(self) -> None:
        self.k: list = [None] * self.n_layers
        self.v: list = [None] * self.n_layers
        self.pos: list = [None] * self.n_layers
        self.read: list = [None] * self.n_layers

    def update(self, layer, k_new, v_new, positions):
        if self.k[layer] is None:
            k_all, v_all, pos_all = k_new, v_new, positions
        else:
            k_all = torch.cat([self.k[layer], k_new], 2)
            v_all = torch.cat([self.v[layer], v_new], 2)
            pos_all = torch.cat([self.pos[layer], positions])
        self.k[layer], self.v[layer], self.pos[layer] = (
            k_all[:, :, -self.keep :],
            v_all[:, :, -self.keep :],
            pos_all[-self.keep :],
        )
        self.read[layer] = pos_all
        return k_all, v_all

    def key_positions(self, layer):
        return self.read[layer]

    def truncate(self, n_tokens):
        for layer in range(self.n_layers):
            if self.pos[layer] is not None:
                keep = self.pos[layer] < n_tokens
                self.k[layer], self.v[layer], self.pos[layer] = (
                    self.k[layer][:, :, keep],
                    self.v[layer][:, :, keep],
                    self.pos[layer][keep],
                )

    @property
    def n_tokens(self):
        return 0 if self.pos[0] is None else int(self.pos[0].numel())

    def bytes_split(self):
        rows = sum(2 * k.numel() * k.element_size() for k in self.k if k is not None)
        return rows, (self.n_layers * COUNTER_BYTES if self.k[0] is not None else 0)


@pytest.fixture
def keep_last():
    register_policy(KeepLast)
    yield KeepLast
    unregister_policy(KeepLast)


def _simulate(lanes: str, steps: int):
    """(the run's lane meta, its config, [(tokens, record)] of each step) on a small random model."""
    from kvsim.caches import parse_lanes
    from kvsim.engine.simulate import Simulator
    from kvsim.models.loading import load_model

    lm = load_model(MODEL)
    prompt = list(range(1, 12))
    sim = Simulator(lm.model, lm.tokenizer, prompt, parse_lanes(lanes), warmup=False)
    return sim.trace.meta["lanes"], lm.model.cfg, [(len(prompt) + step, sim.step()) for step in range(steps)]


# ------------------------------------------------------------------------------- the engine: its formula
def test_the_test_policys_bill_is_found_by_its_recorded_name_and_equals_its_live_bytes(keep_last) -> None:
    from kvsim.costs.memory import lane_bill

    meta, cfg, steps = _simulate("kv,keep-last:3", 6)
    assert meta[1]["policy"] == "keep-last" and meta[1]["options"] == {"keep": 3}
    for tokens, record in steps:
        done = record.lanes[1]
        bill = lane_bill(meta[1], cfg.n_layers, cfg.n_kv_heads, cfg.head_dim, tokens, done.kv_positions)
        rows = 2 * cfg.n_layers * cfg.n_kv_heads * cfg.head_dim * 4 * min(tokens, 3)  # by hand: fp32, 3 rows at most
        assert bill is not None and bill.formula_bytes == rows and bill.window == 3
        assert bill.expected_bytes == done.cache_bytes == rows + cfg.n_layers * COUNTER_BYTES
        assert bill.why == f"one 8-byte row counter per layer (+{cfg.n_layers * COUNTER_BYTES} B)"
    unregister_policy(KeepLast)  # a saved run of a policy not installed: no formula (and no error)
    assert lane_bill(meta[1], cfg.n_layers, cfg.n_kv_heads, cfg.head_dim, 11, 1) is None
    register_policy(KeepLast)


def test_the_built_in_paged_lane_has_its_formula_every_step() -> None:
    """paged:B holds whole blocks (the last one's empty slots reserved) and an int64 table entry per block."""
    from kvsim.costs.memory import lane_bill

    meta, cfg, steps = _simulate("kv,paged:4,paged:5:8", 9)
    row = 2 * cfg.n_layers * cfg.n_kv_heads * cfg.head_dim * 4
    for tokens, record in steps:
        for lane, done, size in zip(meta[1:], record.lanes[1:], (4, 5), strict=True):
            bill = lane_bill(lane, cfg.n_layers, cfg.n_kv_heads, cfg.head_dim, tokens, done.kv_positions)
            blocks = -(-tokens // size)
            assert bill.formula_bytes == row * tokens  # the seed formula: the rows written
            assert bill.expected_bytes == done.cache_bytes == row * blocks * size + 8 * blocks, (tokens, size)
            assert f"holds {blocks} entries" in bill.why and f"{blocks * size - tokens} empty slots" in bill.why


# ------------------------------------------------------------------------------- the engine: its words
def test_the_test_policys_words_are_its_templates_filled(keep_last) -> None:
    from kvsim.caches import describe_spec, policy_class

    info = describe_spec("keep-last:4")
    assert info.title == "the last few rows" and info.explanation == "reads every row, then keeps the last 4 of them"
    assert info.to_dict()["words"] == {
        "title": "the last few rows",
        "explanation": "reads every row, then keeps the last {keep} of them",
        "values": {"keep": 4},
        "parameters": {"K": "the rows kept after each step"},
        "short": "",  # a plug-in that gives no short form: a narrow header takes its title
    }
    assert policy_class("keep-last") is KeepLast and policy_class("no-such-policy") is None


def test_lupdate_finds_a_policys_words_in_its_own_file(tmp_path) -> None:
    """The engine marks words with a no-op of Qt's name: pyside6-lupdate over this very file collects them
    under "policies", as it does for kvsim/caches/*.py (listed in the project, translated in the .ts)."""
    import sys

    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import build_translations
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    project = tmp_path / "project.json"
    project.write_text(json.dumps({"projectFile": str(project), "sources": [__file__]}), encoding="utf-8")
    ts = tmp_path / "plugin_pt_BR.ts"
    build_translations.update(project, ts, "pt_BR")
    found = {(context, source) for context, source, _ in build_translations.messages(ts)}
    assert found == {("policies", source) for source in PORTUGUESE}
    # and the shipped .ts holds every built-in policy's words, translated
    shipped = {
        source: "".join(tr.itertext())
        for context, source, tr in build_translations.messages(build_translations.ts_path("pt_BR"))
        if context == "policies"
    }
    for spec in ("none", "kv", "window:8", "sink:4+window:8", "int8", "int4:g8:r0", "paged:16"):
        from kvsim.caches import parse_spec, policy_class

        lane = parse_spec(spec)
        words = policy_class(lane.policy).words(lane.options)
        for template in (words.title, words.explanation, *words.parameters.values()):
            assert shipped.get(template), (spec, template)


# ------------------------------------------------------------------------------- the app, in both languages
class PolicyTranslator:
    """A translator for the test policy's words only (what a plug-in's own .qm would hold)."""

    def __new__(cls, parent):
        from PySide6.QtCore import QTranslator

        class _Translator(QTranslator):
            def translate(self, context, source, disambiguation=None, n=-1):
                return PORTUGUESE.get(source) if context == "policies" else None

        return _Translator(parent)


def test_the_app_shows_the_test_policy_fully_in_english_and_portuguese(keep_last, qtbot, qapp) -> None:
    from kvsim.ui import i18n
    from kvsim.ui.lanes import policy_text
    from kvsim.ui.session import LaneInfo

    # English: the app's words are the engine's (no translator)
    lane = LaneInfo.from_meta(0, {"name": "keep-last:3", "policy": "keep-last", "options": {"keep": 3}})  # a run without words
    assert policy_text.title(lane) == "the last few rows"
    assert policy_text.explanation(lane) == "reads every row, then keeps the last 3 of them"
    assert policy_text.parameters(lane) == {"K": "the rows kept after each step"}
    # Portuguese: the app's language plus the policy's own translations
    i18n.install(qapp, "pt_BR")
    translator = PolicyTranslator(qapp)
    qapp.installTranslator(translator)
    try:
        assert policy_text.parameters(lane) == {"K": "as linhas guardadas após cada passo"}
        w = ready_window(qtbot, qapp, "tiny", "O cache de chaves e valores", lanes="cached,keep-last:3")
        assert w.controller.run_steps(5)
        s = w.session
        index = s.lane_index("keep-last:3")
        info = s.lanes[index]
        assert info.words is not None  # the run recorded the policy's templates and values
        assert info.title == "the last few rows"  # the engine's English, as the trace keeps it
        assert policy_text.title(info) == "as últimas linhas"
        assert policy_text.explanation(info) == "lê todas as linhas e guarda as últimas 3"
        assert policy_text.lane_label(s, index) == "as últimas linhas (keep-last:3)"
        tip = w.toolbar.lanes_box.toolTip()  # the lane chooser lists it with what its letter means
        assert "`keep-last:K` (K: as linhas guardadas após cada passo)" in tip and "(W: as linhas guardadas)" in tip
        view = next(v for v in w.lanes.shown() if v.name == "keep-last:3")
        assert "as últimas linhas" in view.header.text() and "guarda as últimas 3" in view.header.toolTip() + view.header.text()
        # the memory dock: the formula found through the policy, checked against the live bytes, said in Portuguese
        dock_widget = w.extra_docks["memory"]
        dock_widget.setVisible(True)
        dock = dock_widget.build()
        rows = {name: (live, formula, words) for name, live, formula, words in dock.live.rows}
        live, formula, words = rows["keep-last:3"]
        cfg = s.config
        assert live == s.lane_step(index).cache_bytes == formula + cfg.n_layers * COUNTER_BYTES
        assert formula == 2 * cfg.n_layers * cfg.n_kv_heads * cfg.head_dim * 4 * 3
        assert "✓" in words and f"um contador de linhas de 8 bytes por camada (+{cfg.n_layers * COUNTER_BYTES} B)" in words
        summary = dock.live.summary.text()
        assert "nas 2 faixas que a fórmula conhece" in summary and "sem fórmula" not in summary  # no lane left without one
        w.shutdown()
    finally:
        qapp.removeTranslator(translator)
        i18n.install(qapp, "en")


# ------------------------------------------------------------------------------- no name dispatch
_COMPARED = r"(==|!=|\bin\s*[(\[{]|startswith\()"


def _name_comparisons(text: str, names: set[str]) -> list[str]:
    """Lines that compare something policy-like with a policy's name ("policy == 'kv'", "policy in ('int8', …)")."""
    quoted = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    pattern = re.compile(rf"(policy|spec|lane)\w*\b.*{_COMPARED}.*[\"']({quoted})(:[^\"']*)?[\"']", re.I)
    return [line.strip() for line in text.splitlines() if pattern.search(line)]


def test_no_policy_name_is_compared_in_costs_or_the_app() -> None:
    from kvsim.caches.registry import _ALIASES, _POLICIES

    names = {"+".join(key) for key in _POLICIES} | {t for key in _POLICIES for t in key} | set(_ALIASES)
    assert {"kv", "none", "window", "sink+window", "int8", "int4", "paged", "cached"} <= names
    # the detector is not vacuous: the dispatch lane_bill had finds
    old = 'if policy == "kv":\n    if policy in ("window", "sink+window"):\n    if lane["policy"] in ("int8", "int4"):'
    assert len(_name_comparisons(old, names)) == 3
    found = []
    for part in (ROOT / "kvsim" / "costs", ROOT / "ui"):
        for path in sorted(part.rglob("*.py")):
            found += [f"{path.relative_to(ROOT)}: {line}" for line in _name_comparisons(path.read_text(encoding="utf-8"), names)]
    assert not found, "\n".join(found)


def test_damaged_words_in_a_saved_run_are_shown_safely(qapp) -> None:
    """A file's words are data: a wrong shape is dropped (the English title stays), a template that reaches
    into a value's attributes or does not fit its values is shown as written, never run or raised."""
    from kvsim.ui.lanes import policy_text
    from kvsim.ui.session import LaneInfo

    base = {"name": "x", "policy": "no-such-policy", "title": "X", "explanation": "plain"}
    for words in ({"title": 3, "explanation": "e"}, "text", {"title": "t", "explanation": "e", "values": [1]}):
        lane = LaneInfo.from_meta(0, {**base, "words": words, "options": "not a dict"})
        assert lane.words is None and lane.options == {} and policy_text.title(lane) == "X"
    sneaky = {"title": "{v.__class__}", "explanation": "keeps {n:,} rows and {missing}", "values": {"v": 1, "n": "many"}}
    lane = LaneInfo.from_meta(0, {**base, "words": sneaky})
    assert policy_text.title(lane) == "{v.__class__}" and policy_text.explanation(lane) == "keeps {n:,} rows and {missing}"
    assert policy_text.fill("keeps the last {window} rows", {"window": 4096}) == "keeps the last 4096 rows"
