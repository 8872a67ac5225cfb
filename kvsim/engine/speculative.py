"""Speculative decoding as a lane (``spec:K:DRAFT``): draft K tokens cheaply, check them with ONE
forward of the target over the K positions on top of the cache (a small prefill), keep the longest
prefix the target agrees with, and roll the K/V rows of the rejected drafts back.

How it fits the lockstep simulator (every lane advances on the same token each step): a check
yields the target's own logits for the next token *and* for each accepted draft. The lane keeps
those verified logits and, on the following steps, serves them without a forward (the rows of the
accepted drafts are already in its cache), until it needs a new check. So per step the lane records
either one target forward (``forwards`` = 1, ``drafted``/``accepted``/``rolled_back`` of that check)
or none (``forwards`` = 0: a token that came free with an earlier check). If the run's token ever
differs from what the lane accepted (sampling, or a lossy reference lane), the lane rolls its cache
back to the common prefix and checks again — counted in ``rolled_back`` as well.

Acceptance: greedy — a draft is kept while it equals the target's argmax; sampling — the standard
rule, kept with probability min(1, p(d)/q(d)) (q = 1 for prompt lookup), from the lane's own seeded
draws. Draft sources: ``LookupDraft`` (n-grams copied from the context), ``ModelDraft`` over the
target's first N layers (``early_exit``) or over a second, smaller model with the same tokenizer, and
``HeadDraft``: a learned one-layer head over the target's last hidden states (EAGLE), which the lane hands
it from each check forward.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from ..caches import KVCache
from ..caches.speculative import SpeculativeCache
from ..core.devices import sync
from ..core.sampling import Sampling, SimulationError, draw, probabilities
from ..models.base import ModelLoadError
from ..models.config import ModelConfig
from ..models.draft_head import DraftHead, find_head
from ..models.tokenizer import Tokenizer
from ..models.transformer import ForwardOutput, LayerHook, Transformer
from .counting import StepCost, step_cost


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token lists."""
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


class LookupDraft:
    """Prompt lookup: find the latest earlier occurrence of the context's last n-gram (n = 3, 2, 1)
    and propose the tokens that followed it. No model, no cost beyond a scan of the context."""

    label = "lookup"

    def __init__(self, max_ngram: int = 3) -> None:
        self.max_ngram = max_ngram

    def propose(self, context: list[int], k: int, sampling: Sampling, gen: torch.Generator) -> tuple[list[int], list[float]]:
        n = len(context)
        for size in range(min(self.max_ngram, n - 1), 0, -1):
            tail = context[n - size :]
            for i in range(n - size - 1, -1, -1):
                if context[i : i + size] == tail:
                    follow = context[i + size : i + size + k]
                    return follow, [1.0] * len(follow)  # a copied token is proposed with certainty
        return [], []


def early_exit(model: Transformer, n_layers: int) -> Transformer:
    """The model's first ``n_layers`` blocks, then its own final norm and LM head: a shallow view that
    shares every weight with ``model`` (self-speculative drafting, as LayerSkip)."""
    if not 1 <= n_layers <= model.cfg.n_layers:
        raise SimulationError(f"early:{n_layers}: the model has {model.cfg.n_layers} layers (give 1 to {model.cfg.n_layers})")
    shallow = copy.copy(model)
    shallow._modules = dict(model._modules)
    shallow._modules["layers"] = nn.ModuleList(list(model.layers)[:n_layers])
    return shallow


class ModelDraft:
    """Drafts with a (smaller or shallower) model, autoregressively, over its own KV cache; what it
    drafted beyond the accepted prefix is dropped from that cache at the next proposal."""

    def __init__(self, model: Transformer, label: str) -> None:
        self.model, self.label = model, label
        self.cache = KVCache(model.cfg.n_layers)
        self.fed: list[int] = []

    def propose(self, context: list[int], k: int, sampling: Sampling, gen: torch.Generator) -> tuple[list[int], list[float]]:
        limit = self.model.cfg.max_seq_len
        k = min(k, limit - len(context) + 1)
        if k <= 0:
            return [], []
        device = self.model.device
        c = min(common_prefix(self.fed, context), len(context) - 1, self.cache.n_tokens)
        self.cache.truncate(c)
        ids = torch.tensor([context[c:]], dtype=torch.long, device=device)
        out = self.model(ids, torch.arange(c, len(context), device=device), self.cache, last_only=True)
        fed = list(context)
        drafts: list[int] = []
        probs: list[float] = []
        for j in range(k):
            logits = out.logits[0, -1].float()
            if sampling.temperature > 0:
                q = probabilities(logits, sampling)
                token = draw(q, float(torch.rand((), generator=gen)))
                probs.append(float(q[token]))
            else:
                token = int(torch.argmax(logits))
                probs.append(1.0)
            drafts.append(token)
            if j < k - 1:
                pos = torch.tensor([len(fed)], device=device)
                out = self.model(torch.tensor([[token]], dtype=torch.long, device=device), pos, self.cache, last_only=True)
                fed.append(token)
        self.fed = fed
        return drafts, probs


