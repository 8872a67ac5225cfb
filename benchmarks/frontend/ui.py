"""UI frame times while playing, and launch-to-first-paint.

    QT_QPA_PLATFORM=offscreen python benchmarks/frontend/ui.py [--tokens 256,1024,2048] [--steps 24] [--lanes uncached,cached]

For each sequence length T the engine first records a run (a small random Llama with a 2,304-token
context, prompt of T - steps bytes, then `steps` decode steps) so the engine is not what is
measured. Then the records are played into the real main window in its default layout, exactly as
the worker delivers them: a *step frame* (record arrives → session → every view redraws → paint)
followed by the animation frames of the "normal" speed (700 ms at 60 Hz ≈ 42 frames that only move
overlays). Every frame is timed including the paint (processEvents). Reported: median and p99 over
all frames, over step frames alone, per frame index after a step, and, for "instant" speed (no
animation to spread a step over), the cost of drawing a whole step in one frame.

Goals: median ≤ 8 ms and p99 ≤ 16 ms at 2048 tokens; first paint ≤ 3 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1]))  # benchmarks/, where the shared _load.py is
from _load import LoadWatch  # noqa: E402

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

MODEL = "random:family=llama,layers=2,heads=4,kv_heads=2,dim=64,ctx=2304,seed=0"


def record_run(tokens: int, steps: int, lanes: str = "uncached,cached"):
    from kvsim.caches import parse_lanes
    from kvsim.engine.simulate import Simulator
    from kvsim.models.loading import load_model

    loaded = load_model(MODEL)
    prompt = (
        "It is a truth universally acknowledged, that a single man in possession of a good fortune must be in want of a wife. "
    ) * (tokens // 64 + 1)
    ids = loaded.tokenizer.encode(prompt)[: tokens - steps + 1]
    sim = Simulator(loaded.model, loaded.tokenizer, ids, parse_lanes(lanes), model_id=MODEL, prompt_text=prompt)
    records = list(sim.run(steps))
    labels = {i: loaded.tokenizer.token_text(i) for i in set(ids)}
    return sim, records, labels


def loaded_token_text(labels: dict[int, str]):
    return lambda i: labels.get(i, f"<{i}>")


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q / 100 * (len(s) - 1))))]


def measure(
    tokens: int, steps: int, size=(1920, 1080), lanes: str = "uncached,cached", show_all: bool = False
) -> dict[str, float]:
    from PySide6.QtCore import QCoreApplication, QEvent, QObject

    from kvsim.ui.app import make_app
    from kvsim.ui.session import RunInfo
    from kvsim.ui.shell.window import MainWindow

    sim, records, labels = record_run(tokens, steps, lanes)
    app = make_app()  # noqa: F841 - keeps the QApplication alive
    w = MainWindow(model=MODEL, persist=False)
    w.resize(*size)
    w.show()
    w.controller.wait_ready(120)

    class Paints(QObject):
        n = 0

        def eventFilter(self, obj, ev):  # noqa: N802
            if ev.type() == QEvent.Paint:
                Paints.n += 1
            return False

    counter = Paints()
    run = RunInfo.from_trace(sim.trace.meta, sim.run_id, token_text=loaded_token_text(labels))
    w.controller.browsing = True  # the records come from here, not from the worker
    w.controller.can_step = False
    w.session.start_run(run)
    if show_all:  # lanes beyond MAX_SHOWN_LANES open hidden: show them all, as the Lanes menu does
        for lane in run.lanes:
            w.lanes.show_lane(lane.name)
    w.lanes.settle()  # every panel built now (a run of many lanes builds them one per event-loop turn)
    w.flush_views()
    for p in w.lane_panels:
        p.glw.viewport().installEventFilter(counter)
    for _ in range(3):
        QCoreApplication.processEvents()
    frames_per_step = 42  # 700 ms at 60 Hz
    step_frames, anim_frames = [], []
    cpu_frames: list[float] = []  # the GUI thread's CPU time per frame: what a quiet machine's wall time would be
    by_index: dict[int, list[float]] = {}
    w.animator.timer.stop()
    for j, rec in enumerate(records):
        t0, c0 = time.perf_counter(), time.thread_time()
        w.session.add_record(rec)
        w.session.set_cursor(rec.step)
        w._on_frame(0.0)
        QCoreApplication.processEvents()
        step_frames.append((time.perf_counter() - t0) * 1e3)
        if j:  # the prefill frame is not a playing frame
            cpu_frames.append((time.thread_time() - c0) * 1e3)
        for i in range(1, frames_per_step + 1):
            t0, c0 = time.perf_counter(), time.thread_time()
            w._on_frame(i / frames_per_step)
            QCoreApplication.processEvents()
            anim_frames.append((time.perf_counter() - t0) * 1e3)
            cpu_frames.append((time.thread_time() - c0) * 1e3)
            by_index.setdefault(min(i, 11), []).append(anim_frames[-1])
    # "instant" speed: each step is drawn whole in one frame (no animation to spread it over)
    instant = []
    for step in range(1, len(records)):
        w.session.set_cursor(step - 1)
        w.flush_views()
        QCoreApplication.processEvents()
        t0 = time.perf_counter()
        w.session.set_cursor(step)
        w._on_frame(1.0)
        QCoreApplication.processEvents()
        instant.append((time.perf_counter() - t0) * 1e3)
    n_rows = w.session.n_rows()
    shown = len(w.lanes.shown())
    w.shutdown()
    w.close()
    QCoreApplication.processEvents()
    # the prefill frame is not a playing frame: leave it out
    step_frames = step_frames[1:]
    frames = step_frames + anim_frames
    return {
        "tokens": n_rows,
        "shown": shown,
        "frames": len(frames),
        "median_ms": statistics.median(frames),
        "p99_ms": pct(frames, 99),
        "step_median_ms": statistics.median(step_frames),
        "step_p99_ms": pct(step_frames, 99),
        "paints": Paints.n,
        "cpu_median_ms": statistics.median(cpu_frames),
        "cpu_p99_ms": pct(cpu_frames, 99),
        "cpu_max_ms": max(cpu_frames),
        "instant_median_ms": statistics.median(instant),
        "instant_max_ms": max(instant),
        "by_frame": {k: statistics.median(v) for k, v in sorted(by_index.items())},
    }


def first_paint(runs: int = 3) -> list[tuple[float, float]]:
    """Wall time from process start to the first paint of the main window (subprocess)."""
    root = Path(__file__).resolve().parents[2]
    out = []
    for _ in range(runs):
        env = dict(os.environ, KVSIM_EXIT_AFTER_FIRST_PAINT="1", QT_QPA_PLATFORM="offscreen")
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-c", "import sys; from kvsim.ui.app import main; sys.exit(main())"],
            cwd=root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        wall, inner = float("nan"), float("nan")
        for line in proc.stdout:
            if line.startswith("first-paint-ms"):
                wall = (time.perf_counter() - t0) * 1e3
                inner = float(line.split()[1])
                break
        proc.wait(timeout=120)
        out.append((wall, inner))
    return out


def main() -> int:
    LoadWatch()  # the machine's load at start and end, printed beside the figures (benchmarks/_load.py)
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", default="256,1024,2048")
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--size", default="1920x1080")
    ap.add_argument("--lanes", default="uncached,cached")
    ap.add_argument("--show-all", action="store_true", help="show every lane (more than 4 open hidden)")
    ap.add_argument("--no-launch", action="store_true", help="skip the launch-to-first-paint measurement")
    args = ap.parse_args()
    load = os.getloadavg()
    size = tuple(int(x) for x in args.size.split("x"))
    print(f"window {size[0]}x{size[1]}, default layout, lanes {args.lanes}, model {MODEL}, {args.steps} steps per length")
    print(f"{'tokens':>7} {'frames':>7} {'median ms':>10} {'p99 ms':>8} {'step median':>12} {'step p99':>9}")
    for t in (int(x) for x in args.tokens.split(",")):
        r = measure(t, args.steps, size, args.lanes, args.show_all)
        print(
            f"{r['tokens']:>7} {r['frames']:>7} {r['median_ms']:>10.2f} {r['p99_ms']:>8.2f} "
            f"{r['step_median_ms']:>12.2f} {r['step_p99_ms']:>9.2f}   frames after a step (median ms): "
            + " ".join(f"{k}:{v:.1f}" for k, v in r["by_frame"].items())
            + f" (11 = 11th and later); {r['shown']} lanes shown",
            flush=True,
        )
        print(
            f"{'':>7} GUI thread CPU per frame: median {r['cpu_median_ms']:.2f} ms, p99 {r['cpu_p99_ms']:.2f} ms, "
            f"max {r['cpu_max_ms']:.2f} ms (wall on a busy machine waits for a core; CPU is what a quiet one needs)",
            flush=True,
        )
        print(
            f"{'':>7} instant speed (a whole step drawn in one frame): median {r['instant_median_ms']:.1f} ms, "
            f"max {r['instant_max_ms']:.1f} ms",
            flush=True,
        )
    after = os.getloadavg()
    print(f"load average (1 min) before {load[0]:.2f}, after {after[0]:.2f}, on {os.cpu_count()} cores")
    if args.no_launch:
        return 0
    fp = first_paint()
    print(
        "launch to first paint (process start → first paint, wall): "
        + ", ".join(f"{w:.0f} ms" for w, _ in fp)
        + f"  (median {statistics.median(w for w, _ in fp):.0f} ms)"
    )
    print("  of which after `import kvsim.ui.app`: " + ", ".join(f"{i:.0f} ms" for _, i in fp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
