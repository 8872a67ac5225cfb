"""What a lane that evicts by attention records per step — each layer's KV heads' rows, the score the policy
ranks each by, the rows it dropped and why — against the independent reference of
``test_attention_eviction`` (attention written as loops, the papers' policies with ``sorted``); and the
app drawing exactly those: score bars beside K, the evicted rows, the rows each KV head holds."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_attention_eviction import LLAMA, Reference

from kvsim.engine.simulate import Simulator, parse_lanes
from kvsim.engine.trace import Trace
from kvsim.models.loading import load_model

PROMPT, DECODE = 21, 9
SPECS = {
    "h2o:6:r4": {"kind": "h2o", "heavy": 6, "recent": 4},
    "tova:12": {"kind": "tova", "budget": 12},
    "snapkv:12:w4": {"kind": "snapkv", "budget": 12, "window": 4},
    "h2o:0:r8": {"kind": "h2o", "heavy": 0, "recent": 8},
}
REASONS = {"h2o": "lowest_accumulated_score", "tova": "lowest_current_attention", "snapkv": "compressed_at_prefill"}


class Watched(Reference):
    """The reference, remembering each layer's rows read and attention of its last step (to recompute the scores)."""

    def _evict(self, layer, rows, probs, first):  # type: ignore[no-untyped-def]
        self.read = getattr(self, "read", {})
        self.read[layer] = [list(r) for r in rows]
        self.probs = getattr(self, "probs", {})
        self.probs[layer] = probs
        super()._evict(layer, rows, probs, first)


def _expected_scores(ref: Watched, policy: dict, layer: int, j: int) -> list[float]:
    """The score of each row head ``j`` keeps, recomputed from the reference's attention (not the policy's)."""
    kept = ref.kept[layer][j]
    if policy["kind"] == "h2o":  # attention received, summed over the steps, queries and the group's heads
        return [ref.score[layer][j][r] for r in kept]
    probs = ref.probs[layer]
    if policy["kind"] == "tova":  # the newest query's attention, averaged over every query head of the layer
        heads = [probs[jj][gi][-1] for jj in range(len(probs)) for gi in range(len(probs[jj]))]
        return [sum(p.get(r, 0.0) for p in heads) / len(heads) for r in kept]
    return []  # snapkv: its pooled scores are checked by test_attention_eviction's rows


def _run(spec: str):
    lm = load_model(LLAMA)
    gen = torch.Generator().manual_seed(5)
    ids = torch.randint(0, 300, (PROMPT,), generator=gen).tolist()
    sim = Simulator(lm.model, lm.tokenizer, ids, parse_lanes(f"kv,{spec}"))
    records = list(sim.run(DECODE, stop_at_eos=False))
    return lm, sim, records


@pytest.mark.parametrize("spec", list(SPECS))
def test_records_hold_the_rows_scores_and_evictions_of_the_reference(spec: str, tmp_path) -> None:
    policy = SPECS[spec]
    lm, sim, records = _run(spec)
    ref = Watched(lm.model, policy)
    tokens = sim.trace.token_ids()
    done, dropped_any = 0, False
    for r in records:
        n = r.n_tokens
        ref.forward(tokens[done:n], list(range(done, n)))
        lane = r.lane(spec)
        held = lane.held
        assert held is not None and held.positions.shape[:2] == (2, 2)
        for layer in range(2):
            for j in range(2):
                assert held.positions[layer, j].tolist() == ref.kept[layer][j], f"{spec} step {r.step}"
                want = _expected_scores(ref, policy, layer, j)
                if want:
                    np.testing.assert_allclose(held.scores[layer, j], want, rtol=0, atol=1e-5)
                gone = sorted(set(ref.read[layer][j]) - set(ref.kept[layer][j]))
                assert held.evicted[layer, j].tolist() == gone
        dropped = held.evicted.shape[2] > 0
        dropped_any |= dropped
        reason = "outside_recent_window" if spec == "h2o:0:r8" else REASONS[policy["kind"]]
        assert lane.evict_reason == (reason if dropped else "")
        assert r.lane("kv").held is None and r.lane("kv").evict_reason == ""
        done = n
    assert dropped_any
    if policy["kind"] == "snapkv":  # it drops rows at the prefill only
        assert records[0].lane(spec).held.evicted.shape[2] == PROMPT - 12
        assert all(r.lane(spec).held.evicted.shape[2] == 0 for r in records[1:])
    # saved and loaded: the same arrays and reasons
    sim.trace.save(tmp_path / "run.kvsim")
    back = Trace.load(tmp_path / "run.kvsim")
    for a, b in zip(sim.trace.records, back.records, strict=True):
        x, y = a.lane(spec), b.lane(spec)
        assert x.evict_reason == y.evict_reason
        for name in ("positions", "scores", "evicted"):
            assert np.array_equal(getattr(x.held, name), getattr(y.held, name))


