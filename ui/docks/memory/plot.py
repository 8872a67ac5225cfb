"""The memory dock's plot: KV-cache bytes against context (1k → 1M tokens, log–log) for several models,
one model's weights at FP32 … INT2 and GPU memories (24 / 80 / 141 GB) as horizontal lines, and the
same model as MHA, as it is (GQA) and as MQA — so where "the cache outgrows the model" shows.
"""

from __future__ import annotations

import math
from html import escape

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QBoxLayout, QLabel, QVBoxLayout, QWidget

from kvsim.costs.memory import WEIGHT_DTYPE_BYTES, human_bytes, weight_bytes
from kvsim.costs.presets import Preset, kind_of, kv_variants, outgrows_weights_at

from ... import theme
from ...i18n import integer, local, translate

CONTEXTS = np.unique(np.round(np.logspace(3, 6, 91)).astype(np.int64))  # 1k → 1M tokens
GPUS = ((24e9, "RTX 4090 24 GB"), (80e9, "H100 80 GB"), (141e9, "H200 141 GB"))
GPU_COLOR = "#e06666"
WEIGHTS = tuple(k for k in WEIGHT_DTYPE_BYTES if k != "bf16")  # bf16 is fp16's size
OTHER_COLORS = ("#56B4E9", "#009E73", "#CC79A7", "#D55E00", "#F0E442", "#6FA8DC", "#E69F00")


def _key(color: str, glyph: str, text: str) -> str:
    return f"<span style='color:{color}'>{glyph}</span>&nbsp;{escape(text)}"


def _short(value: float) -> str:
    """``141_106_000_000`` → ``"141 GB"``: three digits are enough on a plot."""
    text = human_bytes(value)
    number, unit = text.split(" ")
    return f"{float(number):.3g} {unit}"


class BytesAxis(pg.AxisItem):
    """A log axis labelled in bytes: 1 KB, 10 MB, 1 TB."""

    def tickStrings(self, values, scale, spacing):  # noqa: N802 - pyqtgraph API
        return [local(human_bytes(10**v).replace(".00", "") if self.logMode else human_bytes(v)) for v in values]


class TokensAxis(pg.AxisItem):
    def tickStrings(self, values, scale, spacing):  # noqa: N802 - pyqtgraph API
        out = []
        for v in values:
            n = 10**v if self.logMode else v
            out.append(local(f"{n / 1e6:g}M" if n >= 1e6 else f"{n / 1e3:g}k" if n >= 1e3 else f"{n:g}"))
        return out


