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

from kvsim.caches import parse_lanes
from kvsim.engine.simulate import Simulator
from kvsim.engine.trace import Trace, TraceError
from kvsim.models.loading import load_model

TARGET = "random:family=llama,layers=2,heads=4,kv_heads=2,dim=64,vocab=300,ctx=256,seed=11"


@pytest.fixture(scope="module")
def run():
    loaded = load_model(TARGET)
    ids = loaded.tokenizer.encode("the cat the cat the cat")
    sim = Simulator(loaded.model, loaded.tokenizer, ids, parse_lanes("kv,spec:4:lookup"), warmup=False)
    records = list(sim.run(24, stop_at_eos=False))
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


class _Records:
    """The one thing ``draft_table`` reads of a session: its records."""

    def __init__(self, records) -> None:
        self.records = records

    def record(self, step):
        return self.records[step] if 0 <= step < len(self.records) else None


def test_the_rows_drawn_after_the_text_are_the_caches_and_old_traces_draw_none(run) -> None:
    from dataclasses import replace

    from kvsim.ui.lanes.drafts import HELD, REJECTED, draft_table

    _, records = run
    session = _Records(records)
    held_seen = 0
    for r in records:
        lane = r.lanes[1]
        table = draft_table(session, 1, r.step)
        n = r.n_tokens
        if table is None:
            assert lane.cache_tokens == n and not lane.drafted
            continue
        # kept rows after the text = the cache's rows beyond it; rejected ones only at the check itself
        assert table.kept().tolist() == list(range(n, lane.cache_tokens))
        assert table.checked == bool(lane.drafted) and (REJECTED not in table.states or lane.drafted)
        held_seen += table.states.count(HELD)
    assert held_seen, "the run never held accepted rows ahead of the text"
    assert draft_table(session, 0, records[-1].step) is None  # the kv lane
    # a trace without drafted rows (written before they were recorded): nothing drawn, no guess
    stripped = [replace(r, lanes=(r.lanes[0], replace(r.lanes[1], drafts=None))) for r in records]
    assert all(draft_table(_Records(stripped), 1, r.step) is None for r in stripped)
