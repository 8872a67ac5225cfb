"""The Prefill / decode tab: the same request list served colocated (one pool, continuous batching) and
disaggregated (a prefill instance and a decode instance, each with its own pool, in two processes), drawn
from what ``kvsim.serving.disagg`` records.

* the two pools side by side (``PoolsView``) at one transfer, chosen with the slider: the prefill pool's
  blocks the request's rows left, the decode pool's blocks they went into (a line for each block), and every
  request the decode pool held right after they arrived (``Transfer.decode_held``);
* the run's clock (``ClockView``): per request a colocated row and a split row, a tick per output token and,
  on the split row, the transfer (pack start → rows in the decode pool) as a bar;
* the figures per request (``SplitTable``): TTFT and ITL both ways, the bytes moved and the measured copies.

Nothing here measures: the worker computes a ``SplitComputed`` (``compute_split``), this only draws it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from PySide6.QtCore import QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QBrush, QColor, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSizePolicy,
    QSlider,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from kvsim.core.words import QT_TRANSLATE_NOOP  # typed str, found by pyside6-lupdate as Qt's

from ... import theme
from ...i18n import fill, integer, local, translate
from .blocks import ink_on, request_color

if TYPE_CHECKING:  # the worker computes the runs (it imports torch); this only reads them
    from kvsim.serving.disagg import Served, Transfer

CELL = 14  # px: one block of a pool
GAP = 2
MIDDLE = 70  # px between the two pools
DIP = 34  # px under the pools where the transfer's curves run (clear of every block)


@dataclass(frozen=True, eq=False)
class SplitComputed:
    """One press of the tab's Run: the request list colocated and disaggregated."""

    colocated: Served
    split: Served
    prompt_tokens: tuple[int, ...]
    block_size: int
    steps: int
    model_id: str

    @property
    def same_tokens(self) -> tuple[bool, ...]:
        return tuple(a.tokens == b.tokens for a, b in zip(self.colocated.requests, self.split.requests, strict=True))


def compute_split(loaded, prompts: tuple[str, ...], system: str | None, block_size: int, steps: int) -> SplitComputed:
    """Run ``prompts`` colocated and disaggregated (the decode instance a process that loads the same model);
    raises a one-line ``SimulationError``."""
    from kvsim.core.sampling import SimulationError
    from kvsim.serving.disagg import run_colocated, run_disaggregated
    from kvsim.serving.study import encode

    if loaded is None:
        raise SimulationError(translate("views.requests_split", "no model is loaded yet"))
    _, inputs = encode(loaded.tokenizer, [p.strip() for p in prompts if p.strip()], system, None)
    colocated = run_colocated(loaded.model, loaded.tokenizer, inputs, steps, block_size)
    dtype = str(loaded.model.dtype).replace("torch.", "")
    split = run_disaggregated(loaded.model_id, loaded.model, loaded.tokenizer, inputs, steps, block_size, dtype=dtype)
    return SplitComputed(colocated, split, tuple(len(r.prompt_ids) for r in inputs), block_size, steps, loaded.model_id)


# ---------------------------------------------------------------------------------------------- the two pools
@dataclass(frozen=True)
class PoolCell:
    pool: str  # "prefill" or "decode"
    block: int
    rect: QRectF
    request: int | None  # the request whose rows it holds at the shown transfer (None: free)
    moved: bool  # one of the shown transfer's blocks


