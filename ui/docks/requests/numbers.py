"""The Requests dock's numbers: per request, prefix caching off vs on side by side (prefill rows
computed, rows reused, block hits, measured TTFT with its spread, the ratio), and the waste of three
ways to allocate the same rows (contiguous preallocated, contiguous exact, paged) as numbers and bars."""

from __future__ import annotations

from typing import cast

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QBrush, QColor, QPainter, QPen
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QSizePolicy, QTableWidget, QTableWidgetItem, QWidget

from kvsim.core.compare import Comparison
from kvsim.core.words import QT_TRANSLATE_NOOP  # typed str, found by pyside6-lupdate as Qt's

from ... import theme
from ...i18n import integer, local, num, plain_tip, translate
from .blocks import ink_on, request_color

# (key, label, tooltip): the side-by-side table's rows (translated where shown; the spread rows indented there)
ROWS = (
    (
        "prompt",
        QT_TRANSLATE_NOOP("views.requests_numbers", "prompt tokens"),
        QT_TRANSLATE_NOOP(
            "views.requests_numbers", "the request's tokens after the chat template (or system prompt) was applied"
        ),
    ),
    (
        "computed_off",
        QT_TRANSLATE_NOOP("views.requests_numbers", "computed · off"),
        QT_TRANSLATE_NOOP(
            "views.requests_numbers", "prefill rows: K/V rows its prefill computed without prefix caching (all of them)"
        ),
    ),
    (
        "computed_on",
        QT_TRANSLATE_NOOP("views.requests_numbers", "computed · on"),
        QT_TRANSLATE_NOOP(
            "views.requests_numbers", "prefill rows: K/V rows its prefill computed with prefix caching: only what was not found"
        ),
    ),
    (
        "reused",
        QT_TRANSLATE_NOOP("views.requests_numbers", "reused · on"),
        QT_TRANSLATE_NOOP(
            "views.requests_numbers", "prompt rows taken from blocks already in the pool (hit blocks × B): not computed again"
        ),
    ),
    (
        "hits",
        QT_TRANSLATE_NOOP("views.requests_numbers", "hits / misses"),
        QT_TRANSLATE_NOOP(
            "views.requests_numbers",
            "with caching on: prompt blocks found by hash (hits) and blocks its prefill had to write (misses)",
        ),
    ),
    (
        "from_host",
        QT_TRANSLATE_NOOP("views.requests_numbers", "hits from host"),
        QT_TRANSLATE_NOOP(
            "views.requests_numbers",
            "of its hit blocks, those the device pool had evicted and the host tier gave back (its rows copied in)",
        ),
    ),
    (
        "from_disk",
        QT_TRANSLATE_NOOP("views.requests_numbers", "hits from disk"),
        QT_TRANSLATE_NOOP(
            "views.requests_numbers",
            "of its hit blocks, those the disk tier gave back (read from its file, memory-mapped)",
        ),
    ),
    (
        "saved",
        QT_TRANSLATE_NOOP("views.requests_numbers", "TTFT saved, ms"),
        QT_TRANSLATE_NOOP(
            "views.requests_numbers",
            "TTFT off − TTFT on: what taking its hits (from the device and the tiers) saved against computing every row "
            "again, measured (loads, and the stores the loads' allocations made, included)",
        ),
    ),
    (
        "ttft_off",
        QT_TRANSLATE_NOOP("views.requests_numbers", "TTFT off, ms"),
        QT_TRANSLATE_NOOP(
            "views.requests_numbers", "time to first token without prefix caching: the median of the timed prefills"
        ),
    ),
    (
        "spread_off",
        QT_TRANSLATE_NOOP("views.requests_numbers", "min–max"),
        QT_TRANSLATE_NOOP("views.requests_numbers", "the spread: the fastest and slowest of the timed prefills (off)"),
    ),
    (
        "ttft_on",
        QT_TRANSLATE_NOOP("views.requests_numbers", "TTFT on, ms"),
        QT_TRANSLATE_NOOP(
            "views.requests_numbers", "time to first token with prefix caching: lookup + the rest of the prefill + first token"
        ),
    ),
    (
        "spread_on",
        QT_TRANSLATE_NOOP("views.requests_numbers", "min–max"),
        QT_TRANSLATE_NOOP("views.requests_numbers", "the spread: the fastest and slowest of the timed prefills (on)"),
    ),
    (
        "ratio",
        QT_TRANSLATE_NOOP("views.requests_numbers", "on ÷ off"),
        QT_TRANSLATE_NOOP(
            "views.requests_numbers",
            "TTFT with caching ÷ TTFT without: below 1: the request's first token came sooner because its prefix was reused",
        ),
    ),
    (
        "verdict",
        QT_TRANSLATE_NOOP("views.requests_numbers", "on vs off"),
        QT_TRANSLATE_NOOP(
            "views.requests_numbers",
            "the two runs' prefills timed in turn (off, on, on, off, …) and paired: "
            "within noise when the 95% interval of the paired ratio includes 1",
        ),
    ),
    (
        "blocks",
        QT_TRANSLATE_NOOP("views.requests_numbers", "blocks: physical / mapped"),
        QT_TRANSLATE_NOOP(
            "views.requests_numbers",
            "with caching on: physical blocks, the blocks of the pool behind its block table, each counted once as "
            "vLLM's allocator counts them (per request: the ones no earlier request's table mapped; all: every "
            "physical block) / logical blocks mapped, the entries of its block table when it finished (a block "
            "several requests share is mapped in each of their tables; all: the sum of the tables' entries)",
        ),
    ),
)
ROW_KEYS = tuple(key for key, _, _ in ROWS)
TIER_ROWS = ("from_host", "from_disk", "saved")  # shown for a run with offload tiers


