"""The serving core both engines share: their options (checked once), the state of one request, a
step's plan, and the one builder of the run's record.

    options = RunOptions(block_size=16, steps=8)              # every figure checked here, one message each
    given, pool_blocks = options.check_requests(model.cfg, requests)
    state = RequestState(0, given[0], SequenceBlocks(pool, owner=0))
    run = build_run(model, tokenizer, pool, options, states, schedule="sequential", repeats=3, snapshots=…)

``kvsim.serving.requests`` (one request at a time) and ``kvsim.serving.batching`` (continuous batching)
differ only in how they schedule and time steps; what a request is while it runs (``RequestState``),
what a step gives it (``Scheduled``) and what is recorded when it is done (``build_result``) are one
thing here, so a new way of serving (an offload tier, prefill and decode on separate pools) extends
these rather than copying them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import torch

from ..caches.block_table import SequenceBlocks
from ..caches.blocks import BlockPool, check_semantics
from ..caches.paged import PagedCache
from ..caches.state import state_bytes
from ..caches.tiers import OffloadSpec, TieredBlockPool
from ..core.pool_semantics import DEFAULT_POOL_SEMANTICS
from ..core.sampling import Sampling, SimulationError
from ..models.tokenizer import Tokenizer
from ..models.transformer import Transformer
from .records import BatchStep, PoolSnapshot, RequestResult, RequestsRun
from .request_lists import MAX_ARRIVAL_STEP, RequestInput
from .schedules import ONE_AT_A_TIME
from .waste import WasteReport, allocation_waste

if TYPE_CHECKING:
    from ..models.config import ModelConfig

DEFAULT_MAX_BATCHED_TOKENS = 256
MAX_REPEATS = 100


def _whole(name: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise SimulationError(f"{name} must be a whole number ≥ 1, got {value!r}")


@dataclass(frozen=True)
class RunOptions:
    """What every requests run is given besides the model and the requests; each figure is checked when
    the options are made (``SimulationError``, one line naming it), the requests against the model by
    ``check_requests`` — the same checks for both engines, written once."""

    block_size: int = 16  # token slots per block
    pool_blocks: int | None = None  # blocks requests can be handed; None: room for every request at once
    prefix_caching: bool = True  # reuse registered full blocks of a prompt's prefix
    # the free queue's order: "vllm" (vLLM v1's block pool: null block 0 in front of the pool_blocks, freed
    # blocks with no hash handed out first) or "kvsim" (the first pool: every freed block to the back)
    pool_semantics: str = DEFAULT_POOL_SEMANTICS
    steps: int = 16  # tokens each request generates at most
    sampling: Sampling = field(default_factory=Sampling)
    stop_at_eos: bool = True  # a request ends at the tokenizer's end token
    model_id: str = "model"  # recorded in the run
    warmup: bool = True  # one untimed prefill and decode first, so the first timed step pays no set-up
    keep_snapshots: bool = True  # the pool after every step (views and saved runs draw them)
    offload: OffloadSpec | None = None  # host/disk tiers under the pool (prefix caching on): evicted blocks kept there

    def __post_init__(self) -> None:
        _whole("block size", self.block_size)
        _whole("steps", self.steps)
        check_semantics(self.pool_semantics)
        if self.sampling is None:  # as the engines always took it: None is greedy, seed 0
            object.__setattr__(self, "sampling", Sampling())

    @classmethod
    def take(cls, given: dict[str, Any]) -> RunOptions:
        """The options named in ``given`` (keyword arguments of ``run_requests`` and the like), removed
        from it; the rest are the engine's own."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: given.pop(k) for k in list(given) if k in names})

    def check_requests(
        self, cfg: ModelConfig, requests: Sequence[RequestInput | Sequence[int]]
    ) -> tuple[list[RequestInput], int]:
        """The requests as ``RequestInput`` and the pool's size in blocks, once every prompt is known to fit
        the model (not empty, within its context with ``steps`` more, ids in its vocabulary) and the pool
        holds the largest request."""
        given = [r if isinstance(r, RequestInput) else RequestInput(tuple(int(t) for t in r)) for r in requests]
        if not given:
            raise SimulationError("no requests: give at least one prompt")
        steps = self.steps
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
        needs = [blocks_needed(len(r.prompt_ids), steps, self.block_size) for r in given]
        pool_blocks = sum(needs) if self.pool_blocks is None else self.pool_blocks  # None: nothing is ever evicted
        if not isinstance(pool_blocks, int) or pool_blocks < 1:
            raise SimulationError(f"the pool needs at least 1 block, got {pool_blocks!r}")
        worst = max(range(len(needs)), key=needs.__getitem__)
        if needs[worst] > pool_blocks:
            raise SimulationError(
                f"request {worst + 1} needs up to {needs[worst]} blocks of {self.block_size} slots "
                f"({len(given[worst].prompt_ids)} prompt tokens + {steps - 1} generated), but the pool has {pool_blocks}"
            )
        return given, pool_blocks

    def make_pool(self, model: Transformer, pool_blocks: int) -> BlockPool:
        """The run's shared pool, its rows allocated for ``model``: ``pool_blocks`` blocks requests can be
        handed (under "vllm" one more in front, the null block 0: vLLM's ``num_gpu_blocks`` is pool_blocks + 1)."""
        cfg = model.cfg
        null = self.pool_semantics == "vllm"
        hybrid = bool(cfg.linear_layers)  # its recurrent layers hold a state, no rows: the pool stores the others'
        pool: BlockPool
        if hybrid and self.offload is not None:
            raise SimulationError(
                "offload tiers move K/V blocks; a hybrid model's prefix hits also need the recurrent state checkpoints, "
                "which the tiers do not move yet: drop the offload tiers"
            )
        if self.offload is not None and self.prefix_caching:  # without prefix caching nothing is reused: no tiers
            pool = TieredBlockPool(self.block_size, pool_blocks + null, self.offload, semantics=self.pool_semantics)
        else:
            pool = BlockPool(
                self.block_size, pool_blocks + null, prefix_caching=self.prefix_caching, semantics=self.pool_semantics
            )
        pool.ensure_storage(
            cfg.n_layers, cfg.n_kv_heads, cfg.head_dim, model.dtype, model.device, cfg.kv_layers if hybrid else None
        )
        pool.keeps_states = hybrid and self.prefix_caching  # a state checkpoint per registered block (kvsim.caches.blocks)
        return pool


