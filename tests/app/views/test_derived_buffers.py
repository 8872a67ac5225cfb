"""The lanes' kept images (issue 24, five lanes at 60 fps): coloured rows live in persistent buffers and a
step writes only its new rows (and the rows a lossy lane's step rewrote), yet every image stays exactly what
the engine recorded. Checked against images built row by row from the session's own tables (Session.kv_rows,
q_rows, read_positions: no buffer involved) and against a fresh DerivedImages built from scratch, for a
window lane, int8, a grouped int4 lane whose steps rewrite older rows, and the shared lanes; forward, and
scrubbed back. Work is counted (rows coloured, rows written), not timed."""

from __future__ import annotations

import math
import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from kvsim.ui import theme  # noqa: E402
from kvsim.ui.lanes import derived as derived_mod  # noqa: E402
from kvsim.ui.lanes.attention import attention_rows, kv_head_of  # noqa: E402
from kvsim.ui.lanes.derived import DerivedImages, RowBuffer  # noqa: E402

MODEL = "random:family=llama,layers=2,heads=4,kv_heads=2,dim=64,ctx=512,seed=0"
LANES = "none,kv,window:16,int8,int4:g4:r2,paged:16"
STEPS = 7
SHOWN = 24  # rows drawn (a lane draws its newest MAX_ROWS; fewer here, so the drawn rows slide)


@pytest.fixture(scope="module")
def recorded():
    from kvsim.caches import parse_lanes
    from kvsim.engine.simulate import Simulator
    from kvsim.models.loading import load_model

    loaded = load_model(MODEL)
    ids = loaded.tokenizer.encode("The cache remembers what the model computed before. " * 3)[:40]
    sim = Simulator(loaded.model, loaded.tokenizer, ids, parse_lanes(LANES), model_id=MODEL, prompt_text="")
    return sim, list(sim.run(STEPS, stop_at_eos=False)), loaded.tokenizer


def _session(recorded):
    from kvsim.ui.session import RunInfo, Session

    sim, records, tok = recorded
    s = Session()
    s.start_run(RunInfo.from_trace(sim.trace.meta, sim.run_id, token_text=tok.token_text))
    return s, records


def _ref_kv(s, d: DerivedImages, lane: int, layer: int, head: int, lo: int, hi: int):
    cfg = s.config
    g = kv_head_of(head, cfg.n_heads, cfg.n_kv_heads)
    k_exact, v_exact = s.shared_rows(layer, g, max(s.prompt_len, 1))
    m = float(np.percentile(np.abs(np.concatenate([k_exact.ravel(), v_exact.ravel()])), 99)) or 1.0
    k_rows, v_rows = s.kv_rows(lane, layer, g, lo, hi)
    k = theme.colorize(k_rows, -m, m, theme.KV_CMAP)
    v = theme.colorize(v_rows, -m, m, theme.KV_CMAP)
    read = s.read_positions(lane)
    if read is not None and d.view_key(lane) != "shared":
        gone = ~np.isin(np.arange(lo, hi), read)
        k[gone, :, 3] = 0
        v[gone, :, 3] = 0
    return k, v


def _ref_attention(s, lane: int, layer: int, head: int, lo: int, hi: int) -> np.ndarray:
    """Row by row: each query row over the keys its lane read at that row's step, from Session.kv_rows."""
    cfg = s.config
    info = s.lanes[lane]
    g = kv_head_of(head, cfg.n_heads, cfg.n_kv_heads)
    f = max(1, math.ceil(hi / derived_mod.MAX_COLS))
    width = math.ceil(hi / f)
    img = np.zeros((hi - lo, width, 4), dtype=np.uint8)
    for p in range(lo, hi):
        step = s.step_of_position(p)
        n = s.n_rows(step)
        keys = s.read_positions(lane, step)
        keys = np.arange(n) if keys is None else keys
        k_all = s.kv_rows(lane, layer, g, 0, n, step=step)[0]
        window = info.window if d_own(s, lane) else None
        sinks = info.sinks if d_own(s, lane) else 0
        probs = attention_rows(
            s.q_rows(lane, layer, head, p, p + 1),
            k_all[keys],
            np.array([p]),
            keys,
            cfg.window_of(layer),
            window,
            sinks,
            scale_dim=getattr(cfg, "query_pre_attn_scalar", None),
        )[0]
        full = np.full(width * f, np.nan, dtype=np.float32)
        seen = keys <= p
        full[keys[seen]] = probs[seen]
        pooled = np.fmax.reduce(full.reshape(width, f), axis=1)
        row = theme.colorize(np.sqrt(pooled), 0.0, 1.0, theme.ATTN_CMAP)
        row[math.ceil((p + 1) / f) :] = 0
        img[p - lo] = row
    return img


