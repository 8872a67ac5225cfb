"""``latent:R``: a model's K/V projections converted to a rank-R latent by SVD (MLA's cache on a model
trained without it, no fine-tuning). At full rank the lane reproduces the ``kv`` lane's logits (1e-5)
and its rows; below it, it holds R values a token and layer and its logits leave the model's. The
latents are checked against numpy's own SVD of [W_K; W_V]. Opt-in (``KVSIM_SMOLLM2=1``): SmolLM2-135M
at full rank (384 = 2·3·64) within 1e-4 of its ``kv`` lane.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers import opt_in_model_file

from kvsim.caches import SpecError, make_cache
from kvsim.costs.memory import lane_bill
from kvsim.engine.simulate import Simulator, parse_lanes
from kvsim.models.loading import load_model

LLAMA = "random:family=llama,layers=2,heads=4,kv_heads=2,dim=64,vocab=300,seed=3"  # 2·H_kv·d = 64 = dim: full rank 64


def test_full_rank_reproduces_the_model_and_a_lower_rank_holds_less() -> None:
    lm = load_model(LLAMA)
    sim = Simulator(lm.model, lm.tokenizer, list(range(1, 12)), parse_lanes("kv,latent:64,latent:16"))
    row = 2 * 2 * 2 * 16 * 4  # kv: K and V × layers × KV heads × d × fp32
    for r in sim.run(8):
        n = r.n_tokens
        kv, full, low = r.lane("kv"), r.lane("latent:64"), r.lane("latent:16")
        assert kv.cache_bytes == n * row == full.cache_bytes  # full rank: 64 values = 2·H_kv·d, no saving
        assert low.cache_bytes == 2 * 16 * n * 4  # layers × R × n × fp32
        for lane, done in zip(sim.trace.meta["lanes"], r.lanes, strict=True):  # the memory dock's formula
            assert lane_bill(lane, 2, 2, 16, n, done.kv_positions).expected_bytes == done.cache_bytes
        assert full.logit_diff < 1e-5 and full.token_id == kv.token_id
        assert low.logit_diff > 1e-2
        # the full-rank lane's own rows (rebuilt from latents, keys rotated) are the step's kv rows
        assert full.rows.positions.tolist() == r.positions.tolist()
        assert np.allclose(full.rows.k, r.k, atol=1e-5) and np.allclose(full.rows.v, r.v, atol=1e-5)


def test_latents_are_the_projection_on_numpys_singular_vectors() -> None:
    lm = load_model(LLAMA)
    model = lm.model
    cache = make_cache("latent:24", 2)
    ids = torch.arange(1, 10)[None]
    model(ids, torch.arange(9), cache)
    attn = model.layers[0].attn  # layer 0: its input does not depend on the lane's (lossy) past
    w = np.concatenate([attn.wk.weight.detach().numpy(), attn.wv.weight.detach().numpy()]).astype(np.float64)
    u = np.linalg.svd(w, full_matrices=False)[0][:, :24]
    # the layer's input, recomputed with a plain kv cache: k (before RoPE) and v of every position
    kv = make_cache("kv", 2)
    captured = {}
    block = model.layers[0]
    handle = block.attn_norm.register_forward_hook(lambda module, args, out: captured.update(x=out))  # the normed input
    model(ids, torch.arange(9), kv)
    handle.remove()
    with torch.no_grad():
        k, v = attn.wk(captured["x"])[0].numpy(), attn.wv(captured["x"])[0].numpy()
    want = np.concatenate([k, v], 1) @ u  # (9, 24): c = U_Rᵀ [k; v] per position
    got = cache._latents.stored(0)[0][0, 0].numpy()
    signs = np.sign((want * got).sum(0))  # singular vectors are defined up to sign
    assert np.allclose(got * signs, want, atol=1e-4)


def test_refusals() -> None:
    lm = load_model(LLAMA)
    with pytest.raises(SpecError, match="more than this model's full rank, 64"):
        lm.model(torch.arange(1, 5)[None], torch.arange(4), make_cache("latent:65", 2))
    mla = load_model("random:family=mla,layers=1,heads=4,dim=64,vocab=300,seed=1")
    with pytest.raises(SpecError, match="latent already"):
        mla.model(torch.arange(1, 5)[None], torch.arange(4), make_cache("latent:8", 1))
    info = make_cache("latent:8", 1).describe()
    assert info.lossy and "no fine-tuning" in info.explanation


def test_smollm2_full_rank_reproduces_its_logits() -> None:
    path = opt_in_model_file("KVSIM_SMOLLM2", "smollm2-135m", "convert SmolLM2's K/V to a latent")
    lm = load_model(str(path))
    ids = lm.tokenizer.encode("The cache remembers what the model has already read, so")
    sim = Simulator(lm.model, lm.tokenizer, ids, parse_lanes("kv,latent:384"))
    for r in sim.run(8):
        assert r.lane("latent:384").logit_diff < 1e-4 and r.lane("latent:384").token_id == r.token_id
