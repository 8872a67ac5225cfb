"""Continuous batching through one shared paged pool: one batched forward per step over every running
request, chunked prefill under a token budget, and preemption by recompute when the pool runs out.

    engine = BatchingEngine(model, tokenizer, requests, RunOptions(block_size=16, pool_blocks=24),
                            BatchLimits(max_batched_tokens=64), arrivals=[0, 0, 3, 5])
    run = engine.run()               # a RequestsRun with schedule "continuous"
    run.batches[s]                   # BatchStep: which requests ran in step s, how many tokens each, preemptions
    run.snapshots[s]                 # the pool after step s
    run.requests[i].token_ms         # the clock at each of its tokens: TTFT and the inter-token latencies

How a step is scheduled (as vLLM's v1 scheduler describes itself; written here from that description):

* every request keeps its tokens (prompt + generated) and the number of them whose K/V rows are in
  its blocks. A step computes, per scheduled request, the next rows that are missing: the whole
  rest of a prompt, a chunk of it, or the one newest token (a decode). When a request's rows reach
  its last token, that row's logits give its next token. Prefill, chunked prefill, decode and
  recompute after preemption are this one rule;
* the step's budget is ``max_batched_tokens`` positions. Running requests go first, in the order
  they were admitted; then waiting requests, first come first served, while budget, blocks (and
  ``max_running``) allow. With ``chunked_prefill`` a prompt takes what budget is left (at most
  ``chunk_size`` a step) and goes on next step; without it a prompt is scheduled whole or waits;
* a request joining looks its prompt's full blocks up in the prefix cache first (as the requests
  engine does); only the rest is computed and only that needs free blocks;
* when a running request needs a block and none is free, the request admitted last is preempted:
  its blocks go back to the pool (tail first; full ones stay registered, so its recompute may hit
  them) and it returns to the front of the waiting queue with the tokens it already generated; it
  is recomputed later (vLLM's recompute mode). If it is the request that needed the block, it
  waits itself. No admission happens in a step that preempted;
* a finished request's blocks return to the pool at once.

The forward packs every scheduled request's new positions into one row (``ids`` (1, T_total), each
position its own): embeddings, the Q/K/V and output projections, the MLP and the LM head run once
for the whole batch — the weights are read once per step, whatever the batch size. Attention runs
per request (``_PackedBatch.attend_packed``): each request's new rows are written into its blocks
and its queries read only its own rows, gathered through its block table, with the model's own
attention code (``Attention.attend``) — exactly what the request would compute alone, so its
logits equal a run alone up to the rounding of the batched matmuls. The LM head runs only on the
rows that emit a token.

Sampling: each request draws from its own generator, seeded ``sampling.seed + index``, one draw per
token, so its text does not depend on what it was batched with.

Time: a step's wall time covers scheduling, the forward and sampling; the run's clock is the sum of
the steps so far (steps in which nothing runs are skipped and cost nothing). A request arriving at
step ``a`` arrives at the clock when step ``a`` starts; its TTFT is the clock at its first token
minus its arrival; its inter-token latencies are the clock between its tokens — a step that also
carries a long prefill stalls every decode in it, which chunked prefill bounds.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import torch

from ..caches.base import Cache, PackedBatch, PolicyInfo, SequenceAttention
from ..caches.block_table import SequenceBlocks
from ..core.devices import sync
from ..core.sampling import SimulationError, choose
from ..models.tokenizer import Tokenizer
from ..models.transformer import Transformer
from .core import (
    BatchLimits,
    RequestState,
    RunOptions,
    Scheduled,
    build_run,
    check_arrivals,
    progress,
    warm_up,
)
from .records import BatchEntry, BatchStep, PoolSnapshot, RequestsRun, take_snapshot
from .request_lists import RequestInput


class RunCancelled(SimulationError):
    """``should_stop`` asked the run to stop; nothing of it is kept."""


def poisson_arrivals(n: int, rate: float, seed: int = 0) -> list[int]:
    """Arrival steps of ``n`` requests arriving at ``rate`` requests per step on average (a Poisson
    process: exponential gaps, seeded), the first at step 0."""
    if not isinstance(rate, int | float) or not 0 < rate <= 1e6:
        raise SimulationError(f"arrival rate must be a number of requests per step above 0, got {rate!r}")
    gen = np.random.default_rng(seed)
    gaps = gen.exponential(1.0 / rate, size=max(0, n - 1))
    return [0, *(int(t) for t in np.floor(np.cumsum(gaps)))]


class _SequenceView(Cache):
    """One request inside a packed forward: its new rows go to the slots reserved for them and its
    attention reads every row it holds, through its block table."""

    def __init__(self, seq: SequenceBlocks, blocks: torch.Tensor, slots: torch.Tensor) -> None:
        self.seq, self.blocks, self.slots = seq, blocks, slots
        self._positions: torch.Tensor | None = None

    def describe(self) -> PolicyInfo:
        return PolicyInfo("paged", "paged KV cache", "one request of a batch", True, False, False)

    def update(
        self, layer: int, k_new: torch.Tensor, v_new: torch.Tensor, positions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        self.seq.write(layer, self.blocks, self.slots, k_new, v_new)
        return self.seq.gather(layer)

    def key_positions(self, layer: int) -> torch.Tensor:
        if self._positions is None:
            self._positions = torch.arange(self.seq.n_tokens, device=self.seq.pool.rows()[0].device)
        return self._positions

    def reset(self) -> None:
        raise NotImplementedError

    def truncate(self, n_tokens: int) -> None:
        raise NotImplementedError

    @property
    def n_tokens(self) -> int:
        return self.seq.n_tokens

    def bytes_split(self) -> tuple[int, int]:
        return len(self.seq.blocks) * self.seq.pool.block_bytes, 0


class _PackedBatch(PackedBatch):
    """One packed forward's sequences: positions ``bounds[i][0]:bounds[i][1]`` of the row belong to
    request ``views[i]``; the model hands each layer's attention to ``attend_packed``."""

    def __init__(self, views: list[_SequenceView], bounds: list[tuple[int, int]]) -> None:
        self.views, self.bounds = views, bounds

    def attend_packed(
        self,
        attention: SequenceAttention,
        layer: int,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        positions: torch.Tensor,
    ) -> torch.Tensor:
        out = [
            attention.attend(q[:, :, s:e], k[:, :, s:e], v[:, :, s:e], positions[s:e], view, layer)
            for view, (s, e) in zip(self.views, self.bounds, strict=True)
        ]
        return out[0] if len(out) == 1 else torch.cat(out, 1)


