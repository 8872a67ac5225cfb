"""DeepSeek-V3.2's sparse attention (``family = deepseek_v32``): kvsim's model against transformers'
``DeepseekV32ForCausalLM``.

* A tiny random DeepSeek-V3.2 (2 layers, 4 heads, latent 32 + RoPE key 8, q_lora_rank 24, an indexer of 8 heads
  of 16 with top-5; dense MLPs) is built by transformers with spread-out random weights, copied into kvsim's
  model (the main attention's RoPE rows put from DeepSeek's interleaved pairs into kvsim's halves: the same
  rotation, its rows in another order), and both run a 12-token prompt and 10 cached decode steps in fp32:
  transformers on its eager path (its ``DynamicCache`` keeps the indexer keys beside the latents), kvsim through
  its ``kv`` and ``none`` lanes. Logits agree within 1e-4 at every step, and every query of every layer read the
  same rows: transformers' indexer returns its top-k indices (caught with a forward hook on each layer's indexer;
  where a query sees fewer than k rows it also returns masked ones, which its mask then hides: compared on the
  rows the query may see).
* The memory bill (``lane_bill``) equals the recorded bytes at every step, the indexer keys included; the bytes
  read per decode step are the closed form L · (d_I · n + (r + d_R) · min(k, n)) — k latents, not n.
* Mutations tried on ``kvsim/models/attention/dsa.py``, each run against
  ``test_logits_and_rows_read_equal_transformers`` with the change in place, then restored (each fails it): the
  indexer keys not cached (a decode step's indexer scoring its own new key in place of the held ones: step 1 off by
  1.33); the top-k taken before the causal mask (a prompt query reads future rows: step 0 NaN); the indexer's heads
  unweighted (``w = 1``: step 0 off by 2.30); every held row read (top-S, dense MLA: step 0 off by 1.43).
  ``test_each_part_matters`` keeps one (the indexer's ReLU removed) in the suite.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")
pytest.importorskip("transformers.models.deepseek_v32")

from helpers import Ids  # noqa: E402

from kvsim.caches import KVCache, NoCache  # noqa: E402
from kvsim.costs.memory import lane_bill, model_facts, sparse_read_bytes  # noqa: E402
from kvsim.engine.counting import step_cost  # noqa: E402
from kvsim.engine.simulate import Simulator, parse_lanes  # noqa: E402
from kvsim.models.attention import dsa  # noqa: E402
from kvsim.models.config import parse_random_spec  # noqa: E402
from kvsim.models.transformer import Transformer  # noqa: E402

VOCAB = 96
PROMPT_LEN = 12
STEPS = 10
TOPK = 5
ATOL = 1e-4
SPEC = (
    f"random:family=deepseek_v32,layers=2,heads=4,dim=64,head_dim=16,hidden=96,vocab={VOCAB},ctx=128,"
    f"latent=32,rope_dim=8,q_lora=24,index_heads=8,index_dim=16,topk={TOPK}"
)


def hf_model() -> torch.nn.Module:
    cfg = transformers.DeepseekV32Config(
        vocab_size=VOCAB,
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        kv_lora_rank=32,
        q_lora_rank=24,
        qk_rope_head_dim=8,
        qk_nope_head_dim=16,
        v_head_dim=16,
        index_topk=TOPK,
        index_head_dim=16,
        index_n_heads=8,
        first_k_dense_replace=2,  # dense MLPs in every layer
        n_routed_experts=4,
        n_group=1,
        topk_group=1,
        num_experts_per_tok=2,
        max_position_embeddings=128,
        rms_norm_eps=1e-6,
        tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
    )
    cfg._attn_implementation = "eager"
    torch.manual_seed(0)
    hf = transformers.DeepseekV32ForCausalLM(cfg).eval()
    gen = torch.Generator().manual_seed(11)
    with torch.no_grad():  # spread-out weights: N(0, 1/fan_in) matrices, norms near their identity
        for name, p in hf.named_parameters():
            noise = torch.randn(p.shape, generator=gen)
            if name.endswith("k_norm.bias"):
                p.copy_(0.1 * noise)
            elif "norm" in name:
                p.copy_(1.0 + 0.1 * noise)
            elif "embed" in name:
                p.copy_(noise)
            else:
                p.copy_(noise / math.sqrt(p.shape[1]))
    return hf


def deinterleave(rows: int) -> torch.Tensor:
    """DeepSeek rotates RoPE dims in pairs (0, 1), (2, 3)…; kvsim in halves (i, i + d/2): rows 0, 2, 4…, 1, 3, 5…"""
    return torch.cat([torch.arange(0, rows, 2), torch.arange(1, rows, 2)])


def kvsim_model(hf: torch.nn.Module) -> Transformer:
    """kvsim's model with transformers' weights, module by module."""
    cfg, _ = parse_random_spec(SPEC)
    ours = Transformer(cfg).eval()
    theirs = hf.state_dict()
    h, d, r, dr = cfg.n_heads, cfg.head_dim, cfg.kv_lora_rank, cfg.qk_rope_head_dim
    names = {
        "wq_a": "q_a_proj",
        "q_norm": "q_a_layernorm",
        "wq_b": "q_b_proj",
        "wkv_a": "kv_a_proj_with_mqa",
        "kv_norm": "kv_a_layernorm",
        "wkv_b": "kv_b_proj",
        "wo": "o_proj",
    }
    mlp = {"w_gate": "gate_proj", "w_up": "up_proj", "w_down": "down_proj"}
    state = {
        "tok_embeddings.weight": theirs["model.embed_tokens.weight"],
        "norm.weight": theirs["model.norm.weight"],
        "lm_head.weight": theirs["lm_head.weight"],
    }
    for name in ours.state_dict():
        parts = name.split(".")
        if parts[0] != "layers":
            continue
        i, module, rest = parts[1], parts[2], parts[3:]
        prefix = f"model.layers.{i}."
        if module == "attn_norm":
            state[name] = theirs[prefix + "input_layernorm.weight"]
        elif module == "mlp_norm":
            state[name] = theirs[prefix + "post_attention_layernorm.weight"]
        elif module == "mlp":
            state[name] = theirs[prefix + "mlp." + mlp[rest[0]] + ".weight"]
        elif rest[0] == "indexer":
            state[name] = theirs[prefix + "self_attn." + ".".join(rest)]
        else:
            state[name] = theirs[prefix + "self_attn." + names[rest[0]] + "." + rest[1]]
    for i in range(cfg.n_layers):  # the RoPE rows of the main attention: interleaved pairs → halves
        wq = state[f"layers.{i}.attn.wq_b.weight"].view(h, d + dr, -1).clone()
        wq[:, d:] = wq[:, d:][:, deinterleave(dr)]
        state[f"layers.{i}.attn.wq_b.weight"] = wq.view(h * (d + dr), -1)
        wa = state[f"layers.{i}.attn.wkv_a.weight"].clone()
        wa[r:] = wa[r:][deinterleave(dr)]
        state[f"layers.{i}.attn.wkv_a.weight"] = wa
    ours.load_state_dict(state)
    return ours


def hf_run(hf: torch.nn.Module, ids: torch.Tensor) -> tuple[list[torch.Tensor], list[list[np.ndarray]]]:
    """The last position's logits after the prompt and after each decode step, and the indices each layer's
    indexer returned at each step ((T, k) per layer)."""
    caught: list[np.ndarray] = []
    hooks = [
        layer.self_attn.indexer.register_forward_hook(lambda _m, _a, out: caught.append(out[0].numpy().copy()))
        for layer in hf.model.layers
    ]
    try:
        with torch.no_grad():
            out = hf(ids[:, :PROMPT_LEN], use_cache=True)
            cache = out.cache if "cache" in out else out.past_key_values
            logits, chosen = [out.logits[0, -1]], [list(caught)]
            for i in range(PROMPT_LEN, ids.shape[1]):
                caught.clear()
                out = hf(ids[:, i : i + 1], cache=cache, use_cache=True)
                logits.append(out.logits[0, -1])
                chosen.append(list(caught))
    finally:
        for hook in hooks:
            hook.remove()
    return logits, chosen


@pytest.fixture(scope="module")
def pair() -> tuple[Transformer, torch.Tensor, list[torch.Tensor], list[list[np.ndarray]]]:
    hf = hf_model()
    ids = torch.randint(1, VOCAB, (1, PROMPT_LEN + STEPS), generator=torch.Generator().manual_seed(5))
    logits, chosen = hf_run(hf, ids)
    return kvsim_model(hf), ids, logits, chosen


def _run(model: Transformer, ids: torch.Tensor) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """kvsim's kv lane: logits and rows read ((L, T, k) positions) at the prompt and every decode step."""
    kv = KVCache(model.cfg.n_layers)
    out = model(ids[:, :PROMPT_LEN], torch.arange(PROMPT_LEN), kv)
    logits, chosen = [out.logits[0, -1]], [out.selected[:, 0]]
    for i in range(PROMPT_LEN, ids.shape[1]):
        out = model(ids[:, i : i + 1], torch.arange(i, i + 1), kv)
        logits.append(out.logits[0, -1])
        chosen.append(out.selected[:, 0])
    return logits, chosen


