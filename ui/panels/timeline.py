"""Timeline: a scrubber over the recorded steps, the phase (PREFILL / DECODE) always visible,
and, during a long step, its progress with a Cancel button."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QSlider, QWidget

from .. import theme
from ..i18n import translate
from ..lanes import policy_text


class Timeline(QWidget):
    scrubbed = Signal(int)
    cancel_requested = Signal()

    def __init__(self, session, parent=None) -> None:
        super().__init__(parent)
        self.session = session
        lay = QHBoxLayout(self)
        lay.setContentsMargins(8, 4, 8, 4)
        lay.setSpacing(10)
        self.phase = QLabel("—")
        self.phase.setObjectName("phase")
        f = QFont(self.font())
        f.setPointSizeF(f.pointSizeF() * 1.3)
        self.phase.setFont(f)
        self.phase.setMinimumWidth(120)
        self.phase.setAlignment(Qt.AlignCenter)
        lay.addWidget(self.phase)
        self.slider = QSlider(Qt.Horizontal)
        self.slider.setRange(-1, -1)
        self.slider.setPageStep(1)
        self.slider.valueChanged.connect(self._moved)
        lay.addWidget(self.slider, 1)
        self.label = QLabel()
        self.label.setMinimumWidth(230)
        self.label.setToolTip(
            translate(
                "views.timeline",
                "step: the step under the cursor (step 0 is the prefill: the whole prompt at once; each later\n"
                "step decodes one token) · K/V rows: rows in each K and V table now (the newest token has\n"
                "none until the next step feeds it) · tokens: the text so far (prompt + generated)",
            )
        )
        self.phase.setToolTip(
            translate(
                "views.timeline", "PREFILL: the prompt in one parallel step (its time is the TTFT) · DECODE: one token per step"
            )
        )
        lay.addWidget(self.label)
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(200)
        self.progress.setVisible(False)
        lay.addWidget(self.progress)
        self.cancel = QPushButton(translate("views.timeline", "Cancel"))
        self.cancel.setVisible(False)
        self.cancel.clicked.connect(self.cancel_requested)
        lay.addWidget(self.cancel)
        self._updating = False
        session.run_started.connect(self.sync)
        session.step_added.connect(lambda _s: self.sync())
        session.cursor_moved.connect(lambda _s: self.sync())
        theme.on_change(self.retheme)

    def retheme(self, _name: str = "") -> None:
        self.phase.setText("")  # the phase's colour is set again with its text
        self.sync()

    def _moved(self, value: int) -> None:
        if not self._updating:
            self.scrubbed.emit(value)

    def sync(self) -> None:
        s = self.session
        self._updating = True
        self.slider.setRange(-1, max(-1, s.n_steps - 1))
        self.slider.setValue(s.cursor)
        self._updating = False
        r = s.record()
        if s.run is None:
            self.label.setText("")
            self.phase.setText("—")
            return
        if r is None:
            phase = translate("views.timeline", "READY")
            text = translate("views.timeline", "prompt: {n} tokens · step — / {steps}").format(n=s.prompt_len, steps=s.n_steps)
            color = theme.MUTED
        else:
            phase = r.phase.upper()
            color = theme.PHASE_COLORS[r.phase]
            text = translate("views.timeline", "step {step} / {last} · {rows} K/V rows · {tokens} tokens").format(
                step=r.step, last=s.n_steps - 1, rows=s.n_rows(), tokens=s.n_text_tokens()
            )
        if self.phase.text() != phase:  # a style sheet change re-polishes the widget: only on a new phase
            self.phase.setText(phase)
            self.phase.setStyleSheet(f"background: {color};")
        self.label.setText(text)

    def show_progress(self, lane: str, done: int, total: int, visible: bool = True) -> None:
        if visible:
            self.progress.setVisible(True)
            self.cancel.setVisible(True)
        self.progress.setRange(0, total)
        self.progress.setValue(done)
        index = self.session.lane_index(lane)
        title = policy_text.title(self.session.lanes[index]) if index is not None else lane
        text = translate("views.timeline", "{title}: layer {done}/{total}").format(title=title, done=done, total=total)
        self.progress.setFormat(text)

    def hide_progress(self) -> None:
        self.progress.setVisible(False)
        self.cancel.setVisible(False)
