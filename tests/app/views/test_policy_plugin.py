"""The proof that a technique is one file: a cache policy defined only here ("keep every other
row") is run by the CLI and shown by the app as a third lane, with no edit to ui/ or the engine."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch
from helpers import ready_window

from kvsim.caches import Cache, PolicyInfo, register_policy, unregister_policy
from kvsim.cli.entry import main
from kvsim.ui.lanes.attention import attention_rows

MODEL = "random:family=llama,layers=2,heads=4,kv_heads=2,dim=32,seed=3"


class RowsByLayer(Cache):
    """What both test policies below share: per layer, the rows they keep and their positions."""

    def __init__(self, n_layers: int) -> None:
        self.n_layers = n_layers
        self.reset()

    def reset(self) -> None:
        self.k: list = [None] * self.n_layers
        self.v: list = [None] * self.n_layers
        self.pos: list = [None] * self.n_layers

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
        return sum(2 * k.numel() * k.element_size() for k in self.k if k is not None), 0


class EveryOtherRow(RowsByLayer):
    """Reads the even positions it kept plus this step's new rows, then forgets the odd ones."""

    terms = ("every-other",)
    grammar = "every-other"

    def describe(self) -> PolicyInfo:
        return PolicyInfo(
            spec="every-other",
            title="every other row",
            explanation="keeps the even positions only",
            reuses_past=True,
            lossy=False,
            evicts=True,
        )

    def reset(self) -> None:
        super().reset()
        self.read: list = [None] * self.n_layers

    def update(self, layer, k_new, v_new, positions):
        if self.k[layer] is None:
            k_all, v_all, pos_all = k_new, v_new, positions
        else:
            k_all = torch.cat([self.k[layer], k_new], 2)
            v_all = torch.cat([self.v[layer], v_new], 2)
            pos_all = torch.cat([self.pos[layer], positions])
        keep = pos_all % 2 == 0
        self.k[layer], self.v[layer], self.pos[layer] = k_all[:, :, keep], v_all[:, :, keep], pos_all[keep]
        self.read[layer] = pos_all
        return k_all, v_all

    def key_positions(self, layer):
        return self.read[layer]


@pytest.fixture
def every_other():
    register_policy(EveryOtherRow)
    yield EveryOtherRow
    unregister_policy(EveryOtherRow)


def test_the_cli_runs_a_policy_defined_in_a_test_file(every_other, capsys):
    P, steps = 5, 6
    code = main(
        [
            "run",
            "--model",
            MODEL,
            "--prompt-ids",
            ",".join(map(str, range(10, 10 + P))),
            "--steps",
            str(steps),
            "--lanes",
            "none,kv,every-other",
            "--json",
        ]
    )
    out = capsys.readouterr().out.strip().splitlines()
    assert code == 0
    steps_json = [json.loads(line) for line in out[:-1]]
    summary = json.loads(out[-1])["summary"]
    assert set(summary["lanes"]) == {"none", "kv", "every-other"}
    for s in steps_json:
        lane = s["every-other"]
        n = s["positions"][1] + 1  # the sequence length this step
        read = [p for p in range(n - lane["kv_positions"]) if p % 2 == 0] + list(range(n - lane["kv_positions"], n))
        assert lane["context"] == len(read)
        assert [p for a, b in lane.get("key_spans", [[0, n]]) for p in range(a, b)] == read  # absent: all keys
        kept = len([p for p in range(n) if p % 2 == 0])
        assert lane["cache_tokens"] == kept
        assert lane["cache_bytes"] == kept * 2 * 2 * 2 * 8 * 4  # rows × K,V × layers × kv heads × head dim × fp32
        assert lane["kv_positions"] == (P if s["step"] == 0 else 1)
        assert s["kv"]["cache_tokens"] == n and "key_spans" not in s["kv"]
    # the evicting lane's own logits moved away from the reference's; the exact cache's did not
    assert summary["lanes"]["every-other"]["max_abs_logit_diff"] > 1e-4
    assert summary["lanes"]["kv"]["max_abs_logit_diff"] < 1e-4


