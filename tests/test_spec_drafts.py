"""What the engine records of a spec lane's drafts (``LaneStep.drafts``, drawn as ghost rows): at a check
step, the drafted positions right after the text and the tokens prompt lookup proposes there (an
independent scan of the run's text); the first ``accepted`` of them are the run's next tokens and their
K/V rows are the ones the plain kv lane computes for those tokens later; traces save and load them, and
a trace whose drafted rows do not fit its step is refused."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pytest
import torch

from kvsim.caches import parse_lanes
from kvsim.engine.simulate import Simulator
from kvsim.engine.trace import Trace, TraceError
from kvsim.models.loading import load_model

TARGET = "random:family=llama,layers=2,heads=4,kv_heads=2,dim=64,vocab=300,ctx=256,seed=11"


@pytest.fixture(scope="module")
def run():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    loaded = load_model(TARGET)
    ids = loaded.tokenizer.encode("the cat the cat the cat")
    sim = Simulator(loaded.model, loaded.tokenizer, ids, parse_lanes("kv,spec:4:lookup"), warmup=False)
    records = list(sim.run(24, stop_at_eos=False))
    torch.set_num_threads(before)
    return sim, records


def _lookup(context: list[int], k: int) -> list[int]:
    """Prompt lookup written again: the tokens after the latest earlier occurrence of the last 3-, 2-, 1-gram."""
    for size in (3, 2, 1):
        if size >= len(context):
            continue
        tail = context[-size:]
        for i in range(len(context) - size - 1, -1, -1):
            if context[i : i + size] == tail:
                return context[i + size : i + size + k]
    return []


def test_check_steps_record_the_drafted_positions_tokens_and_rows(run) -> None:
    sim, records = run
    tokens = sim.trace.token_ids()
    checks = [r for r in records if r.lanes[1].drafted]
    assert any(0 < r.lanes[1].accepted < r.lanes[1].drafted for r in checks), "needs a check that kept some drafts"
    for r in records:
        lane = r.lanes[1]
        n = r.n_tokens
        if not lane.drafted:
            assert lane.drafts is None
            continue
        d = lane.drafts
        assert d is not None and d.positions.tolist() == list(range(n, n + lane.drafted))
        assert d.token_ids.tolist() == _lookup(tokens[:n], 4)  # what lookup proposes after the text
        assert d.token_ids[: lane.accepted].tolist() == tokens[n : n + lane.accepted]  # accepted = the run's own
        if lane.accepted < lane.drafted and n + lane.accepted < len(tokens):
            assert int(d.token_ids[lane.accepted]) != tokens[n + lane.accepted]  # the first rejected one is not
        assert lane.cache_tokens == n + lane.accepted
        # the accepted rows are the kv lane's own rows for those tokens, recorded at its later steps
        for j in range(lane.accepted):
            later = next((x for x in records if x.positions[-1] == n + j), None)
            if later is None:
                continue
            np.testing.assert_allclose(d.k[:, :, j], later.k[:, :, -1], atol=1e-5)
            np.testing.assert_allclose(d.v[:, :, j], later.v[:, :, -1], atol=1e-5)
            np.testing.assert_allclose(d.q[:, :, j], later.q[:, :, -1], atol=1e-5)
    # and the plain lane never drafts
    assert all(r.lanes[0].drafts is None for r in records)


def test_drafted_rows_save_and_load(run, tmp_path) -> None:
    sim, records = run
    path = sim.trace.save(tmp_path / "spec.kvsim")
    loaded = Trace.load(path)
    for a, b in zip(records, loaded.records, strict=True):
        x, y = a.lanes[1].drafts, b.lanes[1].drafts
        assert (x is None) == (y is None)
        if x is not None and y is not None:
            for name in ("positions", "token_ids", "k", "v", "q"):
                np.testing.assert_array_equal(getattr(x, name), getattr(y, name))


def test_a_trace_whose_drafts_do_not_fit_is_refused(run, tmp_path) -> None:
    sim, records = run
    path = sim.trace.save(tmp_path / "spec.kvsim")
    step = next(i for i, r in enumerate(records) if r.lanes[1].drafted)
    with zipfile.ZipFile(path) as zf:
        manifest = json.loads(zf.read("manifest.json"))
        arrays = dict(np.load(io.BytesIO(zf.read("arrays.npz"))))
    arrays[f"s{step}_l1_draft_positions"] = arrays[f"s{step}_l1_draft_positions"] + 1  # one row off
    bad = tmp_path / "bad.kvsim"
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("manifest.json", json.dumps(manifest))
        zf.writestr("arrays.npz", buf.getvalue())
    with pytest.raises(TraceError, match="drafted rows do not fit"):
        Trace.load(bad)
