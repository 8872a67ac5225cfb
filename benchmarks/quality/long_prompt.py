"""A fact near the start of a long prompt, a question about it at the end: which evicting lanes keep it?
For docs/eviction.md.

The prompt (the model's chat template, one user turn): an instruction, one sentence with a fact, then
a held-out passage of Austen (which does not contain the fact) long enough to push it out of every
window, then the question. Every evicting lane at the same budget of rows per layer (64 and 128 by
default), beside ``kv`` (every row; on Gemma 3 its local layers hold their own 512-row window):

* **answer**: the lane generating on its own (greedy, until end of turn or ``--steps``): does its
  text contain the answer?
* **first divergent token**: teacher-forced on ``kv``'s greedy tokens, the first generated token
  (0 = the one the prompt's last position predicts) whose own greedy choice differs from ``kv``'s,
  with both choices (``-`` = never within the steps);
* **perplexity** of ``kv``'s continuation under the lane (teacher-forced: exp of the mean negative
  log-probability of each of ``kv``'s generated tokens, the first included);
* **bytes** the lane's cache holds at the end of the teacher-forced run (``Cache.nbytes``: payload +
  overhead such as H2O's scores), and its median **time per decode step** (one token through the model
  with the lane's cache, this machine, ``--threads`` compute threads);
* **the fact's rows** still held at the end (after the table): the layers where one KV head holds every
  token of the answer's spelling in the fact where the next query can read it, some of them, none; where
  a layer holds them only outside its own window (Gemma 3's local layers), masked — and DuoAttention's
  retrieval heads.

The lanes run one after another, each from a fresh cache; the model's forward is called directly
(not the app's Simulator, which also records attention and top-k for drawing, far more work).
``--check`` runs ``kv`` alone and prints its answer: verify the model answers before comparing lanes.

    python benchmarks/quality/long_prompt.py --model smollm2-135m --budgets 64,128 --steps 24
    python benchmarks/quality/long_prompt.py --model gemma3-270m --check
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1]))  # benchmarks/, where the shared _load.py is
from _load import LoadWatch  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

# (instruction + fact, question, the answer's lead-in for a model without a chat template, answer string looked for)
FACTS = {
    "door": (
        "Read the text below and answer the question at the end.\n\nThe code for the blue door is 4817.",
        "Question: What is the code for the blue door? Answer with the number.",
        "The code for the blue door is",
        "4817",
    ),
    "name": (
        "Read the text below and answer the question at the end.\n\nMy name is Margaret Oakley.",
        "Question: What is my name?",
        "Your name is",
        "Oakley",
    ),
    "city": (
        "Read the text below and answer the question at the end.\n\nThe meeting will take place in Lisbon.",
        "Question: In which city will the meeting take place?",
        "The meeting will take place in",
        "Lisbon",
    ),
}


def lanes_for(budget: int) -> list[str]:
    """Every evicting lane at ``budget`` rows a layer (H2O: half heavy hitters, half recent; SnapKV's
    observation window a quarter of the budget, at most 32 as the paper)."""
    half, obs = budget // 2, min(32, max(1, budget // 4))
    return [
        f"window:{budget}",
        f"sink:4+window:{budget - 4}",
        f"stream:4+window:{budget - 4}",
        f"h2o:{half}:r{budget - half}",
        f"tova:{budget}",
        f"snapkv:{budget}:w{obs}",
    ]


def build_prompt(tok, fact: str, question: str, lead: str, filler_tokens: int) -> tuple[list[int], str, str]:
    """The prompt ids, the filler and the format used: the fact, ~``filler_tokens`` tokens of held-out Austen,
    the question — one user turn of the model's chat template, or (a base model without one, such as the
    fetched Gemma 3 270M) a completion ending ``Answer: <lead>``."""
    from benchmarks.quality.stream_positions import held_out_text

    filler = ""
    for word in held_out_text().split(" "):
        if len(tok.encode(filler + " " + word)) > filler_tokens:
            break
        filler = (filler + " " + word).strip()
    text = f"{fact}\n\n{filler}\n\n{question}"
    if getattr(tok, "chat_template", None):
        return tok.encode(tok.format_prompt(text, chat=True)), filler, "chat template"
    return tok.encode(f"{text}\nAnswer: {lead}"), filler, f"completion (no chat template): ends 'Answer: {lead}'"


class Lane:
    """One lane's cache driven directly through the model's forward."""

    def __init__(self, model, spec: str) -> None:
        from kvsim.caches import make_cache

        cfg = model.cfg
        self.model, self.spec = model, spec
        self.cache = make_cache(spec, cfg.n_layers, tuple(cfg.window_of(i) for i in range(cfg.n_layers)))
        self.n = 0
        self.step_ms: list[float] = []

    def feed(self, ids: list[int]):
        """Run ``ids`` on top of the cache; the float32 logits of the last position."""
        import torch

        t0 = time.perf_counter()
        out = self.model(torch.tensor([ids]), torch.arange(self.n, self.n + len(ids)), self.cache, last_only=True)
        ms = (time.perf_counter() - t0) * 1e3
        if len(ids) == 1:
            self.step_ms.append(ms)
        self.n += len(ids)
        return out.logits[0, -1].float()


def greedy(model, spec: str, ids: list[int], steps: int, stop: set[int]) -> list[int]:
    """The lane generating on its own: greedy tokens after the prompt (at most ``steps``, stopping after a stop token)."""
    lane = Lane(model, spec)
    logits, out = lane.feed(ids), []
    for _ in range(steps):
        t = int(logits.argmax())
        out.append(t)
        if t in stop or len(out) == steps:
            break
        logits = lane.feed([t])
    return out


def forced(model, spec: str, ids: list[int], ref: list[int]) -> tuple[list[int], list[float], Lane]:
    """Teacher-forced on ``ref``: the lane's own greedy choice and -log p(ref token) at each generated position."""
    import torch

    lane = Lane(model, spec)
    logits, own, nll = lane.feed(ids), [], []
    for i, t in enumerate(ref):
        own.append(int(logits.argmax()))
        nll.append(-float(torch.log_softmax(logits, -1)[t]))
        if i + 1 < len(ref):
            logits = lane.feed([t])
    return own, nll, lane


