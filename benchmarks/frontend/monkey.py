"""The GUI monkey, as long as you like: seeded random valid actions on the real main window, with
a heartbeat measuring how long the GUI thread stalls, and every uncaught exception counted.

    QT_QPA_PLATFORM=offscreen python benchmarks/frontend/monkey.py --seconds 600 --seed 1

Prints progress, then one summary: actions (and how many of each), exceptions (must be 0),
the longest gap between two heartbeat ticks (5 ms timer on the GUI thread) and the action it
followed, p99 / p99.9 / median gaps, and whether the app still runs a live run afterwards.
The same monkey runs for about a minute in tests/app/window/test_gui_robustness.py. Figures: docs/robustness.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1]))  # benchmarks/, where the shared _load.py is
from _load import LoadWatch  # noqa: E402

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))


def main() -> int:
    LoadWatch()  # the machine's load at start and end, printed beside the figures (benchmarks/_load.py)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--report-every", type=float, default=30.0, help="progress line every N seconds (0: none)")
    ap.add_argument("--json", action="store_true", help="the summary as one JSON line")
    args = ap.parse_args()

    import monkey as mk

    from kvsim.ui.app import make_app

    app = make_app()  # noqa: F841 - kept alive; the app's own handlers first (banner + one line), then a recorder on top
    errors: list[str] = []
    app_hook = sys.excepthook

    def hook(kind, value, tb):
        import traceback

        errors.append(f"{kind.__name__}: {value}\n{''.join(traceback.format_tb(tb))}")
        app_hook(kind, value, tb)

    sys.excepthook = hook

    from kvsim.ui.shell.window import MainWindow

    with tempfile.TemporaryDirectory(prefix="kvsim-monkey-") as tmp:
        folder = Path(tmp)
        traces = mk.make_traces(folder / "traces")
        w = MainWindow(model=mk.MODEL, prompt=mk.PROMPT, persist=False)
        w.resize(1280, 720)
        w.show()
        if not w.controller.wait_ready(120):
            print(f"error: the window did not get ready: {w.controller.last_error}", file=sys.stderr)
            return 2
        hb = mk.Heartbeat()
        monkey = mk.Monkey(w, seed=args.seed, folder=folder / "saved", extra_traces=traces, heartbeat=hb)
        hb.start()
        t0 = time.monotonic()
        n = monkey.run(args.seconds, report_every=args.report_every)
        elapsed = time.monotonic() - t0
        hb.stop()
        works = monkey.still_works()
        summary = {
            "seconds": round(elapsed, 1),
            "seed": args.seed,
            "actions": n,
            "exceptions": len(errors) + len(monkey.errors),
            **hb.summary(),
            "still_works": works,
            "counts": dict(sorted(monkey.counts.items())),
        }
        w.shutdown()
        w.close()
    for e in (errors + monkey.errors)[:5]:
        print(e, file=sys.stderr)
    if args.json:
        print(json.dumps(summary))
    else:
        for k, v in summary.items():
            print(f"{k:>16}: {v}")
    return 0 if summary["exceptions"] == 0 and works else 1


if __name__ == "__main__":
    sys.exit(main())
