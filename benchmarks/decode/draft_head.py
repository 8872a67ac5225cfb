"""The learned draft head against early exit and prompt lookup, on the same free-text prompts (issue 34;
figures in docs/weights-and-speculation.md, "A learned draft head").

Each prompt runs ``kv`` beside ``spec:K:head``, ``spec:K:early:N`` (every N the model allows but its last)
and ``spec:K:lookup`` in one greedy run; per lane: drafted and accepted tokens, the acceptance rate, tokens
per target forward (steps ÷ forwards), the draft's time per check and whether its tokens equal the kv
lane's. Acceptance and forwards are the same on any machine (greedy, fp32); the times are this machine's.

    python benchmarks/decode/draft_head.py                  # tiny, k = 4, 48 steps
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import torch

sys.path.append(str(Path(__file__).resolve().parents[1]))  # benchmarks/, where the shared _load.py is
from _load import LoadWatch  # noqa: E402

# free text: nothing to copy from the prompt (the prompts of tiny's card and the app's examples)
FREE_TEXTS = {
    "once": "Once upon a time, in a small village by the sea, there lived",
    "sister": "Elizabeth looked at her sister and",
    "dear": '"My dear," said Mrs.',
    "cache-pt": "O cache de chaves e valores",
    "aldeia-pt": "Era uma vez, numa pequena aldeia junto ao mar,",
    "leu-pt": "A cache guarda o que o modelo já leu, por isso",
}


def main() -> None:
    LoadWatch()  # the machine's load at start and end, printed beside the figures (benchmarks/_load.py)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="tiny")
    ap.add_argument("--steps", type=int, default=48)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    from kvsim.caches import parse_lanes
    from kvsim.engine.simulate import Simulator, summarize
    from kvsim.models.loading import load_model, set_threads

    set_threads(args.threads)
    t0 = time.time()
    loaded = load_model(args.model)
    tok = loaded.tokenizer
    n_layers = loaded.model.cfg.n_layers
    sources = ["head"] + [f"early:{n}" for n in range(1, n_layers)] + ["lookup"]
    lanes = parse_lanes(",".join(["kv"] + [f"spec:{args.k}:{s}" for s in sources]))
    print(f"torch {torch.__version__}, {args.threads} thread(s); {args.model}, k = {args.k}, {args.steps} steps, greedy")
    load = os.getloadavg()
    print(f"load average {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f} on {os.cpu_count()} CPUs")
    totals: dict[str, list[int]] = {}
    header = (
        f"{'prompt':<10} {'lane':<16} {'accepted/drafted':>17} {'rate':>6} {'tok/fwd':>8} {'fwds':>5} {'draft ms':>9} {'same':>5}"
    )
    print(header)
    for name, text in FREE_TEXTS.items():
        sim = Simulator(loaded.model, tok, tok.encode(text), lanes, model_id=loaded.model_id)
        records = list(sim.run(args.steps, stop_at_eos=False))
        summary = summarize(sim.trace)
        for lane in sim.lanes[1:]:
            s = summary["lanes"][lane.name]
            checks = [r.lane(lane.name) for r in records if r.lane(lane.name).forwards]
            draft_ms = sum(c.draft_ms for c in checks) / max(1, len(checks))
            rate = "-" if s["acceptance_rate"] is None else f"{s['acceptance_rate']:.0%}"
            row = totals.setdefault(lane.name, [0, 0, 0, 0])
            row[0] += s["accepted_total"]
            row[1] += s["drafted_total"]
            row[2] += s["target_forwards"]
            row[3] += len(records)
            print(
                f"{name:<10} {lane.name:<16} {s['accepted_total']:>8}/{s['drafted_total']:<8} {rate:>6} "
                f"{s['tokens_per_forward']:>8.2f} {s['target_forwards']:>5} {draft_ms:>9.2f} {str(s['tokens_identical']):>5}"
            )
    print(f"\nall {len(FREE_TEXTS)} prompts ({len(FREE_TEXTS) * args.steps} tokens per lane):")
    for lane_name, (accepted, drafted, forwards, steps) in totals.items():
        print(
            f"{lane_name:<16} {accepted:>5}/{drafted:<5} {accepted / max(1, drafted):>6.1%} "
            f"{steps / forwards:>6.2f} tokens/forward"
        )
    print(f"\n({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
