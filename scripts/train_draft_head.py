#!/usr/bin/env python3
"""Train an EAGLE-style draft head for the bundled model `tiny` (`spec:K:head`), from the same corpus tiny
was trained on (resources/corpus/, the same train/validation split as scripts/train_tiny.py).

The head (kvsim/models/draft_head.py) is one decoder layer of tiny's shape over [embedding(t+1), h_t] →
predicted h_{t+1}, where h is tiny's last hidden state (before its final norm); tiny's own final norm and LM
head turn the prediction into a token. tiny stays frozen. The loss is EAGLE's: a smooth-L1 regression of the
hidden state plus the cross-entropy of the head's token distribution against tiny's own (distillation: the
head must agree with tiny, not with the text). A second pass feeds the head its own predictions as the
hidden states (what it reads from the second drafted token on), so drafting several tokens does not drift.
The head starts as early exit after tiny's first layer (``warm_start``), so it begins where ``early:1`` is.

Reproducible: fixed seeds, a seeded torch.Generator for the data order, deterministic algorithms.

    nice -n 19 python scripts/train_draft_head.py           # one thread: 8.4 min on a busy 2-core machine
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from train_tiny import CORPORA, load_corpus  # noqa: E402  (tiny's corpus and split)

from kvsim.caches import NoCache  # noqa: E402
from kvsim.models.draft_head import HEAD_FILE, DraftHead, bundled_heads_dir, save_head  # noqa: E402
from kvsim.models.loading import bundled_models_dir, load_model  # noqa: E402

OUT = bundled_heads_dir() / "tiny"


def encode(tokenizer, docs: list[str], eot: int) -> np.ndarray:
    """tiny's tokens of each document, then <|endoftext|> (as scripts/train_tiny.py encodes them)."""
    ids: list[int] = []
    for doc in docs:
        ids.extend(tokenizer.encode(doc).ids)
        ids.append(eot)
    return np.asarray(ids, dtype=np.int64)


