"""The app's lane comparisons on a busy machine (issue 31), as figures for docs/clocks.md.

Runs the bundled model as the app runs it (the Simulator with the app's repeats, the lanes in lockstep in
an order that rotates each step) while ``--busy`` processes spin a core each (``python3 -c "while True:
pass"``, started and stopped by this script), and compares the lanes' times with the functions the app's
costs panel calls (``kvsim.engine.summary.decode_compared`` for ITL, ``prefill_compared`` for TTFT, through
``Session.itl_compared`` / ``ttft_compared``). For every comparison it prints the ratio, its interval and
the verdict, and counts:

* **verdicts**: how many read faster, slower, within noise;
* **naive**: how many times the plain means (the numbers in the table) put the lanes the other way round
  from what the cache should do (the cached lane's mean ITL above the uncached one's) — what a reader of
  bare numbers would have called "slower";
* **same work apart**: lanes that did the same counted work (kv and window:64 on a short run; every
  lane's prefill here) whose clocks alone would have read faster/slower — the app says within noise;
* **contradictions**: verdicts of faster/slower whose interval includes 1, or for lanes that did the same
  work. The app's rule makes this 0 by construction; the script checks it on real clocks.

    python benchmarks/decode/busy_clocks.py --runs 12 --steps 20 --busy 1
    python benchmarks/decode/busy_clocks.py --runs 6 --steps 120 --busy 1
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1]))  # benchmarks/, where the shared _load.py is
from _load import LoadWatch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's kvsim

LANES = "none,kv,window:64"  # window:64 holds a short run whole: the very same work as kv at every step
PAIRS = ((0, 1), (0, 2), (1, 2))  # the app compares with the first lane; kv vs window shows same-work lanes


def run_once(loaded, prompt: str, steps: int, repeats: int):
    from kvsim.caches import parse_lanes
    from kvsim.engine.simulate import Simulator

    tok = loaded.tokenizer
    ids = tok.encode(tok.format_prompt(prompt, chat=True))
    sim = Simulator(loaded.model, tok, ids, parse_lanes(LANES), repeats=repeats)
    return list(sim.run(steps, stop_at_eos=False))


def compare(records, a: int, b: int):
    """The comparisons the app's costs panel makes (kvsim.engine.summary), lane ``b`` against lane ``a``."""
    from kvsim.engine.summary import decode_compared, prefill_compared

    decode = records[1:]
    itl = decode_compared([r.lanes[a] for r in decode], [r.lanes[b] for r in decode])
    ttft = prefill_compared(records[0].lanes[a], records[0].lanes[b])
    mean = lambda i: sum(r.lanes[i].wall_ms for r in decode) / len(decode)  # noqa: E731 - the table's ITL
    return itl, ttft, mean(a), mean(b)


def contradicts(c) -> bool:
    """A verdict of faster/slower that its own interval (or the same work) does not support."""
    return c.verdict != "within noise" and (c.same_work or c.low <= 1.0 <= c.high or c.coverage < c.confidence)


def clocks_alone(c) -> str:
    """The verdict the clocks alone give (the interval's, without the same-work rule)."""
    return dataclasses.replace(c, same_work=False).verdict


def main() -> int:
    watch = LoadWatch()  # the machine's load at start and end, printed beside the figures (benchmarks/_load.py)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="tiny")
    ap.add_argument("--prompt", default="It is a truth universally acknowledged, that")
    ap.add_argument("--runs", type=int, default=12)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3, help="each step's forward timed this many times (the app: 3)")
    ap.add_argument("--busy", type=int, default=1, help="CPU-saturating processes beside the runs")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    from kvsim.models.loading import load_model, set_threads

    set_threads(args.threads)
    loaded = load_model(args.model)
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    try:
        verdicts: Counter[str] = Counter()
        naive_slower = contradictions = same_but_apart = 0
        names = LANES.split(",")
        print(
            f"{args.model}, lanes {LANES}, {args.runs} runs × {args.steps} steps, repeats {args.repeats}, "
            f"{args.threads} thread(s), {args.busy} busy process(es) beside; load {os.getloadavg()[0]:.2f} at start"
        )
        for run in range(args.runs):
            records = run_once(loaded, args.prompt, args.steps, args.repeats)
            for a, b in PAIRS:
                itl, ttft, mean_a, mean_b = compare(records, a, b)
                for kind, c in (("ITL", itl), ("TTFT", ttft)):
                    verdicts[f"{kind} {c.verdict}"] += 1
                    contradictions += contradicts(c)
                    if c.same_work and clocks_alone(c) != "within noise":
                        same_but_apart += 1
                if (a, b) == (0, 1) and mean_b > mean_a:
                    naive_slower += 1
                same = " (same work)" if itl.same_work else ""
                print(
                    f"run {run + 1:>2} {names[b]:>9} vs {names[a]:<4} ITL {mean_b:6.2f} vs {mean_a:6.2f} ms: "
                    f"{itl.describe()}{same} | TTFT {ttft.ratio:.3g}×: {ttft.verdict}"
                    + (" (same work)" if ttft.same_work else "")
                )
        total = sum(verdicts.values())
        print()
        print(f"{total} comparisons: " + ", ".join(f"{k}: {v}" for k, v in sorted(verdicts.items())))
        print(f"the cached lane's mean ITL above the uncached one's (bare numbers read 'slower'): {naive_slower} of {args.runs}")
        print(f"lanes of the same work whose clocks alone would read faster/slower (shown within noise): {same_but_apart}")
        print(f"verdicts of faster/slower inside their own spread or between lanes of the same work: {contradictions}")
        watch.now()
        return 1 if contradictions else 0
    finally:
        for p in spinners:
            p.kill()
            p.wait()


if __name__ == "__main__":
    sys.exit(main())
