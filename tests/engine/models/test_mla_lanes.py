"""A latent-attention (mla) model in the lanes: the kv lane caches the latent (one r + d_R row per token and
layer), its bytes are the closed form L · (r + d_R) · n · bytes, its tokens and logits those of the uncached
lane; the counts are MLA's (torch's own FLOP counter agrees); policies that keep K and V per head refuse in
one line; the app draws the latent table with its words, attention equal to the model's expanded path."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from kvsim.caches import KVCache, NoCache
from kvsim.engine.counting import step_cost
from kvsim.engine.simulate import SimulationError, Simulator, parse_lanes
from kvsim.engine.trace import Trace
from kvsim.models.attention.mla import MLAAttention
from kvsim.models.loading import load_model

MLA = "random:family=mla,layers=3,heads=4,dim=32,vocab=300,ctx=256,latent=20,rope_dim=6,seed=3"  # d = 8, r = 20, d_R = 6


def test_kv_on_mla_caches_the_latent_same_tokens_and_logits_as_uncached(tmp_path) -> None:
    lm = load_model(MLA)
    cfg = lm.model.cfg
    assert (cfg.kv_lora_rank, cfg.qk_rope_head_dim, cfg.head_dim, cfg.n_kv_heads) == (20, 6, 8, 1)
    ids = torch.randint(0, 300, (15,), generator=torch.Generator().manual_seed(2)).tolist()
    sim = Simulator(lm.model, lm.tokenizer, ids, parse_lanes("none,kv"))
    records = list(sim.run(10, stop_at_eos=False))
    for r in records:
        n = r.n_tokens
        none, kv = r.lane("none"), r.lane("kv")
        assert kv.token_id == none.token_id == r.token_id
        assert kv.logit_diff < 1e-5
        assert kv.cache_bytes == 3 * (20 + 6) * n * 4 and kv.cache_tokens == n  # L · (r + d_R) · n · fp32
        assert none.cache_bytes == 0
        assert r.k.shape == (3, 1, len(r.positions), 26) and r.q.shape == (3, 4, len(r.positions), 26)
        assert kv.flops == step_cost(cfg, new=kv.kv_positions, context=n, out=1).matmul_flops
        assert kv.bytes_by_component["kv_read"] == 3 * 26 * n * 4  # reads the latents, not 2 · H_kv · d
    # the recorded K rows are the latents the model computes: [RMSNorm(c) | RoPE(k_R)] of the last position
    model = lm.model
    tokens = sim.trace.token_ids()
    cache = KVCache(cfg.n_layers)
    model(torch.tensor([tokens[:-1]]), torch.arange(len(tokens) - 1), cache)
    for layer in range(3):
        stored = cache.stored(layer)[0][0, 0]  # (n, r + d_R)
        got = np.concatenate([r.k[layer, 0] for r in records])
        np.testing.assert_allclose(got, stored.numpy(), atol=1e-5)  # one forward vs step by step: rounding
    sim.trace.save(tmp_path / "mla.kvsim")
    back = Trace.load(tmp_path / "mla.kvsim")
    assert [r.lane("kv").cache_bytes for r in back.records] == [r.lane("kv").cache_bytes for r in records]


def test_mla_counts_match_torchs_counter() -> None:
    """Absorbed MLA as the model runs it: wq, wkv_a, W_UKᵀ q, scores over r + d_R, Σ p c, W_UV, W_O."""
    model = load_model(MLA).model
    cfg = model.cfg
    ids = torch.randint(0, 300, (1, 23), generator=torch.Generator().manual_seed(1))

    def counted(fn) -> int:
        with FlopCounterMode(display=False) as counter:
            fn()
        return counter.get_total_flops()

    cache = KVCache(cfg.n_layers)
    assert counted(lambda: model(ids[:, :17], torch.arange(17), cache, last_only=True)) == step_cost(cfg, 17, 17, 1).matmul_flops
    for t in range(17, 20):
        got = counted(lambda t=t: model(ids[:, t : t + 1], torch.arange(t, t + 1), cache, last_only=True))
        assert got == step_cost(cfg, 1, t + 1, 1).matmul_flops
    assert counted(lambda: model(ids, torch.arange(23), NoCache(cfg.n_layers))) == step_cost(cfg, 23, 23, 23).matmul_flops
    llama_like = step_cost(load_model("random:family=llama,layers=3,heads=4,kv_heads=1,dim=32,vocab=300").model.cfg, 1, 40)
    assert step_cost(cfg, 1, 40).bytes["kv_read"] != llama_like.bytes["kv_read"]  # not Llama's formula


@pytest.mark.parametrize("lanes", ["none,window:4", "kv,int8", "kv,h2o:4:r4", "kv,paged:4", "kv,sink:1+window:3", "kv@w8"])
def test_policies_that_keep_k_and_v_per_head_refuse_in_one_line(lanes: str) -> None:
    lm = load_model(MLA)
    with pytest.raises(SimulationError, match="latent-attention") as err:
        Simulator(lm.model, lm.tokenizer, [1, 2, 3], parse_lanes(lanes))
    assert "\n" not in str(err.value) and "only the lanes none and kv" in str(err.value)


def test_the_cli_runs_an_mla_model_and_refuses_a_window_lane(capsys) -> None:
    from helpers import kvsim_in_process

    run = ["run", "--model", MLA, "--prompt", "hello there", "--steps", "3"]
    ok = kvsim_in_process(capsys, *run, "--lanes", "none,kv")
    assert ok.returncode == 0, ok.stderr
    assert "tokens chosen by every lane: identical" in ok.stdout
    bad = kvsim_in_process(capsys, *run, "--lanes", "none,window:4")
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0 and bad.stderr.startswith("error:")
    assert "Traceback" not in bad.stderr


def test_the_app_draws_the_latent_table_and_its_attention(qtbot, qapp, monkeypatch) -> None:
    from helpers import ready_window

    from kvsim.ui.docks.memory.live import lane_bills

    w = ready_window(qtbot, qapp, MLA, "Once upon a time", lanes="none,kv", size=(1600, 900))
    assert w.controller.run_steps(4)
    s = w.session
    n = s.n_rows()
    panel = w.lane_panels[1]
    panel.redraw()
    assert panel.k.image.image.shape[:2] == (n, 26)  # one latent row per token: r + d_R = 26 wide, not d = 8
    assert "latent" in panel.titles[0].text and "latent" in panel.titles[0].toolTip()
    for _index, live, bill in lane_bills(s):  # the memory dock's check: formula = live for both lanes
        assert bill is not None and bill.expected_bytes == live
    assert lane_bills(s)[1][1] == 3 * 26 * n * 4
    # attention drawn = the model's own, computed the expanded way (every head's K and V rebuilt from the latents)
    captured: list[torch.Tensor] = []
    original = torch.softmax

    def spy(x, dim=-1, **kw):  # type: ignore[no-untyped-def]
        out = original(x, dim=dim, **kw)
        captured.append(out.detach())
        return out

    model = load_model(MLA).model
    monkeypatch.setattr(MLAAttention, "absorbed", False)
    monkeypatch.setattr(torch, "softmax", spy)
    tokens = list(s.run.prompt_ids) + [r.token_id for r in s.records]
    model(torch.tensor([tokens[:n]]), torch.arange(n), NoCache(3))
    monkeypatch.setattr(torch, "softmax", original)
    for layer in range(3):
        for head in range(4):
            want = captured[layer][0, 0, head, -1].numpy()
            got = w.derived.attention_values(1, layer, head, n - 1)
            np.testing.assert_allclose(got, want, atol=1e-5)
    w.shutdown()