def test_h2o_heads_hold_different_rows_in_the_records() -> None:
    _, _, records = _run("h2o:6:r4")
    held = records[-1].lane("h2o:6:r4").held
    assert any(held.positions[layer, 0].tolist() != held.positions[layer, 1].tolist() for layer in range(2))
    tova = _run("tova:12")[2][-1].lane("tova:12").held  # TOVA: one ranking per layer, every head the same rows
    assert all(tova.positions[layer, 0].tolist() == tova.positions[layer, 1].tolist() for layer in range(2))


def test_the_app_draws_the_scores_the_dropped_rows_and_each_heads_rows(qtbot, qapp) -> None:
    """Lane h2o: the bars beside K are the reference's accumulated scores (recomputed from its own attention
    over the run's tokens) for the drawn layer and head's KV head; the struck rows are the ones its cache
    dropped; the all-heads view's strip holds each KV head's rows, which differ between heads."""
    from helpers import ready_window

    from kvsim.ui.lanes.attention import kv_head_of
    from kvsim.ui.lanes.scores import reason_text

    spec = "h2o:3:r2"
    w = ready_window(qtbot, qapp, LLAMA, "Once upon a time there was a tiny fox", lanes=f"kv,{spec}", size=(1600, 900))
    assert w.controller.run_steps(6)
    s = w.session
    panel = w.lane_panels[1]
    ref = Watched(load_model(LLAMA).model, SPECS["h2o:6:r4"] | {"heavy": 3, "recent": 2})
    tokens = list(s.run.prompt_ids) + [r.token_id for r in s.records]
    done = 0
    for step, r in enumerate(s.records):
        n = r.n_tokens
        ref.forward(tokens[done:n], list(range(done, n)))
        done = n
        s.set_cursor(step)
        for layer, head in ((0, 0), (1, 3)):
            panel.set_selection(layer, head)
            panel.redraw()
            g = kv_head_of(head, s.config.n_heads, s.config.n_kv_heads)
            kept = ref.kept[layer][g]
            drawn = panel.scores.values
            assert sorted(drawn) == kept, f"step {step}, layer {layer}, head {head}"
            np.testing.assert_allclose([drawn[p] for p in kept], [ref.score[layer][g][p] for p in kept], rtol=0, atol=1e-5)
            gone = sorted(set(ref.read[layer][g]) - set(kept))
            assert panel.scores.evicted.tolist() == gone
            assert panel.scores.reason == (reason_text("lowest_accumulated_score") if gone else "")
            assert panel.scores.bars.isVisible() and panel.scores.struck.isVisible() == bool(gone)
    assert panel.scores.reason == "lowest accumulated score"  # English words, from translate()
    w.lane_panels[0].redraw()
    assert w.lane_panels[0].scores.values == {} and not w.lane_panels[0].scores.bars.isVisible()  # kv: no bars
    # the all-heads view: one row per KV head, as the cache holds them
    w.toolbar.head_box.setCurrentIndex(w.toolbar.head_box.findData(-1))
    qtbot.waitUntil(lambda: w.overview_dock.isVisible() and w.overview.held_strip is not None, timeout=5_000)
    for layer in (0, 1):
        w.overview.set_layer(layer)
        strip = w.overview.held_strip
        assert strip.lane == 1 and strip.rows == ref.kept[layer]
        assert strip.dropped == [sorted(set(ref.read[layer][g]) - set(ref.kept[layer][g])) for g in range(2)]
    assert any(ref.kept[layer][0] != ref.kept[layer][1] for layer in (0, 1))  # the heads differ, and so do the drawn rows
    w.controller.set_lanes("kv,window:4")
    qtbot.waitUntil(lambda: [lane.name for lane in s.lanes] == ["kv", "window:4"], timeout=20_000)
    assert w.controller.run_steps(1)
    w.overview.redraw()
    assert w.overview.held_strip.lane == -1 and not w.overview.held_strip.plot.isVisible()
    w.shutdown()
