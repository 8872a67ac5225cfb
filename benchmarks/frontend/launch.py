"""Launch → first paint → READY of the desktop app, measured from outside the process.

    python benchmarks/frontend/launch.py [--runs 5] [--model tiny] [--xvfb] [--threads N]

Spawns ``python -m kvsim`` with ``KVSIM_LAUNCH_TRACE=exit`` (the app prints one
``kvsim-launch <stage> <ms>`` line per stage and quits when the window is ready) under
``QT_QPA_PLATFORM=offscreen`` (or ``xvfb-run`` with ``--xvfb``), stamps each line on arrival with this
process's clock (so Python's start-up and every import count), and prints the median of each stage
over the runs, with the machine's load average before and after. ``splash-shown`` = the first kvsim window
on screen (painted before torch is imported). Settings go to a temporary folder (never the user's).
``ready`` = the first run is shown and Step works (the model is loaded and the prefill can start).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1]))  # benchmarks/, where the shared _load.py is
from _load import LoadWatch  # noqa: E402


def one_launch(model: str | None, xvfb: bool, threads: int | None, extra_env: dict[str, str]) -> dict[str, float]:
    cmd = [sys.executable, "-m", "kvsim"]
    if model:
        cmd += ["--model", model]
    if threads:
        cmd += ["--threads", str(threads)]
    env = dict(os.environ)
    tmp = tempfile.mkdtemp(prefix="kvsim-launch-")
    env.update({"KVSIM_LAUNCH_TRACE": "exit", "XDG_CONFIG_HOME": tmp, **extra_env})
    if xvfb:
        env.pop("QT_QPA_PLATFORM", None)
        cmd = ["xvfb-run", "-a", "-s", "-screen 0 1920x1080x24", *cmd]
    else:
        env["QT_QPA_PLATFORM"] = "offscreen"
    stages: dict[str, float] = {}
    t0 = time.perf_counter()
    try:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert proc.stdout is not None
        for line in proc.stdout:
            parts = line.split()
            if len(parts) in (3, 4) and parts[0] == "kvsim-launch":
                stages[parts[1]] = (time.perf_counter() - t0) * 1000.0
                if len(parts) == 4:  # the app's own CPU time by then (all threads): what a quiet machine would take
                    stages["cpu:" + parts[1]] = float(parts[3])
        proc.wait(timeout=120)
        stages["exit"] = (time.perf_counter() - t0) * 1000.0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return stages


def main() -> int:
    LoadWatch()  # the machine's load at start and end, printed beside the figures (benchmarks/_load.py)
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--model", default=None)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--xvfb", action="store_true", help="a real X server (xvfb-run) instead of the offscreen platform")
    p.add_argument("--env", action="append", default=[], help="NAME=VALUE for the app (e.g. a variant switch)")
    args = p.parse_args()
    extra = dict(kv.split("=", 1) for kv in args.env)
    load = os.getloadavg()
    runs = [one_launch(args.model, args.xvfb, args.threads, extra) for _ in range(args.runs + 1)][1:]  # first: disk cache
    after = os.getloadavg()
    print(
        f"load average (1/5/15 min) before {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, after {after[0]:.2f} {after[1]:.2f} "
        f"{after[2]:.2f}, on {os.cpu_count()} cores"
    )
    # since issue 24 the engine is imported after the window's first paint (on a thread); older builds print
    # engine-preloaded before window-built: the order below is a listing order only, the times are each stage's
    order = ["main", "qapplication", "splash-shown", "window-built", "first-paint", "engine-preloaded", "engine-imported"]
    order += ["model-loaded"]
    order += ["ready", "exit"]
    print(f"{len(runs)} launches of `python -m kvsim` ({'Xvfb' if args.xvfb else 'offscreen'}), ms from spawn:")
    for stage in order:
        values = [r[stage] for r in runs if stage in r]
        if values:
            cpu = [r["cpu:" + stage] for r in runs if "cpu:" + stage in r]
            spent = f"   CPU by then {statistics.median(cpu):7.0f}" if cpu else ""
            print(
                f"  {stage:16s} median {statistics.median(values):7.0f}   min {min(values):7.0f}   max {max(values):7.0f}{spent}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