def d_own(s, lane: int) -> bool:
    info = s.lanes[lane]
    return bool(info.lossy or info.evicts or info.window is not None or s.has_own_rows(lane))


def _ref_q(s, d: DerivedImages, lane: int, layer: int, head: int, lo: int, hi: int, first: int) -> np.ndarray:
    prompt = s.q_rows(0, layer, head, 0, max(s.prompt_len, 1))  # the level: from the first lane to ask (lane 0 here)
    m = float(np.percentile(np.abs(prompt), 99)) or 1.0
    rgba = theme.colorize(s.q_rows(lane, layer, head, lo, hi), -m, m, theme.KV_CMAP)
    rgba[: max(0, first - lo), :, 3] = 0
    return rgba


def _draw(d: DerivedImages, s, lane: int, layer: int, head: int):
    """What a lane panel asks for at the cursor (its newest SHOWN rows)."""
    n = s.n_rows()
    lo = max(0, n - SHOWN)
    k, v = d.kv(lane, layer, head, lo, n)
    a, a_width = d.attention(lane, layer, head, lo, n)
    q = d.q(lane, layer, head, lo, n, n - s.lane_step(lane).kv_positions)
    return lo, n, k, v, q, a, a_width


def _check(s, d: DerivedImages, selections) -> None:
    for lane in range(len(s.lanes)):
        for layer, head in selections:
            lo, n, k, v, q, a, a_width = _draw(d, s, lane, layer, head)
            rk, rv = _ref_kv(s, d, lane, layer, head, lo, n)
            np.testing.assert_array_equal(k, rk, err_msg=f"K lane {lane} step {s.cursor}")
            np.testing.assert_array_equal(v, rv, err_msg=f"V lane {lane} step {s.cursor}")
            first = n - s.lane_step(lane).kv_positions
            np.testing.assert_array_equal(q, _ref_q(s, d, lane, layer, head, lo, n, first), err_msg=f"q lane {lane}")
            np.testing.assert_array_equal(a, _ref_attention(s, lane, layer, head, lo, n), err_msg=f"attn lane {lane}")
            f = max(1, math.ceil(n / derived_mod.MAX_COLS))
            assert a_width == math.ceil(n / f) * f
            scratch = DerivedImages(s)  # a fresh one: every row coloured now, at once
            got = _draw(scratch, s, lane, layer, head)
            for mine, theirs in zip((k, v, q, a), got[2:6], strict=True):
                np.testing.assert_array_equal(mine, theirs)


# max_cols 16: attention columns max-pooled (3 keys a column at 46 rows); keep 2: buffers dropped and made again
@pytest.mark.parametrize(("max_cols", "keep"), [(512, 24), (16, 24), (512, 2)])
def test_kept_images_equal_images_built_from_scratch(recorded, qapp, monkeypatch, max_cols, keep) -> None:
    monkeypatch.setattr(derived_mod, "MAX_COLS", max_cols)
    monkeypatch.setattr(derived_mod, "KEEP_BUFFERS", keep)
    s, records = _session(recorded)
    d = DerivedImages(s)
    selections = [(0, 0), (1, 3)]
    names = [lane.name for lane in s.lanes]
    assert {"window:16", "int8", "int4:g4:r2"} <= set(names)
    for rec in records:  # played forward, every lane drawn at every step (as the panels do)
        s.add_record(rec)
        s.set_cursor(rec.step)
        _check(s, d, selections)
    # scrubbed back across the step where int4:g4:r2 rewrote older rows, then forward again
    int4 = names.index("int4:g4:r2")
    rewrote = [r.step for r in records if r.step > 0 and len(r.lanes[int4].rows.positions) > 1]
    assert rewrote, "int4:g4:r2 rewrites older rows on some step"
    for step in (rewrote[0] - 1, 0, rewrote[0], STEPS - 1, 2):
        s.set_cursor(step)
        _check(s, d, selections)
    assert max(len(d._kv_rgba), len(d._q_rgba), len(d._attn_rgba)) <= keep  # memory bounded


