"""Closed-form counts against torch's own FLOP counter, and the seeds' Σt = n(n+1)/2 vs n."""

from __future__ import annotations

import pytest
import torch
from helpers import FAMILY_SPECS, load
from torch.utils.flop_counter import FlopCounterMode

from kvsim.caches import KVCache, NoCache, parse_spec
from kvsim.engine.counting import MATMUL_COMPONENTS, cumulative_kv_rows, step_cost
from kvsim.engine.simulate import Simulator


def counted(fn) -> int:
    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


@pytest.mark.parametrize("name", ["gpt2", "llama-gqa", "llama-mqa", "llama-mha-tied-bias"])
def test_forward_flops_match_torch_counter(name: str) -> None:
    model = load(FAMILY_SPECS[name]).model
    cfg = model.cfg
    ids = torch.randint(0, cfg.vocab_size, (1, 23))
    # prefill of 17 positions, then decodes against 17.., and a full recompute of 23
    cache = KVCache(cfg.n_layers)
    got = counted(lambda: model(ids[:, :17], torch.arange(17), cache, last_only=True))
    assert got == step_cost(cfg, new=17, context=17, out=1).matmul_flops
    for t in range(17, 20):
        got = counted(lambda t=t: model(ids[:, t : t + 1], torch.arange(t, t + 1), cache, last_only=True))
        assert got == step_cost(cfg, new=1, context=t + 1, out=1).matmul_flops
    got = counted(lambda: model(ids, torch.arange(23), NoCache(cfg.n_layers)))
    assert got == step_cost(cfg, new=23, context=23, out=23).matmul_flops


@pytest.mark.parametrize("lane", ["uncached", "cached"])
@pytest.mark.parametrize("name", ["gpt2", "llama-gqa"])
def test_recorded_flops_equal_torch_count_of_the_step(name: str, lane: str) -> None:
    loaded = load(FAMILY_SPECS[name])
    sim = Simulator(loaded.model, loaded.tokenizer, list(range(40, 52)), lanes=(parse_spec(lane),))
    for _ in range(4):  # prefill, then decodes
        with FlopCounterMode(display=False) as counter:
            record = sim.step()
        assert record.lane(lane).flops == counter.get_total_flops()


def test_component_split_is_consistent() -> None:
    cfg = load(FAMILY_SPECS["llama-gqa"]).model.cfg
    cost = step_cost(cfg, new=1, context=100)
    assert cost.matmul_flops == sum(cost.flops[c] for c in MATMUL_COMPONENTS)
    # QKᵀ and ·V cost the same; both grow linearly with the context in decode
    assert cost.flops["attn_scores"] == cost.flops["attn_values"]
    assert step_cost(cfg, new=1, context=200).flops["attn_scores"] == 2 * cost.flops["attn_scores"]
    # GQA: K/V projections are smaller than Q's by the group size
    h, hkv, d = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
    assert cost.flops["qkv_proj"] == cfg.n_layers * 2 * cfg.dim * (h + 2 * hkv) * d
    with pytest.raises(ValueError):
        step_cost(cfg, new=5, context=3)


def test_kv_positions_quadratic_vs_linear() -> None:
    loaded = load(FAMILY_SPECS["llama-mqa"])
    prompt = list(range(60, 67))  # P = 7
    sim = Simulator(loaded.model, loaded.tokenizer, prompt)
    records = list(sim.run(25))
    p = len(prompt)
    assert [r.lane("cached").kv_positions for r in records] == [p] + [1] * 24
    assert [r.lane("uncached").kv_positions for r in records] == [p + i for i in range(25)]
    assert [r.lane("cached").cache_tokens for r in records] == [p + i for i in range(25)]
    assert [r.lane("uncached").cache_tokens for r in records] == [0] * 25
    for k in range(25):
        total_u = sum(r.lane("uncached").kv_positions for r in records[: k + 1])
        total_c = sum(r.lane("cached").kv_positions for r in records[: k + 1])
        assert total_u == cumulative_kv_rows(p, k, cached=False)
        assert total_c == cumulative_kv_rows(p, k, cached=True)
    # from an empty start the seed's formula appears exactly: Σ_{t=1..n} t = n(n+1)/2
    n = 50
    assert cumulative_kv_rows(1, n - 1, cached=False) == n * (n + 1) // 2
    assert cumulative_kv_rows(1, n - 1, cached=True) == n


def test_cache_bytes_follow_the_formula() -> None:
    loaded = load(FAMILY_SPECS["llama-gqa"])
    cfg = loaded.model.cfg
    sim = Simulator(loaded.model, loaded.tokenizer, list(range(9)))
    cache = next(lane.cache for lane in sim.lanes if lane.name == "cached")
    for r in sim.run(5):
        n = r.lane("cached").cache_tokens
        held = sum(t.numel() * t.element_size() for layer in range(cfg.n_layers) for t in cache.stored(layer))
        assert r.lane("cached").cache_bytes == held == 2 * cfg.n_layers * cfg.n_kv_heads * cfg.head_dim * n * 4