def ms_figure(value: float) -> str:
    """A time as a bare figure (the table's header holds the unit), fewer decimals as it grows."""
    return num(value, 2) if value < 10 else num(value, 1) if value < 100 else num(value, 0)


#: the comparison's verdicts as the table says them (the data keeps the engine's words)
VERDICT_WORDS = {
    "faster": QT_TRANSLATE_NOOP("views.requests_numbers", "faster"),
    "slower": QT_TRANSLATE_NOOP("views.requests_numbers", "slower"),
    "within noise": QT_TRANSLATE_NOOP("views.requests_numbers", "within noise"),
}


NOISE_MARK = "≈"  # "within noise" where the table has no room for the words (as the costs table marks it); the tip says it


def verdict_cell(comparison, compact: bool = False) -> tuple[object, str]:
    """A request's paired TTFT comparison (``kvsim.core.compare.Comparison`` or None) as (value, text); ``compact``:
    "within noise" as ≈ (the words stay in the cell's tooltip)."""
    if comparison is None:
        return None, "–"
    if compact and comparison.verdict == "within noise":
        return comparison, NOISE_MARK
    return comparison, translate("views.requests_numbers", VERDICT_WORDS[comparison.verdict])


def verdict_tip(comparison) -> str:
    return translate(
        "views.requests_numbers", "paired ratio {ratio}× (95% interval {low}–{high}, {pairs} pairs): {verdict}"
    ).format(
        ratio=num(comparison.ratio, 3),
        low=num(comparison.low, 3),
        high=num(comparison.high, 3),
        pairs=comparison.pairs,
        verdict=translate("views.requests_numbers", VERDICT_WORDS[comparison.verdict]),
    )


def signed_ms(value: float) -> str:
    """A time saved (negative: lost), with its sign."""
    return ("+" if value > 0 else "−" if value < 0 else "") + ms_figure(abs(value))


def _blocks(physical: int, mapped: int) -> tuple[tuple[int, int], str]:
    """The blocks cell: physical blocks held / logical blocks mapped (one row: the stage has no height for two)."""
    return (physical, mapped), f"{integer(physical)} / {integer(mapped)}"


def _ratio(value: float | None) -> str:
    return "–" if value is None else num(value, 2) + "×"


