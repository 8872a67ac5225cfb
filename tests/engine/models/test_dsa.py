"""DeepSeek Sparse Attention (``family=deepseek_v32``) in kvsim's engine: the kv and none lanes read the same rows
and give the same logits even where the indexer's ReLU makes rows tie at exactly 0 (a stable order breaks the ties;
``topk`` broke them by the step's shape and the lanes drifted apart by 3e-2 on the app's preset); the counts are what
torch's FLOP counter sees; the rows read survive a trace's save and load and a damaged record is refused; the config
refuses what does not fit. Parity with transformers: ``tests/reference/test_deepseek_v32.py``."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from kvsim.caches import KVCache, NoCache
from kvsim.engine.counting import sparse_rows_read, step_cost
from kvsim.engine.records import SelectedRows
from kvsim.engine.simulate import Simulator, parse_lanes
from kvsim.engine.trace import Trace, TraceError
from kvsim.models.attention import dsa
from kvsim.models.config import ConfigError, parse_random_spec
from kvsim.models.loading import load_model
from kvsim.models.words import described

# two indexer heads: a row's score is exactly 0 whenever both heads' ReLUs are, about one row in four
DSA = "random:family=deepseek_v32,layers=2,heads=4,dim=64,vocab=300,ctx=128,index_heads=2,topk=6,seed=3"


def _ids(n: int) -> list[int]:
    return torch.randint(0, 300, (n,), generator=torch.Generator().manual_seed(2)).tolist()


def test_kv_and_none_read_the_same_rows_through_ties(tmp_path, monkeypatch) -> None:
    lm = load_model(DSA)
    model = lm.model
    ids = _ids(30)
    scores = []  # the indexer's scores, to see the ties are there
    real = dsa.LightningIndexer.scores
    monkeypatch.setattr(dsa.LightningIndexer, "scores", lambda *a: scores.append(real(*a)) or scores[-1])
    sim = Simulator(model, lm.tokenizer, ids, parse_lanes("none,kv"), warmup=False)
    records = list(sim.run(5, stop_at_eos=False))
    assert int((scores[0] == 0).sum()) > 20  # many rows tie at exactly 0
    for r in records:
        none, kv = r.lane("none"), r.lane("kv")
        assert kv.logit_diff < 1e-5 and kv.token_id == none.token_id
        assert np.array_equal(none.selected.positions, kv.selected.positions)
        n = r.n_tokens
        if r.phase == "decode":
            assert kv.context == min(6, n) and none.context >= kv.context  # none recomputes, its queries read more
    sim.trace.save(tmp_path / "dsa.kvsim")
    back = Trace.load(tmp_path / "dsa.kvsim")
    for a, b in zip(records, back.records, strict=True):
        assert np.array_equal(a.lane("kv").selected.positions, b.lane("kv").selected.positions)
    # a record whose query read a row after its own position is refused
    last = back.records[-1]
    bad = last.lane("kv").selected.positions.copy()
    bad[0, -1, 0] = last.n_tokens - 1 if bad[0, -1, -1] != last.n_tokens - 1 else 0
    bad[0, -1].sort()
    future = SelectedRows(positions=np.where(bad == bad.max(), last.n_tokens, bad).astype(np.int32))
    lanes = tuple(dataclasses.replace(ls, selected=future) if ls.name == "kv" else ls for ls in last.lanes)
    back.records[-1] = dataclasses.replace(last, lanes=lanes)
    back.save(tmp_path / "bad.kvsim")
    with pytest.raises(TraceError, match="rows read"):
        Trace.load(tmp_path / "bad.kvsim")


def test_counts_match_torchs_counter() -> None:
    """The query through q_lora, the indexer over every held row, MLA over the k rows each query gathered."""
    model = load_model(DSA).model
    cfg = model.cfg
    ids = torch.tensor([_ids(15)])

    def counted(fn) -> int:
        with FlopCounterMode(display=False) as counter:
            fn()
        return counter.get_total_flops()

    cache = KVCache(cfg.n_layers)
    assert counted(lambda: model(ids[:, :11], torch.arange(11), cache, last_only=True)) == step_cost(cfg, 11, 11, 1).matmul_flops
    for t in range(11, 13):
        got = counted(lambda t=t: model(ids[:, t : t + 1], torch.arange(t, t + 1), cache, last_only=True))
        assert got == step_cost(cfg, 1, t + 1, 1).matmul_flops
    assert counted(lambda: model(ids, torch.arange(15), NoCache(cfg.n_layers))) == step_cost(cfg, 15, 15, 15).matmul_flops
    assert [sparse_rows_read(cfg, 1, n) for n in (3, 6, 40)] == [3, 6, 6]  # a decode step: min(k, n)
    dense = step_cost(load_model("random:family=mla,layers=2,heads=4,dim=64,vocab=300,seed=3").model.cfg, 1, 40)
    sparse = step_cost(cfg, 1, 40)
    assert sparse.bytes["kv_read"] * 40 == dense.bytes["kv_read"] * 6  # 6 latents of 40 read
    assert sparse.bytes["index_read"] == 2 * cfg.index_head_dim * 40 * 4  # every indexer key


def test_config_words_and_refusals() -> None:
    cfg, _ = parse_random_spec("random:family=deepseek_v32,layers=2,heads=8,dim=256")
    assert (cfg.q_lora_rank, cfg.index_heads, cfg.index_head_dim, cfg.index_topk, cfg.n_kv_heads) == (64, 4, 32, 16, 1)
    assert cfg.latent and cfg.row_width == cfg.kv_lora_rank + cfg.qk_rope_head_dim
    assert "q_lora_rank" not in parse_random_spec("random:family=mla")[0].to_dict()  # other families' traces unchanged
    assert "reads only its top 16 rows" in described(cfg.to_dict())[0]
    for spec, message in (
        ("random:family=deepseek_v32,rope_dim=16,index_dim=8", "index_head_dim must be at least"),
        ("random:family=deepseek_v32,topk=0", "index_topk must be a positive integer"),
        ("random:family=mla,topk=4", "are for family=deepseek_v32"),
        ("random:family=llama,q_lora=8", "are for family=deepseek_v32"),
        ("random:family=deepseek_v32,kv_heads=2", "one latent per token"),
    ):
        with pytest.raises(ConfigError, match=message):
            parse_random_spec(spec)