class HeadDraft:
    """EAGLE-style drafting: the head reads the target's last hidden state of token t and the embedding of
    token t+1 and predicts the hidden state of t+1, which the target's own final norm and LM head turn into a
    draft; from the second draft on it reads its own prediction. The target's hidden states come from the
    lane's check forwards (``observe``); the head keeps its one layer's rows in its own KV cache, row t (read:
    h_t, token t+1) at position t, and drops the rows it built from its own predictions at the next proposal."""

    label = "head"

    def __init__(self, target: Transformer, head: DraftHead) -> None:
        self.target, self.head = target, head
        self.cache = KVCache(1)
        self.tokens: list[int] = []  # the tokens whose target hidden states ``hidden`` holds, position by position
        self.hidden = torch.zeros(0, target.cfg.dim, dtype=target.dtype, device=target.device)
        self.rows_true = 0  # head rows 0..rows_true-1 were built from the target's own hidden states
        self.head_tokens: list[int] = []  # the tokens those rows read (row t: tokens 0..t+1)

    def observe(self, tokens: list[int], start: int, hidden: torch.Tensor) -> None:
        """The target's hidden states (T, dim) of positions start..start+T-1, computed over ``tokens``."""
        keep = min(common_prefix(self.tokens, tokens), self.hidden.shape[0])
        if keep < start:  # a gap: the states before ``start`` are gone (never in a lockstep run), start over
            self.tokens, self.hidden = [], self.hidden[:0]
            return
        self.hidden = torch.cat([self.hidden[:start], hidden.to(self.hidden.dtype)])
        self.tokens = list(tokens[: start + hidden.shape[0]])

    def propose(self, context: list[int], k: int, sampling: Sampling, gen: torch.Generator) -> tuple[list[int], list[float]]:
        n = len(context)
        known = min(self.hidden.shape[0], common_prefix(self.tokens, context))
        if n < 2 or known < n - 1 or k <= 0:  # the prompt's first check: no hidden state to read yet
            return [], []
        device = self.target.device
        # the head's rows still built from the target's states over this context; at least the last is redone
        rows = min(self.rows_true, max(0, common_prefix(self.head_tokens, context) - 1), n - 2)
        self.cache.truncate(rows)
        embed = self.target.tok_embeddings
        drafts: list[int] = []
        probs: list[float] = []
        with torch.no_grad():
            ids = torch.tensor([context[rows + 1 : n]], dtype=torch.long, device=device)
            pred = self.head(self.hidden[rows : n - 1][None], embed(ids), torch.arange(rows, n - 1, device=device), self.cache)
            pred = pred[:, -1:]  # the predicted hidden state of position n - 1
            for j in range(k):
                logits = self.target.head(pred)[0, -1].float()
                if sampling.temperature > 0:
                    q = probabilities(logits, sampling)
                    token = draw(q, float(torch.rand((), generator=gen)))
                    probs.append(float(q[token]))
                else:
                    token = int(torch.argmax(logits))
                    probs.append(1.0)
                drafts.append(token)
                if j < k - 1:
                    ids = torch.tensor([[token]], dtype=torch.long, device=device)
                    pred = self.head(pred, embed(ids), torch.tensor([n - 1 + j], device=device), self.cache)
        self.rows_true, self.head_tokens = n - 1, list(context)
        return drafts, probs


Drafter = LookupDraft | ModelDraft | HeadDraft


@dataclass
class SpecStep:
    """What the lane did this step (the record's per-lane speculative fields)."""

    kv_positions: int = 0  # rows of the sequence this step's forward computed (not the drafts)
    drafted: int = 0  # drafted tokens checked in this step's forward
    accepted: int = 0  # of them, the ones the target agreed with
    rolled_back: int = 0  # K/V rows removed from the cache this step (rejected drafts, or a re-sync)
    forwards: int = 0  # target forwards this step: 1 for a check, 0 for a token that came with an earlier one
    draft_ms: float = 0.0  # time spent drafting (part of the step's time)
    context: int = 0  # key rows the check's last query read
    cost: StepCost | None = None
    draft_ids: tuple[int, ...] = ()  # the drafted tokens this step's check fed, at positions n, n+1, ...
    draft_from: int = 0  # the position of the first of them (n: the text's length)
    draft_rows: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None  # their (q, k, v), (L, B, H, d, D)


