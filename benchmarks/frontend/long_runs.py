"""Long runs: `kvsim inspect`, the run summary and the app's Open of valid two-lane runs of 1k, 10k and 50k steps
(issue 36: a 3,000-step run froze Open past 60 s and took `inspect` 89 s; the summary of a 6,000-step run never came).

    python benchmarks/frontend/long_runs.py [--steps 1000,10000,50000] [--no-app]

Each run is synthesized (``tests/helpers.synthetic_long_run``: a real 4-step run of a small random model, then one
valid decode record a step — counts and bytes from the model's formulas, clocks with seeded noise, the uncached
lane's growing with the sequence) and saved in a temporary folder; then, per run:

* ``inspect``: ``python -m kvsim inspect FILE`` as its own process (Python's start-up, the file checked whole —
  ``Trace.load`` —, the summary with its paired comparison, printed), wall time;
* ``load`` and ``summary``: the same two parts in this process (``Trace.load``, ``summarize``);
* ``Open``: the app's main window (offscreen, 1280×720, the bundled tiny model loaded), ``open_run(FILE)`` until
  the views are drawn at the last step (the costs panel's comparison of every lane included).

Printed as a Markdown table: wall seconds with the CPU seconds they took (on a machine other jobs load, the CPU
time is what an idle one would take), and wall microseconds per step (flat per step = linear in the run's length).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1]))  # benchmarks/, where the shared _load.py is
from _load import LoadWatch  # noqa: E402

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # this checkout's kvsim, and the synthesizer in tests/helpers.py


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _window():
    from PySide6.QtCore import QCoreApplication, QEventLoop

    from kvsim.ui import theme
    from kvsim.ui.app import make_app
    from kvsim.ui.shell.window import MainWindow

    app = make_app()
    theme.apply(app)
    w = MainWindow(model="tiny", prompt="Once upon a time", persist=False)
    w.animator.set_speed("instant")
    w.resize(1280, 720)
    w.show()
    if not w.controller.wait_ready(120):
        raise SystemExit(f"the window did not get ready: {w.controller.last_error}")

    def pump() -> None:
        for _ in range(5):
            QCoreApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 20)

    return app, w, pump


def main() -> int:
    LoadWatch()  # the machine's load at start and end, printed beside the figures (benchmarks/_load.py)
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", default="1000,10000,50000", help="the runs' lengths, comma-separated")
    p.add_argument("--no-app", action="store_true", help="leave out the app's Open")
    args = p.parse_args()
    sizes = [int(x) for x in args.steps.split(",")]

    from helpers import synthetic_long_run

    from kvsim.engine.summary import summarize
    from kvsim.engine.trace import Trace

    window = None if args.no_app else _window()
    rows = []
    with tempfile.TemporaryDirectory(prefix="kvsim-long-runs-") as tmp:
        for n in sizes:
            t0 = time.perf_counter()
            path = synthetic_long_run(n).save(Path(tmp) / f"run-{n}.kvsim")
            made = time.perf_counter() - t0
            size = path.stat().st_size
            t0, c0 = time.perf_counter(), _child_cpu()
            done = subprocess.run(
                [sys.executable, "-m", "kvsim", "inspect", str(path)], cwd=ROOT, capture_output=True, text=True, check=False
            )
            inspect_s = (time.perf_counter() - t0, _child_cpu() - c0)
            if done.returncode != 0:
                raise SystemExit(f"kvsim inspect failed on {n} steps: {done.stderr.strip()}")
            t0, c0 = time.perf_counter(), time.process_time()
            trace = Trace.load(path)
            load_s = (time.perf_counter() - t0, time.process_time() - c0)
            t0, c0 = time.perf_counter(), time.process_time()
            summary = summarize(trace)
            summary_s = (time.perf_counter() - t0, time.process_time() - c0)
            del trace
            open_s = None
            if window is not None:
                _app, w, pump = window
                t0, c0 = time.perf_counter(), time.process_time()
                if not w.open_run(str(path)):
                    raise SystemExit(f"Open failed on {n} steps: {w.controller.last_error}")
                w.flush_views()
                pump()
                open_s = (time.perf_counter() - t0, time.process_time() - c0)
                verdict = w.session.itl_compared(1)
                assert w.session.n_steps == n and verdict is not None and verdict.pairs == n - 1
            cached = summary["lanes"]["cached"]
            print(
                f"{n:,} steps: file {size / 1e6:.1f} MB (synthesized and saved in {made:.1f} s); cached ITL "
                f"{cached['itl_ratio']:.3g}× ({cached['itl_ratio_spread'][0]:.3g}–{cached['itl_ratio_spread'][1]:.3g}, "
                f"{cached['itl_pairs']:,} pairs): {cached['itl_verdict']}",
                flush=True,
            )
            rows.append((n, inspect_s, load_s, summary_s, open_s))
    print()
    print("| steps | `kvsim inspect` (its own process) | `Trace.load` | summary | app Open (until drawn) |")
    print("|---:|---:|---:|---:|---:|")
    for n, *times in rows:
        cells = [f"{t[0]:.2f} s, CPU {t[1]:.2f} s ({1e6 * t[0] / n:.0f} µs/step)" if t is not None else "–" for t in times]
        print(f"| {n:,} | " + " | ".join(cells) + " |")
    if window is not None:
        window[1].shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
