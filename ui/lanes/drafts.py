"""A speculative lane's drafted tokens in its tables, from what the engine recorded (``LaneStep.drafts``,
``accepted``, ``cache_tokens``): nothing here is computed, only drawn.

At a step whose forward checked drafts, the drafted tokens are *ghost rows* appended after the text
(faint, hatched in the lane's colour: rows the check computed, not yet the text's); when the check's
verdict shows (late in the step's animation) the accepted ones turn solid — they stay in the cache —
and the rejected ones are struck out in red: their rows were rolled back, so the next step no longer
has them. At a step that came verified with an earlier check, the rows accepted ahead of the text are
drawn solid after it (they are in the cache). ``drawn()`` says what is drawn (tests).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QLineF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QPainterPath, QPen
from PySide6.QtWidgets import QGraphicsPathItem

from .. import theme
from ..i18n import local, num, translate
from .attention import attention_rows, kv_head_of
from .derived import MAX_COLS, _pool_cols

VERDICT_AT = 0.6  # the check's verdict shows from this frame of the step's animation on (t in [0, 1])
GHOST_ALPHA = 80  # a drafted row's cells before the verdict, and a rejected row's after it (of 255)

ACCEPTED, REJECTED, HELD = "accepted", "rejected", "held"


@dataclass(frozen=True)
class DraftTable:
    """The rows a spec lane's table shows after the text at one step."""

    n: int  # the text's rows (drawn as every lane draws them)
    positions: np.ndarray  # (e,) the rows after them: n, n+1, ...
    token_ids: np.ndarray  # (e,) their tokens (drafted)
    states: tuple[str, ...]  # per row: ACCEPTED / REJECTED (checked this step), HELD (accepted at an earlier check)
    k: np.ndarray  # (L, H_kv, e, D): the rows as the check computed them
    v: np.ndarray
    q: np.ndarray | None  # (L, H, e, D) when this step's check computed them (None: no query this step)
    checked: bool  # this step's forward checked them

    @property
    def drafted(self) -> np.ndarray:
        """The positions drafted and checked this step (the ghost rows)."""
        return self.positions if self.checked else self.positions[:0]

    def kept(self) -> np.ndarray:
        """The rows after the text that the lane's cache holds after the step."""
        return self.positions[np.array([s != REJECTED for s in self.states], dtype=bool)]


def draft_table(session, lane: int, step: int | None = None) -> DraftTable | None:
    """What lane ``lane`` shows after the text at ``step`` (None: nothing — not a spec lane, or no
    drafted row checked this step nor held ahead of the text)."""
    r = session.record(step)
    if r is None:
        return None
    ls = r.lanes[lane]
    n = r.n_tokens
    d = getattr(ls, "drafts", None)
    if d is not None and len(d.positions):
        states = tuple(ACCEPTED if i < ls.accepted else REJECTED for i in range(len(d.positions)))
        return DraftTable(n, d.positions, d.token_ids, states, d.k, d.v, d.q, True)
    ahead = ls.cache_tokens - n
    if ahead <= 0:
        return None
    # rows accepted at an earlier check, still ahead of the text: the latest step with a forward checked them
    s = r.step - 1
    while s >= 0:
        earlier = session.record(s).lanes[lane]
        if earlier.forwards:
            ed = getattr(earlier, "drafts", None)
            if ed is None or not len(ed.positions):
                return None  # (a trace without drafted rows) nothing to draw rather than a guess
            at = int(np.searchsorted(ed.positions, n))
            if at + ahead > min(earlier.accepted, len(ed.positions)) or ed.positions[at] != n:
                return None
            sl = slice(at, at + ahead)
            return DraftTable(n, ed.positions[sl], ed.token_ids[sl], (HELD,) * ahead, ed.k[:, :, sl], ed.v[:, :, sl], None, False)
        s -= 1
    return None


def _path_item(vb, z: float) -> QGraphicsPathItem:
    item = QGraphicsPathItem()
    item.setZValue(z)
    item.setVisible(False)
    vb.addItem(item, ignoreBounds=True)
    return item


class _PlotDrafts:
    """The items one plot of a lane draws its draft rows with: an image of their cells, a hatch over the
    ghost rows, and red strikes over the rejected ones."""

    def __init__(self, plot) -> None:
        self.plot = plot
        vb = plot.vb
        self.image = pg.ImageItem(axisOrder="row-major")
        self.image.setZValue(1)
        self.image.setVisible(False)
        vb.addItem(self.image, ignoreBounds=True)
        self.hatch = _path_item(vb, 2)
        self.kept = _path_item(vb, 11)  # a thin frame round the drafted rows the cache kept
        self.strike = _path_item(vb, 12)

    def hide(self) -> None:
        for item in (self.image, self.hatch, self.kept, self.strike):
            item.setVisible(False)


