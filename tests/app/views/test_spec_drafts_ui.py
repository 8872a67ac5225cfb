"""A spec lane's drafted tokens on screen: ghost rows appended to its K/V table at the step whose forward
checked them — exactly the recorded drafted positions and tokens — faint until the check's verdict,
then the accepted ones solid (the rows the cache holds: the run's own next tokens, the very rows the
plain kv lane computes for them later) and the rejected ones struck out; the next step no longer has
the rejected ones. The readout's acceptance, tokens per forward and time per token follow the records."""

from __future__ import annotations

import time

import numpy as np
import pytest
from helpers import ready_window

LLAMA = "random:family=llama,layers=2,heads=4,kv_heads=2,dim=64,vocab=300,ctx=256,seed=11"
LANES = "kv,spec:4:lookup"
PROMPT = "the cat the cat the cat"  # on this random model: checks rejecting all, some (2 of 4) and none


class _Bot:
    """What ready_window needs of a qtbot, for one window shared by this module's tests (one run serves all)."""

    def __init__(self, qapp) -> None:
        self.qapp = qapp

    def addWidget(self, widget) -> None:  # noqa: N802 - qtbot's API
        pass  # closed by the fixture

    def waitUntil(self, condition, timeout: int = 5000) -> None:  # noqa: N802
        deadline = time.monotonic() + timeout / 1000
        while not condition():
            assert time.monotonic() < deadline, "timed out"
            self.qapp.processEvents()
            time.sleep(0.01)


@pytest.fixture(scope="module")
def window(qapp):
    w = ready_window(_Bot(qapp), qapp, LLAMA, PROMPT, lanes=LANES, size=(1600, 900))
    assert w.controller.run_steps(24), w.controller.last_error
    w.lanes.settle()
    yield w
    w.shutdown()
    w.close()


def _show(w, step: int, t: float = 1.0):
    w.session.set_cursor(step)
    panel = w.lane_panels[1]
    panel.redraw(t)
    return panel


def _checks(w, rejected: bool):
    out = []
    for r in w.session.records:
        s = r.lanes[1]
        if s.drafted and (s.accepted < s.drafted) == rejected:
            out.append(r.step)
    return out


def test_ghost_rows_are_the_recorded_drafts_and_rejected_ones_go(window) -> None:
    w = window
    s = w.session
    steps = [i for i in _checks(w, rejected=True) if i + 1 < s.n_steps]
    assert steps, "the run had no rejected draft (the test needs one)"
    assert any(0 < s.record(i).lanes[1].accepted for i in steps), "no check both accepted and rejected (the test needs one)"
    for step in steps:
        r = s.record(step)
        lane = r.lanes[1]
        n = r.n_tokens
        panel = _show(w, step)
        drawn = panel.drafts.drawn()
        # the ghost rows are the recorded drafted positions and tokens, right after the text
        assert drawn["ghost"] == list(range(n, n + lane.drafted)) == lane.drafts.positions.tolist()
        assert drawn["tokens"] == lane.drafts.token_ids.tolist()
        # solid: the cache's rows (the text and the accepted drafts); struck out: the rest
        assert drawn["solid"] == list(range(lane.cache_tokens)) == list(range(n + lane.accepted))
        assert drawn["rejected"] == list(range(n + lane.accepted, n + lane.drafted))
        assert all(part.strike.isVisible() for part in panel.drafts.parts[:3])
        # the table grew by the drafted rows, and the axis names them by their drafted tokens
        assert panel.axis.newest == n + lane.drafted - 1
        lo, hi = panel.k.vb.viewRange()[1]
        assert lo <= n and hi >= n + lane.drafted
        for i, tok in enumerate(lane.drafts.token_ids):
            assert panel._label_of(n + i) == s.id_label(int(tok))
        # the attention column: each drafted row's query over the text's keys and the drafts before it
        att = panel.drafts.attention
        assert att is not None and att.shape == (lane.drafted, n + lane.drafted)
        k_text = s.shared_rows(panel.layer, 0, n)[0]
        for i in range(lane.drafted):
            q = lane.drafts.q[panel.layer, panel.head, i].astype(np.float64)
            keys = np.concatenate([k_text, lane.drafts.k[panel.layer, 0, : i + 1]]).astype(np.float64)
            z = keys @ q / np.sqrt(q.shape[0])
            want = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
            np.testing.assert_allclose(att[i, : n + i + 1], want, rtol=1e-5, atol=1e-7)
            assert np.isnan(att[i, n + i + 1 :]).all()  # a draft does not see the drafts after it
        assert panel.a.vb.viewRange()[0][1] >= n + lane.drafted
        # the accepted drafts are the run's next tokens (what the target chose), the first rejected one is not
        run = s.tokens
        assert [int(t) for t in lane.drafts.token_ids[: lane.accepted]] == run[n : n + lane.accepted]
        assert int(lane.drafts.token_ids[lane.accepted]) != run[n + lane.accepted]
        # the next step: no rejected draft is drawn; the row at its position holds the run's own token
        nxt_record = s.record(step + 1)
        nxt, n1 = nxt_record.lanes[1], nxt_record.n_tokens
        panel = _show(w, step + 1)
        later = panel.drafts.drawn()
        after = dict(zip(later["after"], later["tokens"], strict=True))
        if nxt.drafted:  # a new check: its own drafts only
            assert later["after"] == nxt.drafts.positions.tolist() and later["tokens"] == nxt.drafts.token_ids.tolist()
        else:  # only the rows accepted ahead of the text, none rejected
            assert later["after"] == list(range(n1, nxt.cache_tokens)) and later["rejected"] == []
        for p in range(n + lane.accepted, n + lane.drafted):
            if not nxt.drafted:
                assert p not in after
            if p < n1:
                assert panel._label_of(p) == s.id_label(run[p])
        assert later["solid"] == list(range(nxt.cache_tokens))


