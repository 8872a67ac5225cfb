"""Disaggregated prefill and decode (``kvsim.serving.disagg``): the decode instance in its own process, the rows
moved through shared memory, gives the colocated run's tokens; every transfer's bytes are the request's blocks.
One spawned process serves the whole file (it loads tiny itself)."""

from __future__ import annotations

from kvsim.serving.disagg import run_colocated, run_disaggregated

PROMPTS = [
    [5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23],
    [30, 31, 32, 33, 34],
    [40, 41, 42, 43, 44, 45, 46],
]


def test_disaggregated_tokens_equal_colocated_and_transfers_are_counted(tiny) -> None:
    model, tokenizer = tiny.model, tiny.tokenizer
    colocated = run_colocated(model, tokenizer, PROMPTS, steps=4, block_size=8)
    split = run_disaggregated("tiny", model, tokenizer, PROMPTS, steps=4, block_size=8)
    assert [r.tokens for r in split.requests] == [r.tokens for r in colocated.requests]
    assert all(len(r.tokens) == 4 and len(r.itl_ms) == 3 for r in split.requests)
    cfg = model.cfg
    block_bytes = 2 * cfg.n_layers * 8 * cfg.n_kv_heads * cfg.head_dim * model.dtype.itemsize
    assert [t.blocks for t in split.transfers] == [3, 1, 1]  # ceil(prompt / 8) blocks each
    assert all(t.nbytes == t.blocks * block_bytes and t.delivered_ms >= t.pack_ms >= 0 for t in split.transfers)
    # the first token comes out of the prefill, before the rows leave; the second cannot come before they arrive
    for r, t in zip(split.requests, split.transfers, strict=True):
        assert r.token_ms[0] <= t.arrived_ms <= r.token_ms[1]
    data = split.as_dict()
    assert data["transfer_bytes"] == sum(t.nbytes for t in split.transfers) and data["mode"] == "disaggregated"
