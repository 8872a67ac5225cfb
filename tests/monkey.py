"""A GUI monkey for the main window, and a heartbeat that measures how long the GUI thread stalls.

    hb = Heartbeat(); hb.start()
    monkey = Monkey(window, seed=1, folder=tmp_path, extra_traces=[...])
    monkey.run(seconds=60)
    hb.stop(); hb.summary()  # longest gap between ticks, p99, what ran before the longest one

Every action is one a user can do (step, back, scrub, play/pause, reset — in bursts too —, speed
changes incl. "instant" in the middle of an animation, layer / head / all heads, lanes only, other
lanes, save and open runs, hover a row, hide / show lanes from the Lanes menu, resize the window,
keys, cancel), picked at random from a seeded generator, with short random waits between them so
actions land during animations, running steps and pending restarts. An exception a direct call
raises is recorded (with the action), never swallowed silently; exceptions raised inside slots
reach ``sys.excepthook``, which the caller records (pytest-qt's ``qtbot.captureExceptions()`` in
the suite, ``record_exceptions()`` in ``benchmarks/frontend/monkey.py``).

Used by tests/app/window/test_gui_robustness.py (about a minute) and benchmarks/frontend/monkey.py (as long as asked).
"""

from __future__ import annotations

import contextlib
import io
import random
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QEventLoop, QObject, QPoint, Qt, QTimer
from PySide6.QtTest import QTest

MODEL = "random:family=llama,layers=2,heads=4,kv_heads=2,dim=64,seed=1"
PROMPT = "The cache remembers"
LANES_16 = ",".join(
    [
        "none",
        "None",
        "NONE",
        "nOnE",
        "kv",
        "Kv",
        "kV",
        "KV",
        "cached",
        "Cached",
        "CACHED",
        "cAched",
        "caChed",
        "cacHed",
        "cachEd",
        "cacheD",
    ]
)  # 16 lanes (names differ by case): the most a run may have
LANE_SETS = [
    "uncached,cached",
    "cached,uncached",
    "cached",
    "uncached",
    "none,kv,cached",
    "none,NONE,kv,KV,cached,Cached",
]  # six lanes: two open hidden (the Lanes menu shows them)


def pump(ms: float) -> None:
    """Run the GUI event loop for ``ms`` milliseconds (timers, queued signals and paints happen)."""
    loop = QEventLoop()
    QTimer.singleShot(max(0, int(ms)), loop.quit)
    loop.exec()


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q / 100 * (len(s) - 1))))]


