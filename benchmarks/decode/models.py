"""Real-model benchmark: SmolLM2-135M-Instruct cached decode, kvsim vs transformers vs memory bandwidth.

Both engines run the *same* weights — the GGUF file dequantized once by kvsim's loader, then handed
to a ``transformers`` ``LlamaForCausalLM`` (tensor names mapped back) — in fp32, greedy, one token at
a time after the chat-formatted prompt. The two are first checked to give the same logits; then
timed in interleaved blocks (kvsim, transformers, kvsim, …) so machine noise hits both alike, and
the median time per decoded token of each is compared as a ratio measured in this one run.

The memory-bandwidth floor: a decode step must read every weight once (fp32; the tied embedding
matrix once, as the LM head) plus the K/V cache; divided by this machine's measured read bandwidth
(``kvsim.costs.hardware.read_bandwidth``: a sum over a buffer the size of the weights, bytes read per
second, with the same threads — the function ``kvsim roofline`` measures its slope with) that is the
fastest a token could be.

    python benchmarks/decode/models.py [--model smollm2-135m] [--new-tokens 64] [--rounds 3] [--threads 1,2]
                                [--doc docs/benchmarks-models.md]

Needs ``kvsim models get smollm2-135m`` once (or ``--model PATH.gguf``); transformers for the reference.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import torch

from kvsim.caches import KVCache, NoCache
from kvsim.costs.hardware import read_bandwidth
from kvsim.models.loading import ModelLoadError, load_model, set_threads
from kvsim.models.transformer import Transformer

sys.path.append(str(Path(__file__).resolve().parents[1]))  # benchmarks/, where the shared _load.py is
from _load import LoadWatch  # noqa: E402

PROMPT = "What is the capital of France? Answer in one sentence."
NOTES = """Reading the thread rows: on a machine whose cores are shared with other jobs (the load average
above), more torch threads than free cores oversubscribe. Each small parallel op of a one-token step
then waits for a descheduled thread (torch.profiler, 2 threads, load ≈ 3 on 2 cores: the attention's
bmm and softmax took ≈ 2.9 ms per call on 3×45 scores), and kvsim's written-out attention has three
such ops per layer (QKᵀ, softmax, ·V) where transformers' fused SDPA has one. The one-thread rows are
the like-for-like comparison there; on idle cores use `--threads` up to the core count.
"""


def to_transformers(model: Transformer, attn: str):
    """A transformers ``LlamaForCausalLM`` holding ``model``'s weights (kvsim names → HF names)."""
    import transformers

    cfg = model.cfg
    hf_cfg = transformers.LlamaConfig(
        vocab_size=cfg.vocab_size,
        hidden_size=cfg.dim,
        intermediate_size=cfg.hidden_dim,
        num_hidden_layers=cfg.n_layers,
        num_attention_heads=cfg.n_heads,
        num_key_value_heads=cfg.n_kv_heads,
        head_dim=cfg.head_dim,
        max_position_embeddings=cfg.max_seq_len,
        rms_norm_eps=cfg.norm_eps,
        rope_parameters={"rope_type": "default", "rope_theta": cfg.rope_theta},
        tie_word_embeddings=cfg.tie_embeddings,
        attention_bias=cfg.qkv_bias,
    )
    hf_cfg._attn_implementation = attn
    with torch.device("meta"):
        hf = transformers.LlamaForCausalLM(hf_cfg)
    names = {
        "attn.wq": "self_attn.q_proj",
        "attn.wk": "self_attn.k_proj",
        "attn.wv": "self_attn.v_proj",
        "attn.wo": "self_attn.o_proj",
        "mlp.w_gate": "mlp.gate_proj",
        "mlp.w_up": "mlp.up_proj",
        "mlp.w_down": "mlp.down_proj",
        "attn_norm": "input_layernorm",
        "mlp_norm": "post_attention_layernorm",
    }
    state = {}
    for key, value in model.state_dict().items():
        if key == "tok_embeddings.weight":
            state["model.embed_tokens.weight"] = value
        elif key == "norm.weight":
            state["model.norm.weight"] = value
        elif key == "lm_head.weight":
            state["lm_head.weight"] = value
        else:
            _, i, rest = key.split(".", 2)
            module, leaf = rest.rsplit(".", 1)
            state[f"model.layers.{i}.{names[module]}.{leaf}"] = value
    hf.load_state_dict(state, strict=True, assign=True)
    if cfg.tie_embeddings:
        hf.lm_head.weight = hf.model.embed_tokens.weight
    hf.model.rotary_emb = type(hf.model.rotary_emb)(hf_cfg)  # its inv_freq buffer is not in the state dict
    left = [n for n, t in [*hf.named_parameters(), *hf.named_buffers()] if t.is_meta]
    if left:
        raise RuntimeError(f"transformers model still has meta tensors: {left[:3]}")
    return hf.eval()


