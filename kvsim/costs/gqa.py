"""MQA / GQA / MHA side by side: one model shape, the K/V head count varied, measured.

Grouped-query attention lets ``g = H / H_kv`` query heads share one K/V head, so the cache holds
``2 · L · H_kv · d · bytes`` per token instead of ``2 · L · H · d · bytes``. ``compare_kv_heads`` runs
the same prompt on random models that differ only in H_kv (H, H/2, …, 1) with a KV cache and reports
what each holds and how long each decode step takes — real bytes from the cache, real times.

Beside them, latent attention (MLA, DeepSeek-V2): the same layers, heads and width, caching one latent
of ``r`` values and one RoPE key of ``d_R`` per token and layer — ``L · (r + d_R) · bytes`` — with
DeepSeek-V2's proportions by default (``r = 4·d``, ``d_R = d/2``: 512 and 64 for its d = 128).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..caches import parse_lanes
from ..engine.simulate import Simulator
from ..models.loading import load_model


@dataclass(frozen=True)
class KvHeadsRow:
    kv_heads: int
    group_size: int  # query heads per K/V head
    kind: str  # "MHA", "GQA" or "MQA"
    bytes_per_token: int  # measured: cache bytes / cached tokens
    cache_bytes: int  # at the end of the run
    itl_ms_median: float  # decode steps, measured
    params: int
    latent: int | None = None  # MLA: the latent's width r + the RoPE key's d_R (None: K/V heads)


def kv_head_counts(heads: int) -> list[int]:
    """H, H/2, …, 1: every divisor of ``heads`` reached by halving (and 1, MQA)."""
    counts, h = [], heads
    while h >= 1:
        if heads % h == 0 and h not in counts:
            counts.append(h)
        if h == 1:
            break
        h //= 2
    return counts if counts[-1] == 1 else [*counts, 1]


def compare_kv_heads(
    family: str = "llama",
    layers: int = 4,
    heads: int = 8,
    dim: int = 256,
    prompt_len: int = 64,
    steps: int = 32,
    seed: int = 0,
    mla: bool = True,
    latent: int | None = None,
) -> list[KvHeadsRow]:
    rows = []
    prompt = [(7 * i + 3) % 250 + 1 for i in range(prompt_len)]  # any ids: random models have no language
    for kv in kv_head_counts(heads):
        loaded = load_model(
            f"random:family={family},layers={layers},heads={heads},kv_heads={kv},dim={dim},"
            f"ctx={prompt_len + steps + 1},seed={seed}"
        )
        sim = Simulator(loaded.model, loaded.tokenizer, prompt, parse_lanes("kv"))
        records = list(sim.run(steps, stop_at_eos=False))
        last = records[-1].lanes[0]
        g = heads // kv
        rows.append(
            KvHeadsRow(
                kv_heads=kv,
                group_size=g,
                kind="MHA" if g == 1 else "MQA" if kv == 1 else "GQA",
                bytes_per_token=last.cache_bytes // last.cache_tokens,
                cache_bytes=last.cache_bytes,
                itl_ms_median=float(np.median([r.lanes[0].wall_ms for r in records[1:]])),
                params=loaded.model.n_params(),
            )
        )
    if mla:
        rows.append(_mla_row(layers, heads, dim, prompt, steps, seed, latent))
    return rows


def _mla_row(layers: int, heads: int, dim: int, prompt: list[int], steps: int, seed: int, latent: int | None) -> KvHeadsRow:
    """The same shape with latent attention, run with a KV cache on the model directly (greedy decode)."""
    import time

    import torch

    from ..caches import make_cache

    extra = f",latent={latent}" if latent else ""
    loaded = load_model(
        f"random:family=mla,layers={layers},heads={heads},dim={dim},ctx={len(prompt) + steps + 1},seed={seed}{extra}"
    )
    model, cfg = loaded.model, loaded.model.cfg
    cache = make_cache("kv", cfg.n_layers)
    ids = torch.tensor([prompt])
    times = []
    with torch.no_grad():
        logits = model(ids, torch.arange(len(prompt)), cache, last_only=True).logits
        for t in range(len(prompt), len(prompt) + steps - 1):
            token = logits[:, -1].argmax(-1, keepdim=True)
            t0 = time.perf_counter()
            logits = model(token, torch.tensor([t]), cache, last_only=True).logits
            times.append((time.perf_counter() - t0) * 1e3)
    return KvHeadsRow(
        kv_heads=1,
        group_size=heads,
        kind="MLA",
        bytes_per_token=cache.nbytes // cache.n_tokens,
        cache_bytes=cache.nbytes,
        itl_ms_median=float(np.median(times)) if times else 0.0,
        params=model.n_params(),
        latent=cfg.kv_lora_rank + cfg.qk_rope_head_dim,
    )
