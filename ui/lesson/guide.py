"""The guided lesson: 15 steps that walk the articles' argument on the live model.

Each step (``resources/lesson/lesson.json``, written in English and Portuguese) names the state it
needs — model, lanes, prompt, the step to show, a dock to open, something to call on that dock,
what to highlight — and one short paragraph. The driver reaches that state a little at a time,
on a timer (load the model, restart the run, compute or browse to the step), so the window never
freezes and the lesson can be left, or moved on, at any moment.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from importlib import resources
from typing import Any

from PySide6.QtCore import QObject, QRect, Qt, QTimer
from PySide6.QtGui import QColor, QPainter, QPen
from PySide6.QtWidgets import QDockWidget, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from ..i18n import translate

LANGUAGES = ("en", "pt")
STEP_TIMEOUT_S = 90.0  # a state not reached by then is reported, not waited for


class LessonError(ValueError):
    """The lesson file is missing or malformed."""


@dataclass(frozen=True)
class LessonStep:
    id: str
    title: dict[str, str]
    text: dict[str, str]
    model: str
    lanes: str
    prompt: dict[str, str]
    step: int
    dock: str | None = None
    highlight: str | None = None
    call: dict[str, Any] | None = None


def load_lesson() -> list[LessonStep]:
    """The lesson's steps, checked: every step has both languages and a reachable state."""
    try:
        raw = json.loads(resources.files("kvsim.resources").joinpath("lesson/lesson.json").read_text(encoding="utf-8"))
        steps = []
        for item in raw["steps"]:
            state = item["state"]
            step = LessonStep(
                id=item["id"],
                title=item["title"],
                text=item["text"],
                model=state["model"],
                lanes=state["lanes"],
                prompt=state["prompt"],
                step=int(state.get("step", 0)),
                dock=state.get("dock"),
                highlight=state.get("highlight"),
                call=state.get("call"),
            )
            for field in (step.title, step.text, step.prompt):
                if any(not field.get(lang, "").strip() for lang in LANGUAGES):
                    raise LessonError(f"lesson step {step.id!r} lacks a language ({', '.join(LANGUAGES)})")
            steps.append(step)
    except (OSError, KeyError, TypeError, ValueError) as exc:
        raise LessonError(f"the lesson cannot be read: {exc}") from None
    if not steps:
        raise LessonError("the lesson has no steps")
    return steps


def system_language() -> str:
    """The lesson's language: the app's (its translators follow --lang, the setting or the system)."""
    from .. import i18n

    return "pt" if i18n.is_portuguese() else "en"


class Highlight(QWidget):
    """A bright frame drawn over one widget of the window (it lets the mouse through)."""

    def __init__(self, window: QWidget) -> None:
        super().__init__(window)
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.setAttribute(Qt.WidgetAttribute.WA_NoSystemBackground)
        self.target: QWidget | None = None
        self._follow = QTimer(self)
        self._follow.setInterval(250)  # docks move and resize: keep the frame on its target
        self._follow.timeout.connect(self._place)
        self.hide()

    def show_on(self, target: QWidget | None) -> None:
        self.target = target
        if target is None:
            self._follow.stop()
            self.hide()
            return
        self._place()
        self._follow.start()

    def _place(self) -> None:
        t = self.target
        if t is None or not t.isVisible():
            self.hide()
            return
        top_left = t.mapTo(self.parentWidget(), t.rect().topLeft())
        self.setGeometry(QRect(top_left, t.size()).adjusted(-3, -3, 3, 3))
        self.raise_()
        self.show()

    def paintEvent(self, _event) -> None:  # noqa: N802
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        p.setPen(QPen(QColor("#f0c419"), 4))
        p.drawRoundedRect(self.rect().adjusted(2, 2, -2, -2), 6, 6)


