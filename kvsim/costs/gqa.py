"""MQA / GQA / MHA side by side: one model shape, the K/V head count varied, measured.

Grouped-query attention lets ``g = H / H_kv`` query heads share one K/V head, so the cache holds
``2 · L · H_kv · d · bytes`` per token instead of ``2 · L · H · d · bytes``. ``compare_kv_heads`` runs
the same prompt on random models that differ only in H_kv (H, H/2, …, 1) with a KV cache and reports
what each holds and how long each decode step takes — real bytes from the cache, real times. The
decode steps are interleaved (one step of each model per round, the order rotating) and each model's
time is paired with MHA's of the same round: the ratio comes with its interval and a verdict
(``kvsim.core.compare``), "within noise" when the interval includes 1.

Beside them, latent attention (MLA, DeepSeek-V2): the same layers, heads and width, caching one latent
of ``r`` values and one RoPE key of ``d_R`` per token and layer — ``L · (r + d_R) · bytes`` — with
DeepSeek-V2's proportions by default (``r = 4·d``, ``d_R = d/2``: 512 and 64 for its d = 128).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..caches import make_cache
from ..core.compare import Comparison, compare_paired, interleave
from ..models.loading import load_model


@dataclass(frozen=True)
class KvHeadsRow:
    kv_heads: int
    group_size: int  # query heads per K/V head
    kind: str  # "MHA", "GQA", "MQA" or "MLA"
    bytes_per_token: int  # measured: cache bytes / cached tokens
    cache_bytes: int  # at the end of the run
    itl_ms_median: float  # decode steps, measured (interleaved with the other rows' steps)
    params: int
    latent: int | None = None  # MLA: the latent's width r + the RoPE key's d_R (None: K/V heads)
    # this row's decode step over the first row's (MHA), paired round by round (kvsim.core.compare);
    # None on the first row itself
    itl_ratio_vs_mha: float | None = None
    itl_ratio_spread: tuple[float, float] | None = None  # the interval of that ratio
    itl_ratio_coverage: float | None = None  # the interval's confidence
    pairs: int = 0  # decode rounds timed
    verdict: str | None = None  # "faster", "slower" or "within noise" (than MHA)
    rank: int = 0  # 1 = the fastest by its ratio to MHA
    vs_next: str | None = None  # against the row ranked next, paired directly: "faster" or "within noise" (None: the last)


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


class _Decoder:
    """One model with a KV cache, decoding greedily one token per call (a candidate of the comparison)."""

    def __init__(self, spec: str, prompt: list[int]) -> None:
        loaded = load_model(spec)
        self.model, self.cfg = loaded.model, loaded.model.cfg
        self.cache = make_cache("kv", self.cfg.n_layers)
        self.n = len(prompt)
        with torch.no_grad():
            self.logits = self.model(torch.tensor([prompt]), torch.arange(self.n), self.cache, last_only=True).logits
            self.step()  # a warm-up decode (lazy set-up is not a step's time), then its row is taken back
        self.cache.truncate(len(prompt))
        self.n = len(prompt)

    def step(self) -> None:
        token = self.logits[:, -1].argmax(-1, keepdim=True)
        with torch.no_grad():
            self.logits = self.model(token, torch.tensor([self.n]), self.cache, last_only=True).logits
        self.n += 1


def compare_kv_heads(
    family: str = "llama",
    layers: int = 4,
    heads: int = 8,
    dim: int = 256,
    prompt_len: int = 64,
    steps: int = 64,
    seed: int = 0,
    mla: bool = True,
    latent: int | None = None,
    *,
    precision: float = 0.10,
    clock: Callable[[], float] = time.perf_counter,
) -> list[KvHeadsRow]:
    """Every K/V head count (and MLA) decoding side by side: one decode step of each per round, in a
    rotating order, until every ratio to MHA is known within ``precision`` (at least 8 rounds) or
    ``steps - 1`` decode steps are done (the prefill makes the first token)."""
    prompt = [(7 * i + 3) % 250 + 1 for i in range(prompt_len)]  # any ids: random models have no language
    ctx = prompt_len + steps + 1
    decoders: dict[str, _Decoder] = {}
    shapes: dict[str, tuple[int, int, str]] = {}
    for kv in kv_head_counts(heads):
        g = heads // kv
        kind = "MHA" if g == 1 else "MQA" if kv == 1 else "GQA"
        name = f"{kind} ({kv} K/V heads)"
        spec = f"random:family={family},layers={layers},heads={heads},kv_heads={kv},dim={dim},ctx={ctx},seed={seed}"
        decoders[name], shapes[name] = _Decoder(spec, prompt), (kv, g, kind)
    if mla:
        extra = f",latent={latent}" if latent else ""
        spec = f"random:family=mla,layers={layers},heads={heads},dim={dim},ctx={ctx},seed={seed}{extra}"
        decoders["MLA"], shapes["MLA"] = _Decoder(spec, prompt), (1, heads, "MLA")
    rounds = steps - 1
    comparisons: dict[str, Comparison] = {}
    medians = dict.fromkeys(decoders, 0.0)
    ranked, vs_next, pairs = list(decoders), dict.fromkeys(decoders), 0
    if rounds >= 1:
        timed = interleave(
            {name: d.step for name, d in decoders.items()},
            min_rounds=min(8, rounds),
            max_rounds=rounds,
            precision=precision,
            clock=clock,
        )
        comparisons, pairs = timed.comparisons(), timed.rounds
        medians = {name: timed.median(name) * 1e3 for name in decoders}
        ranked.sort(key=lambda n: comparisons[n].ratio if n in comparisons else 1.0)
        for a, b in zip(ranked, ranked[1:], strict=False):  # each against the next, paired round by round
            vs_next[a] = compare_paired(timed.times[b], timed.times[a], name=a, baseline_name=b).verdict
    rows = []
    for name, d in decoders.items():
        kv, g, kind = shapes[name]
        c = comparisons.get(name)
        rows.append(
            KvHeadsRow(
                kv_heads=kv,
                group_size=g,
                kind=kind,
                bytes_per_token=d.cache.nbytes // d.cache.n_tokens,
                cache_bytes=d.cache.nbytes,
                itl_ms_median=medians[name],
                params=d.model.n_params(),
                latent=d.cfg.kv_lora_rank + d.cfg.qk_rope_head_dim if kind == "MLA" else None,
                itl_ratio_vs_mha=None if c is None else c.ratio,
                itl_ratio_spread=None if c is None else (c.low, c.high),
                itl_ratio_coverage=None if c is None else c.coverage,
                pairs=pairs,
                verdict=None if c is None else c.verdict,
                rank=ranked.index(name) + 1,
                vs_next=vs_next[name],
            )
        )
    return rows
