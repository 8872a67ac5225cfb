"""The Timeline view of a requests run: requests over steps, and the pool's occupancy over time.

One row per request, one column per scheduler step (``RequestsRun.batches``; a one-at-a-time run: one
column per snapshot, the request that ran it in its prefill or decode, the others started and not done
waiting). A cell says what the
request did in that step: waiting (arrived, not in the batch: a thin grey bar), a prefill chunk (its
colour, the number of positions written in it), a decode (its colour, narrower), a recompute of rows
lost to preemption (its colour, hatched), preempted (a red cross: its blocks were taken back), done or
not arrived yet (empty). The column of the shown step is outlined (a click or a drag on a column shows that
step). Under it, the pool over the same steps: blocks held by running requests (filled) and free blocks still
holding reusable rows (a line); under the pool the step axis (numbered ticks, thinned to fit, and its title),
then the pool's caption for the shown step, in the longest form that fits. ``timeline_legend_html`` says the marks in
words (the dock shows it under the view).
A run with offload tiers also marks, in the row of the request each concerns, the step's moves between the
device pool and a tier (``RequestsRun.moves_at``): a store (▼, rows going down to a tier) and a load (▲,
rows coming back) in the tier's colour; the tooltip gives the blocks, bytes and measured time.

``cells()`` / ``states`` are what ``paintEvent`` draws (and what the tests read).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from PySide6.QtCore import QEvent, QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QPainter, QPen, QPolygonF
from PySide6.QtWidgets import QSizePolicy, QWidget

from kvsim.core.words import QT_TRANSLATE_NOOP  # typed str, found by pyside6-lupdate as Qt's

from ... import theme
from ...i18n import fill, translate
from .blocks import request_color, tier_color, tier_name

if TYPE_CHECKING:
    from kvsim.serving.records import RequestsRun

NONE, WAITING, PREFILL, DECODE, RECOMPUTE, PREEMPTED = range(6)
STATE_WORDS = {
    WAITING: QT_TRANSLATE_NOOP("views.requests_timeline", "waiting"),
    PREFILL: QT_TRANSLATE_NOOP("views.requests_timeline", "prefill chunk"),
    DECODE: QT_TRANSLATE_NOOP("views.requests_timeline", "decode"),
    RECOMPUTE: QT_TRANSLATE_NOOP("views.requests_timeline", "recompute"),
    PREEMPTED: QT_TRANSLATE_NOOP("views.requests_timeline", "preempted"),
}
KIND_STATES = {"prefill": PREFILL, "decode": DECODE, "recompute": RECOMPUTE}
ROW_H = 16  # a request's row, at least (on a large stage rows grow to MAX_ROW_H with the view's height)
LABEL_W = 34
POOL_H = 44  # the pool's plot, at least (its axis and caption are under it); it grows to MAX_POOL_H
MAX_ROW_H = 4 * ROW_H
MAX_POOL_H = 5 * POOL_H
GROWN_TEXT = 1.6  # the cells' figures and the row names grow with the rows, up to this many times the view's type
MIN_COL_W = 4
TICK_STEPS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000)


def timeline_legend_html(marks: bool = False) -> str:
    """What the timeline's colours and marks mean, in words (``marks``: the tier moves' ▼ ▲ too)."""
    muted, accent, error = theme.MUTED, theme.ACCENT, theme.ERROR
    words = translate(
        "views.requests_timeline",
        "<b>█ n</b> prefill chunk of n positions · ▬ decode · ▨ recompute · <span style='color:{muted}'>━</span> "
        "waiting · <span style='color:{error}'>✕</span> preempted · <span style='color:{accent}'>▯</span> shown step · "
        "pool: <span style='color:{accent}'>■</span> held, ┄ + free still cached",
    ).format(muted=muted, accent=accent, error=error)
    if marks:
        words += " · " + translate("views.requests_timeline", "▼ stored to a tier, ▲ loaded back")
    return f"<span style='color:{muted}'>{words}</span>"


def timeline_states(run) -> tuple[np.ndarray, np.ndarray]:
    """(requests, steps) state codes and positions computed, from the run's batch steps."""
    n, steps = len(run.requests), len(run.batches)
    states = np.zeros((n, steps), dtype=np.int8)
    tokens = np.zeros((n, steps), dtype=np.int32)
    arrived = np.zeros(n, dtype=bool)
    done = np.zeros(n, dtype=bool)
    for s, step in enumerate(run.batches):
        for r in step.arrived:
            arrived[r] = True
        live = arrived & ~done
        states[live, s] = WAITING  # arrived, not finished: waiting unless it ran or was preempted
        for r in step.preempted:
            states[r, s] = PREEMPTED
        for e in step.entries:
            states[e.request, s] = KIND_STATES[e.kind]
            tokens[e.request, s] = e.tokens
        for r in step.finished:
            done[r] = True
    states.flags.writeable = False
    tokens.flags.writeable = False
    return states, tokens