def _zero_cost(cfg: ModelConfig, elem: int) -> StepCost:
    cost = step_cost(cfg, new=0, context=0, out=0, dtype_bytes=elem)
    return StepCost(flops={k: 0 for k in cost.flops}, bytes={k: 0 for k in cost.bytes})


class SpeculativeLane:
    """Drives one ``spec:K:DRAFT`` lane: its cache (a ``SpeculativeCache``), its drafter, the logits
    and rows verified ahead of the run."""

    def __init__(self, target: Transformer, cache: KVCache, k: int, drafter: Drafter, sampling: Sampling) -> None:
        self.target, self.cache, self.k, self.drafter, self.sampling = target, cache, k, drafter, sampling
        self.gen = torch.Generator().manual_seed(sampling.seed + 7919)  # the lane's own acceptance draws
        self.fed: list[int] = []  # tokens whose K/V rows the cache holds, in position order
        self.logits: dict[int, torch.Tensor] = {}  # position p -> target logits after tokens[: p + 1]
        self.rows: dict[int, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}  # p -> (q, k, v), (L, B, H, 1, D)
        self.last = SpecStep()

    def reset(self) -> None:
        self.cache.reset()
        self.fed, self.logits, self.rows = [], {}, {}

    def _forget_from(self, c: int) -> int:
        """Roll the cache back to its first ``c`` rows; returns how many rows were removed."""
        removed = self.cache.n_tokens - c
        if removed > 0:
            self.cache.truncate(c)
        self.fed = self.fed[:c]
        self.logits = {p: x for p, x in self.logits.items() if p < c}
        self.rows = {p: x for p, x in self.rows.items() if p < c}
        return max(0, removed)

    def step(
        self,
        tokens: list[int],
        n: int,
        done: int,
        repeats: int = 1,
        hook: LayerHook | None = None,
        in_hook: list[float] | None = None,
    ) -> tuple[ForwardOutput, tuple]:
        """The target's logits after ``tokens[:n]`` and the rows of positions ``done..n-1``; the time
        (median, min, max ms). A check forward runs only when no verified logits are left. ``in_hook[0]``:
        the seconds the progress ``hook`` spent in one forward (the observer's time, not the lane's)."""
        in_hook = [0.0] if in_hook is None else in_hook
        cfg = self.target.cfg
        elem = self.target.dtype.itemsize
        seq = tokens[:n]
        same = common_prefix(self.fed, seq)
        c = min(same, self.cache.n_tokens)
        # the run took another token than the lane had accepted (or a failed step cut the cache): re-sync
        diverged = (same < len(self.fed) and same < n) or self.cache.n_tokens < len(self.fed)
        stat = SpecStep(rolled_back=self._forget_from(c) if diverged else 0)
        if c == n and (n - 1) in self.logits:  # a token that came with an earlier check: no forward
            t0 = time.perf_counter()
            out = self._served(n, done)
            ms = (time.perf_counter() - t0) * 1e3
            stat.context, stat.cost = n, _zero_cost(cfg, elem)
            self.last = stat
            return out, (ms, ms, ms)
        if c >= n:  # nothing new to feed: recompute the last row to get its logits
            c = n - 1
            stat.rolled_back += self._forget_from(c)
        device = self.target.device
        budget = max(0, min(self.k, cfg.max_seq_len - n))
        t0 = time.perf_counter()
        drafts, q = self.drafter.propose(list(seq), budget, self.sampling, self.gen) if budget else ([], [])
        drafts, q = drafts[:budget], q[:budget]
        stat.draft_ms = (time.perf_counter() - t0) * 1e3
        ids = torch.tensor([seq[c:] + drafts], dtype=torch.long, device=device)
        positions = torch.arange(c, n + len(drafts), device=device)
        times = []
        wants_hidden = isinstance(self.drafter, HeadDraft)  # the head reads the target's hidden states
        for repeat in range(repeats):
            if repeat:
                self.cache.truncate(c)
            in_hook[0] = 0.0
            sync(device)
            t1 = time.perf_counter()
            out = self.target(
                ids, positions, self.cache, record=True, last_only=len(drafts) + 1, layer_hook=hook, hidden=wants_hidden
            )
            sync(device)
            times.append((time.perf_counter() - t1 - in_hook[0]) * 1e3)
        # out.logits[0, j]: the target's logits after position n - 1 + j
        accepted = 0
        for j, d in enumerate(drafts):
            target_logits = out.logits[0, j].float()
            if self.sampling.temperature > 0:
                p = probabilities(target_logits, self.sampling)
                u = float(torch.rand((), generator=self.gen))
                ok = u < min(1.0, float(p[d]) / max(q[j], 1e-30))
            else:
                ok = d == int(torch.argmax(target_logits))
            if not ok:
                break
            accepted += 1
        keep = n + accepted
        self.cache.truncate(keep)  # the rejected drafts' rows go
        self.fed = list(seq) + drafts[:accepted]
        if isinstance(self.drafter, HeadDraft):
            assert out.hidden is not None  # hidden=True
            self.drafter.observe(self.fed, c, out.hidden[0, : keep - c])
        for j in range(accepted + 1):
            self.logits[n - 1 + j] = out.logits[0, j]
        assert out.q is not None and out.k is not None and out.v is not None  # record=True
        for pos in range(c, keep):
            i = pos - c
            self.rows[pos] = (out.q[:, :, :, i : i + 1], out.k[:, :, :, i : i + 1], out.v[:, :, :, i : i + 1])
        stat.kv_positions = n - c
        stat.drafted, stat.accepted, stat.forwards = len(drafts), accepted, 1
        if drafts:  # the drafted rows as the check computed them (the rejected ones are gone from the cache)
            stat.draft_ids, stat.draft_from = tuple(int(d) for d in drafts), n
            stat.draft_rows = (out.q[:, :, :, n - c :], out.k[:, :, :, n - c :], out.v[:, :, :, n - c :])
        stat.rolled_back += len(drafts) - accepted
        stat.context = n + len(drafts)
        stat.cost = step_cost(cfg, new=len(ids[0]), context=n + len(drafts), out=len(drafts) + 1, dtype_bytes=elem)
        self.last = stat
        served = self._served(n, done)
        total = [t + stat.draft_ms for t in times]
        return served, (float(np.median(total)), min(total), max(total))

    def _served(self, n: int, done: int) -> ForwardOutput:
        """The verified logits after position n - 1 and the rows of positions done..n-1."""
        logits = self.logits[n - 1][None, None]
        rows = [self.rows[p] for p in range(done, n)]
        q, k, v = (torch.cat([r[i] for r in rows], dim=3) for i in range(3))
        # what the run no longer needs
        self.logits = {p: x for p, x in self.logits.items() if p >= n - 1}
        self.rows = {p: x for p, x in self.rows.items() if p >= n}
        return ForwardOutput(logits, q, k, v)