class LessonPanel(QWidget):
    """Title, paragraph, where we are, and Back / Next."""

    def __init__(self, lesson: Lesson) -> None:
        super().__init__()
        self.lesson = lesson
        lay = QHBoxLayout(self)
        lay.setContentsMargins(10, 6, 10, 6)
        words = QVBoxLayout()
        self.title = QLabel()
        self.title.setObjectName("lessonTitle")
        self.title.setStyleSheet("font-size: 125%; font-weight: 700;")
        self.text = QLabel()
        self.text.setWordWrap(True)
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.status = QLabel()
        self.status.setObjectName("lessonStatus")
        for w in (self.title, self.text, self.status):
            words.addWidget(w)
        lay.addLayout(words, 1)
        buttons = QVBoxLayout()
        self.counter = QLabel()
        self.counter.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.back = QPushButton(translate("lesson", "◀ Back"))
        self.back.setToolTip(translate("lesson", "previous lesson step (Page Up)"))
        self.next = QPushButton(translate("lesson", "Next ▶"))
        self.next.setToolTip(translate("lesson", "next lesson step (Page Down)"))
        self.back.clicked.connect(lesson.back)
        self.next.clicked.connect(lesson.next)
        for w in (self.counter, self.back, self.next):
            buttons.addWidget(w)
        lay.addLayout(buttons)

    def fit_text(self) -> None:
        """Keep the whole paragraph visible: the dock grows to the wrapped text's height at this width
        (a word-wrapped label alone does not ask for it once the dock is laid out)."""
        height = self.text.heightForWidth(self.text.width()) if self.text.width() > 0 else -1
        if height > 0:
            self.text.setMinimumHeight(height)

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        self.fit_text()


class Lesson(QObject):
    """Drives the window from one lesson step to the next."""

    def __init__(self, window, lang: str | None = None) -> None:
        super().__init__(window)
        self.window = window
        self.steps = load_lesson()
        self.lang = lang if lang in LANGUAGES else system_language()
        self.index = -1
        self.done = False  # the current step's state is reached
        self.problem = ""
        self.panel = LessonPanel(self)
        self.highlight = Highlight(window)
        self._timer = QTimer(self)
        self._timer.setInterval(40)
        self._timer.timeout.connect(self._tick)
        self._asked: set[str] = set()
        self._started = 0.0

    # ------------------------------------------------------------------ navigation
    def start(self) -> None:
        self.go(max(self.index, 0))

    def next(self) -> None:
        self.go(min(self.index + 1, len(self.steps) - 1))

    def back(self) -> None:
        self.go(max(self.index - 1, 0))

    def set_language(self, lang: str) -> None:
        if lang in LANGUAGES and lang != self.lang:
            self.lang = lang
            if self.index >= 0:
                self.go(self.index)

    def go(self, index: int) -> None:
        self.index = index
        step = self.steps[index]
        self.done, self.problem = False, ""
        self._asked.clear()
        self._started = time.monotonic()
        p = self.panel
        p.title.setText(step.title[self.lang])
        p.text.setText(step.text[self.lang])
        p.fit_text()
        p.counter.setText(f"{index + 1} / {len(self.steps)}")
        p.back.setEnabled(index > 0)
        p.next.setEnabled(index < len(self.steps) - 1)
        self._say(translate("lesson", "getting there …"))
        self.highlight.show_on(None)
        self._timer.start()

    def stop(self) -> None:
        self._timer.stop()
        self.highlight.show_on(None)

    # ------------------------------------------------------------------ reaching a step's state
    def _tick(self) -> None:
        step = self.steps[self.index]
        w = self.window
        c, s = w.controller, w.session
        if time.monotonic() - self._started > STEP_TIMEOUT_S:
            return self._fail(translate("lesson", "this step's state was not reached in time"))
        if c.worker is None or c.busy or (w.animator.running and s.cursor >= step.step):
            return None
        if (c.loaded_info or {}).get("model_id") != step.model:
            if c.load_failed and "model" in self._asked:
                how = f"kvsim models get {step.model}"
                needs = translate("lesson", "this step needs the model {model}: fetch it with `{command}`")
                return self._fail(needs.format(model=step.model, command=how))
            if "model" not in self._asked:
                self._asked.add("model")
                c.load_model(step.model)
            return None
        prompt = step.prompt[self.lang]
        run = s.run
        lanes_now = ",".join(lane.name for lane in run.lanes) if run is not None else ""
        if run is None or c.browsing or lanes_now != step.lanes or w.toolbar.prompt_text() != prompt or not c.can_step:
            if "run" not in self._asked:
                self._asked.add("run")
                w.toolbar.prompt_box.setEditText(prompt)
                w.toolbar.show_lanes(step.lanes)
                c.set_lanes(step.lanes)
            return None
        if s.cursor != step.step:
            if s.cursor > step.step or s.cursor < s.n_steps - 1:
                c.scrub_to(min(step.step, s.n_steps - 1))
            else:
                c.step_forward()
                if step.step - s.cursor > 1:
                    w.animator.stop()  # catching up: only the last step animates
            return None
        self._timer.stop()
        self._open_dock(step)
        self.highlight.show_on(self._target(step.highlight))
        self.done = not self.problem
        if self.done:
            self._say("")
        return None

    def _open_dock(self, step: LessonStep) -> None:
        if step.dock is None:
            return
        dock = self._dock(step.dock)
        dock.setVisible(True)
        dock.raise_()
        if step.call is not None:
            view = dock.build() if hasattr(dock, "build") else dock.widget()
            method = getattr(view, step.call["method"], None)
            if method is None:
                cannot = translate("lesson", "the {dock} dock cannot {method} (a lesson written for a newer app?)")
                self._fail(cannot.format(dock=step.dock, method=step.call["method"]))
                return
            method(*step.call.get("args", []))

    def _dock(self, name: str) -> QDockWidget:
        w = self.window
        fixed = {"costs": w.costs_dock, "text": w.text_dock, "heads": w.overview_dock}
        return fixed[name] if name in fixed else w.extra_docks[name]

    def _target(self, name: str | None) -> QWidget | None:
        w = self.window
        if name is None:
            return None
        if name == "lanes":
            return w.lanes
        if name.startswith("lane:"):
            panels = w.lane_panels
            i = int(name.split(":")[1])
            return panels[i] if i < len(panels) else None
        if name.startswith("dock:"):
            return self._dock(name.split(":", 1)[1])
        return self._dock(name)

    def _fail(self, message: str) -> None:
        self._timer.stop()
        self.problem = message
        self._say(f"⚠ {message}")

    def _say(self, text: str) -> None:
        self.panel.status.setText(text)
        self.panel.status.setVisible(bool(text))


