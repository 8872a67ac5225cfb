"""Images the lanes draw, derived from the session's rows and memoised. Per lane, not shared:

* a lane that holds exactly the shared rows and reads every key (no cache, the KV cache) shares
  its images with every other such lane — the values are the same, only the overlays differ;
* a lane whose rows differ (lossy) or that reads fewer keys (evicting, windowed) gets its own:
  its K/V tables as it held them at the cursor (evicted rows left transparent), and attention
  rows derived from its own queries over the keys it could see at the step each row was the query.

Attention is recomputed from stored Q and K exactly as the model computes it (softmax(q·Kᵀ/√d)),
so a trace stays O(n). A row never changes once computed, so coloured rows are kept.

Coloured rows live in persistent buffers (``RowBuffer``, one per image kind, lanes with the same values
share one): a step colours only its new rows (and a lossy lane's rows that the step changed) and an image
of rows lo..hi-1 is a slice of the buffer, not rows rebuilt and converted one by one.
"""

from __future__ import annotations

import math
from typing import cast

import numpy as np

from .. import theme
from .attention import AttentionRows, attention_rows, kv_head_of

MAX_COLS = 512  # attention columns drawn at most (max-pooled beyond)
KEEP_BUFFERS = 24  # kept row buffers of one kind at most (the oldest dropped: a head not viewed lately)


def _pool_cols(mat: np.ndarray, f: int) -> np.ndarray:
    """Max-pool columns by ``f`` (NaN = masked is ignored unless a whole block is masked)."""
    n = mat.shape[1]
    if f <= 1:
        return mat
    pad = (-n) % f
    if pad:
        mat = np.concatenate([mat, np.full((mat.shape[0], pad), np.nan, np.float32)], axis=1)
    return np.fmax.reduce(mat.reshape(mat.shape[0], -1, f), axis=2)


class RowBuffer:
    """Coloured RGBA rows of one image kind, kept for the run: row p is written when first needed (again
    only when its values change) and an image of rows lo..hi-1 is ``buf[lo:hi]``. Capacity doubles as rows
    arrive; ``written`` counts rows written (tests count the work a step does, not its time)."""

    def __init__(self, width: int) -> None:
        self.buf = np.zeros((0, width, 4), dtype=np.uint8)
        self.have = np.zeros(0, dtype=bool)
        self.written = 0
        self.step: int | None = None  # a lossy lane's K/V: the step whose rows the buffer holds

    def reserve(self, n: int) -> None:
        cap = self.buf.shape[0]
        if n > cap:  # a quarter more than asked at first (a run's decode rows arrive without a copy), then doubling
            cap = max(n + n // 4, 2 * cap, 64)
            buf = np.zeros((cap, *self.buf.shape[1:]), dtype=np.uint8)
            buf[: self.buf.shape[0]] = self.buf
            have = np.zeros(cap, dtype=bool)
            have[: self.have.shape[0]] = self.have
            self.buf, self.have = buf, have

    def missing(self, lo: int, hi: int) -> np.ndarray:
        """Positions in lo..hi-1 not written yet."""
        self.reserve(hi)
        return lo + np.flatnonzero(~self.have[lo:hi])

    def write(self, positions: np.ndarray, rgba: np.ndarray) -> None:
        """Rows at ``positions`` (rgba: one row each, as wide as the buffer or narrower: the rest transparent)."""
        positions = np.asarray(positions, dtype=np.int64)
        if positions.size == 0:
            return
        self.reserve(int(positions.max()) + 1)
        w = rgba.shape[1]
        self.buf[positions, :w] = rgba
        if w < self.buf.shape[1]:
            self.buf[positions, w:] = 0
        self.have[positions] = True
        self.written += positions.size


def _kept(store: dict, key, make):
    """``store[key]``, made if missing; a store holds KEEP_BUFFERS at most (the oldest made is dropped and
    would be coloured again if drawn again): memory stays bounded however many heads are viewed."""
    value = store.get(key)
    if value is None:
        while len(store) >= KEEP_BUFFERS:
            store.pop(next(iter(store)))
        value = store[key] = make()
    return value


def _runs(positions: np.ndarray) -> list[tuple[int, int]]:
    """Sorted positions as [a, b) runs of consecutive ones."""
    if positions.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(positions) != 1)
    starts = np.concatenate([[0], breaks + 1])
    ends = np.concatenate([breaks + 1, [positions.size]])
    return [(int(positions[a]), int(positions[b - 1]) + 1) for a, b in zip(starts, ends, strict=True)]