class PoolsView(QWidget):
    """The prefill pool and the decode pool at one transfer, and a line from each block the rows left to the
    block they went into."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.transfer: Transfer | None = None
        self._cells: list[PoolCell] = []
        self._lines: list[tuple[QPointF, QPointF]] = []  # (a prefill block's bottom, its decode block's bottom)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        theme.on_change(lambda _name: self.update())

    def set_transfer(self, transfer: Transfer | None) -> None:
        self.transfer = transfer
        self._relayout()

    def _columns(self) -> int:
        return max(1, int((self.width() - MIDDLE) / 2) // (CELL + GAP))

    def _relayout(self) -> None:
        self._cells, self._lines = [], []
        t = self.transfer
        if t is not None:
            half = (self.width() - MIDDLE) / 2
            cols = self._columns()
            held = {b: r for r, blocks in t.decode_held for b in blocks}
            moved = set(t.decode_blocks)
            for pool, n, left in (("prefill", t.prefill_pool_blocks, 0.0), ("decode", t.decode_pool_blocks, half + MIDDLE)):
                for b in range(n):
                    r, c = divmod(b, cols)
                    rect = QRectF(left + c * (CELL + GAP), 2 + r * (CELL + GAP), CELL, CELL)
                    if pool == "prefill":
                        owner = t.request if b in t.prefill_blocks else None
                        self._cells.append(PoolCell(pool, b, rect, owner, owner is not None))
                    else:
                        self._cells.append(PoolCell(pool, b, rect, held.get(b), b in moved))
            where = {(c.pool, c.block): QPointF(c.rect.center().x(), c.rect.bottom()) for c in self._cells}
            for a, b in zip(t.prefill_blocks, t.decode_blocks, strict=True):
                self._lines.append((where[("prefill", a)], where[("decode", b)]))
        self.setFixedHeight(self.sizeHint().height())
        self.update()

    def cells(self) -> list[PoolCell]:
        return list(self._cells)

    def lines(self) -> list[tuple[QPointF, QPointF]]:
        """One line per block the shown transfer moved (prefill block j → decode block j)."""
        return list(self._lines)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt
        t = self.transfer
        n = max(t.prefill_pool_blocks, t.decode_pool_blocks) if t is not None else 16
        rows = -(-n // self._columns())
        return QSize(400, rows * (CELL + GAP) + 6 + DIP)

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt
        super().resizeEvent(event)
        self._relayout()

    def paintEvent(self, _event) -> None:  # noqa: N802 - Qt
        p = QPainter(self)
        p.fillRect(self.rect(), QColor(theme.BG))
        for cell in self._cells:
            if cell.request is None:
                p.setPen(QPen(QColor(theme.BORDER), 1))
                p.setBrush(Qt.BrushStyle.NoBrush)
            else:
                fill_color = QColor(request_color(cell.request))
                if not cell.moved:
                    fill_color.setAlpha(120)  # held by a request that arrived before: dimmed
                p.setPen(QPen(QColor(theme.TEXT if cell.moved else theme.BORDER), 1))
                p.setBrush(fill_color)
            p.drawRect(cell.rect)
        p.setPen(QPen(QColor(theme.ACCENT), 1.5))
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        low = self.height() - 4.0
        for a, b in self._lines:  # down from the block the rows left, under both pools, up into the block they went to
            path = QPainterPath(a)
            path.cubicTo(QPointF(a.x(), low), QPointF(b.x(), low), b)
            p.drawPath(path)
        p.end()


# ---------------------------------------------------------------------------------------------- the clock
def row_height(widget: QWidget) -> int:
    return widget.fontMetrics().height() + 2


class ClockView(QWidget):
    """Per request, a colocated row and a split row on the run's clock: a tick per output token, the transfer
    as a bar on the split row."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.computed: SplitComputed | None = None
        self.shown = -1  # the transfer the slider shows (its bar outlined)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        theme.on_change(lambda _name: self.update())

    def set_computed(self, computed: SplitComputed | None) -> None:
        self.computed = computed
        n = len(computed.split.requests) if computed is not None else 0
        self.setFixedHeight(max(1, 2 * n) * row_height(self) + self.fontMetrics().height() + 6)
        self.update()

    def set_shown(self, transfer: int) -> None:
        self.shown = transfer
        self.update()

    def labels(self) -> list[str]:
        out = []
        for i in range(len(self.computed.split.requests) if self.computed is not None else 0):
            out += [
                fill(translate("views.requests_split", "r{n} co"), n=i + 1),
                fill(translate("views.requests_split", "r{n} split"), n=i + 1),
            ]
        return out

    def label_width(self) -> int:
        return max((self.fontMetrics().horizontalAdvance(t) for t in self.labels()), default=0) + 8

    def _end_ms(self) -> float:
        c = self.computed
        if c is None:  # no run drawn: any scale will do
            return 1.0
        times = [t for run in (c.colocated, c.split) for r in run.requests for t in r.token_ms]
        return max(times + [t.arrived_ms for t in c.split.transfers], default=1.0) or 1.0

    def x_of(self, ms: float) -> float:
        left = self.label_width()
        return left + (self.width() - left - 8) * ms / self._end_ms()

    def ticks(self) -> list[tuple[int, str, float]]:
        """(request, "co" or "split", ms) of every output token drawn."""
        c = self.computed
        if c is None:
            return []
        return [
            (r.index, mode, t)
            for mode, run in (("co", c.colocated), ("split", c.split))
            for r in run.requests
            for t in r.token_ms
        ]

    def bars(self) -> list[tuple[int, QRectF]]:
        """(request, rect) of every transfer drawn on its split row."""
        c = self.computed
        if c is None:
            return []
        out = []
        for t in c.split.transfers:
            x0, x1 = self.x_of(t.arrived_ms - t.delivered_ms), self.x_of(t.arrived_ms)
            row = row_height(self)
            y = (2 * t.request + 1) * row + 3
            out.append((t.request, QRectF(x0, y, max(2.0, x1 - x0), row - 6)))
        return out

    def paintEvent(self, _event) -> None:  # noqa: N802 - Qt
        p = QPainter(self)
        p.fillRect(self.rect(), QColor(theme.PANEL))
        c = self.computed
        if c is None:
            p.end()
            return
        fm = self.fontMetrics()
        left = self.label_width()
        ROW = row_height(self)  # noqa: N806 - the row height, as the geometry names it
        for k, text in enumerate(self.labels()):
            p.setPen(QColor(theme.MUTED))
            p.drawText(QRectF(0, k * ROW, left - 4, ROW), Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, text)
        for i, rect in self.bars():
            p.fillRect(rect, QColor(theme.ACCENT))
            if i == self.shown:
                p.setPen(QPen(QColor(theme.TEXT), 2))
                p.setBrush(Qt.BrushStyle.NoBrush)
                p.drawRect(rect.adjusted(-1, -1, 1, 1))
        for i, mode, ms in self.ticks():
            row = 2 * i + (mode == "split")
            x = self.x_of(ms)
            p.setPen(QPen(QColor(request_color(i)), 2))
            p.drawLine(QPointF(x, row * ROW + 2), QPointF(x, row * ROW + ROW - 2))
        axis = 2 * len(c.split.requests) * ROW + 2
        p.setPen(QColor(theme.BORDER))
        p.drawLine(QPointF(left, axis), QPointF(self.width() - 8, axis))
        p.setPen(QColor(theme.MUTED))
        end = fill(translate("views.requests_split", "{ms:.0f} ms"), ms=self._end_ms())
        p.drawText(QRectF(left, axis + 2, self.width() - left - 8, fm.height()), Qt.AlignmentFlag.AlignRight, end)
        p.drawText(QRectF(left, axis + 2, self.width() - left - 8, fm.height()), Qt.AlignmentFlag.AlignLeft, "0")
        p.end()