class MemoryPlot(QWidget):
    """``draw(focus, others, bits, batch, tokens)``; ``curves`` maps each drawn name to its (x, y) data."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.plot = pg.PlotWidget(axisItems={"left": BytesAxis("left"), "bottom": TokensAxis("bottom")})
        self.plot.setMinimumHeight(240)
        self.plot.setMenuEnabled(False)
        self.plot.hideButtons()
        self.plot.setLogMode(True, True)
        self.plot.setLabel("bottom", translate("views.memory_plot", "context (tokens)"))
        self.plot.getPlotItem().setMouseEnabled(False, False)
        self.plot.setToolTip(
            translate(
                "views.memory_plot",
                "KV-cache bytes as the context grows (both axes logarithmic). Solid: the chosen model; dashed: the same\n"
                "model as MHA; dotted: as MQA. Grey lines: the chosen model's weights at each precision; coloured dashed\n"
                "lines: GPU memories. Where a curve crosses a weights line, the cache outgrows the model.",
            )
        )
        self.legend = QLabel()
        self.legend.setWordWrap(True)
        self.legend.setToolTip(translate("views.memory_plot", "The curves: each model's KV cache as the context grows."))
        self.caption = QLabel()
        self.caption.setWordWrap(True)
        self.caption.setToolTip(
            translate(
                "views.memory_plot",
                "Where the chosen model's cache becomes as large as its FP16 weights (batch and bits as above).",
            )
        )
        self.box = QBoxLayout(QBoxLayout.Direction.TopToBottom, self)  # the words beside the plot on a wide, short view
        self.box.setContentsMargins(0, 0, 0, 0)
        self.box.addWidget(self.plot, 1)
        words = QVBoxLayout()
        words.addWidget(self.legend)
        words.addWidget(self.caption)
        words.addStretch(1)
        self.box.addLayout(words, 0)  # side by side: 2 (the plot 3), set by the dock
        self.curves: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self.lines: dict[str, float] = {}  # horizontal lines drawn: English label → bytes (the plot shows it translated)

    def draw(self, focus: Preset, others: list[Preset], bits: int, batch: int, tokens: int | None = None) -> None:
        p = self.plot.getPlotItem()
        p.clear()
        self.curves, self.lines = {}, {}
        keys: list[str] = []
        title = translate("views.memory_plot", "KV cache at {bits} bits, batch {batch}").format(bits=bits, batch=batch)
        p.setTitle(title, color=theme.MUTED, size="11pt")
        x = CONTEXTS
        lo, hi = math.inf, 0.0
        styles = {"MHA": Qt.PenStyle.DashLine, "MQA": Qt.PenStyle.DotLine}
        for variant in kv_variants(focus):
            y = np.array([variant.kv_bytes(int(n), batch, bits) for n in x], dtype=float)
            kind = kind_of(variant)
            style = Qt.PenStyle.SolidLine if variant is focus else styles.get(kind, Qt.PenStyle.DashDotLine)
            width = 3 if variant is focus else 2
            label = f"{focus.name} ({kind}, {variant.kv_heads} K/V heads)" if variant is focus else f"{focus.name} as {kind}"
            p.plot(x, y, pen=pg.mkPen(theme.ACCENT, width=width, style=style))
            self.curves[label] = (x, y)  # keyed in English (tests and scripts); the key below is in the app's language
            glyph = {Qt.PenStyle.SolidLine: "━━", Qt.PenStyle.DashLine: "╍╍", Qt.PenStyle.DotLine: "┈┈"}.get(style, "━━")
            heads = (
                translate("views.memory_plot", "{kind} (1 K/V head)").format(kind=kind)
                if variant.kv_heads == 1
                else translate("views.memory_plot", "{kind} ({n} K/V heads)").format(kind=kind, n=variant.kv_heads)
            )
            keys.append(_key(theme.ACCENT, glyph, f"{focus.name} ({heads})" if variant is focus else heads))
            lo, hi = min(lo, y[0]), max(hi, y[-1])
        for i, other in enumerate(o for o in others if o.name != focus.name):
            y = np.array([other.kv_bytes(int(n), batch, bits) for n in x], dtype=float)
            label = f"{other.name} ({kind_of(other)})"
            color = OTHER_COLORS[i % len(OTHER_COLORS)]
            p.plot(x, y, pen=pg.mkPen(color, width=2))
            self.curves[label] = (x, y)
            keys.append(_key(color, "━━", label))
            lo, hi = min(lo, y[0]), max(hi, y[-1])
        if focus.context and 1e3 <= focus.context <= 1e6:  # the model's own maximum, on its curve
            y0 = focus.kv_bytes(focus.context, batch, bits)
            p.plot([focus.context], [y0], pen=None, symbol="o", symbolSize=9, symbolBrush=theme.ACCENT)
            keys.append(
                _key(
                    theme.ACCENT,
                    "●",
                    translate("views.memory_plot", "its max context, {n} tokens").format(n=integer(focus.context)),
                )
            )
        if tokens and 1e3 <= tokens <= 1e6:
            p.addItem(pg.InfiniteLine(pos=math.log10(tokens), angle=90, pen=pg.mkPen(theme.MUTED, style=Qt.PenStyle.DotLine)))
        n_params = focus.n_params
        for dtype in WEIGHTS:
            value = weight_bytes(n_params, dtype)
            self._hline(p, value, f"{dtype.upper()} {_short(value)}", theme.MUTED, Qt.PenStyle.SolidLine, 0.01)
            lo, hi = min(lo, value), max(hi, value)
        for (value, name), where in zip(GPUS, (0.99, 0.72, 0.99), strict=True):  # H100's label apart from H200's
            self._hline(p, value, name, GPU_COLOR, Qt.PenStyle.DashLine, where)
        hi = max(hi, GPUS[-1][0]) if hi > 1e9 else hi  # GPU lines only widen a plot already in gigabytes
        p.setXRange(3, 6, padding=0.02)
        p.setYRange(math.log10(max(lo, 1)) - 0.3, math.log10(max(hi, 2)) + 0.3, padding=0)
        keys.append(_key(theme.MUTED, "──", translate("views.memory_plot", "{model}'s weights (left)").format(model=focus.name)))
        keys.append(_key(GPU_COLOR, "╍╍", translate("views.memory_plot", "GPU memory (right)")))
        self.legend.setText(" &nbsp; ".join(keys))
        self.caption.setText(self._caption(focus, bits, batch))

    def _hline(self, p, value: float, label: str, color: str, style, where: float) -> None:
        """A horizontal line at ``value`` bytes, labelled ``label`` (drawn with the locale's decimal separator)."""
        line = pg.InfiniteLine(
            pos=math.log10(value),
            angle=0,
            pen=pg.mkPen(color, width=1, style=style),
            label=local(label),
            labelOpts={
                "position": where,
                "color": color,
                "fill": pg.mkBrush(pg.mkColor(theme.BG).red(), pg.mkColor(theme.BG).green(), pg.mkColor(theme.BG).blue(), 200),
                "anchors": [(0, 0.5), (0, 0.5)] if where < 0.5 else [(1, 0.5), (1, 0.5)],
            },
        )
        font = self.font()
        font.setPointSizeF(max(8.0, font.pointSizeF() * 0.8))
        line.label.setFont(font)
        p.addItem(line)
        self.lines[label] = value

    @staticmethod
    def _caption(focus: Preset, bits: int, batch: int) -> str:
        fp16 = weight_bytes(focus.n_params, "fp16")
        parts = []
        for variant in kv_variants(focus):
            at = outgrows_weights_at(variant, "fp16", bits, batch)
            kind = kind_of(variant)
            if at is None:
                parts.append(translate("views.memory_plot", "as {kind} it never does (its windows cap it)").format(kind=kind))
            else:
                parts.append(translate("views.memory_plot", "as {kind} at {n} tokens").format(kind=kind, n=integer(at)))
        return translate(
            "views.memory_plot", "<b>{model}</b>: the KV cache outgrows its FP16 weights ({size}) — {where}."
        ).format(model=focus.name, size=local(human_bytes(fp16)), where="; ".join(parts))
