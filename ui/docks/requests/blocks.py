"""The Blocks view: the paged pool as a grid of physical blocks, drawn from one ``PoolSnapshot``.

Each cell is one physical block: its ``B`` token slots (filled slots in the colour of the request whose
rows they hold, empty slots as outlines), its id (#b), its reference count when it is shared (×N, and
a stripe per holder on its left edge), what happened to it in this step (new, write, hit, copy, evicted,
cached, freed), and — for the selected request — its logical index (L j). A free block that still holds
reusable rows (registered by hash) is drawn dimmed with a dashed border, in its last holder's colour.
A free block also shows its place in the free queue (q1 is the block handed out next, marked "next"),
and vLLM's null block 0 (reserved, never handed out) says "null".

A run with offload tiers (``PoolSnapshot.tiers``) gets, under the device pool, one section per tier (a
heading in words, then the blocks it holds, the next out first); every cell has a band in its tier's
colour (device, host, disk). A tier block written this step says "stored", one read back "loaded"; the
device block a load filled says "from host" / "from disk".

``cells()`` is what ``paintEvent`` draws (and what the tests read).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import QEvent, QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from kvsim.core.words import QT_TRANSLATE_NOOP  # typed str, found by pyside6-lupdate as Qt's

from ... import theme
from ...i18n import translate

# Paul Tol's colour-blind-safe qualitative schemes, in an order that starts away from the lanes'
# orange and blue (this dock's colours mean requests, not cache policies)
REQUEST_COLORS = {
    "dark": ("#44BB99", "#FFAABB", "#EEDD88", "#77AADD", "#EE8866", "#99DDFF", "#BBCC33", "#AAAA00"),
    "light": ("#009988", "#EE3377", "#DDAA33", "#0077BB", "#EE7733", "#33BBEE", "#AA3377", "#6B8E23"),
}
EVENT_WORDS = {  # the engine's event → the short word drawn in a cell (English here; translated where drawn)
    "allocated": "new",
    "written": "write",
    "hit": "hit",
    "copied": "copy",
    "evicted": "evict",
    "cached": "cached",
    "freed": "freed",
}
EVENT_LABELS = {  # the word as drawn, marked for translation
    "new": QT_TRANSLATE_NOOP("views.blocks", "new"),
    "write": QT_TRANSLATE_NOOP("views.blocks", "write"),
    "hit": QT_TRANSLATE_NOOP("views.blocks", "hit"),
    "copy": QT_TRANSLATE_NOOP("views.blocks", "copy"),
    "evict": QT_TRANSLATE_NOOP("views.blocks", "evict"),
    "cached": QT_TRANSLATE_NOOP("views.blocks", "cached"),
    "freed": QT_TRANSLATE_NOOP("views.blocks", "freed"),
    "next": QT_TRANSLATE_NOOP("views.blocks", "next"),
    "null": QT_TRANSLATE_NOOP("views.blocks", "null"),
    "stored": QT_TRANSLATE_NOOP("views.blocks", "stored"),
    "loaded": QT_TRANSLATE_NOOP("views.blocks", "loaded"),
    "from host": QT_TRANSLATE_NOOP("views.blocks", "from host"),
    "from disk": QT_TRANSLATE_NOOP("views.blocks", "from disk"),
}
EVENT_MEANING = {
    "new": QT_TRANSLATE_NOOP("views.blocks", "taken from the free list for this request"),
    "write": QT_TRANSLATE_NOOP("views.blocks", "rows written into it in this step"),
    "hit": QT_TRANSLATE_NOOP("views.blocks", "found by its hash and reused: its rows were not computed again"),
    "copy": QT_TRANSLATE_NOOP("views.blocks", "copied before a write (copy-on-write)"),
    "evict": QT_TRANSLATE_NOOP("views.blocks", "its cached rows were dropped so it could be handed out again"),
    "cached": QT_TRANSLATE_NOOP("views.blocks", "freed, but its rows stay findable by hash"),
    "freed": QT_TRANSLATE_NOOP("views.blocks", "freed, nothing to reuse"),
    "next": QT_TRANSLATE_NOOP("views.blocks", "first in the free queue: the block handed out next"),
    "null": QT_TRANSLATE_NOOP("views.blocks", "vLLM's null block: reserved, never handed out"),
    "stored": QT_TRANSLATE_NOOP("views.blocks", "a tier block written in this step: evicted from the device, its rows kept here"),
    "loaded": QT_TRANSLATE_NOOP(
        "views.blocks", "a tier block read back in this step: a prefix hit copied its rows to the device"
    ),
    "from host": QT_TRANSLATE_NOOP("views.blocks", "a device block filled in this step from the host tier (a prefix hit)"),
    "from disk": QT_TRANSLATE_NOOP("views.blocks", "a device block filled in this step from the disk tier (a prefix hit)"),
}
TIER_WORDS = ("stored", "loaded", "from host", "from disk")  # the cell words only a run with offload tiers draws
TIERS = ("device", "host", "disk")
TIER_COLORS = {  # a band on every cell: where the block's rows are (colour-blind-safe apart; the legend says it in words)
    "dark": {"device": "#BBBBBB", "host": "#CC99EE", "disk": "#D9A560"},
    "light": {"device": "#666666", "host": "#7B3294", "disk": "#8C510A"},
}
TIER_NAMES = {
    "device": QT_TRANSLATE_NOOP("views.blocks", "device"),
    "host": QT_TRANSLATE_NOOP("views.blocks", "host"),
    "disk": QT_TRANSLATE_NOOP("views.blocks", "disk"),
}
TIER_BAND = 3  # px: the tier's band along a cell's top edge
MIN_CELL_W = 74  # at least; wider when the cell's words need it (cell_width)
WITH_LOGICAL = ("new", "write", "hit", "copy", "evict")  # the words drawn beside a logical index "L j"
MAX_SLOT = 12


def event_label(word: str) -> str:
    """The cell word ``word`` ("hit", "evict", …) in the app's language."""
    return translate("views.blocks", EVENT_LABELS[word]) if word in EVENT_LABELS else word


