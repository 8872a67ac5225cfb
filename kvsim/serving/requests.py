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
from dataclasses import asdict
from typing import Any

import numpy as np
import torch

from ..caches.block_table import SequenceBlocks
from ..caches.blocks import BlockPool, PoolFullError
from ..caches.paged import PagedCache
from ..core.compare import Comparison, compare_paired, interleave
from ..core.sampling import Sampling, SimulationError, choose
from ..models.tokenizer import Tokenizer
from ..models.transformer import Transformer
from .records import PoolSnapshot, RequestResult, RequestsRun, SideBySide, take_snapshot
from .request_lists import RequestInput, RequestList, encode_requests, load_requests  # noqa: F401 - the API
from .waste import WasteReport, allocation_waste

SCHEDULES = ("sequential", "interleaved")


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def run_waste(model: Transformer, pool: BlockPool, results: Sequence[RequestResult], size: int) -> WasteReport:
    """A finished run's three allocation figures (preallocated, exact, paged) for the rows its requests held."""
    cfg = model.cfg
    bytes_per_slot = 2 * cfg.n_layers * cfg.n_kv_heads * cfg.head_dim * model.dtype.itemsize  # one token's K and V
    return allocation_waste(
        [r.rows_held for r in results],
        size,
        cfg.max_seq_len,
        bytes_per_slot,
        prompts=[r.prompt_ids for r in results] if pool.prefix_caching else None,
    )


