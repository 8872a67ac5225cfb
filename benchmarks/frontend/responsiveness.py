"""The timings the tests no longer assert (a wall-clock bound in a test is a benchmark in disguise).

    QT_QPA_PLATFORM=offscreen python benchmarks/frontend/responsiveness.py [--repeat 3]

In the real main window (1280x720, offscreen), each measured ``--repeat`` times, heartbeat = a 1 ms
QTimer whose longest gap is the longest time the GUI thread did not answer:

* opening a saved run of 16 lanes (``open_run`` ms, the lane area's rebuild ms, the longest gap until
  every lazily built panel is there) — was ``test_sixteen_lanes_open_without_freezing_the_window``'s
  ``longest_ms < 1000`` and ``last_rebuild_ms < 50``;
* ten Home presses at once (longest gap) — was ``longest_ms < 2000`` in ``test_ten_quick_home_presses``.

Printed with the machine's load (``uptime``); figures go in docs/benchmarks-ui.md. The tests keep
bounds on work instead (panels built during the open, runs started, actions done).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1]))  # benchmarks/, where the shared _load.py is
from _load import LoadWatch  # noqa: E402

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def main() -> int:
    LoadWatch()  # the machine's load at start and end, printed beside the figures (benchmarks/_load.py)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    import monkey as mk
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    from kvsim.ui.app import make_app
    from kvsim.ui.shell.window import MainWindow

    print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    app = make_app()
    window = MainWindow(model=mk.MODEL, prompt=mk.PROMPT, persist=False, fallback=False)
    window.resize(1280, 720)
    window.show()
    c = window.controller
    assert c.wait_ready(300), c.last_error
    opens, rebuilds, gaps, homes = [], [], [], []
    with tempfile.TemporaryDirectory(prefix="kvsim-bench-") as tmp:
        lanes16 = mk.save_trace(Path(tmp) / "lanes16.kvsim", mk.LANES_16)
        both = mk.save_trace(Path(tmp) / "both.kvsim", "uncached,cached")
        for _ in range(args.repeat):
            assert c.open_run(str(both)), c.last_error
            window.lanes.settle()
            mk.pump(100)
            hb = mk.Heartbeat()
            hb.start()
            t0 = time.perf_counter()
            assert c.open_run(str(lanes16)), c.last_error
            opens.append((time.perf_counter() - t0) * 1000)
            rebuilds.append(window.lanes.last_rebuild_ms)
            deadline = time.monotonic() + 30
            while window.lanes.pending and time.monotonic() < deadline:
                mk.pump(10)
            mk.pump(100)
            hb.stop()
            gaps.append(hb.longest_ms)
        for _ in range(args.repeat):
            c.reset()
            assert c.wait_ready(60)
            hb = mk.Heartbeat()
            hb.start()
            for _ in range(10):
                QTest.keyClick(window.focusWidget() or window, Qt.Key_Home)
            assert c.wait_ready(60)
            mk.pump(300)
            hb.stop()
            homes.append(hb.longest_ms)
    window.shutdown()
    window.close()
    app.processEvents()

    def row(name: str, values: list[float]) -> str:
        return f"{name:<44} median {statistics.median(values):8.1f} ms   max {max(values):8.1f} ms   ({len(values)} runs)"

    print(row("16-lane open: open_run", opens))
    print(row("16-lane open: lane area rebuild", rebuilds))
    print(row("16-lane open: longest GUI gap until built", gaps))
    print(row("ten Home presses: longest GUI gap", homes))
    print(f"load after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