def test_the_cli_says_which_lanes_exist(capsys):
    assert main(["run", "--model", MODEL, "--prompt-ids", "1,2", "--lanes", "kv,every-other"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: unknown lane 'every-other'") and "kv" in err and len(err.splitlines()) == 1


def test_the_app_shows_it_as_a_third_lane(every_other, qtbot, qapp):
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from kvsim.ui import theme

    w = ready_window(qtbot, qapp, MODEL, "Once upon", size=(1920, 1080))
    w.controller.set_lanes("none,kv,every-other")
    qtbot.waitUntil(lambda: w.controller.can_step and len(w.lane_panels) == 3, timeout=20_000)
    assert w.controller.run_steps(4)
    s = w.session
    third = w.lane_panels[2]
    assert "every other row" in third.header.text() and "keeps the even positions only" in third.header.text()
    assert third.isVisible() and third.width() > 400  # three lanes side by side fit at 1920×1080
    assert [p.color for p in w.lane_panels][:2] == [theme.lane_color(0), theme.lane_color(1)] != [third.color] * 2
    n = s.n_rows()
    # its K table: odd rows it no longer read are transparent, the others drawn
    alpha = third.k.image.image[:, 0, 3]
    read = s.read_positions(2)
    assert read is not None and list(alpha) == [255 if p in set(read.tolist()) else 0 for p in range(n)]
    # its attention: the newest query over exactly the keys it read, equal to softmax(q·Kᵀ/√d)
    layer, head = third.layer, third.head
    g = head // (s.config.n_heads // s.config.n_kv_heads)
    k_all = np.concatenate([r.k[layer, g] for r in s.records])  # (n, D)
    q = s.records[-1].q[layer, head]  # (1, D)
    expect = attention_rows(q, k_all[read], np.array([n - 1]), read)[0]
    got = w.derived.attention_values(2, layer, head, n - 1)
    np.testing.assert_allclose(got[read], expect, rtol=1e-5, atol=1e-7)
    assert np.isnan(np.delete(got, read)).all()
    # the other two lanes still see every key
    assert not np.isnan(w.derived.attention_values(1, layer, head, n - 1)).any()
    # any lane can be hidden, and comes back
    w.lanes.show_lane("every-other", False)
    assert third.isHidden() and len(w.lanes.shown()) == 2
    w.lanes.show_lane("every-other", True)
    assert not third.isHidden()
    w.shutdown()


def test_lossy_lanes_are_measured_against_the_reference(every_other):
    """KL(reference ‖ lane), the lane's log-probability of the reference's token, and the summary's
    perplexity, recomputed here by running the model with the lane's cache by hand."""
    import torch.nn.functional as F

    from kvsim.caches import NoCache, parse_lanes
    from kvsim.engine.simulate import Simulator, summarize
    from kvsim.models.loading import load_model

    loaded = load_model(MODEL)
    model = loaded.model
    prompt = list(range(20, 29))
    sim = Simulator(model, loaded.tokenizer, prompt, parse_lanes("kv,every-other"))
    records = list(sim.run(8))
    tokens = prompt + [r.token_id for r in records]
    mine = EveryOtherRow(model.cfg.n_layers)
    fed = 0
    for step, r in enumerate(records):
        n = len(prompt) + step
        ids = torch.tensor([tokens[fed:n]])
        lane_logits = model(ids, torch.arange(fed, n), mine, last_only=True).logits[0, -1].float()
        ref_logits = (
            model(torch.tensor([tokens[:n]]), torch.arange(n), NoCache(model.cfg.n_layers), last_only=True).logits[0, -1].float()
        )
        fed = n
        ref_logp, lane_logp = torch.log_softmax(ref_logits, -1), torch.log_softmax(lane_logits, -1)
        kl = float(F.kl_div(lane_logp, ref_logp, log_target=True, reduction="sum"))
        lane = r.lane("every-other")
        assert lane.kl_div == pytest.approx(kl, rel=1e-3, abs=1e-6)
        assert lane.ref_logprob == pytest.approx(float(lane_logp[r.token_id]), abs=1e-4)
        assert r.lane("kv").kl_div < 1e-6
    assert max(r.lane("every-other").kl_div for r in records[1:]) > 1e-4  # evicting half the past costs something
    summary = summarize(sim.trace)["lanes"]["every-other"]
    expect = float(np.exp(-np.mean([r.lane("every-other").ref_logprob for r in records])))
    assert summary["perplexity_of_reference"] == pytest.approx(expect, rel=1e-9)
    assert summary["perplexity_of_reference"] > summarize(sim.trace)["lanes"]["kv"]["perplexity_of_reference"]
    diverged = [r.step for r in records if r.lane("every-other").token_id != r.token_id]
    assert summary["first_divergent_step"] == (diverged[0] if diverged else None)


class RoundedPast(RowsByLayer):
    """A lossy test policy: rows older than the newest two are rounded to multiples of 1/4 — so a row
    changes once after it was first stored, as a quantized cache's residual rows do."""

    terms = ("rounded",)
    grammar = "rounded"

    def describe(self) -> PolicyInfo:
        return PolicyInfo(
            spec="rounded",
            title="rounded past",
            explanation="older rows rounded to 1/4",
            reuses_past=True,
            lossy=True,
            evicts=False,
        )

    def update(self, layer, k_new, v_new, positions):
        if self.k[layer] is None:
            self.k[layer], self.v[layer], self.pos[layer] = k_new.clone(), v_new.clone(), positions.clone()
        else:
            self.k[layer] = torch.cat([self.k[layer], k_new], 2)
            self.v[layer] = torch.cat([self.v[layer], v_new], 2)
            self.pos[layer] = torch.cat([self.pos[layer], positions])
        old = self.k[layer].shape[2] - 2
        if old > 0:
            self.k[layer][:, :, :old] = torch.round(self.k[layer][:, :, :old] * 4) / 4
            self.v[layer][:, :, :old] = torch.round(self.v[layer][:, :, :old] * 4) / 4
        return self.k[layer], self.v[layer]

    def key_positions(self, layer):
        return self.pos[layer]

    def held_rows(self, layer):
        return self.k[layer], self.v[layer], self.pos[layer]


def test_a_lossy_lane_shows_its_own_rows_step_by_step_and_its_error(qtbot, qapp):
    from kvsim.models.loading import load_model
    from kvsim.ui import theme
    from kvsim.ui.lanes.plots import dim_rows

    register_policy(RoundedPast)
    try:
        w = ready_window(qtbot, qapp, MODEL, "Once upon")
        w.controller.set_lanes("kv,rounded")
        qtbot.waitUntil(lambda: w.controller.can_step and len(w.lane_panels) == 2 and w.lane_panels[1].info.lossy, timeout=20_000)
        steps = 5
        assert w.controller.run_steps(steps)
        s = w.session
        # by hand: the same model, the same tokens, a RoundedPast cache; its held rows after each step
        model = load_model(MODEL).model
        mine = RoundedPast(model.cfg.n_layers)
        tokens, fed = s.tokens, 0
        for step in range(steps):
            n = s.n_rows(step)
            model(torch.tensor([tokens[fed:n]]), torch.arange(fed, n), mine, last_only=True)
            fed = n
            for layer in range(model.cfg.n_layers):
                for g in range(model.cfg.n_kv_heads):
                    k, v = s.kv_rows(1, layer, g, 0, n, step=step)
                    np.testing.assert_allclose(k, mine.k[layer][0, g].numpy(), atol=1e-5)
                    np.testing.assert_allclose(v, mine.v[layer][0, g].numpy(), atol=1e-5)
        k_exact = s.kv_rows(0, 1, 0, 0, s.n_rows())[0]
        k_lane = s.kv_rows(1, 1, 0, 0, s.n_rows())[0]
        assert np.abs(k_lane - k_exact)[:-2].max() > 0.01  # the older rows really are rounded
        # the error view: lane − exact on its own symmetric scale, named in the title
        panel = w.lane_panels[1]
        w.derived.set_show_error(True)
        panel.set_selection(1, 0)
        panel.redraw()
        err = w.derived.error_levels[(1, 1, 0)]
        expect = dim_rows(theme.colorize(k_lane - k_exact, -err, err, theme.KV_CMAP), s.n_rows() - 1)  # cached rows dim
        np.testing.assert_array_equal(panel.k.image.image, expect)
        assert panel.titles[0].text.startswith("K − exact")
        assert not w.lane_panels[0].titles[0].text.startswith("K − exact")  # an exact lane shows its values
        assert "KL" in panel.readout.text()
        w.shutdown()
    finally:
        unregister_policy(RoundedPast)


def test_free_running_lanes_continue_on_their_own_choice(every_other, capsys):
    from kvsim.caches import parse_lanes
    from kvsim.engine.simulate import Simulator
    from kvsim.models.loading import load_model

    loaded = load_model(MODEL)
    model = loaded.model
    prompt = list(range(40, 52))
    sim = Simulator(model, loaded.tokenizer, prompt, parse_lanes("kv,every-other"), free_running=True)
    records = list(sim.run(12, stop_at_eos=False))
    own = [r.lane("every-other").token_id for r in records]
    ref = [r.token_id for r in records]
    assert own != ref  # it diverged (else this test shows nothing)
    # by hand: greedy decoding with the lane's cache, fed its own tokens
    cache, tokens, fed = EveryOtherRow(model.cfg.n_layers), list(prompt), 0
    for _ in range(12):
        logits = model(torch.tensor([tokens[fed:]]), torch.arange(fed, len(tokens)), cache, last_only=True).logits
        fed = len(tokens)
        tokens.append(int(logits[0, -1].argmax()))
    assert tokens[len(prompt) :] == own
    assert ref == [r.lane("kv").token_id for r in records]  # the reference continues on its own choice
    # the lane's rows are its own text's: recorded for every step
    assert all(r.lane("every-other").rows is not None and r.lane("kv").rows is None for r in records)
    # the CLI: the same, and the summary scores the reference continuation in a lockstep pass
    assert (
        main(
            [
                "run",
                "--model",
                MODEL,
                "--prompt-ids",
                ",".join(map(str, prompt)),
                "--steps",
                "12",
                "--lanes",
                "kv,every-other",
                "--free-running",
                "--ignore-eos",
                "--json",
            ]
        )
        == 0
    )
    lines = capsys.readouterr().out.strip().splitlines()
    assert [json.loads(x)["every-other"]["token_id"] for x in lines[:-1]] == own
    summary = json.loads(lines[-1])["summary"]
    assert summary["free_running"] is True
    lockstep = Simulator(model, loaded.tokenizer, prompt, parse_lanes("kv,every-other"))
    forced = [r.lane("every-other").ref_logprob for r in lockstep.run(12, stop_at_eos=False)]
    assert summary["lanes"]["every-other"]["perplexity_of_reference"] == pytest.approx(float(np.exp(-np.mean(forced))))
    first = next(i for i, (a, b) in enumerate(zip(own, ref, strict=True)) if a != b)
    assert summary["lanes"]["every-other"]["first_divergent_step"] == first


def test_the_app_runs_lanes_free_and_labels_each_with_its_own_text(every_other, qtbot, qapp):

    w = ready_window(qtbot, qapp, MODEL, "Once upon a time there")
    w.controller.lanes = "kv,every-other"
    w.controller.set_free_running(True)
    qtbot.waitUntil(lambda: w.controller.can_step and len(w.lane_panels) == 2 and w.session.free_running, timeout=20_000)
    assert w.controller.run_steps(10)
    s = w.session
    own = s.lane_tokens[1]
    assert own != s.tokens  # the evicting lane wrote its own text
    assert s.lane_tokens[0] == s.tokens  # the reference's is the run's
    panel = w.lane_panels[1]
    differ = [p for p in range(len(own) - 1) if own[p] != s.tokens[p]]
    assert differ and panel._label_of(differ[0]) == s.id_label(own[differ[0]])
    assert w.lane_panels[0]._label_of(differ[0]) == s.id_label(s.tokens[differ[0]])
    # its K rows past the divergence are its own (recorded from its text), not the reference's
    n = s.n_rows()
    k_own, k_ref = s.kv_rows(1, 0, 0, 0, n)[0], s.kv_rows(0, 0, 0, 0, n)[0]
    assert np.abs(k_own[differ[0] :] - k_ref[differ[0] :]).max() > 1e-3
    np.testing.assert_array_equal(k_own[:1], k_ref[:1])  # the prompt's first row is the same in both
    w.shutdown()
