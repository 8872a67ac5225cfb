"""Keys before and after a Hadamard rotation, and what it does to an INT4 cache: for docs/rotated-kv.md.

On the long fact-recall prompt of ``long_prompt.py`` (the fact, held-out Austen, the question), with
``kv``'s keys after the prompt (every layer and KV head, after RoPE, as the cache holds them):

* **outlier channels**: per layer and KV head, each channel's largest |k| over the prompt's tokens; the
  ratio of the largest channel's to the median channel's (``max/median``), and the channels above
  ``--outlier``× the median — before and after ``k ↦ k H`` (H the normalized Hadamard matrix of
  ``kvsim.caches.rotated``);
* **key error** of 4-bit quantization, ``‖k − k̂‖ / ‖k‖`` over every layer, in two layouts: KIVI's (per
  channel over groups of 32 tokens: what ``int4`` does) and per token over the head's channels (what
  QuaRot does after its rotation), each plain and rotated (the rotated keys' error measured after turning
  them back, where attention reads them);
* **drift** of the lanes ``int4:gG:r0`` and ``int4:gG:r0:hadamard`` (the same bytes: checked),
  teacher-forced on ``kv``'s greedy continuation: KL(kv ‖ lane) per generated token (mean, max), the
  first token whose greedy choice differs from ``kv``'s, the perplexity of ``kv``'s continuation.

    python benchmarks/quality/rotated_kv.py --model smollm2-135m --steps 32
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1]))  # benchmarks/, where the shared _load.py is
from _load import LoadWatch  # noqa: E402
from long_prompt import FACTS, Lane, build_prompt, greedy, load_line  # noqa: E402 - this folder's script


def key_table(keys: list, group: int, outlier: float) -> list[str]:
    """The outlier and key-error lines for ``keys`` (one (1, H_kv, S, D) tensor a layer)."""
    import torch

    from kvsim.caches.quantized import dequantize, quantize
    from kvsim.caches.rotated import hadamard

    d = keys[0].shape[-1]
    h = hadamard(d)
    lines = []
    for name, turn in (("as computed", False), ("rotated (k H)", True)):
        ratios, count, heads = [], 0, 0
        for k in keys:
            x = k.float() @ h if turn else k.float()
            peak = x.abs().amax(2)[0]  # (H_kv, D): each channel's largest |k| over the tokens
            median = peak.median(1, keepdim=True).values
            ratios += (peak.amax(1) / median[:, 0]).tolist()
            count += int((peak > outlier * median).sum())
            heads += peak.shape[0]
        lines.append(
            f"| {name} | {statistics.fmean(ratios):.2f} | {max(ratios):.2f} | {count} of {heads * d} "
            f"({count / heads:.2f} per head) |"
        )

    def error(per_channel: bool, turn: bool) -> float:
        num = den = 0.0
        for k in keys:
            x = k.float() @ h if turn else k.float()
            s = x.shape[2] - x.shape[2] % group
            x = x[:, :, :s]
            if per_channel:  # KIVI: statistics over groups of G tokens, one per channel
                g = x.reshape(x.shape[0], x.shape[1], s // group, group, d)
                codes, scale, zero = quantize(g, 3, 4, torch.float32)
                x_hat = dequantize(codes, scale, zero, torch.float32).reshape(x.shape)
            else:  # per token, over the head's channels
                codes, scale, zero = quantize(x, 3, 4, torch.float32)
                x_hat = dequantize(codes, scale, zero, torch.float32)
            if turn:
                x, x_hat = x @ h.T, x_hat @ h.T
            num += float(((x - x_hat) ** 2).sum())
            den += float((x**2).sum())
        return (num / den) ** 0.5

    errors = [
        "| layout | plain | rotated |",
        "|---|---|---|",
        f"| per channel, groups of {group} tokens (KIVI, `int4`) | {error(True, False):.4f} | {error(True, True):.4f} |",
        f"| per token (QuaRot) | {error(False, False):.4f} | {error(False, True):.4f} |",
    ]
    return lines, errors


def main() -> int:
    LoadWatch()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--steps", type=int, default=32, help="tokens of kv's greedy continuation, teacher-forced")
    ap.add_argument("--filler", type=int, default=300)
    ap.add_argument("--group", type=int, default=32)
    ap.add_argument("--outlier", type=float, default=4.0, help="a channel is an outlier above this × the median channel")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()

    import torch

    from kvsim.models.loading import load_model, set_threads

    set_threads(args.threads)
    loaded = load_model(args.model)
    model, tok = loaded.model, loaded.tokenizer
    fact, question, lead, _ = FACTS["door"]
    ids, _, form = build_prompt(tok, fact, question, lead, args.filler)
    cfg = model.cfg
    print(
        f"model {args.model}: {cfg.n_layers} layers, {cfg.n_kv_heads} KV heads of {cfg.head_dim}; "
        f"prompt {len(ids)} tokens ({form}); {args.steps} steps"
    )
    print(load_line(), flush=True)

    kv = Lane(model, "kv")
    kv.feed(ids)
    keys = [kv.cache.held_rows(layer)[0] for layer in range(cfg.n_layers)]
    outliers, errors = key_table(keys, args.group, args.outlier)
    print(f"\nKeys after the prompt: each channel's largest |k|; outlier = above {args.outlier:g}× the head's median channel")
    print("\n| keys | max/median (mean over heads) | max/median (worst head) | outlier channels |")
    print("|---|---|---|---|")
    print("\n".join(outliers))
    print("\n4-bit key error ‖k − k̂‖/‖k‖, every layer (rotated keys turned back)\n")
    print("\n".join(errors))

    ref = greedy(model, "kv", ids, args.steps, set())
    ref_logp = []
    lane = Lane(model, "kv")
    logits = lane.feed(ids)
    for i, t in enumerate(ref):
        ref_logp.append(torch.log_softmax(logits, -1))
        if i + 1 < len(ref):
            logits = lane.feed([t])
    print(f"\nkv's continuation: {tok.decode(ref)!r}\n")
    print("| lane | bytes held | KL(kv ‖ lane) mean | max | first divergent token | perplexity of kv's text |")
    print("|---|---|---|---|---|---|")
    held = {}
    for spec in ("kv", f"int4:g{args.group}:r0", f"int4:g{args.group}:r0:hadamard"):
        lane = Lane(model, spec)
        logits, kls, nll, diverge = lane.feed(ids), [], [], None
        for i, t in enumerate(ref):
            logp = torch.log_softmax(logits, -1)
            kls.append(float((ref_logp[i].exp() * (ref_logp[i] - logp)).sum().clamp_min(0)))
            nll.append(-float(logp[t]))
            if diverge is None and int(logits.argmax()) != t:
                diverge = f"{i}: {tok.token_text(int(logits.argmax()))!r} for {tok.token_text(t)!r}"
            if i + 1 < len(ref):
                logits = lane.feed([t])
        held[spec] = lane.cache.nbytes
        ppl = float(torch.tensor(statistics.fmean(nll)).exp())
        print(f"| `{spec}` | {held[spec]:,} | {statistics.fmean(kls):.5f} | {max(kls):.5f} | {diverge or '-'} | {ppl:.3f} |")
    specs = list(held)
    assert held[specs[1]] == held[specs[2]], "the rotated lane must hold int4's bytes"
    print(f"\n{load_line()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