def test_logits_and_rows_read_equal_transformers(pair) -> None:
    ours, ids, theirs, their_rows = pair
    got, rows = _run(ours, ids)
    none = NoCache(ours.cfg.n_layers)
    for step, (a, b) in enumerate(zip(got, theirs, strict=True)):
        assert (a - b).abs().max() < ATOL, f"step {step}: kv lane differs from transformers by {(a - b).abs().max():.2e}"
        n = PROMPT_LEN + step
        recomputed = ours(ids[:, :n], torch.arange(n), none).logits[0, -1]
        assert (recomputed - b).abs().max() < ATOL, f"step {step}: the uncached lane differs"
        first = 0 if step == 0 else n - 1  # the positions of this step's queries
        for layer in range(ours.cfg.n_layers):
            mine, hers = rows[step][layer].numpy(), their_rows[step][layer]
            assert hers.shape == (len(mine), TOPK)
            for t, (m, o) in enumerate(zip(mine, hers, strict=True)):
                seen = first + t  # a query may read rows up to its own position
                assert set(m[m >= 0].tolist()) == {int(x) for x in o if x <= seen}, (step, layer, t)
                assert (m >= 0).sum() == min(TOPK, seen + 1)  # k rows, or every row it sees when fewer
    assert theirs[0].std() > 0.3 and (theirs[1] - theirs[0]).abs().max() > 0.1  # spread-out, step-dependent logits
    last = rows[-1][:, 0].numpy()
    assert len({tuple(x) for x in last}) == 2  # the layers chose differently: each has its own indexer
    assert ours.n_params() == ours.cfg.n_params()  # the closed form counts q_lora and the indexer


