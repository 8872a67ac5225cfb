"""The memory dock's formula: 2·L·H_kv·d·n·b·bytes with every term an editable field.

``FormulaForm`` holds the terms (layers, K/V heads, head dim, tokens, batch, bits per value, one window
for every layer and/or a per-layer pattern) and shows the formula written out with its value, computed
by ``kvsim.costs.memory.kv_cache_bytes`` — the function ``kvsim memory`` calls, so both read the same.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QComboBox, QGridLayout, QLabel, QLineEdit, QSpinBox, QVBoxLayout, QWidget

from kvsim.core.words import QT_TRANSLATE_NOOP  # typed str, found by pyside6-lupdate as Qt's
from kvsim.costs.memory import (
    MemoryInputError,
    format_layer_windows,
    formula_rows_text,
    human_bytes,
    kv_cache_bytes,
    mla_cache_bytes,
    parse_layer_windows,
    repeat_pattern,
)

from ...i18n import integer, local, translate
from .words import rows_text

BITS = (32, 16, 8, 4, 2)
BITS_TEXT = {32: "32 · FP32", 16: "16 · FP16", 8: "8 · INT8", 4: "4 · INT4", 2: "2 · INT2"}
FIELD_LABELS = (  # in the order of FormulaForm's fields; translated where shown
    QT_TRANSLATE_NOOP("views.memory_form", "layers L"),
    QT_TRANSLATE_NOOP("views.memory_form", "K/V heads H_kv"),
    QT_TRANSLATE_NOOP("views.memory_form", "head dim d"),
    QT_TRANSLATE_NOOP("views.memory_form", "tokens n"),
    QT_TRANSLATE_NOOP("views.memory_form", "batch b"),
    QT_TRANSLATE_NOOP("views.memory_form", "bits"),
    QT_TRANSLATE_NOOP("views.memory_form", "window W"),
    QT_TRANSLATE_NOOP("views.memory_form", "per layer"),
)


@dataclass(frozen=True)
class Terms:
    """The formula's terms as the form holds them (``layer_windows`` already laid over every layer)."""

    layers: int
    kv_heads: int
    head_dim: int
    tokens: int
    batch: int = 1
    bits: int = 16
    window: int | None = None
    layer_windows: tuple[int | None, ...] | None = None
    latent: tuple[int, int] | None = None  # MLA (DeepSeek-V3): (d_c, d_R): L · (d_c + d_R) a token, no K/V heads

    def bytes(self, tokens: int | None = None) -> int:
        n = self.tokens if tokens is None else tokens
        if self.latent is not None:  # one latent and one RoPE key a token and layer (a window caps the tokens)
            held = n if self.window is None else min(n, self.window)
            return mla_cache_bytes(self.layers, self.latent[0], self.latent[1], held, self.batch, self.bits)
        return kv_cache_bytes(
            self.layers, self.kv_heads, self.head_dim, n, self.batch, self.bits, self.window, self.layer_windows
        )

    @property
    def bytes_per_token(self) -> int:
        """One token in every layer, batch 1: what ``kvsim memory`` calls bytes_per_token."""
        if self.latent is not None:
            return mla_cache_bytes(self.layers, self.latent[0], self.latent[1], 1, 1, self.bits)
        return kv_cache_bytes(self.layers, self.kv_heads, self.head_dim, 1, 1, self.bits)

    @property
    def bytes_per_new_token(self) -> int:
        """What one more token adds now (windowed layers stop growing once full)."""
        return self.bytes(self.tokens + 1) - self.bytes()


def _spin(lo: int, hi: int, tip: str, special: str | None = None) -> QSpinBox:
    box = QSpinBox()
    box.setRange(lo, hi)
    box.setGroupSeparatorShown(True)
    box.setKeyboardTracking(False)  # typing "128000" is one change, not six
    box.setToolTip(tip)
    box.setMinimumWidth(64)
    if special:
        box.setSpecialValueText(special)
    return box