class Heartbeat(QObject):
    """A QTimer ticking every ``interval_ms`` on the GUI thread: a gap between two ticks much longer
    than the interval is time the GUI thread spent on something else (a stall the user feels).
    ``label`` is whatever the driver last said it was doing; the longest gap keeps it."""

    def __init__(self, interval_ms: int = 5, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.timer = QTimer(self)
        self.timer.setTimerType(Qt.PreciseTimer)
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(self._tick)
        self.gaps: list[float] = []
        self._label = ""
        self._during: list[str] = []  # labels set since the last tick: a gap is blamed on all of them
        self.worst = (0.0, "")
        self.top: list[tuple[float, str]] = []  # the 8 longest gaps and what they followed
        self._last = 0.0

    @property
    def label(self) -> str:
        return self._label

    @label.setter
    def label(self, text: str) -> None:
        self._label = text
        self._during.append(text)

    def start(self) -> None:
        self._during = [self._label]
        self.gaps.clear()
        self.top.clear()
        self.worst = (0.0, "")
        self._last = time.perf_counter()
        self.timer.start()

    def stop(self) -> None:
        self.timer.stop()

    def _tick(self) -> None:
        now = time.perf_counter()
        gap = (now - self._last) * 1000.0
        self._last = now
        self.gaps.append(gap)
        label = " > ".join(self._during)
        self._during = [self._label]
        if gap > self.worst[0]:
            self.worst = (gap, label)
        if len(self.top) < 8 or gap > self.top[-1][0]:
            self.top = sorted([*self.top, (gap, label)], reverse=True)[:8]

    @property
    def longest_ms(self) -> float:
        return self.worst[0]

    def summary(self) -> dict:
        return {
            "ticks": len(self.gaps),
            "longest_ms": round(self.worst[0], 1),
            "longest_during": self.worst[1],
            "p99_ms": round(percentile(self.gaps, 99), 1),
            "p999_ms": round(percentile(self.gaps, 99.9), 1),
            "median_ms": round(percentile(self.gaps, 50), 1),
            "longest_8": [f"{g:.0f} ms ({label})" for g, label in self.top],
        }


class Monkey:
    """Seeded random valid actions on ``window`` (a MainWindow whose first run is ready)."""

    def __init__(
        self, window, seed: int, folder: Path, extra_traces: list[Path] | None = None, heartbeat: Heartbeat | None = None
    ) -> None:
        self.w, self.c = window, window.controller
        self.rng = random.Random(seed)
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.saved: list[Path] = []
        self.extra = [Path(p) for p in extra_traces or []]
        self.heartbeat = heartbeat
        self.counts: Counter[str] = Counter()
        self.errors: list[str] = []  # "action: Type: message" of exceptions raised by direct calls
        self.trail: list[str] = []  # the last actions (to tell what led to a failure)
        self.actions: dict[str, tuple[int, Callable[[], None]]] = {
            "step": (12, self.c.step_forward),
            "back": (5, self.c.step_back),
            "scrub": (5, self.scrub),
            "play": (6, self.c.toggle_play),
            "reset": (3, self.reset),
            "reset-burst": (1, self.reset_burst),
            "speed": (4, self.speed),
            "instant-mid-animation": (3, self.instant_mid_animation),
            "layer": (3, self.layer),
            "head": (3, self.head),
            "all-heads": (1, self.all_heads),
            "lanes-only": (2, self.w.toggle_lanes_only),
            "set-lanes": (2, self.set_lanes),
            "save": (2, self.save),
            "open": (2, self.open),
            "hover": (6, self.hover),
            "mouse": (4, self.mouse),
            "toggle-lane": (3, self.toggle_lane),
            "resize": (2, self.resize),
            "key": (4, self.key),
            "cancel": (1, self.c.cancel),
        }

    # ------------------------------------------------------------------ actions
    def scrub(self) -> None:
        self.c.scrub_to(self.rng.randint(-1, max(0, self.w.session.n_steps - 1)))

    def reset(self) -> None:
        self.c.reset()

    def reset_burst(self) -> None:
        for _ in range(self.rng.randint(2, 10)):
            self.w.toolbar.reset_action.trigger()

    def speed(self) -> None:
        box = self.w.toolbar.speed_box
        box.setCurrentIndex(self.rng.randrange(box.count()))

    def instant_mid_animation(self) -> None:
        """Slow down, start a step's animation, then choose "instant" while it runs."""
        box = self.w.toolbar.speed_box
        box.setCurrentIndex(box.findData("slow"))
        self.c.step_forward()
        pump(self.rng.uniform(0, 60))
        box.setCurrentIndex(box.findData("instant"))

    def _pick(self, box) -> None:
        if box.count():
            box.setCurrentIndex(self.rng.randrange(box.count()))

    def layer(self) -> None:
        self._pick(self.w.toolbar.layer_box)

    def head(self) -> None:
        self._pick(self.w.toolbar.head_box)

    def all_heads(self) -> None:
        box = self.w.toolbar.head_box
        if box.findData(-1) >= 0:
            box.setCurrentIndex(box.findData(-1))
        pump(30)
        self.w.overview_dock.setVisible(self.rng.random() < 0.5)

    def set_lanes(self) -> None:
        self.c.set_lanes(self.rng.choice(LANE_SETS))

    def save(self) -> None:
        path = self.folder / f"run-{len(self.saved) % 4}.kvsim"
        if self.c.save_run(str(path)) and path not in self.saved:
            self.saved.append(path)

    def open(self) -> None:
        choices = self.saved + self.extra
        if choices:
            self.c.open_run(str(self.rng.choice(choices)))

    def hover(self) -> None:
        n = self.w.session.n_rows()
        self.w._on_hover(self.rng.randint(-1, max(0, n)))

    def mouse(self) -> None:
        """The mouse over a random point of a shown lane's plots (hover rows, point at attention cells)."""
        shown = self.w.lanes.shown()
        if not shown:
            return
        glw = self.rng.choice(shown).glw
        if glw.width() > 2 and glw.height() > 2:
            QTest.mouseMove(glw.viewport(), QPoint(self.rng.randrange(glw.width()), self.rng.randrange(glw.height())))

    def toggle_lane(self) -> None:
        actions = self.w.lanes.menu.actions()
        if actions:
            self.rng.choice(actions).trigger()

    def resize(self) -> None:
        self.w.resize(self.rng.randint(800, 1920), self.rng.randint(500, 1080))

    def key(self) -> None:
        key = self.rng.choice([Qt.Key_Right, Qt.Key_Right, Qt.Key_Left, Qt.Key_Space, Qt.Key_Home, Qt.Key_F])
        QTest.keyClick(self.w.focusWidget() or self.w, key)

    # ------------------------------------------------------------------ driving
    def step(self) -> str:
        names = list(self.actions)
        weights = [self.actions[n][0] for n in names]
        name = self.rng.choices(names, weights)[0]
        self.trail = (self.trail + [name])[-20:]
        if self.heartbeat is not None:
            self.heartbeat.label = name
        try:
            self.actions[name][1]()
        except Exception as exc:  # noqa: BLE001 - recorded and reported, the monkey goes on
            self.errors.append(f"{name}: {type(exc).__name__}: {exc}\n{traceback.format_exc()}")
        self.counts[name] += 1
        if self.heartbeat is not None:
            self.heartbeat.label = f"after {name}"
        pump(self.rng.choice([0, 0, 1, 5, 10, 20, 40, 80, 150]))
        return name

    def run(self, seconds: float, report_every: float = 0.0, actions: int | None = None) -> int:
        """Act for ``seconds`` (or, given ``actions``, exactly that many: work, not time — what a test
        bounds); returns the number of actions."""
        start = last = time.monotonic()
        n = 0
        while (n < actions) if actions is not None else (time.monotonic() - start < seconds):
            self.step()
            n += 1
            if report_every and time.monotonic() - last >= report_every:
                last = time.monotonic()
                print(
                    f"[{last - start:7.0f} s] {n} actions, {len(self.errors)} errors, {self.w.session.n_steps} steps shown",
                    flush=True,
                )
        return n

    def still_works(self, timeout_s: float = 60.0) -> bool:
        """After the monkey: Reset gives a live run that steps (the app is not stuck in a broken state)."""
        self.c.stop_play()
        self.w.toolbar.speed_box.setCurrentIndex(self.w.toolbar.speed_box.findData("instant"))
        self.c.set_lanes("uncached,cached")
        if not self.c.wait_ready(timeout_s):
            return False
        return self.c.run_steps(2, timeout_s) and self.w.session.n_steps == 2


def save_trace(path: Path, lanes: str, model: str = MODEL, steps: int = 4, prompt: str = "The cache") -> Path:
    """A saved run made by ``kvsim run --save`` (its table printout swallowed)."""
    from kvsim.cli.entry import main as cli_main

    with contextlib.redirect_stdout(io.StringIO()):
        code = cli_main(
            ["run", "--model", model, "--prompt", prompt, "--steps", str(steps), "--lanes", lanes, "--save", str(path)]
        )
    if code != 0:
        raise RuntimeError(f"kvsim run --lanes {lanes} --save {path}: exit {code}")
    return path


def make_traces(folder: Path, model: str = MODEL) -> list[Path]:
    """A good saved run with 16 lanes (the most a trace may hold), one with one lane, and a few damaged
    copies (the hostile corpus's generator): open_run must show or refuse each, never break."""
    import hostile

    folder.mkdir(parents=True, exist_ok=True)
    out = [
        save_trace(folder / f"{name}.kvsim", lanes, model)
        for name, lanes in (("lanes16", LANES_16), ("cached-only", "cached"), ("uncached-only", "uncached"))
    ]
    damaged = hostile.build_trace_corpus(folder / "damaged", out[1])
    picks = ("truncated-0.5", "flip-", "lanes-120", "heads-3-over-2", "manifest-deep", "nan-numbers")
    seen = set()
    for case in damaged:
        if case.kind == "trace":
            pick = next((p for p in picks if case.name.split("/", 1)[1].startswith(p)), None)
            if pick and pick not in seen:
                seen.add(pick)
                out.append(Path(case.argv[0]))
    return out


def record_exceptions(into: list[str]):
    """Install a ``sys.excepthook`` that appends each uncaught exception (one in a slot included) to
    ``into``; returns the previous hook."""
    previous = sys.excepthook

    def hook(kind, value, tb):
        into.append(f"{kind.__name__}: {value}\n{''.join(traceback.format_tb(tb))}")

    sys.excepthook = hook
    return previous