def test_a_step_colours_and_writes_only_its_new_rows(recorded, qapp, monkeypatch) -> None:
    s, records = _session(recorded)
    d = DerivedImages(s)
    colour_rows: list[int] = []
    colorize = theme.colorize

    def counting(values, *args, **kwargs):
        colour_rows.append(int(np.asarray(values).shape[0]))
        return colorize(values, *args, **kwargs)

    monkeypatch.setattr(theme, "colorize", counting)
    names = [lane.name for lane in s.lanes]
    int4 = names.index("int4:g4:r2")

    def buffers() -> list[RowBuffer]:
        out = list(d._attn_rgba.values()) + list(d._q_rgba.values())
        return out + [b for pair in d._kv_rgba.values() for b in pair]

    for rec in records:
        s.add_record(rec)
        s.set_cursor(rec.step)
        colour_rows.clear()
        before = {id(b): b.written for b in buffers()}
        for lane in range(len(s.lanes)):
            _draw(d, s, lane, 0, 1)
        written = {id(b): b.written - before.get(id(b), 0) for b in buffers()}
        n = s.n_rows()
        if rec.step == 0:  # the prefill: every buffer gets the rows drawn (the newest SHOWN), once
            assert set(written.values()) == {min(n, SHOWN)}
            continue
        # values: shared (none, kv, window, paged) and each lossy lane's own; attention: shared, window, int8, int4
        kv_keys = {d.values_key(lane) for lane in range(len(s.lanes))}
        views = {d.view_key(lane) for lane in range(len(s.lanes))}
        assert len(kv_keys) == 3 and len(views) == 4
        assert len(written) == 2 * len(kv_keys) + len(kv_keys) + len(views)  # K, V, q per values; attention per view
        changed = s.changed_positions(int4, rec.step - 1, rec.step)
        drawn_before = max(0, s.n_rows(rec.step - 1) - SHOWN)  # rows coloured so far: lo of the last step on
        int4_rows = int(np.count_nonzero((changed >= drawn_before) & (changed < n)))  # its new row included
        for key, (kb, vb) in d._kv_rgba.items():
            expect = int4_rows if key[0] == int4 else 1  # the new row, and rows the step rewrote (int4's groups)
            assert written[id(kb)] == written[id(vb)] == expect, (rec.step, key)
        for b in list(d._attn_rgba.values()) + list(d._q_rgba.values()):
            assert written[id(b)] == 1, rec.step  # one new query row: one attention row, one q row
        assert sum(colour_rows) == sum(written.values())  # nothing coloured that was not written, nothing twice
        assert max(colour_rows) <= max(int4_rows, 1)  # no image of SHOWN rows re-coloured
    assert any(r.step > 0 and len(r.lanes[int4].rows.positions) > 1 for r in records)


def test_rgba_bytes_passed_without_levels_draw_the_pixels_the_converted_path_drew(qapp) -> None:
    """ImagePlot hands the RGBA bytes to pyqtgraph without levels (wrapped, not converted): the QImage it
    draws holds exactly the pixels the levels=(0, 255) path (makeARGB, every pixel converted) drew."""
    import pyqtgraph as pg
    from PySide6.QtGui import QImage

    def pixels(item) -> np.ndarray:
        item.render()
        img = item.qimage.convertToFormat(QImage.Format.Format_RGBA8888)
        h, w = img.height(), img.width()
        raw = np.frombuffer(img.constBits(), dtype=np.uint8).reshape(h, img.bytesPerLine())[:, : w * 4]
        return raw.reshape(h, w, 4).copy()  # a copy while the QImage lives

    rng = np.random.default_rng(1)
    rgba = rng.integers(0, 256, (37, 23, 4), dtype=np.uint8)
    rgba[::3, :, 3] = 0  # transparent rows (evicted, masked)
    rgba[1::3, :, 3] = 255
    wrapped, converted = pg.ImageItem(axisOrder="row-major"), pg.ImageItem(axisOrder="row-major")
    wrapped.setImage(rgba, levels=None, autoLevels=False)
    converted.setImage(rgba, levels=(0, 255), autoLevels=False)
    got, old = pixels(wrapped), pixels(converted)
    opaque = rgba[..., 3] > 0  # a fully transparent pixel's colour is not drawn (and not kept the same by Qt)
    np.testing.assert_array_equal(got[opaque], rgba[opaque])
    np.testing.assert_array_equal(got[opaque], old[opaque])
    np.testing.assert_array_equal(got[..., 3], old[..., 3])
