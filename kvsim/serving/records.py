"""What a requests run records: frozen, numpy/plain values only, so a view can draw any step later.

    run.requests[i]            RequestResult: prefill rows computed and reused, hits, TTFT, blocks held
    run.snapshots[s]           PoolSnapshot: the pool after step s (each block's holders, fill, refs, hash)
    run.snapshots[s].tables    TableState per request: its block table at that step
    run.waste                  WasteReport: preallocated / exact / paged (/ paged with prefix sharing)
    run.snapshots[s].tiers     TierState per offload tier: the blocks it holds at that step (runs with --offload)
    run.moves_at(s)            the tier moves (stores, loads) made during step s, from ``meta["offload"]["moves"]``

A snapshot's per-block columns are arrays (or tuples) of the pool's length, indexed by physical
block id. ``events[b]`` says what happened to block ``b`` during that step: "allocated", "written",
"hit" (reused from the prefix cache), "copied" (copy-on-write), "evicted" (its cached rows dropped to
hand it out again), "cached" (freed but still reusable by hash), "freed" (freed, nothing to reuse), "".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..caches.block_table import SequenceBlocks
from ..caches.blocks import BlockPool
from ..caches.tiers import TieredBlockPool
from ..core.compare import Comparison
from .waste import WasteReport


@dataclass(frozen=True)
class TableState:
    """One request's block table at one step."""

    request: int
    blocks: tuple[int, ...]  # logical block j → physical block
    n_tokens: int  # rows held (positions 0..n_tokens-1)
    hit_blocks: int  # leading blocks reused from the prefix cache
    finished: bool


@dataclass(frozen=True)
class TierState:
    """One offload tier (``kvsim.caches.tiers``) at one step: the blocks it holds."""

    tier: str  # "host" or "disk"
    capacity: int  # blocks it can hold
    hashes: tuple[str, ...]  # 16 hex digits each, least recently used (the next out) first
    token_ids: tuple[tuple[int, ...], ...]  # the tokens whose rows each holds


@dataclass(frozen=True, eq=False)
class PoolSnapshot:
    """The block pool after one step (or after a request finished: phase "finish")."""

    step: int
    request: int  # the request that ran this step
    phase: str  # "prefill", "decode" or "finish"
    block_size: int
    ref_counts: np.ndarray  # (N,) int32: holders of each physical block
    filled: np.ndarray  # (N,) int32: slots holding rows (a free block that keeps its hash keeps its rows)
    owners: tuple[tuple[int, ...], ...]  # (N,) requests whose live table maps the block
    hashes: tuple[str | None, ...]  # (N,) 16 hex digits while the block is registered for reuse
    token_ids: tuple[tuple[int, ...], ...]  # (N,) the tokens whose rows the block holds (its slots in order)
    events: tuple[str, ...]  # (N,) what happened to the block in this step
    tables: tuple[TableState, ...]  # every request started so far
    free_blocks: int  # blocks in the free queue (cached ones included)
    cached_free_blocks: int  # of those, blocks that still hold reusable rows
    evictions: int  # cached blocks handed out again so far
    free_queue: tuple[int, ...] | None = None  # the free blocks in eviction order, next handed out first (None: not recorded)
    null_block: int | None = None  # vLLM's reserved placeholder block (never handed out), under "vllm"
    tiers: tuple[TierState, ...] = ()  # the offload tiers under the pool (none: a run without --offload)
    moves_done: int = 0  # the pool's tier moves made up to this step (``RequestsRun.moves_at``)

    def tier(self, name: str) -> TierState | None:
        return next((t for t in self.tiers if t.tier == name), None)

    @property
    def n_blocks(self) -> int:
        return int(self.ref_counts.size)

    @property
    def usable_blocks(self) -> int:
        """Blocks a request can be handed: all but vLLM's null block."""
        return self.n_blocks - (self.null_block is not None)

    @property
    def next_block(self) -> int | None:
        """The block the pool hands out next (the free queue's first), when the queue was recorded."""
        return self.free_queue[0] if self.free_queue else None

    def table(self, request: int) -> TableState | None:
        return next((t for t in self.tables if t.request == request), None)