@dataclass(frozen=True)
class OneAtATime:
    """How ``kvsim.serving.requests`` orders and times its steps: ``schedule`` is "sequential" (each request
    to its end, in turn) or "interleaved" (prefills in turn, then decodes round-robin); each prefill is
    timed ``repeats`` times (the pool rolled back between) and its median kept."""

    schedule: str = "sequential"
    repeats: int = 3

    def __post_init__(self) -> None:
        if self.schedule not in ONE_AT_A_TIME:
            raise SimulationError(f"schedule must be one of {', '.join(ONE_AT_A_TIME)}, got {self.schedule!r}")
        if not isinstance(self.repeats, int) or not 1 <= self.repeats <= MAX_REPEATS:
            raise SimulationError(f"repeats must be a whole number from 1 to {MAX_REPEATS}, got {self.repeats!r}")


@dataclass(frozen=True)
class BatchLimits:
    """What bounds a step of continuous batching (``kvsim.serving.batching``): positions a forward takes,
    whether a prompt may be split over steps (and into chunks of at most how many), requests in the batch."""

    max_batched_tokens: int = DEFAULT_MAX_BATCHED_TOKENS
    chunked_prefill: bool = True
    chunk_size: int | None = None  # None: a chunk may take the whole step's budget
    max_running: int | None = None  # None: as many as budget and blocks allow
    record_logits: bool = False  # keep each output token's logits row (tests compare them with a run alone)

    def __post_init__(self) -> None:
        _whole("max batched tokens", self.max_batched_tokens)
        for name, option in (("chunk size", self.chunk_size), ("max running requests", self.max_running)):
            if option is not None:
                _whole(name, option)

    @property
    def chunk(self) -> int:
        """Prompt positions one request computes in a step at most."""
        return self.chunk_size if self.chunk_size is not None else self.max_batched_tokens

    def check_requests(self, given: Sequence[RequestInput], steps: int) -> None:
        """Without chunked prefill a prompt runs whole in one step, and so does its recompute after a
        preemption (prompt + generated): both must fit the step's budget."""
        if self.chunked_prefill:
            return
        for i, r in enumerate(given, 1):
            if len(r.prompt_ids) + steps - 1 > self.max_batched_tokens:
                raise SimulationError(
                    f"request {i}: without chunked prefill its prompt ({len(r.prompt_ids)} tokens), and its recompute after "
                    f"a preemption (up to {len(r.prompt_ids) + steps - 1}), must fit in max batched tokens "
                    f"({self.max_batched_tokens}): raise it or turn chunked prefill on"
                )


def check_arrivals(arrivals: Sequence[int] | None, n: int) -> list[int]:
    """The step each of ``n`` requests arrives at (all at 0 when not given), each checked."""
    steps = [0] * n if arrivals is None else list(arrivals)
    if len(steps) != n:
        raise SimulationError(f"{len(steps)} arrival steps for {n} requests")
    for i, a in enumerate(steps, 1):
        if not isinstance(a, int | np.integer) or isinstance(a, bool) or not 0 <= a <= MAX_ARRIVAL_STEP:
            raise SimulationError(f"request {i}: arrival step must be a whole number from 0 to {MAX_ARRIVAL_STEP}, got {a!r}")
    return [int(a) for a in steps]


