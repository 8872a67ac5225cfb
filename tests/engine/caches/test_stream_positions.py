"""``stream:S+window:W`` (StreamingLLM's positions re-assigned inside the cache) against a reference
written here from the paper (§3.2): every query reads the sinks and its last W rows, and RoPE places
those keys at their slots 0, 1, … in that cache and the query at the last slot — the paper's example,
cache [0, 1, 2, 3, 6, 7, 8] decoding 9, gives keys 0 … 7 and query 7. The reference's attention is
plain loops over that list; its K rows are computed once per position, unrotated, from its own past.
A prompt longer than S + W (each of its queries with its own cache) and decode steps past it: logits
within 1e-5 at every step; ``sink:S+window:W`` (original positions) differs once the window slides.
"""

from __future__ import annotations

import math

import torch
from test_attention_eviction import _rope  # the reference's RoPE, one copy

from kvsim.caches import make_cache, parse_spec
from kvsim.costs.memory import lane_bill
from kvsim.engine.simulate import Simulator, parse_lanes
from kvsim.models.loading import load_model

LLAMA = "random:family=llama,layers=2,heads=4,kv_heads=2,dim=32,vocab=300,ctx=256,seed=9"
S, W = 2, 5


@torch.no_grad()
def reference_logits(model, ids: list[int], sinks: int, window: int) -> list[torch.Tensor]:
    """The last-position logits after each prefix ids[:n], n = prompt … len(ids), StreamingLLM's way."""
    cfg = model.cfg
    h, hkv, d, g = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim, cfg.group_size
    x_all = model.tok_embeddings(torch.tensor([ids]))[0]
    k_raw: list[dict[int, torch.Tensor]] = [{} for _ in range(cfg.n_layers)]
    v_raw: list[dict[int, torch.Tensor]] = [{} for _ in range(cfg.n_layers)]
    out = []
    for p in range(len(ids)):  # one query at a time: each sees its own cache
        x = x_all[p : p + 1]
        for layer, block in enumerate(model.layers):
            a = block.attn
            xn = block.attn_norm(x)
            q, k, v = a.wq(xn).view(h, d), a.wk(xn).view(hkv, d), a.wv(xn).view(hkv, d)
            k_raw[layer][p], v_raw[layer][p] = k, v
            cache = [j for j in range(p + 1) if j < sinks or j > p - window]  # the sinks, then the last W
            y = torch.zeros(h * d)
            for head in range(h):
                j = head // g
                qv = _rope(q[head], len(cache) - 1, cfg.rope_theta)  # the query at the last slot
                logits = torch.stack(
                    [(qv * _rope(k_raw[layer][r][j], slot, cfg.rope_theta)).sum() / math.sqrt(d) for slot, r in enumerate(cache)]
                )
                w = torch.softmax(logits, 0)
                y[head * d : (head + 1) * d] = sum(w[i] * v_raw[layer][r][j] for i, r in enumerate(cache))
            x = x + a.wo(y[None])
            x = x + block.mlp(block.mlp_norm(x))
        out.append(model.lm_head(model.norm(x))[-1])
    return out


def test_stream_lane_matches_the_papers_positions_and_sink_lane_does_not() -> None:
    lm = load_model(LLAMA)
    model = lm.model
    ids = torch.randint(0, 300, (24,), generator=torch.Generator().manual_seed(4)).tolist()
    prompt = 13  # longer than S + W = 7: the prefill's later queries have caches with a gap
    want = reference_logits(model, ids, S, W)
    stream, sink = make_cache(f"stream:{S}+window:{W}", 2), make_cache(f"sink:{S}+window:{W}", 2)
    done, worst_sink = 0, 0.0
    for n in [prompt] + list(range(prompt + 1, len(ids) + 1)):
        feed, pos = torch.tensor([ids[done:n]]), torch.arange(done, n)
        got = model(feed, pos, stream, last_only=True).logits[0, -1]
        other = model(feed, pos, sink, last_only=True).logits[0, -1]
        assert float((got - want[n - 1]).abs().max()) < 1e-5, n
        worst_sink = max(worst_sink, float((other - want[n - 1]).abs().max()))
        held = stream.held_rows(0)[2].tolist()
        assert held == list(range(S)) + list(range(n - W, n)) == sink.held_rows(0)[2].tolist()  # the same rows
        assert float(stream.held_rows(1)[0].norm()) > 0
        done = n
    assert worst_sink > 1e-2  # original positions: another computation
    # a short run under S + W: nothing has slid, the lanes are the kv cache's
    kv, st = make_cache("kv", 2), make_cache(f"stream:{S}+window:{W}", 2)
    a = model(torch.tensor([ids[:6]]), torch.arange(6), kv).logits
    b = model(torch.tensor([ids[:6]]), torch.arange(6), st).logits
    assert float((a - b).abs().max()) < 1e-5


def test_stream_keys_are_held_unrotated_and_the_records_rows_are_rotated() -> None:
    lm = load_model(LLAMA)
    model = lm.model
    cache = make_cache(f"stream:{S}+window:{W}", 2)
    out = model(torch.arange(1, 5)[None], torch.arange(4), cache, record=True)
    kv = make_cache("kv", 2)
    ref = model(torch.arange(1, 5)[None], torch.arange(4), kv, record=True)
    assert torch.allclose(out.k, ref.k, atol=1e-6) and torch.allclose(out.q, ref.q, atol=1e-6)  # records: as every lane
    held = cache.held_rows(0)[0]
    assert torch.allclose(held[:, :, :1], ref.k[0, :, :, :1], atol=1e-6)  # position 0: RoPE is the identity
    assert not torch.allclose(held[:, :, 1:], ref.k[0, :, :, 1:], atol=1e-3)  # the others are held unrotated


def test_spec_words_and_a_model_without_rope() -> None:
    assert parse_spec("stream:4+window:60").options == {"sinks": 4, "window": 60}
    info = make_cache("stream:4+window:60", 1).describe()
    assert info.spec == "stream:4+window:60" and "slot" in info.explanation and info.window == 60 and info.sinks == 4
    sink_info = make_cache("sink:4+window:60", 1).describe()
    assert "original positions" in sink_info.explanation
    # GPT-2 adds learned positions at the input: nothing to re-assign, the lane is the sink lane
    lm = load_model("random:family=gpt2,layers=2,heads=4,dim=32,vocab=300,ctx=64,seed=1")
    sim = Simulator(lm.model, lm.tokenizer, list(range(1, 12)), parse_lanes("sink:2+window:4,stream:2+window:4"))
    for r in sim.run(6):
        assert r.lane("stream:2+window:4").logit_diff == 0.0
        bill = lane_bill(sim.trace.meta["lanes"][1], 2, 4, 8, r.n_tokens, r.lane("stream:2+window:4").kv_positions)
        assert bill.expected_bytes == r.lane("stream:2+window:4").cache_bytes == r.lane("sink:2+window:4").cache_bytes