@dataclass(frozen=True)
class RequestResult:
    """One request of a run."""

    index: int
    prompt: str | None  # the text as given (None when given as token ids)
    prompt_ids: tuple[int, ...]
    output_ids: tuple[int, ...]  # generated tokens (the first comes from the prefill)
    output_text: str
    prefill_rows: int  # K/V rows its prefill computed
    reused_rows: int  # prompt rows taken from the prefix cache (hit blocks × B)
    hit_blocks: int
    miss_blocks: int  # prompt blocks its prefill wrote (the last, partial one included)
    ttft_ms: float  # median of the timed prefills (prefix lookup + forward + first token)
    ttft_ms_min: float
    ttft_ms_max: float
    decode_steps: int
    itl_ms: float | None  # median decode step
    blocks_held: int  # blocks in its table when it finished
    rows_held: int  # rows in its table when it finished
    first_step: int  # its prefill's snapshot index
    last_step: int  # its last step's snapshot index
    # continuous batching only (kvsim.serving.batching); the defaults are what one-at-a-time runs have
    arrival_step: int = 0  # the scheduler step it arrived at
    arrival_ms: float = 0.0  # the run's clock when it arrived
    token_steps: tuple[int, ...] = ()  # the scheduler step each output token came out of
    token_ms: tuple[float, ...] = ()  # the run's clock when each output token came out
    preemptions: int = 0  # times its blocks were taken back (then recomputed)
    recomputed_rows: int = 0  # rows computed again after preemptions
    # a hybrid model: the positions after which its recurrent state was restored from a block's checkpoint (its
    # prefix hit: 0 when none); None on a model with no recurrent layers
    state_restored_at: int | None = None

    @property
    def itl_gaps_ms(self) -> tuple[float, ...]:
        """Inter-token latencies: the clock between consecutive output tokens (continuous batching)."""
        return tuple(b - a for a, b in zip(self.token_ms[:-1], self.token_ms[1:], strict=True))

    def as_dict(self) -> dict[str, object]:
        if self.token_ms:
            gaps = self.itl_gaps_ms
            return {
                **self._base_dict(),
                "arrival_step": self.arrival_step,
                "first_token_step": self.token_steps[0],
                "finish_step": self.token_steps[-1],
                "itl_ms_max": round(max(gaps), 4) if gaps else None,
                "preemptions": self.preemptions,
                "recomputed_rows": self.recomputed_rows,
            }
        return self._base_dict()

    def _base_dict(self) -> dict[str, object]:
        hybrid = {} if self.state_restored_at is None else {"state_restored_at": self.state_restored_at}
        return {
            **hybrid,
            "request": self.index,
            "prompt": self.prompt,
            "prompt_tokens": len(self.prompt_ids),
            "output": self.output_text,
            "output_tokens": len(self.output_ids),
            "prefill_rows": self.prefill_rows,
            "reused_rows": self.reused_rows,
            "hit_blocks": self.hit_blocks,
            "miss_blocks": self.miss_blocks,
            "ttft_ms": round(self.ttft_ms, 4),
            "ttft_ms_min": round(self.ttft_ms_min, 4),
            "ttft_ms_max": round(self.ttft_ms_max, 4),
            "decode_steps": self.decode_steps,
            "itl_ms": None if self.itl_ms is None else round(self.itl_ms, 4),
            "blocks_held": self.blocks_held,
            "rows_held": self.rows_held,
        }


@dataclass(frozen=True)
class BatchEntry:
    """One request's share of one batched forward (continuous batching)."""

    request: int
    kind: str  # "prefill" (a chunk of its prompt), "decode" (one new token), "recompute" (rows lost to preemption)
    start: int  # first position computed
    tokens: int  # positions computed in this forward
    emits: bool  # its last position's logits gave the request's next token


@dataclass(frozen=True)
class BatchStep:
    """One step of the continuous-batching scheduler: one forward over every scheduled request."""

    step: int  # the scheduler's step (arrivals are given in these; idle steps are skipped)
    ms: float  # wall time of the step: scheduling + the forward + sampling
    clock_ms: float  # the run's clock at the end of the step (the sum of the steps' times so far)
    entries: tuple[BatchEntry, ...]
    arrived: tuple[int, ...]  # requests that arrived at this step
    preempted: tuple[int, ...]  # requests whose blocks were taken back before the forward
    finished: tuple[int, ...]  # requests done after it (their blocks back in the pool)
    waiting: tuple[int, ...]  # requests arrived but not running after it (preempted ones included)
    held_blocks: int  # blocks held by running requests after it
    cached_free_blocks: int  # free blocks that still hold reusable rows
    free_blocks: int

    @property
    def tokens(self) -> int:
        return sum(e.tokens for e in self.entries)

    def as_dict(self) -> dict[str, object]:
        return {
            "step": self.step,
            "ms": round(self.ms, 4),
            "tokens": self.tokens,
            "batch": [[e.request, e.kind, e.start, e.tokens] for e in self.entries],
            "arrived": list(self.arrived),
            "preempted": list(self.preempted),
            "finished": list(self.finished),
            "waiting": list(self.waiting),
            "held_blocks": self.held_blocks,
            "free_blocks": self.free_blocks,
        }