def answer_positions(tok, ids: list[int], answer: str) -> list[int]:
    """The prompt positions of the tokens that spell ``answer`` where it first appears (in the fact)."""
    end = next((e for e in range(1, len(ids) + 1) if answer in tok.decode(ids[:e])), None)
    if end is None:
        return []
    start = end - 1
    while answer not in tok.decode(ids[start:end]):
        start -= 1
    return list(range(start, end))


def fact_rows(cache, cfg, fact: list[int], next_pos: int) -> str:
    """Which layers' caches still hold the fact's rows where the next query (at ``next_pos``) can read them:
    per layer, the most of ``fact`` one KV head holds inside the layer's own window (Gemma 3's local layers;
    ``kvsim.core.masking.visibility``: k > q − W); the layers holding all of them, some, none — and apart,
    those that hold some only outside their window (masked) — and DuoAttention's split, where it has one."""
    if not fact:
        return "the answer is not in the prompt's tokens"
    full, some, masked = [], [], []
    for layer in range(cfg.n_layers):
        if hasattr(cache, "kept_positions"):  # heads of different counts (adakv, duo): the padding left out
            heads = [set(h) for h in cache.kept_positions(layer)]
        else:
            pos = cache.held_rows(layer)[2]
            heads = [set(row) for row in (pos.tolist() if pos.dim() == 2 else [pos.tolist()])]
        window = cfg.window_of(layer)
        readable = {p for p in fact if window is None or p > next_pos - window}
        most = max((len(h & readable) for h in heads), default=0)
        if most == len(fact):
            full.append(layer)
        elif most:
            some.append(layer)
        elif any(h.intersection(fact) for h in heads):
            masked.append(layer)
    none = cfg.n_layers - len(full) - len(some) - len(masked)
    line = f"all {len(fact)} in layers {full or '-'}; some in {some or '-'}; none in {none} of {cfg.n_layers} layers"
    if masked:
        line += f"; held only outside the layer's own window (masked) in {masked}"
    split = getattr(cache, "retrieval_heads", lambda: None)()
    if split is not None:
        line += f"; retrieval heads (layer, head): {[tuple(x) for x in split.nonzero().tolist()]}"
    return line


def load_line() -> str:
    load = os.getloadavg()
    return f"load average {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f} on {os.cpu_count()} CPUs ({time.strftime('%H:%M:%S')})"


