"""The Requests dock's controls: the run settings (block size, pool, steps, schedule, Run) and the
request list editor (one prompt per line behind a shared system prompt; the bundled demo lists)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from kvsim.core.words import QT_TRANSLATE_NOOP  # typed str, found by pyside6-lupdate as Qt's

from ...i18n import is_portuguese, translate
from .job import PORTUGUESE_PREFIX, SCHEDULES, RequestsInput, RequestsSettings, schedule_label

EDITED = QT_TRANSLATE_NOOP("views.requests_form", "(edited list)")  # the demo combo's last item (translated where shown)
TIP_B = QT_TRANSLATE_NOOP(
    "views.requests_form",
    "block size B: token slots per block. Small blocks waste less of the last block; large ones mean "
    "fewer, bigger table entries and fewer full blocks to share",
)
TIP_POOL = QT_TRANSLATE_NOOP(
    "views.requests_form",
    "blocks in the shared pool. 'all fit' gives room for every request at once (nothing is evicted); a "
    "smaller pool makes finished requests' cached blocks be evicted, least recently used first",
)
TIP_SCHEDULE = QT_TRANSLATE_NOOP(
    "views.requests_form",
    "sequential: one request after another · interleaved: all prefill in turn, then decode round-robin, "
    "so their blocks are live at the same time and shared blocks count several holders",
)
TIP_CONTINUOUS = QT_TRANSLATE_NOOP(
    "views.requests_form",
    "continuous batching: request i arrives at step 2i; every step runs ONE forward over all running "
    "requests (decodes and prompt chunks, within the budget); a full pool preempts the latest request",
)
TIP_BUDGET = QT_TRANSLATE_NOOP(
    "views.requests_form",
    "continuous batching: positions one batched forward computes at most; a longer prompt is split into "
    "chunks over several steps (chunked prefill)",
)
TIP_OFFLOAD = QT_TRANSLATE_NOOP(
    "views.requests_form",
    "offload tiers under the pool (prefix caching on): a cached block the pool evicts is copied to the host tier "
    "(then down to disk) instead of dropped, and a later prefix hit loads it back. Give a pool too small to keep "
    "every prefix, or nothing is evicted",
)
#: the tiers the offload combo offers: (its words, the spec as ``--offload`` takes it; None: no tiers)
OFFLOAD_CHOICES = (
    (QT_TRANSLATE_NOOP("views.requests_form", "no tiers"), None),
    (QT_TRANSLATE_NOOP("views.requests_form", "host 1 MB"), "host:1MB"),
    (QT_TRANSLATE_NOOP("views.requests_form", "disk 4 MB"), "disk:4MB"),
    (QT_TRANSLATE_NOOP("views.requests_form", "host 256 KB + disk 4 MB"), "host:256KB,disk:4MB"),
)
TIP_RUN = QT_TRANSLATE_NOOP(
    "views.requests_form",
    "run the request list twice through one paged pool — prefix caching off, then on — and measure each "
    "request's TTFT (on the worker thread)",
)


class SettingsBar(QWidget):
    """Block size, pool size, steps per request, schedule, and Run."""

    run_clicked = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.block_size = self._spin(lay, "B", 1, 64, 16, translate("views.requests_form", TIP_B))
        self.pool = self._spin(
            lay, translate("views.requests_form", "pool"), 0, 4096, 0, translate("views.requests_form", TIP_POOL)
        )
        self.pool.setSpecialValueText(translate("views.requests_form", "all fit"))
        self.steps = self._spin(
            lay,
            translate("views.requests_form", "steps"),
            1,
            64,
            4,
            translate("views.requests_form", "tokens each request generates (its first comes from the prefill)"),
        )
        self.schedule = QComboBox()
        for name in SCHEDULES:  # shown in the app's language; the engine's word is the item's data
            self.schedule.addItem(schedule_label(name), name)
        self.schedule.setCurrentIndex(self.schedule.findData("interleaved"))  # every request's blocks live at once: ×N
        self.schedule.setToolTip(
            translate("views.requests_form", TIP_SCHEDULE) + " · " + translate("views.requests_form", TIP_CONTINUOUS)
        )
        lay.addWidget(self.schedule)
        self.budget = self._spin(
            lay, translate("views.requests_form", "budget"), 1, 4096, 64, translate("views.requests_form", TIP_BUDGET)
        )
        self.schedule.currentIndexChanged.connect(self._enable_budget)
        self._enable_budget()
        self.offload = QComboBox()
        for words, spec in OFFLOAD_CHOICES:
            self.offload.addItem(translate("views.requests_form", words), spec)
        self.offload.setToolTip(translate("views.requests_form", TIP_OFFLOAD))
        lay.addWidget(self.offload)
        lay.addStretch(1)
        self.run_button = QPushButton(translate("views.requests_form", "Run"))
        self.run_button.setToolTip(translate("views.requests_form", TIP_RUN))
        self.run_button.clicked.connect(self.run_clicked)
        lay.addWidget(self.run_button)

    @staticmethod
    def _spin(lay: QHBoxLayout, label: str, lo: int, hi: int, value: int, tip: str) -> QSpinBox:
        name = QLabel(label)
        name.setToolTip(tip)
        lay.addWidget(name)
        spin = QSpinBox()
        spin.setRange(lo, hi)
        spin.setValue(value)
        spin.setToolTip(tip)
        lay.addWidget(spin)
        return spin

    def _enable_budget(self, *_args) -> None:
        self.budget.setEnabled(self.schedule.currentData() == "continuous")

    def settings(self) -> RequestsSettings:
        pool = self.pool.value()
        return RequestsSettings(
            block_size=self.block_size.value(),
            pool_blocks=pool or None,
            steps=self.steps.value(),
            schedule=str(self.schedule.currentData()),
            max_batched_tokens=self.budget.value(),
            offload=self.offload.currentData(),
        )

    def show_settings(self, settings: RequestsSettings) -> None:
        """Show the settings a run was made with (the controls then say what the view shows)."""
        self.block_size.setValue(settings.block_size)
        self.pool.setValue(settings.pool_blocks or 0)
        self.steps.setValue(settings.steps)
        self.schedule.setCurrentIndex(max(0, self.schedule.findData(settings.schedule)))
        self.budget.setValue(settings.max_batched_tokens)
        spec = settings.offload
        if spec is not None and self.offload.findData(spec) < 0:  # tiers none of the choices name: shown as given
            self.offload.addItem(str(spec), spec)
        self.offload.setCurrentIndex(0 if spec is None else self.offload.findData(spec))

    def set_busy(self, busy: bool) -> None:
        self.run_button.setEnabled(not busy)
        self.run_button.setText(translate("views.requests_form", "Running…") if busy else translate("views.requests_form", "Run"))


class RequestListEditor(QWidget):
    """The request list: a shared system prompt and one user prompt per line."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        row = QHBoxLayout()
        row.addWidget(QLabel(translate("views.requests_form", "demo list:")))
        self.demos = QComboBox()
        self.demos.setToolTip(
            translate(
                "views.requests_form", "the bundled request lists (resources/requests): choosing one replaces the text below"
            )
        )
        row.addWidget(self.demos, 1)
        lay.addLayout(row)
        system_label = QLabel(
            translate(
                "views.requests_form",
                "system prompt, shared by every request (empty: the model's own default, if its chat template has one):",
            )
        )
        system_label.setWordWrap(True)
        lay.addWidget(system_label)
        self.system = QPlainTextEdit()
        self.system.setPlaceholderText(translate("views.requests_form", "(none)"))
        self.system.setToolTip(
            translate(
                "views.requests_form", "every request starts with this text: its full blocks are what prefix caching reuses"
            )
        )
        self.system.setMaximumHeight(self.fontMetrics().lineSpacing() * 5 + 12)
        lay.addWidget(self.system)
        prompts_label = QLabel(translate("views.requests_form", "requests, one prompt per line:"))
        lay.addWidget(prompts_label)
        self.prompts = QPlainTextEdit()
        self.prompts.setToolTip(
            translate("views.requests_form", "each line is one request (a user's question behind the shared system prompt)")
        )
        lay.addWidget(self.prompts, 1)
        self._paths: list[Path] = []
        self._lists: list = []
        self._filling = False
        self.demos.currentIndexChanged.connect(self._chosen)
        self.system.textChanged.connect(self._edited)
        self.prompts.textChanged.connect(self._edited)

    # ---------------------------------------------------------------- demo lists
    def fill_demos(self, lists: list[tuple[Path, object]]) -> None:
        """``lists``: (path, RequestList) of every bundled demo list."""
        self._filling = True
        self.demos.clear()
        if is_portuguese():  # the Portuguese lists first (stable: the files' order kept otherwise)
            lists = sorted(lists, key=lambda pair: not pair[0].name.startswith(PORTUGUESE_PREFIX))
        self._paths = [p for p, _ in lists]
        self._lists = [r for _, r in lists]
        for path, req in lists:
            self.demos.addItem(path.stem)
            self.demos.setItemData(self.demos.count() - 1, getattr(req, "title", None) or path.stem, 3)  # tooltip role
        self.demos.addItem(translate("views.requests_form", EDITED))
        self._filling = False
        if lists:
            self.demos.setCurrentIndex(0)
            self._chosen(0)

    def select_demo(self, name: str) -> bool:
        """Choose the demo list whose file stem is ``name``."""
        i = self.demos.findText(name)
        if not 0 <= i < len(self._lists):  # not found, or the "(edited list)" item
            return False
        self.demos.setCurrentIndex(i)
        self._chosen(i)
        return True

    def _chosen(self, index: int) -> None:
        if self._filling or not 0 <= index < len(self._lists):
            return
        req = self._lists[index]
        self.set_given(RequestsInput(tuple(req.prompts), req.system, req.title))
        self.demos.setCurrentIndex(index)

    def _edited(self) -> None:
        if self._filling:
            return
        self.demos.blockSignals(True)
        self.demos.setCurrentIndex(self.demos.count() - 1)
        self.demos.blockSignals(False)

    # ---------------------------------------------------------------- the list
    def given(self) -> RequestsInput:
        prompts = tuple(line.strip() for line in self.prompts.toPlainText().splitlines() if line.strip())
        system = self.system.toPlainText().strip() or None
        title = self.demos.currentText() if 0 <= self.demos.currentIndex() < len(self._lists) else None
        return RequestsInput(prompts, system, title)

    def set_given(self, given: RequestsInput) -> None:
        """Show ``given`` (and select its demo list when it is one)."""
        self._filling = True
        self.system.setPlainText(given.system or "")
        self.prompts.setPlainText("\n".join(given.prompts))
        self._filling = False
        match = next(
            (i for i, r in enumerate(self._lists) if tuple(r.prompts) == given.prompts and (r.system or None) == given.system),
            len(self._lists),
        )
        self.demos.blockSignals(True)
        self.demos.setCurrentIndex(match)
        self.demos.blockSignals(False)
