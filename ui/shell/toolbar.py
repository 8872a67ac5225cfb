"""The toolbar: model, prompt, Reset / Back / Step / Play; and its second row ``more``: speed, lanes,
layer, head, ☰ menu (beside the first when the window is wide enough, below it when not).

It only turns clicks and keys into intents (signals); it never runs anything. The controller and
the window decide what an intent does, and call back the ``show_*`` methods to reflect state.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QAction, QFont, QKeySequence, QPainter, QPalette
from PySide6.QtWidgets import (
    QComboBox,
    QLineEdit,
    QMenu,
    QSizePolicy,
    QStyle,
    QStyleOptionComboBox,
    QStyleOptionFrame,
    QStylePainter,
    QToolBar,
    QToolButton,
    QWidget,
)

from kvsim.core.words import QT_TRANSLATE_NOOP  # typed str, found by pyside6-lupdate as Qt's
from kvsim.models.config import ModelConfig
from kvsim.models.words import family_words

from .. import i18n
from ..i18n import plain_tip, translate
from .animation import SPEEDS, speed_label

DEFAULT_MODEL = "tiny"
RANDOM_PRESETS = [  # (label, spec): the label is translated where it is shown
    (
        QT_TRANSLATE_NOOP("toolbar", "random · Llama GQA (4 layers, 8 heads, 2 kv)"),
        "random:family=llama,layers=4,heads=8,kv_heads=2,dim=256,seed=0",
    ),
    (
        QT_TRANSLATE_NOOP("toolbar", "random · Llama MQA (4 layers, 8 heads, 1 kv)"),
        "random:family=llama,layers=4,heads=8,kv_heads=1,dim=256,seed=0",
    ),
    (
        QT_TRANSLATE_NOOP("toolbar", "random · Llama MHA (4 layers, 8 heads)"),
        "random:family=llama,layers=4,heads=8,kv_heads=8,dim=256,seed=0",
    ),
    (
        QT_TRANSLATE_NOOP("toolbar", "random · GPT-2 (4 layers, 4 heads, 128 dim)"),
        "random:family=gpt2,layers=4,heads=4,dim=128,seed=0",
    ),
    (
        QT_TRANSLATE_NOOP("toolbar", "random · Qwen3-Next hybrid (3 Gated DeltaNet : 1 attention, 8 layers)"),
        "random:family=qwen3_next,layers=8,heads=8,kv_heads=2,dim=256,seed=0",
    ),
    (
        QT_TRANSLATE_NOOP("toolbar", "random · Llama with cross-layer KV sharing (CLA: 2 layers a K/V)"),
        "random:family=llama,layers=4,heads=8,kv_heads=2,dim=256,cla=2,seed=0",
    ),
    (
        QT_TRANSLATE_NOOP("toolbar", "random · DeepSeek-V3.2 sparse attention (MLA, each query reads its top 16 rows)"),
        "random:family=deepseek_v32,layers=4,heads=8,dim=256,topk=16,seed=0",
    ),
]
DEFAULT_LANES = "uncached,cached"
WEIGHTS_LANES = "kv,kv@w8,kv@w4:g64"  # the weights preset: the same cache, the weights in fp32, INT8, INT4
PORTUGUESE_MODEL = "gemma3-270m"  # the fetchable model that writes Portuguese (Gemma 3 270M)
OPEN_ITEM = "__open__"
EDIT_MARGIN = 2  # px a line edit keeps beside its text (QLineEdit's horizontal margin)
KIND_ROLE = Qt.ItemDataRole.UserRole + 1  # a model item's kind in the catalog: bundled / fetched / fetchable


def model_label(name: str, kind: str) -> str:
    """A model box item: its name and kind ("tiny (bundled)"; a fetchable one says how to fetch it)."""
    if kind == "fetchable":
        return translate("toolbar", "{model} (not fetched: kvsim models get {model})").format(model=name)
    if kind == "bundled":
        return translate("toolbar", "{model} (bundled)").format(model=name)
    if kind == "fetched":
        return translate("toolbar", "{model} (fetched)").format(model=name)
    return f"{name} ({kind})"


def model_forms(text: str, spec: str) -> list[str]:
    """A model box item's text and its shorter forms, longest first: "random · Qwen3-Next hybrid (3 Gated
    DeltaNet : 1 attention, 8 layers)" → "random · Qwen3-Next hybrid" → "Qwen3-Next hybrid"; a random spec
    "random:family=mla,heads=8,…" → "random · mla"; a path → its last part; "tiny (bundled)" → "tiny"."""
    forms = [text]
    if " (" in text:
        forms.append(text.split(" (")[0])
    if " · " in forms[-1]:
        forms.append(forms[-1].split(" · ", 1)[1])
    if spec.startswith("random:"):
        family = next((part.split("=", 1)[1] for part in spec[7:].split(",") if part.startswith("family=")), "")
        forms += [f"random · {family}", family] if family else ["random"]
    elif "/" in spec:
        forms.append(Path(spec.rstrip("/")).name)
    return list(dict.fromkeys(f for f in forms if f))


class ModelBox(QComboBox):
    """The model box: its current item's whole text where it fits, else a deliberate shorter form of it
    (``model_forms``: never a word cut mid-way); the popup and the tooltip keep every item whole."""

    def shown_text(self) -> str:
        """The text painted in the closed box (what the layout audit measures)."""
        text = self.currentText()
        opt = QStyleOptionComboBox()
        self.initStyleOption(opt)
        room = self.style().subControlRect(QStyle.ComplexControl.CC_ComboBox, opt, QStyle.SubControl.SC_ComboBoxEditField, self)
        fm = self.fontMetrics()
        forms = model_forms(text, str(self.currentData() or ""))
        return next((f for f in forms if fm.horizontalAdvance(f) <= room.width()), forms[-1])

    def paintEvent(self, _event) -> None:  # noqa: N802 - Qt API
        painter = QStylePainter(self)
        opt = QStyleOptionComboBox()
        self.initStyleOption(opt)
        opt.currentText = self.shown_text()
        painter.drawComplexControl(QStyle.ComplexControl.CC_ComboBox, opt)
        painter.drawControl(QStyle.ControlElement.CE_ComboBoxLabel, opt)


class _ShortFormEdit(QLineEdit):
    """The lane chooser's line edit: while it has no focus it paints its box's ``shown_text`` (a form that fits)
    in place of its text; its text itself (what Enter runs, what one edits) stays the whole name."""

    def __init__(self, box: LanesBox) -> None:
        super().__init__(box)
        self.box = box

    def paintEvent(self, event) -> None:  # noqa: N802 - Qt API
        shown = self.box.shown_text()
        if self.hasFocus() or shown == self.text():
            super().paintEvent(event)
            return
        painter = QPainter(self)
        opt = QStyleOptionFrame()
        self.initStyleOption(opt)
        self.style().drawPrimitive(QStyle.PrimitiveElement.PE_PanelLineEdit, opt, painter, self)
        room = self.style().subElementRect(QStyle.SubElement.SE_LineEditContents, opt, self).marginsRemoved(self.textMargins())
        room.adjust(EDIT_MARGIN, 0, -EDIT_MARGIN, 0)
        painter.setPen(self.palette().color(QPalette.ColorRole.Text))
        painter.drawText(room, int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter), shown)


class LanesBox(QComboBox):
    """The lane chooser: editable (a set of specs can be typed and run with Enter); closed, it shows the current
    set's whole name where it fits, else a shorter form of it (``lanes_forms``: "+ H2O 8+8", never a name cut
    mid-way), and it is at least as wide as every set's shortest form; the popup, ☰ → Lane sets and the tooltip
    keep the whole name."""

    def __init__(self) -> None:
        super().__init__()
        self.setEditable(True)
        self.setLineEdit(_ShortFormEdit(self))
        self.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.setMinimumContentsLength(10)
        self.help = ""  # what the chooser takes (known policies), after the current set's whole name in the tooltip
        self.presets = 1  # the first items are the chooser's sets (``lane_choices``); typed sets come after
        self.currentIndexChanged.connect(lambda _i: self._tip())

    def room(self) -> int:
        """The width the closed box has for its text (its edit field, less the line edit's own margins)."""
        opt = QStyleOptionComboBox()
        self.initStyleOption(opt)
        field = self.style().subControlRect(QStyle.ComplexControl.CC_ComboBox, opt, QStyle.SubControl.SC_ComboBoxEditField, self)
        return field.width() - 2 * EDIT_MARGIN

    def forms(self) -> list[str]:
        """The current set's whole name and shorter forms; the text alone when it was typed (not a set's name)."""
        index, text = self.currentIndex(), self.currentText()
        if index < 0 or text != self.itemText(index) or not self.itemData(index):
            return [text]
        return lanes_forms(str(self.itemData(index)))

    def shown_text(self) -> str:
        """The text the closed box shows (what the layout audit measures)."""
        fm, room = self.fontMetrics(), self.room()
        forms = self.forms()
        return next((f for f in forms if fm.horizontalAdvance(f) <= room), forms[-1])

    def fit_width(self) -> None:
        """At least as wide as the widest preset's shortest form that is not a count (the chooser never cuts a
        set's name, and does not change its width from one set to the next; a typed set may read "4 lanes")."""
        fm = self.fontMetrics()
        count = translate("toolbar", "{n} lanes")
        widest = 0
        for i in range(min(self.count(), self.presets)):
            forms = lanes_forms(str(self.itemData(i)))
            named = [f for f in forms if f != count.format(n=len(_terms(str(self.itemData(i)))))] or forms
            widest = max(widest, fm.horizontalAdvance(named[-1]))
        self.setMinimumContentsLength(max(10, math.ceil((widest + 2 * EDIT_MARGIN + 2) / max(fm.horizontalAdvance("X"), 1))))

    def set_help(self, text: str) -> None:
        self.help = text
        self._tip()

    def _tip(self) -> None:
        whole = self.itemText(self.currentIndex()) if self.currentIndex() >= 0 else ""
        self.setToolTip("\n".join(t for t in (whole, self.help) if t))

    def changeEvent(self, event) -> None:  # noqa: N802 - Qt API
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            self.fit_width()


def editor(box: QComboBox) -> QLineEdit:
    """The line edit of an editable combo box (Qt gives one to every editable box)."""
    line = box.lineEdit()
    if line is None:
        raise ValueError("the combo box is not editable")
    return line


def fit_popup(box: QComboBox) -> None:
    """``box``'s list as wide as its widest item (within the screen), nothing elided: a narrow box's items
    read whole when it opens ("no cache | KV cache | sliding window:64", not "no ca…dow:64")."""
    view = box.view()
    view.setTextElideMode(Qt.TextElideMode.ElideNone)
    fm = view.fontMetrics()
    widest = max((fm.horizontalAdvance(box.itemText(i)) for i in range(box.count())), default=0)
    room = box.screen().availableGeometry().width() - 16 if box.screen() is not None else widest + 48
    view.setMinimumWidth(min(widest + 48, room))  # the item's margins and the scroll bar


def example_prompts(model: str | None = None) -> list[tuple[str, str]]:
    """(language, text) of the example prompts of ``model`` (its own in prompts.json's "models", else the
    defaults, written for the bundled model): the app's own language first (the first one is the default)."""
    data = json.loads((Path(__file__).parents[1] / "prompts.json").read_text(encoding="utf-8"))  # the app's root
    lists = data.get("models", {}).get(model, data) if model else data
    order = ("pt", "en") if i18n.is_portuguese() else ("en", "pt")
    return [(lang, text) for lang in order for text in lists.get(lang, [])]


def _lane_names() -> dict[str, str]:
    """The two plain lanes by name, in the app's language."""
    names = {"uncached": translate("toolbar", "no cache"), "none": translate("toolbar", "no cache")}
    names.update({"cached": translate("toolbar", "KV cache"), "kv": translate("toolbar", "KV cache")})
    return names


def _terms(specs: str) -> list[str]:
    return [term.strip() for term in specs.split(",") if term.strip()]


def lanes_label(specs: str) -> str:
    """A lane chooser item for ``specs``, its whole name ("uncached,cached,h2o:8:r8" → "no cache | KV cache | H2O
    8+8 (h2o:8:r8)"): the two plain lanes by name, every other lane in a few words with its spec (what one
    types); a spec with no words (a plug-in's, or before the engine's registry is loaded) as it is."""
    from ..lanes.policy_text import spec_words

    names = _lane_names()
    out = []
    for term in _terms(specs):
        words = "" if term in names else spec_words(term)
        out.append(names.get(term) or (f"{words} ({term})" if words else term))
    return " | ".join(out)


def lanes_forms(specs: str) -> list[str]:
    """A lane set's whole name and its shorter forms, longest first, for a narrow chooser: the whole name
    (``lanes_label``); its words alone ("no cache | KV cache | H2O 8+8"); the lanes added to the leading plain ones
    ("+ H2O 8+8", "+ window 16 | sinks 4+12"), or a weights set's formats ("weights FP32/INT8/INT4"); a set of
    three lanes or more, last, its count ("4 lanes": the lanes' headers name them)."""
    from ..lanes.policy_text import WEIGHTS_ALONE, fill, spec_words, weights_words

    names = _lane_names()
    terms = _terms(specs)
    words = [names.get(t) or spec_words(t) or t for t in terms]
    forms = [lanes_label(specs), " | ".join(words)]
    plain = next((i for i, t in enumerate(terms) if t not in names), len(terms))  # the leading plain lanes
    if 0 < plain < len(terms):  # what is added to them: "+ H2O 8+8", "+ janela 16 | sinks 4+12"
        forms.append("+ " + " | ".join(words[plain:]))
    bases = {t.partition("@")[0] for t in terms}
    if len(terms) > 1 and len(bases) == 1 and any("@" in t for t in terms):  # one cache, its weights in each format
        formats = [weights_words(t.partition("@")[2]).split(" (")[0] or "FP32" for t in terms]
        forms.append(fill(WEIGHTS_ALONE, {"weights": "/".join(formats)}))
    if len(terms) > 2:
        forms.append(translate("toolbar", "{n} lanes").format(n=len(terms)))
    return list(dict.fromkeys(f for f in forms if f))


def lane_choices() -> list[tuple[str, str]]:
    """(label, specs) the lane chooser offers: the default pair, swapped, and each registered
    policy beside the KV cache, with its example parameters (any spec list can also be typed).
    It reads the engine's registry, which imports torch: call it once the engine is loaded."""
    from kvsim.caches import parse_spec, policy_examples

    choices = [(lanes_label(DEFAULT_LANES), DEFAULT_LANES), (lanes_label("cached,uncached"), "cached,uncached")]
    shown = {parse_spec(spec).policy for spec in DEFAULT_LANES.split(",")}
    for example, _grammar in policy_examples():
        if parse_spec(example).policy not in shown:
            choices.append((lanes_label(f"uncached,cached,{example}"), f"uncached,cached,{example}"))
    choices.append((lanes_label(WEIGHTS_LANES), WEIGHTS_LANES))  # the model side: weights in INT8 and INT4
    return choices


class ControlsToolBar(QToolBar):
    model_chosen = Signal(str)  # a model spec, or OPEN_ITEM
    prompt_submitted = Signal()
    reset_requested = Signal()
    back_requested = Signal()
    step_requested = Signal()
    play_toggled = Signal()
    speed_chosen = Signal(str)
    lanes_chosen = Signal(str)  # comma-separated lane specs
    selection_changed = Signal(int, int)  # layer, head (-1: all heads)

    def __init__(self, parent: QWidget, prompt: str | None = None) -> None:
        super().__init__(translate("toolbar", "Controls"), parent)
        self.setObjectName("controls")
        self.setMovable(False)
        big = QFont(self.font())
        big.setPointSizeF(big.pointSizeF() * 1.1)

        self.model_box = ModelBox()
        self.model_box.setMinimumContentsLength(10)
        self.model_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.model_box.setToolTip(translate("toolbar", "model"))
        self.fill_models([])
        self.addWidget(self.model_box)

        self.prompt_box = QComboBox()
        self.prompt_box.setEditable(True)
        self.prompt_box.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.prompt_box.setMinimumContentsLength(7)  # room for the longer Portuguese buttons at 853 px (1280x720 at 1.5)
        self.prompt_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.prompt_box.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.examples_of = DEFAULT_MODEL  # the model whose example prompts the box offers
        self.fill_examples(example_prompts())
        self.prompt_box.setCurrentIndex(0)
        if prompt:
            self.prompt_box.setEditText(prompt)
        editor(self.prompt_box).setCursorPosition(0)
        self.prompt_box.setToolTip(translate("toolbar", "prompt: pick an example (English / Português) or type; Enter restarts"))
        self.addWidget(self.prompt_box)

        self.reset_action = self._action(
            translate("toolbar", "↺ Reset"),
            translate("toolbar", "restart the run with this prompt (Home)"),
            "Home",
            self.reset_requested,
        )
        self.back_action = self._action(
            translate("toolbar", "◀ Back"),
            translate("toolbar", "step back (redraw from the record) (Left)"),
            "Left",
            self.back_requested,
        )
        self.step_action = self._action(
            translate("toolbar", "Step ▶"),
            translate("toolbar", "next step (computes one if at the end) (Right)"),
            "Right",
            self.step_requested,
        )
        self.play_action = self._action(
            translate("toolbar", "▶▶ Play"),
            translate("toolbar", "play / pause (Space)"),
            "Space",
            self.play_toggled,
            checkable=True,
        )
        for a in (self.reset_action, self.back_action, self.step_action, self.play_action):
            self.widgetForAction(a).setFont(big)
        self.fix_button_widths()

        # the rarer controls live in a second toolbar: beside this one when the window is wide enough,
        # on a row of its own below it when not (the window wraps it: nothing hides behind an extension handle)
        self.more = QToolBar(translate("toolbar", "View controls"), parent)
        self.more.setObjectName("view-controls")
        self.more.setMovable(False)
        self.speed_box = QComboBox()
        for name in SPEEDS:
            self.speed_box.addItem(speed_label(name), name)
        self.speed_box.setCurrentIndex(1)
        self.speed_box.setToolTip(translate("toolbar", "animation speed"))
        self.more.addWidget(self.speed_box)

        self.more.addSeparator()
        self.lanes_box = LanesBox()
        self.lanes_box.addItem(lanes_label(DEFAULT_LANES), DEFAULT_LANES)  # the rest once the engine is loaded
        self.lanes_box.fit_width()
        self.more.addWidget(self.lanes_box)
        self.layer_box = QComboBox()
        self.layer_box.setToolTip(translate("toolbar", "layer"))
        self.layer_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.more.addWidget(self.layer_box)
        self.head_box = QComboBox()
        self.head_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.head_box.setToolTip(translate("toolbar", "query head (GQA: the K/V head it reads is shown in the titles)"))
        self.more.addWidget(self.head_box)

        self.menu = QMenu(translate("toolbar", "View"), self)
        self.view_button = QToolButton()
        self.view_button.setText("☰")
        self.view_button.setToolTip(
            translate("toolbar", "save or open a run (.kvsim); show or hide lanes and panels; the default layout; the language")
        )
        self.view_button.setMenu(self.menu)
        self.view_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.more.addWidget(self.view_button)

        self.model_box.activated.connect(lambda i: self.model_chosen.emit(str(self.model_box.itemData(i))))
        editor(self.prompt_box).returnPressed.connect(self.prompt_submitted)
        self.prompt_box.activated.connect(lambda _i: self.prompt_submitted.emit())
        self.speed_box.currentIndexChanged.connect(lambda _i: self.speed_chosen.emit(self.speed_box.currentData()))
        self.lanes_box.activated.connect(self._lanes_activated)
        editor(self.lanes_box).returnPressed.connect(self._lanes_typed)
        self.layer_box.currentIndexChanged.connect(lambda _i: self._emit_selection())
        self.head_box.currentIndexChanged.connect(lambda _i: self._emit_selection())

    def _action(self, text: str, tip: str, keys: str, signal, checkable: bool = False) -> QAction:
        a = QAction(text, self)
        a.setToolTip(tip)
        a.setShortcut(QKeySequence(keys))
        a.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        a.setCheckable(checkable)
        a.triggered.connect(lambda _checked=False: signal.emit())
        self.addAction(a)
        return a

    def button_texts(self) -> dict[QAction, tuple[str, ...]]:
        """Each step button's action and every text it shows (Play turns into Pause while playing)."""
        play = (translate("toolbar", "▶▶ Play"), translate("toolbar", "❚❚ Pause"))
        return {
            self.reset_action: (self.reset_action.text(),),
            self.back_action: (self.back_action.text(),),
            self.step_action: (self.step_action.text(),),
            self.play_action: play,
        }

    def fix_button_widths(self) -> None:
        """Each step button as wide as its widest text, fixed: Play turning into Pause (and back) never
        reflows the toolbar, so Reset stays where the pointer is."""
        for action, texts in self.button_texts().items():
            button = self.widgetForAction(action)
            if not isinstance(button, QToolButton):
                continue
            shown = action.text()
            button.setMinimumWidth(0)
            button.setMaximumWidth(16777215)
            widths = []
            for text in texts:
                button.setText(text)
                widths.append(button.sizeHint().width())
            button.setText(shown)
            button.setFixedWidth(max(widths))

    def changeEvent(self, event) -> None:  # noqa: N802 - Qt API
        super().changeEvent(event)
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange) and hasattr(self, "play_action"):
            self.fix_button_widths()  # a larger type (presenter mode, --scale) or another style's padding

    # ------------------------------------------------------------------ intents
    def _lanes_activated(self, index: int) -> None:
        value = self.lanes_box.itemData(index)
        self.lanes_chosen.emit(str(value) if value else self.lanes_box.currentText())

    def _lanes_typed(self) -> None:
        text = self.lanes_box.currentText().strip()
        index = self.lanes_box.findText(text)
        self.lanes_chosen.emit(str(self.lanes_box.itemData(index)) if index >= 0 else text)

    def _emit_selection(self) -> None:
        layer = self.layer_box.currentData()
        head = self.head_box.currentData()
        self.selection_changed.emit(max(layer or 0, 0), 0 if head is None else head)

    def step_speed(self, delta: int) -> None:
        """One speed faster (``delta`` = +1, key +) or slower (−1, key −); the box shows it and emits it."""
        box = self.speed_box
        box.setCurrentIndex(min(max(box.currentIndex() + delta, 0), box.count() - 1))

    def choose_layer(self, layer: int) -> bool:
        """Show layer ``layer`` (keys 1–9 pick layers 0–8); False when the model has no such layer."""
        index = self.layer_box.findData(layer)
        if index < 0:
            return False
        self.layer_box.setCurrentIndex(index)
        return True

    def next_lanes(self) -> None:
        """The next set of lanes in the chooser (key L), from the last back to the first."""
        box = self.lanes_box
        if box.count():
            self.choose_lanes_at((box.currentIndex() + 1) % box.count())

    def choose_lanes_at(self, index: int) -> None:
        """Run the chooser's set ``index`` (L, ☰ → Lane sets)."""
        self.lanes_box.setCurrentIndex(index)
        self._lanes_activated(index)

    def prompt_text(self) -> str:
        return self.prompt_box.currentText()

    # ------------------------------------------------------------------ reflecting state
    def fill_lanes(self) -> None:
        """Every registered policy in the lane chooser (after the engine import: the registry needs it)."""
        from ..lanes import policy_text

        current = self.lanes_box.currentData()
        self.lanes_box.blockSignals(True)
        self.lanes_box.clear()
        for label, value in lane_choices():
            self.lanes_box.addItem(label, value)
        self.lanes_box.presets = self.lanes_box.count()
        self.lanes_box.blockSignals(False)
        self.show_lanes(current or DEFAULT_LANES)
        fit_popup(self.lanes_box)
        self.lanes_box.fit_width()
        self.lanes_box.set_help(
            translate(
                "toolbar",
                "the lanes, side by side: pick a set, or type cache policies separated by commas "
                "(known: {known}; `uncached` = `none`, `cached` = `kv`) and press Enter",
            ).format(known=policy_text.known_policies())
        )

    def fill_models(self, rows: list) -> None:
        """Bundled/fetched models (listed by the worker, off the GUI thread), presets, Open…."""
        box = self.model_box
        current = box.currentData()
        box.blockSignals(True)
        box.clear()
        names = [str(r["name"]) for r in rows]
        if DEFAULT_MODEL not in names:
            box.addItem(model_label(DEFAULT_MODEL, "bundled"), DEFAULT_MODEL)
        for r in rows:
            box.addItem(model_label(str(r["name"]), str(r["kind"])), str(r["name"]))
            box.setItemData(box.count() - 1, str(r["kind"]), KIND_ROLE)
        for label, spec in RANDOM_PRESETS:
            box.addItem(translate("toolbar", label), spec)
        box.addItem(translate("toolbar", "Open checkpoint directory or .gguf…"), OPEN_ITEM)
        if current is not None and box.findData(current) < 0 and current != OPEN_ITEM:
            box.insertItem(box.count() - 1, str(current), current)
        box.setCurrentIndex(max(0, box.findData(current)) if current is not None else 0)
        box.blockSignals(False)

    def show_loaded(self, info: dict) -> str:
        """Show a loaded model in the box; returns its one-line description."""
        cfg = info["config"]
        text = translate(
            "toolbar",
            "model {model}: {family}, {layers} layers, {heads} heads / {kv_heads} kv heads, head dim {head_dim}, "
            "context {context}, {params} parameters",
        ).format(
            model=info["model_id"],
            family=cfg["family"],
            layers=cfg["n_layers"],
            heads=cfg["n_heads"],
            kv_heads=cfg["n_kv_heads"],
            head_dim=cfg["head_dim"],
            context=i18n.integer(cfg["max_seq_len"]),
            params=i18n.integer(info["params"]),
        )
        for title, explanation, values in family_words(cfg):  # a hybrid's states, CLA's shared layers
            text += "; " + translate("families", title) + ": " + translate("families", explanation).format(**values)
        self.show_model(info["model_id"], text)
        self.show_examples(info["model_id"])
        return text

    def model_hint(self) -> str:
        """For a Portuguese example prompt on a model that does not write Portuguese: which one does
        (the bundled model writes Portuguese and English: no hint on it)."""
        index = self.prompt_box.findText(self.prompt_text())
        writes_portuguese = self.model_box.currentData() in (PORTUGUESE_MODEL, DEFAULT_MODEL)
        if index < 0 or self.prompt_box.itemData(index) != "pt" or writes_portuguese:
            return ""
        index = self.model_box.findData(PORTUGUESE_MODEL)
        if index >= 0 and self.model_box.itemData(index, KIND_ROLE) != "fetchable":
            return translate("toolbar", "a Portuguese prompt: {model} writes Portuguese — pick it in the model box").format(
                model=PORTUGUESE_MODEL
            )
        return translate(
            "toolbar", "a Portuguese prompt: `kvsim models get {model}` fetches a model that writes Portuguese"
        ).format(model=PORTUGUESE_MODEL)

    def fill_examples(self, examples: list[tuple[str, str]]) -> None:
        """The prompt box's items: ``examples`` ((language, text), the default first); the text typed stays."""
        box = self.prompt_box
        text = box.currentText()
        box.blockSignals(True)
        box.clear()
        for lang, example in examples:
            box.addItem(example, lang)
            tip = translate("toolbar", "example ({language})").format(language=lang.upper())
            box.setItemData(box.count() - 1, tip, Qt.ItemDataRole.ToolTipRole)
        box.setEditText(text)
        editor(box).setCursorPosition(0)  # the prompt's start in a narrow box, not its end (another model's examples)
        box.blockSignals(False)
        fit_popup(box)

    def show_examples(self, model_id: str) -> None:
        """Offer ``model_id``'s own example prompts (an instruction for a chat model); when the prompt
        is still one of the previous model's examples, it becomes the new model's first."""
        if model_id == self.examples_of:
            return
        before = {text for _lang, text in example_prompts(self.examples_of)}
        examples = example_prompts(model_id)
        self.examples_of = model_id
        untouched = self.prompt_text() in before and self.prompt_text() not in {t for _l, t in examples}
        self.fill_examples(examples)
        if untouched and examples:
            self.prompt_box.setCurrentIndex(0)
            editor(self.prompt_box).setCursorPosition(0)

    def show_model(self, model_id: str, tooltip: str) -> None:
        idx = self.model_box.findData(model_id)
        if idx < 0:
            self.model_box.insertItem(self.model_box.count() - 1, model_id, model_id)
            idx = self.model_box.findData(model_id)
        self.model_box.setCurrentIndex(idx)
        self.model_box.setToolTip(plain_tip(tooltip))  # it may name a model's folder or a saved run's model

    def show_lanes(self, specs: str) -> None:
        index = self.lanes_box.findData(specs)
        if index < 0:
            self.lanes_box.addItem(lanes_label(specs), specs)
            index = self.lanes_box.count() - 1
            fit_popup(self.lanes_box)
        self.lanes_box.setCurrentIndex(index)
        editor(self.lanes_box).setCursorPosition(0)  # the start of the lanes, when the box is narrow

    def show_playing(self, playing: bool) -> None:
        self.play_action.setChecked(playing)
        self.play_action.setText(translate("toolbar", "❚❚ Pause") if playing else translate("toolbar", "▶▶ Play"))

    def show_speed(self, name: str) -> None:
        self.speed_box.setCurrentIndex(max(0, self.speed_box.findData(name)))

    def fill_selectors(self, cfg: ModelConfig) -> None:
        for box in (self.layer_box, self.head_box):
            box.blockSignals(True)
            box.clear()
        for i in range(cfg.n_layers):
            self.layer_box.addItem(translate("toolbar", "layer {n}").format(n=i), i)
        for h in range(cfg.n_heads):
            self.head_box.addItem(translate("toolbar", "head {n} · kv {kv}").format(n=h, kv=h // cfg.group_size), h)
        self.head_box.addItem(translate("toolbar", "all heads"), -1)
        self.layer_box.setCurrentIndex(cfg.n_layers - 1 if cfg.n_layers <= 2 else 1)
        for box in (self.layer_box, self.head_box):
            box.blockSignals(False)
        self._emit_selection()
