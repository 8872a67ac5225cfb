"""The cached and uncached lanes are the same computation: same tokens, same logits, same rows."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers import FAMILY_SPECS, load

from kvsim.caches import KVCache
from kvsim.engine.simulate import Simulator


@pytest.mark.parametrize("name", ["gpt2", "llama-gqa", "llama-mqa"])
def test_lanes_agree_for_200_steps(name: str) -> None:
    loaded = load(FAMILY_SPECS[name])
    sim = Simulator(loaded.model, loaded.tokenizer, loaded.tokenizer.encode("The past never changes."))
    records = list(sim.run(200))
    assert len(records) == 200
    for r in records:
        uncached, cached = r.lane("uncached"), r.lane("cached")
        # both lanes' own greedy choice is the token the run continued with
        assert uncached.token_id == cached.token_id == r.token_id
        assert cached.logit_diff < 1e-4
        if uncached.recompute_diff is not None:
            assert uncached.recompute_diff < 1e-4
    # the generated text is not a degenerate constant (the check above would be vacuous)
    assert len({r.token_id for r in records}) > 3


def test_logits_match_full_recompute_at_every_position() -> None:
    """Independent of the simulator: an incremental forward equals a one-shot forward."""
    loaded = load(FAMILY_SPECS["llama-mha-tied-bias"])
    model = loaded.model
    ids = torch.randint(0, model.cfg.vocab_size, (1, 40), generator=torch.Generator().manual_seed(0))
    from kvsim.caches import NoCache

    full = model(ids, torch.arange(40), NoCache(model.cfg.n_layers)).logits
    cache = KVCache(model.cfg.n_layers, initial_capacity=4)  # forces several regrowths
    parts = [model(ids[:, :7], torch.arange(7), cache).logits]
    for t in range(7, 40):
        parts.append(model(ids[:, t : t + 1], torch.arange(t, t + 1), cache).logits)
    assert torch.allclose(torch.cat(parts, 1), full, atol=1e-4, rtol=0)


def test_cache_is_append_only_bitwise() -> None:
    loaded = load(FAMILY_SPECS["llama-gqa"])
    sim = Simulator(loaded.model, loaded.tokenizer, list(range(5, 17)))
    cache = next(lane.cache for lane in sim.lanes if lane.name == "cached")
    snapshots: list[tuple[int, list[torch.Tensor], list[torch.Tensor]]] = []
    for _ in range(90):  # crosses the 64-row initial capacity, so the buffer is reallocated
        sim.step()
        n = cache.n_tokens
        snapshots.append(
            (
                n,
                [cache.stored(i)[0].clone() for i in range(cache.n_layers)],
                [cache.stored(i)[1].clone() for i in range(cache.n_layers)],
            )
        )
    final_k = [cache.stored(i)[0] for i in range(cache.n_layers)]
    final_v = [cache.stored(i)[1] for i in range(cache.n_layers)]
    for n, ks, vs in snapshots:
        for layer in range(cache.n_layers):
            assert torch.equal(final_k[layer][:, :, :n], ks[layer])
            assert torch.equal(final_v[layer][:, :, :n], vs[layer])


def test_recorded_rows_are_the_cached_rows() -> None:
    """The rows a record carries are exactly what the cache holds at those positions."""
    loaded = load(FAMILY_SPECS["llama-gqa"])
    sim = Simulator(loaded.model, loaded.tokenizer, list(range(3, 11)))
    records = list(sim.run(12))
    cache = next(lane.cache for lane in sim.lanes if lane.name == "cached")
    k_all = torch.cat([torch.from_numpy(r.k.copy()) for r in records], dim=2)  # (L, H_kv, n, D)
    for layer in range(cache.n_layers):
        assert torch.equal(cache.stored(layer)[0][0], k_all[layer])


def test_uncached_recompute_reproduces_old_rows() -> None:
    loaded = load(FAMILY_SPECS["gpt2"])
    sim = Simulator(loaded.model, loaded.tokenizer, list(range(20, 30)))
    diffs = [r.lane("uncached").recompute_diff for r in sim.run(30)]
    assert diffs[0] is None  # nothing old at prefill
    assert all(d is not None and d < 1e-5 for d in diffs[1:])


def test_run_stops_after_end_of_sequence() -> None:
    loaded = load(FAMILY_SPECS["gpt2"])
    sim = Simulator(loaded.model, loaded.tokenizer, [5, 6, 7])
    first = [r.token_id for r in sim.run(20)]
    # make the 4th produced token the EOS id: a fresh run stops right after it
    loaded.tokenizer.eos_id = first[3]
    sim = Simulator(loaded.model, loaded.tokenizer, [5, 6, 7])
    stopped = [r.token_id for r in sim.run(20)]
    assert stopped == first[: first.index(first[3]) + 1]
    assert sim.ended_with_eos
    sim = Simulator(loaded.model, loaded.tokenizer, [5, 6, 7])
    assert len(list(sim.run(20, stop_at_eos=False))) == 20


def test_a_cancelled_step_leaves_the_run_as_it_was() -> None:
    loaded = load(FAMILY_SPECS["llama-gqa"])
    reference = [r.token_id for r in Simulator(loaded.model, loaded.tokenizer, [9, 8, 7, 6]).run(10)]

    class Cancelled(Exception):
        pass

    cancel_at = {"step": 4, "calls": 0}

    def progress(lane: str, done: int, total: int) -> None:
        if sim.steps_done == cancel_at["step"] and lane == "cached" and done == 1:
            cancel_at["calls"] += 1
            raise Cancelled  # after layer 0 of the cached lane has appended its row

    sim = Simulator(loaded.model, loaded.tokenizer, [9, 8, 7, 6], progress=progress)
    got = []
    while len(got) < 10:
        try:
            got.append(sim.step().token_id)
        except Cancelled:
            cancel_at["step"] = -1  # cancel once, then carry on
    assert cancel_at["calls"] == 1
    assert got == reference
    cached = next(lane.cache for lane in sim.lanes if lane.name == "cached")
    assert cached.n_tokens == 4 + 9


def test_decode_friendly_layout_changes_no_value() -> None:
    from kvsim.caches import NoCache
    from kvsim.models.config import parse_random_spec
    from kvsim.models.transformer import Transformer, init_random

    for spec in (FAMILY_SPECS["gpt2"], FAMILY_SPECS["llama-mha-tied-bias"]):
        cfg, seed = parse_random_spec(spec)
        plain = init_random(Transformer(cfg), seed).eval()
        before = {k: v.clone() for k, v in plain.state_dict().items()}
        ids = torch.arange(1, 20)[None]
        expected = plain(ids, torch.arange(19), NoCache(cfg.n_layers)).logits
        plain.use_decode_friendly_layout()
        assert all(torch.equal(before[k], v) for k, v in plain.state_dict().items())
        assert plain.layers[0].attn.fused_qkv is not None
        got = plain(ids, torch.arange(19), NoCache(cfg.n_layers)).logits
        assert torch.allclose(got, expected, atol=1e-5, rtol=0)


def test_sliding_window_first_key_and_observer_time_excluded(monkeypatch) -> None:
    """The observer's time is not the lane's: a clock that only moves while the observer runs (1,000 s a
    call) leaves every lane's wall_ms at exactly 0 — no real clock is read, so a busy machine cannot fail it."""
    import time
    import types

    from kvsim.engine import simulate

    loaded = load("random:family=llama,layers=2,heads=4,kv_heads=2,dim=32,window=8,seed=5")
    now = [0.0]
    clock = types.SimpleNamespace(**{k: getattr(time, k) for k in dir(time) if not k.startswith("_")})
    clock.perf_counter = lambda: now[0]
    monkeypatch.setattr(simulate, "time", clock)

    def slow_observer(lane: str, done: int, total: int) -> None:
        now[0] += 1000.0  # a GUI repainting its progress bar must not count as the lane's time

    sim = Simulator(loaded.model, loaded.tokenizer, list(range(1, 12)), progress=slow_observer)
    for r in sim.run(4):  # positions 11..14: past the window of 8, so first_key moves
        n = r.n_tokens
        assert r.lane("cached").first_key == max(0, n - 8)
        # the kv cache honours the model's window (as transformers' DynamicCache does): a decode step reads 8 rows
        assert r.lane("cached").context == (n if r.step == 0 else min(n, 8))
        for lane in r.lanes:
            assert lane.wall_ms == 0.0, lane  # two layers, 2,000 s of observer per lane: none of it counted
    assert now[0] > 0  # the observer was called