def main() -> int:
    LoadWatch()  # the machine's load at start and end, printed beside the figures (benchmarks/_load.py)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--budgets", default="64,128")
    ap.add_argument("--steps", type=int, default=24, help="tokens generated (at most)")
    ap.add_argument("--filler", type=int, default=300, help="tokens of held-out text between the fact and the question")
    ap.add_argument("--fact", choices=sorted(FACTS), default="door")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--lanes", default=None, help="lanes instead of every evicting lane at --budgets (kv is always first)")
    ap.add_argument("--check", action="store_true", help="only kv: does the model answer at all?")
    args = ap.parse_args()

    from kvsim.models.loading import load_model, set_threads

    set_threads(args.threads)  # torch's and numpy's BLAS (the decode kernel's) threads
    loaded = load_model(args.model)
    model, tok = loaded.model, loaded.tokenizer
    fact, question, lead, answer = FACTS[args.fact]
    ids, filler, form = build_prompt(tok, fact, question, lead, args.filler)
    assert answer not in filler, "the filler must not contain the answer"
    stop = {t for t in (tok.eos_id, *getattr(tok, "stop_ids", ())) if t is not None}
    for marker in ("<|im_end|>", "<end_of_turn>"):  # the chat templates' end of turn
        enc = tok.encode(marker)
        if len(enc) == 1 or (len(enc) == 2 and tok.bos_id is not None and enc[0] == tok.bos_id):
            stop.add(enc[-1])
    fact_pos = len(tok.encode(tok.format_prompt(fact, chat=True)))
    print(
        f"model {args.model}: prompt {len(ids)} tokens (the fact ends near token {fact_pos}, "
        f"filler {args.filler} tokens, {form}), "
        f"fact {args.fact!r}, answer {answer!r}, at most {args.steps} steps, {args.threads} thread(s)"
    )
    print(load_line(), flush=True)

    t0 = time.perf_counter()
    ref = greedy(model, "kv", ids, args.steps, stop)
    ref_text = tok.decode(ref)
    verdict = "contains" if answer in ref_text else "LACKS"
    print(f"kv answers ({time.perf_counter() - t0:.1f} s): {ref_text!r} -> {verdict} {answer!r}")
    if args.check:
        return 0 if answer in ref_text else 1

    if args.lanes:
        specs = ["kv"] + [s.strip() for s in args.lanes.split(",") if s.strip() and s.strip() != "kv"]
    else:
        specs = ["kv"] + [s for b in args.budgets.split(",") for s in lanes_for(int(b))]
    rows, held = [], []
    fact_at = answer_positions(tok, ids, answer)
    for spec in specs:
        t0 = time.perf_counter()
        own, nll, lane = forced(model, spec, ids, ref)
        diverge = next((i for i, (a, b) in enumerate(zip(own, ref, strict=True)) if a != b), None)
        free = ref if diverge is None else greedy(model, spec, ids, args.steps, stop)
        text = tok.decode(free)
        ms = statistics.median(lane.step_ms) if lane.step_ms else float("nan")
        first = "-" if diverge is None else f"{diverge}: {tok.token_text(own[diverge])!r} for {tok.token_text(ref[diverge])!r}"
        shown = text.strip().replace("\n", " ").replace("`", "'")[:60].replace("|", "\\|")  # a table cell
        row = (
            f"| `{spec}` | {'yes' if answer in text else '**no**'} (`{shown}`) | {first} "
            f"| {math.exp(statistics.fmean(nll)):.3f} | {lane.cache.nbytes:,} | {ms:.1f} |"
        )
        rows.append(row)
        held.append(f"  `{spec}`: {fact_rows(lane.cache, model.cfg, fact_at, lane.n)}")
        print(f"  {spec}: {time.perf_counter() - t0:.1f} s; {load_line()}", flush=True)
    print()
    print(
        f"| lane | answer has {answer!r} (own greedy text) | first divergent token "
        "| perplexity of kv's text | bytes held | ms / decode step |"
    )
    print("|---|---|---|---|---|---|")
    for row in rows:
        print(row)
    spelled = [tok.token_text(ids[i]) for i in fact_at]
    print(f"\nThe fact's rows (prompt positions {fact_at}: {spelled}) held at the end of the teacher-forced run:")
    print("\n".join(held))
    print(f"\n{load_line()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
