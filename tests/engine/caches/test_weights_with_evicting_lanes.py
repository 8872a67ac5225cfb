"""A weight-quantized lane (``@w8``) on a cache whose layers or heads hold different rows: eviction by
attention (``h2o``, ``tova``, ``snapkv``: per layer and KV head) and ``kv`` on a model with local layers
(Gemma 3: a local layer keeps its window, a global one every row). Such a lane is lossy (its rows are its
own, not the shared full-precision ones), so each step records the rows that changed; that used to assume
every layer and head held the same positions and failed (a shape error, or torch.stack of unequal layers).

Checked against the caches themselves: replaying every step's recorded rows by position gives, for every
layer, KV head and position the cache holds, exactly the row the cache holds (K and V), at every step; the
trace saves and loads with them and passes the trace checks. And ``latent:R@w8`` (the SVD latent of the
projections the lane runs) at full rank gives the ``kv@w8`` lane's logits; ``none@w8`` (no cache) records
the rows it recomputed, equal to those ``kv@w8`` caches.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kvsim.engine.simulate import Simulator, parse_lanes
from kvsim.engine.trace import Trace
from kvsim.engine.trace_checks import check_sequence
from kvsim.models.loading import load_model

GEMMA3_SMALL = "random:family=gemma3,layers=6,heads=2,kv_heads=1,dim=32,head_dim=16,vocab=300,ctx=256,window=8,seed=5"
LLAMA_GQA = "random:family=llama,layers=3,heads=4,kv_heads=2,dim=32,vocab=300,ctx=256,seed=4"


def _replay_matches_cache(model_spec: str, lanes: str, prompt_len: int, steps: int, tmp_path) -> None:
    lm = load_model(model_spec)
    prompt = torch.randint(1, 300, (prompt_len,), generator=torch.Generator().manual_seed(11)).tolist()
    sim = Simulator(lm.model, lm.tokenizer, prompt, parse_lanes(lanes), warmup=False)
    names = [spec.name for spec in parse_lanes(lanes)]
    n_layers = lm.model.cfg.n_layers
    seen: dict[str, dict[int, tuple[np.ndarray, np.ndarray]]] = {name: {} for name in names[1:]}
    differ = False
    for r in sim.run(steps, stop_at_eos=False):
        for lane_index, name in enumerate(names[1:], start=1):
            rows = r.lane(name).rows
            assert rows is not None, name  # a quantized-weight lane records its own rows
            for j, pos in enumerate(rows.positions.tolist()):
                seen[name][pos] = (rows.k[:, :, j], rows.v[:, :, j])
            cache = sim.lanes[lane_index].cache
            for layer in range(n_layers):
                k, v, pos = cache.held_rows(layer)
                per_head = pos if pos.ndim == 2 else pos.expand(k.shape[1], -1)
                for h in range(k.shape[1]):
                    for s, p in enumerate(per_head[h].tolist()):
                        rk, rv = seen[name][p]
                        np.testing.assert_array_equal(rk[layer, h], k[0, h, s].numpy(), err_msg=f"{name} L{layer} h{h} @{p}")
                        np.testing.assert_array_equal(rv[layer, h], v[0, h, s].numpy(), err_msg=f"{name} L{layer} h{h} @{p}")
                differ |= pos.ndim == 2 or pos.shape != cache.held_rows(0)[2].shape
    assert differ  # the case this file is about happened: heads or layers held different rows
    path = sim.trace.save(tmp_path / "run.kvsim")
    loaded = Trace.load(path)
    check_sequence(loaded.records, loaded.meta)
    for a, b in zip(sim.trace.records, loaded.records, strict=True):
        for name in names[1:]:
            np.testing.assert_array_equal(a.lane(name).rows.k, b.lane(name).rows.k)
            np.testing.assert_array_equal(a.lane(name).rows.positions, b.lane(name).rows.positions)


@pytest.mark.parametrize("lanes", ["kv,h2o:4:r4@w8", "kv,snapkv:8:w4@w8", "kv,tova:6@w4:g16"])
def test_attention_evicting_lane_with_quantized_weights_records_its_own_rows(lanes, tmp_path) -> None:
    _replay_matches_cache(LLAMA_GQA, lanes, 14, 8, tmp_path)


def test_kv_with_quantized_weights_on_a_model_with_local_layers(tmp_path) -> None:
    # window 8, prompt 6, 8 steps: the local layers start dropping rows while the global one keeps them all
    _replay_matches_cache(GEMMA3_SMALL, "kv,kv@w8", 6, 8, tmp_path)


def test_latent_lane_with_quantized_weights_factors_the_dequantized_projections() -> None:
    """``latent:R@w8`` factors the K/V projections the lane really runs (the INT8 codes dequantized; it
    failed: a quantized projection has no ``weight``). At full rank it is exact, so it must give the
    ``kv@w8`` lane's logits; below full rank it must not."""
    lm = load_model(LLAMA_GQA)  # 2 KV heads × d = 8: [W_K; W_V] is 32 × 32, full rank 32
    prompt = torch.randint(1, 300, (9,), generator=torch.Generator().manual_seed(2)).tolist()
    sim = Simulator(lm.model, lm.tokenizer, prompt, parse_lanes("kv@w8,latent:32@w8,latent:8@w8,kv"), warmup=False)
    worst_full = worst_low = worst_fp32 = 0.0
    for r in sim.run(6, stop_at_eos=False):  # logit_diff: against the first lane, kv@w8
        worst_full = max(worst_full, r.lane("latent:32@w8").logit_diff)
        worst_low = max(worst_low, r.lane("latent:8@w8").logit_diff)
        worst_fp32 = max(worst_fp32, r.lane("kv").logit_diff)
    assert worst_full < 1e-4, worst_full
    assert worst_low > 1e-3 and worst_fp32 > 1e-3  # the check can tell lanes apart


def test_no_cache_lane_with_quantized_weights_records_the_rows_it_recomputed(tmp_path) -> None:
    """``none@w8`` holds no cache, so its rows are the ones it recomputes each step (it failed: NoCache
    does not expose held rows). Replayed by position they equal the rows ``kv@w8`` caches — the same
    quantized model, computed once per position instead of every step — and the trace saves and loads."""
    lm = load_model(LLAMA_GQA)
    prompt = torch.randint(1, 300, (7,), generator=torch.Generator().manual_seed(5)).tolist()
    sim = Simulator(lm.model, lm.tokenizer, prompt, parse_lanes("kv@w8,none@w8"), warmup=False)
    seen: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for r in sim.run(6, stop_at_eos=False):
        rows = r.lane("none@w8").rows
        assert rows is not None
        for j, pos in enumerate(rows.positions.tolist()):
            seen[pos] = (rows.k[:, :, j], rows.v[:, :, j])
        cache = sim.lanes[0].cache
        for layer in range(lm.model.cfg.n_layers):
            k, v, pos = cache.held_rows(layer)
            assert sorted(seen) == pos.tolist()  # every position the sequence has, and no other
            for s, p in enumerate(pos.tolist()):
                np.testing.assert_allclose(seen[p][0][layer], k[0, :, s].numpy(), atol=1e-5)
                np.testing.assert_allclose(seen[p][1][layer], v[0, :, s].numpy(), atol=1e-5)
        assert r.lane("none@w8").logit_diff < 1e-4  # the same function as kv@w8
    loaded = Trace.load(sim.trace.save(tmp_path / "none.kvsim"))
    check_sequence(loaded.records, loaded.meta)