class DraftOverlay:
    """A lane panel's draft rows (only a spec lane ever has any). ``update`` after the panel set its
    images: returns the rows it adds after the text; ``progress`` each animation frame."""

    def __init__(self, panel) -> None:
        self.panel = panel
        self.parts = [_PlotDrafts(p) for p in panel.plots]
        self.table: DraftTable | None = None
        self.lo = 0
        self.verdict = True
        self._rgba: list[np.ndarray | None] = [None] * len(self.parts)
        self._widths: list[float | None] = [None] * len(self.parts)  # an image's width in x units (None: the plot's)
        self.attention: np.ndarray | None = None  # (e, n+e) the checked drafts' attention rows (NaN: masked)
        self.attention_width = 0.0  # in key positions (the attention plot's x units)

    # ------------------------------------------------------------------ reading (tests, labels)
    @property
    def extra(self) -> int:
        return 0 if self.table is None else len(self.table.positions)

    def label_of(self, row: int) -> str | None:
        """A draft row's token (None: not a draft row)."""
        t = self.table
        if t is None or not t.n <= row < t.n + len(t.positions):
            return None
        return self.panel.session.id_label(int(t.token_ids[row - t.n]))

    def drawn(self) -> dict[str, list[int]]:
        """What the table draws now: ``ghost`` the drafted rows checked this step (faint until the
        verdict), ``solid`` every row drawn solid (the text's and the drafted rows the cache kept),
        ``rejected`` the rows struck out, ``after`` every row drawn after the text and ``tokens`` their tokens."""
        geom = self.panel._geom
        text = list(range(geom[0], geom[4])) if geom is not None else []
        t = self.table
        if t is None:
            return {"ghost": [], "solid": text, "rejected": [], "after": [], "tokens": []}
        after_verdict = self.verdict or not t.checked
        solid = [int(p) for p, s in zip(t.positions, t.states, strict=True) if s == HELD or (s == ACCEPTED and after_verdict)]
        rejected = [int(p) for p, s in zip(t.positions, t.states, strict=True) if s == REJECTED and after_verdict]
        return {
            "ghost": [int(p) for p in t.drafted],
            "solid": text + solid,
            "rejected": rejected,
            "after": [int(p) for p in t.positions],
            "tokens": [int(i) for i in t.token_ids],
        }

    # ------------------------------------------------------------------ drawing
    def update(self, lo: int, n: int, layer: int, head: int, t: float = 1.0) -> int:
        """Draw the draft rows of the cursor's step after row ``n``; returns how many rows that adds."""
        panel = self.panel
        table = draft_table(panel.session, panel.index)
        self.table, self.lo = table, lo
        if table is None or n < lo:
            for part in self.parts:
                part.hide()
            self._rgba = [None] * len(self.parts)
            return 0
        cfg = panel.session.config
        g = kv_head_of(head, cfg.n_heads, cfg.n_kv_heads)
        m = panel.derived._kv_level(layer, g)
        k = theme.colorize(table.k[layer, g].astype(np.float32), -m, m, theme.KV_CMAP)
        v = theme.colorize(table.v[layer, g].astype(np.float32), -m, m, theme.KV_CMAP)
        q = None
        if table.q is not None:
            qm = panel.derived.q_levels.get((layer, head)) or float(np.percentile(np.abs(table.q[layer, head]), 99)) or 1.0
            q = theme.colorize(table.q[layer, head].astype(np.float32), -qm, qm, theme.KV_CMAP)
        self.attention, self.attention_width = None, 0.0
        att = None
        if table.q is not None:  # the check's queries over the text's keys and the drafts before them
            s = panel.session
            info = s.lanes[panel.index]
            keys = np.concatenate([s.kv_rows(panel.index, layer, g, 0, n)[0], table.k[layer, g].astype(np.float32)])
            e = len(table.positions)
            rows = attention_rows(
                table.q[layer, head], keys, table.positions, np.arange(n + e), cfg.window_of(layer), info.window, info.sinks
            )
            f = max(1, math.ceil(n / MAX_COLS))  # the text's attention image is pooled by f keys a column
            pooled = _pool_cols(rows, f)
            att = theme.colorize(np.sqrt(pooled), 0.0, 1.0, theme.ATTN_CMAP)
            self.attention, self.attention_width = rows, float(pooled.shape[1] * f)
        self._rgba = [k, q, v, att]  # the plots' order: K, q, V, attention
        self._widths = [None, None, None, self.attention_width or None]
        self.verdict = None  # type: ignore[assignment]  # forces the first progress() to draw
        self.progress(t)
        return len(table.positions)

    def progress(self, t: float) -> None:
        """Frame ``t`` of the step: before the verdict every drafted row is a ghost; after it the accepted
        ones are solid and the rejected ones struck out."""
        table = self.table
        if table is None:
            return
        verdict = t >= VERDICT_AT or not table.checked
        if verdict == self.verdict:
            return
        self.verdict = verdict
        n, e = table.n, len(table.positions)
        ghost = [not verdict or s == REJECTED for s in table.states] if table.checked else [False] * e
        rejected = [verdict and s == REJECTED for s in table.states]
        kept = [s == HELD or (verdict and s == ACCEPTED) for s in table.states]
        color = QColor(self.panel.color)
        for part, rgba, own in zip(self.parts, self._rgba, self._widths, strict=True):
            width = max(part.plot.width, own or 0.0)
            if rgba is not None:
                img = rgba.copy()
                img[np.array(ghost, dtype=bool), :, 3] = np.minimum(img[np.array(ghost, dtype=bool), :, 3], GHOST_ALPHA)
                part.image.setImage(img, levels=(0, 255), autoLevels=False)
                part.image.setRect(QRectF(0, n, width, e))
                part.image.setVisible(True)
            else:
                part.image.setVisible(False)
            hatch = QPainterPath()
            strike = QPainterPath()
            frame = QPainterPath()
            if any(kept):
                first = kept.index(True)
                frame.addRect(QRectF(0, n + first, width, sum(kept)))  # the kept ones come first, together
            for i in range(e):
                if ghost[i]:
                    hatch.addRect(QRectF(0, n + i, width, 1))
                if rejected[i]:
                    strike.addRect(QRectF(0, n + i, width, 1))
                    line = QLineF(0, n + i + 0.5, width, n + i + 0.5)
                    strike.moveTo(line.p1())
                    strike.lineTo(line.p2())
            part.hatch.setPath(hatch)
            part.hatch.setBrush(QBrush(color, Qt.BrushStyle.BDiagPattern))
            pen = QPen(color, 1.0, Qt.PenStyle.DashLine)
            pen.setCosmetic(True)
            part.hatch.setPen(pen)
            part.hatch.setVisible(any(ghost))
            red = QPen(QColor(theme.ERROR), 2.0)
            red.setCosmetic(True)
            part.strike.setPen(red)
            part.strike.setBrush(QBrush(Qt.BrushStyle.NoBrush))
            part.strike.setPath(strike)
            part.strike.setVisible(any(rejected))
            dots = QPen(color, 1.5, Qt.PenStyle.DotLine)
            dots.setCosmetic(True)
            part.kept.setPen(dots)
            part.kept.setBrush(QBrush(Qt.BrushStyle.NoBrush))
            part.kept.setPath(frame)
            part.kept.setVisible(any(kept))