def hf_call(hf, ids: torch.Tensor, past):
    """One cached forward; transformers ≥ 5.2x calls the cache ``cache``, older ``past_key_values``."""
    import inspect

    key = "cache" if "cache" in inspect.signature(hf.forward).parameters else "past_key_values"
    out = hf(ids, use_cache=True, **({key: past} if past is not None else {}))
    return out.logits, out[key]


@torch.no_grad()
def decode_kvsim(model: Transformer, prompt: list[int], new: int) -> tuple[list[float], list[int]]:
    cache, n = KVCache(model.cfg.n_layers), len(prompt)
    logits = model(torch.tensor([prompt]), torch.arange(n), cache, last_only=True).logits
    times, tokens = [], []
    for i in range(new):
        tokens.append(int(logits[0, -1].argmax()))
        t0 = time.perf_counter()
        logits = model(torch.tensor([[tokens[-1]]]), torch.tensor([n + i]), cache, last_only=True).logits
        times.append(time.perf_counter() - t0)
    return times, tokens


@torch.no_grad()
def decode_hf(hf, prompt: list[int], new: int) -> tuple[list[float], list[int]]:
    logits, past = hf_call(hf, torch.tensor([prompt]), None)
    times, tokens = [], []
    for _ in range(new):
        tokens.append(int(logits[0, -1].argmax()))
        t0 = time.perf_counter()
        logits, past = hf_call(hf, torch.tensor([[tokens[-1]]]), past)
        times.append(time.perf_counter() - t0)
    return times, tokens


