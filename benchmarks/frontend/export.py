"""GUI frame gaps while the app exports a run to GIF/MP4 (the window must never freeze).

    QT_QPA_PLATFORM=offscreen python benchmarks/frontend/export.py [--steps 20] [--size 1280x720] [--fps 15]
        [--speed normal] [--formats gif,mp4] [--model tiny]

The main window runs `--steps` steps of the bundled model (animation instant), then exports them
with ``MovieExport`` exactly as the ☰ → Export menu does (frames drawn on the GUI thread in small
timer-driven pieces, encoded on a Python thread). A heartbeat QTimer (1 ms) records when the event
loop gets to run; a *gap* is the time between two heartbeats: what a user's click or a repaint
would wait at worst. Printed per format: median / p99 / max gap during the export, the same
with the window idle (the floor), the GUI thread's cost per piece (median / p99), frames, wall
time, file size.

Goal: the window keeps answering — p99 gap well under 100 ms, no gap over 250 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1]))  # benchmarks/, where the shared _load.py is
from _load import LoadWatch  # noqa: E402

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q / 100 * (len(s) - 1))))] if s else float("nan")


class Heartbeat:
    def __init__(self) -> None:
        from PySide6.QtCore import QTimer

        self.stamps: list[float] = []
        self.timer = QTimer()
        self.timer.setInterval(1)
        self.timer.timeout.connect(lambda: self.stamps.append(time.perf_counter()))

    def gaps(self) -> list[float]:
        return [(b - a) * 1000.0 for a, b in zip(self.stamps, self.stamps[1:], strict=False)]


def run(args) -> None:
    from PySide6.QtCore import QCoreApplication

    from kvsim.ui.app import make_app
    from kvsim.ui.export.cli import SPEED_MS, parse_size
    from kvsim.ui.export.movie import MovieExport, MovieSpec
    from kvsim.ui.shell.window import MainWindow

    app = make_app()
    w = MainWindow(model=args.model, prompt="Once upon a time", persist=False)
    w.animator.set_speed("instant")
    w.resize(1280, 720)
    w.show()
    assert w.controller.wait_ready(120), w.controller.last_error
    assert w.controller.run_steps(args.steps, timeout_s=600), w.controller.last_error
    for _ in range(20):
        QCoreApplication.processEvents()
    size = parse_size(args.size)

    hb = Heartbeat()
    hb.timer.start()
    t_end = time.perf_counter() + 2.0
    while time.perf_counter() < t_end:
        app.processEvents()
        time.sleep(0.0005)
    hb.timer.stop()
    idle = hb.gaps()
    print(
        f"idle window: heartbeat gap median {statistics.median(idle):.1f} ms, p99 {pct(idle, 99):.1f} ms, "
        f"max {max(idle):.1f} ms ({len(idle)} gaps)"
    )
    print(f"{args.steps} steps of {args.model}, window 1280x720, frames {args.size}, {args.fps:g} fps, speed {args.speed}")
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in args.formats.split(","):
            spec = MovieSpec(
                path=Path(tmp) / f"run.{fmt}",
                first=0,
                last=w.session.n_steps - 1,
                size=size,
                fps=args.fps,
                step_ms=SPEED_MS[args.speed],
            )
            hb = Heartbeat()
            export = MovieExport(w, spec)
            t0 = time.perf_counter()
            hb.timer.start()
            export.start()
            while not export.result:
                app.processEvents()
                time.sleep(0.0005)
            hb.timer.stop()
            wall = time.perf_counter() - t0
            export.encoder.join(30)
            gaps, ticks = hb.gaps(), export.tick_ms
            mb = spec.path.stat().st_size / 1e6 if spec.path.exists() else float("nan")
            print(
                f"{fmt.upper()}: {spec.n_frames} frames in {wall:.1f} s ({spec.n_frames / wall:.1f} frames/s), "
                f"{mb:.2f} MB, {spec.n_frames / spec.fps:.1f} s long — GUI gap median {statistics.median(gaps):.1f} ms, "
                f"p99 {pct(gaps, 99):.1f} ms, max {max(gaps):.1f} ms; GUI piece median {statistics.median(ticks):.1f} ms, "
                f"p99 {pct(ticks, 99):.1f} ms ({export.result if export.result.startswith('error') else 'ok'})"
            )
    w.shutdown()
    w.close()


def main() -> None:
    LoadWatch()  # the machine's load at start and end, printed beside the figures (benchmarks/_load.py)
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="tiny")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--size", default="1280x720")
    p.add_argument("--fps", type=float, default=15.0)
    p.add_argument("--speed", default="normal", choices=["slow", "normal", "fast", "instant"])
    p.add_argument("--formats", default="gif,mp4")
    run(p.parse_args())


if __name__ == "__main__":
    main()