# ---------------------------------------------------------------------- the readout's words
def spec_line(session, lane: int, step: int | None = None, *, narrow: bool = False) -> str:
    """A spec lane's readout line at ``step``: what this step's check did, and the run so far —
    acceptance rate, tokens per target forward, time per token against the plain kv lane ('' for
    any other lane). ``narrow`` (a lane on a projector): the run's figures alone, the time as a ratio,
    so the K/V table keeps its height."""
    step = session.cursor if step is None else step
    r = session.record(step)
    info = session.lanes[lane]
    if r is None or not info.draft:
        return ""
    ls = r.lanes[lane]
    if ls.forwards == 0:
        now = translate("views.lane_drafts", "no forward: this token came verified with an earlier check")
    elif ls.drafted:
        now = translate("views.lane_drafts", "checked {drafted} drafts: {accepted} accepted, {rejected} rolled back").format(
            drafted=ls.drafted, accepted=ls.accepted, rejected=ls.drafted - ls.accepted
        )
    else:
        now = translate("views.lane_drafts", "nothing to draft: one plain forward")
    steps = session.records[: step + 1]
    drafted = sum(x.lanes[lane].drafted for x in steps)
    accepted = sum(x.lanes[lane].accepted for x in steps)
    forwards = sum(x.lanes[lane].forwards for x in steps)
    parts = [] if narrow else [now]
    if drafted:
        parts.append(translate("views.lane_drafts", "{rate} % accepted").format(rate=num(100.0 * accepted / drafted, 0)))
    if forwards:
        parts.append(translate("views.lane_drafts", "{n} tokens per forward").format(n=num(len(steps) / forwards, 2)))
    ratio = time_vs_kv(session, lane, step)
    if ratio is not None:
        mine, plain = ratio
        if narrow and plain > 0:
            parts.append(translate("views.lane_drafts", "{x}× kv's time per token").format(x=local(f"{mine / plain:.2f}")))
            return " · ".join(parts)
        parts.append(
            translate("views.lane_drafts", "{ms} ms per token, kv {kv} ms ({x}×)").format(
                ms=num(mine, 2), kv=num(plain, 2), x=local(f"{mine / plain:.2f}") if plain > 0 else "–"
            )
        )
    return " · ".join(parts)


def time_vs_kv(session, lane: int, step: int | None = None) -> tuple[float, float] | None:
    """(this lane's, the plain kv lane's) mean measured ms per decode token up to ``step`` (one token a
    step each); None without a plain exact lane (kv, paged: full-precision weights) or before the first decode step."""
    step = session.cursor if step is None else step
    plain = next((x.index for x in session.lanes if x.exact and x.index != lane), None)
    if plain is None or step < 1:
        return None
    mine = session.series("ms", lane)[1 : step + 1]
    kv = session.series("ms", plain)[1 : step + 1]
    if not mine or not kv:
        return None
    return float(np.mean(mine)), float(np.mean(kv))