PHASE_STATES = {"prefill": PREFILL, "decode": DECODE}


def snapshot_states(run) -> tuple[np.ndarray, np.ndarray]:
    """(requests, snapshots) state codes and positions computed, from a one-at-a-time run's snapshots."""
    n, steps = len(run.requests), len(run.snapshots)
    states = np.zeros((n, steps), dtype=np.int8)
    tokens = np.zeros((n, steps), dtype=np.int32)
    for r in run.requests:
        states[r.index, r.first_step : r.last_step] = WAITING  # started, not done
    for s, snap in enumerate(run.snapshots):
        if snap.phase in PHASE_STATES:
            states[snap.request, s] = PHASE_STATES[snap.phase]
            tokens[snap.request, s] = run.requests[snap.request].prefill_rows if snap.phase == "prefill" else 1
        elif snap.phase == "finish":
            states[snap.request, s] = NONE
    states.flags.writeable = False
    tokens.flags.writeable = False
    return states, tokens


def run_states(run) -> tuple[np.ndarray, np.ndarray]:
    """The timeline of any run: its batch steps', or its snapshots' (one-at-a-time)."""
    return timeline_states(run) if run.batches else snapshot_states(run)


@dataclass(frozen=True)
class MoveMark:
    """The tier moves one request made in one step in one direction to or from one tier (``RequestsRun.moves_at``)."""

    step: int
    request: int  # -1: no request named (a move the tiers made on their own)
    tier: str
    direction: str  # "store" or "load"
    blocks: int
    nbytes: int
    ms: float


def move_marks(run) -> list[MoveMark]:
    """Every tier move of the run, grouped by (step, request, tier, direction) in the order they were made."""
    out: list[MoveMark] = []
    for s in range(len(run.snapshots)):
        groups: dict[tuple[int, str, str], list[dict]] = {}
        for m in run.moves_at(s):
            groups.setdefault((int(m["owner"]), str(m["tier"]), str(m["direction"])), []).append(m)
        for (owner, tier, direction), moves in groups.items():
            out.append(
                MoveMark(
                    s,
                    owner,
                    tier,
                    direction,
                    len(moves),
                    sum(int(m["nbytes"]) for m in moves),
                    sum(float(m["ms"]) for m in moves),
                )
            )
    return out


def move_words(mark: MoveMark) -> str:
    """One mark in words: "step 7 · r4: 6 blocks loaded from disk, 196.6 KB, 0.84 ms"."""
    from ...i18n import local

    what = (
        translate("views.requests_timeline", "{n} block(s) stored to {tier}")
        if mark.direction == "store"
        else translate("views.requests_timeline", "{n} block(s) loaded from {tier}")
    ).format(n=mark.blocks, tier=tier_name(mark.tier))
    who = f"r{mark.request + 1}" if mark.request >= 0 else "–"
    return fill(
        translate("views.requests_timeline", "step {s} · {who}: {what}, {size}, {ms:.2f} ms"),
        s=mark.step + 1,
        who=who,
        what=what,
        size=local(theme.human_bytes(mark.nbytes)),
        ms=mark.ms,
    )


MOVE_LINES = 10  # marks listed under the timeline (then "… N more")


