#!/usr/bin/env python3
"""Train kvsim's bundled default model `tiny` from the corpus in resources/corpus/ (English + Portuguese).

Writes a Hugging Face Llama checkpoint to resources/models/tiny/:
    config.json, model.safetensors (fp32, tied embeddings), tokenizer.json (+ tokenizer_config.json,
    special_tokens_map.json), and prints the numbers that go into MODEL_CARD.md.

Two corpora: austen.txt.xz (English) and portugues.txt.xz (Portuguese). One byte-level BPE tokenizer
is trained on both (Portuguese accented letters end up as single tokens; the script checks it), and
each sequence of a batch is drawn from Portuguese with probability --pt-share, else from English, so
the smaller Portuguese corpus gets its share of the training.

Reproducible: fixed seeds, a fixed train/validation split (every 50th paragraph is held out), a
deterministic tokenizer trainer and a seeded torch.Generator for the data order. The run length is
fixed by --steps (the cosine schedule depends on it); --minutes is only a safety cap.

    python scripts/build_corpus.py           # optional: rebuild resources/corpus/*.txt.xz
    python scripts/train_tiny.py             # defaults: 2 threads, fits in < 60 min on 2 CPU cores
"""

from __future__ import annotations

import argparse
import json
import lzma
import math
import os
import random
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
CORPORA = {"en": ROOT / "resources" / "corpus" / "austen.txt.xz", "pt": ROOT / "resources" / "corpus" / "portugues.txt.xz"}
# Letters that must each be one token (a byte-level BPE would otherwise show "já" as j + two "�" bytes).
ACCENTED = "áéíóúâêôãõçàÁÉÍÓÚÂÊÔÃÕÇÀ"
OUT = ROOT / "resources" / "models" / "tiny"
EOT = "<|endoftext|>"
HOLDOUT_EVERY = 50  # paragraph i with i % 50 == 25 goes to validation (2 %)


