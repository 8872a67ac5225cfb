"""The launch clock: ``launch_mark(stage)`` prints when each launch stage is reached (benchmarks/frontend/launch.py).

A leaf (no Qt at import, nothing of the app): ``app`` and ``window`` both import it. ``T0`` is taken
when this module loads, which ``app`` makes the first thing it does.
"""

from __future__ import annotations

import os
import sys
import time

T0 = time.perf_counter()

# set: print "kvsim-launch <stage> <ms since the app module loaded> <CPU ms of the process>" lines (benchmarks)
LAUNCH_TRACE = "KVSIM_LAUNCH_TRACE"


def launch_mark(stage: str) -> None:
    """One launch-stage line on stdout when ``KVSIM_LAUNCH_TRACE`` is set (benchmarks/frontend/launch.py reads
    them; ``KVSIM_LAUNCH_TRACE=exit`` also quits once the window is ready)."""
    mode = os.environ.get(LAUNCH_TRACE)
    if not mode:
        return
    line = f"kvsim-launch {stage} {(time.perf_counter() - T0) * 1000:.1f} {time.process_time() * 1000:.1f}\n"
    sys.stdout.write(line)  # one write: a line of another thread (the engine import) never splits it
    sys.stdout.flush()
    if stage == "ready" and mode == "exit":
        from PySide6.QtWidgets import QApplication

        for w in QApplication.topLevelWidgets():
            if hasattr(w, "shutdown"):
                w.close()