@pytest.mark.parametrize("lanes", ["none,kv", "kv,window:5,sink:2+window:3", "kv,int4:g4:r2,int8:g4:r0"])
def test_repeated_timing_changes_nothing_but_the_times(lanes):
    """Each step's forward timed 3 times with the cache rolled back between: the records are the same
    as with one forward (the policies' undo is exact), and the median sits inside its spread."""
    from kvsim.caches import parse_lanes

    loaded = load(FAMILY_SPECS["llama-gqa"])
    prompt = list(range(3, 12))
    runs = []
    for repeats in (1, 3):
        sim = Simulator(loaded.model, loaded.tokenizer, prompt, parse_lanes(lanes), repeats=repeats)
        runs.append(list(sim.run(14, stop_at_eos=False)))
    for one, three in zip(*runs, strict=True):
        assert one.token_id == three.token_id
        for name in ("q", "k", "v"):
            np.testing.assert_array_equal(getattr(one, name), getattr(three, name))
        for a, b in zip(one.lanes, three.lanes, strict=True):
            assert (a.token_id, a.cache_tokens, a.cache_bytes, a.spans) == (b.token_id, b.cache_tokens, b.cache_bytes, b.spans)
            assert a.logit_diff == pytest.approx(b.logit_diff, abs=1e-6)
            if a.rows is not None:
                np.testing.assert_array_equal(a.rows.positions, b.rows.positions)
                np.testing.assert_allclose(a.rows.k, b.rows.k, atol=1e-6)
            assert a.wall_ms_min is None and b.wall_ms_min is not None
            assert b.wall_ms_min <= b.wall_ms <= b.wall_ms_max
