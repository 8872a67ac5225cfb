"""One animation clock for the whole window: a QTimer at ~60 Hz driving t from 0 to 1.

Speed is a duration per step; "instant" (0 ms) jumps straight to t = 1. Subscribers get
``frame(t)``; ``finished`` fires once per animation, which is what Play waits for before asking
for the next step, so the picture never lags the data by more than one step.

The speed may change at any moment, mid-animation included: a running animation keeps its
progress in time and ends at once when the new duration is already over (or is "instant").
"""

from __future__ import annotations

import time

from PySide6.QtCore import QObject, QTimer, Signal

from kvsim.core.words import QT_TRANSLATE_NOOP  # typed str, found by pyside6-lupdate as Qt's

from ..i18n import translate

SPEEDS = {"slow": 1600, "normal": 700, "fast": 250, "instant": 0}  # ms per step
SPEED_NAMES = {  # what the speed box shows (the keys stay the settings' and the API's names)
    "slow": QT_TRANSLATE_NOOP("animation", "slow"),
    "normal": QT_TRANSLATE_NOOP("animation", "normal"),
    "fast": QT_TRANSLATE_NOOP("animation", "fast"),
    "instant": QT_TRANSLATE_NOOP("animation", "instant"),
}


def speed_label(name: str) -> str:
    """The shown name of speed ``name`` in the app's language ("normal" → "normal", "slow" → "lenta")."""
    return translate("animation", SPEED_NAMES[name]) if name in SPEED_NAMES else name


class Animator(QObject):
    frame = Signal(float)
    finished = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.duration_ms = SPEEDS["normal"]
        self.timer = QTimer(self)
        self.timer.setInterval(16)
        self.timer.timeout.connect(self._tick)
        self._t0 = 0.0
        self.running = False
        self.frame_times: list[float] | None = None  # set to a list to record frame costs (benchmarks)

    def set_speed(self, name: str) -> None:
        """``name``: a key of SPEEDS (an unknown name keeps the current speed)."""
        if name not in SPEEDS:
            return
        self.duration_ms = SPEEDS[name]
        if self.running and self.duration_ms <= 0:
            self._finish()  # "instant" chosen mid-animation: this step ends now (Play goes on)

    def start(self) -> None:
        if self.duration_ms <= 0:
            self.stop()
            self._emit(1.0)
            self.finished.emit()
            return
        self._t0 = time.perf_counter()
        self.running = True
        self._emit(0.0)
        self.timer.start()

    def stop(self) -> None:
        """Jump to the end of the current animation (if any)."""
        if self.running:
            self.timer.stop()
            self.running = False
            self._emit(1.0)

    def _tick(self) -> None:
        if not self.running:  # a tick queued before stop()
            self.timer.stop()
            return
        elapsed_ms = (time.perf_counter() - self._t0) * 1000.0
        t = elapsed_ms / self.duration_ms if self.duration_ms > 0 else 1.0
        if t >= 1.0:
            self._finish()
        else:
            self._emit(t)

    def _finish(self) -> None:
        self.timer.stop()
        self.running = False
        self._emit(1.0)
        self.finished.emit()

    def _emit(self, t: float) -> None:
        if self.frame_times is None:
            self.frame.emit(t)
            return
        t0 = time.perf_counter()
        self.frame.emit(t)
        self.frame_times.append((time.perf_counter() - t0) * 1000.0)
