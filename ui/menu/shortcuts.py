"""The shortcut sheet (``?`` or F1): every key the window answers, read from its actions (so a key
added anywhere is listed without editing this file), in a dialog that Esc closes."""

from __future__ import annotations

from html import escape

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QMainWindow, QScrollArea, QVBoxLayout, QWidget

from ..i18n import translate

FIRST = [  # the sheet's order: stepping, then the stage's views, the lesson, the demos, presenting
    *("Space", "Right", "Left", "Home", "+ / =", "-", "1 … 9", "L"),
    *("F", "C", "T", "H", "M", "G", "R", "B", "O", "Q", "PgDown", "PgUp", "S", "F2"),
    *(f"Alt+{i}" for i in range(1, 10)),
    *("F5", "Esc", "F11", "? / F1"),
]


def key_rows(window: QMainWindow) -> list[tuple[str, str]]:
    """(keys, what) for every action of the window with a shortcut, each key once; the nine layer keys
    as one row."""
    rows: list[tuple[str, str, str]] = []  # (keys as shown, what, keys in English: the order)
    seen: set[str] = set()
    layers = False
    for action in window.findChildren(QAction):
        sequences = [k for k in action.shortcuts() if not k.isEmpty()]
        sequences = [k for k in sequences if k.toString(QKeySequence.SequenceFormat.PortableText) not in seen]
        if not sequences:
            continue
        seen.update(k.toString(QKeySequence.SequenceFormat.PortableText) for k in sequences)
        if action.data() == "layer-key":
            layers = True
            continue
        what = action.text().replace("&", "").strip() or action.toolTip()
        shown = " / ".join(k.toString(QKeySequence.SequenceFormat.NativeText) for k in sequences)
        rows.append((shown, what, " / ".join(k.toString(QKeySequence.SequenceFormat.PortableText) for k in sequences)))
    if layers:
        rows.append(("1 … 9", translate("shortcuts", "Layer 0 … 8"), "1 … 9"))
    hover = translate("shortcuts", "hover a token or row")
    rows.append((hover, translate("shortcuts", "the same token highlighted in every view"), hover))
    inside = "← → · Shift+← → · Home / End"  # the requests view's own keys (while it has the focus)
    what = translate(
        "shortcuts", "in the requests view: one step · the previous / next request's prefill · the first / last step"
    )
    rows.append((inside, what, inside))
    rows.sort(key=lambda r: (FIRST.index(r[2]) if r[2] in FIRST else len(FIRST), r[0].lower()))
    return [(keys, what) for keys, what, _ in rows]


class ShortcutSheet(QDialog):
    def __init__(self, window: QMainWindow) -> None:
        super().__init__(window)
        self.setWindowTitle(translate("shortcuts", "kvsim — keys"))
        self.rows = key_rows(window)
        lay = QVBoxLayout(self)
        html = "<table cellspacing='0' cellpadding='4'>" + "".join(
            f"<tr><td><b>{escape(k)}</b></td><td>{escape(w)}</td></tr>" for k, w in self.rows
        )
        self.label = QLabel(html + "</table>")
        self.label.setTextFormat(Qt.TextFormat.RichText)
        area = QScrollArea()
        area.setWidgetResizable(True)
        area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        holder = QWidget()
        QVBoxLayout(holder).addWidget(self.label)
        area.setWidget(holder)
        lay.addWidget(area)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        lay.addWidget(buttons)
        room = window.size()
        hint = self.label.sizeHint()
        self.resize(min(hint.width() + 60, room.width()), min(hint.height() + 100, room.height()))


def install(window: QMainWindow) -> QAction:
    """The ``?`` / F1 action on the window (and in its ☰ menu, where the caller adds it)."""
    action = QAction(translate("shortcuts", "Keys (shortcut sheet)"), window)
    action.setShortcuts([QKeySequence("?"), QKeySequence("F1")])
    action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
    action.triggered.connect(lambda _checked=False: show(window))
    window.addAction(action)
    return action


def show(window: QMainWindow) -> ShortcutSheet:
    sheet = ShortcutSheet(window)  # the window (its parent) keeps it
    sheet.open()
    return sheet