@dataclass(frozen=True)
class RequestsRun:
    """Several requests through one shared block pool."""

    model_id: str
    block_size: int
    pool_blocks: int
    block_bytes: int  # one block, all layers, K and V
    prefix_caching: bool
    schedule: str  # "sequential" or "interleaved"
    repeats: int
    requests: tuple[RequestResult, ...]
    snapshots: tuple[PoolSnapshot, ...]
    waste: WasteReport
    evictions: int
    meta: dict[str, object] = field(default_factory=dict)
    batches: tuple[BatchStep, ...] = ()  # continuous batching: one per step, snapshots[i] is the pool after batches[i]
    pool_semantics: str = "kvsim"  # the free queue's order (kvsim.caches.blocks.POOL_SEMANTICS); files before it: kvsim

    @property
    def null_block(self) -> int | None:
        """vLLM's reserved block 0 (counted in ``pool_blocks``, never handed out), under "vllm"."""
        return 0 if self.pool_semantics == "vllm" else None

    @property
    def usable_blocks(self) -> int:
        """Blocks requests can be handed: ``pool_blocks`` less the null block."""
        return self.pool_blocks - (self.null_block is not None)

    @property
    def moves(self) -> tuple[dict[str, object], ...]:
        """Every tier move of the run (``TierMove`` as a dict: tier, direction, nbytes, ms, block_hash, owner),
        in the order they were made; empty without offload tiers."""
        offload = self.meta.get("offload")
        return tuple(offload.get("moves", ())) if isinstance(offload, dict) else ()

    def moves_at(self, step: int) -> tuple[dict[str, object], ...]:
        """The tier moves made during snapshot ``step`` (between the previous snapshot and this one)."""
        if not 0 <= step < len(self.snapshots):
            return ()
        start = self.snapshots[step - 1].moves_done if step > 0 else 0
        return self.moves[start : self.snapshots[step].moves_done]

    def physical_blocks(self) -> tuple[int, ...]:
        """Per request, the physical blocks of the pool its block table brought in: those its table mapped
        at its last step that no earlier request's table mapped (a block is the same physical block while it
        holds the same rows; one handed out again for other rows is another). Their sum is every physical
        block behind the requests' logical blocks (``RequestResult.blocks_held``), each counted once — the
        allocator's count, as vLLM's separates physical blocks from the block tables' logical ones."""
        seen: set[tuple[int, tuple[int, ...]]] = set()
        brought = []
        for r in self.requests:
            snap = self.snapshots[r.last_step] if 0 <= r.last_step < len(self.snapshots) else None
            table = snap.table(r.index) if snap is not None else None
            blocks = {(b, snap.token_ids[b]) for b in table.blocks} if snap is not None and table is not None else set()
            brought.append(len(blocks - seen))
            seen |= blocks
        return tuple(brought)

    def summary(self) -> dict[str, object]:
        out = self._base_summary()
        if self.batches:
            clock = self.batches[-1].clock_ms
            generated = sum(len(r.output_ids) for r in self.requests)
            out.update(
                {
                    "batch_steps": len(self.batches),
                    "max_batched_tokens": self.meta.get("max_batched_tokens"),
                    "chunked_prefill": self.meta.get("chunked_prefill"),
                    "largest_batch": max(len(b.entries) for b in self.batches),
                    "preemptions": sum(r.preemptions for r in self.requests),
                    "recomputed_rows": sum(r.recomputed_rows for r in self.requests),
                    "clock_ms": round(clock, 4),
                    "tokens_per_s": round(1e3 * generated / clock, 4) if clock > 0 else None,
                    "tokens_per_forward": round(generated / len(self.batches), 4),
                }
            )
        if "offload" in self.meta:  # a run with offload tiers: bytes and measured ms per tier and per move
            out["offload"] = self.meta["offload"]
        if "recurrent" in self.meta:  # a hybrid model: its state checkpoints, their bytes, what the hits restored
            out["recurrent_state"] = self.meta["recurrent"]
        return out

    def _base_summary(self) -> dict[str, object]:
        return {
            "model_id": self.model_id,
            "block_size": self.block_size,
            "pool_blocks": self.usable_blocks,  # what --pool-blocks asked for (the null block aside)
            "block_bytes": self.block_bytes,
            "prefix_caching": self.prefix_caching,
            "pool_semantics": self.pool_semantics,
            "schedule": self.schedule,
            "repeats": self.repeats,
            "requests": len(self.requests),
            "prefill_rows_total": sum(r.prefill_rows for r in self.requests),
            "reused_rows_total": sum(r.reused_rows for r in self.requests),
            # as vLLM's PrefixCacheStats counts them: per request on its first admission, its prompt tokens
            # queried and the tokens its hit blocks cover (a preempted request's return is not counted again)
            "prefix_cache_queries": sum(len(r.prompt_ids) for r in self.requests) if self.prefix_caching else 0,
            "prefix_cache_hits": sum(r.reused_rows for r in self.requests),
            "ttft_ms_total": round(sum(r.ttft_ms for r in self.requests), 4),
            "evictions": self.evictions,
            "steps": len(self.snapshots),
            "waste": self.waste.as_dict(),
        }


