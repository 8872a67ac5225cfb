"""Time per step, before and after the honest-clock change (issue 10), as figures for docs/clocks.md.

"Before": no warm-up, each step's forward timed once (what kvsim recorded before the change).
"After": each lane's code path warmed up first, each step's forward timed ``--repeats`` times, the
median recorded with its min/max spread. Both runs are the same model, prompt and steps, measured
back to back in one process; the plots show both lanes' time per step (the spread as error bars).

    python benchmarks/decode/clocks.py --model tiny --steps 200 --out docs/screenshots
    python benchmarks/decode/clocks.py --model smollm2-135m --steps 60 --out docs/screenshots

Prints the TTFT and the median step time early/late for each lane and run, and writes
``clocks-<model>.png`` (offscreen pyqtgraph).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1]))  # benchmarks/, where the shared _load.py is
from _load import LoadWatch  # noqa: E402

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def measure(loaded, prompt: str, steps: int, warmup: bool, repeats: int) -> dict[str, dict[str, list[float]]]:
    from kvsim.caches import parse_lanes
    from kvsim.engine.simulate import Simulator

    tok = loaded.tokenizer
    ids = tok.encode(tok.format_prompt(prompt, chat=True))
    sim = Simulator(loaded.model, tok, ids, parse_lanes("uncached,cached"), warmup=warmup, repeats=repeats)
    sim.keep_records = False
    out: dict[str, dict[str, list[float]]] = {}
    for record in sim.run(steps, stop_at_eos=False):
        for lane in record.lanes:
            series = out.setdefault(lane.name, {"ms": [], "lo": [], "hi": []})
            series["ms"].append(lane.wall_ms)
            series["lo"].append(lane.wall_ms_min if lane.wall_ms_min is not None else lane.wall_ms)
            series["hi"].append(lane.wall_ms_max if lane.wall_ms_max is not None else lane.wall_ms)
    return out


def summary_line(label: str, runs: dict[str, dict[str, list[float]]]) -> str:
    parts = []
    for name, s in runs.items():
        ms = s["ms"]
        k = max(1, min(20, (len(ms) - 1) // 4))
        early, late = statistics.median(ms[1 : 1 + k]), statistics.median(ms[-k:])
        parts.append(f"{name}: TTFT {ms[0]:.2f} ms, steps 1–{k} {early:.2f} ms, last {k} {late:.2f} ms")
    return f"{label:>7}: " + " · ".join(parts)


def plot(before: dict, after: dict, title: str, path: Path) -> None:
    import numpy as np
    import pyqtgraph as pg
    import pyqtgraph.exporters  # noqa: F401 - registers ImageExporter
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication(sys.argv)
    pg.setConfigOptions(antialias=True, background="w", foreground="k")
    win = pg.GraphicsLayoutWidget()
    win.resize(1400, 520)
    win.show()  # laid out at its size before the export
    top = max(max(s["hi"]) for runs in (before, after) for s in runs.values()) * 1.05  # one scale for both
    colors = {"uncached": "#E69F00", "cached": "#0072B2"}
    for col, (label, runs) in enumerate((("before: cold, timed once", before), ("after: warmed up, median of repeats", after))):
        p = win.addPlot(row=0, col=col, title=f"{title} — {label}")
        p.addLegend(offset=(10, 10))
        p.setLabel("bottom", "step (0 = prefill)")
        p.setLabel("left", "time per step", units="ms")
        p.showGrid(x=True, y=True, alpha=0.25)
        for name, s in runs.items():
            x = np.arange(len(s["ms"]), dtype=float)
            y = np.asarray(s["ms"])
            p.plot(x, y, pen=pg.mkPen(colors.get(name, "#555"), width=2), name=name)
            above, below = np.asarray(s["hi"]) - y, y - np.asarray(s["lo"])
            if (above > 0).any() or (below > 0).any():
                p.addItem(pg.ErrorBarItem(x=x, y=y, top=above, bottom=below, beam=0.3, pen=pg.mkPen(colors.get(name, "#555"))))
        p.setYRange(0, top)
    for _ in range(5):
        app.processEvents()
    pg.exporters.ImageExporter(win.scene()).export(str(path))


def main() -> int:
    LoadWatch()  # the machine's load at start and end, printed beside the figures (benchmarks/_load.py)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="tiny")
    ap.add_argument("--prompt", default="It is a truth universally acknowledged, that")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default="docs/screenshots")
    args = ap.parse_args()
    from kvsim.models.loading import load_model, set_threads

    set_threads(args.threads)
    loaded = load_model(args.model)
    before = measure(loaded, args.prompt, args.steps, warmup=False, repeats=1)
    after = measure(loaded, args.prompt, args.steps, warmup=True, repeats=args.repeats)
    print(f"{args.model}, {args.steps} steps, {args.threads} thread(s), repeats {args.repeats}")
    print(summary_line("before", before))
    print(summary_line("after", after))
    out = Path(args.out) / f"clocks-{args.model.replace(':', '_').replace('/', '_')}.png"
    plot(before, after, args.model, out)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
