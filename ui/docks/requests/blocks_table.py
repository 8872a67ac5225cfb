"""A request's block table drawn as a mapping: one column per logical block j, under it the physical
block b it maps to and how many of its slots hold this request's rows; the leading blocks reused from
the prefix cache are marked "hit"."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem

from kvsim.core.words import QT_TRANSLATE_NOOP  # typed str, found by pyside6-lupdate as Qt's

from ... import theme
from ...i18n import translate
from .blocks import ink_on, request_color

ROWS = (  # translated where shown
    QT_TRANSLATE_NOOP("views.blocks_table", "logical j"),
    QT_TRANSLATE_NOOP("views.blocks_table", "→ physical b"),
    QT_TRANSLATE_NOOP("views.blocks_table", "rows"),
)
ROW_TIPS = (
    QT_TRANSLATE_NOOP(
        "views.blocks_table", "the request's own numbering of its blocks: logical block j holds positions j·B … j·B+B−1"
    ),
    QT_TRANSLATE_NOOP(
        "views.blocks_table", "where that block lives in the shared pool (the grid's #b): the block table maps j → b"
    ),
    QT_TRANSLATE_NOOP(
        "views.blocks_table",
        "how many of the block's B slots hold this request's rows ('hit': reused from the prefix cache)",
    ),
)


class BlockTableView(QTableWidget):
    """The selected request's block table at one step."""

    def __init__(self, parent=None) -> None:
        super().__init__(len(ROWS), 0, parent)
        self.setVerticalHeaderLabels([translate("views.blocks_table", label) for label in ROWS])
        for i, tip in enumerate(ROW_TIPS):
            self.verticalHeaderItem(i).setToolTip(translate("views.blocks_table", tip))
        self.horizontalHeader().hide()
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)  # sized once per fill: not per item
        self.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self._fit_height()
        self.mapping: tuple[tuple[int, int], ...] = ()
        self._state: tuple[object, int] | None = None  # set_table's (state, block_size), redrawn on a theme change
        theme.on_change(self._on_theme)

    def _fit_height(self) -> None:
        rows = sum(self.rowHeight(i) for i in range(self.rowCount()))
        bar = self.horizontalScrollBar().sizeHint().height()
        self.setFixedHeight(rows + bar + 2 * self.frameWidth() + 2)

    def set_table(self, state, block_size: int) -> None:
        """Show ``state`` (a ``TableState``, or None for no request)."""
        self._state = (state, block_size)
        self.mapping = tuple(enumerate(state.blocks)) if state is not None and not state.finished else ()
        self.setUpdatesEnabled(False)
        try:
            self._fill(state, block_size)
        finally:
            self.setUpdatesEnabled(True)

    def _fill(self, state, block_size: int) -> None:
        self.clearContents()
        self.setColumnCount(len(self.mapping))
        if state is None:
            return
        color = request_color(state.request)
        ink = ink_on(color)
        for j, b in self.mapping:
            held = min(block_size, state.n_tokens - j * block_size)
            hit = j < state.hit_blocks
            rows = (translate("views.blocks_table", "{held}/{size} hit") if hit else "{held}/{size}").format(
                held=held, size=block_size
            )
            texts = (f"L{j}", f"#{b}", rows)
            for row, text in enumerate(texts):
                item = QTableWidgetItem(text)
                item.setTextAlignment(Qt.AlignmentFlag.AlignCenter)
                if row == 0:
                    item.setBackground(QBrush(QColor(color)))
                    item.setForeground(QBrush(QColor(ink)))
                elif row == 2 and hit:
                    item.setForeground(QBrush(QColor(theme.ACCENT)))
                self.setItem(row, j, item)
        self.resizeColumnsToContents()

    def _on_theme(self, _name: str) -> None:
        if self._state is not None:
            self.set_table(*self._state)
