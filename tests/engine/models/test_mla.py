"""Latent attention (``family=mla``, DeepSeek-V2's MLA): the absorbed and the expanded computation give
the same logits (1e-5, prefill and 12 cached decode steps); one layer's output equals a reference
written here from the paper's equations with loops over heads and keys; the cache holds
L · (r + d_R) · n values — the closed form ``mla_cache_bytes`` — against 2 · L · H_kv · d for K/V heads.
"""

from __future__ import annotations

import math

import pytest
import torch

from kvsim.caches import make_cache
from kvsim.core.sampling import SimulationError
from kvsim.costs.memory import kv_cache_bytes, mla_cache_bytes
from kvsim.engine.simulate import Simulator, parse_lanes
from kvsim.models.attention.mla import MLAAttention
from kvsim.models.config import ConfigError, parse_random_spec
from kvsim.models.loading import load_model

MLA = "random:family=mla,layers=3,heads=4,dim=64,vocab=300,ctx=128,seed=4"  # d = 16: r = 64, d_R = 8


def _ids(n: int) -> torch.Tensor:
    return torch.randint(0, 300, (1, n), generator=torch.Generator().manual_seed(2))


def _run(model, absorbed: bool, prompt: int = 9, steps: int = 12) -> tuple[list[torch.Tensor], list[int]]:
    """Logits of a prefill then cached greedy decode steps, and the cache's bytes after each step."""
    MLAAttention.absorbed = absorbed
    try:
        cache = make_cache("kv", model.cfg.n_layers)
        ids = _ids(prompt)
        out = [model(ids, torch.arange(prompt), cache).logits[0]]
        held = [cache.nbytes]
        for t in range(prompt, prompt + steps):
            token = out[-1][-1].argmax().view(1, 1)
            out.append(model(token, torch.tensor([t]), cache).logits[0])
            held.append(cache.nbytes)
        return out, held
    finally:
        MLAAttention.absorbed = True


def test_absorbed_and_expanded_agree_and_the_cache_is_the_latent() -> None:
    model = load_model(MLA).model
    cfg = model.cfg
    assert (cfg.kv_lora_rank, cfg.qk_rope_head_dim, cfg.head_dim, cfg.n_kv_heads) == (64, 8, 16, 1)
    absorbed, held = _run(model, True)
    expanded, held_e = _run(model, False)
    worst = max(float((a - b).abs().max()) for a, b in zip(absorbed, expanded, strict=True))
    assert worst < 1e-5, worst
    assert float(absorbed[0].std()) > 0.3  # spread-out logits: the agreement means something
    assert held == held_e
    for step, b in enumerate(held):
        n = 9 + step
        assert b == mla_cache_bytes(3, 64, 8, n, bits=32) == 3 * (64 + 8) * n * 4
        assert b < kv_cache_bytes(3, 4, 16, n, bits=32) / 1.7  # MHA of the same width: 2·L·H·d = 128 a layer-token, MLA 72
    # cached and recomputed (no cache) agree as for every family
    ids = torch.cat([_ids(9)] + [a[-1].argmax().view(1, 1) for a in absorbed[:-1]], 1)
    full = model(ids, torch.arange(ids.shape[1]), make_cache("none", 3)).logits[0]
    assert float((full[-1] - absorbed[-1][-1]).abs().max()) < 1e-5


def _rope(x: torch.Tensor, pos: int, theta: float) -> torch.Tensor:
    d, out = x.shape[0], x.clone()
    for i in range(d // 2):
        a = pos * theta ** (-2 * i / d)
        out[i] = x[i] * math.cos(a) - x[i + d // 2] * math.sin(a)
        out[i + d // 2] = x[i + d // 2] * math.cos(a) + x[i] * math.sin(a)
    return out


@torch.no_grad()
def test_one_layer_equals_the_papers_equations() -> None:
    """DeepSeek-V2 §2.1, per head h and query t: k_h = [W_UK,h c | k_R], v_h = W_UV,h c,
    o_h = Σ_j softmax_j(q_h · k_h,j / sqrt(d + d_R)) v_h,j, output W_O [o_1 … o_H]."""
    model = load_model(MLA).model
    cfg = model.cfg
    attn = model.layers[1].attn
    h, d, r, dr = cfg.n_heads, cfg.head_dim, cfg.kv_lora_rank, cfg.qk_rope_head_dim
    x = torch.randn(1, 7, cfg.dim, generator=torch.Generator().manual_seed(5))
    from kvsim.models.transformer import rope_cos_sin

    got = attn(x, torch.arange(7), make_cache("none", 3), 1, rope_cos_sin(torch.arange(7), dr, cfg.rope_theta, x.dtype))[0][0]
    wq, wa, wb, wo = (m.weight for m in (attn.wq, attn.wkv_a, attn.wkv_b, attn.wo))
    eps, g = cfg.norm_eps, attn.kv_norm.weight
    out = torch.zeros(7, h * d)
    for t in range(7):
        for head in range(h):
            q = wq[head * (d + dr) : (head + 1) * (d + dr)] @ x[0, t]
            q = torch.cat([q[:d], _rope(q[d:], t, cfg.rope_theta)])
            keys, values = [], []
            for j in range(t + 1):
                a = wa @ x[0, j]
                c = a[:r] / torch.sqrt((a[:r] ** 2).mean() + eps) * g
                w_uk = wb[head * 2 * d : head * 2 * d + d]
                w_uv = wb[head * 2 * d + d : (head + 1) * 2 * d]
                keys.append(torch.cat([w_uk @ c, _rope(a[r:], j, cfg.rope_theta)]))
                values.append(w_uv @ c)
            p = torch.softmax(torch.stack([q @ k for k in keys]) / math.sqrt(d + dr), 0)
            out[t, head * d : (head + 1) * d] = sum(p[j] * values[j] for j in range(t + 1))
    want = out @ wo.T
    assert float((got - want).abs().max()) < 1e-5


def test_config_and_refusals() -> None:
    cfg, _ = parse_random_spec("random:family=mla,layers=1,heads=8,dim=256,latent=32,rope_dim=16")
    assert (cfg.kv_lora_rank, cfg.qk_rope_head_dim, cfg.n_kv_heads, cfg.query_pre_attn_scalar) == (32, 16, 1, 32 + 16)
    assert cfg.n_params() == load_model("random:family=mla,layers=1,heads=8,dim=256,latent=32,rope_dim=16").model.n_params()
    for spec, message in (
        ("random:family=mla,kv_heads=2", "one latent per token"),
        ("random:family=mla,rope_dim=3", "even qk_rope_head_dim"),
        ("random:family=llama,latent=8", "are for family=mla"),
    ):
        with pytest.raises(ConfigError, match=message):
            parse_random_spec(spec)
    lm = load_model(MLA)
    with pytest.raises(SimulationError, match="only the lanes none and kv"):  # none,kv run: test_mla_lanes.py
        Simulator(lm.model, lm.tokenizer, [1, 2, 3], parse_lanes("none,window:2"))
    with pytest.raises(Exception, match="must be a positive integer"):
        mla_cache_bytes(3, 0, 8, 10)
