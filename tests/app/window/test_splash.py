"""A window at once: `kvsim` paints its splash before torch (and pyqtgraph) are imported, then the main
window — painted before torch is imported too (issue 24: first paint ≤ 1 s) — and only then imports the
engine, on a Python thread of its own through Python's own import (shiboken's hook put back after), and
the splash closes when the window is up. Stage order only: no clock is asserted (benchmarks/frontend/launch.py
measures the times)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from helpers import ROOT

CODE = """
import builtins, sys, threading
from kvsim.ui import app

from kvsim.ui.startup import splash as splash_module

show = splash_module.show_splash
preload = app._preload

def watched_show(qapp):
    splash = show(qapp)
    print("splash", splash.isVisible(), splash.painted, "torch" in sys.modules, "pyqtgraph" in sys.modules, flush=True)
    return splash

def watched_preload():
    from PySide6.QtWidgets import QApplication
    splash = [w for w in QApplication.topLevelWidgets() if w.objectName() == "kvsim-splash" and w.isVisible()]
    thread = threading.current_thread()
    plain = builtins.__import__ is app._PLAIN_IMPORT
    sys.stdout.write(f"preload {len(splash)} {thread is threading.main_thread()} {thread.name} {plain}\\n")  # one write
    sys.stdout.flush()
    preload()

from kvsim.ui.startup import engine_import
start = engine_import.start

def watched_start(work, plain, after=None):
    from PySide6.QtWidgets import QApplication
    painted = [w for w in QApplication.topLevelWidgets() if hasattr(w, "first_painted") and w.isVisible() and w._first_paint]
    print("start", len(painted), "torch" in sys.modules, flush=True)
    start(work, plain, after)

engine_import.start = watched_start
splash_module.show_splash = watched_show
app._preload = watched_preload
code = app.main(model="random:layers=1,heads=2,kv_heads=1,dim=32")
from PySide6.QtWidgets import QApplication
left = [w for w in QApplication.topLevelWidgets() if w.objectName() == "kvsim-splash" and w.isVisible()]
print("after", len(left), "shiboken-hook-back", builtins.__import__ is not app._PLAIN_IMPORT, flush=True)
sys.exit(code)
"""


def test_the_splash_is_painted_before_torch_is_imported(tmp_path) -> None:
    env = {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        "KVSIM_LAUNCH_TRACE": "exit",
        "XDG_CONFIG_HOME": str(tmp_path),
        "PYTHONPATH": str(ROOT),
    }
    done = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    # the splash visible and painted before torch and pyqtgraph are imported; the main window painted before
    # torch is imported; the engine imported after that (the splash gone), on its own thread, through
    # Python's own import
    assert "splash True True False False" in lines, done.stdout
    assert "start 1 False" in lines, done.stdout
    assert "preload 0 False kvsim-engine-import True" in done.stdout, done.stdout
    stages = re.findall(r"kvsim-launch (\S+) ", done.stdout)
    order = ["main", "qapplication", "splash-shown", "window-built", "first-paint", "engine-preloaded", "ready"]
    assert [s for s in stages if s in order] == order, stages
    assert "after 0 shiboken-hook-back True" in lines, done.stdout  # the splash closed; shiboken's hook restored
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
