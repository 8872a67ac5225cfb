"""Continuous batching through one shared paged pool: one batched forward per step over every running
request, chunked prefill under a token budget, and preemption by recompute when the pool runs out.

    engine = BatchingEngine(model, tokenizer, requests, arrivals=[0, 0, 3, 5], max_batched_tokens=64,
                            block_size=16, pool_blocks=24)
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
from dataclasses import asdict
from typing import Any

import numpy as np
import torch

from ..caches.base import Cache, PackedBatch, PolicyInfo, SequenceAttention
from ..caches.block_table import SequenceBlocks
from ..caches.blocks import BlockPool, block_hash
from ..core.sampling import Sampling, SimulationError, choose
from ..models.tokenizer import Tokenizer
from ..models.transformer import Transformer
from .records import BatchEntry, BatchStep, PoolSnapshot, RequestResult, RequestsRun, take_snapshot
from .request_lists import MAX_ARRIVAL_STEP, RequestInput
from .requests import blocks_needed, run_waste, warm_up

DEFAULT_MAX_BATCHED_TOKENS = 256


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
    """The 'cache' of a packed forward: positions ``bounds[i][0]:bounds[i][1]`` of the row belong to
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


class _Live:
    """One request while the scheduler runs it."""

    def __init__(self, index: int, given: RequestInput, arrival: int, pool: BlockPool, seed: int) -> None:
        self.index, self.given, self.arrival = index, given, arrival
        self.seq = SequenceBlocks(pool, owner=index)
        self.tokens = list(given.prompt_ids)
        self.generated: list[int] = []
        self.status = "pending"  # → waiting → running (→ waiting when preempted) → done
        self.admitted = False  # joined the batch at least once (so it has a table in snapshots)
        self.high_water = 0  # most rows it ever held: rows below it computed again are a recompute
        self.reused = 0  # prompt rows hit in the prefix cache when it first joined
        self.preemptions = 0
        self.recomputed = 0
        self.arrival_ms = 0.0
        self.token_steps: list[int] = []
        self.token_ms: list[float] = []
        self.held = (0, 0)
        self.first_step = self.last_step = -1
        self.logits: list[np.ndarray] = []
        self.generator = torch.Generator().manual_seed(seed + index)