@dataclass(frozen=True)
class SideBySide:
    """The same requests with prefix caching off and on."""

    off: RequestsRun
    on: RequestsRun
    # per request, on against off, paired (kvsim.core.compare): the prefills' and the decode steps' times,
    # interleaved off/on; empty when the runs were not interleaved (None: nothing to pair)
    ttft: tuple[Comparison | None, ...] = ()
    itl: tuple[Comparison | None, ...] = ()

    def comparisons(self) -> list[dict[str, object] | None]:
        """Per request: {"ttft": …, "itl": …} as ``Comparison.as_dict()`` (None where not measured)."""
        if not self.ttft:
            return []
        return [
            {"ttft": t.as_dict() if t else None, "itl": i.as_dict() if i else None}
            for t, i in zip(self.ttft, self.itl, strict=True)
        ]

    def ttft_ratios(self) -> list[float | None]:
        """TTFT on / off per request (below 1: faster with reuse; None when a time is 0)."""
        pairs = zip(self.off.requests, self.on.requests, strict=True)
        return [b.ttft_ms / a.ttft_ms if a.ttft_ms > 0 else None for a, b in pairs]


def take_snapshot(
    pool: BlockPool, seqs: Sequence[SequenceBlocks], finished: Sequence[bool], step: int, request: int, phase: str
) -> PoolSnapshot:
    """Freeze the pool and every started request's block table (and clear the pool's events)."""
    n, size = pool.n_blocks, pool.block_size
    owners: list[list[int]] = [[] for _ in range(n)]
    tokens: list[tuple[int, ...]] = [()] * n
    for seq, done in zip(seqs, finished, strict=True):
        if done:
            continue
        for j, b in enumerate(seq.blocks):
            owners[b].append(seq.owner)
            if not tokens[b]:
                tokens[b] = tuple(seq.token_ids[j * size : min((j + 1) * size, seq.n_tokens)])
    events = pool.take_events()
    tiers: tuple[TierState, ...] = ()
    moves_done = 0
    if isinstance(pool, TieredBlockPool):
        tiers = tuple(
            TierState(tier, capacity, tuple(f"{h:016x}" for h in hashes), tuple(tuple(t) for t in ids))
            for tier, capacity, hashes, ids in pool.held()
        )
        moves_done = len(pool.moves)
    return PoolSnapshot(
        step=step,
        request=request,
        phase=phase,
        block_size=size,
        ref_counts=_frozen(np.asarray(pool.ref, dtype=np.int32)),
        filled=_frozen(np.asarray(pool.filled, dtype=np.int32)),
        owners=tuple(tuple(o) for o in owners),
        hashes=tuple(None if h is None else f"{h:016x}" for h in pool.hash),
        token_ids=tuple(tokens[b] or pool.tokens.get(b, ()) for b in range(n)),
        events=tuple(events.get(b, "") for b in range(n)),
        tables=tuple(
            TableState(seq.owner, tuple(seq.blocks), seq.n_tokens, seq.hit_blocks, done)
            for seq, done in zip(seqs, finished, strict=True)
        ),
        free_blocks=pool.n_free,
        cached_free_blocks=pool.n_cached_free,
        evictions=pool.evictions,
        free_queue=pool.free_queue(),
        null_block=pool.null_block,
        tiers=tiers,
        moves_done=moves_done,
    )


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a
