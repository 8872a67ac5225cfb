"""A DeepSeek-V3.2 (sparse attention) run in the app: the attention drawn for a query is the model's own — non-zero
on the k rows its indexer chose, the rows it did not read drawn as masked (NaN) — and the memory dock's formula
equals the live bytes with the indexer keys said; the roofline's hover says rows read of rows held."""

from __future__ import annotations

import numpy as np
import torch
from helpers import ready_window

from kvsim.caches import NoCache
from kvsim.models.loading import load_model

DSA = "random:family=deepseek_v32,layers=2,heads=4,dim=64,vocab=300,ctx=128,topk=4,seed=1"


def test_the_app_draws_only_the_rows_each_query_read(qtbot, qapp, monkeypatch) -> None:
    from kvsim.costs.roofline import points_from_records
    from kvsim.ui.docks.memory.live import lane_bills

    w = ready_window(qtbot, qapp, DSA, "Once upon a time", lanes="none,kv", size=(1600, 900))
    try:
        assert w.controller.run_steps(3)
        s = w.session
        n = s.n_rows()
        for _index, live, bill in lane_bills(s):
            assert bill is not None and bill.expected_bytes == live
        assert "indexer keys" in lane_bills(s)[1][2].why
        captured: list[torch.Tensor] = []
        monkeypatch.setattr(NoCache, "observe_attention", lambda _self, _layer, probs: captured.append(probs))
        tokens = list(s.run.prompt_ids) + [r.token_id for r in s.records]
        load_model(DSA).model(torch.tensor([tokens[:n]]), torch.arange(n), NoCache(2))
        for layer in range(2):
            read = s.selected_rows(1).of(layer)
            for head in range(4):
                want = captured[layer][0, 0, head, -1].numpy()  # the model's weights, 0 on the rows not read
                got = w.derived.attention_values(1, layer, head, n - 1)
                assert np.isnan(got).sum() == n - 4 and not np.isnan(got[read]).any()
                np.testing.assert_allclose(np.nan_to_num(got), want, atol=1e-5)
        decode = [p for p in points_from_records(s.records) if p.phase == "decode" and p.lane_name == "kv"]
        assert decode and (decode[-1].held, decode[-1].context) == (n, 4)
        assert f"read 4 of {n} rows held" in decode[-1].describe()
    finally:
        w.shutdown()
