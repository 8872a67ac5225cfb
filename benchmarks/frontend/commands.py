"""How fast the commands that need no model answer: ``kvsim --help``, ``--version``, ``memory …``,
``roofline --preset …``, ``models list``, each spawned as a new process (Python's start-up counts).

    python benchmarks/frontend/commands.py [--runs 5]

Prints the median (min–max) wall time of each over ``--runs`` runs (after one unmeasured warm-up run
each, for the disk cache) and the machine's load average before and after, from ``os.getloadavg``.
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

COMMANDS = [
    ["--help"],
    ["--version"],
    ["memory", "--preset", "llama-3-8b", "--context", "8192"],
    ["roofline", "--preset", "llama-3-8b", "--gpu", "H100"],
    ["models", "list"],
]


def once(argv: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "kvsim", *argv], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> int:
    LoadWatch()  # the machine's load at start and end, printed beside the figures (benchmarks/_load.py)
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    args = p.parse_args()
    load = os.getloadavg()
    print(f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")
    print("| command | median (s) | min–max (s) |")
    print("|---|---:|---:|")
    for argv in COMMANDS:
        once(argv)
        times = [once(argv) for _ in range(args.runs)]
        print(f"| `kvsim {' '.join(argv)}` | {statistics.median(times):.3f} | {min(times):.3f}–{max(times):.3f} |")
    load = os.getloadavg()
    print(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