def bytes_per_token(model: Transformer, context: int) -> int:
    """What one decode step must read: every weight once (the tied matrix once, as the LM head; the
    embedding lookup reads one row) plus the K/V cache of ``context`` tokens."""
    cfg = model.cfg
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    kv = 2 * cfg.n_layers * cfg.n_kv_heads * cfg.head_dim * context * model.dtype.itemsize
    return weights + kv


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m", help="a fetched name or a Llama .gguf / HF dir")
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", default="", help="torch thread counts to measure, e.g. 1,2 (default: torch's)")
    ap.add_argument("--hf-attn", default="sdpa", choices=["sdpa", "eager"], help="transformers attention kernel")
    ap.add_argument("--doc", help="also write the figures and this command to this Markdown file")
    args = ap.parse_args(argv)
    watch = LoadWatch()  # the load beside the figures; no ratio when it moved during the run
    try:
        t0 = time.perf_counter()
        loaded = load_model(args.model)
        load_s = time.perf_counter() - t0
    except ModelLoadError as exc:
        print(f"error: {exc} (fetch it with `kvsim models get smollm2-135m`)", file=sys.stderr)
        return 2
    model, tok = loaded.model, loaded.tokenizer
    hf = to_transformers(model, args.hf_attn)
    prompt = tok.encode(tok.format_prompt(PROMPT))

    # 0. same weights, same function: prefill logits agree
    with torch.no_grad():
        ours = model(torch.tensor([prompt]), torch.arange(len(prompt)), NoCache(model.cfg.n_layers)).logits
        ref = hf(torch.tensor([prompt])).logits
    max_diff = float((ours - ref).abs().max())

    cfg = model.cfg
    rows = [
        (
            "model",
            f"{args.model} ({loaded.info.get('gguf_name') or cfg.name}; {cfg.n_layers} layers, {cfg.n_heads} heads / "
            f"{cfg.n_kv_heads} KV heads, dim {cfg.dim}, {model.n_params() / 1e6:.1f} M parameters, fp32)",
        ),
        (
            "machine",
            f"{platform.machine()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start, "
            f"torch {torch.__version__}",
        ),
        ("load (GGUF → fp32 model)", f"{load_s:.1f} s"),
        ("prompt / decoded tokens", f"{len(prompt)} / {args.new_tokens} × {args.rounds} rounds, greedy"),
        ("max abs logit difference at prefill (same weights)", f"{max_diff:.1e}"),
    ]
    threads = [int(t) for t in args.threads.split(",")] if args.threads else [torch.get_num_threads()]
    for n_threads in threads:
        set_threads(n_threads)  # torch's and numpy's BLAS (kvsim's decode kernel) alike
        # 1. warm-up, then interleaved rounds
        decode_kvsim(model, prompt, 4)
        decode_hf(hf, prompt, 4)
        k_times, h_times, same = [], [], True
        for _ in range(args.rounds):
            kt, ktok = decode_kvsim(model, prompt, args.new_tokens)
            ht, htok = decode_hf(hf, prompt, args.new_tokens)
            k_times += kt
            h_times += ht
            same &= ktok == htok
        k_ms, h_ms = statistics.median(k_times) * 1e3, statistics.median(h_times) * 1e3
        # 2. the memory-bandwidth floor, with the same threads
        need = bytes_per_token(model, len(prompt) + args.new_tokens // 2)
        bw = read_bandwidth(need)  # a read of a weight-sized buffer, as kvsim roofline measures it
        floor_ms = need / bw * 1e3
        t = f"[{n_threads} thread{'s' if n_threads > 1 else ''}]"
        rows += [
            (f"{t} same greedy tokens", f"{same}"),
            (f"{t} kvsim cached decode", f"{k_ms:.1f} ms/token = {1e3 / k_ms:.1f} tokens/s"),
            (f"{t} transformers cached decode ({args.hf_attn})", f"{h_ms:.1f} ms/token = {1e3 / h_ms:.1f} tokens/s"),
            (f"{t} kvsim / transformers time per token", watch.ratio(k_ms / h_ms)),
            (f"{t} read bandwidth (a sum over {need / 1e6:.0f} MB)", f"{bw / 1e9:.1f} GB/s"),
            (f"{t} bytes read per token (weights + K/V)", f"{need / 1e6:.0f} MB"),
            (f"{t} bandwidth floor", f"{floor_ms:.1f} ms/token = {1e3 / floor_ms:.1f} tokens/s"),
            (f"{t} kvsim at % of the bandwidth limit", watch.ratio(100 * floor_ms / k_ms, ".0f", " %")),
            (f"{t} transformers at % of the bandwidth limit", watch.ratio(100 * floor_ms / h_ms, ".0f", " %")),
        ]
    rows.append(("machine load (1 min) at start → end", f"{watch.start[0]:.2f} → {watch.now()[0]:.2f}"))
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    if args.doc:
        command = "python benchmarks/decode/models.py " + " ".join(
            shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:])
        )
        lines = [
            "# Real-model benchmark: SmolLM2-135M-Instruct",
            "",
            f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC with",
            "",
            "```",
            command.strip(),
            "```",
            "",
            "| figure | value |",
            "|---|---|",
            *(f"| {k} | {v} |" for k, v in rows),
            "",
            *(p.replace("\n", " ").strip() + "\n" for p in (__doc__ or "").split("\n\n")[1:3]),
            NOTES,
        ]
        Path(args.doc).write_text("\n".join(lines), encoding="utf-8")
        print(f"\nwrote {args.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