def test_each_part_matters(pair, monkeypatch) -> None:
    """The parity cannot pass by accident: the indexer without its ReLU reads other rows, and the logits differ."""
    ours, ids, theirs, their_rows = pair
    monkeypatch.setattr(dsa.F, "relu", lambda x: x)
    got, rows = _run(ours, ids)
    differ = [float((a - b).abs().max()) for a, b in zip(got, theirs, strict=True)]
    assert max(differ) > 100 * ATOL


def test_absorbed_and_expanded_agree(pair, monkeypatch) -> None:
    ours, ids, _, _ = pair
    absorbed, rows = _run(ours, ids)
    monkeypatch.setattr(dsa.SparseLatentAttention, "absorbed", False)
    expanded, rows_e = _run(ours, ids)
    assert max(float((a - b).abs().max()) for a, b in zip(absorbed, expanded, strict=True)) < 1e-5
    assert all(torch.equal(a, b) for a, b in zip(rows, rows_e, strict=True))


def test_bill_and_bytes_read_every_step(pair) -> None:
    """Held: L · (r + d_R + d_I) · n, the bill's latents plus its indexer keys, equal to the cache's bytes at every
    step. Read by a decode step: every indexer key and min(k, n) latents a layer — flat in n past k."""
    ours, ids, _, _ = pair
    cfg = ours.cfg
    sim = Simulator(ours, Ids(), ids[0, :PROMPT_LEN].tolist(), parse_lanes("none,kv"), warmup=True)
    r, dr, di, layers = cfg.kv_lora_rank, cfg.qk_rope_head_dim, cfg.index_head_dim, cfg.n_layers
    reads = []
    for record in sim.run(6, stop_at_eos=False):
        n = record.n_tokens
        for i, lane in enumerate(sim.trace.meta["lanes"]):
            step = record.lanes[i]
            bill = lane_bill(lane, cfg.n_layers, cfg.n_kv_heads, cfg.head_dim, n, step.kv_positions, **model_facts(cfg))
            assert bill is not None and bill.expected_bytes == step.cache_bytes, (record.step, lane["name"])
            assert step.selected is not None and step.selected.positions.shape == (layers, len(record.positions), TOPK)
            if lane["name"] != "kv":
                continue
            assert step.cache_bytes == layers * (r + dr + di) * n * 4
            assert bill.formula_bytes == layers * (r + dr) * n * 4 and "indexer keys" in bill.why
            if record.phase == "decode":
                held, read = sparse_read_bytes(cfg, min(TOPK, n), n, 32)
                got = step.bytes_by_component
                assert held == step.cache_bytes and step.context == min(TOPK, n)
                assert got["kv_read"] + got["index_read"] == read
                assert got == step_cost(cfg, 1, n, 1).bytes  # the closed form, counted from the choices
                reads.append(got["kv_read"])
    assert reads and set(reads) == {layers * (r + dr) * TOPK * 4}  # k latents a step, however long the text


def test_only_lanes_that_hold_the_latent_run(pair) -> None:
    from kvsim.core.sampling import SimulationError

    ours, ids, _, _ = pair
    with pytest.raises(SimulationError, match="only the lanes none and kv"):
        Simulator(ours, Ids(), ids[0, :4].tolist(), parse_lanes("window:4"), warmup=False)