class SideBySideTable(QTableWidget):
    """Rows: the quantities; columns: the requests, then "all". Each cell keeps its raw value
    (``Qt.UserRole``) beside the text."""

    def __init__(self, parent=None) -> None:
        super().__init__(len(ROWS), 0, parent)
        indent = {"spread_off", "spread_on"}  # under their TTFT row
        self.setVerticalHeaderLabels(
            [("   " if k in indent else "") + translate("views.requests_numbers", label) for k, label, _ in ROWS]
        )
        for i, (_, _, tip) in enumerate(ROWS):
            self.verticalHeaderItem(i).setToolTip(translate("views.requests_numbers", tip))
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)  # sized once per fill
        self.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.setSizeAdjustPolicy(QAbstractItemView.SizeAdjustPolicy.AdjustToContents)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self._both = None
        self.compact = False  # the verdicts "within noise" as ≈: the table had no room for the words (``fit``)
        self.wide = 0  # the table's width with the words
        theme.on_change(self._on_theme)  # a bound method: held weakly, gone with the view

    def _on_theme(self, _name: str) -> None:
        if self._both is not None:
            self.set_runs(self._both)

    def value(self, key: str, column: int):
        item = self.item(ROW_KEYS.index(key), column)
        return None if item is None else item.data(Qt.ItemDataRole.UserRole)

    def text(self, key: str, column: int) -> str:
        item = self.item(ROW_KEYS.index(key), column)
        return "" if item is None else item.text()

    def set_runs(self, both) -> None:
        """Fill from a ``SideBySide`` (its ``off`` and ``on`` runs of the same requests)."""
        self._both = both
        off, on = both.off.requests, both.on.requests
        n = len(on)
        self.setColumnCount(n + 1)
        self.setHorizontalHeaderLabels(
            [translate("views.requests_numbers", "req {n}").format(n=i + 1) for i in range(n)]
            + [translate("views.requests_numbers", "all")]
        )
        for i in range(n):
            head = self.horizontalHeaderItem(i)
            assert head is not None  # setHorizontalHeaderLabels just made one for every column
            head.setBackground(QBrush(QColor(request_color(i))))
            head.setForeground(QBrush(QColor(ink_on(request_color(i)))))
            head.setToolTip(plain_tip(on[i].prompt or ""))  # a prompt read from a file: shown as typed
        ratios = both.ttft_ratios()
        physical = both.on.physical_blocks()
        offload = both.on.meta.get("offload")
        recalled = list(offload["recalled"]) if isinstance(offload, dict) else []
        recalled += [[0, 0]] * (n - len(recalled))
        for key in TIER_ROWS:  # the tiers' rows only for a run with tiers
            self.setRowHidden(ROW_KEYS.index(key), not offload)
        for i, (a, b) in enumerate(zip(off, on, strict=True)):
            self._column(
                i,
                {
                    "prompt": (len(b.prompt_ids), None),
                    "computed_off": (a.prefill_rows, None),
                    "computed_on": (b.prefill_rows, None),
                    "reused": (b.reused_rows, None),
                    "hits": ((b.hit_blocks, b.miss_blocks), f"{b.hit_blocks} / {b.miss_blocks}"),
                    "from_host": (int(recalled[i][0]), None),
                    "from_disk": (int(recalled[i][1]), None),
                    "saved": (a.ttft_ms - b.ttft_ms, signed_ms(a.ttft_ms - b.ttft_ms)),
                    "ttft_off": (a.ttft_ms, ms_figure(a.ttft_ms)),
                    "spread_off": ((a.ttft_ms_min, a.ttft_ms_max), f"{ms_figure(a.ttft_ms_min)}–{ms_figure(a.ttft_ms_max)}"),
                    "ttft_on": (b.ttft_ms, ms_figure(b.ttft_ms)),
                    "spread_on": ((b.ttft_ms_min, b.ttft_ms_max), f"{ms_figure(b.ttft_ms_min)}–{ms_figure(b.ttft_ms_max)}"),
                    "ratio": (ratios[i], _ratio(ratios[i])),
                    "verdict": verdict_cell(both.ttft[i] if both.ttft else None, self.compact),
                    "blocks": _blocks(physical[i], b.blocks_held),
                },
            )
        t_off, t_on = sum(r.ttft_ms for r in off), sum(r.ttft_ms for r in on)
        total = {
            "prompt": (sum(len(r.prompt_ids) for r in on), None),
            "computed_off": (sum(r.prefill_rows for r in off), None),
            "computed_on": (sum(r.prefill_rows for r in on), None),
            "reused": (sum(r.reused_rows for r in on), None),
            "hits": ((sum(r.hit_blocks for r in on), sum(r.miss_blocks for r in on)), None),
            "from_host": (sum(int(h) for h, _ in recalled), None),
            "from_disk": (sum(int(d) for _, d in recalled), None),
            "saved": (t_off - t_on, signed_ms(t_off - t_on)),
            "ttft_off": (t_off, ms_figure(t_off)),
            "spread_off": (None, ""),
            "ttft_on": (t_on, ms_figure(t_on)),
            "spread_on": (None, ""),
            "ratio": (t_on / t_off if t_off > 0 else None, _ratio(t_on / t_off if t_off > 0 else None)),
            "verdict": (None, ""),
            "blocks": _blocks(sum(physical), sum(r.blocks_held for r in on)),
        }
        total["hits"] = (total["hits"][0], "{} / {}".format(*total["hits"][0]))
        self._column(n, total, bold=True)
        all_head = self.horizontalHeaderItem(n)
        assert all_head is not None  # the "all" column's, made with the others
        all_head.setToolTip(
            translate("views.requests_numbers", "sums over the requests (the ratio: total TTFT on ÷ total TTFT off)")
        )
        self.resizeColumnsToContents()
        self.resizeRowsToContents()
        if not self.compact:
            self.wide = self.needed_width()

    def needed_width(self) -> int:
        """The width the table's header and columns take (its frame included)."""
        columns = sum(self.columnWidth(c) for c in range(self.columnCount()) if not self.isColumnHidden(c))
        return self.verticalHeader().sizeHint().width() + columns + 2 * self.frameWidth()

    def fit(self, room: int) -> None:
        """The verdicts in words where the table fits ``room`` with them, else as ≈ (Portuguese's "dentro do
        ruído" in four columns pushed the "all" column off a 853 px stage)."""
        compact = self.wide > room > 0
        if compact != self.compact:
            self.compact = compact
            if self._both is not None:
                self.set_runs(self._both)

    def _column(self, col: int, cells: dict[str, tuple[object, str | None]], bold: bool = False) -> None:
        for row, key in enumerate(ROW_KEYS):
            value, text = cells[key]
            item = QTableWidgetItem(integer(cast(int, value)) if text is None else text)  # no text: a count
            item.setData(Qt.ItemDataRole.UserRole, value)
            item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            if key == "ratio" and isinstance(value, float) and value < 1:
                item.setForeground(QBrush(QColor(theme.ACCENT)))
            if key == "verdict" and isinstance(value, Comparison):
                item.setToolTip(verdict_tip(value))
                if value.verdict == "faster":
                    item.setForeground(QBrush(QColor(theme.ACCENT)))
            if bold:
                font = item.font()
                font.setBold(True)
                item.setFont(font)
            self.setItem(row, col, item)