def install(window) -> QDockWidget:
    """A "Lesson" dock at the top (hidden until asked for: F2 or ☰ → Lesson); Page Down / Page Up
    (what presentation clickers send) move through it while it is shown."""
    lesson = Lesson(window)
    dock = QDockWidget(translate("lesson", "Lesson"), window)
    dock.setObjectName("lesson")
    dock.setWidget(lesson.panel)
    dock.setFeatures(
        QDockWidget.DockWidgetFeature.DockWidgetMovable
        | QDockWidget.DockWidgetFeature.DockWidgetFloatable
        | QDockWidget.DockWidgetFeature.DockWidgetClosable
    )
    window.addDockWidget(Qt.DockWidgetArea.TopDockWidgetArea, dock)
    dock.setVisible(False)
    dock.visibilityChanged.connect(lambda shown: lesson.start() if shown and lesson.index < 0 else None)
    dock.visibilityChanged.connect(lambda shown: None if shown else lesson.highlight.show_on(None))
    action = dock.toggleViewAction()
    action.setText(translate("lesson", "Lesson"))
    action.setShortcut("F2")
    window.addAction(action)
    window.toolbar.menu.addAction(action)
    for key, move in (("PgDown", lesson.next), ("PgUp", lesson.back)):
        step_action = window.addAction(key)
        step_action.setShortcut(key)
        step_action.triggered.connect(lambda _=False, move=move: move() if dock.isVisible() else None)
    window.lesson, window.lesson_dock = lesson, dock
    return dock