class BatchingEngine:
    """Runs a request list with continuous batching; ``run()`` returns the frozen ``RequestsRun``.

    ``arrivals[i]`` is the step request ``i`` arrives at (all at 0 when not given). ``on_step(batch_step,
    engine)`` is called after every step (progress); ``should_stop()`` is asked before every step and
    stops the run with ``RunCancelled`` when it returns True."""

    def __init__(
        self,
        model: Transformer,
        tokenizer: Tokenizer,
        requests: Sequence[RequestInput | Sequence[int]],
        options: RunOptions | None = None,
        limits: BatchLimits | None = None,
        *,
        arrivals: Sequence[int] | None = None,
        on_step: Callable[[BatchStep, BatchingEngine], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> None:
        self.options = options = options if options is not None else RunOptions()
        self.limits = limits = limits if limits is not None else BatchLimits()
        n = len(requests)
        steps = check_arrivals(arrivals, n) if n else []
        given, pool_blocks = options.check_requests(model.cfg, requests)
        limits.check_requests(given, options.steps)
        if model.cfg.linear_layers:
            raise SimulationError(
                "continuous batching packs the requests into one row; a hybrid model's Gated DeltaNet layers carry a "
                "state per sequence, which a packed row does not give them yet: run the requests one at a time"
            )
        self.model, self.tokenizer = model, tokenizer
        self.block_size, self.steps = options.block_size, options.steps
        self.sampling = options.sampling
        self.on_step, self.should_stop = on_step, should_stop
        self.pool = options.make_pool(model, pool_blocks)
        self.requests = [
            RequestState(i, r, SequenceBlocks(self.pool, owner=i), arrival=a)
            for i, (r, a) in enumerate(zip(given, steps, strict=True))
        ]
        seed = self.sampling.seed
        self._generators = [torch.Generator().manual_seed(seed + r.index) for r in self.requests]  # one draw a token
        self._logits: dict[int, list[np.ndarray]] = {r.index: [] for r in self.requests}
        self.pending = deque(sorted(self.requests, key=lambda r: (r.arrival, r.index)))
        self.waiting: deque[RequestState] = deque()
        self.running: list[RequestState] = []
        self.batches: list[BatchStep] = []
        self.snapshots: list[PoolSnapshot] = []
        self.step = 0
        self.clock = 0.0
        if options.warmup:
            warm_up(self.model, self.block_size, list(given[0].prompt_ids))

    @classmethod
    def from_keywords(
        cls,
        model: Transformer,
        tokenizer: Tokenizer,
        requests: Sequence[RequestInput | Sequence[int]],
        *,
        arrivals: Sequence[int] | None = None,
        on_step: Callable[[BatchStep, BatchingEngine], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
        **options: Any,
    ) -> BatchingEngine:
        """The engine given flat keywords (``block_size=…, max_batched_tokens=…``): ``RunOptions`` and
        ``BatchLimits``' fields."""
        run_options = RunOptions.take(options)
        return cls(
            model,
            tokenizer,
            requests,
            run_options,
            BatchLimits(**options),
            arrivals=arrivals,
            on_step=on_step,
            should_stop=should_stop,
        )

    # ------------------------------------------------------------------ running
    @property
    def logits(self) -> dict[int, list[np.ndarray]]:
        """Per request, the logits row of each output token (``record_logits=True``)."""
        return self._logits

    def run(self) -> RequestsRun:
        for _ in self.iterate():
            pass
        return self._result()

    def result(self) -> RequestsRun:
        if self.pending or self.waiting or self.running:
            raise RuntimeError("the batching run is not finished")
        return self._result()

    def progress(self) -> tuple[int, int]:
        """(tokens generated so far, at most), a finished request counting as all its steps."""
        return progress(self.requests, self.steps)

    def iterate(self) -> Iterator[BatchStep]:
        """Run one step at a time, yielding each ``BatchStep`` (``result()`` once it is exhausted)."""
        while self.pending or self.waiting or self.running:
            if self.should_stop is not None and self.should_stop():
                raise RunCancelled("the requests run was cancelled")
            if not self.waiting and not self.running:
                self.step = max(self.step, self.pending[0].arrival)  # idle until the next arrival
            arrived = []
            while self.pending and self.pending[0].arrival <= self.step:
                r = self.pending.popleft()
                r.status, r.arrival_ms = "waiting", self.clock
                self.waiting.append(r)
                arrived.append(r.index)
            device = self.model.device
            sync(device)
            t0 = time.perf_counter()
            plan, preempted = self._schedule()
            emitted = self._forward(plan)
            sync(device)
            ms = (time.perf_counter() - t0) * 1e3
            self.clock += ms
            entries, finished = self._after(plan, emitted)
            self._record(ms, entries, tuple(arrived), tuple(preempted), finished)
            self.step += 1
            yield self.batches[-1]

    def _schedule(self) -> tuple[list[Scheduled], list[int]]:
        """This step's plan (one ``Scheduled`` per request that runs), and the requests preempted to make room."""
        limits, budget = self.limits, self.limits.max_batched_tokens
        plan: list[Scheduled] = []
        preempted: list[int] = []
        for r in list(self.running):
            if r.status != "running":
                continue  # preempted a moment ago, for an earlier request
            if budget == 0:
                break
            start = r.seq.n_tokens
            n = min(len(r.tokens) - start, budget, limits.chunk)
            while r.seq.blocks_to_reserve(n) > self.pool.n_free:
                victim = self.running[-1]
                self._preempt(victim)
                preempted.append(victim.index)
                if victim is r:
                    break
            if r.status == "running":
                plan.append(self._reserve(r, start, n))
                budget -= n
        while not preempted and self.waiting and budget > 0:
            if limits.max_running is not None and len(self.running) >= limits.max_running:
                break
            r = self.waiting[0]
            prefix = r.seq.cached_prefix(r.tokens)  # looked up once; taken below if it joins
            start = prefix.rows
            want = len(r.tokens) - start
            if limits.chunked_prefill:
                n = min(want, budget, limits.chunk)
            elif want <= budget:
                n = want
            else:
                break  # the whole prompt or nothing: it waits (first come, first served)
            # a waiting request holds no block: it needs the blocks past its hits, and taking a free hit
            # takes it out of the free queue
            if -(-(start + n) // self.block_size) - len(prefix.blocks) > self.pool.n_free - prefix.free_blocks:
                break
            self.waiting.popleft()
            reused = r.seq.take_prefix(prefix)
            if not r.started:
                r.reused, r.first_step = reused, len(self.batches)
            r.status = "running"
            self.running.append(r)
            plan.append(self._reserve(r, start, n))
            budget -= n
        return plan, preempted

    def _reserve(self, r: RequestState, start: int, n: int) -> Scheduled:
        """Room for ``r``'s next ``n`` rows. Under vLLM's order the blocks they fill are registered now, as
        vLLM's ``allocate_slots`` caches them when it schedules them: a request admitted later in the same
        step hits them (each layer writes the earlier request's rows before a later one reads them: the
        plan's order, as vLLM's cache write precedes its attention)."""
        scheduled = Scheduled.reserve(r, start, n)
        if self.pool.semantics == "vllm":
            r.seq.commit()
        return scheduled

    def _preempt(self, r: RequestState) -> None:
        r.seq.free()
        r.status = "waiting"
        r.preemptions += 1
        self.running.remove(r)
        self.waiting.appendleft(r)

    def _forward(self, plan: list[Scheduled]) -> list[int]:
        """One forward over the packed batch; the next token of each request whose rows reached its last token."""
        if not plan:
            return []
        device = self.model.device
        ids: list[int] = []
        positions: list[int] = []
        rows: list[int] = []
        views, bounds = [], []
        for p in plan:
            r = p.request
            bounds.append((len(ids), len(ids) + p.count))
            ids += r.tokens[p.start : p.end]
            positions += range(p.start, p.end)
            views.append(_SequenceView(r.seq, p.blocks, p.slots))
            if p.emits:
                rows.append(len(ids) - 1)
        out = self.model(
            torch.tensor([ids], dtype=torch.long, device=device),
            torch.tensor(positions, dtype=torch.long, device=device),
            _PackedBatch(views, bounds),
            rows=torch.tensor(rows, dtype=torch.long, device=device),
        )
        logits = out.logits[0].float()
        emitted, i = [], 0
        for p in plan:
            if not p.emits:
                continue
            r = p.request
            row = logits[i]
            i += 1
            if not bool(torch.isfinite(row).all()):
                raise SimulationError(f"request {r.index + 1}: the model produced logits that are not numbers")
            u = float(torch.rand((), generator=self._generators[r.index])) if self.sampling.temperature > 0 else 0.5
            emitted.append(choose(row, self.sampling, u))
            if self.limits.record_logits:
                self._logits[r.index].append(row.cpu().numpy().copy())
        return emitted

    def _after(self, plan: list[Scheduled], emitted: list[int]) -> tuple[tuple[BatchEntry, ...], tuple[int, ...]]:
        """Register full blocks, append the new tokens, release the blocks of finished requests; what
        each request did in the step, and which finished."""
        eos = getattr(self.tokenizer, "eos_id", None)
        entries, finished, tokens = [], [], iter(emitted)
        for p in plan:
            r, start, end = p.request, p.start, p.end
            kind = "recompute" if start < r.high_water else "prefill" if start < len(r.given.prompt_ids) else "decode"
            entries.append(BatchEntry(r.index, kind, start, p.count, p.emits))
            r.seq.commit()
            r.recomputed += max(0, min(end, r.high_water) - start)
            r.high_water = max(r.high_water, end)
            r.last_step = len(self.batches)
            if not p.emits:
                continue
            token = next(tokens)
            if r.token_ms:  # a later token: the clock since the one before
                r.itl_ms.append(self.clock - r.token_ms[-1])
            else:  # its first token: the clock since it arrived
                ttft = self.clock - r.arrival_ms
                r.ttft = (ttft, ttft, ttft)
            r.emit(token)
            r.token_steps.append(self.step)
            r.token_ms.append(self.clock)
            if r.has_ended(self.steps, eos, self.options.stop_at_eos):
                r.finish()
                self.running.remove(r)
                finished.append(r.index)
        return tuple(entries), tuple(finished)

    def _record(
        self,
        ms: float,
        entries: tuple[BatchEntry, ...],
        arrived: tuple[int, ...],
        preempted: tuple[int, ...],
        finished: tuple[int, ...],
    ) -> None:
        pool = self.pool
        step = BatchStep(
            step=self.step,
            ms=ms,
            clock_ms=self.clock,
            entries=entries,
            arrived=arrived,
            preempted=preempted,
            finished=finished,
            waiting=tuple(r.index for r in self.waiting),
            held_blocks=pool.n_usable - pool.n_free,
            cached_free_blocks=pool.n_cached_free,
            free_blocks=pool.n_free,
        )
        self.batches.append(step)
        if self.options.keep_snapshots:
            started = [r for r in self.requests if r.started]
            self.snapshots.append(
                take_snapshot(
                    pool,
                    [r.seq for r in started],
                    [r.done for r in started],
                    len(self.snapshots),
                    entries[0].request if entries else 0,
                    "batch",
                )
            )
        else:
            pool.take_events()
        if self.on_step is not None:
            self.on_step(step, self)

    # ------------------------------------------------------------------ the record
    def _result(self) -> RequestsRun:
        limits = self.limits
        return build_run(
            self.model,
            self.tokenizer,
            self.pool,
            self.options,
            self.requests,
            schedule="continuous",
            repeats=1,
            snapshots=self.snapshots,
            meta={
                "max_batched_tokens": limits.max_batched_tokens,
                "chunked_prefill": limits.chunked_prefill,
                "chunk_size": limits.chunk,
                "max_running": limits.max_running,
            },
            batches=self.batches,
        )


def run_batched(
    model: Transformer, tokenizer: Tokenizer, requests: Sequence[RequestInput | Sequence[int]], **options: Any
) -> RequestsRun:
    """Run ``requests`` with continuous batching (options: ``RunOptions`` and ``BatchLimits``' fields,
    ``arrivals``, ``on_step``, ``should_stop``: see ``BatchingEngine``)."""
    return BatchingEngine.from_keywords(model, tokenizer, requests, **options).run()