def make_drafter(
    cache: SpeculativeCache,
    target: Transformer,
    tokenizer: Tokenizer,
    load_draft: Callable[[str], tuple[Transformer, Tokenizer]] | None = None,
) -> Drafter:
    """The drafter a ``SpeculativeCache`` names. ``load_draft(name)`` loads a second model (for ``model:NAME``)."""
    if cache.draft == "lookup":
        return LookupDraft()
    if cache.draft == "early":
        assert cache.draft_layers is not None, "an early:N draft always names its layer count"
        return ModelDraft(early_exit(target, cache.draft_layers), f"early:{cache.draft_layers}")
    if cache.draft == "head":
        try:
            return HeadDraft(target, find_head(target))
        except ModelLoadError as exc:
            raise SimulationError(f"spec:{cache.k}:head: {exc}") from None
    if cache.draft == "model":
        assert cache.draft_model is not None, "a model:NAME draft always names its model"
        if load_draft is None:
            raise SimulationError(f"model:{cache.draft_model}: no way to load a draft model here")
        draft_model, draft_tok = load_draft(cache.draft_model)
        check_same_tokenizer(tokenizer, draft_tok, target.cfg.vocab_size, draft_model.cfg.vocab_size, cache.draft_model)
        return ModelDraft(draft_model, f"model:{cache.draft_model}")
    raise SimulationError(f"unknown draft source {cache.draft!r}")


def check_same_tokenizer(target_tok: Tokenizer, draft_tok: Tokenizer, target_vocab: int, draft_vocab: int, name: str) -> None:
    """A draft model must speak the target's tokens: the same vocabulary, token for token."""
    if draft_vocab != target_vocab:
        raise SimulationError(
            f"draft model {name!r} has a vocabulary of {draft_vocab} tokens, the target {target_vocab}: "
            "speculative decoding needs the same tokenizer"
        )
    if type(draft_tok) is not type(target_tok) or any(
        draft_tok.token_text(i) != target_tok.token_text(i) for i in range(target_vocab)
    ):
        raise SimulationError(f"draft model {name!r} does not use the target's tokenizer (speculation needs the same one)")
