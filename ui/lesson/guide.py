"""The guided lesson: 15 steps that walk the articles' argument on the live model.

Each step (``resources/lesson/lesson.json``, written in English and Portuguese) names the state it
needs — model, lanes, prompt, the step to show, a dock to open, something to call on that dock,
what to highlight — and one short paragraph. The driver reaches that state a little at a time,
on a timer (load the model, restart the run, compute or browse to the step), so the window never
freezes and the lesson can be left, or moved on, at any moment.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from importlib import resources
from typing import Any

from PySide6.QtCore import QEvent, QObject, QRect, Qt, QTimer
from PySide6.QtGui import QAction, QColor, QFontMetrics, QKeyEvent, QPainter, QPen
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QSizePolicy, QVBoxLayout, QWidget

from ..i18n import plain_tip, translate

LANGUAGES = ("en", "pt")
STEP_TIMEOUT_S = 90.0  # a state not reached by then (since its last progress) is reported, not waited for


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
    dock: str | None = None  # the view this step shows (a dock on the desktop layout); None: the lanes
    highlight: str | None = None
    call: dict[str, Any] | None = None

    @property
    def view(self) -> str:
        """The one stage view this step selects."""
        return self.dock or "lanes"


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
        self.setProperty("overlay", True)  # deliberately over what it frames
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
        parent = self.parentWidget()
        if parent is None:  # made on the window: it has one
            return
        top_left = t.mapTo(parent, t.rect().topLeft())
        self.setGeometry(QRect(top_left, t.size()).adjusted(-3, -3, 3, 3))
        self.raise_()
        self.show()

    def paintEvent(self, _event) -> None:  # noqa: N802
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        p.setPen(QPen(QColor("#f0c419"), 4))
        p.drawRoundedRect(self.rect().adjusted(2, 2, -2, -2), 6, 6)


class LessonPanel(QFrame):
    """The caption band under the stage: title, where we are (k / N), Back / Next, and at most three
    lines of the step's paragraph (a longer paragraph is shown a page of three lines at a time: Next
    turns the page before it moves on). It takes its own place in the window: it never covers a view.
    Clicked, it takes the keyboard: → / ← then turn its pages (and its steps) as Page Down / Page Up do."""

    LINES = 3

    def __init__(self, lesson: Lesson) -> None:
        super().__init__()
        self.lesson = lesson
        self.setObjectName("lessonBand")
        self.setWindowTitle(translate("lesson", "Lesson"))
        self.setFrameShape(QFrame.Shape.StyledPanel)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(8, 4, 8, 4)
        lay.setSpacing(2)
        row = QHBoxLayout()
        self.title = QLabel()
        self.title.setObjectName("lessonTitle")
        self.title.setStyleSheet("font-weight: 700;")
        self.title.setSizePolicy(
            QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred
        )  # a long title: the band's fit() shortens it
        row.addWidget(self.title, 1)
        self.status = QLabel()  # "computing step 12/40": its own line under the text while there is one
        self.status.setObjectName("lessonStatus")
        self.counter = QLabel()
        self.counter.setAlignment(Qt.AlignmentFlag.AlignCenter)
        row.addWidget(self.counter)
        self.back = QPushButton(translate("lesson", "◀ Back"))
        self.back.setToolTip(translate("lesson", "the previous page, or the previous lesson step (Page Up)"))
        self.next = QPushButton(translate("lesson", "Next ▶"))
        self.next.setToolTip(translate("lesson", "the next page, or the next lesson step (Page Down)"))
        self.back.clicked.connect(lesson.retreat)
        self.next.clicked.connect(lesson.advance)
        row.addWidget(self.back)
        row.addWidget(self.next)
        lay.addLayout(row)
        self.text = QLabel()  # the whole paragraph (what the step says; tests read it)
        self.page = QLabel()  # the three lines of it on screen
        self.page.setObjectName("lessonText")
        self.page.setWordWrap(True)
        self.page.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.page.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.page.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        lay.addWidget(self.page)
        lay.addWidget(self.status)
        self.pages: list[str] = [""]
        self.at = 0
        self._full_title = ""
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self.setFocusPolicy(Qt.FocusPolicy.ClickFocus)  # clicked: → / ← turn its pages (keyPressEvent)

    def set_step(self, title: str, text: str) -> None:
        self._full_title = title
        self.text.setText(text)
        self.at = 0
        self.fit()

    def fit(self) -> None:
        """Split the paragraph into pages of at most three lines at the band's width (whole sentences
        where they fit, else whole words), and show the current one."""
        fm = self.page.fontMetrics()
        self.page.setFixedHeight(fm.lineSpacing() * self.LINES + 2)
        width = max(self.page.width(), self.width() - 20, 100)
        self.pages = paginate(self.text.text(), lambda t: _lines(fm, t, width) <= self.LINES)
        self.at = min(self.at, len(self.pages) - 1)
        self.page.setText(self.pages[self.at])
        room = max(self.title.width(), 60)
        self.title.setText(self.title.fontMetrics().elidedText(self._full_title, Qt.TextElideMode.ElideRight, room))
        self.title.setToolTip(plain_tip(self._full_title))
        self.show_counter()

    def show_counter(self) -> None:
        lesson = self.lesson
        text = f"{lesson.index + 1} / {len(lesson.steps)}"
        if len(self.pages) > 1:
            text += f" · {self.at + 1}/{len(self.pages)}"
        self.counter.setText(text)
        # Back / Next reach every page: a step's later pages, then the next step (the last step's too)
        self.back.setEnabled(self.at > 0 or lesson.index > 0)
        self.next.setEnabled(self.at < len(self.pages) - 1 or lesson.index < len(lesson.steps) - 1)

    def last_page(self) -> None:
        """Show the paragraph's last page (Page Up into a step arrives where Page Down left it)."""
        self.at = len(self.pages) - 1
        self.page.setText(self.pages[self.at])
        self.show_counter()

    def turn(self, direction: int) -> bool:
        """The next (or previous) page of this step's paragraph; False when there is none."""
        at = self.at + direction
        if not 0 <= at < len(self.pages):
            return False
        self.at = at
        self.page.setText(self.pages[at])
        self.show_counter()
        return True

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        self.fit()

    _TURN_KEYS = {Qt.Key.Key_Right: +1, Qt.Key.Key_Left: -1}

    def event(self, event: QEvent) -> bool:
        # → / ← are the window's step keys; with the caption focused they are its page keys instead
        if event.type() == QEvent.Type.ShortcutOverride and isinstance(event, QKeyEvent) and event.key() in self._TURN_KEYS:
            event.accept()
            return True
        return super().event(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt API
        direction = self._TURN_KEYS.get(Qt.Key(event.key()))
        if direction is None:
            super().keyPressEvent(event)
            return
        (self.lesson.advance if direction > 0 else self.lesson.retreat)()

    def showEvent(self, event) -> None:  # noqa: N802 - Qt API
        super().showEvent(event)
        self.lesson.shown_changed(True)

    def hideEvent(self, event) -> None:  # noqa: N802 - Qt API
        super().hideEvent(event)
        if self.isHidden():  # the band itself hidden (not the window around it)
            self.lesson.shown_changed(False)


def _lines(fm: QFontMetrics, text: str, width: int) -> int:
    return fm.boundingRect(QRect(0, 0, width, 100_000), int(Qt.TextFlag.TextWordWrap), text).height() // max(fm.lineSpacing(), 1)


def paginate(text: str, fits) -> list[str]:
    """``text`` cut into pages that each ``fits``: sentences kept whole where they fit, else words."""
    pieces = re.split(r"(?<=[.!?:;])\s+", text.strip())
    pages: list[str] = []
    for piece in pieces:
        for word in piece.split(" ") if not fits(piece) else [piece]:
            joined = f"{pages[-1]} {word}" if pages else word
            if pages and fits(joined):
                pages[-1] = joined
            else:
                pages.append(word)
    return pages or [""]


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
        # the runs this lesson computed, by (model, lanes, prompt): going back to a step shows its run again
        # (browsing its records) instead of computing it a second time; the latest few are kept
        self._recorded: dict[tuple[str, str, str], tuple[Any, list]] = {}

    # ------------------------------------------------------------------ navigation
    def start(self) -> None:
        self.go(max(self.index, 0))

    def next(self) -> None:
        self.go(min(self.index + 1, len(self.steps) - 1))

    def back(self) -> None:
        self.go(max(self.index - 1, 0))

    def advance(self) -> None:
        """Next (the button, Page Down, → in the caption): the paragraph's next page, else the next step."""
        if not self.panel.turn(+1) and self.index < len(self.steps) - 1:
            self.next()

    def retreat(self) -> None:
        """Back (the button, Page Up, ← in the caption): the previous page, else the previous step at its
        last page, so that Page Up retraces exactly what Page Down showed."""
        if not self.panel.turn(-1) and self.index > 0:
            self.back()
            self.panel.last_page()

    def shown(self) -> bool:
        return self.panel.isVisible()

    def shown_changed(self, shown: bool) -> None:
        if shown and self.index < 0:
            self.start()
        elif not shown:
            self.highlight.show_on(None)

    def set_language(self, lang: str) -> None:
        if lang in LANGUAGES and lang != self.lang:
            self.lang = lang
            if self.index >= 0:
                self.go(self.index)

    def go(self, index: int) -> None:
        self._keep()
        self.index = index
        step = self.steps[index]
        self.done, self.problem = False, ""
        self._asked.clear()
        self._started = time.monotonic()
        p = self.panel
        p.set_step(step.title[self.lang], step.text[self.lang])  # its counter enables Back / Next
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
                self._say(translate("lesson", "loading the model {model} …").format(model=step.model))
            return None
        prompt = step.prompt[self.lang]
        run = s.run
        lanes_now = ",".join(lane.name for lane in run.lanes) if run is not None else ""
        kept = self._recorded.get((step.model, step.lanes, prompt))
        if kept is not None and len(kept[1]) <= step.step:
            kept = None  # recorded, but not as far as this step: computed on
        replayed = kept is not None and run is kept[0]  # browsing a run this lesson computed: as good as live
        if (
            run is None
            or (c.browsing and not replayed)
            or lanes_now != step.lanes
            or w.toolbar.prompt_text() != prompt
            or not (c.can_step or replayed)
        ):
            if kept is not None and "run" not in self._asked:  # a step already reached: its run again, nothing computed
                self._asked.add("run")
                w.toolbar.prompt_box.setEditText(prompt)
                w.toolbar.show_lanes(step.lanes)
                c.lanes = step.lanes  # what Reset restarts
                c.show_recorded(kept[0], kept[1], step.step)
                return None
            if "run" not in self._asked:
                self._asked.add("run")
                w.toolbar.prompt_box.setEditText(prompt)
                w.toolbar.show_lanes(step.lanes)
                c.set_lanes(step.lanes)
                self._say(translate("lesson", "starting the run (prefill) …"))
            return None
        if s.cursor != step.step:
            if s.cursor > step.step or s.cursor < s.n_steps - 1:
                c.scrub_to(min(step.step, s.n_steps - 1))
            else:
                c.step_forward()
                if step.step - s.cursor > 1:
                    w.animator.stop()  # catching up: only the last step animates
                self._say(translate("lesson", "computing step {i}/{n}").format(i=s.cursor + 1, n=step.step))
                self._started = time.monotonic()  # progress: the time allowed counts from the last step
            return None
        self._timer.stop()
        self._open_dock(step)
        self.highlight.show_on(self._target(step.highlight))
        self.done = not self.problem
        self._keep()
        if self.done:
            self._say("")
        return None

    def _keep(self, most: int = 4) -> None:
        """Keep the run on screen, when it is the current step's (its state reached, live or replayed), with
        every record it has now, for a later way back to any step it covers."""
        if self.index < 0 or not self.done:
            return
        step = self.steps[self.index]
        s, c = self.window.session, self.window.controller
        run = s.run
        if run is None or not s.records or ",".join(lane.name for lane in run.lanes) != step.lanes:
            return  # the lanes changed by hand since
        if run.prompt_text != step.prompt[self.lang] or run.model_id != step.model:
            return  # another prompt or model, by hand
        if c.browsing and not any(run is kept for kept, _ in self._recorded.values()):
            return  # an opened file, not a run of this lesson
        key = (step.model, step.lanes, step.prompt[self.lang])
        self._recorded.pop(key, None)
        self._recorded[key] = (run, list(s.records))
        while len(self._recorded) > most:
            self._recorded.pop(next(iter(self._recorded)))

    def _open_dock(self, step: LessonStep) -> None:
        """Show this step's one view (on the stage, it fills the window; on the desktop layout, its dock
        opens) and close the dock the previous step opened."""
        w = self.window
        dock = self._dock(step.dock) if step.dock is not None else None
        before, was_shown = getattr(self, "_opened", (None, True))
        if before is not None and before is not dock and not was_shown and not w.stage.active:
            before.setVisible(False)  # a dock the lesson opened (not one the user had open)
        if dock is not before:
            self._opened = (dock, dock is None or dock.isVisible() or w.stage.active)
        w.stage.show(step.view)
        if dock is None or step.call is None:
            return
        view = dock.build() if hasattr(dock, "build") else dock.widget()
        method = getattr(view, step.call["method"], None)
        if method is None:
            cannot = translate("lesson", "the {dock} dock cannot {method} (a lesson written for a newer app?)")
            self._fail(cannot.format(dock=step.dock, method=step.call["method"]))
            return
        method(*step.call.get("args", []))

    def _dock(self, name: str):
        """The dock that holds view ``name`` (the stage knows each view's dock: "offon" is the requests dock)."""
        return self.window.stage.entries[name][1]

    def _target(self, name: str | None) -> QWidget | None:
        """The widget a step highlights: the lanes, one lane, or a view (on the stage: the page that
        holds it; on the desktop layout: its dock)."""
        w = self.window
        if name is None:
            return None
        if name == "lanes":
            return w.lanes
        if name.startswith("lane:"):
            panels = w.lane_panels
            i = int(name.split(":")[1])
            return panels[i] if i < len(panels) else None
        view = name.split(":", 1)[1] if name.startswith("dock:") else name
        return w.stage.page(view) if w.stage.active else self._dock(view)

    def _fail(self, message: str) -> None:
        self._timer.stop()
        self.problem = message
        self._say(f"⚠ {message}")

    def _say(self, text: str) -> None:
        self.panel.status.setText(text)
        self.panel.status.setVisible(bool(text))


def install(window) -> tuple[Lesson, LessonPanel, QAction]:
    """The lesson, its caption band (hidden until asked for: F2 or ☰ → Lesson; the window puts it under
    the stage) and its action, on ``window``'s keys; Page Down / Page Up (what presentation clickers send)
    turn its pages and steps while it is shown (``ui/shell/stage.py`` owns those two keys)."""
    lesson = Lesson(window)
    band = lesson.panel
    band.setVisible(False)
    action = QAction(translate("lesson", "Lesson"), window)
    action.setCheckable(True)
    action.setShortcut("F2")
    action.toggled.connect(band.setVisible)
    lesson.shown_changed = _synced(lesson.shown_changed, action)
    window.addAction(action)
    return lesson, band, action


def _synced(react, action: QAction):
    def shown_changed(shown: bool) -> None:
        if action.isChecked() != shown:
            action.setChecked(shown)  # its toggled reaches the band (already so) and whoever listens (the stage)
        react(shown)

    return shown_changed
