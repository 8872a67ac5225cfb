"""The Requests dock: several requests through one shared paged block pool, with prefix caching off
and on, side by side — the Blocks view stepping through the pool, and the numbers.

Run (or ``run_demo()``) runs a requests study (``kvsim.serving.study``, through ``job``) on the worker thread
(``host.submit``); the result comes back frozen (``RequestsRun`` snapshots) and everything here only
draws it. The step slider (← → when the dock has focus, Shift+← → from one prefill to the next) walks
the snapshots: "request 1's prefill fills its blocks → request 2's prefill hits the shared ones".
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QMargins, Qt, QTimer
from PySide6.QtGui import QCursor
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSlider,
    QTabWidget,
    QToolTip,
    QTreeWidget,
    QVBoxLayout,
    QWidget,
)

from ... import theme
from ...i18n import integer, translate
from .blocks import BlocksGrid, request_color
from .blocks_table import BlockTableView
from .form import RequestListEditor, SettingsBar
from .job import Computed, Pending, demo_lists, start, start_demo
from .split import SplitView, compute_split
from .timeline import TimelineView, fill_prefix_tree, latency_lines, move_lines, reuse_line, timeline_legend_html
from .wording import (
    NumbersPanel,
    block_text,
    free_queue_text,
    legend_html,
    legend_tooltip,
    run_summary,
    step_summary,
    tier_block_text,
)

FOLLOW = -1  # the request chooser's "the step's request"


def _hover_hint() -> str:
    return translate("views.requests", "hover a block: its tokens, hash, reference count and holders")


class RequestsView(QWidget):
    def __init__(self, host) -> None:
        super().__init__()
        self.host = host
        self.computed: Computed | None = None
        self.caching = True
        self.busy = False
        self.staged = False  # on the stage (``set_staged``)
        self._auto_tried = False
        self._land_on = 0  # the request whose prefill the slider shows after a run
        self._cancel_asked = False
        self._next: Pending | None = None  # the run's next slice, waiting to be submitted
        self._submitting = False
        self._job_schedule = ""  # the schedule of the run under way
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.setSpacing(4)

        self.bar = SettingsBar()
        self.bar.run_clicked.connect(self.run)
        lay.addWidget(self.bar)
        status_row = QHBoxLayout()
        self.progress = QProgressBar()
        self.progress.setRange(0, 0)  # busy: an indeterminate bar that keeps moving while the worker runs
        self.progress.setMaximumWidth(90)
        self.progress.setMaximumHeight(14)
        self.progress.setTextVisible(False)
        self.progress.hide()
        status_row.addWidget(self.progress)
        self.cancel_button = QPushButton(translate("views.requests", "Cancel"))
        self.cancel_button.setToolTip(translate("views.requests", "stop the requests run (nothing of it is kept)"))
        self.cancel_button.clicked.connect(self.cancel)
        self.cancel_button.hide()
        status_row.addWidget(self.cancel_button)
        self.status = QLabel(
            translate("views.requests", "Run: the request list goes through one paged pool, prefix caching off and then on")
        )
        self.status.setWordWrap(True)
        self.status.setTextFormat(Qt.TextFormat.PlainText)  # it may name a model read from a saved file
        status_row.addWidget(self.status, 1)
        lay.addLayout(status_row)

        self.tabs = QTabWidget()
        lay.addWidget(self.tabs, 1)
        outer = QScrollArea()  # on a short screen the tab scrolls rather than squeezing its rows over each other
        outer.setWidgetResizable(True)
        outer.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        outer.setWidget(self._build_blocks_tab())
        self.tabs.addTab(outer, translate("views.requests", "Blocks"))
        self.numbers = NumbersPanel()
        self.tabs.addTab(self.numbers, translate("views.requests", "Off vs on"))
        self.tabs.setTabToolTip(
            1,
            translate(
                "views.requests",
                "per request: prefill rows, hits, measured TTFT without and with prefix caching; memory of 3 allocation schemes",
            ),
        )
        self.editor = RequestListEditor()
        self.tabs.addTab(self.editor, translate("views.requests", "Request list"))
        self.tabs.setTabToolTip(
            2, translate("views.requests", "edit the requests (one prompt per line) and the system prompt they share")
        )
        self.timeline = TimelineView()
        self.timeline.scrubbed.connect(self.show_step)
        timeline_nav = QHBoxLayout()  # the timeline's own steps (← → and the app's step keys on the stage too)
        self.timeline_prev = self._button(
            timeline_nav, "◀", translate("views.requests", "one step back (←)"), lambda: self.show_step(self.step - 1)
        )
        self.timeline_step = QLabel()
        timeline_nav.addWidget(self.timeline_step)
        self.timeline_next = self._button(
            timeline_nav, "▶", translate("views.requests", "one step on (→)"), lambda: self.show_step(self.step + 1)
        )
        timeline_nav.addStretch(1)
        self.timeline_legend = QLabel(timeline_legend_html())
        self.timeline_legend.setWordWrap(True)
        self.timeline_legend.setTextFormat(Qt.TextFormat.RichText)
        self.latency = QLabel()
        self.latency.setWordWrap(True)
        self.latency.setTextFormat(Qt.TextFormat.PlainText)
        self.reuse = QLabel()  # prefix reuse, not batching: on the stage it steps aside for the view's own lines
        self.reuse.setWordWrap(True)
        self.reuse.setTextFormat(Qt.TextFormat.PlainText)
        timeline_tab = QWidget()
        timeline_lay = QVBoxLayout(timeline_tab)
        self._timeline_lay = timeline_lay  # on the stage its margins go (the lesson's band leaves it little room)
        self._timeline_margins = timeline_lay.contentsMargins()
        timeline_lay.addLayout(timeline_nav)
        timeline_lay.addWidget(self.timeline, 100)  # the room is the rows' (up to their largest), then the stretch's
        timeline_lay.addWidget(self.timeline_legend)
        timeline_lay.addWidget(self.latency)
        timeline_lay.addWidget(self.reuse)
        timeline_lay.addStretch(1)
        timeline_scroll = QScrollArea()
        timeline_scroll.setWidgetResizable(True)
        timeline_scroll.setWidget(timeline_tab)
        self._timeline_scroll = timeline_scroll
        timeline_scroll.viewport().installEventFilter(self)  # on the stage the legend yields when rows need the room
        self.tabs.addTab(timeline_scroll, translate("views.requests", "Timeline"))
        self.tabs.setTabToolTip(
            3,
            translate(
                "views.requests",
                "continuous batching: each request over the steps (waiting, prefill chunk, decode, recompute, "
                "preempted) and the pool's occupancy; the outlined column is the shown step",
            ),
        )
        self.prefix_tree = QTreeWidget()
        self.prefix_tree.setHeaderLabels(
            [
                translate("views.requests", "tokens on the edge"),
                translate("views.requests", "count"),
                translate("views.requests", "requests through it"),
            ]
        )
        self.tabs.addTab(self.prefix_tree, translate("views.requests", "Prefix tree"))
        self.tabs.setTabToolTip(
            4,
            translate(
                "views.requests",
                "a radix tree of what the requests computed (SGLang's structure): a node shared by several "
                "requests is a prefix they could all reuse, token by token, not only in whole blocks",
            ),
        )
        self.split = SplitView()
        self.split.run_button.clicked.connect(self.run_split)
        split_scroll = QScrollArea()
        split_scroll.setWidgetResizable(True)
        split_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        split_scroll.setWidget(self.split)
        self.tabs.addTab(split_scroll, translate("views.requests", "Prefill / decode"))
        self.tabs.setTabToolTip(
            5,
            translate(
                "views.requests",
                "disaggregated prefill and decode: the request list served by one pool and by two instances with their "
                "own pools; the two pools, the transfers between them, TTFT and ITL both ways",
            ),
        )
        try:
            self.editor.fill_demos(demo_lists())
        except Exception as exc:  # noqa: BLE001 - the dock still works with a typed list
            self.say(
                translate("views.requests", "the demo request lists could not be read: {error}").format(error=exc), error=True
            )

        theme.on_change(self._on_theme)
        session = getattr(host, "session", None)
        if session is not None:
            session.run_started.connect(self._auto_run)
        QTimer.singleShot(0, self._auto_run)

    def _build_blocks_tab(self) -> QWidget:
        tab = QWidget()
        lay = QVBoxLayout(tab)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.setSpacing(3)
        nav = QHBoxLayout()
        self.prev_prefill = self._button(
            nav,
            "« prefill",
            translate("views.requests", "back to the previous request's prefill (Shift+←)"),
            lambda: self.jump_prefill(-1),
        )
        self.prev_button = self._button(
            nav, "◀", translate("views.requests", "one step back (←)"), lambda: self.show_step(self.step - 1)
        )
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(0, 0)
        self.slider.setToolTip(
            translate("views.requests", "the steps of the run: each request's prefill, its decode steps, and its finish (← →)")
        )
        self.slider.valueChanged.connect(self._draw)
        nav.addWidget(self.slider, 1)
        self.next_button = self._button(
            nav, "▶", translate("views.requests", "one step on (→)"), lambda: self.show_step(self.step + 1)
        )
        self.next_prefill = self._button(
            nav,
            "prefill »",
            translate("views.requests", "on to the next request's prefill (Shift+→)"),
            lambda: self.jump_prefill(1),
        )
        self.step_label = QLabel(translate("views.requests", "step {i} / {n}").format(i="–", n="–"))
        nav.addWidget(self.step_label)
        lay.addLayout(nav)
        self.choose_row = QWidget()  # which run, whose block table: the desktop's (the stage shows the defaults)
        choose = QHBoxLayout(self.choose_row)
        choose.setContentsMargins(0, 0, 0, 0)
        self.which_run = QComboBox()
        self.which_run.addItems(
            [translate("views.requests", "prefix caching on"), translate("views.requests", "prefix caching off")]
        )
        self.which_run.setToolTip(
            translate("views.requests", "which of the two runs the blocks show: the same requests with prefix caching on or off")
        )
        self.which_run.currentIndexChanged.connect(self._choose_run)
        choose.addWidget(self.which_run)
        choose.addWidget(QLabel(translate("views.requests", "block table of:")))
        self.request_box = QComboBox()
        self.request_box.setToolTip(translate("views.requests", "whose block table is drawn below (and marked L j in the grid)"))
        self.request_box.currentIndexChanged.connect(lambda _i: self._draw())
        choose.addWidget(self.request_box, 1)
        lay.addWidget(self.choose_row)
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.summary.setMinimumHeight(self.summary.fontMetrics().lineSpacing() * 2 + 4)
        lay.addWidget(self.summary)
        self.grid = BlocksGrid()
        self.grid.hovered.connect(self._hover)
        self.grid.tier_hovered.connect(self._hover_tier)
        self.grid_scroll = QScrollArea()  # not self.scroll: that is QWidget.scroll(dx, dy)
        self.grid_scroll.setWidgetResizable(True)
        self.grid_scroll.setWidget(self.grid)
        self.grid_scroll.setMinimumHeight(150)  # two rows of blocks even on a short screen
        lay.addWidget(self.grid_scroll, 1)
        self.table = BlockTableView()
        lay.addWidget(self.table)
        self.readout = QLabel(_hover_hint())
        self.readout.setWordWrap(True)
        self.readout.setTextFormat(Qt.TextFormat.PlainText)
        self.readout.setMinimumHeight(self.readout.fontMetrics().lineSpacing() * 2 + 4)
        lay.addWidget(self.readout)
        self.legend = QLabel()
        self.legend.setWordWrap(True)
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.legend.setToolTip(legend_tooltip())
        lay.addWidget(self.legend)
        self._update_legend()
        return tab

    @staticmethod
    def _button(lay: QHBoxLayout, text: str, tip: str, slot) -> QPushButton:
        b = QPushButton(text)
        b.setToolTip(tip)
        b.setFixedWidth(b.fontMetrics().horizontalAdvance(text) + 22)
        b.clicked.connect(slot)
        lay.addWidget(b)
        return b

    PARTS = ("blocks", "numbers", "list", "timeline")  # the tabs, by the names the stage and the registry use

    def show_part(self, part: str) -> None:
        """Show one of the dock's parts (the stage shows the blocks, the off-vs-on table and the timeline as
        three views); the timeline, shown with no continuous-batching run yet, runs the demo list that way."""
        if part in self.PARTS:
            self.tabs.setCurrentIndex(self.PARTS.index(part))
        session = getattr(self.host, "session", None)
        if part == "timeline" and session is not None and session.run is not None:
            self.run_batching_demo()

    def stage_step(self, direction: int) -> bool:
        """The app's step keys (→ ←) on the stage: the timeline steps through its run (True), the other parts
        leave them to the lanes (False)."""
        if self.part != "timeline" or self.current_run() is None:
            return False
        self.show_step(self.step + direction)
        return True

    @property
    def part(self) -> str:
        return self.PARTS[max(self.tabs.currentIndex(), 0)]

    def set_staged(self, on: bool) -> None:
        """On the stage the blocks (or the off-vs-on table) get the whole view: the settings, the tabs
        (the stage's keys choose the part), the hover readout and the extra figures step aside."""
        self.staged = on
        self.bar.setVisible(not on)
        self.tabs.tabBar().setVisible(not on)
        # the grid marks L j itself: the table can step aside; the reuse line is not the timeline's
        for widget in (self.readout, self.choose_row, self.table, self.reuse):
            widget.setVisible(not on)
        self.grid.set_fit(on)
        self.grid_scroll.setMinimumHeight(60 if on else 150)
        self.numbers.set_staged(on)
        self._timeline_lay.setContentsMargins(QMargins() if on else self._timeline_margins)
        self._fit_timeline_legend()
        self._show_status()

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 - Qt
        if event.type() == QEvent.Type.Resize and watched is self._timeline_scroll.viewport():
            QTimer.singleShot(0, self._fit_timeline_legend)
        return super().eventFilter(watched, event)

    def _fit_timeline_legend(self) -> None:
        """On the stage a short view (the lesson's band below it) keeps the rows and the latency lines and lets
        the legend go to the step label's tooltip rather than scroll; anywhere with room the legend is shown."""
        legend = self.timeline_legend
        if not getattr(self, "staged", False):
            legend.setVisible(True)
            return
        room = self._timeline_scroll.viewport().height()
        legend.setVisible(True)
        needed = self._timeline_lay.totalMinimumSize().height()
        legend.setVisible(needed <= room)
        self.timeline_step.setToolTip("" if needed <= room else legend.text())  # the timeline has its own per cell

    def _show_status(self) -> None:
        on = getattr(self, "staged", False)
        self.status.setVisible(not on or self.busy or bool(self.status.styleSheet()))

    # ---------------------------------------------------------------- messages
    def say(self, text: str, error: bool = False) -> None:
        self.status.setText(text)
        self.status.setStyleSheet(f"color: {theme.ERROR};" if error else "")
        self._show_status()

    # ---------------------------------------------------------------- running
    def _auto_run(self) -> None:
        """On first show, with a model loaded and nothing run yet: the default demo."""
        session = getattr(self.host, "session", None)
        if self._auto_tried or self.computed is not None or self.busy or session is None or session.run is None:
            return
        if not self.isVisible():  # built, then hidden before the model came: wait for the next show
            return
        self._auto_tried = True
        self.run_demo(show_request=0)

    def run_demo(self, show_request: int = 1) -> bool:
        """Run the default demo list for the loaded model with the current settings (False while busy);
        when it is done the slider is on request ``show_request``'s prefill (0-based: by default the
        second request's, whose prefill hits the blocks the first one filled)."""
        settings = self.bar.settings()
        what = translate("views.requests", "the default demo list")
        return self._submit(lambda loaded: self._first_slice(loaded, start_demo(loaded, settings)), what, show_request)

    def run_batching_demo(self, tries: int = 40) -> bool:
        """The default demo list with continuous batching, shown on the Timeline (the lesson's step on it,
        the stage's view Q); nothing new when a continuous-batching run is shown or under way. While another
        run is under way, asked again when it is done (at most ``tries`` times, 0.25 s apart)."""
        self.bar.schedule.setCurrentIndex(self.bar.schedule.findData("continuous"))
        self.tabs.setCurrentIndex(self.PARTS.index("timeline"))
        if self.busy:
            if self._job_schedule == "continuous":
                return True
            if tries > 0:
                QTimer.singleShot(250, self, lambda: self.run_batching_demo(tries - 1))  # dies with the view
            return False
        if self.computed is not None and self.computed.settings.schedule == "continuous":
            return True
        return self.run_demo(show_request=0)

    def run(self) -> bool:
        """Run the list in the editor with the current settings (False while busy)."""
        given, settings = self.editor.given(), self.bar.settings()
        if not given.prompts:
            self.say(
                translate("views.requests", "the request list is empty: write one prompt per line in the 'Request list' tab"),
                error=True,
            )
            return False
        what = translate("views.requests", "{n} requests").format(n=len(given.prompts))
        return self._submit(lambda loaded: self._first_slice(loaded, start(loaded, given, settings)), what, 0)

    def run_split(self) -> bool:
        """Serve the list in the editor colocated and disaggregated (the Prefill / decode tab; False while busy)."""
        given, settings = self.editor.given(), self.bar.settings()
        if self.busy:
            return False
        if not given.prompts:
            self.say(
                translate("views.requests", "the request list is empty: write one prompt per line in the 'Request list' tab"),
                error=True,
            )
            return False
        self._cancel_asked = False
        self._set_busy(True)
        self.say(
            translate(
                "views.requests",
                "serving {n} requests colocated, then split (a second process loads the model for the decode instance)…",
            ).format(n=len(given.prompts))
        )

        def job(loaded):
            return compute_split(loaded, given.prompts, given.system, settings.block_size, settings.steps)

        if not self.host.submit(job, self._split_done, self._failed):
            self._set_busy(False)
            return False
        return True

    def _split_done(self, result) -> None:
        self._set_busy(False)
        if self._cancel_asked:
            self.say(translate("views.requests", "the requests run was cancelled: nothing of it was kept"))
            return
        self.split.show_result(result)
        self.tabs.setCurrentIndex(5)
        self.say(self.split.caption.text())

    @staticmethod
    def _first_slice(loaded, pending: Pending | None) -> Computed | Pending | None:
        return None if pending is None else pending.advance(loaded)

    def cancel(self) -> None:
        """Stop the run under way after its current slice (a fraction of a second); nothing is kept."""
        if self.busy:
            self._cancel_asked = True
            self.cancel_button.setEnabled(False)
            self.say(translate("views.requests", "cancelling…"))

    def _submit(self, job, what: str, land_on: int) -> bool:
        if self.busy:
            return False
        self._land_on = land_on
        self._job_schedule = self.bar.settings().schedule  # what the run under way does (run/run_demo read the same)
        self._cancel_asked = False
        self._set_busy(True)
        self.say(
            translate(
                "views.requests",
                "running {what} twice through one paged pool (prefix caching off, then on), timing each prefill…",
            ).format(what=what)
        )
        if not self.host.submit(job, self._done, self._failed):
            self._set_busy(False)
            return False
        return True

    def _set_busy(self, busy: bool) -> None:
        self.busy = busy
        self.bar.set_busy(busy)
        self.progress.setVisible(busy)
        self.progress.setRange(0, 0)  # indeterminate until the first slice reports
        self.cancel_button.setVisible(busy)
        self.cancel_button.setEnabled(busy)
        self._show_status()

    def _submit_next(self, pending: Pending) -> None:
        """Submit the run's next slice as its own worker job. A host that runs jobs at once calls
        ``_done`` inside ``submit``: the loop below then submits the following slice, without recursion."""
        self._next = pending
        if self._submitting:
            return
        self._submitting = True
        try:
            while self._next is not None:
                nxt, self._next = self._next, None
                if not self.host.submit(nxt.advance, self._done, self._failed):
                    self._set_busy(False)
        finally:
            self._submitting = False

    def _failed(self, message: str) -> None:
        self._set_busy(False)
        self.say(translate("views.requests", "the requests could not run: {error}").format(error=message), error=True)

    def _done(self, result: Computed | Pending | None) -> None:
        if self._cancel_asked:
            self._set_busy(False)
            self.say(translate("views.requests", "the requests run was cancelled: nothing of it was kept"))
            return
        if isinstance(result, Pending):
            self.progress.setRange(0, 1000)
            self.progress.setValue(round(1000 * result.fraction()))
            self._submit_next(result)
            return
        self._set_busy(False)
        if result is None:
            self.say(translate("views.requests", "no model is loaded yet: press Run when it is"))
            return
        self.show_result(result)

    def show_result(self, computed: Computed) -> None:
        """Draw a computed run (what Run's worker job returns)."""
        self.computed = computed
        self.editor.set_given(computed.given)
        self.bar.show_settings(computed.settings)
        on = computed.both.on
        self.request_box.blockSignals(True)
        self.request_box.clear()
        self.request_box.addItem(translate("views.requests", "the step's request"), FOLLOW)
        for r in on.requests:
            self.request_box.addItem(translate("views.requests", "request {n}").format(n=r.index + 1), r.index)
        self.request_box.blockSignals(False)
        single = bool(getattr(computed, "single", False))  # a saved file of one run (not off and on): shown as both
        self.which_run.setEnabled(not single)
        self.tabs.setTabEnabled(self.PARTS.index("numbers"), not single)
        if single:
            self.which_run.setCurrentIndex(0 if computed.both.on.prefix_caching else 1)
        self.numbers.set_computed(computed)
        self.say(run_summary(computed))
        self._update_legend()
        self.slider.blockSignals(True)
        self.slider.setRange(0, max(0, len(self.current_run().snapshots) - 1))
        self.slider.blockSignals(False)
        self._set_timeline(self.current_run())
        fill_prefix_tree(self.prefix_tree, computed)
        self.show_step(self.prefill_step(self._land_on) or 0)
        self._draw()

    # ---------------------------------------------------------------- a saved run (the app's Open)
    def open_saved(self, runs: tuple, path: str) -> bool:
        """Show the runs of a saved requests file (``kvsim.serving.saved_runs.load_runs(path)``, checked whole):
        drawn as a run of Run is, on its first request's prefill (a batched run: on the Timeline). What drawing
        needs besides the runs is computed on the worker (the loaded model's tokenizer gives the tokens' text);
        a run under way here is dropped. False when it cannot be shown (the dock says why, in one line)."""
        from .saved import saved_computed

        self._auto_tried = True  # the demo never replaces what was opened

        def failed(message: str) -> None:
            self.say(translate("views.requests", "could not show {path}: {error}").format(path=path, error=message), error=True)

        def job(loaded):
            return saved_computed(runs, path, loaded)

        if self.host.submit(job, self._show_saved, failed):
            return True
        try:  # no worker yet (the engine is starting): computed here, without token texts
            self._show_saved(job(None))
        except Exception as exc:  # noqa: BLE001 - one line in the dock, never a crash
            failed(f"{type(exc).__name__}: {exc}")
            return False
        return True

    def _show_saved(self, computed) -> None:
        if self.busy:  # a run of Run under way is dropped (its next slice is not submitted)
            self._cancel_asked = True
        self._land_on = 0
        self.show_result(computed)
        if computed.both.on.batches:
            self.tabs.setCurrentIndex(self.PARTS.index("timeline"))
        elif not self.tabs.isTabEnabled(self.tabs.currentIndex()):
            self.tabs.setCurrentIndex(self.PARTS.index("blocks"))
        self.say(translate("views.requests", "saved run: {summary}").format(summary=run_summary(computed)))

    # ---------------------------------------------------------------- steps
    @property
    def result(self):
        """The shown ``SideBySide`` (the off and on runs), or None before a run."""
        return None if self.computed is None else self.computed.both

    def current_run(self):
        return None if self.computed is None else self.computed.run(self.caching)

    @property
    def step(self) -> int:
        return self.slider.value()

    def show_step(self, i: int) -> None:
        """Move the slider to snapshot ``i`` (clamped)."""
        self.slider.setValue(max(self.slider.minimum(), min(int(i), self.slider.maximum())))

    def prefill_step(self, request: int) -> int | None:
        """The snapshot of request ``request``'s prefill (0-based index) in the shown run."""
        run = self.current_run()
        if run is None or not 0 <= request < len(run.requests):
            return None
        return run.requests[request].first_step

    def jump_prefill(self, direction: int) -> None:
        run = self.current_run()
        if run is None:
            return
        starts = sorted(r.first_step for r in run.requests)
        later = [s for s in starts if (s > self.step if direction > 0 else s < self.step)]
        if later:
            self.show_step(later[0] if direction > 0 else later[-1])

    def _choose_run(self, index: int) -> None:
        self.caching = index == 0
        run = self.current_run()
        if run is not None:
            self.slider.setRange(0, max(0, len(run.snapshots) - 1))
            self._set_timeline(run)
        self._update_legend()
        self._draw()

    def _set_timeline(self, run) -> None:
        self.timeline.set_run(run)
        self.timeline_legend.setText(timeline_legend_html(bool(self.timeline.marks)))
        lines = latency_lines(run) if run.batches else []
        lines += move_lines(run)
        self.latency.setText("\n".join(lines))
        reuse = self.computed.reuse if self.computed is not None else None
        self.reuse.setText(reuse_line(reuse) if reuse is not None else "")

    def selected_request(self) -> int | None:
        run = self.current_run()
        if run is None or not run.snapshots:
            return None
        choice = self.request_box.currentData()
        return run.snapshots[self.step].request if choice in (None, FOLLOW) else int(choice)

    def _draw(self, *_args) -> None:
        run = self.current_run()
        if run is None or self.computed is None or not run.snapshots:  # a run is the computed's: both or neither
            return
        i = self.step
        snap = run.snapshots[i]
        selected = self.selected_request()
        owners = self.computed.last_owner.get(self.caching)
        self.grid.set_snapshot(snap, owners[i] if owners is not None and i < len(owners) else None, selected, run.moves_at(i))
        self.table.set_table(snap.table(selected) if selected is not None else None, run.block_size)
        self.step_label.setText(
            translate("views.requests", "step {i} / {n}").format(i=integer(i + 1), n=integer(len(run.snapshots)))
        )
        self.timeline_step.setText(
            translate("views.requests", "step {s} ({i} / {n})").format(
                s=integer(self.timeline.step_number(i)), i=integer(i + 1), n=integer(len(run.snapshots))
            )
        )
        self.summary.setText(step_summary(self.computed, self.caching, i))
        self.summary.setToolTip(free_queue_text(snap))
        self.timeline.set_step(i)
        self._hover(self.grid.hover_block)

    def _hover(self, block: int) -> None:
        run = self.current_run()
        if run is None or self.computed is None or block < 0:
            self.readout.setText(_hover_hint())
            return
        text = block_text(run.snapshots[self.step], block, self.computed.token_text)
        self.readout.setText(text)
        if self.grid.underMouse():
            QToolTip.showText(QCursor.pos(), text, self.grid)

    def _hover_tier(self, tier: str, place: int) -> None:
        run = self.current_run()
        if run is None or self.computed is None:
            return
        text = tier_block_text(run.snapshots[self.step], tier, place, self.computed.token_text)
        self.readout.setText(text)
        if self.grid.underMouse():
            QToolTip.showText(QCursor.pos(), text, self.grid)

    def showEvent(self, event) -> None:  # noqa: N802 - Qt
        super().showEvent(event)
        QTimer.singleShot(0, self._auto_run)

    # ---------------------------------------------------------------- keys and theme
    def keyPressEvent(self, event) -> None:  # noqa: N802 - Qt
        key, shift = event.key(), bool(event.modifiers() & Qt.KeyboardModifier.ShiftModifier)
        if key in (Qt.Key.Key_Left, Qt.Key.Key_Right):
            direction = 1 if key == Qt.Key.Key_Right else -1
            self.jump_prefill(direction) if shift else self.show_step(self.step + direction)
        elif key == Qt.Key.Key_Home:
            self.show_step(0)
        elif key == Qt.Key.Key_End:
            self.show_step(self.slider.maximum())
        else:
            super().keyPressEvent(event)
            return
        event.accept()

    def _update_legend(self) -> None:
        n = len(self.computed.both.on.requests) if self.computed is not None else 0
        run = self.current_run()
        tiers = run is not None and bool(run.snapshots) and bool(run.snapshots[0].tiers)
        self.legend.setText(legend_html([request_color(i) for i in range(n)], tiers))

    def _on_theme(self, _name: str) -> None:
        self._update_legend()
        self.timeline_legend.setText(timeline_legend_html(bool(self.timeline.marks)))
        self._draw()
