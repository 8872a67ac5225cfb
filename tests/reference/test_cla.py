"""Cross-layer attention (``random:family=llama,cla=S``) against its definition, written out here.

CLA (Brandon et al. 2024, §2): the layers form groups of S consecutive layers; the first of a group computes K and
V from its own input, as any layer does, and every layer of the group attends with its *own* queries over those
K and V. The reference below is that sentence in plain torch, over the whole sequence at once, from the model's
weights (RMSNorm, RoPE and SwiGLU written out too, nothing of kvsim's forward used); kvsim's ``kv`` lane (prompt,
then one token a step) and ``none`` lane (the whole prefix again) must give its logits within 1e-4 at every step.
transformers has no CLA model: its Gemma 3n shares K/V across layers, but inside a block kvsim does not have
(AltUp, per-layer embeddings, LAuReL), so the paper's definition is the reference.

The cache holds the owners' rows only: its bytes are the closed form's for L / S layers at every step, the bill
(``lane_bill`` with ``kv_layers``) says so, and the model has no K/V projections on its borrowers.
Mutation tried: lending the owner's *new* rows instead of every row its cache returned (``Attention.lent = (k, v,
positions, …)``) — the prompt step still agrees (the new rows are all the rows), the first decode step does not
(``test_logits_equal_the_definition_at_every_step`` fails at step 1).
"""

from __future__ import annotations

import math

import pytest
import torch
from helpers import Ids

from kvsim.caches import KVCache, NoCache
from kvsim.costs.memory import kv_cache_bytes, lane_bill
from kvsim.engine.simulate import Simulator, parse_lanes
from kvsim.models.attention.cla import SharedKVAttention, ownership
from kvsim.models.config import ConfigError, parse_random_spec
from kvsim.models.transformer import Transformer, init_random

VOCAB = 96
SPEC = f"random:family=llama,layers=4,heads=4,kv_heads=2,dim=64,hidden=96,vocab={VOCAB},cla=2,seed=3"
PROMPT_LEN, STEPS = 9, 8
ATOL = 1e-4


@pytest.fixture(scope="module")
def model() -> Transformer:
    cfg, seed = parse_random_spec(SPEC)
    return init_random(Transformer(cfg), seed).eval()


