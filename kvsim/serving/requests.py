"""Several requests through ONE shared paged block pool, with prefix caching on or off.

    reqs = encode_requests(tokenizer, RequestList(("What is 2+2?", "Name a colour.")))
    run = run_requests(model, tokenizer, reqs, block_size=16, prefix_caching=True)
    run.requests[1].reused_rows, run.requests[1].ttft_ms    # what its prefill skipped, and its TTFT
    run.snapshots[s]                                        # the pool after step s (a view draws it)
    both = compare_prefix_caching(model, tokenizer, reqs)   # the same requests, caching off then on

Each request is a sequence with its own block table over the shared pool (``kvsim.caches.blocks``). Its
prefill first looks its prompt's full blocks up by chained hash (caching on): the hits join its
table with one more reference each, and only the rest of the prompt is computed. Then it decodes
one token a step. When it finishes its blocks are released, tail first; the full ones stay
registered (reference count 0, rows kept) until the pool needs them again — least recently used
first. ``schedule="sequential"`` runs requests one after another; ``"interleaved"`` prefills them
in turn and then decodes them round-robin, one token each per round, so their blocks are live at
once and shared blocks show reference counts above 1. (Each request runs its own forward: kvsim
does not batch requests into one forward.)

TTFT is measured as ``kvsim.engine.simulate`` measures a step: the code path is warmed up first; the
prefill (prefix lookup + forward + first token) runs ``repeats`` times, the pool rolled back exactly
between runs, and the median is kept (min/max its spread). Registering the new full blocks after
the first token is out is not part of TTFT.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import torch

from ..caches.block_table import SequenceBlocks
from ..caches.blocks import PoolFullError
from ..caches.paged import PagedCache
from ..core.compare import Comparison, compare_paired, interleave
from ..core.devices import sync
from ..core.sampling import SimulationError, choose
from ..models.tokenizer import Tokenizer
from ..models.transformer import Transformer
from .core import (
    OneAtATime,
    RequestState,
    RunOptions,
    build_run,
    progress,
    warm_up,
)
from .records import PoolSnapshot, RequestsRun, SideBySide, take_snapshot
from .request_lists import RequestInput, RequestList, encode_requests, load_requests  # noqa: F401 - the API


class RequestsEngine:
    """Runs a request list one request at a time; ``run()`` returns the frozen ``RequestsRun``."""

    def __init__(
        self,
        model: Transformer,
        tokenizer: Tokenizer,
        requests: Sequence[RequestInput | Sequence[int]],
        options: RunOptions | None = None,
        order: OneAtATime | None = None,
    ) -> None:
        self.options = options = options if options is not None else RunOptions()
        self.order = order if order is not None else OneAtATime()
        given, pool_blocks = options.check_requests(model.cfg, requests)
        self.model, self.tokenizer = model, tokenizer
        self.steps, self.schedule, self.repeats = options.steps, self.order.schedule, self.order.repeats
        self.sampling = options.sampling
        self.pool = options.make_pool(model, pool_blocks)
        self.requests = [RequestState(i, r, SequenceBlocks(self.pool, owner=i), status="waiting") for i, r in enumerate(given)]
        self._caches = [
            PagedCache(model.cfg.n_layers, self.pool.block_size, pool=self.pool, sequence=r.seq) for r in self.requests
        ]
        self._pending_token = [-1] * len(self.requests)  # a prefill's token, between its trials and their close
        self.snapshots: list[PoolSnapshot] = []
        self._generator = torch.Generator().manual_seed(self.sampling.seed)
        self._step = 0
        self._turn = 0  # interleaved schedule: the request index the round-robin goes on from
        if options.warmup:
            warm_up(self.model, options.block_size, list(given[0].prompt_ids))

    @classmethod
    def from_keywords(
        cls, model: Transformer, tokenizer: Tokenizer, requests: Sequence[RequestInput | Sequence[int]], **options: Any
    ) -> RequestsEngine:
        """The engine given flat keywords (``block_size=…, schedule=…``): ``RunOptions`` and ``OneAtATime``'s fields."""
        run_options = RunOptions.take(options)
        return cls(model, tokenizer, requests, run_options, OneAtATime(**options))

    # ------------------------------------------------------------------ running
    def run(self) -> RequestsRun:
        for _ in self.iterate():
            pass
        return self._result()

    def iterate(self) -> Iterator[None]:
        """Run one step of one request at a time, yielding after each: a caller may report progress,
        do other work or stop between steps (``result()`` once it is exhausted)."""
        while (r := self._next()) is not None:
            self._advance(r)
            yield

    def _next(self) -> RequestState | None:
        """The request the schedule advances next (None: all done): sequential, the first not done;
        interleaved, round-robin from the one after the last advanced."""
        live = [r for r in self.requests if not r.done]
        if not live:
            return None
        if self.schedule == "sequential":
            return live[0]
        return next((r for r in live if r.index >= self._turn), live[0])

    def progress(self) -> tuple[int, int]:
        """(tokens generated so far, at most), a finished request counting as all its steps."""
        return progress(self.requests, self.steps)

    def result(self) -> RequestsRun:
        if not all(r.done for r in self.requests):
            raise RuntimeError("the requests run is not finished")
        return self._result()

    def _advance(self, r: RequestState, prefill_times: list[float] | None = None) -> None:
        """One step of ``r``: its prefill (timed ``repeats`` times, unless ``prefill_times`` are given: its
        trials already ran, from ``_open_prefill``) or one decode step."""
        self._turn = r.index + 1
        try:
            if prefill_times is not None:
                self._close_prefill(r, prefill_times)
            elif not r.generated:
                trial = self._open_prefill(r)
                self._close_prefill(r, [trial() for _ in range(self.repeats)])
            else:
                self._decode(r)
        except PoolFullError as exc:
            raise self._pool_full(r, exc) from None
        r.seq.commit()
        r.last_step = self._step
        self._snapshot(r, "prefill" if len(r.generated) == 1 else "decode")
        eos = getattr(self.tokenizer, "eos_id", None)
        if r.has_ended(self.steps, eos, self.options.stop_at_eos):
            r.finish()
            self._snapshot(r, "finish")

    def _draw(self) -> float:
        return float(torch.rand((), generator=self._generator)) if self.sampling.temperature > 0 else 0.5

    def _forward(self, r: RequestState, start: int) -> int:
        """Feed tokens[start:] at their positions; the chosen next token (the draw taken by the caller)."""
        device = self.model.device
        ids = r.tokens[start:]
        cache = self._caches[r.index]
        cache.feed(ids)
        out = self.model(
            torch.tensor([ids], dtype=torch.long, device=device),
            torch.arange(start, len(r.tokens), device=device),
            cache,
            last_only=True,
        )
        logits = out.logits[0, -1].float()
        if not bool(torch.isfinite(logits).all()):
            raise SimulationError(f"request {r.index + 1}: the model produced logits that are not numbers")
        return choose(logits, self.sampling, self._u)

    def _pool_full(self, r: RequestState, exc: PoolFullError) -> PoolFullError:
        r.seq.truncate(len(r.tokens) - 1 if r.generated else 0)
        return PoolFullError(f"request {r.index + 1}: {exc} by the running requests (give a larger pool, e.g. --pool-blocks)")

    def _open_prefill(self, r: RequestState) -> Callable[[], float]:
        """Set up ``r``'s prefill; returns one timed trial (ms: prefix lookup + forward + first token).
        Every trial after the first rolls the pool back exactly first (same hits, same blocks, same
        evictions); the last trial's state is the one kept (``_close_prefill``)."""
        r.first_step, r.status = self._step, "running"
        self._u = self._draw()
        device = self.model.device
        pool_state, seq_state, events = self.pool.save_state(), r.seq.save_state(), dict(self.pool.events)
        trials = [0]

        def trial() -> float:
            if trials[0]:
                self.pool.restore_state(pool_state)
                self.pool.events = dict(events)
                r.seq.restore_state(seq_state)
                self._caches[r.index].truncate(0)
            trials[0] += 1
            sync(device)
            t0 = time.perf_counter()
            reused = r.seq.match_prefix(r.tokens)
            token = self._forward(r, reused)
            sync(device)
            ms = (time.perf_counter() - t0) * 1e3
            r.reused, self._pending_token[r.index] = reused, token
            return ms

        return trial

    def _close_prefill(self, r: RequestState, times: list[float]) -> None:
        r.ttft = (float(np.median(times)), min(times), max(times))
        r.emit(self._pending_token[r.index])

    def _decode(self, r: RequestState) -> None:
        if len(r.tokens) > self.model.cfg.max_seq_len:  # cannot happen: checked against steps up front
            raise SimulationError(f"request {r.index + 1}: the model's context is full")
        self._u = self._draw()
        device = self.model.device
        sync(device)
        t0 = time.perf_counter()
        token = self._forward(r, len(r.tokens) - 1)
        sync(device)
        r.itl_ms.append((time.perf_counter() - t0) * 1e3)
        r.emit(token)

    def _snapshot(self, r: RequestState, phase: str) -> None:
        if self.options.keep_snapshots:
            seqs = [q.seq for q in self.requests if q.started]
            done = [q.done for q in self.requests if q.started]
            self.snapshots.append(take_snapshot(self.pool, seqs, done, self._step, r.index, phase))
        else:
            self.pool.take_events()
        self._step += 1

    # ------------------------------------------------------------------ the record
    def _result(self) -> RequestsRun:
        return build_run(
            self.model,
            self.tokenizer,
            self.pool,
            self.options,
            self.requests,
            schedule=self.schedule,
            repeats=self.repeats,
            snapshots=self.snapshots,
        )