def event_meaning(word: str) -> str:
    """What the cell word ``word`` means, in the app's language."""
    return translate("views.blocks", EVENT_MEANING[word]) if word in EVENT_MEANING else ""


def tier_color(tier: str) -> str:
    """The colour of offload tier ``tier`` ("device", "host", "disk") in the current theme."""
    return TIER_COLORS[theme.current()][tier]


def tier_name(tier: str) -> str:
    """The tier's name in the app's language."""
    return translate("views.blocks", TIER_NAMES[tier]) if tier in TIER_NAMES else tier


def tier_heading(state) -> str:
    """A tier section's heading: what it holds of its capacity, in words (``state``: a ``TierState``)."""
    return translate("views.blocks", "{tier} tier: {n} of {cap} blocks held, the next out first").format(
        tier=tier_name(state.tier), n=len(state.hashes), cap=state.capacity
    )


def request_color(index: int) -> str:
    """The colour of request ``index`` (0-based) in the current theme."""
    colors = REQUEST_COLORS[theme.current()]
    return colors[index % len(colors)]


def ink_on(fill: str) -> str:
    """Black or white: whichever reads better on ``fill``."""
    return "#000000" if float(theme.relative_luminance(fill)) > 0.3 else "#ffffff"


def slot_grid(block_size: int) -> tuple[int, int]:
    """(columns, rows) of a block's slots: rows of up to 8, in reading order."""
    cols = min(block_size, 8)
    return cols, -(-block_size // cols)


@dataclass(frozen=True)
class BlockCell:
    block: int
    rect: QRectF
    owners: tuple[int, ...]  # requests whose live table maps it
    color: str | None  # the fill of its filled slots (None: nothing to draw)
    stripes: tuple[str, ...]  # one colour per holder (drawn when shared)
    refs: int
    filled: int
    event: str  # the short word ("" when nothing happened)
    cached: bool  # free, but holds rows findable by hash
    logical: int | None  # its index in the selected request's block table
    queue_place: int | None = None  # its place in the free queue (0: handed out next); None: held, or not recorded
    null: bool = False  # vLLM's reserved null block
    tier: str = "device"  # where its rows are: the device pool, or an offload tier ("host", "disk")
    block_hash: str | None = None  # a tier block's hash (its ``block`` is then its place in the tier, 0 next out)


class BlocksGrid(QWidget):
    """The pool of one snapshot; ``hovered(block)`` (-1 when off every block)."""

    hovered = Signal(int)
    tier_hovered = Signal(str, int)  # a tier block: (tier, place), the next out 0

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.snapshot = None
        self.last_owner: np.ndarray | None = None
        self.selected: int | None = None
        self.hover_block = -1
        self.fit = False  # every block within the height its scroll area shows (the stage): smaller slots
        self.one_line = False  # the cell's text on one line (set by _metrics when fitted)
        self.slot = float(MAX_SLOT)
        self._cells: list[BlockCell] = []
        self._headings: list[tuple[QRectF, str]] = []  # the tier sections' headings
        self.hover_tier: tuple[str, int] | None = None
        self.moves: tuple = ()  # the tier moves of the shown step (``RequestsRun.moves_at``)
        self.setMouseTracking(True)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)  # so ← → reach the view when the grid was clicked
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.setToolTip("")
        theme.on_change(self._on_theme)

    # ---------------------------------------------------------------- state
    def set_snapshot(
        self, snapshot, last_owner: np.ndarray | None = None, selected: int | None = None, moves: tuple = ()
    ) -> None:
        """Draw ``snapshot``; ``last_owner[b]``: the request that last held block b (-1: none); ``moves``: the
        tier moves made in its step (what marks tier blocks "stored"/"loaded")."""
        self.snapshot, self.last_owner, self.selected, self.moves = snapshot, last_owner, selected, tuple(moves)
        self._relayout()

    def _on_theme(self, _name: str) -> None:
        self._relayout()

    # ---------------------------------------------------------------- geometry
    def _metrics(self) -> tuple[int, int, float]:
        """(columns of cells, cell width, cell height) for the current width."""
        fm = self.fontMetrics()
        size = self.snapshot.block_size if self.snapshot is not None else 16
        parent = self.parentWidget()
        room = parent.height() if self.fit and parent is not None else 0
        self.one_line = room > 0  # fitted (the stage): the event word and L j beside the id, one text line
        least = self.cell_width()
        width = max(self.width(), least)
        n_cols = max(1, width // least)
        cell_w = width / n_cols
        cols, rows = slot_grid(size)
        slot = min(MAX_SLOT, (cell_w - 14) / cols)
        text_h = fm.height() + 9 if self.one_line else 2 * fm.height() + 14
        if room > 0 and self.snapshot is not None:
            nb = self.snapshot.n_blocks
            tight = 14 + fm.horizontalAdvance(f"#{nb - 1}") + 6 + QFontMetrics(self.small_font()).horizontalAdvance(f"L{nb - 1}")
            for n in range(n_cols, max(n_cols, width // max(tight, 1)) + 1):  # more, narrower cells while slots are small
                cw = width / n
                lines = -(-nb // n) + sum(1 + -(-len(t.hashes) // n) for t in self.snapshot.tiers)
                s = max(2.0, min(MAX_SLOT, (cw - 14) / cols, ((room - 6) / lines - 4 - text_h) / rows))
                n_cols, cell_w, slot = n, cw, s
                if s >= 5:
                    break
        self.slot = slot
        cell_h = text_h + rows * slot
        return n_cols, int(cell_w), cell_h

    def set_fit(self, on: bool) -> None:
        """Fit every block in the height the scroll area shows (its viewport: the grid's parent)."""
        if on == self.fit:
            return
        self.fit = on
        viewport = self.parentWidget()
        if viewport is not None:
            (viewport.installEventFilter if on else viewport.removeEventFilter)(self)
        self._relayout()

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 - Qt API
        if event.type() == QEvent.Type.Resize and watched is self.parentWidget():
            self._relayout()
        return False

    def small_font(self) -> QFont:
        """The font of a cell's footer (the event word, L j)."""
        small = QFont(self.font())
        small.setPointSizeF(max(7.0, self.font().pointSizeF() * 0.8))
        return small

    def cell_width(self) -> int:
        """The narrowest cell that shows its footer whole in the app's language: an event word beside
        the widest "L j", or a word alone (MIN_CELL_W at least)."""
        fm = QFontMetrics(self.small_font())
        n = self.snapshot.n_blocks if self.snapshot is not None else 100
        logical = fm.horizontalAdvance(f"L{max(0, n - 1)}") + 3
        beside = max(fm.horizontalAdvance(event_label(w)) for w in WITH_LOGICAL) + logical
        tiers = bool(self.snapshot is not None and self.snapshot.tiers)
        words = [w for w in EVENT_LABELS if tiers or w not in TIER_WORDS]
        alone = max(fm.horizontalAdvance(event_label(w)) for w in words)
        if tiers:  # a block loaded from a tier says so beside its logical index
            beside = max(beside, max(fm.horizontalAdvance(event_label(w)) for w in ("from host", "from disk")) + logical + 4)
        if getattr(self, "one_line", False):  # fitted: the id and L j on one line; the border says the event (the legend)
            return max(48, 14 + self.fontMetrics().horizontalAdvance(f"#{max(0, n - 1)}×9") + 8 + logical)
        return max(MIN_CELL_W, 14 + max(beside, alone))  # the footer is the cell less 14 px

    def needed_height(self) -> int:
        """The height that shows every block at the current width."""
        if self.snapshot is None:
            return 60
        n_cols, _, cell_h = self._metrics()
        rows = -(-self.snapshot.n_blocks // n_cols)
        tiers = sum(self.heading_height() + -(-len(t.hashes) // n_cols) * cell_h for t in self.snapshot.tiers)
        return int(rows * cell_h + tiers) + 4

    def heading_height(self) -> int:
        return self.fontMetrics().height() + 8

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt
        return QSize(self.cell_width() * 8, self.needed_height())

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt
        super().resizeEvent(event)
        self._relayout()

    def _relayout(self) -> None:
        self._cells = self._make_cells()
        need = self.needed_height()
        if self.minimumHeight() != need:
            self.setMinimumHeight(need)
        self.update()

    # ---------------------------------------------------------------- cells
    def _make_cells(self) -> list[BlockCell]:
        snap = self.snapshot
        self._headings = []
        if snap is None:
            return []
        n_cols, cell_w, cell_h = self._metrics()
        loaded = {str(m["block_hash"]): str(m["tier"]) for m in self.moves if m["direction"] == "load"}
        table = snap.table(self.selected) if self.selected is not None else None
        logical = {b: j for j, b in enumerate(table.blocks)} if table is not None and not table.finished else {}
        queue = {b: k for k, b in enumerate(snap.free_queue or ())}
        null = snap.null_block
        cells = []
        for b in range(snap.n_blocks):
            r, c = divmod(b, n_cols)
            rect = QRectF(c * cell_w + 2, r * cell_h + 2, cell_w - 4, cell_h - 4)
            owners = snap.owners[b]
            refs = int(snap.ref_counts[b])
            cached = refs == 0 and snap.hashes[b] is not None
            last = int(self.last_owner[b]) if self.last_owner is not None and b < self.last_owner.size else -1
            if owners:
                color = request_color(owners[0])
            elif int(snap.filled[b]) > 0 and last >= 0:
                color = request_color(last)
            else:
                color = None
            event = EVENT_WORDS.get(snap.events[b], snap.events[b])
            if event == "hit" and snap.hashes[b] in loaded:  # a prefix hit whose rows came back from a tier
                event = f"from {loaded[snap.hashes[b]]}"
            cells.append(
                BlockCell(
                    block=b,
                    rect=rect,
                    owners=tuple(owners),
                    color=color,
                    stripes=tuple(request_color(o) for o in owners),
                    refs=refs,
                    filled=int(snap.filled[b]),
                    event=event,
                    cached=cached,
                    logical=logical.get(b),
                    queue_place=queue.get(b),
                    null=b == null,
                )
            )
        top = -(-snap.n_blocks // n_cols) * cell_h
        for state in snap.tiers:
            cells += self._tier_cells(state, top, n_cols, cell_w, cell_h)
            top += self.heading_height() + -(-len(state.hashes) // n_cols) * cell_h
        return cells

    def _tier_cells(self, state, top: float, n_cols: int, cell_w: int, cell_h: float) -> list[BlockCell]:
        """One tier's section at height ``top``: its heading, then the blocks it holds (the next out first)."""
        self._headings.append((QRectF(4, top + 4, self.width() - 8, self.heading_height() - 4), tier_heading(state)))
        top += self.heading_height()
        stored = {m["block_hash"] for m in self.moves if m["tier"] == state.tier and m["direction"] == "store"}
        read = {m["block_hash"] for m in self.moves if m["tier"] == state.tier and m["direction"] == "load"}
        color = tier_color(state.tier)
        out = []
        for k, h in enumerate(state.hashes):
            r, c = divmod(k, n_cols)
            out.append(
                BlockCell(
                    block=k,
                    rect=QRectF(c * cell_w + 2, top + r * cell_h + 2, cell_w - 4, cell_h - 4),
                    owners=(),
                    color=color,
                    stripes=(),
                    refs=0,
                    filled=len(state.token_ids[k]),
                    event="loaded" if h in read else "stored" if h in stored else "",
                    cached=False,
                    logical=None,
                    tier=state.tier,
                    block_hash=h,
                )
            )
        return out

    def headings(self) -> list[tuple[QRectF, str]]:
        """The tier sections' headings as drawn: (rect, text)."""
        return list(self._headings)

    def cells(self) -> list[BlockCell]:
        return list(self._cells)

    def block_at(self, pos: QPointF) -> int:
        return next((c.block for c in self._cells if c.tier == "device" and c.rect.contains(pos)), -1)

    def tier_block_at(self, pos: QPointF) -> tuple[str, int] | None:
        return next(((c.tier, c.block) for c in self._cells if c.tier != "device" and c.rect.contains(pos)), None)

    # ---------------------------------------------------------------- input
    def mouseMoveEvent(self, event) -> None:  # noqa: N802 - Qt
        b = self.block_at(event.position())
        tier = self.tier_block_at(event.position())
        if tier != self.hover_tier:
            self.hover_tier = tier
            if tier is not None:
                self.tier_hovered.emit(*tier)
            self.update()
        if b != self.hover_block:
            self.hover_block = b
            if tier is None:
                self.hovered.emit(b)
            self.update()

    def leaveEvent(self, event) -> None:  # noqa: N802 - Qt
        self.hover_tier = None
        if self.hover_block != -1:
            self.hover_block = -1
            self.hovered.emit(-1)
            self.update()
        super().leaveEvent(event)

    # ---------------------------------------------------------------- drawing
    def paintEvent(self, event) -> None:  # noqa: N802 - Qt
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        p.fillRect(self.rect(), QColor(theme.BG))
        if self.snapshot is None:
            p.setPen(QColor(theme.MUTED))
            p.drawText(
                self.rect(),
                Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap,
                translate("views.blocks", "press Run: the pool's blocks are drawn here"),
            )
            return
        size = self.snapshot.block_size
        cols, _ = slot_grid(size)
        fm = self.fontMetrics()
        small = self.small_font()
        small_h = int(fm.height() * 0.85)
        for cell in self._cells:
            self._draw_cell(p, cell, size, cols, fm.height(), small, small_h)
        p.setFont(self.font())
        for rect, text in self._headings:
            p.setPen(QPen(QColor(theme.BORDER), 1))
            p.drawLine(rect.topLeft(), rect.topRight())
            p.setPen(QColor(theme.TEXT))
            p.drawText(
                rect,
                Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                fm.elidedText(text, Qt.TextElideMode.ElideRight, int(rect.width())),
            )
        p.end()

    @staticmethod
    def tier_label(cell: BlockCell) -> str:
        """A tier block's header: the tier's initial and its place (1: the next out)."""
        return f"{tier_name(cell.tier)[:1].upper()}{cell.block + 1}"

    def _draw_cell(self, p: QPainter, cell: BlockCell, size: int, cols: int, line_h: int, small: QFont, small_h: int) -> None:
        rect = cell.rect
        p.fillRect(rect, QColor(theme.PANEL))
        # header: the physical id, and the reference count when shared
        p.setFont(self.font())
        p.setPen(QColor(theme.TEXT if cell.owners else theme.MUTED))
        head = QRectF(rect.left() + 7, rect.top() + 1, rect.width() - 10, line_h)
        if self.snapshot is not None and self.snapshot.tiers:  # every cell says where its rows are: its tier's band
            p.fillRect(QRectF(rect.left() + 1, rect.top() + 1, rect.width() - 2, TIER_BAND), QColor(tier_color(cell.tier)))
        if cell.tier != "device":
            p.setPen(QColor(theme.TEXT))
            p.drawText(head, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, self.tier_label(cell))
        else:
            p.drawText(head, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, f"#{cell.block}")
        if cell.refs >= 2:
            bold = QFont(self.font())
            bold.setBold(True)
            p.setFont(bold)
            p.setPen(QColor(theme.ACCENT))
            where = head.adjusted(QFontMetrics(self.font()).horizontalAdvance(f"#{cell.block}") + 2, 0, 0, 0)
            p.drawText(
                where,
                (Qt.AlignmentFlag.AlignLeft if self.one_line else Qt.AlignmentFlag.AlignRight) | Qt.AlignmentFlag.AlignVCenter,
                f"×{cell.refs}",
            )
        elif cell.queue_place is not None and not self.one_line:  # its place in the free queue (q1: next)
            p.setFont(self.small_font())
            p.setPen(QColor(theme.ACCENT if cell.queue_place == 0 else theme.MUTED))
            p.drawText(head, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, f"q{cell.queue_place + 1}")
        # the slots
        slot = min(MAX_SLOT, (rect.width() - 10) / cols, self.slot)
        x0, y0 = rect.left() + 7, rect.top() + line_h + 3
        fill = QColor(cell.color) if cell.color else None
        if fill is not None and cell.cached:
            fill.setAlpha(110)
        p.setPen(QPen(QColor(theme.BORDER), 1))
        for s in range(size):
            r, c = divmod(s, cols)
            sr = QRectF(x0 + c * slot, y0 + r * slot, slot - 1.5, slot - 1.5)
            if s < cell.filled and fill is not None:
                p.fillRect(sr, fill)
            else:
                p.drawRect(sr)
        # holders: one stripe each on the left edge
        if cell.stripes:
            h = (rect.height() - 2) / len(cell.stripes)
            for i, color in enumerate(cell.stripes):
                p.fillRect(QRectF(rect.left() + 1, rect.top() + 1 + i * h, 4, h), QColor(color))
        # footer: the step's event, and the logical index in the selected request's table
        p.setFont(small)
        foot = QRectF(rect.left() + 7, rect.bottom() - small_h - 2, rect.width() - 10, small_h)
        if self.one_line:  # beside the id (and the ×refs), on the header's line
            refs = f"×{cell.refs}" if cell.refs >= 2 else ""
            ident = QFontMetrics(self.font()).horizontalAdvance(f"#{cell.block}{refs}") + 8
            foot = QRectF(rect.left() + 7 + ident, rect.top() + 1, rect.width() - 10 - ident, line_h)
        word = cell.event or ("null" if cell.null else "next" if cell.queue_place == 0 else "cached" if cell.cached else "")
        word = word if not self.one_line else ""
        logical = f"L{cell.logical}" if cell.logical is not None else ""
        if word:  # elided before the logical index, so a long word never runs under it
            room = foot.width() - (QFontMetrics(small).horizontalAdvance(logical) + 3 if logical else 0)
            accent = ("hit", "next", "loaded", "from host", "from disk")
            p.setPen(QColor(theme.ACCENT if word in accent else theme.ERROR if word == "evict" else theme.MUTED))
            label = QFontMetrics(small).elidedText(event_label(word), Qt.TextElideMode.ElideRight, int(room))
            p.drawText(foot, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, label)
        if logical:
            p.setPen(QColor(theme.TEXT))
            p.drawText(foot, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, logical)
        # the border says the event (and the hover)
        pen = QPen(QColor(theme.BORDER), 1)
        if cell.event in ("hit", "from host", "from disk", "loaded"):
            pen = QPen(QColor(theme.ACCENT), 3)
        elif cell.event == "evict":
            pen = QPen(QColor(theme.ERROR), 2)
        elif cell.event in ("new", "write", "copy", "stored"):
            pen = QPen(QColor(theme.TEXT), 2)
        elif cell.queue_place == 0:  # the block handed out next
            pen = QPen(QColor(theme.ACCENT), 2, Qt.PenStyle.DotLine)
        if cell.cached and not cell.event:
            pen.setStyle(Qt.PenStyle.DashLine)
        if cell.null:
            pen = QPen(QColor(theme.MUTED), 1, Qt.PenStyle.DotLine)
        if cell.logical is not None and pen.width() < 2:
            pen = QPen(QColor(request_color(self.selected or 0)), 2)
        if (cell.tier == "device" and cell.block == self.hover_block) or (cell.tier, cell.block) == self.hover_tier:
            pen = QPen(QColor(theme.HOVER), 2)
        p.setPen(pen)
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.drawRect(rect)