#: pending: not arrived yet · waiting: queued (or preempted, to be recomputed) · running: holds blocks · done
Status = Literal["pending", "waiting", "running", "done"]


@dataclass(eq=False)
class RequestState:
    """One request while an engine runs it: its tokens, its block table over the shared pool, and what
    the record needs when it is done. Both engines keep exactly this, so ``build_result`` is one."""

    index: int
    given: RequestInput
    seq: SequenceBlocks  # its block table over the run's pool
    arrival: int = 0  # the scheduler step it arrives at (one-at-a-time runs: all at 0)
    status: Status = "pending"
    tokens: list[int] = field(default_factory=list)  # prompt + generated: what its rows are computed from
    generated: list[int] = field(default_factory=list)
    reused: int = 0  # prompt rows hit in the prefix cache when it first joined
    first_step: int = -1  # the step it first ran in (-1: not yet; then it has a table in snapshots)
    last_step: int = -1
    held: tuple[int, int] = (0, 0)  # (blocks, rows) in its table when it finished
    ttft: tuple[float, float, float] = (0.0, 0.0, 0.0)  # time to its first token: (median, min, max) ms
    itl_ms: list[float] = field(default_factory=list)  # the time before each later token, ms
    # continuous batching: its rows can be lost to preemption and computed again, on the run's clock
    high_water: int = 0  # most rows it ever held: rows below it computed again are a recompute
    preemptions: int = 0
    recomputed: int = 0
    arrival_ms: float = 0.0  # the run's clock when it arrived
    token_steps: list[int] = field(default_factory=list)  # the step each output token came out of
    token_ms: list[float] = field(default_factory=list)  # the run's clock at each output token

    def __post_init__(self) -> None:
        if not self.tokens:
            self.tokens = list(self.given.prompt_ids)

    @property
    def started(self) -> bool:
        """It ran at least once (so snapshots show its table, finished or not)."""
        return self.first_step >= 0

    @property
    def done(self) -> bool:
        return self.status == "done"

    def emit(self, token: int) -> None:
        """``token`` came out of its last row's logits: it is generated and the next row's input."""
        self.generated.append(token)
        self.tokens.append(token)

    def has_ended(self, steps: int, eos: int | None, stop_at_eos: bool) -> bool:
        """Its last token was its last: ``steps`` generated, or the end of text when the run stops there."""
        return len(self.generated) >= steps or (stop_at_eos and eos is not None and self.generated[-1] == eos)

    def finish(self) -> None:
        """It generated its last token: what it held is recorded and every block goes back to the pool."""
        self.held = (len(self.seq.blocks), self.seq.n_tokens)
        self.seq.free()
        self.status = "done"


def progress(states: Sequence[RequestState], steps: int) -> tuple[int, int]:
    """(tokens generated so far, at most) over ``states``, a finished request counting as all its ``steps``."""
    return sum(steps if r.done else len(r.generated) for r in states), steps * len(states)


@dataclass(frozen=True, eq=False)
class Scheduled:
    """One request's share of a step: positions ``start … start+count-1`` computed, their rows written to
    the (``blocks``, ``slots``) reserved for them. ``emits``: they reach its last token, so that row's
    logits give its next token (a prefill's last chunk, or a decode)."""

    request: RequestState
    start: int
    count: int
    blocks: torch.Tensor  # (count,) physical block of each position
    slots: torch.Tensor  # (count,) slot within it
    emits: bool

    @classmethod
    def reserve(cls, r: RequestState, start: int, count: int) -> Scheduled:
        """Room for ``r``'s next ``count`` rows from ``start`` (blocks taken from the pool now)."""
        blocks, slots = r.seq.reserve(start, count, r.tokens[start : start + count])
        return cls(r, start, count, blocks, slots, start + count == len(r.tokens))

    @property
    def end(self) -> int:
        return self.start + self.count


