"""How long switching the colour theme blocks the window, with 12 lanes shown and every extra dock open.

    QT_QPA_PLATFORM=offscreen python benchmarks/frontend/theme_switch.py [--repeat 4]

The main window (1920x1080, offscreen) opens a saved run of 12 lanes, shows them all and every extra
dock, then switches dark ↔ light ``--repeat`` times; each ``theme.set_theme`` call is timed (it runs on
the GUI thread: the window answers nothing meanwhile), split into the app's style (palette + style
sheet: ``theme.apply``) and the views' listeners. Printed with the machine's load (``uptime``).
The goal (issue 19) is ≤ 100 ms; see docs/benchmarks-ui.md for what was measured.
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
    ap.add_argument("--repeat", type=int, default=4)
    args = ap.parse_args()
    import monkey as mk

    from kvsim.ui import theme
    from kvsim.ui.app import make_app
    from kvsim.ui.shell.window import MainWindow

    print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    app = make_app()
    window = MainWindow(model=mk.MODEL, prompt=mk.PROMPT, persist=False, fallback=False)
    window.resize(1920, 1080)
    window.show()
    assert window.controller.wait_ready(300), window.controller.last_error
    with tempfile.TemporaryDirectory(prefix="kvsim-bench-") as tmp:
        run = mk.save_trace(Path(tmp) / "lanes12.kvsim", ",".join(mk.LANES_16.split(",")[:12]))
        assert window.controller.open_run(str(run)), window.controller.last_error
    for action in window.lanes.menu.actions():
        if not action.isChecked():
            action.trigger()
    for dock in window.extra_docks.values():
        dock.setVisible(True)
    mk.pump(2000)
    window.lanes.settle()
    mk.pump(500)
    total, styled = [], []
    original = theme.apply

    def timed_apply(a) -> None:
        t = time.perf_counter()
        original(a)
        styled.append((time.perf_counter() - t) * 1000)

    theme.apply = timed_apply
    for i in range(args.repeat):
        name = "light" if i % 2 == 0 else "dark"
        t0 = time.perf_counter()
        theme.set_theme(app, name)
        total.append((time.perf_counter() - t0) * 1000)
        mk.pump(300)
    theme.apply = original
    listeners = [t - s for t, s in zip(total, styled, strict=True)]
    print(f"{len(window.lanes.shown())} lanes shown, docks: {', '.join(window.extra_docks)}")
    for label, values in (("set_theme, whole", total), ("  palette + style sheet", styled), ("  views' listeners", listeners)):
        print(f"{label:<26} median {statistics.median(values):7.1f} ms   max {max(values):7.1f} ms")
    print(f"load after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    window.shutdown()
    window.close()
    app.processEvents()
    return 0


if __name__ == "__main__":
    sys.exit(main())
