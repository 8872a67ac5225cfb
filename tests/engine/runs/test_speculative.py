"""Speculative decoding as a lane (spec:K:DRAFT): greedy speculation produces exactly the plain
kv lane's tokens, for every draft source and k = 1…8; a rolled-back cache equals one that never
saw the rejected drafts (rows and bytes); the records add up (drafted = accepted + rejected)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kvsim.caches import KVCache, SpecError, parse_lanes, parse_spec
from kvsim.core.sampling import Sampling, SimulationError
from kvsim.engine.simulate import Simulator, summarize
from kvsim.engine.speculative import LookupDraft, SpeculativeLane, early_exit
from kvsim.engine.trace import Trace
from kvsim.models.loading import load_model

TARGET = "random:family=llama,layers=2,heads=4,kv_heads=2,dim=64,vocab=300,ctx=256,seed=11"
DRAFT = "random:family=llama,layers=1,heads=2,kv_heads=1,dim=32,vocab=300,ctx=256,seed=12"
GPT2 = "random:family=gpt2,layers=2,heads=4,dim=64,vocab=300,ctx=256,seed=13"


def _prompts(count: int, vocab: int, seed: int) -> list[list[int]]:
    """Half copy a segment of themselves (prompt lookup finds n-grams), half are random."""
    rng = np.random.default_rng(seed)
    prompts = []
    for i in range(count):
        base = [int(x) for x in rng.integers(1, vocab, size=int(rng.integers(3, 12)))]
        prompts.append(base * 3 + base[:2] if i % 2 == 0 else base)
    return prompts


def _free_run(model, tok, prompt, spec, steps, sampling=None):
    """kv and the spec lane side by side, each continuing on its own choice."""
    lanes = (parse_spec("kv"), parse_spec(spec))
    sim = Simulator(model, tok, prompt, lanes, sampling, free_running=True, warmup=False)
    records = list(sim.run(steps, stop_at_eos=False))
    return sim, records


def _check_records(records, spec_index: int = 1, follows: bool = True) -> dict[str, int]:
    """Per-step sanity, and the totals. ``follows``: the run always took the lane's accepted tokens
    (greedy, exact reference), so only rejected drafts were ever rolled back."""
    totals = {"drafted": 0, "accepted": 0, "rolled_back": 0, "forwards": 0}
    for r in records:
        s = r.lanes[spec_index]
        assert 0 <= s.accepted <= s.drafted and s.forwards in (0, 1)
        if s.forwards == 0:  # a token that came verified with an earlier check: nothing computed
            assert s.kv_positions == 0 and s.drafted == 0 and s.flops == 0
        for key in totals:
            totals[key] += getattr(s, key)
    # every drafted row is either kept (accepted) or rolled back; each kept draft is one step without a forward
    if follows:
        assert totals["drafted"] == totals["accepted"] + totals["rolled_back"]
    else:  # the run may also take another token than an accepted draft: its row goes too (a re-sync)
        assert totals["rolled_back"] >= totals["drafted"] - totals["accepted"]
    assert totals["forwards"] + totals["accepted"] >= len(records)
    return totals


@pytest.mark.parametrize("source", ["lookup", "early:1", f"model:{DRAFT}", "model:self"])
def test_greedy_speculation_produces_the_kv_lanes_tokens(source: str) -> None:
    loaded = load_model(TARGET)
    if source == "model:self":  # the target drafting for itself: every draft is accepted
        source = f"model:{TARGET}"
    seen = {"accepted": 0, "rolled_back": 0}
    for k in range(1, 9):
        for prompt in _prompts(2, 300, seed=k):  # one that copies from its context, one that does not
            sim, records = _free_run(loaded.model, loaded.tokenizer, prompt, f"spec:{k}:{source}", steps=16)
            kv_tokens, spec_tokens = sim.lane_tokens
            assert spec_tokens == kv_tokens, (k, source, prompt)
            totals = _check_records(records)
            seen["accepted"] += totals["accepted"]
            seen["rolled_back"] += totals["rolled_back"]
            if source == f"model:{TARGET}":
                assert totals["rolled_back"] == 0 and totals["accepted"] > 0
    assert seen["accepted"] > 0  # the accept path ran…
    if source != f"model:{TARGET}":
        assert seen["rolled_back"] > 0  # …and so did the rollback


def test_greedy_speculation_on_gpt2_and_lockstep_reference() -> None:
    """GPT-2 (learned positions) too; and as the reference of a lockstep run, the spec lane's tokens are kv's."""
    loaded = load_model(GPT2)
    for k in (1, 3, 8):
        for prompt in _prompts(2, 300, seed=40 + k):
            sim, _ = _free_run(loaded.model, loaded.tokenizer, prompt, f"spec:{k}:lookup", steps=16)
            assert sim.lane_tokens[0] == sim.lane_tokens[1]
            lock = Simulator(loaded.model, loaded.tokenizer, prompt, parse_lanes(f"spec:{k}:early:1,kv"), warmup=False)
            list(lock.run(16, stop_at_eos=False))
            plain = Simulator(loaded.model, loaded.tokenizer, prompt, parse_lanes("kv"), warmup=False)
            list(plain.run(16, stop_at_eos=False))
            assert lock.tokens == plain.tokens
            assert summarize(lock.trace)["tokens_identical"]


@pytest.mark.parametrize("source", ["lookup", "early:2", "model:tiny"])
def test_greedy_speculation_on_the_bundled_model(source: str) -> None:
    loaded = load_model("tiny")
    tok = loaded.tokenizer
    texts = ["The cat sat on the mat. The cat sat on the mat. The cat", "Once upon a time", "1, 2, 3, 4, 1, 2, 3, 4, 1, 2"]
    for k in (1, 4, 8):
        for text in texts:
            sim, records = _free_run(loaded.model, tok, tok.encode(text), f"spec:{k}:{source}", steps=24)
            assert sim.lane_tokens[0] == sim.lane_tokens[1], (k, source, text)
            totals = _check_records(records)
            if source == "model:tiny":  # the same model drafts: every draft is accepted
                assert totals["rolled_back"] == 0 and totals["accepted"] > 0


def _stored(cache: KVCache) -> list[tuple[torch.Tensor, torch.Tensor]]:
    return [tuple(t.clone() for t in cache.stored(layer)) for layer in range(cache.n_layers)]


def test_a_rolled_back_cache_equals_one_that_never_saw_the_rejected_drafts() -> None:
    loaded = load_model(TARGET)
    model, cfg = loaded.model, loaded.model.cfg

    class Fixed:  # drafts: the target's own next token, then tokens it would never choose
        label = "fixed"

        def propose(self, context, k, sampling, gen):
            cache = KVCache(cfg.n_layers)
            out = model(torch.tensor([context]), torch.arange(len(context)), cache, last_only=True)
            first = int(torch.argmax(out.logits[0, -1]))
            return [first] + [(first + 1 + j) % cfg.vocab_size for j in range(k - 1)], [1.0] * k

    spec = parse_spec("spec:5:lookup")
    from kvsim.caches import make_cache

    cache = make_cache(spec, cfg.n_layers)
    lane = SpeculativeLane(model, cache, 5, Fixed(), Sampling())
    prompt = [5, 9, 14, 3, 7, 7, 2]
    lane.step(prompt, len(prompt), 0)
    stat = lane.last
    assert stat.drafted == 5 and stat.forwards == 1
    assert stat.accepted >= 1 and stat.rolled_back == 5 - stat.accepted
    keep = len(prompt) + stat.accepted
    assert cache.n_tokens == keep
    # a cache that never saw the rejected drafts: the prompt and the accepted drafts, fed plainly
    reference = KVCache(cfg.n_layers)
    model(torch.tensor([lane.fed]), torch.arange(keep), reference, last_only=True)
    assert lane.fed[: len(prompt)] == prompt and len(lane.fed) == keep
    for (k1, v1), (k2, v2) in zip(_stored(cache), _stored(reference), strict=True):
        assert k1.shape == k2.shape == (1, cfg.n_kv_heads, keep, cfg.head_dim)
        torch.testing.assert_close(k1, k2, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(v1, v2, rtol=1e-5, atol=1e-5)
    for layer in range(cfg.n_layers):
        assert cache.key_positions(layer).tolist() == list(range(keep))
    row_bytes = 2 * cfg.n_layers * cfg.n_kv_heads * cfg.head_dim * 4  # K and V, fp32, every layer
    assert cache.nbytes == reference.nbytes == keep * row_bytes
    assert cache.bytes_split() == reference.bytes_split()


def test_a_rejected_check_in_a_run_leaves_the_cache_as_plain_decoding_would() -> None:
    """After every step of a run the spec lane's cache holds exactly the kv lane's rows (up to
    the rows it accepted ahead), never a rejected draft's."""
    loaded = load_model(TARGET)
    prompt = _prompts(1, 300, seed=3)[0]
    sim = Simulator(loaded.model, loaded.tokenizer, prompt, parse_lanes("kv,spec:6:early:1"), warmup=False)
    kv, spec = (lane.cache for lane in sim.lanes)
    rolled = 0
    for _ in range(30):
        record = sim.step()
        rolled += record.lanes[1].rolled_back
        held = spec.n_tokens
        assert held >= kv.n_tokens
        assert spec.key_positions(0).tolist() == list(range(held))
        assert sim.lanes[1].driver.fed[: kv.n_tokens] == sim.tokens[: kv.n_tokens]
        for layer in range(sim.model.cfg.n_layers):
            k_kv, v_kv = kv.stored(layer)
            k_sp, v_sp = spec.stored(layer)
            n = kv.n_tokens
            torch.testing.assert_close(k_sp[:, :, :n], k_kv, rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(v_sp[:, :, :n], v_kv, rtol=1e-5, atol=1e-5)
    assert rolled > 0


def test_lookup_draft_copies_what_followed_the_last_ngram() -> None:
    d = LookupDraft()
    g = torch.Generator()
    assert d.propose([1, 2, 3, 9, 9, 1, 2, 3], 3, Sampling(), g)[0] == [9, 9, 1]
    assert d.propose([1, 2, 3, 4, 5, 2, 3], 2, Sampling(), g)[0] == [4, 5]  # the 2-gram (2, 3)
    assert d.propose([7, 8, 9], 4, Sampling(), g)[0] == []  # nothing repeats
    assert d.propose([4, 1, 4], 5, Sampling(), g)[0] == [1, 4]  # only what exists


def test_early_exit_is_the_first_layers_with_the_models_head() -> None:
    loaded = load_model(TARGET)
    model = loaded.model
    shallow = early_exit(model, 1)
    assert len(shallow.layers) == 1 and len(model.layers) == 2
    assert shallow.lm_head is model.lm_head and shallow.layers[0] is model.layers[0]
    ids = torch.tensor([[3, 4, 5]])
    a = shallow(ids, torch.arange(3), KVCache(2)).logits
    # independently: the first block, then the final norm and the head
    from kvsim.models.transformer import rope_cos_sin

    cfg = model.cfg
    x = model.tok_embeddings(ids)
    rope = rope_cos_sin(torch.arange(3), cfg.head_dim, cfg.rope_theta, x.dtype)
    x, *_ = model.layers[0](x, torch.arange(3), KVCache(2), 0, rope)
    torch.testing.assert_close(a, model.lm_head(model.norm(x)))
    with pytest.raises(SimulationError, match="3 layers|2 layers"):
        early_exit(model, 3)


def test_sampled_speculation_in_lockstep_follows_the_run() -> None:
    """Temperature > 0: the lane accepts by the rejection rule with its own draws; when the run
    takes another token it rolls back and checks again — its logits stay the target's."""
    loaded = load_model(TARGET)
    prompt = _prompts(1, 300, seed=5)[0]
    sampling = Sampling(temperature=0.8, seed=3)
    sim = Simulator(loaded.model, loaded.tokenizer, prompt, parse_lanes("kv,spec:4:lookup,spec:3:early:1"), sampling)
    records = list(sim.run(40, stop_at_eos=False))
    for i in (1, 2):
        _check_records(records, i, follows=False)
    summary = summarize(sim.trace)
    assert summary["tokens_identical"] and summary["max_abs_logit_diff"] < 1e-4


def test_draft_model_with_another_tokenizer_is_refused() -> None:
    loaded = load_model(TARGET)
    other = "random:family=llama,layers=1,heads=2,kv_heads=1,dim=32,vocab=320,ctx=256,seed=12"
    with pytest.raises(SimulationError, match="vocabulary of 320"):
        Simulator(loaded.model, loaded.tokenizer, [1, 2, 3], (parse_spec("kv"), parse_spec(f"spec:2:model:{other}")))
    with pytest.raises(SimulationError, match="no-such-model"):
        Simulator(loaded.model, loaded.tokenizer, [1, 2, 3], (parse_spec("kv"), parse_spec("spec:2:model:no-such-model")))


@pytest.mark.parametrize("bad", ["spec:0:lookup", "spec:17:lookup", "spec:4", "spec:4:guess", "spec:4:early", "spec:4:model"])
def test_bad_spec_lanes_are_one_clear_error(bad: str) -> None:
    with pytest.raises(SpecError):
        parse_lanes(bad)


def test_spec_lanes_save_and_load(tmp_path) -> None:
    loaded = load_model(TARGET)
    prompt = _prompts(1, 300, seed=7)[0]
    sim = Simulator(loaded.model, loaded.tokenizer, prompt, parse_lanes("kv,spec:4:lookup"))
    list(sim.run(12, stop_at_eos=False))
    path = sim.trace.save(tmp_path / "spec.kvsim")
    back = Trace.load(path)
    assert back.meta["lanes"][1]["draft"] == "lookup" and back.meta["lanes"][1]["draft_k"] == 4
    for a, b in zip(sim.trace.records, back.records, strict=True):
        for x, y in zip(a.lanes, b.lanes, strict=True):
            assert (x.drafted, x.accepted, x.rolled_back, x.forwards, x.draft_ms) == (
                y.drafted,
                y.accepted,
                y.rolled_back,
                y.forwards,
                y.draft_ms,
            )


def test_the_memory_formula_accounts_for_every_byte_of_a_spec_lane() -> None:
    """kv-cache bytes of the text, plus the rows accepted ahead of it: equal to what the cache reports."""
    from kvsim.costs.memory import lane_bill

    loaded = load_model(TARGET)
    cfg = loaded.model.cfg
    lanes = (parse_spec("kv"), parse_spec(f"spec:5:model:{TARGET}"))
    sim = Simulator(loaded.model, loaded.tokenizer, _prompts(1, 300, seed=9)[0], lanes)
    meta = sim.trace.meta["lanes"][1]
    ahead_seen = 0
    for r in sim.run(14, stop_at_eos=False):
        s = r.lane(meta["name"])
        bill = lane_bill(meta, cfg.n_layers, cfg.n_kv_heads, cfg.head_dim, r.n_tokens, s.kv_positions, "float32", s.cache_tokens)
        assert bill is not None and bill.expected_bytes == s.cache_bytes
        assert bill.formula_bytes == r.lane("kv").cache_bytes
        ahead_seen += s.cache_tokens > r.n_tokens
    assert ahead_seen > 0  # the self-draft is always accepted: the lane holds rows ahead of the text


def test_an_observers_time_is_not_the_spec_lanes(monkeypatch) -> None:
    """A clock that moves only while the progress observer runs (1000 s a call): every lane's recorded
    time must be 0 — the observer's time is subtracted, the spec lane's check included."""
    import time

    loaded = load_model(TARGET)
    clock = [0.0]
    monkeypatch.setattr(time, "perf_counter", lambda: clock[0])

    def slow_observer(lane: str, done: int, total: int) -> None:
        clock[0] += 1000.0

    lanes = parse_lanes("kv,spec:3:lookup,spec:2:early:1")
    sim = Simulator(loaded.model, loaded.tokenizer, [4, 5, 6, 4, 5, 6, 4, 5], lanes, progress=slow_observer)
    checks = 0
    for r in sim.run(4, stop_at_eos=False):
        for lane in r.lanes:
            assert lane.wall_ms == 0.0, lane
            checks += lane.forwards
    assert checks > 4  # the observer was called during the lanes' forwards


def test_a_check_reads_the_weights_once_for_all_its_rows() -> None:
    """The roofline's view of a check: k + 1 rows of work for one read of the weights (what a plain
    decode step reads for one row), so its arithmetic intensity is higher; a step whose token came
    with an earlier check counts nothing (and the roofline leaves it out)."""
    from kvsim.costs.roofline import points_from_records
    from kvsim.engine.counting import step_cost

    loaded = load_model(TARGET)
    cfg = loaded.model.cfg
    prompt = _prompts(1, 300, seed=4)[0]
    sim = Simulator(loaded.model, loaded.tokenizer, prompt, parse_lanes("kv,spec:4:lookup"), warmup=False)
    records = list(sim.run(16, stop_at_eos=False))
    checks = 0
    for r in records[1:]:
        kv, spec = r.lane("kv"), r.lane("spec:4:lookup")
        if spec.forwards and spec.drafted:
            checks += 1
            rows = spec.kv_positions + spec.drafted
            expected = step_cost(cfg, new=rows, context=r.n_tokens + spec.drafted, out=spec.drafted + 1)
            assert spec.flops == expected.matmul_flops > kv.flops
            assert spec.bytes_by_component["weights"] == kv.bytes_by_component["weights"]
        if not spec.forwards:
            assert spec.flops == 0 and not any(spec.bytes_by_component.values())
    assert checks > 0
    points = points_from_records(records)
    kv_i = [p.flops / p.bytes for p in points if p.lane_name == "kv" and p.component == "linear" and p.phase == "decode"]
    spec_i = [p.flops / p.bytes for p in points if p.lane_name != "kv" and p.component == "linear" and p.phase == "decode"]
    assert max(spec_i) > 2 * max(kv_i)