def blocks_needed(prompt_len: int, steps: int, block_size: int) -> int:
    """Blocks one request holds at most: its prompt and all but the last generated token have rows."""
    return -(-(prompt_len + steps - 1) // block_size)


class _Request:
    def __init__(self, index: int, given: RequestInput, pool: BlockPool, n_layers: int) -> None:
        self.index = index
        self.given = given
        self.seq = SequenceBlocks(pool, owner=index)
        self.cache = PagedCache(n_layers, pool.block_size, pool=pool, sequence=self.seq)
        self.tokens = list(given.prompt_ids)  # prompt + generated
        self.generated: list[int] = []
        self.reused = 0
        self.pending_token = -1  # the prefill's token, between its trials and their close
        self.ttft: tuple[float, float, float] = (0.0, 0.0, 0.0)
        self.decode_ms: list[float] = []
        self.done = False
        self.held = (0, 0)  # (blocks, rows) when it finished
        self.first_step = self.last_step = -1


class RequestsEngine:
    """Runs a request list; ``run()`` returns the frozen ``RequestsRun``."""

    def __init__(
        self,
        model: Transformer,
        tokenizer: Tokenizer,
        requests: Sequence[RequestInput | Sequence[int]],
        *,
        block_size: int = 16,
        pool_blocks: int | None = None,
        prefix_caching: bool = True,
        steps: int = 16,
        schedule: str = "sequential",
        repeats: int = 3,
        sampling: Sampling | None = None,
        stop_at_eos: bool = True,
        model_id: str = "model",
        warmup: bool = True,
        keep_snapshots: bool = True,
    ) -> None:
        cfg = model.cfg
        given = [r if isinstance(r, RequestInput) else RequestInput(tuple(int(t) for t in r)) for r in requests]
        if not given:
            raise SimulationError("no requests: give at least one prompt")
        if not isinstance(block_size, int) or block_size < 1:
            raise SimulationError(f"block size must be ≥ 1, got {block_size!r}")
        if not isinstance(steps, int) or steps < 1:
            raise SimulationError(f"steps must be ≥ 1, got {steps!r}")
        if schedule not in SCHEDULES:
            raise SimulationError(f"schedule must be one of {', '.join(SCHEDULES)}, got {schedule!r}")
        if not isinstance(repeats, int) or not 1 <= repeats <= 100:
            raise SimulationError(f"repeats must be a whole number from 1 to 100, got {repeats!r}")
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
        needs = [blocks_needed(len(r.prompt_ids), steps, block_size) for r in given]
        if pool_blocks is None:  # room for every request at once: nothing is ever evicted
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
        self.block_size, self.steps, self.schedule, self.repeats = block_size, steps, schedule, repeats
        self.sampling = sampling if sampling is not None else Sampling()
        self.stop_at_eos = stop_at_eos
        self.keep_snapshots = keep_snapshots
        self.pool = BlockPool(block_size, pool_blocks, prefix_caching=prefix_caching)
        self.pool.ensure_storage(cfg.n_layers, cfg.n_kv_heads, cfg.head_dim, model.dtype, model.device)
        self.requests = [_Request(i, r, self.pool, cfg.n_layers) for i, r in enumerate(given)]
        self.snapshots: list[PoolSnapshot] = []
        self._generator = torch.Generator().manual_seed(self.sampling.seed)
        self._step = 0
        self._turn = 0  # interleaved schedule: the request index the round-robin goes on from
        if warmup:
            warm_up(self.model, self.block_size, list(given[0].prompt_ids))

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

    def _next(self) -> _Request | None:
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
        return sum(self.steps if r.done else len(r.generated) for r in self.requests), self.steps * len(self.requests)

    def result(self) -> RequestsRun:
        if not all(r.done for r in self.requests):
            raise RuntimeError("the requests run is not finished")
        return self._result()

    def _advance(self, r: _Request, prefill_times: list[float] | None = None) -> None:
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
        if len(r.generated) >= self.steps or (self.stop_at_eos and eos is not None and r.generated[-1] == eos):
            r.done = True
            r.held = (len(r.seq.blocks), r.seq.n_tokens)
            r.seq.free()
            self._snapshot(r, "finish")

    def _draw(self) -> float:
        return float(torch.rand((), generator=self._generator)) if self.sampling.temperature > 0 else 0.5

    def _forward(self, r: _Request, start: int) -> int:
        """Feed tokens[start:] at their positions; the chosen next token (the draw taken by the caller)."""
        device = self.model.device
        ids = r.tokens[start:]
        r.cache.feed(ids)
        out = self.model(
            torch.tensor([ids], dtype=torch.long, device=device),
            torch.arange(start, len(r.tokens), device=device),
            r.cache,
            last_only=True,
        )
        logits = out.logits[0, -1].float()
        if not bool(torch.isfinite(logits).all()):
            raise SimulationError(f"request {r.index + 1}: the model produced logits that are not numbers")
        return choose(logits, self.sampling, self._u)

    def _pool_full(self, r: _Request, exc: PoolFullError) -> PoolFullError:
        r.seq.truncate(len(r.tokens) - 1 if r.generated else 0)
        return PoolFullError(f"request {r.index + 1}: {exc} by the running requests (give a larger pool, e.g. --pool-blocks)")

    def _open_prefill(self, r: _Request) -> Callable[[], float]:
        """Set up ``r``'s prefill; returns one timed trial (ms: prefix lookup + forward + first token).
        Every trial after the first rolls the pool back exactly first (same hits, same blocks, same
        evictions); the last trial's state is the one kept (``_close_prefill``)."""
        r.first_step = self._step
        self._u = self._draw()
        device = self.model.device
        pool_state, seq_state, events = self.pool.save_state(), r.seq.save_state(), dict(self.pool.events)
        trials = [0]

        def trial() -> float:
            if trials[0]:
                self.pool.restore_state(pool_state)
                self.pool.events = dict(events)
                r.seq.restore_state(seq_state)
                r.cache.truncate(0)
            trials[0] += 1
            _sync(device)
            t0 = time.perf_counter()
            reused = r.seq.match_prefix(r.tokens)
            token = self._forward(r, reused)
            _sync(device)
            ms = (time.perf_counter() - t0) * 1e3
            r.reused, r.pending_token = reused, token
            return ms

        return trial

    def _close_prefill(self, r: _Request, times: list[float]) -> None:
        r.ttft = (float(np.median(times)), min(times), max(times))
        r.generated.append(r.pending_token)
        r.tokens.append(r.pending_token)

    def _decode(self, r: _Request) -> None:
        if len(r.tokens) > self.model.cfg.max_seq_len:  # cannot happen: checked against steps up front
            raise SimulationError(f"request {r.index + 1}: the model's context is full")
        self._u = self._draw()
        device = self.model.device
        _sync(device)
        t0 = time.perf_counter()
        token = self._forward(r, len(r.tokens) - 1)
        _sync(device)
        r.decode_ms.append((time.perf_counter() - t0) * 1e3)
        r.generated.append(token)
        r.tokens.append(token)

    def _snapshot(self, r: _Request, phase: str) -> None:
        if self.keep_snapshots:
            seqs = [q.seq for q in self.requests if q.first_step >= 0]
            done = [q.done for q in self.requests if q.first_step >= 0]
            self.snapshots.append(take_snapshot(self.pool, seqs, done, self._step, r.index, phase))
        else:
            self.pool.take_events()
        self._step += 1

    # ------------------------------------------------------------------ the record
    def _result(self) -> RequestsRun:
        size = self.block_size
        results = []
        for r in self.requests:
            n_prompt = len(r.given.prompt_ids)
            hits = r.reused // size
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
                    ttft_ms=r.ttft[0],
                    ttft_ms_min=r.ttft[1],
                    ttft_ms_max=r.ttft[2],
                    decode_steps=len(r.decode_ms),
                    itl_ms=float(np.median(r.decode_ms)) if r.decode_ms else None,
                    blocks_held=r.held[0],
                    rows_held=r.held[1],
                    first_step=r.first_step,
                    last_step=r.last_step,
                )
            )
        waste = run_waste(self.model, self.pool, results, size)
        return RequestsRun(
            model_id=self.model_id,
            block_size=size,
            pool_blocks=self.pool.n_blocks,
            block_bytes=self.pool.block_bytes,
            prefix_caching=self.pool.prefix_caching,
            schedule=self.schedule,
            repeats=self.repeats,
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
            },
        )


