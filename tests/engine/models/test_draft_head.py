"""``spec:K:head``: tiny's learned draft head (kvsim/models/draft_head.py, resources/draft_heads/tiny/) drafts
for tiny. Greedy speculation with it gives exactly the kv lane's tokens (rejected drafts rolled back as for
every draft source), it accepts more of its drafts than early exit on free text (issue 34's Done-when), and
a model it was not trained over is refused with one clear error."""

from __future__ import annotations

import pytest

from kvsim.caches import SpecError, parse_lanes, parse_spec
from kvsim.core.sampling import Sampling, SimulationError
from kvsim.engine.simulate import Simulator, summarize
from kvsim.engine.speculative import HeadDraft
from kvsim.models.draft_head import bundled_heads_dir, fits
from kvsim.models.loading import load_model

FREE_TEXT = "Once upon a time, in a small village by the sea, there lived"  # nothing to copy from the prompt


def _totals(records, name: str) -> dict[str, int]:
    steps = [r.lane(name) for r in records]
    return {key: sum(getattr(s, key) for s in steps) for key in ("drafted", "accepted", "rolled_back", "forwards")}


def test_the_shipped_head_is_tinys(tiny) -> None:
    path = bundled_heads_dir() / "tiny" / "head.safetensors"
    assert path.is_file() and path.stat().st_size < 2_500_000
    assert (path.parent / "MODEL_CARD.md").is_file()
    assert fits(path, tiny.model)


def test_greedy_head_speculation_produces_the_kv_lanes_tokens_and_beats_early_exit(tiny) -> None:
    """One run of kv beside spec:K:head for K = 1 and 4 and beside early exit: same tokens, records that add up
    (every drafted row kept or rolled back), and the head accepts more than early:N for every N < 4 on free text."""
    tok = tiny.tokenizer
    names = ["spec:1:head", "spec:4:head", "spec:4:early:1", "spec:4:early:2", "spec:4:early:3"]
    lanes = parse_lanes(",".join(["kv", *names]))
    sim = Simulator(tiny.model, tok, tok.encode(FREE_TEXT), lanes, free_running=True, warmup=False)  # each on its own tokens
    records = list(sim.run(40, stop_at_eos=False))
    assert sim.lane_tokens is not None
    kv_tokens = sim.lane_tokens[0]
    assert all(tokens == kv_tokens for tokens in sim.lane_tokens[1:])
    totals = {name: _totals(records, name) for name in names}
    for name, t in totals.items():
        assert t["drafted"] == t["accepted"] + t["rolled_back"], name
        assert t["forwards"] + t["accepted"] >= len(records), name
    head = totals["spec:4:head"]
    assert head["rolled_back"] > 0  # some drafts were rejected and rolled back, yet the tokens are the kv lane's
    rate = head["accepted"] / head["drafted"]
    for n in (1, 2, 3):
        early = totals[f"spec:4:early:{n}"]
        assert rate > early["accepted"] / early["drafted"] + 0.05, (n, head, early)
        assert head["forwards"] < early["forwards"], (n, head, early)


def test_sampled_head_speculation_in_lockstep_follows_the_run(tiny) -> None:
    """Temperature > 0: drafts accepted by the rejection rule; when the run takes another token the lane rolls
    back and the head drops the hidden states past the common prefix — the lane's logits stay the target's."""
    tok = tiny.tokenizer
    sim = Simulator(
        tiny.model, tok, tok.encode("Elizabeth looked at her sister and"), parse_lanes("kv,spec:3:head"), Sampling(0.8, seed=3)
    )
    records = list(sim.run(30, stop_at_eos=False))
    summary = summarize(sim.trace)
    assert summary["tokens_identical"] and summary["max_abs_logit_diff"] < 1e-4
    assert _totals(records, "spec:3:head")["accepted"] > 0
    driver = sim.lanes[1].driver
    assert driver is not None and isinstance(driver.drafter, HeadDraft)
    # the head holds the target's states of exactly the rows the lane's cache holds (none of a rolled-back draft)
    assert driver.drafter.tokens == driver.fed and driver.drafter.hidden.shape[0] == driver.cache.n_tokens


def test_a_model_without_a_head_is_refused_in_one_line() -> None:
    loaded = load_model("random:family=llama,layers=2,heads=4,kv_heads=2,dim=64,vocab=300,ctx=256,seed=11")
    with pytest.raises(SimulationError, match="spec:4:head: kvsim ships a trained draft head for the bundled model tiny only"):
        Simulator(loaded.model, loaded.tokenizer, [1, 2, 3], (parse_spec("kv"), parse_spec("spec:4:head")))


@pytest.mark.parametrize("bad", ["spec:4:head:tiny", "spec:4:heads"])
def test_bad_head_specs_are_one_clear_error(bad: str) -> None:
    with pytest.raises(SpecError, match="lookup, early:N, head or model:NAME"):
        parse_lanes(bad)