class DerivedImages:
    def __init__(self, session) -> None:
        self.session = session
        self._rows: dict[tuple, dict[int, np.ndarray] | AttentionRows] = {}
        self._memo: dict[tuple, object] = {}
        self._attn_rgba: dict[tuple, RowBuffer] = {}
        self._kv_rgba: dict[tuple, tuple[RowBuffer, RowBuffer]] = {}
        self._q_rgba: dict[tuple, RowBuffer] = {}
        self._k_tables: dict[tuple, list] = {}  # a lossy lane's K as of one step (attention of its own rows)
        self.levels: dict[tuple[int, int], float] = {}
        self.show_error = False  # lossy lanes: draw K/V minus the exact rows instead of the rows
        self.error_levels: dict[tuple, float] = {}
        self.q_levels: dict[tuple[int, int], float] = {}
        session.run_started.connect(self.clear)
        theme.on_change(self._retheme)

    def _retheme(self, _name: str) -> None:
        """Colours are baked into the kept images: a new theme colours them again (values stay)."""
        self._memo.clear()
        self._attn_rgba.clear()
        self._kv_rgba.clear()
        self._q_rgba.clear()

    def set_show_error(self, on: bool) -> None:
        self.show_error = bool(on)
        self._memo.clear()

    def clear(self) -> None:
        self._rows.clear()
        self._k_tables.clear()
        self._memo.clear()
        self._attn_rgba.clear()
        self._kv_rgba.clear()
        self._q_rgba.clear()
        self.levels.clear()
        self.q_levels.clear()

    def _own_view(self, lane: int) -> bool:
        info = self.session.lanes[lane]
        sparse = getattr(self.session.config, "family", "") == "deepseek_v32"  # each query reads its own top-k rows
        return info.lossy or info.evicts or info.window is not None or sparse or self.session.has_own_rows(lane)

    def view_key(self, lane: int) -> int | str:
        """Lanes with the same key draw the same images."""
        return lane if self._own_view(lane) else "shared"

    def values_key(self, lane: int) -> int | str:
        """Lanes with the same key hold the same K/V/Q values (a window lane holds the shared rows, fewer of them)."""
        return lane if self.session.has_own_rows(lane) else "shared"

    def _kv_buffers(self, lane: int, layer: int, g: int) -> tuple[RowBuffer, RowBuffer]:
        """The coloured K and V rows of ``lane``'s values at the cursor (rows 0..n-1 all valid for that step)."""
        s = self.session
        key = (self.values_key(lane), layer, g)
        d = s.config.row_width
        kb, vb = _kept(self._kv_rgba, key, lambda: (RowBuffer(d), RowBuffer(d)))
        if s.has_own_rows(lane) and kb.step != s.cursor:  # a lossy lane: rows its steps since changed
            if kb.step is not None:
                lo_step, hi_step = sorted((kb.step, s.cursor))
                changed = s.changed_positions(lane, lo_step, hi_step)
                changed = changed[changed < kb.have.shape[0]]
                self._write_kv(kb, vb, lane, layer, g, changed[kb.have[changed]])
            kb.step = vb.step = s.cursor
        return kb, vb

    def _write_kv(self, kb: RowBuffer, vb: RowBuffer, lane: int, layer: int, g: int, positions: np.ndarray) -> None:
        """Colour ``lane``'s K and V rows at ``positions`` (sorted) into the kept buffers, a run at a time."""
        m = self._kv_level(layer, g)
        for a, b in _runs(positions):
            k_rows, v_rows = self.session.kv_rows(lane, layer, g, a, b)
            kb.write(np.arange(a, b), theme.colorize(k_rows, -m, m, theme.KV_CMAP))
            vb.write(np.arange(a, b), theme.colorize(v_rows, -m, m, theme.KV_CMAP))

    def _fill_kv(self, lane: int, layer: int, g: int, lo: int, hi: int) -> tuple[RowBuffer, RowBuffer]:
        kb, vb = self._kv_buffers(lane, layer, g)
        self._write_kv(kb, vb, lane, layer, g, kb.missing(lo, hi))
        return kb, vb

    def _kv_level(self, layer: int, kv_head: int) -> float:
        """Symmetric colour level for a (layer, kv head), fixed for the run from the exact prefill
        rows, the same for every lane so that their colours compare."""
        key = (layer, kv_head)
        if key not in self.levels:
            k, v = self.session.shared_rows(layer, kv_head, max(self.session.prompt_len, 1))
            self.levels[key] = float(np.percentile(np.abs(np.concatenate([k.ravel(), v.ravel()])), 99)) or 1.0
        return self.levels[key]

    def kv(self, lane: int, layer: int, head: int, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """RGBA of the K and V rows lo..hi-1 this lane held at the cursor (evicted rows transparent)."""
        s = self.session
        cfg = s.config
        g = kv_head_of(head, cfg.n_heads, cfg.n_kv_heads)
        own = self._own_view(lane)
        error = self.show_error and s.has_own_rows(lane)
        key = ("kv", self.view_key(lane), layer, g, lo, hi, s.cursor if own else None, error)
        if key not in self._memo:
            if error:  # the error against full precision, on its own symmetric scale (named in the title)
                k_rows, v_rows = s.kv_rows(lane, layer, g, lo, hi)
                k_exact, v_exact = s.shared_rows(layer, g, hi)
                k_rows, v_rows = k_rows - k_exact[lo:], v_rows - v_exact[lo:]
                m = float(np.percentile(np.abs(np.concatenate([k_rows.ravel(), v_rows.ravel()])), 99)) or 1e-9
                self.error_levels[(lane, layer, g)] = m
                k = theme.colorize(k_rows, -m, m, theme.KV_CMAP)
                v = theme.colorize(v_rows, -m, m, theme.KV_CMAP)
            else:  # the kept coloured rows: only rows not coloured yet (a step's new rows) are coloured now
                kb, vb = self._fill_kv(lane, layer, g, lo, hi)
                k, v = kb.buf[lo:hi], vb.buf[lo:hi]
                if own:  # a copy: a lossy lane's kept rows change with the cursor, a window lane's evicted rows are cleared
                    k, v = k.copy(), v.copy()
            read = s.read_positions(lane) if own else None
            if read is not None:
                gone = np.ones(hi - lo, dtype=bool)
                inside = read[(read >= lo) & (read < hi)]
                gone[inside - lo] = False
                k[gone, :, 3] = 0
                v[gone, :, 3] = 0
            self._remember(key, (k, v))
        return cast("tuple[np.ndarray, np.ndarray]", self._memo[key])

    def q(self, lane: int, layer: int, head: int, lo: int, hi: int, first: int) -> np.ndarray:
        """RGBA of the query rows lo..hi-1 of ``head``, drawn only from row ``first`` on (the rows this lane
        computed this step: Q is never cached); symmetric levels of its own, fixed from the prompt's rows."""
        s = self.session
        key = ("q", self.view_key(lane), layer, head, lo, hi, first)
        if key not in self._memo:
            if (layer, head) not in self.q_levels:
                prompt = s.q_rows(lane, layer, head, 0, max(s.prompt_len, 1))
                self.q_levels[(layer, head)] = float(np.percentile(np.abs(prompt), 99)) or 1.0
            m = self.q_levels[(layer, head)]
            buf = _kept(self._q_rgba, (self.values_key(lane), layer, head), lambda: RowBuffer(s.config.row_width))
            for a, b in _runs(buf.missing(lo, hi)):
                buf.write(np.arange(a, b), theme.colorize(s.q_rows(lane, layer, head, a, b), -m, m, theme.KV_CMAP))
            rgba = buf.buf[lo:hi].copy()
            rgba[: max(0, first - lo), :, 3] = 0
            self._remember(key, rgba)
        return cast("np.ndarray", self._memo[key])

    def attention(self, lane: int, layer: int, head: int, lo: int, hi: int) -> tuple[np.ndarray, float]:
        """RGBA of attention rows lo..hi-1 over keys 0..hi-1, and the image's width in key units.

        Beyond MAX_COLS keys, columns are max-pooled by f = ceil(n / MAX_COLS). A row never changes
        once computed, so its coloured (pooled) pixels are kept: a new step colours one new row.
        """
        view = self.view_key(lane)
        key = ("attn", view, layer, head, lo, hi)
        if key in self._memo:
            return cast("tuple[np.ndarray, float]", self._memo[key])
        f = max(1, math.ceil(hi / MAX_COLS))
        width = math.ceil(hi / f)
        # as wide as the pooled columns can get (a longer run pools more keys a column)
        buf = _kept(self._attn_rgba, (view, layer, head, f), lambda: RowBuffer(MAX_COLS))
        missing = buf.missing(lo, hi)
        if missing.size:
            a, b = int(missing[0]), int(missing[-1]) + 1
            mat = _pool_cols(self.rows(lane, layer, head, a, b), f)
            rgba = theme.colorize(np.sqrt(mat), 0.0, 1.0, theme.ATTN_CMAP)  # colour ∝ √p (see legend)
            own_cols = np.ceil((np.arange(a, b) + 1) / f).astype(np.int64)  # row p: keys 0..p, pooled
            rgba[np.arange(rgba.shape[1])[None, :] >= own_cols[:, None]] = 0  # transparent = masked (hatched behind)
            buf.write(np.arange(a, b), rgba)
        img = buf.buf[lo:hi, :width]
        self._remember(key, (img if width == buf.buf.shape[1] else np.ascontiguousarray(img), float(width * f)))
        return cast("tuple[np.ndarray, float]", self._memo[key])

    def rows(self, lane: int, layer: int, head: int, a: int, b: int) -> np.ndarray:
        """Exact attention probabilities of query rows a..b-1 over keys 0..b-1 (NaN: not seen)."""
        s = self.session
        cfg = s.config
        g = kv_head_of(head, cfg.n_heads, cfg.n_kv_heads)
        if not self._own_view(lane):
            scale_dim = getattr(cfg, "query_pre_attn_scalar", None)  # the model's own score scale (MLA: d + d_R)
            rows = self._rows.setdefault(("shared", layer, head), AttentionRows(cfg.window_of(layer), scale_dim))
            assert isinstance(rows, AttentionRows)  # the "shared" keys hold AttentionRows, a lane's keys its own rows
            return rows.rows(s.q_rows(lane, layer, head, 0, b), s.shared_rows(layer, g, b)[0], a, b, b)
        done = self._rows.setdefault((lane, layer, head), {})
        assert isinstance(done, dict)  # a lane's keys hold its own rows, the "shared" keys AttentionRows
        out = np.full((b - a, b), np.nan, dtype=np.float32)
        info = s.lanes[lane]
        p = a
        while p < b:
            step = s.step_of_position(p)
            end = min(b, s.n_rows(step))  # the queries of one step: the prompt's, or one decode row
            if any(q not in done for q in range(p, end)):
                n = s.n_rows(step)
                keys = s.read_positions(lane, step)
                keys = np.arange(n) if keys is None else keys
                k_all = (
                    self._keys_at(lane, layer, g, n, step)
                    if s.has_own_rows(lane)
                    else s.kv_rows(lane, layer, g, 0, n, step=step)[0]
                )
                chosen = s.selected_rows(lane, step)
                if chosen is not None:  # sparse attention: each query read only the rows its indexer chose
                    first = n - chosen.positions.shape[1]  # the position of the step's first query
                    for q in range(p, end):
                        read = chosen.of(layer, q - first)
                        block = attention_rows(
                            s.q_rows(lane, layer, head, q, q + 1),
                            k_all[read],
                            np.array([q]),
                            read,
                            scale_dim=getattr(cfg, "query_pre_attn_scalar", None),
                        )
                        full = np.full(q + 1, np.nan, dtype=np.float32)  # NaN: a row held but not read (drawn masked)
                        full[read] = block[0]
                        done[q] = full
                else:
                    block = attention_rows(
                        s.q_rows(lane, layer, head, p, end),
                        k_all[keys],
                        np.arange(p, end),
                        keys,
                        cfg.window_of(layer),
                        info.window,
                        info.sinks,
                        scale_dim=getattr(cfg, "query_pre_attn_scalar", None),
                    )
                    for i, q in enumerate(range(p, end)):
                        full = np.full(q + 1, np.nan, dtype=np.float32)
                        seen = keys <= q
                        full[keys[seen]] = block[i, seen]
                        done[q] = full
            for q in range(p, end):
                out[q - a, : q + 1] = done[q]
            p = end
        return out

    def _keys_at(self, lane: int, layer: int, g: int, n: int, step: int) -> np.ndarray:
        """K rows 0..n-1 of a lossy lane as it held them after ``step``: kept between calls and brought to
        ``step`` by rewriting only the rows its steps changed in between (one new row a decode step), not the
        whole table rebuilt from the shared rows and every change."""
        s = self.session
        kept = self._k_tables.get((lane, layer, g))
        if kept is None:
            kept = self._k_tables[(lane, layer, g)] = [step, s.kv_rows(lane, layer, g, 0, n, step=step)[0].copy()]
        at, table = kept
        if at != step:
            changed = s.changed_positions(lane, min(at, step), max(at, step))
            for a, b in _runs(changed[changed < table.shape[0]]):
                table[a:b] = s.kv_rows(lane, layer, g, a, b, step=step)[0]
            kept[0] = step
        if n > table.shape[0]:  # the rows that arrived since (a decode step: one)
            table = kept[1] = np.concatenate([table, s.kv_rows(lane, layer, g, table.shape[0], n, step=step)[0]])
        return table[:n]

    def attention_values(self, lane: int, layer: int, head: int, row: int) -> np.ndarray:
        """The exact probabilities of one query row (tests and tooltips)."""
        return self.rows(lane, layer, head, row, row + 1)[0]

    def _remember(self, key, value) -> None:
        if len(self._memo) > 48:
            self._memo.pop(next(iter(self._memo)))
        self._memo[key] = value