def run_requests(
    model: Transformer, tokenizer: Tokenizer, requests: Sequence[RequestInput | Sequence[int]], **options: Any
) -> RequestsRun:
    """Run ``requests`` through one shared pool (options: see ``RequestsEngine``)."""
    return RequestsEngine(model, tokenizer, requests, **options).run()


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
        *,
        max_repeats: int = 40,
        precision: float = 0.10,
        budget_s: float = 5.0,
        **options: Any,
    ) -> None:
        options.pop("prefix_caching", None)
        self.off = RequestsEngine(model, tokenizer, requests, prefix_caching=False, **options)
        self.on = RequestsEngine(model, tokenizer, requests, prefix_caching=True, **options)
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

    def _prefill_both(self, a: _Request, b: _Request) -> None:
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
    def _seconds(trial: Callable[[], float], engine: RequestsEngine, r: _Request) -> Callable[[], float]:
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
            n = min(len(a.decode_ms), len(b.decode_ms))  # the steps both took, paired
            itl.append(compare_paired(a.decode_ms[:n], b.decode_ms[:n], name="on", baseline_name="off") if n else None)
        ttft = tuple(self._ttft.get(i) for i in range(len(self.off.requests)))
        return SideBySide(off, on, ttft=ttft, itl=tuple(itl))


def compare_prefix_caching(
    model: Transformer, tokenizer: Tokenizer, requests: Sequence[RequestInput | Sequence[int]], **options: Any
) -> SideBySide:
    """The same requests, same pool size and settings, with prefix caching off and on, measured side by
    side (``PrefixComparison``; its ``max_repeats``, ``precision`` and ``budget_s`` may be given)."""
    return PrefixComparison(model, tokenizer, requests, **options).run()


def warm_up(model: Transformer, block_size: int, prompt: list[int]) -> None:
    """A prefill and a one-row decode on a scratch pool, so the first timed step pays no lazy set-up."""
    device = model.device
    scratch = PagedCache(model.cfg.n_layers, block_size)
    n = len(prompt)
    model(torch.tensor([prompt], device=device), torch.arange(n, device=device), scratch, last_only=True)
    if n > 1:
        scratch.truncate(n - 1)
        model(torch.tensor([prompt[-1:]], device=device), torch.arange(n - 1, n, device=device), scratch, last_only=True)