def blocks_needed(prompt_len: int, steps: int, block_size: int) -> int:
    """Blocks one request holds at most: its prompt and all but the last generated token have rows."""
    return -(-(prompt_len + steps - 1) // block_size)


def run_waste(model: Transformer, pool: BlockPool, results: Sequence[RequestResult], size: int) -> WasteReport:
    """A finished run's three allocation figures (preallocated, exact, paged) for the rows its requests held."""
    cfg = model.cfg
    stored = len(pool.layer_rows) if pool.layer_rows is not None else cfg.n_layers  # a hybrid: its attention layers
    bytes_per_slot = 2 * stored * cfg.n_kv_heads * cfg.head_dim * model.dtype.itemsize  # one token's K and V
    return allocation_waste(
        [r.rows_held for r in results],
        size,
        cfg.max_seq_len,
        bytes_per_slot,
        prompts=[r.prompt_ids for r in results] if pool.prefix_caching else None,
    )


def build_result(r: RequestState, tokenizer: Tokenizer, block_size: int, hybrid: bool = False) -> RequestResult:
    """The frozen record of a finished request (the same fields whichever engine ran it); ``hybrid``: the model's
    recurrent layers resumed from the state checkpoint at its hit's boundary (``state_restored_at``)."""
    n_prompt = len(r.given.prompt_ids)
    hits = r.reused // block_size
    return RequestResult(
        state_restored_at=r.reused if hybrid else None,
        index=r.index,
        prompt=r.given.text,
        prompt_ids=tuple(r.given.prompt_ids),
        output_ids=tuple(r.generated),
        output_text=tokenizer.decode(r.generated),
        prefill_rows=n_prompt - r.reused,
        reused_rows=r.reused,
        hit_blocks=hits,
        miss_blocks=-(-n_prompt // block_size) - hits,
        ttft_ms=r.ttft[0],
        ttft_ms_min=r.ttft[1],
        ttft_ms_max=r.ttft[2],
        decode_steps=len(r.itl_ms),
        itl_ms=float(np.median(r.itl_ms)) if r.itl_ms else None,
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


def build_run(
    model: Transformer,
    tokenizer: Tokenizer,
    pool: BlockPool,
    options: RunOptions,
    states: Sequence[RequestState],
    *,
    schedule: str,
    repeats: int,
    snapshots: Sequence[PoolSnapshot],
    meta: Mapping[str, object] | None = None,
    batches: Sequence[BatchStep] = (),
) -> RequestsRun:
    """The frozen record of a finished run: every request's ``build_result``, the waste of the rows they
    held, and the settings (``meta``: the engine's own, after the common ones)."""
    size = options.block_size
    cfg = model.cfg
    results = [build_result(r, tokenizer, size, bool(cfg.linear_layers)) for r in states]
    if cfg.linear_layers:  # a hybrid: its state checkpoints, what they cost and what the hits restored
        meta = {**(meta or {}), "recurrent": recurrent_summary(model, pool, results)}
    if isinstance(pool, TieredBlockPool):  # what the tiers moved, then their disk folder removed
        meta = {**(meta or {}), "offload": pool.offload_summary(len(states))}
        pool.close()
    return RequestsRun(
        model_id=options.model_id,
        block_size=size,
        pool_blocks=pool.n_blocks,
        block_bytes=pool.block_bytes,
        prefix_caching=pool.prefix_caching,
        pool_semantics=pool.semantics,
        schedule=schedule,
        repeats=repeats,
        requests=tuple(results),
        snapshots=tuple(snapshots),
        waste=run_waste(model, pool, results, size),
        evictions=pool.evictions,
        meta={
            "steps": options.steps,
            "sampling": asdict(options.sampling),
            "device": str(model.device),
            "dtype": str(model.dtype).replace("torch.", ""),
            "max_len": model.cfg.max_seq_len,
            **(meta or {}),
        },
        batches=tuple(batches),
    )


def recurrent_summary(model: Transformer, pool: BlockPool, results: Sequence[RequestResult]) -> dict[str, object]:
    """A hybrid model's run: one state checkpoint's bytes (every recurrent layer's state at one block boundary: the
    convolution's inputs at the model's element width, the recurrent matrices in fp32), the checkpoints the pool keeps
    at the end (one per registered block) and their bytes — equal to the two multiplied — and their peak, and what
    the hits restored: the requests that resumed from a checkpoint and the prompt tokens they did not recompute."""
    cfg = model.cfg
    conv, rec = cfg.recurrent_state_values()
    one = state_bytes(conv, rec, len(cfg.linear_layers), 8 * model.dtype.itemsize)
    kept = len(pool.checkpoints)
    return {
        "recurrent_layers": len(cfg.linear_layers),
        "checkpoint_bytes_each": one,
        "checkpoints_kept": kept,
        "checkpoint_bytes": pool.checkpoint_bytes,
        "checkpoint_bytes_peak": pool.checkpoint_bytes_peak,
        "states_restored": sum(1 for r in results if r.reused_rows),
        "tokens_not_recomputed": sum(r.reused_rows for r in results),
    }


def warm_up(model: Transformer, block_size: int, prompt: list[int]) -> None:
    """A prefill and a one-row decode on a scratch pool, so the first timed step pays no lazy set-up."""
    device = model.device
    scratch = PagedCache(model.cfg.n_layers, block_size)
    n = len(prompt)
    model(torch.tensor([prompt], device=device), torch.arange(n, device=device), scratch, last_only=True)
    if n > 1:
        scratch.truncate(n - 1)
        model(torch.tensor([prompt[-1:]], device=device), torch.arange(n - 1, n, device=device), scratch, last_only=True)
