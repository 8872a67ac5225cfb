"""Token-level (radix tree) against block-level (hash-chained blocks) prefix reuse on one request list.

    python benchmarks/serving/prefix_tree.py [--model smollm2-135m] [--requests resources/requests/system-prompt.json]
        [--steps 16] [--block-sizes 1,4,16,32] [--capacity TOKENS]

The requests run once through the requests engine (one after another, blocks of 16, prefix caching on)
for their real outputs; then ``kvsim.serving.radix.compare_reuse`` replays the same prompts and outputs
through a radix tree and through the block pool at each block size: per request, the prompt tokens each
would take from the cache instead of computing (the last prompt token is always computed). At B = 16 the
block figures are checked against what the engine itself reused. Counts, not times: no spread to give.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kvsim.models.loading import load_model
from kvsim.serving.radix import compare_reuse
from kvsim.serving.request_lists import encode_requests, load_requests
from kvsim.serving.requests import run_requests

sys.path.append(str(Path(__file__).resolve().parents[1]))  # benchmarks/, where the shared _load.py is
from _load import LoadWatch  # noqa: E402


def main() -> None:
    LoadWatch()  # the machine's load at start and end, printed beside the figures (benchmarks/_load.py)
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--requests", default="resources/requests/system-prompt.json")
    p.add_argument("--steps", type=int, default=16)
    p.add_argument("--block-sizes", default="1,4,16,32")
    p.add_argument("--capacity", type=int, default=None, help="tokens each cache may hold (default: no limit)")
    args = p.parse_args()
    loaded = load_model(args.model)
    inputs = encode_requests(loaded.tokenizer, load_requests(args.requests))
    run = run_requests(loaded.model, loaded.tokenizer, inputs, block_size=16, steps=args.steps, repeats=1, keep_snapshots=False)
    prompts = [r.prompt_ids for r in run.requests]
    outputs = [r.output_ids for r in run.requests]
    print(f"model {loaded.model_id}, {args.requests}: {len(prompts)} requests, prompts {[len(x) for x in prompts]} tokens")
    sizes = [int(b) for b in args.block_sizes.split(",")]
    table = {b: compare_reuse(prompts, outputs, block_size=b, capacity=args.capacity) for b in sizes}
    if 16 in table:
        assert list(table[16].blocks) == [r.reused_rows for r in run.requests], "the replay disagrees with the engine"
    radix = table[sizes[0]].radix
    print(f"{'req':>3} {'prompt':>6} {'radix tree':>10} " + " ".join(f"{'B=' + str(b):>6}" for b in sizes))
    for i, n in enumerate(table[sizes[0]].prompt_tokens):
        print(f"{i + 1:>3} {n:>6} {radix[i]:>10} " + " ".join(f"{table[b].blocks[i]:>6}" for b in sizes))
    total = sum(table[sizes[0]].prompt_tokens)
    print(
        f"all {total:>6} {sum(radix):>10} "
        + " ".join(f"{sum(table[b].blocks):>6}" for b in sizes)
        + f"   (reused share: radix {100 * sum(radix) / total:.1f} %, "
        + ", ".join(f"B={b} {100 * sum(table[b].blocks) / total:.1f} %" for b in sizes)
        + ")"
    )


if __name__ == "__main__":
    main()
