"""Make the demo sessions: saved runs (.kvsim) that open at once in the app (☰ → Demos), for a talk.

    python scripts/make_demos.py                      # the bundled model's demos → resources/demos/
    python scripts/make_demos.py --model smollm2-135m --out DIR   # a fetched model's demos → DIR (not the repo)

Each demo is a real run of the model (greedy, seeded), recorded by the Simulator and saved with
``Trace.save``; ``resources/demos/demos.json`` lists their titles in menu order. Runs are kept small
(a few hundred KB: the step's Q/K/V rows of every layer are stored, attention is derived on load).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

PROMPT = "It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want of a wife."
DEMOS = [  # file, title, lanes, decode steps after the prefill
    ("cache-vs-no-cache.kvsim", "No cache vs KV cache (the default pair)", "uncached,cached", 24),
    ("window-and-sinks.kvsim", "KV cache vs a sliding window vs sinks + window", "kv,window:16,sink:4+window:12", 32),
    # R = 2 exact rows: a group of 32 rows goes into codes once 2 + 32 more are held (at the next step), so by step 34
    # (67 rows) 64 are in codes: the bytes drop to ~0.34x (int8) and ~0.22x (int4), under the 1 MB a demo may take
    ("quantized-cache.kvsim", "KV cache vs int8 and int4 caches (R = 2 exact rows)", "kv,int8:r2,int4:r2", 34),
]
LIMIT_BYTES = 1_200_000  # a quantized demo's codes and scales compress less than float rows


def make(model: str, out: Path, prefix: str = "") -> list[dict[str, object]]:
    from kvsim.caches import parse_lanes
    from kvsim.engine.simulate import Simulator
    from kvsim.models.loading import load_model

    loaded = load_model(model)
    tok = loaded.tokenizer
    text = tok.format_prompt(PROMPT, chat=True)
    ids = tok.encode(text)
    out.mkdir(parents=True, exist_ok=True)
    index = []
    for name, title, lanes, steps in DEMOS:
        sim = Simulator(loaded.model, tok, ids, parse_lanes(lanes), model_id=loaded.model_id, prompt_text=text)
        sim.trace.meta["model_info"] = dict(loaded.info)
        for _ in range(steps + 1):  # the prefill, then `steps` decode steps
            sim.step()
        path = sim.trace.save(out / f"{prefix}{name}")
        size = path.stat().st_size
        flag = "" if size < LIMIT_BYTES else f"  (over {LIMIT_BYTES:,} bytes: fewer steps?)"
        print(f"{path}: {steps + 1} steps, lanes {lanes}, {size:,} bytes{flag}")
        index.append({"file": path.name, "title": f"{title} — {loaded.model_id}", "lanes": lanes, "steps": steps + 1})
    (out / "demos.json").write_text(json.dumps(index, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return index


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Make the app's demo runs (.kvsim).")
    p.add_argument("--model", default="tiny", help="a model kvsim can load (default: the bundled tiny)")
    p.add_argument("--out", default=None, help="the folder (default: resources/demos for the bundled model only)")
    args = p.parse_args(argv)
    repo_demos = Path(__file__).resolve().parents[1] / "resources" / "demos"
    if args.out is None and args.model != "tiny":
        print("error: demos of a fetched model go to a folder you give (--out DIR), not into the repo", file=sys.stderr)
        return 2
    make(args.model, Path(args.out) if args.out else repo_demos)
    return 0


if __name__ == "__main__":
    sys.exit(main())