def move_lines(run) -> list[str]:
    """The run's tier moves in words (nothing without tiers): totals per tier and direction, then each mark."""
    marks = move_marks(run)
    if not marks:
        return []
    lines = []
    for tier in ("host", "disk"):
        for direction in ("store", "load"):
            group = [m for m in marks if m.tier == tier and m.direction == direction]
            if group:
                total = MoveMark(
                    -1, -1, tier, direction, sum(m.blocks for m in group), sum(m.nbytes for m in group), sum(m.ms for m in group)
                )
                lines.append(
                    translate("views.requests_timeline", "in all: {what}").format(what=move_words(total).split(": ", 1)[1])
                )
    lines += [move_words(m) for m in marks[:MOVE_LINES]]
    if len(marks) > MOVE_LINES:
        lines.append(
            translate("views.requests_timeline", "… {n} more moves (the marks ▼ ▲ on the timeline)").format(
                n=len(marks) - MOVE_LINES
            )
        )
    return lines


def state_word(code: int) -> str:
    return translate("views.requests_timeline", STATE_WORDS[code]) if code in STATE_WORDS else ""


def latency_lines(run) -> list[str]:
    """Per request of a continuous-batching run: arrival, TTFT, inter-token latency (median, worst and
    the step it ended), preemptions — the stalls a prompt chunk in the same step causes show as the worst gap."""
    out = []
    for r in run.requests:
        gaps = r.itl_gaps_ms
        line = fill(
            translate("views.requests_timeline", "r{n}: arrives at step {a}, TTFT {ttft:.1f} ms"),
            n=r.index + 1,
            a=r.arrival_step,
            ttft=r.ttft_ms,
        )
        if gaps:
            worst = int(np.argmax(gaps))
            line += fill(
                translate("views.requests_timeline", ", ITL median {med:.1f} ms, worst {worst:.1f} ms (step {s})"),
                med=float(np.median(gaps)),
                worst=gaps[worst],
                s=r.token_steps[worst + 1],
            )
        if r.preemptions:
            line += translate("views.requests_timeline", ", preempted {k}× ({rows} rows recomputed)").format(
                k=r.preemptions, rows=r.recomputed_rows
            )
        out.append(line)
    return out


def reuse_line(reuse) -> str:
    """Token-level vs block-level prefix reuse of the same requests (``ReuseComparison``)."""
    return translate(
        "views.requests_timeline",
        "prefix reuse of these requests: blocks of {b} reuse {blocks} of {total} prompt tokens; a radix tree "
        "(token-level, as SGLang) would reuse {radix}",
    ).format(b=reuse.block_size, blocks=sum(reuse.blocks), total=sum(reuse.prompt_tokens), radix=sum(reuse.radix))


@dataclass(frozen=True)
class Cell:
    request: int
    step: int
    state: int
    tokens: int
    rect: QRectF


