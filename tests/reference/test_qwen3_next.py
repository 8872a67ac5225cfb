"""Qwen3-Next (``family = qwen3_next``): kvsim's hybrid model against transformers' ``Qwen3NextForCausalLM``.

* A tiny random Qwen3-Next (4 layers: 3 Gated DeltaNet, 1 gated attention; GQA on both sides: 2 key heads for
  4 value heads in the recurrent layers, 4 query heads for 2 K/V heads in attention; partial RoPE; dense MLPs)
  is built by transformers with spread-out random weights, copied name for name into kvsim's model, and both
  run a 12-token prompt and 10 cached decode steps in fp32: transformers on its pure-torch path (the chunked
  gated delta rule for the prompt, the recurrent one per decode step, its ``DynamicCache``), kvsim through the
  simulator's ``kv`` and ``none`` lanes. Logits agree within 1e-4 at every step, and kvsim's ``kv`` lane holds
  transformers' own recurrent and conv states (kvsim keeps the conv's last 3 inputs, transformers 4 with a
  zero-padded first column: the last 3 equal).
* The memory bill (``lane_bill``) equals the recorded bytes at every step; the states' bytes are flat in n and
  the attention layer's K/V bytes linear.
* Mutations tried on ``kvsim/models/attention/hybrid.py``, each failing ``test_logits_equal_transformers_at_every_step`` at
  step 0: the decay without its ``exp`` (``state * g``: off by 3.3), the delta rule without ``β`` (off by 0.79);
  ``test_each_part_matters`` keeps one such change (a halved softplus) in the suite.
"""

from __future__ import annotations

import math

import pytest
import torch

transformers = pytest.importorskip("transformers")
pytest.importorskip("transformers.models.qwen3_next")

from helpers import Ids  # noqa: E402

from kvsim.caches import KVCache, NoCache  # noqa: E402
from kvsim.caches.state import state_bytes  # noqa: E402
from kvsim.costs.memory import lane_bill  # noqa: E402
from kvsim.engine.simulate import Simulator, parse_lanes  # noqa: E402
from kvsim.models.attention import hybrid  # noqa: E402
from kvsim.models.config import parse_random_spec  # noqa: E402
from kvsim.models.transformer import Transformer  # noqa: E402

VOCAB = 96
PROMPT_LEN = 12
STEPS = 10
ATOL = 1e-4
SPEC = (
    f"random:family=qwen3_next,layers=4,heads=4,kv_heads=2,dim=64,head_dim=16,hidden=96,vocab={VOCAB},"
    "linear_heads=2,linear_value_heads=4,linear_head_dim=16,conv=4,rope_theta=10000"
)


def hf_model() -> torch.nn.Module:
    cfg = transformers.Qwen3NextConfig(
        vocab_size=VOCAB,
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        linear_num_key_heads=2,
        linear_num_value_heads=4,
        linear_key_head_dim=16,
        linear_value_head_dim=16,
        linear_conv_kernel_dim=4,
        full_attention_interval=4,
        num_experts=0,  # dense MLPs in every layer
        mlp_only_layers=[0, 1, 2, 3],
        max_position_embeddings=128,
        rms_norm_eps=1e-6,
        tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25},
    )
    cfg._attn_implementation = "eager"
    torch.manual_seed(0)
    hf = transformers.Qwen3NextForCausalLM(cfg).eval()
    gen = torch.Generator().manual_seed(11)
    with torch.no_grad():  # spread-out weights: N(0, 1/fan_in) matrices, norms near their identity
        for name, p in hf.named_parameters():
            noise = torch.randn(p.shape, generator=gen)
            if "norm" in name:  # Qwen3NextRMSNorm stores w (scale 1 + w); the gated norm stores the scale
                p.copy_((0.0 if "linear_attn.norm" not in name else 1.0) + 0.1 * noise)
            elif name.endswith(("A_log", "dt_bias")):
                p.copy_(0.5 * noise)
            elif "embed" in name:
                p.copy_(noise)
            elif "conv1d" in name:
                p.copy_(noise / math.sqrt(p.shape[-1]))
            else:
                p.copy_(noise / math.sqrt(p.shape[1]))
    return hf


def kvsim_model(hf: torch.nn.Module) -> Transformer:
    """kvsim's model with transformers' weights, name for name."""
    cfg, _ = parse_random_spec(SPEC)
    ours = Transformer(cfg).eval()
    theirs = hf.state_dict()
    mapping = {"tok_embeddings.weight": "model.embed_tokens.weight", "norm.weight": "model.norm.weight"}
    mapping["lm_head.weight"] = "lm_head.weight"
    for name in ours.state_dict():
        if name in mapping:
            continue
        parts = name.split(".")  # layers.i.<module>...
        i, rest = parts[1], ".".join(parts[3:])
        module = parts[2]
        prefix = f"model.layers.{i}."
        if module == "attn":
            kind = "linear_attn." if int(i) in cfg.linear_layers else "self_attn."
            mapping[name] = prefix + kind + rest
        elif module == "attn_norm":
            mapping[name] = prefix + "input_layernorm.weight"
        elif module == "mlp_norm":
            mapping[name] = prefix + "post_attention_layernorm.weight"
        elif module == "mlp":
            mapping[name] = (
                prefix + "mlp." + {"w_gate": "gate_proj", "w_up": "up_proj", "w_down": "down_proj"}[parts[3]] + ".weight"
            )
    ours.load_state_dict({k: theirs[v] for k, v in mapping.items()})
    return ours