class BatchingEngine:
    """Runs a request list with continuous batching; ``run()`` returns the frozen ``RequestsRun``.

    ``on_step(batch_step, engine)`` is called after every step (progress); ``should_stop()`` is asked
    before every step and stops the run with ``RunCancelled`` when it returns True."""

    def __init__(
        self,
        model: Transformer,
        tokenizer: Tokenizer,
        requests: Sequence[RequestInput | Sequence[int]],
        *,
        arrivals: Sequence[int] | None = None,
        block_size: int = 16,
        pool_blocks: int | None = None,
        prefix_caching: bool = True,
        steps: int = 16,
        max_batched_tokens: int = DEFAULT_MAX_BATCHED_TOKENS,
        chunked_prefill: bool = True,
        chunk_size: int | None = None,
        max_running: int | None = None,
        sampling: Sampling | None = None,
        stop_at_eos: bool = True,
        model_id: str = "model",
        warmup: bool = True,
        keep_snapshots: bool = True,
        record_logits: bool = False,
        on_step: Callable[[BatchStep, BatchingEngine], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> None:
        cfg = model.cfg
        given = [r if isinstance(r, RequestInput) else RequestInput(tuple(int(t) for t in r)) for r in requests]
        if not given:
            raise SimulationError("no requests: give at least one prompt")
        for name, value in (("block size", block_size), ("steps", steps), ("max batched tokens", max_batched_tokens)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise SimulationError(f"{name} must be a whole number ≥ 1, got {value!r}")
        for name, option in (("chunk size", chunk_size), ("max running requests", max_running)):
            if option is not None and (not isinstance(option, int) or isinstance(option, bool) or option < 1):
                raise SimulationError(f"{name} must be a whole number ≥ 1, got {option!r}")
        if arrivals is None:
            arrivals = [0] * len(given)
        arrivals = list(arrivals)
        if len(arrivals) != len(given):
            raise SimulationError(f"{len(arrivals)} arrival steps for {len(given)} requests")
        for i, a in enumerate(arrivals, 1):
            if not isinstance(a, int | np.integer) or isinstance(a, bool) or not 0 <= a <= MAX_ARRIVAL_STEP:
                raise SimulationError(f"request {i}: arrival step must be a whole number from 0 to {MAX_ARRIVAL_STEP}, got {a!r}")
        for i, r in enumerate(given, 1):
            if not r.prompt_ids:
                raise SimulationError(f"request {i} is an empty prompt")
            if len(r.prompt_ids) + steps - 1 > cfg.max_seq_len:
                raise SimulationError(
                    f"request {i}: prompt ({len(r.prompt_ids)} tokens) + {steps} steps needs more than the model's "
                    f"context of {cfg.max_seq_len} positions"
                )
            bad = [t for t in r.prompt_ids if not 0 <= t < cfg.vocab_size]
            if bad:
                raise SimulationError(f"request {i}: token id {bad[0]} is outside the vocabulary (0..{cfg.vocab_size - 1})")
            if not chunked_prefill and len(r.prompt_ids) + steps - 1 > max_batched_tokens:
                raise SimulationError(
                    f"request {i}: without chunked prefill its prompt ({len(r.prompt_ids)} tokens), and its recompute after "
                    f"a preemption (up to {len(r.prompt_ids) + steps - 1}), must fit in max batched tokens "
                    f"({max_batched_tokens}): raise it or turn chunked prefill on"
                )
        needs = [blocks_needed(len(r.prompt_ids), steps, block_size) for r in given]
        if pool_blocks is None:  # room for every request at once: nothing is ever preempted
            pool_blocks = sum(needs)
        if not isinstance(pool_blocks, int) or pool_blocks < 1:
            raise SimulationError(f"the pool needs at least 1 block, got {pool_blocks!r}")
        worst = max(range(len(needs)), key=needs.__getitem__)
        if needs[worst] > pool_blocks:
            raise SimulationError(
                f"request {worst + 1} needs up to {needs[worst]} blocks of {block_size} slots "
                f"({len(given[worst].prompt_ids)} prompt tokens + {steps - 1} generated), but the pool has {pool_blocks}"
            )
        self.model, self.tokenizer, self.model_id = model, tokenizer, model_id
        self.block_size, self.steps = block_size, steps
        self.max_batched_tokens, self.chunked_prefill = max_batched_tokens, chunked_prefill
        self.chunk_size = chunk_size if chunk_size is not None else max_batched_tokens
        self.max_running = max_running
        self.sampling = sampling if sampling is not None else Sampling()
        self.stop_at_eos, self.keep_snapshots, self.record_logits = stop_at_eos, keep_snapshots, record_logits
        self.on_step, self.should_stop = on_step, should_stop
        self.pool = BlockPool(block_size, pool_blocks, prefix_caching=prefix_caching)
        self.pool.ensure_storage(cfg.n_layers, cfg.n_kv_heads, cfg.head_dim, model.dtype, model.device)
        seed = self.sampling.seed
        self.requests = [_Live(i, r, int(a), self.pool, seed) for i, (r, a) in enumerate(zip(given, arrivals, strict=True))]
        self.pending = deque(sorted(self.requests, key=lambda r: (r.arrival, r.index)))
        self.waiting: deque[_Live] = deque()
        self.running: list[_Live] = []
        self.batches: list[BatchStep] = []
        self.snapshots: list[PoolSnapshot] = []
        self.step = 0
        self.clock = 0.0
        if warmup:
            warm_up(self.model, self.block_size, list(given[0].prompt_ids))

    # ------------------------------------------------------------------ running
    @property
    def logits(self) -> dict[int, list[np.ndarray]]:
        """Per request, the logits row of each output token (``record_logits=True``)."""
        return {r.index: r.logits for r in self.requests}

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
        return sum(self.steps if r.status == "done" else len(r.generated) for r in self.requests), self.steps * len(self.requests)

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
            _sync(device)
            t0 = time.perf_counter()
            plan, preempted = self._schedule()
            emitted = self._forward(plan)
            _sync(device)
            ms = (time.perf_counter() - t0) * 1e3
            self.clock += ms
            entries, finished = self._after(plan, emitted)
            self._record(ms, entries, tuple(arrived), tuple(preempted), finished)
            self.step += 1
            yield self.batches[-1]

    def _schedule(self) -> tuple[list[tuple[_Live, int, int, torch.Tensor, torch.Tensor]], list[int]]:
        """This step's (request, start, count, blocks, slots), and the requests preempted to make room."""
        budget = self.max_batched_tokens
        plan: list[tuple[_Live, int, int, torch.Tensor, torch.Tensor]] = []
        preempted: list[int] = []
        for r in list(self.running):
            if r.status != "running":
                continue  # preempted a moment ago, for an earlier request
            if budget == 0:
                break
            start = r.seq.n_tokens
            n = min(len(r.tokens) - start, budget, self.chunk_size)
            while not self._fits(r, n):
                victim = self.running[-1]
                self._preempt(victim)
                preempted.append(victim.index)
                if victim is r:
                    break
            if r.status == "running":
                plan.append(self._reserve(r, start, n))
                budget -= n
        while not preempted and self.waiting and budget > 0:
            if self.max_running is not None and len(self.running) >= self.max_running:
                break
            r = self.waiting[0]
            hits, hits_free = self._probe(r)
            start = hits * self.block_size
            want = len(r.tokens) - start
            if self.chunked_prefill:
                n = min(want, budget, self.chunk_size)
            elif want <= budget:
                n = want
            else:
                break  # the whole prompt or nothing: it waits (first come, first served)
            if self._blocks_for(start, n, len(r.seq.blocks) + hits) > self.pool.n_free - hits_free:
                break
            self.waiting.popleft()
            reused = r.seq.match_prefix(r.tokens)
            if reused != start:  # the probe and the lookup are the same walk over the same hashes
                raise RuntimeError(f"prefix probe found {start} rows, the lookup {reused}")
            if not r.admitted:
                r.admitted, r.reused, r.first_step = True, reused, len(self.batches)
            r.status = "running"
            self.running.append(r)
            plan.append(self._reserve(r, start, n))
            budget -= n
        return plan, preempted

    def _blocks_for(self, start: int, n: int, held: int) -> int:
        return -(-(start + n) // self.block_size) - held

    def _fits(self, r: _Live, n: int) -> bool:
        pool, start = self.pool, r.seq.n_tokens
        need = self._blocks_for(start, n, len(r.seq.blocks))
        if start % self.block_size and n:
            last = r.seq.blocks[start // self.block_size]
            need += pool.ref[last] > 1 or pool.hash[last] is not None  # copy-on-write takes one more
        return need <= pool.n_free

    def _probe(self, r: _Live) -> tuple[int, int]:
        """Full blocks of ``r``'s tokens a prefix lookup would hit now, and how many of them are free
        (a hit takes a free cached block out of the free queue), without taking them."""
        pool, size = self.pool, self.block_size
        if not pool.prefix_caching:
            return 0, 0
        hits = free = 0
        parent = None
        for j in range((len(r.tokens) - 1) // size):
            h = block_hash(parent, r.tokens[j * size : (j + 1) * size])
            b = pool.lookup(h)
            if b is None:
                break
            hits += 1
            free += pool.ref[b] == 0
            parent = h
        return hits, free

    def _preempt(self, r: _Live) -> None:
        r.seq.free()
        r.status = "waiting"
        r.preemptions += 1
        self.running.remove(r)
        self.waiting.appendleft(r)

    def _reserve(self, r: _Live, start: int, n: int) -> tuple[_Live, int, int, torch.Tensor, torch.Tensor]:
        blocks, slots = r.seq.reserve(start, n, r.tokens[start : start + n])
        return r, start, n, blocks, slots

    def _forward(self, plan: list[tuple[_Live, int, int, torch.Tensor, torch.Tensor]]) -> list[int]:
        """One forward over the packed batch; the next token of each request whose rows reached its last token."""
        if not plan:
            return []
        device = self.model.device
        ids: list[int] = []
        positions: list[int] = []
        rows: list[int] = []
        views, bounds = [], []
        for r, start, n, blocks, slots in plan:
            bounds.append((len(ids), len(ids) + n))
            ids += r.tokens[start : start + n]
            positions += range(start, start + n)
            views.append(_SequenceView(r.seq, blocks, slots))
            if start + n == len(r.tokens):
                rows.append(len(ids) - 1)
        out = self.model(
            torch.tensor([ids], dtype=torch.long, device=device),
            torch.tensor(positions, dtype=torch.long, device=device),
            _PackedBatch(views, bounds),
            rows=torch.tensor(rows, dtype=torch.long, device=device),
        )
        logits = out.logits[0].float()
        emitted, i = [], 0
        for r, start, n, _, _ in plan:
            if start + n != len(r.tokens):
                continue
            row = logits[i]
            i += 1
            if not bool(torch.isfinite(row).all()):
                raise SimulationError(f"request {r.index + 1}: the model produced logits that are not numbers")
            u = float(torch.rand((), generator=r.generator)) if self.sampling.temperature > 0 else 0.5
            emitted.append(choose(row, self.sampling, u))
            if self.record_logits:
                r.logits.append(row.cpu().numpy().copy())
        return emitted

    def _after(
        self, plan: list[tuple[_Live, int, int, torch.Tensor, torch.Tensor]], emitted: list[int]
    ) -> tuple[tuple[BatchEntry, ...], tuple[int, ...]]:
        """Register full blocks, append the new tokens, release the blocks of finished requests; what
        each request did in the step, and which finished."""
        eos = getattr(self.tokenizer, "eos_id", None)
        entries, finished, tokens = [], [], iter(emitted)
        for r, start, n, _, _ in plan:
            kind = "recompute" if start < r.high_water else "prefill" if start < len(r.given.prompt_ids) else "decode"
            entries.append(BatchEntry(r.index, kind, start, n, start + n == len(r.tokens)))
            r.seq.commit()
            r.recomputed += max(0, min(start + n, r.high_water) - start)
            r.high_water = max(r.high_water, start + n)
            r.last_step = len(self.batches)
            if start + n != len(r.tokens):
                continue
            token = next(tokens)
            r.generated.append(token)
            r.tokens.append(token)
            r.token_steps.append(self.step)
            r.token_ms.append(self.clock)
            if len(r.generated) >= self.steps or (self.stop_at_eos and eos is not None and token == eos):
                r.held = (len(r.seq.blocks), r.seq.n_tokens)
                r.seq.free()
                r.status = "done"
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
            held_blocks=pool.n_blocks - pool.n_free,
            cached_free_blocks=sum(1 for b in pool.free if pool.hash[b] is not None),
            free_blocks=pool.n_free,
        )
        self.batches.append(step)
        if self.keep_snapshots:
            started = [r for r in self.requests if r.admitted]
            self.snapshots.append(
                take_snapshot(
                    pool,
                    [r.seq for r in started],
                    [r.status == "done" for r in started],
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
        size = self.block_size
        results = []
        for r in self.requests:
            n_prompt = len(r.given.prompt_ids)
            hits = r.reused // size
            gaps = np.diff(r.token_ms) if len(r.token_ms) > 1 else np.zeros(0)
            ttft = r.token_ms[0] - r.arrival_ms
            results.append(
                RequestResult(
                    index=r.index,
                    prompt=r.given.text,
                    prompt_ids=tuple(r.given.prompt_ids),
                    output_ids=tuple(r.generated),
                    output_text=self.tokenizer.decode(r.generated),
                    prefill_rows=n_prompt - r.reused,
                    reused_rows=r.reused,
                    hit_blocks=hits,
                    miss_blocks=-(-n_prompt // size) - hits,
                    ttft_ms=ttft,
                    ttft_ms_min=ttft,
                    ttft_ms_max=ttft,
                    decode_steps=len(r.generated) - 1,
                    itl_ms=float(np.median(gaps)) if gaps.size else None,
                    blocks_held=r.held[0],
                    rows_held=r.held[1],
                    first_step=r.first_step,
                    last_step=r.last_step,
                    arrival_step=r.arrival,
                    arrival_ms=r.arrival_ms,
                    token_steps=tuple(r.token_steps),
                    token_ms=tuple(r.token_ms),
                    preemptions=r.preemptions,
                    recomputed_rows=r.recomputed,
                )
            )
        waste = run_waste(self.model, self.pool, results, size)
        return RequestsRun(
            model_id=self.model_id,
            block_size=size,
            pool_blocks=self.pool.n_blocks,
            block_bytes=self.pool.block_bytes,
            prefix_caching=self.pool.prefix_caching,
            schedule="continuous",
            repeats=1,
            requests=tuple(results),
            snapshots=tuple(self.snapshots),
            waste=waste,
            evictions=self.pool.evictions,
            meta={
                "steps": self.steps,
                "sampling": asdict(self.sampling),
                "device": str(self.model.device),
                "dtype": str(self.model.dtype).replace("torch.", ""),
                "max_len": self.model.cfg.max_seq_len,
                "max_batched_tokens": self.max_batched_tokens,
                "chunked_prefill": self.chunked_prefill,
                "chunk_size": self.chunk_size,
                "max_running": self.max_running,
            },
            batches=tuple(self.batches),
        )


def run_batched(
    model: Transformer, tokenizer: Tokenizer, requests: Sequence[RequestInput | Sequence[int]], **options: Any
) -> RequestsRun:
    """Run ``requests`` with continuous batching (options: see ``BatchingEngine``)."""
    return BatchingEngine(model, tokenizer, requests, **options).run()


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