def test_accepted_drafts_turn_solid_and_are_the_kv_lanes_rows(window) -> None:
    w = window
    s = w.session
    steps = [i for i in range(s.n_steps) if 1 < s.record(i).lanes[1].accepted < s.record(i).lanes[1].drafted]
    assert steps, "the run had no check that accepted some drafts and rejected others (the test needs one)"
    step = steps[0]
    lane = s.record(step).lanes[1]
    n = s.record(step).n_tokens
    # before the verdict: every drafted row is a ghost (faint, hatched), none solid
    panel = _show(w, step, t=0.2)
    early = panel.drafts.drawn()
    assert early["solid"] == list(range(n)) and early["rejected"] == []
    part = panel.drafts.parts[0]
    assert part.hatch.isVisible() and int(part.image.image[..., 3].max()) <= 80
    # after it: the accepted rows are drawn fully opaque, the rejected ones stay faint
    panel = _show(w, step, t=1.0)
    img = panel.drafts.parts[0].image.image
    assert (img[: lane.accepted, :, 3] == 255).all()
    assert (img[lane.accepted :, :, 3] <= 80).all()
    # the values drawn are the rows the plain kv lane computes for those tokens at its later steps
    last = n + lane.accepted
    assert last <= s.n_rows(s.n_steps - 1), "the run must go on past the accepted rows"
    for layer in range(s.config.n_layers):
        for g in range(s.config.n_kv_heads):
            k_exact, v_exact = s.shared_rows(layer, g, last)
            np.testing.assert_allclose(lane.drafts.k[layer, g, : lane.accepted], k_exact[n:last], atol=1e-4)
            np.testing.assert_allclose(lane.drafts.v[layer, g, : lane.accepted], v_exact[n:last], atol=1e-4)
    # the step after: the rows accepted ahead of the text stay solid (held by the cache), no ghost
    if lane.accepted > 1:
        panel = _show(w, step + 1)
        held = panel.drafts.drawn()
        nxt = s.record(step + 1)
        if not nxt.lanes[1].drafted:
            assert held["ghost"] == [] and held["solid"] == list(range(nxt.lanes[1].cache_tokens))
            assert held["tokens"] == lane.drafts.token_ids[1 : lane.accepted].tolist()


def test_plain_lanes_draw_no_draft_rows(window) -> None:
    w = window
    s = w.session
    for step in range(s.n_steps):
        s.set_cursor(step)
        panel = w.lane_panels[0]
        panel.redraw()
        assert panel.drafts.table is None and panel.drafts.drawn()["ghost"] == []
        assert not any(p.image.isVisible() for p in panel.drafts.parts)


def test_the_readout_says_acceptance_forwards_and_time_vs_kv(window) -> None:
    from kvsim.ui.lanes.drafts import spec_line, time_vs_kv

    w = window
    s = w.session
    last = s.n_steps - 1
    panel = _show(w, last)
    steps = [r.lanes[1] for r in s.records]
    drafted = sum(x.drafted for x in steps)
    accepted = sum(x.accepted for x in steps)
    forwards = sum(x.forwards for x in steps)
    mine, plain = time_vs_kv(s, 1, last)
    assert mine == pytest.approx(np.mean([x.wall_ms for x in steps[1:]]))
    assert plain == pytest.approx(np.mean([r.lanes[0].wall_ms for r in s.records[1:]]))
    line = spec_line(s, 1, last)
    from kvsim.ui.i18n import num

    assert f"{num(100.0 * accepted / drafted, 0)} %" in line
    assert f"{num(len(steps) / forwards, 2)} " in line
    assert f"{num(mine, 2)} ms" in line and f"kv {num(plain, 2)} ms" in line
    assert "accepted" in panel.readout.text() and "per forward" in panel.readout.text()
    assert spec_line(s, 0, last) == ""  # the kv lane says nothing of drafts