# ---------------------------------------------------------------------------------------------- the figures
ROWS = (
    ("prompt", QT_TRANSLATE_NOOP("views.requests_split", "prompt tokens")),
    ("ttft_co", QT_TRANSLATE_NOOP("views.requests_split", "TTFT colocated, ms")),
    ("ttft_split", QT_TRANSLATE_NOOP("views.requests_split", "TTFT split, ms")),
    ("itl_co", QT_TRANSLATE_NOOP("views.requests_split", "ITL median colocated, ms")),
    ("itl_split", QT_TRANSLATE_NOOP("views.requests_split", "ITL median split, ms")),
    ("worst_co", QT_TRANSLATE_NOOP("views.requests_split", "ITL worst colocated, ms")),
    ("worst_split", QT_TRANSLATE_NOOP("views.requests_split", "ITL worst split, ms")),
    ("moved", QT_TRANSLATE_NOOP("views.requests_split", "moved (blocks, bytes)")),
    ("copies", QT_TRANSLATE_NOOP("views.requests_split", "copies: pack + unpack, ms")),
    ("delivered", QT_TRANSLATE_NOOP("views.requests_split", "delivered after, ms")),
    ("same", QT_TRANSLATE_NOOP("views.requests_split", "same tokens")),
)
ROW_KEYS = tuple(k for k, _ in ROWS)


