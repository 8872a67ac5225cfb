"""The record's cheaper ranks (issue 37): ``argmax``, ``top`` and ``top_of_exp`` give exactly torch's answers
(``torch.argmax``, ``torch.topk``, ``torch.topk(logp.exp(), k)``), ties, NaN and infinities included, and a run's
records hold those answers."""

from __future__ import annotations

import numpy as np
import torch

from kvsim.caches import NoCache, parse_lanes
from kvsim.core.sampling import argmax, top, top_of_exp
from kvsim.engine.simulate import Simulator
from kvsim.models.loading import load_model


def _vectors(seed: int):
    """Vocabulary-sized vectors with and without ties, NaN and infinities (the fast paths and their fallbacks)."""
    gen = torch.Generator().manual_seed(seed)
    for trial in range(60):
        n = (49152, 50001, 20480, 300)[trial % 4]
        kind = trial % 5
        if kind == 0:
            x = torch.randint(0, 30, (n,), generator=gen).float()  # many ties
        elif kind == 1:
            x = torch.full((n,), 0.25)
        else:
            x = torch.randn(n, generator=gen) * (0.05, 3.0, 30.0)[kind - 2]
        if trial % 7 == 0:
            x[int(torch.randint(0, n, (1,), generator=gen))] = float("nan")
        if trial % 11 == 0:
            x[n - 1] = float("inf")
            x[0] = -float("inf")
        yield x


def test_argmax_and_top_are_torchs() -> None:
    for x in _vectors(0):
        assert argmax(x) == int(torch.argmax(x))
        for k in (1, 5, 12):
            values, index = top(x, k)
            want = torch.topk(x, k)
            assert torch.equal(index, want.indices)
            assert torch.equal(values.nan_to_num(7.0), want.values.nan_to_num(7.0))
            assert values.dtype == want.values.dtype and index.dtype == want.indices.dtype


def test_top_of_exp_is_topk_of_the_whole_exp() -> None:
    for x in _vectors(1):
        if not torch.isfinite(x).all():
            continue  # the simulator stops on non-finite logits before ranking
        logp = torch.log_softmax(x, -1)
        for k in (1, 5, 10):
            values, index = top_of_exp(logp, k)
            want = torch.topk(logp.exp(), k)
            assert torch.equal(index, want.indices) and torch.equal(values, want.values)


def test_a_runs_records_hold_topks_answer() -> None:
    """A model with a 9,000-token vocabulary (the fast path's size): each step's top-5 are torch.topk's of the
    reference lane's exp(log-softmax), recomputed from a second forward of the same model."""
    loaded = load_model("random:family=llama,layers=1,heads=2,kv_heads=1,dim=16,vocab=9000,ctx=64,seed=4")
    model = loaded.model
    sim = Simulator(model, loaded.tokenizer, [1, 2, 3, 4], parse_lanes("kv,none"))
    records = list(sim.run(4, stop_at_eos=False))
    for record in records:
        seq = torch.tensor([sim.tokens[: len(sim.tokens) - (len(records) - record.step)]])
        logits = model(seq, torch.arange(seq.shape[1]), NoCache(model.cfg.n_layers), last_only=True).logits[0, -1].float()
        want = torch.topk(torch.log_softmax(logits, -1).exp(), 5)
        lane = record.lanes[1]  # the uncached lane recomputes what the fresh forward does
        assert lane.top_ids == tuple(want.indices.tolist())
        np.testing.assert_allclose(lane.top_probs, want.values.tolist(), rtol=1e-5)