def run_requests(
    model: Transformer, tokenizer: Tokenizer, requests: Sequence[RequestInput | Sequence[int]], **options: Any
) -> RequestsRun:
    """Run ``requests`` through one shared pool (options: ``RunOptions`` and ``OneAtATime``'s fields)."""
    return RequestsEngine.from_keywords(model, tokenizer, requests, **options).run()


class PrefixComparison:
    """The same requests through two engines, prefix caching off and on, advanced together: when both
    are about to prefill the same request, their timed prefill trials alternate (off on, on off, …: the
    order rotating, ``kvsim.core.compare.interleave``) until the ratio's interval is narrower than
    ``precision`` (at least ``max(repeats, 8)`` trials each, at most ``max_repeats``, no new one after
    ``budget_s`` seconds); when both decode the same request, one step each, the order rotating. Each
    request's TTFT and ITL on/off are then paired ratios with an interval and a verdict."""

    def __init__(
        self,
        model: Transformer,
        tokenizer: Tokenizer,
        requests: Sequence[RequestInput | Sequence[int]],
        options: RunOptions | None = None,
        order: OneAtATime | None = None,
        *,
        max_repeats: int = 40,
        precision: float = 0.10,
        budget_s: float = 5.0,
    ) -> None:
        options = options if options is not None else RunOptions()  # its prefix_caching is set per run
        self.off = RequestsEngine(model, tokenizer, requests, replace(options, prefix_caching=False), order)
        self.on = RequestsEngine(model, tokenizer, requests, replace(options, prefix_caching=True), order)
        self.engines = (self.off, self.on)
        self.min_repeats = max(self.off.repeats, 8)
        self.max_repeats = max(max_repeats, self.min_repeats)
        self.precision, self.budget_s = precision, budget_s
        self._ttft: dict[int, Comparison] = {}
        self._round = 0

    def progress(self) -> tuple[int, int]:
        done = [e.progress() for e in self.engines]
        return sum(d for d, _ in done), sum(t for _, t in done)

    def run(self) -> SideBySide:
        for _ in self.iterate():
            pass
        return self.result()

    def iterate(self) -> Iterator[None]:
        """One step of each engine at a time (a prefill measured side by side counts as one)."""
        while True:
            a, b = self.off._next(), self.on._next()
            if a is None and b is None:
                return
            if a is not None and b is not None and a.index == b.index and bool(a.generated) == bool(b.generated):
                if not a.generated:
                    self._prefill_both(a, b)
                else:
                    first, second = ((self.off, a), (self.on, b)) if self._round % 2 == 0 else ((self.on, b), (self.off, a))
                    first[0]._advance(first[1])
                    second[0]._advance(second[1])
                self._round += 1
            else:  # the two runs went apart (one stopped at its end token earlier): each on its own
                for engine, r in ((self.off, a), (self.on, b)):
                    if r is not None:
                        engine._advance(r)
            yield

    def _prefill_both(self, a: RequestState, b: RequestState) -> None:
        trials: dict[str, Callable[[], float]] = {}
        for key, engine, r in (("off", self.off, a), ("on", self.on, b)):
            try:
                trials[key] = self._seconds(engine._open_prefill(r), engine, r)
            except PoolFullError as exc:
                raise engine._pool_full(r, exc) from None
        timed = interleave(
            trials,
            min_rounds=self.min_repeats,
            max_rounds=self.max_repeats,
            precision=self.precision,
            budget_s=self.budget_s,
            self_timed=True,
        )
        self._ttft[a.index] = timed.comparisons()["on"]
        self.off._advance(a, [t * 1e3 for t in timed.times["off"]])
        self.on._advance(b, [t * 1e3 for t in timed.times["on"]])

    @staticmethod
    def _seconds(trial: Callable[[], float], engine: RequestsEngine, r: RequestState) -> Callable[[], float]:
        def run() -> float:
            try:
                return trial() / 1e3
            except PoolFullError as exc:
                raise engine._pool_full(r, exc) from None

        return run

    def result(self) -> SideBySide:
        off, on = self.off.result(), self.on.result()
        itl: list[Comparison | None] = []
        for a, b in zip(self.off.requests, self.on.requests, strict=True):
            n = min(len(a.itl_ms), len(b.itl_ms))  # the decode steps both took, paired
            itl.append(compare_paired(a.itl_ms[:n], b.itl_ms[:n], name="on", baseline_name="off") if n else None)
        ttft = tuple(self._ttft.get(i) for i in range(len(self.off.requests)))
        return SideBySide(off, on, ttft=ttft, itl=tuple(itl))


def compare_prefix_caching(
    model: Transformer, tokenizer: Tokenizer, requests: Sequence[RequestInput | Sequence[int]], **options: Any
) -> SideBySide:
    """The same requests, same pool size and settings, with prefix caching off and on, measured side by
    side (``PrefixComparison``; its ``max_repeats``, ``precision`` and ``budget_s`` may be given)."""
    measure = {k: options.pop(k) for k in ("max_repeats", "precision", "budget_s") if k in options}
    options.pop("prefix_caching", None)
    run_options = RunOptions.take(options)
    return PrefixComparison(model, tokenizer, requests, run_options, OneAtATime(**options), **measure).run()