class TimelineView(QWidget):
    """Requests × steps, and the pool's occupancy under it; ``set_run`` then ``set_step``."""

    scrubbed = Signal(int)  # a column clicked or dragged over: show that step

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.run: RequestsRun | None = None
        self.step = 0
        self.states = np.zeros((0, 0), dtype=np.int8)
        self.tokens = np.zeros((0, 0), dtype=np.int32)
        self.marks: list[MoveMark] = []
        # it takes the height it is given (the stage's, the dock's) up to rows of MAX_ROW_H: no empty band under it
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setMaximumHeight(self._height(MAX_ROW_H, MAX_POOL_H))
        self.setMouseTracking(True)
        theme.on_change(lambda _name: self.update())

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:  # presenter mode's larger type: the axis lines grow
            self.setMaximumHeight(self._height(MAX_ROW_H, MAX_POOL_H))

    def set_run(self, run: RequestsRun | None) -> None:
        self.run = run
        self.marks = []
        if run is None or not (run.batches or run.snapshots):
            self.states = np.zeros((0, 0), dtype=np.int8)
            self.tokens = np.zeros((0, 0), dtype=np.int32)
        else:
            self.states, self.tokens = run_states(run)
            self.marks = move_marks(run) if len(run.snapshots) == self.states.shape[1] else []
        self.setMaximumHeight(self._height(MAX_ROW_H, MAX_POOL_H))
        self.updateGeometry()
        self.update()

    def set_step(self, step: int) -> None:
        self.step = step
        self.update()

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt
        return QSize(400, self._height())

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt
        return QSize(120, self._height())

    def _line_h(self) -> int:
        return self.fontMetrics().height() + 2

    def _height(self, row_h: int = ROW_H, pool_h: int = POOL_H) -> int:
        """The rows, the pool, the step axis (ticks and their numbers) and the caption: with the smallest rows and
        pool (the view's minimum) or those given."""
        return max(1, self.states.shape[0]) * row_h + 6 + pool_h + 4 + self._line_h() + self._line_h() + 2

    def sizes(self) -> tuple[int, int]:
        """(a row's height, the pool's height) at the view's height: the smallest, grown by the room the view has
        past its minimum (the rows take most of it, up to MAX_ROW_H; the pool the rest, up to MAX_POOL_H)."""
        n = max(1, self.states.shape[0])
        extra = max(0, self.height() - self._height())
        row_h = ROW_H + min(MAX_ROW_H - ROW_H, int(0.7 * extra / n))
        pool_h = POOL_H + min(MAX_POOL_H - POOL_H, extra - n * (row_h - ROW_H))
        return row_h, pool_h

    def _row_h(self) -> int:
        return self.sizes()[0]

    def _axis_top(self) -> float:
        return self._rows_h() + 6 + self.sizes()[1] + 4

    def grown_font(self) -> QFont:
        """The type of the cells' figures and the row names: the view's, grown with the rows (readable from the back
        of a room when the stage is large), at most GROWN_TEXT times."""
        font = QFont(self.font())
        k = min(GROWN_TEXT, max(1.0, self._row_h() / (1.4 * ROW_H)))
        if k > 1.0:
            font.setPointSizeF(font.pointSizeF() * k)
        return font

    def axis_ticks(self) -> list[tuple[int, float]]:
        """The numbered ticks of the step axis: (the column's ``step_number``, x of its column's centre), every
        k-th step with k the smallest of 1, 2, 5, 10 … whose numbers do not touch."""
        steps = self.states.shape[1]
        if not steps:
            return []
        w, fm = self._col_w(), self.fontMetrics()
        room = fm.horizontalAdvance(str(steps)) + fm.horizontalAdvance("  ")
        k = next((k for k in TICK_STEPS if k * w >= room), TICK_STEPS[-1])
        numbers = [self.step_number(s) for s in range(steps)]
        columns = [s for s in range(steps) if numbers[s] % k == 0]
        if not columns or columns[0] * w >= room:
            columns = [0, *[c for c in columns if c]]  # the first column always numbered
        return [(numbers[c], LABEL_W + (c + 0.5) * w) for c in columns]

    def step_number(self, column: int) -> int:
        """The step a column is, as the run's own lines say it (a batched run's steps from 0: "arrives at
        step 2"; a one-at-a-time run's snapshots from 1, as the step slider counts them)."""
        if self.run is not None and self.run.batches:
            return int(self.run.batches[column].step)
        return column + 1

    def axis_title(self) -> str:
        return translate("views.requests_timeline", "step →")

    def pool_caption(self) -> str:
        """The pool at the shown step, in the longest form that fits the view's width."""
        if self.run is None or not self.states.size:
            return ""
        columns = self.pool_columns()
        held, cached, _ = columns[min(self.step, len(columns) - 1)]
        n = max(1, self.run.usable_blocks)
        texts = [
            translate("views.requests_timeline", "pool: {held} of {n} blocks held, {cached} free but cached (dashed)"),
            translate("views.requests_timeline", "pool: {held}/{n} blocks held, {cached} cached"),
            translate("views.requests_timeline", "pool {held}/{n}"),
        ]
        room, fm = self.width() - LABEL_W, self.fontMetrics()
        texts = [t.format(held=held, n=n, cached=cached) for t in texts]
        return next((t for t in texts if fm.horizontalAdvance(t) <= room), texts[-1])

    def _column_at(self, x: float) -> int | None:
        if not self.states.size or x < LABEL_W:
            return None
        return min(int((x - LABEL_W) // self._col_w()), self.states.shape[1] - 1)

    def mousePressEvent(self, event) -> None:  # noqa: N802 - Qt
        column = self._column_at(event.position().x())
        if column is not None and event.button() == Qt.MouseButton.LeftButton:
            self.scrubbed.emit(column)

    def _rows_h(self) -> int:
        return max(1, self.states.shape[0]) * self._row_h()

    def _col_w(self) -> float:
        steps = max(1, self.states.shape[1])
        return max(MIN_COL_W, (self.width() - LABEL_W - 4) / steps)

    def cells(self) -> list[Cell]:
        """Every drawn cell (not the empty ones)."""
        w, row_h = self._col_w(), self._row_h()
        out = []
        for r, s in zip(*np.nonzero(self.states), strict=True):
            rect = QRectF(LABEL_W + s * w, r * row_h + 1, w, row_h - 2)
            out.append(Cell(int(r), int(s), int(self.states[r, s]), int(self.tokens[r, s]), rect))
        return out

    def mark_rects(self) -> list[tuple[MoveMark, QRectF]]:
        """Every move mark and where it is drawn: in its request's row and step's column, a store in the upper
        half, a load in the lower (a mark naming no request: in the first row)."""
        w, row_h = self._col_w(), self._row_h()
        side = min(12.0 * row_h / ROW_H, max(4.0, w - 2))
        out = []
        for m in self.marks:  # at the right end of the cell, clear of the positions' figure at its centre
            row = max(0, m.request)
            x = LABEL_W + (m.step + 1) * w - side - 1 - (side + 1) * (m.tier == "disk")  # disk left of host
            y = row * row_h + (0 if m.direction == "store" else row_h / 2)
            out.append((m, QRectF(x, y, side, row_h / 2)))
        return out

    def cell_at(self, x: float, y: float) -> tuple[int, int] | None:
        if not self.states.size or x < LABEL_W:
            return None
        r, s = int(y // self._row_h()), int((x - LABEL_W) // self._col_w())
        return (r, s) if 0 <= r < self.states.shape[0] and 0 <= s < self.states.shape[1] else None

    def describe(self, request: int, step: int) -> str:
        """Plain words on one cell (the tooltip), with the moves it marks."""
        text = self._describe_cell(request, step) if self.states[request, step] else ""
        moves = [move_words(m) for m in self.marks if m.step == step and max(0, m.request) == request]
        return "\n".join([t for t in (text, *moves) if t])

    def _describe_cell(self, request: int, step: int) -> str:
        state = int(self.states[request, step])
        assert self.run is not None  # a cell has a state only in a run's grid (set_run)
        if not self.run.batches:  # one at a time: the snapshot's phase
            text = translate("views.requests_timeline", "request {n}, step {s}").format(n=request + 1, s=step + 1)
            return text + (": " + state_word(state) if state else "")
        batch = self.run.batches[step]
        text = translate("views.requests_timeline", "request {n}, step {s}").format(n=request + 1, s=batch.step)
        if state in (PREFILL, DECODE, RECOMPUTE):
            e = next(e for e in batch.entries if e.request == request)
            text += ": " + translate("views.requests_timeline", "{what}, positions {a}–{b}").format(
                what=state_word(state), a=e.start, b=e.start + e.tokens - 1
            )
            if e.emits:
                text += translate("views.requests_timeline", ", gives a token")
        elif state:
            text += ": " + state_word(state)
        return text + fill(
            translate("views.requests_timeline", " · batch of {k}, {t} positions, {ms:.1f} ms"),
            k=len(batch.entries),
            t=batch.tokens,
            ms=batch.ms,
        )

    def mouseMoveEvent(self, event) -> None:  # noqa: N802 - Qt
        if event.buttons() & Qt.MouseButton.LeftButton:  # a drag scrubs, as the lanes' timeline does
            column = self._column_at(event.position().x())
            if column is not None and column != self.step:
                self.scrubbed.emit(column)
        hit = self.cell_at(event.position().x(), event.position().y())
        self.setToolTip(self.describe(*hit) if hit is not None else "")

    # ---------------------------------------------------------------- drawing
    def paintEvent(self, _event) -> None:  # noqa: N802 - Qt
        p = QPainter(self)
        p.fillRect(self.rect(), QColor(theme.PANEL))
        if self.run is None or not self.states.size:
            p.setPen(QColor(theme.MUTED))
            p.drawText(
                self.rect().adjusted(6, 0, -6, 0),
                Qt.AlignmentFlag.AlignVCenter | Qt.TextFlag.TextWordWrap,
                translate("views.requests_timeline", "press Run: each request over the steps is drawn here"),
            )
            return
        w, row_h = self._col_w(), self._row_h()
        p.setPen(QColor(theme.MUTED))
        p.setFont(self.grown_font())
        for r in range(self.states.shape[0]):
            p.drawText(
                QRectF(0, r * row_h, LABEL_W - 4, row_h), Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, f"r{r + 1}"
            )
        for cell in self.cells():
            self._draw_cell(p, cell, w)
        p.setFont(self.font())
        for mark, rect in self.mark_rects():
            self._draw_mark(p, mark, rect)
        x = LABEL_W + self.step * w
        p.setPen(QPen(QColor(theme.ACCENT), 2))
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.drawRect(QRectF(x, 0, w, self._rows_h()))
        self._draw_pool(p, w, self._rows_h() + 6)
        self._draw_axis(p, w)

    def _draw_axis(self, p: QPainter, w: float) -> None:
        """The step axis under the pool: a tick and a number per ``axis_ticks`` (a number that would touch the
        title at the right end steps aside), the title; then the pool's caption on the line below."""
        top, line, fm = self._axis_top(), self._line_h(), self.fontMetrics()
        title = self.axis_title()
        title_box = QRectF(self.width() - fm.horizontalAdvance(title) - 4, top, fm.horizontalAdvance(title) + 2, line)
        p.setPen(QColor(theme.MUTED))
        for step, x in self.axis_ticks():
            p.drawLine(QPointF(x, top - 4), QPointF(x, top))
            half = fm.horizontalAdvance(str(step)) / 2 + 1
            if x + half < title_box.left() - 4:
                p.drawText(QRectF(x - half, top, 2 * half, line), Qt.AlignmentFlag.AlignCenter, str(step))
        p.drawText(title_box, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, title)
        p.setPen(QColor(theme.TEXT))
        p.drawText(
            QRectF(LABEL_W, top + line, max(10.0, self.width() - LABEL_W), line),
            Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
            self.pool_caption(),
        )

    def _draw_cell(self, p: QPainter, cell: Cell, w: float) -> None:
        rect, color = cell.rect, QColor(request_color(cell.request))
        if cell.state == WAITING:
            thick = max(2.0, rect.height() / 8)
            p.fillRect(QRectF(rect.x(), rect.center().y() - thick / 2, w, thick), QColor(theme.MUTED))
        elif cell.state == PREEMPTED:
            pen = QPen(QColor(theme.ERROR), 2)
            p.setPen(pen)
            p.drawLine(rect.topLeft(), rect.bottomRight())
            p.drawLine(rect.bottomLeft(), rect.topRight())
        else:
            box = rect if cell.state != DECODE else rect.adjusted(0, rect.height() / 5, 0, -rect.height() / 5)
            brush = QBrush(color, Qt.BrushStyle.BDiagPattern) if cell.state == RECOMPUTE else QBrush(color)
            p.fillRect(box.adjusted(0.5, 0, -0.5, 0), brush)
            if cell.state != DECODE and w >= max(18, p.fontMetrics().horizontalAdvance(str(cell.tokens)) + 4):
                p.setPen(QColor("#000000"))
                p.drawText(box, Qt.AlignmentFlag.AlignCenter, str(cell.tokens))

    @staticmethod
    def _draw_mark(p: QPainter, mark: MoveMark, rect: QRectF) -> None:
        """▼ a store (rows going down to the tier), ▲ a load (rows coming back), in the tier's colour."""
        if mark.direction == "store":
            points = [rect.topLeft(), rect.topRight(), QPointF(rect.center().x(), rect.bottom())]
        else:
            points = [rect.bottomLeft(), rect.bottomRight(), QPointF(rect.center().x(), rect.top())]
        p.setPen(QPen(QColor("#000000"), 1))
        p.setBrush(QColor(tier_color(mark.tier)))
        p.drawPolygon(QPolygonF(points))

    def pool_columns(self) -> list[tuple[int, int, int]]:
        """Per column: (blocks held by running requests, free blocks still cached, free blocks)."""
        run = self.run
        if run is None:  # no run, no pool
            return []
        if run.batches:
            return [(b.held_blocks, b.cached_free_blocks, b.free_blocks) for b in run.batches]
        return [(s.usable_blocks - s.free_blocks, s.cached_free_blocks, s.free_blocks) for s in run.snapshots]

    def _draw_pool(self, p: QPainter, w: float, top: float) -> None:
        if self.run is None:  # paintEvent draws the pool only for a run
            return
        columns = self.pool_columns()
        batches = columns
        n = max(1, self.run.usable_blocks)  # held + free: the null block of vLLM's order is neither
        h = self.sizes()[1]
        held = [QPointF(LABEL_W, top + h)]
        cached = []
        for s, (held_blocks, cached_free, _free) in enumerate(columns):
            y = top + h * (1 - held_blocks / n)
            held += [QPointF(LABEL_W + s * w, y), QPointF(LABEL_W + (s + 1) * w, y)]
            yc = top + h * (1 - (held_blocks + cached_free) / n)
            cached += [QPointF(LABEL_W + s * w, yc), QPointF(LABEL_W + (s + 1) * w, yc)]
        held.append(QPointF(LABEL_W + len(batches) * w, top + h))
        p.setPen(Qt.PenStyle.NoPen)
        fill = QColor(theme.ACCENT)
        fill.setAlpha(110)
        p.setBrush(fill)
        p.drawPolygon(QPolygonF(held))
        p.setPen(QPen(QColor(theme.MUTED), 1, Qt.PenStyle.DashLine))
        p.drawPolyline(QPolygonF(cached))
        p.setPen(QColor(theme.BORDER))
        p.drawLine(QPointF(LABEL_W, top + h), QPointF(LABEL_W + len(batches) * w, top + h))
        p.drawLine(QPointF(LABEL_W, top), QPointF(LABEL_W + len(batches) * w, top))
        p.setPen(QColor(theme.MUTED))
        p.drawText(QRectF(0, top, LABEL_W - 4, h), Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignTop, str(n))
        p.drawText(QRectF(0, top, LABEL_W - 4, h), Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignBottom, "0")


def fill_prefix_tree(widget, computed) -> None:
    """The radix tree of the requests' computed tokens as a ``QTreeWidget``: one item per node (its edge's
    tokens as text, how many tokens, how many requests' tokens pass through it). A node several requests
    pass through is a prefix they share, whatever its length — token-level sharing."""
    from PySide6.QtWidgets import QTreeWidgetItem

    widget.clear()
    if computed is None or not computed.prefix_tree:
        return
    held = [tuple(r.prompt_ids) + tuple(r.output_ids[:-1]) for r in computed.both.on.requests]
    items: dict[int | None, QTreeWidgetItem] = {}
    for node in computed.prefix_tree:
        path = computed.tree_paths[node.id]
        through = [i + 1 for i, h in enumerate(held) if h[: len(path)] == path]
        text = "".join(computed.token_text.get(t, f"<{t}>") for t in node.tokens)
        item = QTreeWidgetItem([repr(text)[1:-1][:80], str(len(node.tokens)), ", ".join(f"r{i}" for i in through)])
        item.setData(0, Qt.ItemDataRole.UserRole, node.id)
        item.setToolTip(
            0,
            translate("views.requests_timeline", "positions {a}–{b}; requests through this node: {n}").format(
                a=node.depth - len(node.tokens), b=node.depth - 1, n=len(through)
            ),
        )
        parent = items.get(node.parent)
        if parent is None:
            widget.addTopLevelItem(item)
        else:
            parent.addChild(item)
        items[node.id] = item
    widget.expandAll()
