"""A fact near the start of a long prompt, a question about it at the end: which evicting lanes keep it?
For docs/eviction.md.

The prompt (chat-formatted): one sentence with a fact ("The code for the blue door is 4817."), then a
held-out passage of Austen long enough to push it out of every window, then the question. Every
evicting lane at the same budget of rows per layer (64 and 128 by default), beside ``kv``:

* **answer**: each lane generating on its own (free-running, greedy): does its text contain the fact?
* **first divergent step**: in lockstep on ``kv``'s greedy tokens, the first decode step whose own
  greedy choice differs from ``kv``'s (``-`` = never);
* **perplexity** of ``kv``'s continuation under the lane (teacher-forced, decode steps);
* **bytes** the lane holds at the end, and its median **time per decode step** (measured, this machine).

    python benchmarks/long_prompt.py --model smollm2-135m --budgets 64,128 --steps 24
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
from pathlib import Path

from _load import LoadWatch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FACT = "The code for the blue door is 4817."
QUESTION = "What is the code for the blue door?"
ANSWER = "4817"


def lanes_for(budget: int) -> list[str]:
    half, obs = budget // 2, max(1, budget // 4)
    return [
        f"window:{budget}",
        f"sink:4+window:{budget - 4}",
        f"stream:4+window:{budget - 4}",
        f"h2o:{half}:r{budget - half}",
        f"tova:{budget}",
        f"snapkv:{budget}:w{obs}",
    ]


def main() -> int:
    LoadWatch()  # the machine's load at start and end, printed beside the figures (benchmarks/_load.py)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--budgets", default="64,128")
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--filler", type=int, default=300, help="tokens of held-out text between the fact and the question")
    args = ap.parse_args()

    from benchmarks.stream_positions import held_out_text
    from kvsim.caches import parse_lanes
    from kvsim.engine.simulate import Simulator
    from kvsim.models.loading import load_model

    loaded = load_model(args.model)
    tok = loaded.tokenizer
    words, filler = held_out_text().split(" "), ""
    for word in words:
        if len(tok.encode(filler + " " + word)) > args.filler:
            break
        filler = (filler + " " + word).strip()
    text = f"{FACT}\n\n{filler}\n\n{QUESTION}"
    ids = tok.encode(tok.format_prompt(text, chat=True))
    specs = ["kv"] + [s for b in args.budgets.split(",") for s in lanes_for(int(b))]
    print(f"model {args.model}: prompt {len(ids)} tokens (the fact near its start), {args.steps} steps")
    print(f"lanes: {', '.join(specs)}")

    free = Simulator(loaded.model, tok, ids, parse_lanes(",".join(specs)), free_running=True)
    free.keep_records = False
    for _ in free.run(args.steps, stop_at_eos=False):
        pass
    answers = {spec: tok.decode(own[len(ids) :]) for spec, own in zip(specs, free.lane_tokens, strict=True)}

    lock = Simulator(loaded.model, tok, ids, parse_lanes(",".join(specs)))
    records = list(lock.run(args.steps, stop_at_eos=False))
    print()
    print("| lane | answer has 4817 | first divergent step | perplexity of kv's text | bytes held | ms / decode step |")
    print("|---|---|---|---|---|---|")
    for spec in specs:
        steps = [r.lane(spec) for r in records]
        diverge = next((i for i, (r, s) in enumerate(zip(records, steps, strict=True)) if s.token_id != r.token_id), None)
        ppl = math.exp(-statistics.fmean(s.ref_logprob for s in steps[1:]))
        ms = statistics.median(s.wall_ms for s in steps[1:])
        shown = answers[spec].strip().replace("\n", " ").replace("|", "/")[:48]
        print(
            f"| `{spec}` | {'yes' if ANSWER in answers[spec] else 'no'} ({shown!r}) | {'-' if diverge is None else diverge} "
            f"| {ppl:.3f} | {steps[-1].cache_bytes:,} | {ms:.1f} |"
        )
    load = os.getloadavg()
    print(f"\nload average {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
