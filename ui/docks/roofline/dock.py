"""The roofline dock: every recorded step of every lane placed by its arithmetic intensity (FLOPs ÷ bytes
moved, from the engine's counts) and its achieved FLOP/s (FLOPs ÷ the measured time), under this
machine's measured roof; below, the same arithmetic for a real model on a real GPU.

The peaks are measured on the worker thread (``host.submit``), once per machine (cached); the points
come from ``kvsim.costs.roofline.points_from_records`` — this view only draws them.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QPushButton, QTabWidget, QVBoxLayout, QWidget

from kvsim.core.units import si
from kvsim.core.words import QT_TRANSLATE_NOOP  # typed str, found by pyside6-lupdate as Qt's
from kvsim.costs.roofline import COMPONENTS, RooflinePoint, points_from_records

from ... import theme
from ...i18n import local, num, translate
from ...lanes import policy_text
from .checks import CHECK, CHECK_SYMBOL, CheckLabels, group_phase, label_text
from .plot import CURSOR_PEN, RoofPlot, log10, scatter
from .preset import PresetPanel
from .words import brief, describe, g3

SHOW = {  # the "show" menu: which components are drawn (keys in English, shown translated)
    QT_TRANSLATE_NOOP("views.roofline", "whole step"): ("total",),
    QT_TRANSLATE_NOOP("views.roofline", "weight matmuls"): ("linear",),
    QT_TRANSLATE_NOOP("views.roofline", "attention"): ("attention",),
    QT_TRANSLATE_NOOP("views.roofline", "all three"): COMPONENTS,
}
PHASE_SYMBOL = {"prefill": "s", "decode": "o", CHECK: CHECK_SYMBOL}  # check: a spec lane's verification step
PHASE_Z = {"decode": 1, "prefill": 2, CHECK: 3}  # what is drawn over what: the prefill square is never hidden
COMPONENT_STYLE = {"total": ("filled", 11), "linear": ("hollow", 11), "attention": ("filled", 7)}


def _measure(device: str, dtype: str, refresh: bool):
    def job(_loaded):
        from kvsim.costs.hardware import measure_peaks  # on the worker thread: torch is loaded there

        return measure_peaks(device, dtype, refresh=refresh)

    return job


def hover_hint() -> str:
    return translate("views.roofline", "hover a point: its step, lane, component, intensity and FLOP/s")


class RooflineView(QWidget):
    def __init__(self, host) -> None:
        super().__init__()
        self.host, self.session = host, host.session
        self.peaks = None
        self._measuring: tuple[str, str] | None = None
        self.points: list[RooflinePoint] = []  # every component of every step: the RooflinePoints drawn are the shown ones
        self.groups: dict[tuple[int, str, str], pg.ScatterPlotItem] = {}
        self.dirty = True
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        tabs = QTabWidget()
        lay.addWidget(tabs)

        top = QWidget()
        tl = QVBoxLayout(top)
        tl.setContentsMargins(0, 0, 0, 0)
        bar = QHBoxLayout()
        self.machine = QLabel(translate("views.roofline", "this machine: measuring its peaks…"))
        self.machine.setWordWrap(True)
        bar.addWidget(self.machine, 1)
        self.show_label = QLabel(translate("views.roofline", "show:"))
        bar.addWidget(self.show_label)
        self.show_box = QComboBox()
        for key in SHOW:
            self.show_box.addItem(translate("views.roofline", key), key)
        self.show_box.setToolTip(
            translate("views.roofline", "which counts place the points: the whole step, or the weight matmuls / attention alone")
        )
        self.show_box.currentIndexChanged.connect(self._regroup)
        bar.addWidget(self.show_box)
        self.again = QPushButton(translate("views.roofline", "Measure again"))
        self.again.setToolTip(
            translate("views.roofline", "time the matmul and the copy again (about a second, on the worker thread)")
        )
        self.again.clicked.connect(lambda: self.measure(refresh=True))
        bar.addWidget(self.again)
        tl.addLayout(bar)
        self._bar, self._top_lay = bar, tl
        self.title = translate("views.roofline", "left of the ridge: memory-bound · right of it: compute-bound")
        self.plot = RoofPlot(self.title)
        self.plot.setMinimumHeight(150)
        self.cursor_dots = scatter(theme.ACCENT, "o", False, size=22)
        self.cursor_dots.setPen(CURSOR_PEN)
        self.cursor_dots.opts["hoverable"] = False
        self.plot.addItem(self.cursor_dots)
        self.check_labels = CheckLabels(self.plot)  # a spec lane's latest verification step, labelled
        body = QHBoxLayout()  # the plot, and on the stage its words beside it (``set_staged``)
        body.setContentsMargins(0, 0, 0, 0)
        body.addWidget(self.plot, 1)
        self.side = QWidget()
        side = QVBoxLayout(self.side)
        side.setContentsMargins(0, 0, 0, 0)
        self.side.hide()
        self.lead = QLabel(self.title)  # the plot's title, in the side column on the stage
        self.lead.setWordWrap(True)
        self.lead.setStyleSheet(f"color: {theme.MUTED};")
        side.addWidget(self.lead)
        body.addWidget(self.side)
        tl.addLayout(body, 1)
        self.staged = False
        self.key = QLabel()
        self.key.setWordWrap(True)
        self.key.setStyleSheet(f"color: {theme.MUTED};")
        tl.addWidget(self.key)
        self.hover = QLabel(hover_hint())
        self.hover.setWordWrap(True)
        self.hover.setMinimumHeight(self.hover.fontMetrics().lineSpacing() * 2 + 4)
        tl.addWidget(self.hover)
        tabs.addTab(top, translate("views.roofline", "this run on this machine"))
        self.preset = PresetPanel(self.session)
        tabs.addTab(self.preset, translate("views.roofline", "a model on a GPU"))
        self.tabs = tabs

        self.session.run_started.connect(self._on_run)
        self.session.step_added.connect(self._on_step)
        self.session.cursor_moved.connect(self._on_cursor)
        self._on_run()

    def set_staged(self, on: bool) -> None:
        """On the stage (853×480 at the least) the plot takes the view's whole height and most of its width: the
        machine's peaks, the show box, the key and the hover words go into a column beside it; back in the dock
        they return above and under it."""
        if on == self.staged:
            return
        self.staged = on
        side = self.side.layout()
        assert isinstance(side, QVBoxLayout)  # the side column's own, made in __init__
        if on:
            row = QHBoxLayout()  # the show box and Measure again on one line ("show:" steps aside: the box says it)
            row.addWidget(self.show_box, 1)
            row.addWidget(self.again)
            self.show_label.hide()
            side.addWidget(self.machine)
            side.addLayout(row)
            side.addWidget(self.key)  # the step's figures stay under the plot, the stage's whole width: two lines
            side.addStretch(1)
            self.plot.setMinimumWidth(200)  # its words beside it: the plot takes the rest (over half the width)
            self.side.setFixedWidth(self.fontMetrics().horizontalAdvance("m") * 18)
            self.plot.getPlotItem().titleLabel.setText("")  # a hidden title keeps its text's width as the plot's least
            self.plot.getPlotItem().setTitle(None)  # its words lead the column: the plot keeps the height
            self.side.show()
        else:
            while side.count() > 1:  # the lead stays
                item = side.takeAt(1)
                inner = item.layout() if item is not None else None
                if inner is not None:
                    while inner.count():
                        inner.takeAt(0)
            self.show_label.show()
            for w in (self.machine, self.show_label, self.show_box, self.again):
                self._bar.addWidget(w, 1 if w is self.machine else 0)
            self._top_lay.addWidget(self.key)
            self._top_lay.addWidget(self.hover)
            self.plot.getPlotItem().setTitle(self.title, color=theme.MUTED, size="11pt")
            self.side.hide()

    # ---------------------------------------------------------------- peaks
    def _device(self) -> tuple[str, str]:
        meta = self.session.run.meta if self.session.run is not None else {}
        return str(meta.get("device") or "cpu"), str(meta.get("dtype") or "float32")

    def measure(self, refresh: bool = False) -> None:
        device, dtype = self._device()
        if self._measuring == (device, dtype):
            return
        self._measuring = (device, dtype)
        self.again.setEnabled(False)
        measuring = translate("views.roofline", "this machine ({device}, {dtype}): measuring its peaks (a matmul and a copy)…")
        self.machine.setText(measuring.format(device=device, dtype=dtype))
        if not self.host.submit(_measure(device, dtype, refresh), self._measured, self._failed):
            self._measuring = None
            self.again.setEnabled(True)

    def _measured(self, peaks) -> None:
        self._measuring = None
        self.again.setEnabled(True)
        self.peaks = peaks
        how = (
            translate("views.roofline", "cached")
            if peaks.cached
            else translate("views.roofline", "measured in {seconds} s").format(seconds=num(peaks.seconds, 1))
        )
        self.machine.setText(
            translate("views.roofline", "this machine: {flops}FLOP/s · {bandwidth}B/s · ridge {ridge} FLOP/B ({how})").format(
                flops=local(si(peaks.flops, ".3g")), bandwidth=local(si(peaks.bandwidth, ".3g")), ridge=g3(peaks.ridge), how=how
            )
        )
        self.machine.setToolTip(
            translate(
                "views.roofline",
                "{name} ({device}, {dtype}, {key}): the best of a few {n}×{n} matmuls and of a few reads (sums) of "
                "{mib} MiB (bytes read), with {threads} threads as the runs use, measured {when}",
            ).format(
                name=peaks.name,
                device=peaks.device,
                dtype=peaks.dtype,
                key=peaks.key.split("|")[-1],
                n=peaks.matmul_n,
                mib=peaks.read_bytes >> 20,
                threads=peaks.threads,
                when=peaks.measured_at,
            )
        )
        self.plot.set_roof(peaks.flops, peaks.bandwidth, "")
        self.dirty = True
        self.redraw()

    def _failed(self, message: str) -> None:
        self._measuring = None
        self.again.setEnabled(True)
        self.machine.setText(
            translate("views.roofline", "this machine's peaks could not be measured: {error}").format(error=message)
        )

    # ---------------------------------------------------------------- points
    def _on_run(self) -> None:
        self.points = points_from_records(self.session.records)
        self._regroup()
        if self.session.run is not None:
            if self.peaks is None or (self.peaks.device, self.peaks.dtype) != self._device():
                self.measure()

    def _on_step(self, step: int) -> None:
        record = self.session.record(step)
        if record is not None:
            self.points.extend(points_from_records([record]))
        self.dirty = True
        self.redraw()

    def _on_cursor(self, _step: int) -> None:
        self._draw_cursor()
        self._say_cursor()

    def _say_cursor(self) -> None:
        """The cursor's step in words (until a point is hovered)."""
        step = self.session.cursor
        pts = [p for p in self.points if p.step == step and p.component == "total"]
        if not pts:
            self.hover.setText(hover_hint())
            return
        lanes = " · ".join(
            brief(p, policy_text.lane_label(self.session, p.lane)) for p in pts if p.lane < len(self.session.lanes)
        )
        self.hover.setText(
            translate("views.roofline", "step {step} ({phase}) — {lanes}").format(step=step, phase=pts[0].phase, lanes=lanes)
        )

    def _regroup(self) -> None:
        """New scatter groups: one per (lane, phase, component) shown."""
        for item in self.groups.values():
            self.plot.removeItem(item)
        self.groups = {}
        self.dirty = True
        self.redraw()

    def shown(self) -> list:
        """The points drawn now (of the components the menu shows)."""
        comps = SHOW[self.show_box.currentData()]
        return [p for p in self.points if p.component in comps]

    def redraw(self) -> None:
        if not self.dirty:
            return
        if not self.isVisible() and self.groups:
            return  # drawn on show
        self.dirty = False
        shown = self.shown()
        by_group: dict[tuple[int, str, str], list] = {}
        for p in shown:
            by_group.setdefault((p.lane, group_phase(self.session, p), p.component), []).append(p)
        for key in set(self.groups) - set(by_group):
            self.groups[key].setData([], [])
        for key, pts in by_group.items():
            item = self.groups.get(key)
            if item is None:
                lane, phase, comp = key
                fill, size = COMPONENT_STYLE[comp]
                size += 8 if phase == CHECK else 0  # a star reads smaller than a disc of the same size
                item = scatter(theme.lane_color(lane), PHASE_SYMBOL.get(phase, "o"), fill == "filled", size)
                item.setZValue(PHASE_Z.get(phase, 0))  # a run's one prefill over its many decode steps
                item.sigHovered.connect(self._hovered)
                self.plot.addItem(item)
                self.groups[key] = item
            item.setData(x=log10([p.intensity for p in pts]), y=log10([p.achieved for p in pts]), data=pts)
        self.plot.fit([p.intensity for p in shown], [p.achieved for p in shown])
        self._draw_cursor()
        self._say_cursor()
        self._write_key()

    def showEvent(self, event) -> None:  # noqa: N802 - Qt API
        super().showEvent(event)
        self.redraw()

    def _draw_cursor(self) -> None:
        step = self.session.cursor
        shown = self.shown()
        pts = [p for p in shown if p.step == step]
        self.cursor_dots.setData(x=log10([p.intensity for p in pts]), y=log10([p.achieved for p in pts]))
        self.check_labels.update(self.session, shown)

    def _write_key(self) -> None:
        lanes = " · ".join(
            f'<span style="color:{theme.lane_color(lane.index)}">●</span> {policy_text.lane_label(self.session, lane.index)}'
            for lane in self.session.lanes
        )
        comps = SHOW[self.show_box.currentData()]
        style = (
            translate("views.roofline", " · filled: whole step, hollow: weight matmuls, small: attention")
            if len(comps) > 1
            else ""
        )
        cursor = translate("views.roofline", "cursor")
        if any(lane.draft for lane in self.session.lanes):  # a spec lane's verification steps
            style = " · ★ " + translate("views.roofline", "check (drafts verified in one forward)") + style
        self.key.setText(f'{lanes} &nbsp; ■ prefill · ● decode · <span style="color:{theme.ACCENT}">◯</span> {cursor}{style}')

    def _hovered(self, item, points, _ev) -> None:
        if len(points) == 0:
            return
        p = points[0].data()
        self.hover.setText(
            describe(p, policy_text.lane_label(self.session, p.lane)) if p.lane < len(self.session.lanes) else describe(p)
        )
        if group_phase(self.session, p) == CHECK:  # a verification step: the rows its one forward computed
            self.hover.setText(f"{self.hover.text()} — {label_text(self.session, p)}")