class FormulaForm(QWidget):
    """The terms, editable, and the formula written out with its value. ``edited`` fires on a user's
    change (not on ``set_terms``); ``changed`` on every change."""

    changed = Signal()
    edited = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._setting = False
        self._heads = 0  # query heads of the shape on show (to name MHA / GQA / MQA)
        self.layers = _spin(
            1, 10_000, translate("views.memory_form", "L: transformer layers. Every layer keeps its own keys and values.")
        )
        self.kv_heads = _spin(
            1,
            16_384,
            translate(
                "views.memory_form",
                "H_kv: key/value heads. Grouped-query (GQA) and multi-query (MQA) attention share one K/V head\n"
                "between several query heads: the cache counts K/V heads, not query heads.",
            ),
        )
        self.head_dim = _spin(1, 65_536, translate("views.memory_form", "d: numbers in one head's key (and in its value)."))
        self.tokens = _spin(
            0,
            100_000_000,
            translate("views.memory_form", "n: tokens whose keys and values are kept (prompt + generated so far)."),
        )
        self.batch = _spin(
            1, 1_000_000, translate("views.memory_form", "b: sequences served at once. Each one has its own cache.")
        )
        self.bits = QComboBox()
        self.bits.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.bits.setMinimumContentsLength(5)
        for b in BITS:
            self.bits.addItem(BITS_TEXT[b], b)
        self.bits.setToolTip(
            translate(
                "views.memory_form",
                "How many bits each cached number takes: 16 for an FP16/BF16 model, 32 as kvsim runs on the CPU,\n"
                "8 / 4 / 2 for a quantized cache (its scales and zero points come on top).",
            )
        )
        self.window_spin = _spin(  # not self.window: that is QWidget.window()
            0,
            100_000_000,
            translate(
                "views.memory_form",
                "W: a sliding window. Each layer keeps only the last W tokens, so the cache stops\n"
                "growing at W. 'none' keeps every token.",
            ),
            special=translate("views.memory_form", "none"),
        )
        self.pattern = QLineEdit()
        self.pattern.setPlaceholderText(translate("views.memory_form", "none"))
        self.pattern.setMinimumWidth(64)
        self.pattern.setToolTip(
            translate(
                "views.memory_form",
                "A window per layer, repeated over the layers: '4096, full' alternates local and global layers\n"
                "(Gemma 2), '512, 512, 512, 512, 512, full' is Gemma 3. 'full' keeps every token. Same as\n"
                "`kvsim memory --layer-windows`.",
            )
        )
        self.kind = QLabel()
        self.kind.setWordWrap(True)
        self.kind.setToolTip(
            translate("views.memory_form", "MHA: one K/V head per query head. GQA: groups share one. MQA: all share one.")
        )
        self.formula = QLabel()
        self.formula.setWordWrap(True)
        self.formula.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.formula.setObjectName("memoryFormula")
        self.formula.setToolTip(
            translate(
                "views.memory_form",
                "kv bytes = 2 (a key and a value) × Σ over layers of the tokens each layer keeps × H_kv × d × b × bits/8",
            )
        )
        self.detail = QLabel()
        self.detail.setWordWrap(True)
        self.detail.setToolTip(
            translate(
                "views.memory_form",
                "Per token: what one more token costs in every layer (batch 1). Next token: what it adds now\n"
                "(a full window adds nothing).",
            )
        )
        self.error = QLabel()
        self.error.setWordWrap(True)
        self.error.hide()

        grid = QGridLayout()
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setHorizontalSpacing(8)
        for i, (text, box) in enumerate(zip(FIELD_LABELS, (*self._boxes(), self.pattern), strict=True)):
            label = QLabel(translate("views.memory_form", text))
            label.setToolTip(box.toolTip())
            label.setBuddy(box)
            row, col = divmod(i, 2)
            grid.addWidget(label, row, 2 * col, Qt.AlignmentFlag.AlignRight)
            grid.addWidget(box, row, 2 * col + 1)
        grid.setColumnStretch(1, 1)
        grid.setColumnStretch(3, 1)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addLayout(grid)
        lay.addWidget(self.kind)
        lay.addWidget(self.formula)
        lay.addWidget(self.detail)
        lay.addWidget(self.error)
        for box in self._boxes():
            if box is not self.bits:
                box.valueChanged.connect(self._on_edit)
        self.bits.currentIndexChanged.connect(self._on_edit)
        self.pattern.editingFinished.connect(self._on_edit)
        self.terms: Terms | None = None

    def _boxes(self) -> tuple:
        return (self.layers, self.kv_heads, self.head_dim, self.tokens, self.batch, self.bits, self.window_spin)

    # ------------------------------------------------------------------ terms in and out
    def set_terms(self, terms: Terms, heads: int | None = None) -> None:
        """Show ``terms`` (not a user's edit: ``edited`` stays quiet)."""
        self._setting = True
        try:
            self._heads = heads or terms.kv_heads
            self._latent = terms.latent  # kept while the user edits the other terms
            self.layers.setValue(terms.layers)
            self.kv_heads.setValue(terms.kv_heads)
            self.head_dim.setValue(terms.head_dim)
            self.tokens.setValue(terms.tokens)
            self.batch.setValue(terms.batch)
            self.bits.setCurrentIndex(max(0, self.bits.findData(int(terms.bits))))
            self.window_spin.setValue(terms.window or 0)
            self.pattern.setText(format_layer_windows(terms.layer_windows))
        finally:
            self._setting = False
        self._recompute()

    def set_tokens(self, tokens: int) -> None:
        self._setting = True
        try:
            self.tokens.setValue(tokens)
        finally:
            self._setting = False
        self._recompute()

    def _on_edit(self, *_: object) -> None:
        if self._setting:
            return
        self._recompute()
        self.edited.emit()

    def _read(self) -> Terms:
        layers = self.layers.value()
        text = self.pattern.text().strip()
        windows = repeat_pattern(parse_layer_windows(text), layers) if text else None
        if windows is not None and all(w is None for w in windows):
            windows = None
        return Terms(
            layers=layers,
            kv_heads=self.kv_heads.value(),
            head_dim=self.head_dim.value(),
            tokens=self.tokens.value(),
            batch=self.batch.value(),
            bits=int(self.bits.currentData()),
            window=self.window_spin.value() or None,
            layer_windows=windows,
            latent=getattr(self, "_latent", None),
        )

    def _recompute(self) -> None:
        try:
            terms = self._read()
            total = terms.bytes()
        except MemoryInputError as exc:
            self.error.setText(f"⚠ {exc}")
            self.error.setStyleSheet("color: #ff6b6b;")
            self.error.show()
            return
        self.error.hide()
        self.terms = terms
        self._show(terms, total)
        self.changed.emit()

    def _show(self, t: Terms, total: int) -> None:
        plain = formula_rows_text(t.layers, t.window, t.layer_windows) == f"{t.layers} layers × n"
        rows = f"L {t.layers}" if plain else f"({rows_text(t.layers, t.window, t.layer_windows)})"
        size = {4: "½ B", 2: "¼ B"}.get(t.bits, f"{local(f'{t.bits / 8:g}')} B")
        if t.latent is not None:
            self._show_latent(t, total, size)
            return
        self.formula.setText(
            f"<span style='font-size:14pt'>2 × {rows} × H_kv {t.kv_heads} × d {t.head_dim} × n {integer(t.tokens)} × "
            f"b {t.batch} × {size}<br>= <b>{integer(total)} B</b> ({local(human_bytes(total))})</span>"
        )
        heads = max(self._heads, t.kv_heads)
        if t.kv_heads == heads:
            kind = translate("views.memory_form", "MHA: {n} K/V heads, one per query head").format(n=t.kv_heads)
        elif t.kv_heads == 1:
            kind = translate("views.memory_form", "MQA: 1 K/V head shared by all {heads} query heads").format(heads=heads)
        else:
            kind = translate("views.memory_form", "GQA: {n} K/V heads, each shared by {group} of {heads} query heads").format(
                n=t.kv_heads, group=heads // t.kv_heads, heads=heads
            )
        self.kind.setText(kind)
        self.detail.setText(
            translate(
                "views.memory_form", "{bytes} B per token in every layer ({size}) · the next token adds {new} B now"
            ).format(
                bytes=integer(t.bytes_per_token), size=local(human_bytes(t.bytes_per_token)), new=integer(t.bytes_per_new_token)
            )
        )

    def _show_latent(self, t: Terms, total: int, size: str) -> None:
        """A latent cache (MLA): L × (d_c + d_R) × n × b × bytes — one latent and one RoPE key a token and layer."""
        r, dr = t.latent or (0, 0)
        n = f"min(n {integer(t.tokens)}, W {integer(t.window)})" if t.window else f"n {integer(t.tokens)}"
        self.formula.setText(
            f"<span style='font-size:14pt'>L {t.layers} × (d_c {r} + d_R {dr}) × {n} × "
            f"b {t.batch} × {size}<br>= <b>{integer(total)} B</b> ({local(human_bytes(total))})</span>"
        )
        self.kind.setText(
            translate(
                "views.memory_form",
                "MLA: one latent of {r} and one RoPE key of {dr} a token and layer, shared by all {heads} heads"
                " (each head's K and V are rebuilt from it); no K/V heads, no factor 2",
            ).format(r=r, dr=dr, heads=self._heads)
        )
        self.detail.setText(
            translate(
                "views.memory_form", "{bytes} B per token in every layer ({size}) · the next token adds {new} B now"
            ).format(
                bytes=integer(t.bytes_per_token), size=local(human_bytes(t.bytes_per_token)), new=integer(t.bytes_per_new_token)
            )
        )
