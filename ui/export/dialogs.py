"""The dialogs of ☰ → Export: which view as a picture, and the options of a GIF/MP4 (steps, size,
frame rate, speed, what is filmed). Each returns plain values, or None when the user cancels."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QSpinBox,
    QWidget,
)

from kvsim.core.words import QT_TRANSLATE_NOOP  # typed str, found by pyside6-lupdate as Qt's

from ..i18n import local, num, translate
from ..shell.animation import SPEEDS as SPEED_MS
from .movie import MAX_FPS, frames_per_step

PICTURE_KINDS = {  # English here, translated where shown
    "png": QT_TRANSLATE_NOOP("export_dialogs", "PNG (screen pixels)"),
    "png2": QT_TRANSLATE_NOOP("export_dialogs", "PNG at 2× pixels (sharp on 4K)"),
    "svg": QT_TRANSLATE_NOOP("export_dialogs", "SVG (vector, plots only)"),
}
SPEED_NAMES = {  # the animation's speeds (ui/shell/animation.py SPEEDS keys) as the movie dialog names them
    "slow": QT_TRANSLATE_NOOP("export_dialogs", "slow"),
    "normal": QT_TRANSLATE_NOOP("export_dialogs", "normal"),
    "fast": QT_TRANSLATE_NOOP("export_dialogs", "fast"),
}
MOVIE_SIZES = ((1920, 1080), (1280, 720), (960, 540), (640, 360))


def ask_save(parent: QWidget, title: str, name: str, pattern: str) -> str:
    """A path to write (the extension added when the user left it out), or ""."""
    path, _ = QFileDialog.getSaveFileName(parent, title, name, pattern)
    ext = name[name.rfind(".") :]
    return "" if not path else path if path.lower().endswith(ext) else path + ext


class PictureDialog(QDialog):
    """Which view, and as what (PNG 1×, PNG 2×, SVG where the view is a pyqtgraph plot)."""

    def __init__(self, views: dict[str, bool], parent: QWidget | None = None, labels: dict[str, str] | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(translate("export_dialogs", "Export a picture"))
        self.views = views  # name -> has an SVG
        form = QFormLayout(self)
        self.view_box = QComboBox()
        for name in views:  # shown in the app's language, chosen by name
            self.view_box.addItem((labels or {}).get(name, name), name)
        self.kind_box = QComboBox()
        form.addRow(translate("export_dialogs", "view"), self.view_box)
        form.addRow(translate("export_dialogs", "as"), self.kind_box)
        self.view_box.currentIndexChanged.connect(lambda _i: self._kinds(self.view_box.currentData()))
        self._kinds(self.view_box.currentData())
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def _kinds(self, view: str) -> None:
        self.kind_box.clear()
        for kind, label in PICTURE_KINDS.items():
            if kind != "svg" or self.views.get(view):
                self.kind_box.addItem(translate("export_dialogs", label), kind)

    def choice(self) -> tuple[str, str]:
        return self.view_box.currentData(), self.kind_box.currentData()


def _speed_text(name: str, ms: int) -> str:
    """A speed as the movie dialog lists it: "normal (0.7 s per step)", "instant (one frame per step)"."""
    if not ms:
        return translate("export_dialogs", "instant (one frame per step)")
    label = translate("export_dialogs", SPEED_NAMES[name]) if name in SPEED_NAMES else name
    return translate("export_dialogs", "{speed} ({seconds} s per step)").format(speed=label, seconds=local(f"{ms / 1000:g}"))


@dataclass(frozen=True)
class MovieChoice:
    fmt: str  # "gif" | "mp4"
    first: int
    last: int
    size: tuple[int, int]
    fps: float
    speed: str
    target: str  # "window" | "lanes"


class MovieDialog(QDialog):
    """The options of a GIF/MP4 of the run; shows the frame count and length as they change."""

    def __init__(self, n_steps: int, window_size: tuple[int, int], speed: str = "normal", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(translate("export_dialogs", "Export the run as GIF or MP4"))
        form = QFormLayout(self)
        self.fmt = QComboBox()
        self.fmt.addItem(translate("export_dialogs", "MP4 (H.264: small, for slides and video)"), "mp4")
        self.fmt.addItem(translate("export_dialogs", "GIF (plays anywhere, larger)"), "gif")
        form.addRow(translate("export_dialogs", "format"), self.fmt)
        steps = QHBoxLayout()
        self.first, self.last = QSpinBox(), QSpinBox()
        for box in (self.first, self.last):
            box.setRange(0, max(0, n_steps - 1))
        self.last.setValue(max(0, n_steps - 1))
        steps.addWidget(self.first)
        steps.addWidget(QLabel(translate("export_dialogs", "to")))
        steps.addWidget(self.last)
        form.addRow(translate("export_dialogs", "steps (0 = prefill)"), steps)
        self.size_box = QComboBox()  # not self.size: that is QWidget.size()
        w, h = window_size
        as_window = translate("export_dialogs", "as the window ({size})").format(size=f"{w - w % 2}x{h - h % 2}")
        self.size_box.addItem(as_window, (w - w % 2, h - h % 2))
        for s in MOVIE_SIZES:
            self.size_box.addItem(f"{s[0]}x{s[1]}", s)
        self.size_box.setCurrentIndex(2)  # 1280x720: a projector's size
        form.addRow(translate("export_dialogs", "size"), self.size_box)
        self.fps = QDoubleSpinBox()
        self.fps.setRange(1, 60)
        self.fps.setDecimals(0)
        self.fps.setValue(15)
        form.addRow(translate("export_dialogs", "frames per second"), self.fps)
        self.speed = QComboBox()
        for name, ms in SPEED_MS.items():
            self.speed.addItem(_speed_text(name, ms), name)
        self.speed.setCurrentIndex(max(0, self.speed.findData(speed)))
        form.addRow(translate("export_dialogs", "animation"), self.speed)
        self.target = QComboBox()
        self.target.addItem(translate("export_dialogs", "the whole window"), "window")
        self.target.addItem(translate("export_dialogs", "the lanes only"), "lanes")
        form.addRow(translate("export_dialogs", "film"), self.target)
        self.summary = QLabel()
        form.addRow(self.summary)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)
        for spin in (self.first, self.last, self.fps):
            spin.valueChanged.connect(self._update)
        for combo in (self.fmt, self.speed):
            combo.currentIndexChanged.connect(self._update)
        self._update()

    def _update(self, *_args) -> None:
        c = self.choice()
        self.fps.setMaximum(MAX_FPS[c.fmt])
        k = frames_per_step(SPEED_MS[c.speed], c.fps)
        n = max(0, c.last - c.first + 1) * k
        self.summary.setText(
            translate("export_dialogs", "{n} frames ({k} per step), {seconds} s").format(n=n, k=k, seconds=num(n / c.fps, 1))
        )

    def choice(self) -> MovieChoice:
        first, last = self.first.value(), self.last.value()
        return MovieChoice(
            fmt=self.fmt.currentData(),
            first=min(first, last),
            last=max(first, last),
            size=tuple(self.size_box.currentData()),
            fps=float(self.fps.value()),
            speed=self.speed.currentData(),
            target=self.target.currentData(),
        )