class WasteBars(QWidget):
    """The waste of the allocation schemes as bars: the length is the slots reserved, the solid part
    the rows held, the hatched part the waste (``rows``: [(label, slots, waste or None, tooltip)])."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.rows: list[tuple[str, int, float | None]] = []
        self.used = 0
        self.bytes_per_slot = 0
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setToolTip(
            translate(
                "views.requests_numbers",
                "memory for these requests' rows held at once: the bar is what each scheme reserves, "
                "the solid part the rows really held, the hatched part reserved but empty",
            )
        )
        theme.on_change(self._on_theme)

    def _on_theme(self, _name: str) -> None:
        self.update()

    def set_waste(self, waste, prefix_caching: bool) -> None:
        self.used, self.bytes_per_slot = waste.exact_slots, waste.bytes_per_slot
        self.rows = [
            (
                translate("views.requests_numbers", "contiguous, preallocated to {n} tokens").format(n=integer(waste.max_len)),
                waste.preallocated_slots,
                waste.preallocated_waste,
            ),
            (
                translate("views.requests_numbers", "contiguous, exact (length known in advance)"),
                waste.exact_slots,
                waste.exact_waste,
            ),
            (
                translate("views.requests_numbers", "paged, blocks of {b}").format(b=waste.block_size),
                waste.paged_slots,
                waste.paged_waste,
            ),
        ]
        if prefix_caching:
            self.rows.append(
                (translate("views.requests_numbers", "paged, shared prefix counted once"), waste.paged_shared_slots, None)
            )
        self.setFixedHeight(self.sizeHint().height())
        self.update()

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt
        return QSize(400, max(1, len(self.rows)) * (self.fontMetrics().height() + 16) + 4)

    def paintEvent(self, event) -> None:  # noqa: N802 - Qt
        p = QPainter(self)
        fm = self.fontMetrics()
        line = fm.height()
        most = max((slots for _, slots, _ in self.rows), default=1) or 1
        width = self.width() - 8
        for i, (label, slots, waste) in enumerate(self.rows):
            y = 2 + i * (line + 16)
            size = local(theme.human_bytes(slots * self.bytes_per_slot))
            if waste is None:
                saved = integer(self.rows[2][1] - slots) if len(self.rows) > 2 else "–"
                text = translate("views.requests_numbers", "{scheme}: {slots} slots ({size}) · saves {saved}")
                text = text.format(scheme=label, slots=integer(slots), size=size, saved=saved)
            else:
                text = translate("views.requests_numbers", "{scheme}: {slots} slots ({size}) · {percent}% wasted")
                text = text.format(scheme=label, slots=integer(slots), size=size, percent=num(100 * waste, 1))
            p.setPen(QColor(theme.TEXT))
            p.drawText(
                QRectF(4, y, width, line),
                Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                fm.elidedText(text, Qt.TextElideMode.ElideRight, width),
            )
            bar_y, bar_h = y + line + 2, 10
            total_w = max(2.0, width * slots / most)
            used_w = min(total_w, width * min(self.used, slots) / most)
            p.fillRect(QRectF(4, bar_y, used_w, bar_h), QColor(theme.HIGHLIGHT))
            if total_w > used_w:
                rect = QRectF(4 + used_w, bar_y, total_w - used_w, bar_h)
                p.fillRect(rect, QBrush(QColor(theme.ERROR), Qt.BrushStyle.BDiagPattern))
                p.setPen(QPen(QColor(theme.ERROR), 1))
                p.drawRect(rect)
        p.end()