def reference_logits(model: Transformer, ids: torch.Tensor) -> torch.Tensor:
    """The last position's logits of ``ids`` (T,), CLA as the paper defines it, the whole sequence at once."""
    cfg = model.cfg
    t, h, hkv, d = ids.shape[0], cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
    inv_freq = 1.0 / (cfg.rope_theta ** (torch.arange(0, d, 2).float() / d))
    freqs = torch.arange(t).float()[:, None] * inv_freq[None]
    cos, sin = torch.cat([freqs, freqs], -1).cos(), torch.cat([freqs, freqs], -1).sin()

    def rope(x: torch.Tensor) -> torch.Tensor:  # (heads, T, d)
        return x * cos + torch.cat([-x[..., d // 2 :], x[..., : d // 2]], -1) * sin

    def rms(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + cfg.norm_eps) * w

    x = model.tok_embeddings.weight[ids]  # (T, dim)
    causal = torch.ones(t, t).tril().bool()
    shared: tuple[torch.Tensor, torch.Tensor] | None = None
    for i, block in enumerate(model.layers):
        a = rms(x, block.attn_norm.weight)
        attn = block.attn
        q = rope((a @ attn.wq.weight.T).view(t, h, d).transpose(0, 1))
        if i % cfg.kv_share == 0:  # the group's first layer: K and V from its own input
            k = rope((a @ attn.wk.weight.T).view(t, hkv, d).transpose(0, 1))
            v = (a @ attn.wv.weight.T).view(t, hkv, d).transpose(0, 1)
            shared = (k, v)
        assert shared is not None
        k, v = (z.repeat_interleave(h // hkv, 0) for z in shared)  # every layer of the group reads them
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(d)
        y = torch.softmax(scores.masked_fill(~causal, float("-inf")), -1) @ v  # (H, T, d)
        x = x + y.transpose(0, 1).reshape(t, h * d) @ attn.wo.weight.T
        m = rms(x, block.mlp_norm.weight)
        x = (
            x
            + (torch.nn.functional.silu(m @ block.mlp.w_gate.weight.T) * (m @ block.mlp.w_up.weight.T))
            @ block.mlp.w_down.weight.T
        )
    return (rms(x, model.norm.weight) @ model.lm_head.weight.T)[-1]


def test_logits_equal_the_definition_at_every_step(model: Transformer) -> None:
    ids = torch.randint(1, VOCAB, (PROMPT_LEN + STEPS,), generator=torch.Generator().manual_seed(4))
    kv, none = KVCache(4), NoCache(4)
    for step in range(STEPS + 1):
        n = PROMPT_LEN + step
        start = 0 if step == 0 else n - 1
        got = model(ids[None, start:n], torch.arange(start, n), kv).logits[0, -1]
        want = reference_logits(model, ids[:n])
        assert (got - want).abs().max() < ATOL, f"step {step}: kv lane off by {(got - want).abs().max():.2e}"
        again = model(ids[None, :n], torch.arange(n), none).logits[0, -1]
        assert (again - want).abs().max() < ATOL, f"step {step}: none lane off"
    # sharing matters: every layer reading its own K/V (a plain llama with the owners' weights copied) differs
    assert want.std() > 0.3


def test_borrowers_hold_no_rows_and_no_kv_weights(model: Transformer) -> None:
    cfg = model.cfg
    assert ownership(cfg) == [0, 0, 2, 2] and cfg.kv_layers == (0, 2)
    assert [isinstance(b.attn, SharedKVAttention) for b in model.layers] == [False, True, False, True]
    assert model.n_params() == cfg.n_params()  # the closed form drops the borrowers' W_K and W_V
    plain, _ = parse_random_spec(SPEC.replace(",cla=2", ""))
    assert plain.n_params() - cfg.n_params() == 2 * (2 * 64 * 2 * 16)  # two borrowers × (W_K + W_V)


def test_bill_drops_by_the_share_factor_every_step(model: Transformer) -> None:
    cfg = model.cfg
    prompt = list(range(1, PROMPT_LEN + 1))
    sim = Simulator(model, Ids(), prompt, parse_lanes("none,kv,window:6"), warmup=True)
    for record in sim.run(6):
        n = record.n_tokens
        for i, lane in enumerate(sim.trace.meta["lanes"]):
            step = record.lanes[i]
            bill = lane_bill(lane, cfg.n_layers, cfg.n_kv_heads, cfg.head_dim, n, step.kv_positions, kv_layers=len(cfg.kv_layers))
            assert bill is not None and bill.expected_bytes == step.cache_bytes, (record.step, lane["name"])
        kv_bytes = record.lanes[1].cache_bytes
        assert kv_bytes * cfg.kv_share == kv_cache_bytes(cfg.n_layers, cfg.n_kv_heads, cfg.head_dim, n, 1, 32)
        assert record.lanes[2].cache_bytes == kv_cache_bytes(2, cfg.n_kv_heads, cfg.head_dim, min(n, 6), 1, 32)


def test_share_settings_are_checked() -> None:
    with pytest.raises(ConfigError, match="kv_share"):
        parse_random_spec("random:family=llama,layers=2,cla=3")
    with pytest.raises(ConfigError, match="cla"):
        parse_random_spec("random:family=gemma3,layers=2,cla=2")


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("random:family=qwen3_next,layers=4,heads=4,kv_heads=2,dim=64", "3 of 4 layers are Gated DeltaNet"),
        ("random:family=llama,layers=4,heads=4,kv_heads=2,dim=64,cla=2", "only 2 of 4 layers cache rows"),
    ],
)
def test_both_families_run_in_the_cli(spec: str, words: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``kvsim run --model random:…`` reaches each family, says its words and runs the default lanes."""
    from kvsim.cli.entry import main as cli_main

    assert cli_main(["run", "--model", spec, "--prompt", "hi", "--steps", "3"]) == 0
    out = capsys.readouterr().out
    assert words in out and "max |Δlogit|" in out
