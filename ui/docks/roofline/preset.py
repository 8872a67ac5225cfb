"""The roofline's second part: a real model (a preset) on a real GPU (vendor figures, kvsim/costs/hardware.py):
one decode step and a prefill of P tokens at context n — FLOPs, bytes, intensity and the time bound
max(FLOPs ÷ peak, bytes ÷ bandwidth) — in a sentence, a table and on the chip's roof (where a point sits
on the roof: the roofline's bound is the best the chip can do)."""

from __future__ import annotations

from html import escape
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QGridLayout, QLabel, QSpinBox, QVBoxLayout, QWidget

from kvsim.core.units import human_bytes
from kvsim.costs.hardware import GPUS
from kvsim.costs.presets import PRESETS
from kvsim.costs.roofline import Bound, preset_bound, ratio

from ... import theme
from ...i18n import integer, local, num, translate
from .plot import RoofPlot, log10, scatter
from .words import g3, limit, seconds, si

DEFAULT_PRESET, DEFAULT_GPU, DEFAULT_CONTEXT, DEFAULT_PROMPT = "llama-3.1-70b", "H100 SXM", 131_072, 131_072
BITS = ("16", "8", "4")
MAX_TOKENS = 4 * 1024 * 1024


def _spin(lo: int, hi: int, value: int, tip: str) -> QSpinBox:
    box = QSpinBox()
    box.setRange(lo, hi)
    box.setValue(value)
    box.setGroupSeparatorShown(True)
    box.setKeyboardTracking(False)
    box.setToolTip(tip)
    return box