def warm_start(head: DraftHead, target) -> None:
    """Start as early exit after tiny's first layer: ``fc`` passes the embedding of token t+1 through (h_t's half
    at zero) and the head's layer is a copy of tiny's layer 0, so the head's rows are layer 0's rows and its
    prediction is early:1's hidden state; training then teaches it to read h_t as well."""
    dim = target.cfg.dim
    with torch.no_grad():
        head.fc.weight.zero_()
        head.fc.weight[:, :dim] = torch.eye(dim)
        head.fc.bias.zero_()
    head.block.load_state_dict({k: v.detach().contiguous() for k, v in target.layers[0].state_dict().items()})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=1, help="one: on a busy machine two threads wait on each other")
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--minutes", type=float, default=15.0, help="safety cap on training wall time (the run length is --steps)")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--ctx", type=int, default=128)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--ce-weight", type=float, default=0.1, help="EAGLE's weight of the token loss")
    ap.add_argument("--ce-share", type=float, default=0.25, help="the share of rows (drawn each step) the token loss reads")
    ap.add_argument("--pt-share", type=float, default=0.4, help="as tiny's training: the share of Portuguese rows")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--cold", action="store_true", help="random initial weights instead of tiny's layer 0 (warm_start)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True)
    t0 = time.time()
    loaded = load_model("tiny")
    target = loaded.model.eval()
    for p in target.parameters():
        p.requires_grad_(False)
    from tokenizers import Tokenizer  # the whole corpus at once (kvsim's prompt tokenizer caps a prompt's length)

    tokenizer = Tokenizer.from_file(str(bundled_models_dir() / "tiny" / "tokenizer.json"))
    eot = tokenizer.token_to_id("<|endoftext|>")
    data = {}
    val = {}
    for lang, path in CORPORA.items():
        train_docs, val_docs = load_corpus(path)
        data[lang] = torch.from_numpy(encode(tokenizer, train_docs, eot))
        val[lang] = torch.from_numpy(encode(tokenizer, val_docs, eot))
    print(f"corpus encoded in {time.time() - t0:.1f}s: " + ", ".join(f"{k} {len(v)} tokens" for k, v in data.items()))

    head = DraftHead(target.cfg)
    if not args.cold:
        warm_start(head, target)
    n_params = sum(p.numel() for p in head.parameters())
    print(f"head: {n_params:,} parameters ({n_params * 4 / 2**20:.2f} MiB fp32)", flush=True)
    opt = torch.optim.AdamW(head.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.0)
    gen = torch.Generator().manual_seed(args.seed)

    def lr_at(step: int) -> float:
        if step < args.warmup:
            return args.lr * (step + 1) / args.warmup
        progress = (step - args.warmup) / max(1, args.steps - args.warmup)
        return args.lr * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))

    def windows(source: dict[str, torch.Tensor], n: int, g: torch.Generator) -> torch.Tensor:
        is_pt = torch.rand(n, generator=g) < args.pt_share
        u = torch.rand(n, generator=g)
        rows = []
        for b in range(n):
            stream = source["pt" if is_pt[b] else "en"]
            start = int(u[b] * (len(stream) - args.ctx - 1))
            rows.append(stream[start : start + args.ctx])
        return torch.stack(rows)

    positions = torch.arange(args.ctx - 1)
    lm_head = target.lm_head.weight.detach().contiguous()  # row-major: kvsim may hold it laid out for one-row decode

    def losses(ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, float, float]:
        """(regression + CE of pass 1, the same of pass 2, top-1 agreement with tiny of pass 1 and 2)."""
        out = target(ids, torch.arange(ids.shape[1]), NoCache(target.cfg.n_layers), hidden=True)
        assert out.hidden is not None
        h = out.hidden  # (B, T, dim)
        want = torch.softmax(out.logits[:, 1:].float(), dim=-1)  # tiny's next-token distribution after t+1
        emb = target.tok_embeddings(ids[:, 1:])  # (B, T-1, dim)
        result = []
        agree = []
        feats = h[:, :-1]
        # the token loss on a seeded share of the rows: tiny's 3072-wide LM head is most of a step's work
        rows = torch.rand(h.shape[1] - 1, generator=gen) < args.ce_share if head.training else slice(None)
        for _ in range(2):
            pred = head(feats, emb, positions, NoCache(1))  # (B, T-1, dim) ≈ h[:, 1:]
            logits = F.linear(target.norm(pred[:, rows]), lm_head)
            reg = F.smooth_l1_loss(pred, h[:, 1:])
            ce = -(want[:, rows] * torch.log_softmax(logits, dim=-1)).sum(-1).mean()
            result.append(reg + args.ce_weight * ce)
            agree.append(float((logits.argmax(-1) == want[:, rows].argmax(-1)).float().mean()))
            # pass 2: row t reads the head's own prediction of h_t (row t-1's output), as when drafting
            feats = torch.cat([h[:, :1], pred[:, :-1].detach()], dim=1)
        return result[0], result[1], agree[0], agree[1]

    val_gen = torch.Generator().manual_seed(args.seed + 1)
    val_ids = windows(val, 32, val_gen)

    def evaluate() -> str:
        head.eval()
        with torch.no_grad():
            a, b, agree1, agree2 = losses(val_ids)
        head.train()
        return f"val loss {float(a):.4f} / {float(b):.4f}, agrees with tiny's argmax {agree1:.3f} / {agree2:.3f}"

    print(f"step    0  {evaluate()}", flush=True)
    t_train = time.time()
    step = 0
    smooth = None
    for step in range(args.steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        first, second = losses(windows(data, args.batch, gen))[:2]
        loss = first + second
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(head.parameters(), 1.0)
        opt.step()
        value = float(loss.detach())
        smooth = value if smooth is None else 0.9 * smooth + 0.1 * value
        elapsed = time.time() - t_train
        if step % 25 == 0:
            print(f"step {step:4d}  loss {smooth:.4f}  lr {lr_at(step):.2e}  {elapsed / (step + 1):.2f}s/step", flush=True)
        if (step + 1) % 100 == 0:
            print(f"step {step + 1:4d}  {evaluate()}", flush=True)
        if elapsed > args.minutes * 60:
            print(f"stopping at step {step + 1}: --minutes {args.minutes} reached", flush=True)
            break
    minutes = (time.time() - t_train) / 60
    final = evaluate()
    print(f"final: steps {step + 1}, {minutes:.1f} min, {final}", flush=True)
    info = {
        "target": "tiny",
        "steps": str(step + 1),
        "trained_minutes": f"{minutes:.1f}",
        "recipe": json.dumps({k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items() if k != "out"}),
    }
    save_head(head, target, args.out / HEAD_FILE, info)
    print(f"wrote {args.out / HEAD_FILE} ({(args.out / HEAD_FILE).stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