def load_corpus(path: Path) -> tuple[list[str], list[str]]:
    """Return (train_docs, val_docs): one document per book, paragraphs joined by a blank line."""
    text = lzma.decompress(path.read_bytes()).decode("utf-8")
    train, val = [], []
    for book in text.split(EOT):
        paras = [p.strip() for p in book.split("\n\n") if p.strip()]
        train.append("\n\n".join(p for i, p in enumerate(paras) if i % HOLDOUT_EVERY != HOLDOUT_EVERY // 2))
        val.append("\n\n".join(p for i, p in enumerate(paras) if i % HOLDOUT_EVERY == HOLDOUT_EVERY // 2))
    return train, val


def _bpe(paragraphs: list[str], vocab_size: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=[EOT],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(paragraphs, trainer=trainer)
    return tok


def byte_symbols() -> dict[int, str]:
    """GPT-2's byte -> printable symbol table, the one the ByteLevel pre-tokenizer uses."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def add_letter_merges(tok, letters: str):
    """Give each letter (two UTF-8 bytes) its own token: a merge of its two byte symbols, applied first."""
    from tokenizers import Tokenizer

    spec = json.loads(tok.to_str())
    vocab, merges = spec["model"]["vocab"], spec["model"]["merges"]
    table = byte_symbols()
    new = []
    for ch in letters:
        a, b = (table[x] for x in ch.encode("utf-8"))
        vocab[a + b] = len(vocab)
        new.append([a, b] if merges and isinstance(merges[0], list) else f"{a} {b}")
    spec["model"]["merges"] = new + merges
    return Tokenizer.from_str(json.dumps(spec))


def train_tokenizer(train_docs: list[str], vocab_size: int):
    """Byte-level BPE of exactly vocab_size tokens in which every ACCENTED letter is one token.

    A letter the trainer leaves as two bytes gets a merge of its own (placed first, so it always
    applies); the trainer is then re-run with that many fewer tokens so the total stays vocab_size.
    """
    paragraphs = [p for doc in train_docs for p in doc.split("\n\n")]
    reserved = 0
    for _ in range(4):
        tok = _bpe(paragraphs, vocab_size - reserved)
        split = [ch for ch in ACCENTED if len(tok.encode(ch).ids) != 1]
        if len(split) == reserved:
            break
        reserved = len(split)
    tok = add_letter_merges(tok, "".join(split))
    still = [ch for ch in ACCENTED if len(tok.encode(ch).ids) != 1]
    if still:
        raise SystemExit(f"error: the tokenizer splits {''.join(still)!r} into bytes")
    print(f"tokenizer: {len(split)} accented letters given a merge of their own: {''.join(split)}", flush=True)
    return tok


def encode(tok, docs: list[str]) -> np.ndarray:
    eot = tok.token_to_id(EOT)
    ids: list[int] = []
    for doc in docs:
        ids.extend(tok.encode(doc).ids)
        ids.append(eot)
    return np.asarray(ids, dtype=np.int64)


def build_model(args, vocab_size: int, eot_id: int):
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=args.dim,
        intermediate_size=args.ffn,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        num_key_value_heads=args.kv_heads,
        head_dim=args.dim // args.heads,
        hidden_act="silu",
        max_position_embeddings=args.max_pos,
        rms_norm_eps=1e-5,
        rope_theta=10000.0,
        tie_word_embeddings=True,
        attention_bias=False,
        mlp_bias=False,
        bos_token_id=eot_id,
        eos_token_id=eot_id,
        pad_token_id=eot_id,
        initializer_range=0.02,
    )
    return LlamaForCausalLM(config)


@torch.no_grad()
def evaluate(model, data: np.ndarray, ctx: int, batch: int) -> float:
    """Mean next-token loss over all non-overlapping ctx-windows of the validation stream."""
    model.eval()
    n = (len(data) - 1) // ctx
    x = torch.from_numpy(data[: n * ctx]).view(n, ctx)
    y = torch.from_numpy(data[1 : n * ctx + 1]).view(n, ctx)
    total = 0.0
    for i in range(0, n, batch):
        logits = model(input_ids=x[i : i + batch].to(model.device)).logits
        total += torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.size(-1)), y[i : i + batch].reshape(-1).to(model.device), reduction="sum"
        ).item()
    model.train()
    return total / (n * ctx)


SAMPLE_PROMPTS = {
    "en": ["Once upon a time", "Elizabeth looked at her sister and", '"My dear," said Mrs.'],
    "pt": [
        "O cache de chaves e valores",
        "Era uma vez, numa pequena aldeia junto ao mar,",
        "A cache guarda o que o modelo já leu, por isso",
    ],
}


def print_samples(model_dir: Path, seed: int, temperature: float = 0.8, max_new_tokens: int = 60) -> None:
    """Load the saved checkpoint the way any HF user would; print a greedy and a sampled continuation per prompt."""
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast

    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    tok = PreTrainedTokenizerFast(tokenizer_file=str(model_dir / "tokenizer.json"))
    for lang, prompts in SAMPLE_PROMPTS.items():
        for prompt in prompts:
            ids = tok(prompt, return_tensors="pt").input_ids
            for greedy in (True, False):
                torch.manual_seed(seed)
                out = model.generate(
                    ids,
                    attention_mask=torch.ones_like(ids),
                    do_sample=not greedy,
                    temperature=None if greedy else temperature,
                    top_k=None if greedy else 0,
                    top_p=None if greedy else 1.0,
                    max_new_tokens=max_new_tokens,
                    pad_token_id=model.config.eos_token_id,
                )
                how = "greedy" if greedy else f"temperature {temperature}, seed {seed}"
                print(f"--- [{lang}] prompt {prompt!r} ({how}, {max_new_tokens} new tokens)")
                print(tok.decode(out[0]), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    ap.add_argument("--steps", type=int, default=3000, help="optimizer steps (sets the cosine schedule)")
    ap.add_argument("--minutes", type=float, default=60.0, help="safety cap on training wall time")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--ctx", type=int, default=256)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--min-lr", type=float, default=1e-4)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--vocab", type=int, default=3072)
    ap.add_argument("--pt-share", type=float, default=0.4, help="probability that a training sequence is Portuguese")
    ap.add_argument("--device", default="cpu", help="torch device (cpu for the bundled model; cuda only for trials)")
    ap.add_argument("--dim", type=int, default=192)
    ap.add_argument("--ffn", type=int, default=512)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=6)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--max-pos", type=int, default=1024)
    ap.add_argument("--eval-every", type=int, default=250)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--samples-only", action="store_true", help="only print samples from the saved --out model")
    args = ap.parse_args()
    if args.samples_only:
        torch.set_num_threads(args.threads)
        print_samples(args.out, args.seed)
        return 0

    torch.set_num_threads(args.threads)
    if args.device.startswith("cuda"):
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True)

    t0 = time.time()
    corpora = {lang: load_corpus(path) for lang, path in CORPORA.items()}
    tok = train_tokenizer([d for train, _ in corpora.values() for d in train], args.vocab)
    eot_id = tok.token_to_id(EOT)
    train_ids = {lang: encode(tok, train) for lang, (train, _) in corpora.items()}
    val_ids = {lang: encode(tok, val) for lang, (_, val) in corpora.items()}
    for lang, (train, _) in corpora.items():
        print(
            f"tokenizer [{lang}]: vocab {tok.get_vocab_size()}, train {len(train_ids[lang])} tokens, "
            f"val {len(val_ids[lang])} tokens, {sum(map(len, train)) / len(train_ids[lang]):.2f} chars/token",
            flush=True,
        )
    print(f"tokenizer trained and corpus encoded in {time.time() - t0:.1f}s", flush=True)

    model = build_model(args, tok.get_vocab_size(), eot_id).to(args.device)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"model: {n_params} parameters ({n_params * 4 / 2**20:.2f} MiB fp32)", flush=True)

    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": args.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=args.lr,
        betas=(0.9, 0.95),
        eps=1e-8,
    )

    def lr_at(step: int) -> float:
        if step < args.warmup:
            return args.lr * (step + 1) / args.warmup
        progress = (step - args.warmup) / max(1, args.steps - args.warmup)
        return args.min_lr + 0.5 * (args.lr - args.min_lr) * (1 + math.cos(math.pi * min(1.0, progress)))

    gen = torch.Generator().manual_seed(args.seed)
    langs = list(train_ids)
    train_t = [torch.from_numpy(train_ids[lang]) for lang in langs]
    pt_index = langs.index("pt")

    def batch_at() -> torch.Tensor:
        """(B, ctx+1) windows: each row Portuguese with probability --pt-share, from a seeded generator."""
        is_pt = torch.rand(args.batch, generator=gen) < args.pt_share
        u = torch.rand(args.batch, generator=gen)
        rows = []
        for b in range(args.batch):
            data = train_t[pt_index] if is_pt[b] else train_t[1 - pt_index]
            start = int(u[b] * (len(data) - args.ctx - 1))
            rows.append(data[start : start + args.ctx + 1])
        return torch.stack(rows)

    def val_losses() -> str:
        return "  ".join(f"{lang} {evaluate(model, val_ids[lang], args.ctx, args.batch):.4f}" for lang in langs)

    model.train()
    t_train = time.time()
    step, smooth = 0, None
    for step in range(args.steps):
        chunk = batch_at().to(args.device)  # (B, ctx+1)
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        logits = model(input_ids=chunk[:, :-1]).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), chunk[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        smooth = loss.item() if smooth is None else 0.95 * smooth + 0.05 * loss.item()
        elapsed = time.time() - t_train
        if step % 25 == 0:
            print(
                f"step {step:5d}  loss {smooth:.4f}  lr {lr_at(step):.2e}  {elapsed / (step + 1):.3f}s/step  "
                f"{elapsed / 60:.1f} min",
                flush=True,
            )
        if (step + 1) % args.eval_every == 0:
            print(f"step {step + 1:5d}  val_loss {val_losses()}", flush=True)
        if elapsed > args.minutes * 60:
            print(f"stopping at step {step + 1}: --minutes {args.minutes} reached", flush=True)
            break
    train_minutes = (time.time() - t_train) / 60
    val_loss = {lang: evaluate(model, val_ids[lang], args.ctx, args.batch) for lang in langs}
    print(
        f"final: steps {step + 1}, train {train_minutes:.1f} min, "
        + ", ".join(f"val_loss[{lang}] {v:.4f} (ppl {math.exp(v):.2f})" for lang, v in val_loss.items()),
        flush=True,
    )
    model = model.to("cpu")

    # --- save in Hugging Face format -------------------------------------------------------------
    from transformers import PreTrainedTokenizerFast

    args.out.mkdir(parents=True, exist_ok=True)
    model.config.use_cache = True
    model.save_pretrained(args.out, safe_serialization=True)
    cfg_path = args.out / "config.json"
    cfg = json.loads(cfg_path.read_text())
    # transformers >= 5 writes "dtype" and "rope_parameters"; also keep the classic (4.x) keys so that
    # older transformers and plain-JSON readers see torch_dtype and rope_theta.
    cfg["torch_dtype"] = "float32"
    cfg["rope_theta"] = float(cfg.get("rope_parameters", {}).get("rope_theta", 10000.0))
    cfg_path.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    hf_tok = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=EOT, eos_token=EOT, pad_token=EOT, unk_token=None, model_max_length=args.max_pos
    )
    hf_tok.save_pretrained(args.out)
    tc_path = args.out / "tokenizer_config.json"  # name a class that transformers 4.x also knows
    tc = json.loads(tc_path.read_text())
    tc["tokenizer_class"] = "PreTrainedTokenizerFast"
    tc_path.write_text(json.dumps(tc, indent=2, sort_keys=True) + "\n")
    tok.save(str(args.out / "tokenizer.json"))
    (args.out / "train_stats.json").write_text(
        json.dumps(
            {
                "parameters": n_params,
                "steps": step + 1,
                "batch": args.batch,
                "ctx": args.ctx,
                "train_tokens_seen": (step + 1) * args.batch * args.ctx,
                "train_tokens": {lang: int(len(ids)) for lang, ids in train_ids.items()},
                "val_tokens": {lang: int(len(ids)) for lang, ids in val_ids.items()},
                "val_loss": {lang: round(v, 4) for lang, v in val_loss.items()},
                "pt_share": args.pt_share,
                "vocab": tok.get_vocab_size(),
                "train_minutes": round(train_minutes, 1),
                "threads": args.threads,
                "device": args.device,
                "seed": args.seed,
                "lr": args.lr,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"saved to {args.out} (total {(time.time() - t0) / 60:.1f} min)", flush=True)
    print_samples(args.out, args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