@pytest.fixture(scope="module")
def pair() -> tuple[Transformer, torch.Tensor, list[torch.Tensor], object]:
    """kvsim's model, the ids, and transformers' logits at every step and its cache after the last (run once)."""
    hf = hf_model()
    ids = torch.randint(1, VOCAB, (1, PROMPT_LEN + STEPS), generator=torch.Generator().manual_seed(5))
    theirs, cache = hf_run(hf, ids)
    return kvsim_model(hf), ids, theirs, cache


def hf_run(hf: torch.nn.Module, ids: torch.Tensor) -> tuple[list[torch.Tensor], object]:
    """The last position's logits after the prompt and after each decode step, and transformers' cache."""
    with torch.no_grad():
        out = hf(ids[:, :PROMPT_LEN], use_cache=True)
        cache = out.cache if "cache" in out else out.past_key_values  # transformers ≥ 5.2x names it cache
        logits = [out.logits[0, -1]]
        for i in range(PROMPT_LEN, ids.shape[1]):
            out = hf(ids[:, i : i + 1], cache=cache, use_cache=True)
            logits.append(out.logits[0, -1])
    return logits, cache


def test_logits_equal_transformers_at_every_step(pair) -> None:
    ours, ids, theirs, _ = pair
    kv, none = KVCache(4), NoCache(4)
    got = [ours(ids[:, :PROMPT_LEN], torch.arange(PROMPT_LEN), kv).logits[0, -1]]
    for i in range(PROMPT_LEN, ids.shape[1]):
        got.append(ours(ids[:, i : i + 1], torch.arange(i, i + 1), kv).logits[0, -1])
    for step, (a, b) in enumerate(zip(got, theirs, strict=True)):
        assert (a - b).abs().max() < ATOL, f"step {step}: kv lane differs from transformers by {(a - b).abs().max():.2e}"
        n = PROMPT_LEN + step
        recomputed = ours(ids[:, :n], torch.arange(n), none).logits[0, -1]
        assert (recomputed - b).abs().max() < ATOL, f"step {step}: the uncached lane differs"
    assert theirs[0].std() > 0.3 and (theirs[1] - theirs[0]).abs().max() > 0.1  # spread-out, step-dependent logits
    assert ours.n_params() == ours.cfg.n_params()  # the closed form counts the hybrid's two kinds of layer


def test_the_cache_holds_transformers_states(pair) -> None:
    ours, ids, _, cache = pair
    kv = KVCache(4)
    ours(ids[:, :PROMPT_LEN], torch.arange(PROMPT_LEN), kv)
    for i in range(PROMPT_LEN, ids.shape[1]):
        ours(ids[:, i : i + 1], torch.arange(i, i + 1), kv)
    n = ids.shape[1]
    for layer in ours.cfg.linear_layers:
        conv, rec = kv.layer_state(layer, n)
        their_rec = cache.get_recurrent_state(layer, state_idx=0)  # how its Gated DeltaNet reads them
        their_conv = cache.get_conv_state(layer, state_idx=0)
        assert (rec - their_rec.float()).abs().max() < ATOL
        assert (conv - their_conv[..., -conv.shape[-1] :]).abs().max() < ATOL
    assert torch.equal(kv.key_positions(3), torch.arange(n))  # the attention layer's rows: every position


def test_each_part_matters(pair, monkeypatch) -> None:
    """The parity cannot pass by accident: the recurrence with a part changed gives other logits."""
    ours, ids, theirs, _ = pair
    real = hybrid.F.softplus
    monkeypatch.setattr(hybrid.F, "softplus", lambda x: real(x) * 0.5)  # a different decay
    kv = KVCache(4)
    ours(ids[:, :PROMPT_LEN], torch.arange(PROMPT_LEN), kv)
    got = ours(ids[:, PROMPT_LEN : PROMPT_LEN + 1], torch.arange(PROMPT_LEN, PROMPT_LEN + 1), kv).logits[0, -1]
    assert (got - theirs[1]).abs().max() > 100 * ATOL


def test_bill_equals_the_recorded_bytes_every_step(pair) -> None:
    ours, ids, _, _ = pair
    cfg = ours.cfg
    sim = Simulator(ours, Ids(), ids[0, :PROMPT_LEN].tolist(), parse_lanes("none,kv"), warmup=True)
    conv, rec = cfg.recurrent_state_values()
    n_linear = len(cfg.linear_layers)
    states, kvs = [], []
    for record in sim.run(8):
        for i, lane in enumerate(sim.trace.meta["lanes"]):
            step = record.lanes[i]
            bill = lane_bill(
                lane,
                cfg.n_layers,
                cfg.n_kv_heads,
                cfg.head_dim,
                record.n_tokens,
                step.kv_positions,
                kv_layers=len(cfg.kv_layers),
                recurrent=(n_linear, conv, rec),
            )
            assert bill is not None and bill.expected_bytes == step.cache_bytes, (record.step, lane["name"])
            if lane["name"] == "kv":
                states.append(bill.expected_bytes - bill.formula_bytes)
                kvs.append(bill.formula_bytes)
    per_token = 2 * cfg.n_kv_heads * cfg.head_dim * 4  # one attention layer's K and V row, fp32
    assert states == [state_bytes(conv, rec, n_linear, 32)] * len(states) and states[0] == 3 * (384 * 4 + 1024 * 4)
    assert [b - a for a, b in zip(kvs, kvs[1:], strict=False)] == [per_token] * (len(kvs) - 1)  # linear in n


def test_only_lanes_that_hold_the_state_run(pair) -> None:
    from kvsim.core.sampling import SimulationError

    ours, ids, _, _ = pair
    with pytest.raises(SimulationError, match="only the lanes none and kv"):
        Simulator(ours, Ids(), ids[0, :4].tolist(), parse_lanes("window:4"), warmup=False)