def _ms(value: float | None) -> str:
    return "–" if value is None or not np.isfinite(value) else local(f"{value:,.1f}")


class SplitTable(QTableWidget):
    """Rows: the figures; columns: the requests. Each cell keeps its raw value (``Qt.UserRole``)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(len(ROWS), 0, parent)
        self.setVerticalHeaderLabels([translate("views.requests_split", label) for _, label in ROWS])
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.setSizeAdjustPolicy(QAbstractItemView.SizeAdjustPolicy.AdjustToContents)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)

    def value(self, key: str, column: int):
        item = self.item(ROW_KEYS.index(key), column)
        return None if item is None else item.data(Qt.ItemDataRole.UserRole)

    def set_computed(self, c: SplitComputed) -> None:
        co, split = c.colocated.requests, c.split.requests
        self.setColumnCount(len(split))
        self.setHorizontalHeaderLabels([translate("views.requests_split", "req {n}").format(n=i + 1) for i in range(len(split))])
        for i in range(len(split)):
            head = self.horizontalHeaderItem(i)
            assert head is not None  # setHorizontalHeaderLabels just made one for every column
            head.setBackground(QBrush(QColor(request_color(i))))
            head.setForeground(QBrush(QColor(ink_on(request_color(i)))))
        yes, no = translate("views.requests_split", "yes"), translate("views.requests_split", "NO")
        for i, (a, b) in enumerate(zip(co, split, strict=True)):
            t = c.split.transfers[i]
            med = [float(np.median(r.itl_ms)) if r.itl_ms else None for r in (a, b)]
            worst = [max(r.itl_ms) if r.itl_ms else None for r in (a, b)]
            cells = {
                "prompt": (c.prompt_tokens[i], integer(c.prompt_tokens[i])),
                "ttft_co": (a.ttft_ms, _ms(a.ttft_ms)),
                "ttft_split": (b.ttft_ms, _ms(b.ttft_ms)),
                "itl_co": (med[0], _ms(med[0])),
                "itl_split": (med[1], _ms(med[1])),
                "worst_co": (worst[0], _ms(worst[0])),
                "worst_split": (worst[1], _ms(worst[1])),
                "moved": ((t.blocks, t.nbytes), f"{integer(t.blocks)} · {local(theme.human_bytes(t.nbytes))}"),
                "copies": (t.pack_ms + t.unpack_ms, _ms(t.pack_ms + t.unpack_ms)),
                "delivered": (t.delivered_ms, _ms(t.delivered_ms)),
                "same": (c.same_tokens[i], yes if c.same_tokens[i] else no),
            }
            for row, key in enumerate(ROW_KEYS):
                value, text = cells[key]
                item = QTableWidgetItem(text)
                item.setData(Qt.ItemDataRole.UserRole, value)
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if key == "same" and not value:
                    item.setForeground(QBrush(QColor(theme.ERROR)))
                self.setItem(row, i, item)
        self.resizeColumnsToContents()
        self.resizeRowsToContents()


# ---------------------------------------------------------------------------------------------- the tab
class SplitView(QWidget):
    """The tab: Run, the two pools at the chosen transfer, the clock, the figures."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.computed: SplitComputed | None = None
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.setSpacing(4)
        top = QHBoxLayout()
        self.run_button = QPushButton(translate("views.requests_split", "Run colocated and split"))
        self.run_button.setToolTip(
            translate(
                "views.requests_split",
                "serve the request list twice, greedy: colocated (one pool, continuous batching) and split (prefill here, "
                "decode in a second process with its own pool, the K/V rows moved through shared memory)",
            )
        )
        top.addWidget(self.run_button)
        self.caption = QLabel(
            translate("views.requests_split", "press Run: the two pools and the transfers between them are drawn here")
        )
        self.caption.setWordWrap(True)
        top.addWidget(self.caption, 1)
        lay.addLayout(top)
        nav = QHBoxLayout()
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(0, 0)
        self.slider.setToolTip(translate("views.requests_split", "the transfers, one per request, in the order they arrived"))
        self.slider.valueChanged.connect(self._show)
        nav.addWidget(self.slider, 1)
        self.step_label = QLabel()
        nav.addWidget(self.step_label)
        lay.addLayout(nav)
        titles = QHBoxLayout()
        self.prefill_title = QLabel()
        self.decode_title = QLabel()
        for label in (self.prefill_title, self.decode_title):
            label.setWordWrap(True)
            titles.addWidget(label, 1)
        lay.addLayout(titles)
        self.pools = PoolsView()
        lay.addWidget(self.pools)
        self.transfer_text = QLabel()
        self.transfer_text.setWordWrap(True)
        lay.addWidget(self.transfer_text)
        self.clock = ClockView()
        lay.addWidget(self.clock)
        self.clock_legend = QLabel(
            translate(
                "views.requests_split",
                "on the run's clock, per request: | an output token (co: colocated, split: disaggregated) · "
                "▬ its transfer, from the pack's start to the rows in the decode pool",
            )
        )
        self.clock_legend.setWordWrap(True)
        lay.addWidget(self.clock_legend)
        self.table = SplitTable()
        lay.addWidget(self.table)
        lay.addStretch(1)

    def show_result(self, computed: SplitComputed) -> None:
        self.computed = computed
        n = len(computed.split.transfers)
        same = all(computed.same_tokens)
        self.caption.setText(
            translate(
                "views.requests_split",
                "{model}: {n} requests, blocks of {b}, {steps} steps, greedy · tokens {same} colocated and split · "
                "{bytes} moved from the prefill pool to the decode pool",
            ).format(
                model=computed.model_id,
                n=n,
                b=computed.block_size,
                steps=computed.steps,
                same=translate("views.requests_split", "the same") if same else translate("views.requests_split", "NOT the same"),
                bytes=local(theme.human_bytes(sum(t.nbytes for t in computed.split.transfers))),
            )
        )
        self.clock.set_computed(computed)
        self.table.set_computed(computed)
        self.slider.blockSignals(True)
        self.slider.setRange(0, max(0, n - 1))
        self.slider.setValue(0)
        self.slider.blockSignals(False)
        self._show(0)

    def _order(self) -> list[int]:
        """The transfers in the order their rows arrived."""
        assert self.computed is not None  # asked by shown_transfer, once a run is shown
        ts = self.computed.split.transfers
        return sorted(range(len(ts)), key=lambda k: ts[k].arrived_ms)

    def shown_transfer(self) -> Transfer | None:
        if self.computed is None or not self.computed.split.transfers:
            return None
        return self.computed.split.transfers[self._order()[self.slider.value()]]

    def _show(self, _value: int = 0) -> None:
        t = self.shown_transfer()
        if t is None or self.computed is None:
            return
        n = len(self.computed.split.transfers)
        self.step_label.setText(translate("views.requests_split", "transfer {k} / {n}").format(k=self.slider.value() + 1, n=n))
        self.pools.set_transfer(t)
        self.clock.set_shown(t.request)
        held = sum(len(b) for _, b in t.decode_held)
        self.prefill_title.setText(
            translate(
                "views.requests_split", "prefill instance: pool of {n} blocks; request {r}'s rows leave {k} of them"
            ).format(n=t.prefill_pool_blocks, r=t.request + 1, k=t.blocks)
        )
        self.decode_title.setText(
            translate(
                "views.requests_split", "decode instance: pool of {n} blocks, {held} held by {reqs} request(s) after they arrive"
            ).format(n=t.decode_pool_blocks, held=held, reqs=len(t.decode_held))
        )
        self.transfer_text.setText(
            fill(
                translate(
                    "views.requests_split",
                    "request {r}: {k} block(s), {size} → pack {pack:.2f} ms (prefill pool → shared memory), unpack "
                    "{unpack:.2f} ms (→ decode pool); in the decode pool {delivered:.1f} ms after the pack began "
                    "(waiting for the decode loop included), at {at:.0f} ms on the run's clock",
                ),
                r=t.request + 1,
                k=t.blocks,
                size=local(theme.human_bytes(t.nbytes)),
                pack=t.pack_ms,
                unpack=t.unpack_ms,
                delivered=t.delivered_ms,
                at=t.arrived_ms,
            )
        )