class PresetPanel(QWidget):
    def __init__(self, session=None, parent=None) -> None:
        super().__init__(parent)
        self.session = session
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 4, 0, 0)
        grid = QGridLayout()
        grid.setHorizontalSpacing(6)
        self.model = QComboBox()
        self.model.addItems(list(PRESETS))
        self.model.setCurrentText(DEFAULT_PRESET)
        self.gpu = QComboBox()
        self.gpu.addItems(list(GPUS))
        self.gpu.setCurrentText(DEFAULT_GPU)
        self.gpu.setToolTip(
            translate(
                "views.roofline_preset",
                "vendor figures: dense BF16 tensor FLOP/s and memory bandwidth (sources: docs/roofline.md)",
            )
        )
        self.context = _spin(
            1, MAX_TOKENS, DEFAULT_CONTEXT, translate("views.roofline_preset", "n: tokens in the context after the step")
        )
        self.prompt = _spin(
            1,
            MAX_TOKENS,
            DEFAULT_PROMPT,
            translate("views.roofline_preset", "P: tokens the prefill computes at once (at most n)"),
        )
        self.batch = _spin(
            1,
            4096,
            1,
            translate("views.roofline_preset", "sequences decoded together: the weights are read once for all of them"),
        )
        self.wbits = QComboBox()
        self.wbits.addItems(BITS)
        self.wbits.setToolTip(
            translate(
                "views.roofline_preset", "bits per weight (weight-only quantization: fewer bytes, the same tensor-core rate)"
            )
        )
        self.kvbits = QComboBox()
        self.kvbits.addItems(BITS)
        self.kvbits.setToolTip(translate("views.roofline_preset", "bits per cached K/V element"))
        row = [
            (translate("views.roofline_preset", "model"), self.model),
            (translate("views.roofline_preset", "on"), self.gpu),
            (translate("views.roofline_preset", "batch"), self.batch),
        ]
        row2 = [
            (translate("views.roofline_preset", "context n"), self.context),
            (translate("views.roofline_preset", "prefill P"), self.prompt),
            (translate("views.roofline_preset", "weights bits"), self.wbits),
            (translate("views.roofline_preset", "K/V bits"), self.kvbits),
        ]
        col = 0
        for label, w in row:
            grid.addWidget(QLabel(label), 0, col, Qt.AlignmentFlag.AlignRight)
            grid.addWidget(w, 0, col + 1)
            col += 2
        col = 0
        for label, w in row2:
            grid.addWidget(QLabel(label), 1, col, Qt.AlignmentFlag.AlignRight)
            grid.addWidget(w, 1, col + 1)
            col += 2
        lay.addLayout(grid)
        self.sentence = QLabel()
        self.sentence.setWordWrap(True)
        lay.addWidget(self.sentence)
        self.table = QLabel()
        self.table.setTextFormat(Qt.TextFormat.RichText)
        self.table.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        lay.addWidget(self.table)
        self.plot = RoofPlot(translate("views.roofline_preset", "the two steps under the chip's roof (dense BF16)"))
        self.plot.setMinimumHeight(160)
        self.dots = {
            "decode": scatter(theme.PHASE_COLORS["decode"], "o", True, 14),
            "prefill": scatter(theme.PHASE_COLORS["prefill"], "s", True, 14),
        }
        for item in self.dots.values():
            self.plot.addItem(item)
        lay.addWidget(self.plot, 1)
        for box in (self.model, self.gpu, self.wbits, self.kvbits):
            box.currentIndexChanged.connect(self.update_figures)
        for spin in (self.context, self.prompt, self.batch):
            spin.valueChanged.connect(self.update_figures)
        self.bounds: dict[str, Bound] = {}
        self.update_figures()

    def update_figures(self) -> None:
        p, chip = PRESETS[self.model.currentText()], GPUS[self.gpu.currentText()]
        n = self.context.value()
        if self.prompt.value() > n:
            self.prompt.setValue(n)  # re-enters through valueChanged
            return
        wb, kb, batch = int(self.wbits.currentText()), int(self.kvbits.currentText()), self.batch.value()
        kw: dict[str, Any] = {"batch": batch, "weight_bits": wb, "kv_bits": kb}
        self.bounds = {
            "decode": preset_bound(p, chip, "decode", n, **kw),
            "prefill": preset_bound(p, chip, "prefill", n, prompt=self.prompt.value(), **kw),
        }
        d = self.bounds["decode"]
        over = ""
        if n > p.context:
            past = translate("views.roofline_preset", "n = {n} is past {model}'s own context ({context}).").format(
                n=integer(n), model=escape(p.name), context=integer(p.context)
            )
            over = f' <span style="color:{theme.ERROR}">{past}</span>'
        fits = ""
        if not d.fits:
            full = translate("views.roofline_preset", "Weights + cache ({size}) do not fit in one {chip} ({memory}).").format(
                size=local(human_bytes(d.weight_bytes + d.kv_bytes)),
                chip=escape(chip.name),
                memory=local(human_bytes(chip.memory)),
            )
            fits = f' <span style="color:{theme.ERROR}">{full}</span>'
        at = (
            translate("views.roofline_preset", "{n} tokens × {batch} sequences").format(n=integer(n), batch=batch)
            if batch > 1
            else translate("views.roofline_preset", "{n} tokens").format(n=integer(n))
        )
        self.sentence.setText(
            translate(
                "views.roofline_preset",
                "On one <b>{chip}</b>, a <b>{model}</b> decode step at {at} moves {bytes} ({weights} weights + {kv} K/V) "
                "for {flops}FLOP: {intensity} FLOP/byte against a ridge of {ridge} — at least <b>{time}</b>, {limit}.",
            ).format(
                chip=escape(chip.name),
                model=escape(p.name),
                at=at,
                bytes=local(human_bytes(d.bytes)),
                weights=local(human_bytes(d.weight_bytes)),
                kv=local(human_bytes(d.kv_bytes)),
                flops=si(d.flops),
                intensity=g3(d.intensity),
                ridge=num(chip.ridge(), 0),
                time=seconds(d.time_s),
                limit=limit(d.limit),
            )
            + over
            + fits
        )
        names = (
            "",
            "FLOPs",
            translate("views.roofline_preset", "bytes"),
            "FLOP/B",
            translate("views.roofline_preset", "compute"),
            translate("views.roofline_preset", "memory"),
            translate("views.roofline_preset", "bound"),
        )
        head = "".join(f"<th align='right'>&nbsp;{h}&nbsp;</th>" for h in names)
        rows = []
        for what, b in self.bounds.items():
            label = (
                translate("views.roofline_preset", "decode (1 token)")
                if what == "decode"
                else translate("views.roofline_preset", "prefill ({n})").format(n=integer(b.new))
            )
            color = theme.PHASE_COLORS[what]
            cells = (
                f"<span style='color:{color}'>{label}</span>",
                si(b.flops),
                local(human_bytes(b.bytes)),
                local(ratio(b.intensity)),
                seconds(b.compute_s),
                seconds(b.memory_s),
                f"<b>{seconds(b.time_s)}</b> {limit(b.limit.split('-')[0])}",
            )
            rows.append("<tr>" + "".join(f"<td align='right'>&nbsp;{c}&nbsp;</td>" for c in cells) + "</tr>")
        self.table.setText(f"<table cellspacing='0'><tr>{head}</tr>{''.join(rows)}</table>")
        self.plot.set_roof(chip.bf16_flops, chip.bandwidth, chip.name)
        reach = {what: min(b.peak_flops, b.bandwidth * b.intensity) for what, b in self.bounds.items()}
        for what, b in self.bounds.items():
            self.dots[what].setData(x=log10([b.intensity]), y=log10([reach[what]]))
        self.plot.fit([b.intensity for b in self.bounds.values()], list(reach.values()))
