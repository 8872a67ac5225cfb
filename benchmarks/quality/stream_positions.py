"""Perplexity past the trained context: ``sink:S+window:W`` (original positions) against
``stream:S+window:W`` (StreamingLLM's positions re-assigned inside the cache), with ``kv`` and a plain
window beside them, for docs/eviction.md.

The bundled ``tiny`` was trained on 256-token windows (its config allows 1,024 positions). The text is
held out from its training: the validation paragraphs of the Austen corpus (every 50th paragraph,
``scripts/train_tiny.py``), joined into one stream. Each lane reads it token by token (one decode step
per token, teacher-forced, as the StreamingLLM paper measures on PG19) and we take each position's
negative log-likelihood of the true next token; perplexity is reported per segment of positions.

    python benchmarks/quality/stream_positions.py --model tiny --tokens 1024
    python benchmarks/quality/stream_positions.py --lanes kv,sink:4+window:60,stream:4+window:60

Prints one table (perplexity per segment, per lane) and the machine's load.
"""

from __future__ import annotations

import argparse
import lzma
import math
import os
import sys
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1]))  # benchmarks/, where the shared _load.py is
from _load import LoadWatch  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

LANES = "kv,window:124,sink:4+window:124,stream:4+window:124"


def held_out_text() -> str:
    """The Austen corpus's validation paragraphs (i % 50 == 25 in each book), as train_tiny.py splits it."""
    text = lzma.decompress((ROOT / "resources" / "corpus" / "austen.txt.xz").read_bytes()).decode("utf-8")
    out = []
    for book in text.split("<|endoftext|>"):
        paras = [p.strip() for p in book.split("\n\n") if p.strip()]
        out += [p for i, p in enumerate(paras) if i % 50 == 25]
    return "\n\n".join(out)


def nll_per_position(model, ids: list[int], spec: str) -> list[float]:
    """-log p(ids[t + 1] | the lane's cache after ids[: t + 1]), t = 0 … len(ids) - 2."""
    import torch

    from kvsim.caches import make_cache

    cfg = model.cfg
    cache = make_cache(spec, cfg.n_layers, tuple(cfg.window_of(i) for i in range(cfg.n_layers)))
    out = []
    with torch.no_grad():
        for t in range(len(ids) - 1):
            logits = model(torch.tensor([[ids[t]]]), torch.tensor([t]), cache, last_only=True).logits[0, -1].float()
            out.append(-float(torch.log_softmax(logits, -1)[ids[t + 1]]))
    return out


def main() -> int:
    LoadWatch()  # the machine's load at start and end, printed beside the figures (benchmarks/_load.py)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="tiny")
    ap.add_argument("--tokens", type=int, default=1024, help="length of the text read (at most the model's context)")
    ap.add_argument("--lanes", default=LANES)
    ap.add_argument("--segment", type=int, default=128, help="positions per reported segment")
    args = ap.parse_args()

    from kvsim.models.loading import load_model

    loaded = load_model(args.model)
    model, tok = loaded.model, loaded.tokenizer
    ids = tok.encode(held_out_text())[: min(args.tokens, model.cfg.max_seq_len)]
    print(f"model {args.model}: {model.cfg.n_layers} layers, context {model.cfg.max_seq_len}; {len(ids)} held-out tokens")
    lanes = [s.strip() for s in args.lanes.split(",") if s.strip()]
    results = {}
    for spec in lanes:
        t0 = time.perf_counter()
        results[spec] = nll_per_position(model, ids, spec)
        print(f"  {spec}: {time.perf_counter() - t0:.1f} s", flush=True)
    edges = list(range(0, len(ids) - 1, args.segment)) + [len(ids) - 1]
    header = "| positions | " + " | ".join(f"`{s}`" for s in lanes) + " |"
    print()
    print(header)
    print("|" + "---|" * (len(lanes) + 1))
    for a, b in zip(edges, edges[1:], strict=False):
        cells = [f"{math.exp(sum(results[s][a:b]) / (b - a)):.2f}" for s in lanes]
        print(f"| {a}–{b - 1} | " + " | ".join(cells) + " |")
    past = [s for s in lanes]
    cells = [f"{math.exp(sum(results[s][256:]) / max(1, len(results[s]) - 256)):.2f}" for s in past]
    print("| 256 and beyond | " + " | ".join(cells) + " |")
    print()
    load = os.getloadavg()
    print(f"load average {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
