"""The main window: where things are. Toolbar, lanes side by side, costs, text, timeline, docks,
and the settings that remember them. GUI thread only.

Data flows one way: the worker (its own QThread) emits StepRecords → the controller hands them to
the Session → every view redraws from the session. The toolbar emits intents, the controller
decides what they do; the window lays out the views, shows messages, and spreads each step's
redraws over the frames of the one animation clock.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMainWindow, QVBoxLayout, QWidget

from .. import i18n
from ..docks import registry as docks
from ..i18n import translate
from ..lanes.area import LaneArea
from ..lanes.derived import DerivedImages
from ..lanes.view import LanePanel
from ..lesson import guide as lesson
from ..menu import menu
from ..session import Session
from ..startup.launch import launch_mark
from . import dialogs, layout
from .animation import SPEEDS, Animator
from .controller import Controller
from .stage import Stage
from .toolbar import DEFAULT_MODEL, OPEN_ITEM, ControlsToolBar, editor

if TYPE_CHECKING:  # the views the docks build on their own, the worker made at boot (it imports torch)
    from ..lanes.legend import Legend
    from ..lanes.overview import HeadsOverview
    from ..lesson.guide import Lesson, LessonPanel
    from ..menu.appearance import ThemeSetting
    from ..menu.language_menu import LanguageSetting
    from ..menu.recent import RecentRuns
    from ..panels.costs import CostsPanel
    from ..panels.timeline import Timeline
    from ..panels.tokens import TokenStrip
    from .presenter import Presenter
    from .worker import WorkerThread


class MainWindow(QMainWindow):
    first_painted = Signal(float)
    # built by layout.build_central
    banner: layout.Banner
    central_layout: QVBoxLayout
    lanes_page: QWidget
    lanes: LaneArea
    legend: Legend
    timeline: Timeline
    # built by _build_docks
    jobs: docks.Jobs
    costs_dock: docks.LazyDock
    text_dock: docks.LazyDock
    overview_dock: docks.LazyDock
    costs: CostsPanel
    tokens: TokenStrip
    overview: HeadsOverview
    extra_docks: dict[str, docks.LazyDock]
    stage: Stage
    lesson: Lesson
    lesson_dock: LessonPanel
    lesson_action: QAction
    # built by menu.build
    recent: RecentRuns
    presenter: Presenter
    theme_setting: ThemeSetting
    language_setting: LanguageSetting

    @property
    def lane_panels(self) -> list[LanePanel]:
        return self.lanes.panels

    def __init__(
        self,
        model: str | None = None,
        prompt: str | None = None,
        persist: bool = True,
        fallback: bool | None = None,
        lanes: str | None = None,
    ) -> None:
        super().__init__()
        self.setWindowTitle(translate("window", "kvsim — the KV cache, step by step"))
        self.settings: QSettings | None = QSettings("kvsim", "kvsim-ui") if persist else None
        self.session = Session(self)
        self.derived = DerivedImages(self.session)
        self.animator = Animator(self)
        self.toolbar = ControlsToolBar(self, prompt)
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, self.toolbar)
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, self.toolbar.more)
        self.controller = Controller(self.session, self.animator, self.toolbar.prompt_text, self)
        if lanes:  # `kvsim --lanes …`: the first run's lanes, shown in the lanes box as if typed there
            self.controller.lanes = lanes.strip()
            self.toolbar.show_lanes(self.controller.lanes)
        self.worker: WorkerThread | None = None  # created after the first paint (it imports torch)
        self.model_spec = model or DEFAULT_MODEL
        self.fallback = (model is None or model == DEFAULT_MODEL) if fallback is None else fallback
        self._first_paint: float | None = None
        self._docks_fitted = False
        self._stagger = 0
        central = layout.build_central(self.session, self.derived)  # banner, the lanes page (lanes + legend), the timeline
        self.setCentralWidget(central.widget)
        self.addToolBar(Qt.ToolBarArea.BottomToolBarArea, central.timeline_bar)
        self.banner, self.central_layout, self.lanes_page = central.banner, central.layout, central.lanes_page
        self.lanes, self.legend, self.timeline = central.lanes, central.legend, central.timeline
        self._build_docks()
        self._connect()
        self.setMinimumSize(layout.WINDOW_MIN)  # below any supported screen: the layout's own minimum may not be
        self.resize(layout.initial_size(self))  # never larger than the screen (clamped again when shown)
        self._compact: bool | None = None
        self._default_state = self.saveState()
        self._restore()
        self.theme_setting.apply()
        self._booted = False
        self._ready_marked = False
        QTimer.singleShot(200, self._boot)  # or on the first paint, whichever comes first

    def _boot(self) -> None:
        """Import the engine and start the worker thread, then load the model on it."""
        from ..startup import engine_import

        if self._booted or not engine_import.when_ready(self._boot):  # imported on a thread: boot when it is done
            return
        self._booted = True
        self.statusBar().showMessage(translate("window", "starting the engine …"))
        self.statusBar().repaint()  # seen before the (blocking, ~1 s) import of torch below
        from .worker import WorkerThread

        launch_mark("engine-imported")
        self.worker = WorkerThread(self)
        self.toolbar.fill_lanes()
        self.controller.attach_worker(self.worker)
        self.jobs.attach(self.worker)
        self.controller.load_model(self.model_spec, fallback=self.fallback)

    # ================================================================== building
    def _build_docks(self) -> None:
        """Every dock from the registry (one place), the stage that can hold their views, the lesson's
        caption band under it, and the ☰ menu."""
        self.jobs = docks.Jobs(self)  # the extra docks' computations, on the worker thread
        host = docks.DockHost(self.session, self.jobs, self.show_message, self.settings, self, self.derived)
        made = docks.install(self, host, None)
        self.costs_dock, self.text_dock, self.overview_dock = made.pop("costs"), made.pop("text"), made.pop("heads")
        self.costs, self.tokens, self.overview = self.costs_dock.view, self.text_dock.view, self.overview_dock.view
        self.extra_docks = made
        self.overview_dock.setVisible(False)
        self.splitDockWidget(self.costs_dock, self.text_dock, Qt.Orientation.Vertical)
        self.resizeDocks([self.costs_dock, self.text_dock], [230, 80], Qt.Orientation.Vertical)
        self.resizeDocks([self.overview_dock], [520], Qt.Orientation.Horizontal)
        fixed = {"costs": self.costs_dock, "text": self.text_dock, "heads": self.overview_dock}
        self.stage = Stage(self, self.lanes_page, {**fixed, **made}, self.toggle_lanes_only)
        self.central_layout.addWidget(self.stage.stack, 1)
        self.lesson, self.lesson_dock, self.lesson_action = lesson.install(self)  # F2: a caption band under the stage
        self.central_layout.addWidget(self.lesson_dock)
        made_menu = menu.build(self)
        self.recent, self.presenter = made_menu.recent, made_menu.presenter
        self.theme_setting, self.language_setting = made_menu.theme_setting, made_menu.language_setting

    def _step_key(self, direction: int) -> None:
        """→ / ←: the stage's own stepping view, else the lanes."""
        if not self._stage_step(direction):
            (self.controller.step_forward if direction > 0 else self.controller.step_back)()

    def _stage_step(self, direction: int) -> bool:
        """→ / ← on a stage view that steps through its own run (the batching timeline): that view steps
        (True); elsewhere the lanes do."""
        if not self.stage.active:
            return False
        _entry, dock = self.stage.entries.get(self.stage.current, (None, None))
        view = getattr(dock, "view", None)
        return bool(view is not None and hasattr(view, "stage_step") and view.stage_step(direction))

    def _connect(self) -> None:
        tb, c = self.toolbar, self.controller
        tb.model_chosen.connect(self._on_model_chosen)
        tb.prompt_submitted.connect(c.reset)
        tb.reset_requested.connect(c.reset)
        tb.back_requested.connect(lambda: self._step_key(-1))
        tb.step_requested.connect(lambda: self._step_key(+1))
        tb.play_toggled.connect(c.toggle_play)
        tb.speed_chosen.connect(self.animator.set_speed)
        tb.lanes_chosen.connect(c.set_lanes)
        for box in (tb.lanes_box, tb.prompt_box):  # Enter or a pick: the keys drive the stage again (F, Space, →)
            editor(box).returnPressed.connect(self.focus_stage)
            box.activated.connect(lambda _i: self.focus_stage())
        tb.selection_changed.connect(self._on_selection)
        self.timeline.scrubbed.connect(c.scrub_to)
        self.timeline.cancel_requested.connect(c.cancel)
        self.tokens.hovered.connect(self._on_hover)
        self.lanes.hovered.connect(self._on_hover)
        self.lanes.pointed.connect(lambda text: self.statusBar().showMessage(text, 4000))
        self.animator.frame.connect(self._on_frame)
        c.browsed.connect(self.flush_views)
        c.browsed.connect(self._at_rest)  # after the views took the step they were moved to
        self.animator.finished.connect(self._at_rest)
        c.playing_changed.connect(self._at_rest)
        c.message.connect(self.show_message)
        c.playing_changed.connect(tb.show_playing)
        c.models_listed.connect(tb.fill_models)
        c.model_loaded.connect(lambda info: self.show_message(info.get("note") or tb.show_loaded(info)))
        c.model_loaded.connect(lambda _info: launch_mark("model-loaded"))
        c.selectors_changed.connect(tb.fill_selectors)
        c.run_shown.connect(self._on_run_shown)
        c.requests_opened.connect(self._show_requests)
        c.progress.connect(self.timeline.show_progress)
        c.progress_done.connect(self.timeline.hide_progress)

    # ================================================================== frames
    def _on_frame(self, t: float) -> None:
        # a step's redraws are spread over its first frames (each lane, costs, text), one view per
        # frame, so no frame paints everything; while a lane redraws, the others' overlays wait a
        # frame; the last frame (t = 1) flushes whatever is left
        panels = self.lanes.shown()
        self._stagger = 0 if t <= 0.0 else self._stagger + 1
        stages = [*self.costs.stages(), self.costs.flush, self.tokens.flush]
        if t >= 1.0:
            self.flush_views()
        for i, p in enumerate(panels):
            if t >= 1.0 or self._stagger >= len(panels) or i == self._stagger:
                p.flush()
                p.set_progress(t)
        if t < 1.0 and len(panels) <= self._stagger < len(panels) + len(stages):
            stages[self._stagger - len(panels)]()

    def flush_views(self) -> None:
        for panel in self.lanes.shown():
            panel.flush()
        self.costs.flush()
        self.tokens.flush()

    def _at_rest(self, *_args) -> None:
        """Nothing is playing or animating: the readouts may give back room an earlier step needed."""
        if not self.controller.playing and not self.animator.running:
            self.lanes.refit_readouts()

    # ================================================================== reactions
    def _on_model_chosen(self, spec: str) -> None:
        if spec == OPEN_ITEM:
            spec = dialogs.ask_model(self)
            if not spec:
                self.toolbar.show_model(self.controller.model_spec or self.model_spec, self.toolbar.model_box.toolTip())
                return
        self.controller.load_model(spec, fallback=False)

    def focus_stage(self) -> None:
        """The keyboard back to the stage (the central widget), out of the toolbar's text boxes: after Enter
        in the lane or prompt box, F and Space act on the run instead of being typed into the box."""
        central = self.centralWidget()
        if central is not None:
            central.setFocus(Qt.FocusReason.OtherFocusReason)

    def _on_run_shown(self, run) -> None:
        self.flush_views()
        if not self._ready_marked:
            self._ready_marked = True
            QTimer.singleShot(0, lambda: launch_mark("ready"))  # after the run's first paint is queued
        source = run.info.get("source", "")
        what = source if str(source).endswith(".kvsim") else translate("window", "the KV cache")
        self.setWindowTitle(translate("window", "kvsim — {model} — {what}").format(model=run.model_id, what=what))
        self.toolbar.show_lanes(",".join(lane.name for lane in run.lanes))
        central = self.centralWidget()
        if central is not None and (editor(self.toolbar.prompt_box).hasFocus() or self.focusWidget() is None):
            central.setFocus()  # so Space / → / ← / Home work at once
        if not self.controller.browsing:
            n = i18n.integer(len(run.prompt_ids))
            hint = translate(
                "window", "prompt: {n} tokens · press Step (→) or Play (Space) · Back (←) · Reset (Home) · F: lanes only"
            )
            short = translate("window", "prompt: {n} tokens · → step · Space play · ← back · ? keys")
            self.statusBar().showMessage(self.toolbar.model_hint() or layout.fitting(self.statusBar(), [hint, short]).format(n=n))

    def _on_selection(self, layer: int, head: int) -> None:
        if head < 0:
            self.stage.show("heads")
            head = getattr(self, "_last_head", 0)
        else:
            self._last_head = head
        self.overview.set_layer(layer)
        self.lanes.set_selection(layer, head)

    def _on_hover(self, position: int) -> None:
        """A token hovered in the text or a row hovered in a lane: highlight it everywhere."""
        self.lanes.set_hovered(position)
        if self.tokens.hover != position:
            self.tokens.set_hover(position)

    def open_run(self, path: str) -> bool:
        """Show a saved run (the ☰ menu, recent runs, demos); remembered among the recent runs."""
        ok = self.controller.open_run(path)
        if ok:
            self.recent.add(path)
        return ok

    def _show_requests(self, runs: tuple, path: str) -> None:
        """A saved requests run opened: the Requests view shows it (its dock on the desktop, or the stage's view)."""
        self.stage.show("requests")
        dock = self.extra_docks["requests"]
        view: Any = dock.build()  # the requests dock's view (the registry builds docks by name)
        view.open_saved(runs, path)

    def save_run(self, path: str) -> bool:
        ok = self.controller.save_run(path)
        if ok:
            self.recent.add(path)
        return ok

    def _on_presenting(self, active: bool) -> None:
        self.theme_setting.suspended = active
        if not active:
            self.theme_setting.apply()  # the setting may have changed meanwhile (an OS switch)
        self.stage.set_presenting(active)  # presenter mode is always on the stage
        QTimer.singleShot(0, self.flush_views)

    def toggle_lanes_only(self) -> None:
        """Hide the costs and text docks (or bring them back): the lanes get the whole height (on the
        stage: the lanes view)."""
        if self.stage.active:
            return self.stage.show("lanes")
        show = not (self.costs_dock.isVisible() or self.text_dock.isVisible())
        for widget in (self.costs_dock, self.text_dock, self.legend):
            widget.setVisible(show)
        return None

    def show_message(self, text: str, error: bool = False) -> None:
        if error:
            self.banner.setText(f"⚠  {text}")
        self.banner.setVisible(error)
        bar = self.statusBar()
        bar.showMessage(layout.fitting(bar, layout.clauses(text)))  # whole clauses: never cut at the edge

    # ================================================================== settings, lifetime
    def default_layout(self) -> None:
        """Every dock back where a fresh window puts it (the state captured before settings were read)."""
        if self.stage.active:
            self.stage.forced = None
            self.stage.leave()
        self.restoreState(self._default_state)
        self.stage.update()

    def _restore(self) -> None:
        s = self.settings
        if s is None:
            return
        if s.value("geometry") is not None:
            self.restoreGeometry(s.value("geometry"))
        if s.value("state") is not None:
            self.restoreState(s.value("state"))
        if s.value("speed") in SPEEDS:
            self.toolbar.show_speed(s.value("speed"))

    def closeEvent(self, event) -> None:  # noqa: N802
        if self.settings is not None and not self.stage.active:  # the stage (and presenter mode) is not a dock layout
            self.settings.setValue("geometry", self.saveGeometry())
            self.settings.setValue("state", self.saveState())
            self.settings.setValue("speed", self.toolbar.speed_box.currentData())
        self.shutdown()
        super().closeEvent(event)

    def shutdown(self) -> bool:
        """Stop playing and the worker thread; False if the worker is still busy (e.g. loading)."""
        self.controller.stop_play()
        self.animator.timer.stop()
        return self.worker is None or self.worker.stop()

    def fit_docks(self) -> None:
        layout.fit_docks(self)

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        layout.fit_layout(self)
        self.stage.update()

    def showEvent(self, event) -> None:  # noqa: N802
        super().showEvent(event)
        layout.clamp_to_screen(self)
        self.stage.update()
        if not self._docks_fitted:
            self._docks_fitted = True
            if self.settings is None or self.settings.value("state") is None:
                self.fit_docks()

    def paintEvent(self, event) -> None:  # noqa: N802
        super().paintEvent(event)
        if self._first_paint is None:
            self._first_paint = time.perf_counter()
            self.first_painted.emit(self._first_paint)
            launch_mark("first-paint")
            QTimer.singleShot(0, self._boot)
