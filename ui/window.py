"""The main window: toolbar, the two lanes side by side, costs, text, timeline. GUI thread only.

Data flows one way: the worker (its own QThread) emits StepRecords → the Session appends them
and moves the cursor → every view redraws from records. The window is the controller: it turns
Step / Back / Reset / Play / scrubbing into cursor moves or worker requests, and it owns the one
animation clock.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from PySide6.QtCore import QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QBrush, QColor, QFont, QKeySequence, QLinearGradient, QPainter
from PySide6.QtWidgets import (
    QComboBox,
    QDockWidget,
    QFileDialog,
    QLabel,
    QMainWindow,
    QMenu,
    QSizePolicy,
    QSplitter,
    QToolBar,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from . import theme
from .animation import SPEEDS, Animator
from .charts import CostsPanel
from .lanes import DerivedImages, LanePanel
from .overview import HeadsOverview
from .session import RunInfo, Session
from .timeline import Timeline
from .tokens import token_area

DEFAULT_MODEL = "tiny"
RANDOM_PRESETS = [
    ("random · Llama GQA (4 layers, 8 heads, 2 kv)", "random:family=llama,layers=4,heads=8,kv_heads=2,dim=256,seed=0"),
    ("random · Llama MQA (4 layers, 8 heads, 1 kv)", "random:family=llama,layers=4,heads=8,kv_heads=1,dim=256,seed=0"),
    ("random · Llama MHA (4 layers, 8 heads)", "random:family=llama,layers=4,heads=8,kv_heads=8,dim=256,seed=0"),
    ("random · GPT-2 (4 layers, 4 heads, 128 dim)", "random:family=gpt2,layers=4,heads=4,dim=128,seed=0"),
]
LANE_CHOICES = [("no cache | KV cache", "uncached,cached"), ("KV cache | no cache", "cached,uncached")]
OPEN_ITEM = "__open__"


def example_prompts() -> list[tuple[str, str]]:
    data = json.loads((Path(__file__).with_name("prompts.json")).read_text(encoding="utf-8"))
    return [(lang, text) for lang in ("en", "pt") for text in data.get(lang, [])]


class Legend(QWidget):
    """One line explaining the colours: K/V diverging scale, attention scale, masked hatch."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setFixedHeight(26)

    def paintEvent(self, event) -> None:  # noqa: N802
        p = QPainter(self)
        p.setRenderHint(QPainter.Antialiasing)
        fm = p.fontMetrics()
        x, h = 8, self.height()

        def text(s: str) -> None:
            nonlocal x
            p.setPen(QColor(theme.MUTED))
            p.drawText(x, int(h / 2 + fm.ascent() / 2 - 2), s)
            x += fm.horizontalAdvance(s) + 8

        def ramp(name: str, w: int = 120) -> None:
            nonlocal x
            grad = QLinearGradient(x, 0, x + w, 0)
            table = theme.lut(name)
            for i in range(0, 256, 32):
                grad.setColorAt(i / 255, QColor(*table[i]))
            grad.setColorAt(1.0, QColor(*table[255]))
            p.fillRect(x, 6, w, h - 12, grad)
            x += w + 8

        text("K, V:  −")
        ramp(theme.KV_CMAP)
        text("+   (0 = black, symmetric)")
        x += 16
        text("attention p:  0")
        ramp(theme.ATTN_CMAP)
        text("1   (colour ∝ √p)")
        x += 16
        p.fillRect(x, 6, 28, h - 12, QBrush(QColor(theme.MASKED), Qt.BDiagPattern))
        x += 36
        text("masked (future)")
        x += 16
        p.fillRect(x, 6, 28, h - 12, QColor(70, 70, 70))
        x += 36
        text("dim = read from cache")
        p.end()


