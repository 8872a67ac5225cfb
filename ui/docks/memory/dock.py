"""The memory dock: the KV cache bill.

Top: a model (the one on screen, the bundled ``tiny``, or any of ``kvsim memory --list``'s presets)
and the seed formula 2·L·H_kv·d·n·b·bytes with every term editable (``memory_form``), a warning when
the tokens pass the model's own context. Middle: the run on screen, each lane's real cache bytes
beside the formula's value for its settings (``memory_live``). Bottom: KV bytes against context for
several models with weights and GPU memories (``memory_plot``).

While "follow the run" is on and the model on screen is chosen, the terms are the run's: its shape,
its dtype's bits, and n = the tokens held at the cursor's step. Editing a term turns following off.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QBoxLayout,
    QCheckBox,
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QMenu,
    QScrollArea,
    QSpinBox,
    QStyle,
    QStyleOptionComboBox,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from kvsim.costs.memory import DTYPE_BITS, MemoryInputError, human_bytes, weight_bytes
from kvsim.costs.presets import LATENT_PRESETS, PRESETS, Preset, get_preset, preset_from_model_config

from ... import theme
from ...i18n import integer, local, num, translate
from .form import BITS, BITS_TEXT, FormulaForm, Terms
from .live import LiveBill
from .plot import MemoryPlot
from .words import context_warning

ON_SCREEN = "__on_screen__"
DEFAULT_OTHERS = ("llama-2-7b", "llama-3.1-8b", "mistral-7b")
DEFAULT_FOCUS = "llama-3.1-70b"

NBSP = "\u00a0"  # a figure and its unit never split by a wrap


def _combo() -> QComboBox:
    """A combo box whose width does not follow its longest item (the dock may be narrow)."""
    box = QComboBox()
    box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
    box.setMinimumContentsLength(10)
    return box


class MemoryDock(QWidget):
    def __init__(self, host) -> None:
        super().__init__()
        self.host = host
        self.session = host.session
        self.tabs = QTabWidget()
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(self.tabs)
        body = QWidget()
        self.setMinimumWidth(360)

        self.model = _combo()
        self.model.setToolTip(
            translate(
                "views.memory_dock",
                "Whose shape fills the formula: the model on screen, the bundled tiny model, or a real model's preset.",
            )
        )
        self.model.addItem(translate("views.memory_dock", "the model on screen"), ON_SCREEN)
        self.model.addItem(translate("views.memory_dock", "tiny (bundled)"), "tiny")
        for name, p in {**PRESETS, **LATENT_PRESETS}.items():  # DeepSeek-V3: a latent cache (MLA)
            self.model.addItem(f"{name}  ({num(p.n_params / 1e9, 2)}B, ctx {integer(p.context)})", name)
        self.follow = QCheckBox(translate("views.memory_dock", "follow the run"))
        self.follow.setChecked(True)
        self.follow.setToolTip(
            translate(
                "views.memory_dock", "Keep the terms equal to the run on screen: its shape, its bits, and n at the cursor's step."
            )
        )
        top = QHBoxLayout()
        top.addWidget(QLabel(translate("views.memory_dock", "model")))
        top.addWidget(self.model, 1)
        top.addWidget(self.follow)

        self.form = FormulaForm()
        self.weights = QLabel()
        self.weights.setWordWrap(True)
        self.weights.setToolTip(
            translate("views.memory_dock", "The model's weights at each precision: parameters × bytes per parameter.")
        )
        self.warning = QLabel()
        self.warning.setWordWrap(True)
        self.warning.setToolTip(
            translate(
                "views.memory_dock", "A model is trained for a maximum context; past it, its outputs are not to be trusted."
            )
        )
        self.warning.hide()
        self.live = LiveBill(self.session)

        self.focus = _combo()
        self.focus.setToolTip(
            translate("views.memory_dock", "The plot's model: its weights and its MHA / GQA / MQA curves are drawn.")
        )
        for name in (*PRESETS, *LATENT_PRESETS):
            self.focus.addItem(name, name)
        self.focus.addItem("tiny", "tiny")
        self.others_button = QToolButton()
        self.others_button.setText(translate("views.memory_dock", "compare with ▾"))
        self.others_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.others_button.setToolTip(translate("views.memory_dock", "Other models drawn beside it."))
        menu = QMenu(self.others_button)
        self.others: dict[str, QAction] = {}
        for name in PRESETS:
            action = menu.addAction(name)
            action.setCheckable(True)
            action.toggled.connect(self._redraw_plot)
            self.others[name] = action
        self.others_button.setMenu(menu)
        self.plot_bits = QComboBox()
        for b in BITS:
            self.plot_bits.addItem(BITS_TEXT[b], b)
        self.plot_bits.setCurrentIndex(self.plot_bits.findData(16))
        self.plot_bits.setToolTip(
            translate(
                "views.memory_dock",
                "Bits per cached value on the plot: 16 for FP16/BF16 models (the usual), 8 / 4 / 2 quantized.",
            )
        )
        self.plot_batch = QSpinBox()
        self.plot_batch.setRange(1, 4096)
        self.plot_batch.setKeyboardTracking(False)
        self.plot_batch.setToolTip(
            translate(
                "views.memory_dock", "Sequences served at once on the plot: each has its own cache, so the curves scale with it."
            )
        )
        plot_row = QHBoxLayout()
        plot_row.addWidget(QLabel(translate("views.memory_dock", "model")))
        plot_row.addWidget(self.focus, 1)
        plot_row.addWidget(self.others_button)
        plot_row2 = QHBoxLayout()
        plot_row2.addWidget(QLabel(translate("views.memory_dock", "KV bits")))
        plot_row2.addWidget(self.plot_bits)
        plot_row2.addWidget(QLabel(translate("views.memory_dock", "batch")))
        plot_row2.addWidget(self.plot_batch)
        plot_row2.addStretch(1)
        self.plot = MemoryPlot()

        lay = QBoxLayout(QBoxLayout.Direction.TopToBottom, body)  # side by side on a wide, short view (the stage)
        lay.setContentsMargins(8, 6, 8, 6)
        self.bill_layout = lay
        terms = QVBoxLayout()
        terms.addLayout(top)
        terms.addWidget(self.form)
        terms.addWidget(self.warning)
        terms.addStretch(1)
        lay.addLayout(terms, 3)
        run = QWidget()
        rlay = QVBoxLayout(run)
        rlay.setContentsMargins(0, 0, 0, 0)
        rlay.addWidget(self.live)
        rlay.addWidget(self.weights)
        rlay.addStretch(1)
        self.run_side = QScrollArea()  # side by side: the run's lines scroll on their own, the form never
        self.run_side.setWidgetResizable(True)
        self.run_side.setFrameShape(QFrame.Shape.NoFrame)
        self.run_side.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.run_side.setProperty("scrolls", True)  # a run of many lanes has many lines: scrolling them is by design
        self.run_side.setWidget(run)
        lay.addWidget(self.run_side, 2)
        bill = QScrollArea()
        bill.setWidgetResizable(True)
        bill.setFrameShape(QFrame.Shape.NoFrame)
        bill.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        bill.setWidget(body)
        growth = QWidget()
        glay = QVBoxLayout(growth)
        glay.setContentsMargins(8, 6, 8, 6)
        self.controls_box = QBoxLayout(QBoxLayout.Direction.TopToBottom)  # one row on a wide, short view (the stage)
        self.controls_box.addLayout(plot_row, 1)
        self.controls_box.addLayout(plot_row2)
        glay.addLayout(self.controls_box)
        glay.addWidget(self.plot, 1)
        growth_scroll = QScrollArea()  # a short dock scrolls rather than squeezing the plot under its legend
        growth_scroll.setWidgetResizable(True)
        growth_scroll.setFrameShape(QFrame.Shape.NoFrame)
        growth_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        growth_scroll.setWidget(growth)
        self.scrolls = (bill, growth_scroll)  # side by side (the stage), each holds its page to the height shown
        for area in self.scrolls:
            area.viewport().installEventFilter(self)
        self.tabs.addTab(bill, translate("views.memory_dock", "The bill: formula and run"))
        self.tabs.addTab(growth_scroll, translate("views.memory_dock", "Context 1k → 1M"))
        self.tabs.setTabToolTip(
            0, translate("views.memory_dock", "The formula with every term editable, checked against the run's real caches.")
        )
        self.tabs.setTabToolTip(
            1,
            translate(
                "views.memory_dock", "KV bytes as the context grows, for real models, beside their weights and GPU memories."
            ),
        )

        self._restore()
        self.model.currentIndexChanged.connect(self._on_model)
        self.model.currentIndexChanged.connect(self._fit_boxes)
        self.focus.currentIndexChanged.connect(self._fit_boxes)
        self.follow.toggled.connect(self._on_follow)
        self.form.edited.connect(lambda: self.follow.setChecked(False))
        self.form.changed.connect(self._on_terms)
        self.focus.currentIndexChanged.connect(self._redraw_plot)
        self.plot_bits.currentIndexChanged.connect(self._redraw_plot)
        self.plot_batch.valueChanged.connect(self._redraw_plot)
        self.session.run_started.connect(self._on_run)
        self.session.step_added.connect(self._on_step)
        self.session.cursor_moved.connect(self._on_step)
        theme.on_change(self._on_theme)
        self._on_model()

    PARTS = ("bill", "growth")  # the tabs, by the names the stage and the registry use

    def show_part(self, part: str) -> None:
        if part in self.PARTS:
            self.tabs.setCurrentIndex(self.PARTS.index(part))

    @property
    def part(self) -> str:
        return self.PARTS[max(self.tabs.currentIndex(), 0)]

    def set_staged(self, on: bool) -> None:
        """On the stage the stage's keys choose the tab (M: the bill, G: the growth plot): no tab bar."""
        self.tabs.tabBar().setVisible(not on)
        self._staged = on
        self._fit_boxes()

    def _fit_boxes(self) -> None:
        """On the stage the chosen model's name shows whole: a combo box as wide as its current text (not its
        longest item: "llama-3.1-70b (70.55B, ctx 131,072)" would take the room of the run's column)."""
        on = getattr(self, "_staged", False)
        for box in (self.model, self.focus):
            least = 0
            if on:
                opt = QStyleOptionComboBox()
                box.initStyleOption(opt)
                text = QSize(box.fontMetrics().horizontalAdvance(box.currentText()) + 6, box.fontMetrics().height())
                least = box.style().sizeFromContents(QStyle.ContentsType.CT_ComboBox, opt, text, box).width()
            if box.minimumWidth() != least:
                box.setMinimumWidth(least)

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        wide = self.width() >= 1.5 * self.height() and self.width() >= 700
        for lay in (self.bill_layout, self.controls_box, self.plot.box):
            if wide != (lay.direction() == QBoxLayout.Direction.LeftToRight):
                lay.setDirection(QBoxLayout.Direction.LeftToRight if wide else QBoxLayout.Direction.TopToBottom)
        self.plot.plot.setMinimumHeight(150 if wide else 240)
        self.plot.box.setStretch(0, 3 if wide else 1)
        self.plot.box.setStretch(1, 2 if wide else 0)
        self._hold_pages()
        self._fit_run_side()

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 - Qt API
        if event.type() == QEvent.Type.Resize and any(watched is a.viewport() for a in self.scrolls):
            self._hold_pages()
        return False

    def _hold_pages(self) -> None:
        """Side by side, a page is as tall as its view and no taller: it never scrolls (what does not fit
        is squeezed, and the layout tests see it); stacked, it scrolls as before."""
        wide = self.bill_layout.direction() == QBoxLayout.Direction.LeftToRight
        for area in self.scrolls:
            height = area.viewport().height() if wide else 16_777_215  # QWIDGETSIZE_MAX
            page = area.widget()
            if page is not None and page.maximumHeight() != height:  # (every area holds its page)
                page.setMaximumHeight(height)

    def _fit_run_side(self) -> None:
        """Stacked: the run's lines take their whole height (the bill scrolls as one); side by side: the room there
        is, and at least the width of the run's table (the form gives way; the lines above and below it wrap):
        a scroll area asks for no width of its own, and its page, wider than its view, was cut on the right."""
        wide = self.bill_layout.direction() == QBoxLayout.Direction.LeftToRight
        page = self.run_side.widget()
        if page is None:
            return
        self.run_side.setMinimumHeight(0 if wide else page.sizeHint().height())
        least = 0
        if wide:
            bar = self.run_side.verticalScrollBar()
            least = page.minimumSizeHint().width() + (bar.sizeHint().width() if bar.maximum() > 0 else 0)
        if self.run_side.minimumWidth() != least:
            self.run_side.setMinimumWidth(least)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt API: the width the dock opens with
        window = self.host.window
        width = window.width() if window is not None else 1280
        return QSize(max(400, min(620, int(width * 0.32))), 600)

    # ------------------------------------------------------------------ choosing a model
    def preset(self) -> Preset | None:
        """The chosen model's preset (the model on screen's shape; None before any run)."""
        key = self.model.currentData()
        if key == ON_SCREEN:
            cfg = self.session.config
            return preset_from_model_config(cfg, self.session.run.model_id) if cfg is not None else None
        return get_preset(key)

    def show_preset(self, name: str, context: int, tab: int = 0) -> None:
        """A real model's shape at ``context`` tokens in the formula, and tab ``tab`` (1: the plot) in front."""
        index = self.model.findData(name)
        if index < 0:
            raise ValueError(translate("views.memory_dock", "no preset named {name}").format(name=repr(name)))
        self.model.setCurrentIndex(index)  # the terms come from the preset, the plot focuses on it
        self.form.set_tokens(context)
        self.tabs.setCurrentIndex(tab)

    def _on_model(self, *_: object) -> None:
        key = self.model.currentData()
        if key == ON_SCREEN:
            self.follow.setChecked(True)
            self._from_run()
            return
        self.follow.setChecked(False)
        p = get_preset(key)
        self.form.set_terms(
            Terms(p.layers, p.kv_heads, p.head_dim, p.context, 1, 16, None, p.layer_windows, p.latent), heads=p.heads
        )
        if key in PRESETS or key in LATENT_PRESETS or key == "tiny":
            self.focus.setCurrentIndex(max(0, self.focus.findData(key)))

    def _on_follow(self, on: bool) -> None:
        if on:
            if self.model.currentData() != ON_SCREEN:
                self.model.setCurrentIndex(0)  # calls _from_run
            else:
                self._from_run()

    def _from_run(self) -> None:
        cfg = self.session.config
        if not self.follow.isChecked() or self.model.currentData() != ON_SCREEN:
            return
        if cfg is None:  # no run yet: the bundled model's shape until one starts
            p = get_preset("tiny")
            self.form.set_terms(Terms(p.layers, p.kv_heads, p.head_dim, 0, 1, 32, None, p.layer_windows), heads=p.heads)
            return
        bits = DTYPE_BITS.get(str(self.session.run.meta.get("dtype", "float32")), 32)
        p = preset_from_model_config(cfg)
        n = self.session.n_rows()
        self.form.set_terms(
            Terms(cfg.n_layers, cfg.n_kv_heads, cfg.head_dim, n, 1, bits, None, p.layer_windows, p.latent), heads=cfg.n_heads
        )

    # ------------------------------------------------------------------ the session
    def _on_run(self) -> None:
        self._from_run()
        self._on_terms()  # the lanes' own weight bytes belong to the new run
        self.live.refresh()
        self._fit_run_side()

    def _on_step(self, *_: object) -> None:
        if not self.isVisible():
            return
        if self.follow.isChecked() and self.model.currentData() == ON_SCREEN:
            self.form.set_tokens(self.session.n_rows())
        self.live.refresh()
        self._fit_run_side()

    def showEvent(self, event) -> None:  # noqa: N802 - Qt API
        super().showEvent(event)
        self._from_run()
        self.live.refresh()
        self._fit_run_side()

    # ------------------------------------------------------------------ the terms changed
    def _on_terms(self) -> None:
        terms, p = self.form.terms, None
        try:
            p = self.preset()
        except MemoryInputError as exc:
            self.host.say(str(exc), True)
        if p is not None:
            sizes = " · ".join(  # a format, its figure and its unit on one line ("INT8 475,78 KB", never "…475,78 / KB")
                f"{k.upper()} {local(human_bytes(weight_bytes(p.n_params, k)))}".replace(" ", NBSP)
                for k in ("fp32", "fp16", "int8", "int4", "int2")
            )
            weights = translate("views.memory_dock", "weights of {n} parameters: {sizes}")
            self.weights.setText(weights.format(n=integer(p.n_params), sizes=sizes) + self._live_weights())
        warning = context_warning(p, terms.tokens) if p is not None and terms is not None else None
        self.warning.setVisible(bool(warning))
        if warning:
            self.warning.setText(f"<span style='color:{theme.ERROR}'>⚠ {warning}</span>")
        self._redraw_plot()

    def _live_weights(self) -> str:
        """For the model on screen: the bytes each lane's weights really occupy (a quantized lane's codes
        and scales, ``weight_bytes`` in the run's metadata), beside the formula's precisions above."""
        run = self.session.run
        if run is None or self.model.currentData() != ON_SCREEN:
            return ""
        lanes = [lane for lane in run.meta.get("lanes", []) if isinstance(lane.get("weight_bytes"), int)]
        if not any(lane.get("weights") for lane in lanes):  # every lane holds the weights as loaded: said above
            return ""
        heads = {  # which way a quantized lane holds its LM head (kv@w8: Q8_0 blocks; kv@w4:g64 on a model whose
            # width splits into 256s: Q6_K; kv@w8:fphead: as loaded)
            "Q8_0": translate("views.memory_dock", "LM head in Q8_0"),
            "Q6_K": translate("views.memory_dock", "LM head in Q6_K"),
            "as loaded": translate("views.memory_dock", "LM head as loaded"),
        }
        sizes = " · ".join(
            f"{lane['name']}{NBSP}{local(human_bytes(lane['weight_bytes'])).replace(' ', NBSP)}"
            + (f" ({heads.get(lane['weight_head'], lane['weight_head'])})" if lane.get("weight_head") else "")
            for lane in lanes
        )
        return "\n" + translate("views.memory_dock", "this run's lanes hold: {sizes}").format(sizes=sizes)

    def _redraw_plot(self, *_: object) -> None:
        terms = self.form.terms
        if terms is None:
            return
        try:
            focus = get_preset(self.focus.currentData() or DEFAULT_FOCUS)
        except MemoryInputError as exc:
            self.host.say(str(exc), True)
            return
        others = [PRESETS[name] for name, action in self.others.items() if action.isChecked()]
        self.plot.draw(focus, others, int(self.plot_bits.currentData()), self.plot_batch.value(), terms.tokens)
        self._save()

    def _on_theme(self, _name: str) -> None:
        try:
            self.plot.plot.setBackground(theme.BG)
            self._on_terms()
            self.live.refresh()
        except RuntimeError:  # this dock was deleted with its window
            pass

    # ------------------------------------------------------------------ settings
    def _restore(self) -> None:
        s = self.host.settings
        focus = str(s.value("memory/plot_model", DEFAULT_FOCUS)) if s is not None else DEFAULT_FOCUS
        others = s.value("memory/compare", list(DEFAULT_OTHERS)) if s is not None else list(DEFAULT_OTHERS)
        others = [others] if isinstance(others, str) else list(others or [])
        self.focus.setCurrentIndex(max(0, self.focus.findData(focus)))
        for name, action in self.others.items():
            action.blockSignals(True)
            action.setChecked(name in others)
            action.blockSignals(False)

    def _save(self) -> None:
        s = self.host.settings
        if s is not None:
            s.setValue("memory/plot_model", self.focus.currentData())
            s.setValue("memory/compare", [name for name, action in self.others.items() if action.isChecked()])