class MainWindow(QMainWindow):
    busy_changed = Signal(bool)
    first_painted = Signal(float)
    message = Signal(str, bool)  # text, is_error

    def __init__(self, model: str | None = None, prompt: str | None = None, persist: bool = True,
                 fallback: bool | None = None) -> None:
        super().__init__()
        self.setWindowTitle("kvsim — the KV cache, step by step")
        self.persist = persist
        self.settings = QSettings("kvsim", "kvsim-ui") if persist else None
        self.session = Session(self)
        self.derived = DerivedImages(self.session)
        self.animator = Animator(self)
        self._progress_delay = QTimer(self)
        self._progress_delay.setSingleShot(True)
        self._progress_delay.setInterval(300)
        self.worker = None  # created after the first paint (it imports torch)
        self.busy = False
        self.playing = False
        self.can_step = False  # a simulator exists for the current run
        self.browsing = False  # showing a run opened from a .kvsim file
        self.model_spec = model or DEFAULT_MODEL
        self.fallback = (model is None or model == DEFAULT_MODEL) if fallback is None else fallback
        self.lanes = LANE_CHOICES[0][1]
        self.lane_panels: list[LanePanel] = []
        self.last_error = ""
        self._first_paint = None
        self._docks_fitted = False
        self._stagger = 0
        self._t_created = time.perf_counter()

        self._build_toolbar(prompt)
        self._build_central()
        self._build_docks()

        self._connect()
        self.resize(1600, 900)
        self._default_state = self.saveState()
        if self.settings is not None:
            self._restore()
        self._booted = False
        QTimer.singleShot(200, self._boot)  # or on the first paint, whichever comes first

    def _boot(self) -> None:
        """Import the engine and start the worker thread, then load the model on it."""
        if self._booted:
            return
        self._booted = True
        self.statusBar().showMessage("starting the engine …")
        self.statusBar().repaint()  # seen before the (blocking, ~1 s) import of torch below
        from .worker import WorkerThread

        self.worker = WorkerThread(self)
        w = self.worker.worker
        w.models_listed.connect(self._fill_models)
        w.model_loaded.connect(self._on_model_loaded)
        w.run_started.connect(self._on_run_started)
        w.record_ready.connect(self._on_record)
        w.failed.connect(self._on_failed)
        w.busy_changed.connect(self._on_busy)
        w.progress.connect(self._on_progress)
        w.cancelled.connect(self._on_cancelled)
        self.load_model(self.model_spec, fallback=self.fallback)

    # ================================================================== building
    def _build_toolbar(self, prompt: str | None) -> None:
        tb = self.toolbar = QToolBar("Controls")
        tb.setObjectName("controls")
        tb.setMovable(False)
        self.addToolBar(Qt.TopToolBarArea, tb)
        big = QFont(self.font())
        big.setPointSizeF(big.pointSizeF() * 1.1)

        self.model_box = QComboBox()
        self.model_box.setMinimumContentsLength(11)
        self.model_box.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
        self.model_box.setToolTip("model")
        self._fill_models()
        tb.addWidget(self.model_box)

        self.prompt_box = QComboBox()
        self.prompt_box.setEditable(True)
        self.prompt_box.setInsertPolicy(QComboBox.NoInsert)
        self.prompt_box.setMinimumContentsLength(12)
        self.prompt_box.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
        self.prompt_box.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Fixed)
        for lang, text in example_prompts():
            self.prompt_box.addItem(f"{text}", lang)
            self.prompt_box.setItemData(self.prompt_box.count() - 1, f"example ({lang.upper()})", Qt.ToolTipRole)
        self.prompt_box.setCurrentIndex(0)
        if prompt:
            self.prompt_box.setEditText(prompt)
        self.prompt_box.lineEdit().setCursorPosition(0)
        self.prompt_box.setToolTip("prompt: pick an example (English / Português) or type; Enter restarts")
        tb.addWidget(self.prompt_box)

        def action(text: str, tip: str, keys, slot, checkable: bool = False) -> QAction:
            a = QAction(text, self)
            a.setToolTip(f"{tip} ({keys})" if keys else tip)
            if keys:
                a.setShortcut(QKeySequence(keys))
                a.setShortcutContext(Qt.WindowShortcut)
            a.setCheckable(checkable)
            a.triggered.connect(slot)
            tb.addAction(a)
            return a

        self.reset_action = action("↺ Reset", "restart the run with this prompt", "Home", self.reset)
        self.back_action = action("◀ Back", "step back (redraw from the record)", "Left", self.step_back)
        self.step_action = action("Step ▶", "next step (computes one if at the end)", "Right", self.step_forward)
        self.play_action = action("▶▶ Play", "play / pause", "Space", self.toggle_play, checkable=True)
        self.focus_action = QAction("lanes only", self)
        self.focus_action.setShortcut(QKeySequence("F"))
        self.focus_action.setToolTip("show only the lanes and the timeline (F), for small screens")
        self.focus_action.triggered.connect(self.toggle_lanes_only)
        self.addAction(self.focus_action)
        for a in (self.reset_action, self.back_action, self.step_action, self.play_action):
            tb.widgetForAction(a).setFont(big)

        self.speed_box = QComboBox()
        for name in SPEEDS:
            self.speed_box.addItem(name, name)
        self.speed_box.setCurrentIndex(1)
        self.speed_box.setToolTip("animation speed")
        tb.addWidget(self.speed_box)

        tb.addSeparator()
        self.lanes_box = QComboBox()
        for label, value in LANE_CHOICES:
            self.lanes_box.addItem(label, value)
        self.lanes_box.setToolTip("the two lanes")
        tb.addWidget(self.lanes_box)
        self.layer_box = QComboBox()
        self.layer_box.setToolTip("layer")
        tb.addWidget(self.layer_box)
        self.lanes_box.setSizeAdjustPolicy(QComboBox.AdjustToContents)
        self.layer_box.setSizeAdjustPolicy(QComboBox.AdjustToContents)
        self.head_box = QComboBox()
        self.head_box.setSizeAdjustPolicy(QComboBox.AdjustToContents)
        self.head_box.setToolTip("query head (GQA: the K/V head it reads is shown in the titles)")
        tb.addWidget(self.head_box)

    def _fill_models(self, rows: list | None = None) -> None:
        """Bundled/fetched models (listed by the worker, off the GUI thread), presets, Open…."""
        box = self.model_box
        current = box.currentData()
        box.blockSignals(True)
        box.clear()
        rows = rows or []
        names = [str(r["name"]) for r in rows]
        if DEFAULT_MODEL not in names:
            box.addItem(f"{DEFAULT_MODEL} (bundled)", DEFAULT_MODEL)
        for r in rows:
            kind = "not fetched: kvsim models get " + str(r["name"]) if r["kind"] == "fetchable" else r["kind"]
            box.addItem(f"{r['name']} ({kind})", str(r["name"]))
        for label, spec in RANDOM_PRESETS:
            box.addItem(label, spec)
        box.addItem("Open checkpoint directory or .gguf…", OPEN_ITEM)
        if current is not None and box.findData(current) < 0 and current != OPEN_ITEM:
            box.insertItem(box.count() - 1, str(current), current)
        box.setCurrentIndex(max(0, box.findData(current)) if current is not None else 0)
        box.blockSignals(False)

    def _build_central(self) -> None:
        central = QWidget()
        lay = QVBoxLayout(central)
        lay.setContentsMargins(4, 4, 4, 0)
        lay.setSpacing(2)
        self.banner = QLabel()
        self.banner.setObjectName("banner")
        self.banner.setWordWrap(True)
        self.banner.setVisible(False)
        self.banner.setCursor(Qt.PointingHandCursor)
        self.banner.setToolTip("click to dismiss")
        self.banner.mousePressEvent = lambda _e: self.banner.setVisible(False)
        lay.addWidget(self.banner)
        self.splitter = QSplitter(Qt.Horizontal)
        self.splitter.setChildrenCollapsible(False)
        self.placeholder = QLabel("loading the model …")
        self.placeholder.setAlignment(Qt.AlignCenter)
        self.placeholder.setStyleSheet(f"color: {theme.MUTED}; font-size: 20pt;")
        self.splitter.addWidget(self.placeholder)
        lay.addWidget(self.splitter, 1)
        self.legend = Legend()
        lay.addWidget(self.legend)
        central.setFocusPolicy(Qt.StrongFocus)  # arrows/Space drive the simulator, not a text box
        self.setCentralWidget(central)

        self.timeline = Timeline(self.session)
        tb = QToolBar("Timeline")
        tb.setObjectName("timeline")
        tb.setMovable(False)
        tb.addWidget(self.timeline)
        self.timeline.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Preferred)
        self.addToolBar(Qt.BottomToolBarArea, tb)

    def _build_docks(self) -> None:
        self.costs = CostsPanel(self.session)
        self.costs_dock = self._dock("Costs so far", "costs", self.costs, Qt.BottomDockWidgetArea)
        area, self.tokens = token_area(self.session)
        self.text_dock = self._dock("Text (prompt = prefill, then one token per decode step)", "text", area,
                                    Qt.BottomDockWidgetArea)
        self.overview = HeadsOverview(self.session, self.derived)
        self.overview_dock = self._dock("All heads (selected layer)", "heads", self.overview, Qt.RightDockWidgetArea)
        self.overview_dock.setVisible(False)
        self.splitDockWidget(self.costs_dock, self.text_dock, Qt.Vertical)
        self.resizeDocks([self.costs_dock, self.text_dock], [230, 80], Qt.Vertical)
        self.resizeDocks([self.overview_dock], [520], Qt.Horizontal)
        # docks can be closed, so the toolbar keeps a View menu to bring them (or the default layout) back
        view = QMenu("View", self)
        save = view.addAction("Save run…", self._ask_save_run)
        save.setShortcut(QKeySequence.Save)
        opened = view.addAction("Open run…", self._ask_open_run)
        opened.setShortcut(QKeySequence.Open)
        self.addActions([save, opened])  # shortcuts work with the menu closed
        view.addSeparator()
        for d in (self.costs_dock, self.text_dock, self.overview_dock):
            view.addAction(d.toggleViewAction())
        view.addSeparator()
        view.addAction("Default layout", self.default_layout)
        self.view_button = QToolButton()
        self.view_button.setText("☰")
        self.view_button.setToolTip("save or open a run (.kvsim); show or hide panels; the default layout")
        self.view_button.setMenu(view)
        self.view_button.setPopupMode(QToolButton.InstantPopup)
        self.toolbar.addWidget(self.view_button)

    def _dock(self, title: str, name: str, widget: QWidget, area) -> QDockWidget:
        d = QDockWidget(title, self)
        d.setObjectName(name)
        d.setWidget(widget)
        d.setFeatures(QDockWidget.DockWidgetMovable | QDockWidget.DockWidgetFloatable | QDockWidget.DockWidgetClosable)
        self.addDockWidget(area, d)
        return d

    def _connect(self) -> None:
        self.timeline.scrubbed.connect(self.scrub_to)
        self.timeline.cancel_requested.connect(self.cancel)
        self.animator.frame.connect(self._on_frame)
        self.animator.finished.connect(self._on_anim_finished)
        self.model_box.activated.connect(self._on_model_chosen)
        # Enter in the editable box fires both signals: coalesce them into one reset
        self._reset_soon = QTimer(self)
        self._reset_soon.setSingleShot(True)
        self._reset_soon.setInterval(0)
        self._reset_soon.timeout.connect(self.reset)
        self.prompt_box.lineEdit().returnPressed.connect(self._reset_soon.start)
        self.prompt_box.activated.connect(lambda _i: self._reset_soon.start())
        self.speed_box.currentIndexChanged.connect(lambda _i: self.animator.set_speed(self.speed_box.currentData()))
        self.lanes_box.activated.connect(lambda _i: self._on_lanes_chosen())
        self.layer_box.currentIndexChanged.connect(lambda _i: self._on_selection())
        self.head_box.currentIndexChanged.connect(lambda _i: self._on_selection())
        self.tokens.hovered.connect(self._on_hover)

    # ================================================================== commands
    def load_model(self, spec: str, fallback: bool = False) -> None:
        if self.worker is None:
            self._boot()
        self.stop_play()
        self.can_step = False
        self.model_spec = spec
        self.show_message(f"loading model {spec} …")
        self.worker.worker.cancel()
        self.worker.request_load.emit(spec, fallback)

    def prompt_text(self) -> str:
        return self.prompt_box.currentText()

    # ------------------------------------------------------------------ runs on disk (.kvsim)
    def _ask_save_run(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save run", "run.kvsim", "kvsim runs (*.kvsim)")
        if path:
            self.save_run(path if path.endswith(".kvsim") else path + ".kvsim")

    def _ask_open_run(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open run", "", "kvsim runs (*.kvsim);;all files (*)")
        if path:
            self.open_run(path)

    def save_run(self, path: str) -> bool:
        """Write the current run's records (all of them, whatever the cursor) to a .kvsim file."""
        from kvsim.trace import Trace

        run = self.session.run
        if run is None or not self.session.records:
            self.show_message("nothing to save yet: run a step first", error=True)
            return False
        try:
            Trace(meta=dict(run.meta), records=list(self.session.records)).save(path)
        except OSError as exc:
            self.show_message(f"could not save {path}: {exc.strerror or exc}", error=True)
            return False
        self.show_message(f"saved {self.session.n_steps} steps to {path}")
        return True

    def open_run(self, path: str) -> bool:
        """Show a saved run (browse only: its model need not be loaded). Reset starts a live run again."""
        from kvsim.trace import Trace, TraceError

        try:
            trace = Trace.load(path)
            if not trace.records:
                raise TraceError(f"{path}: the run has no steps")
            meta, records = trace.meta, trace.records
            cfg = dict(meta["config"])
            labels = {int(k): str(v) for k, v in meta.get("prompt_tokens", {}).items()}
            run = RunInfo(run_id=records[0].run_id, model_id=str(meta.get("model_id", "saved run")), config=cfg,
                          prompt_ids=[int(i) for i in records[0].input_ids], prompt_text=str(meta.get("prompt") or ""),
                          token_texts=labels, lanes=list(meta["lanes"]), info={"source": path},
                          max_seq_len=int(cfg["max_seq_len"]), meta=meta)
        except (TraceError, OSError, KeyError, TypeError, ValueError, AttributeError) as exc:
            self.show_message(f"could not open {path}: {exc}", error=True)
            return False
        self.stop_play()
        self.animator.stop()
        if self.worker is not None:
            self.worker.worker.cancel()
        self.browsing = True
        self._fill_selectors(cfg)
        self._on_run_started(run)
        self.can_step = False
        for record in records:
            self.session.add_record(record)
        self.session.set_cursor(len(records) - 1)
        self.flush_views()
        self.setWindowTitle(f"kvsim — {run.model_id} — {path}")
        self.show_message(f"opened {path}: {len(records)} steps of {run.model_id} — browse with ← →; "
                          "Reset (Home) starts a live run on the loaded model")
        return True

    def reset(self) -> None:
        """Restart the run with the prompt in the box (the model stays loaded)."""
        self.stop_play()
        self.animator.stop()
        self.can_step = False
        if self.browsing:  # back from an opened run: the selectors follow the loaded model again
            self.browsing = False
            if getattr(self, "loaded_info", None):
                self._fill_selectors(self.loaded_info["config"])
        if self.worker is None:
            return
        self.worker.worker.cancel()
        self.worker.request_begin.emit(self.prompt_text(), self.lanes)

    def step_forward(self) -> None:
        s = self.session
        if s.run is None:
            return
        self.animator.stop()
        if s.cursor < s.n_steps - 1:
            s.set_cursor(s.cursor + 1)
            self.animator.start()
            return
        if self.busy:
            return
        if not self.can_step:
            why = "an opened run is for browsing" if self.browsing else "this run cannot continue"
            self.show_message(f"{why}: press Reset (Home) to start a live run", error=True)
            self.stop_play()
            return
        if s.n_rows(s.n_steps) > s.run.max_seq_len:
            self.show_message(f"the model's context of {s.run.max_seq_len} tokens is full", error=True)
            self.stop_play()
            return
        self.busy = True
        self._progress_delay.start()  # progress shows only for steps longer than a blink
        self.worker.request_step.emit(s.run.run_id)

    def step_back(self) -> None:
        self.stop_play()
        self.animator.stop()
        self.session.set_cursor(self.session.cursor - 1)
        self.flush_views()

    def scrub_to(self, step: int) -> None:
        self.stop_play()
        self.animator.stop()
        self.session.set_cursor(step)
        self.flush_views()

    def toggle_play(self) -> None:
        if self.playing:
            self.stop_play()
        else:
            self.playing = True
            self.play_action.setChecked(True)
            self.play_action.setText("❚❚ Pause")
            if not self.animator.running and not self.busy:
                self.step_forward()

    def toggle_lanes_only(self) -> None:
        """Hide the costs and text docks (or bring them back): the lanes get the whole height."""
        show = not (self.costs_dock.isVisible() or self.text_dock.isVisible())
        self.costs_dock.setVisible(show)
        self.text_dock.setVisible(show)
        self.legend.setVisible(show)

    def stop_play(self) -> None:
        self.playing = False
        self.play_action.setChecked(False)
        self.play_action.setText("▶▶ Play")

    def cancel(self) -> None:
        self.stop_play()
        if self.worker is not None:
            self.worker.worker.cancel()

    def run_steps(self, n: int, timeout_s: float = 120.0) -> bool:
        """Compute/show ``n`` more steps synchronously from the caller's view (tests, screenshots)."""
        from PySide6.QtCore import QCoreApplication, QEventLoop

        target = self.session.n_steps + n if self.session.cursor == self.session.n_steps - 1 \
            else self.session.cursor + 1 + n
        deadline = time.monotonic() + timeout_s
        while self.session.cursor + 1 < target and time.monotonic() < deadline:
            if not self.busy and not self.animator.running:
                before = self.session.cursor
                self.step_forward()
                if self.session.cursor == before and not self.busy:
                    return False
            QCoreApplication.processEvents(QEventLoop.AllEvents, 20)
            if self.busy:
                time.sleep(0.002)
        self.animator.stop()
        return self.session.cursor + 1 >= target

    def wait_ready(self, timeout_s: float = 60.0) -> bool:
        """Process events until a run exists and the worker is idle (tests, screenshots)."""
        from PySide6.QtCore import QCoreApplication, QEventLoop

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            QCoreApplication.processEvents(QEventLoop.AllEvents, 20)
            if self.session.run is not None and self.can_step and not self.busy:
                return True
            time.sleep(0.002)
        return False

    # ================================================================== worker results
    def _on_model_loaded(self, info: dict) -> None:
        cfg = info["config"]
        self.loaded_info = info
        self.model_spec = info["model_id"]
        idx = self.model_box.findData(info["model_id"])
        if idx < 0:
            self.model_box.insertItem(self.model_box.count() - 1, info["model_id"], info["model_id"])
            idx = self.model_box.findData(info["model_id"])
        self.model_box.setCurrentIndex(idx)
        self.model_box.setToolTip(f"{info['model_id']}: {cfg['family']}, {cfg['n_layers']} layers, {cfg['n_heads']} heads "
                                  f"({cfg['n_kv_heads']} kv), head dim {cfg['head_dim']}, context {cfg['max_seq_len']}, "
                                  f"{info['params']:,} parameters")
        self._fill_selectors(cfg)
        msg = f"model {info['model_id']}: {cfg['family']}, {cfg['n_layers']} layers, {cfg['n_heads']} heads " \
              f"/ {cfg['n_kv_heads']} kv heads, head dim {cfg['head_dim']}, {info['params']:,} parameters"
        if info.get("note"):
            self.show_message(info["note"], error=False)
            self.statusBar().showMessage(msg + " — " + info["note"])
        else:
            self.show_message(msg)
        self.reset()

    def _fill_selectors(self, cfg: dict) -> None:
        for box in (self.layer_box, self.head_box):
            box.blockSignals(True)
            box.clear()
        for i in range(cfg["n_layers"]):
            self.layer_box.addItem(f"layer {i}", i)
        g = cfg["n_heads"] // cfg["n_kv_heads"]
        for h in range(cfg["n_heads"]):
            self.head_box.addItem(f"head {h} · kv {h // g}", h)
        self.head_box.addItem("all heads", -1)
        self.layer_box.setCurrentIndex(cfg["n_layers"] - 1 if cfg["n_layers"] <= 2 else 1)
        for box in (self.layer_box, self.head_box):
            box.blockSignals(False)
        self._on_selection()

    def _on_run_started(self, run) -> None:
        self.busy = False  # a step asked of the previous run is dropped by the worker
        self.animator.stop()
        self._make_lanes(run.lanes)
        self.setWindowTitle(f"kvsim — {run.model_id} — the KV cache, step by step")
        self.session.start_run(run)
        self.flush_views()
        self.can_step = True
        if self.prompt_box.lineEdit().hasFocus() or self.focusWidget() is None:
            self.centralWidget().setFocus()  # so Space / → / ← / Home work at once
        self.statusBar().showMessage(f"prompt: {len(run.prompt_ids)} tokens · press Step (→) or Play (Space) · "
                                     "Back (←) · Reset (Home) · F: lanes only")

    def _make_lanes(self, lanes: list[dict]) -> None:
        names = [lane["name"] for lane in lanes]
        if [p.name for p in self.lane_panels] == names:
            return
        for p in self.lane_panels:
            p.setParent(None)
            p.deleteLater()
        if self.placeholder is not None:
            self.placeholder.setParent(None)
            self.placeholder.deleteLater()
            self.placeholder = None
        self.lane_panels = [LanePanel(self.session, self.derived, lane["name"], lane["policy"]) for lane in lanes]
        for p in self.lane_panels:
            self.splitter.addWidget(p)
            p.hovered.connect(self._on_hover)
            p.pointed.connect(lambda text: self.statusBar().showMessage(text, 4000))
            p.redraw()
        self._on_selection()

    def _on_record(self, record) -> None:
        self.busy = False
        self._progress_delay.stop()
        self.timeline.hide_progress()
        if self.session.add_record(record):
            self.session.set_cursor(record.step)
            self.animator.start()

    def _on_failed(self, what: str, message: str) -> None:
        self.busy = False
        self.stop_play()
        self.timeline.hide_progress()
        self.show_message(message, error=True)

    def _on_cancelled(self, step: int) -> None:
        self.busy = False
        self.timeline.hide_progress()
        what = "prefill" if step == 0 else f"step {step}"
        self.show_message(f"{what} cancelled — nothing was kept of it; Step (→) runs it again", error=True)

    def _on_progress(self, lane: str, done: int, total: int) -> None:
        self.timeline.show_progress(lane, done, total, visible=not self._progress_delay.isActive())

    def _on_busy(self, busy: bool) -> None:
        if not busy:
            self.timeline.hide_progress()
        self.busy_changed.emit(busy)

    def _on_frame(self, t: float) -> None:
        for p in self.lane_panels:
            p.set_progress(t)
        # a step's redraws are spread over its first frames (lane A, lane B, costs, text), one view
        # per frame, so no frame paints everything; the last frame (t = 1) flushes whatever is left
        self._stagger = 0 if t <= 0.0 else self._stagger + 1
        stages = [*self.lane_panels, *self.costs.stages(), self.costs.flush, self.tokens.flush]
        if t >= 1.0:
            self.flush_views()
        elif self._stagger < len(self.lane_panels):
            self.lane_panels[self._stagger].flush()
            self.lane_panels[self._stagger].set_progress(t)
        elif self._stagger < len(stages):
            stages[self._stagger]()

    def flush_views(self) -> None:
        for view in (*self.lane_panels, self.costs, self.tokens):
            view.flush()

    def _on_anim_finished(self) -> None:
        if not self.playing:
            return
        r, run = self.session.record(), self.session.run
        if r is not None and run is not None and run.eos_id is not None and r.token_id == run.eos_id:
            self.stop_play()  # as `kvsim run` does; Step (→) continues past it
            self.show_message("the model produced its end-of-sequence token (its answer ends here); "
                              "Step (→) continues anyway")
            return
        QTimer.singleShot(0, self._play_next)

    def _play_next(self) -> None:
        if self.playing and not self.busy and not self.animator.running:
            self.step_forward()

    # ================================================================== toolbar reactions
    def _on_model_chosen(self, index: int) -> None:
        spec = self.model_box.itemData(index)
        if spec == OPEN_ITEM:
            path, _ = QFileDialog.getOpenFileName(
                self, "Open a checkpoint (its config.json) or a .gguf file", str(Path.home()),
                "Models (config.json *.gguf);;All files (*)")
            if not path:
                idx = self.model_box.findData(self.model_spec)
                self.model_box.setCurrentIndex(max(idx, 0))
                return
            spec = str(Path(path).parent) if Path(path).name == "config.json" else path
        self.load_model(spec, fallback=False)

    def _on_lanes_chosen(self) -> None:
        self.lanes = self.lanes_box.currentData()
        self.reset()

    def _on_selection(self) -> None:
        layer = max(self.layer_box.currentData() or 0, 0)
        head = self.head_box.currentData()
        if head is None:
            head = 0
        if head < 0:
            self.overview_dock.setVisible(True)
            self.overview_dock.raise_()
            head = getattr(self, "_last_head", 0)
        else:
            self._last_head = head
        self.overview.set_layer(layer)
        for p in self.lane_panels:
            p.set_selection(layer, head)

    def _on_hover(self, position: int) -> None:
        """A token hovered in the text or a row hovered in a lane: highlight it everywhere."""
        for p in self.lane_panels:
            p.set_hovered(position)
        if self.tokens.hover != position:
            self.tokens.set_hover(position)

    # ================================================================== messages, settings
    def show_message(self, text: str, error: bool = False) -> None:
        if error:
            self.last_error = text
            self.banner.setText(f"⚠  {text}")
            self.banner.setVisible(True)
        else:
            self.banner.setVisible(False)
        self.statusBar().showMessage(text)
        self.message.emit(text, error)

    def default_layout(self) -> None:
        """Every dock back where a fresh window puts it (the state captured before settings were read)."""
        self.restoreState(self._default_state)

    def _restore(self) -> None:
        s = self.settings
        geom = s.value("geometry")
        if geom is not None:
            self.restoreGeometry(geom)
        state = s.value("state")
        if state is not None:
            self.restoreState(state)
        speed = s.value("speed")
        if speed in SPEEDS:
            self.speed_box.setCurrentIndex(list(SPEEDS).index(speed))
            self.animator.set_speed(speed)

    def closeEvent(self, event) -> None:  # noqa: N802
        if self.settings is not None:
            self.settings.setValue("geometry", self.saveGeometry())
            self.settings.setValue("state", self.saveState())
            self.settings.setValue("speed", self.speed_box.currentData())
        self.shutdown()
        super().closeEvent(event)

    def shutdown(self) -> bool:
        """Stop playing and the worker thread; False if the worker is still busy (e.g. loading)."""
        self.stop_play()
        self.animator.timer.stop()
        return self.worker is None or self.worker.stop()

    def fit_docks(self) -> None:
        """Give the lanes most of the height: costs ≈ 21 %, text ≈ 9 % of the window."""
        h = max(self.height(), 600)
        text_h = max(self.text_dock.minimumSizeHint().height(), int(h * 0.075))  # else costs pays the difference
        self.resizeDocks([self.costs_dock, self.text_dock], [int(h * 0.19), text_h], Qt.Vertical)

    def showEvent(self, event) -> None:  # noqa: N802
        super().showEvent(event)
        if not self._docks_fitted:
            self._docks_fitted = True
            if self.settings is None or self.settings.value("state") is None:
                self.fit_docks()

    def paintEvent(self, event) -> None:  # noqa: N802
        super().paintEvent(event)
        if self._first_paint is None:
            self._first_paint = time.perf_counter()
            self.first_painted.emit(self._first_paint)
            QTimer.singleShot(0, self._boot)
