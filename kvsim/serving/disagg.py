"""Disaggregated prefill and decode: a prefill instance and a decode instance, each with its own block pool,
in two processes that share nothing but a transfer channel (shared memory for the K/V rows, a pipe for the
messages), against the same requests colocated (continuous batching, one pool).

    colocated = run_colocated(model, tokenizer, inputs, steps=8)
    split = run_disaggregated("tiny", model, tokenizer, inputs, steps=8)   # the decode process loads "tiny" itself
    split.requests[i].tokens == colocated.requests[i].tokens               # greedy: the same tokens
    split.transfers[i]                                                     # bytes, blocks, measured copy times

The prefill instance (this process) runs each request's prompt alone, in arrival order: its first token comes
out of the prefill, so its TTFT is the prefill's; then the request's blocks (every layer's K and V) are copied
into a shared-memory segment and announced on the pipe, and the prefill pool lets them go. The decode instance
(a spawned process; it loads the model from its spec) maps the segment, copies the rows into blocks of its own
pool, and decodes every request it holds round-robin, one token each in turn, until each has its ``steps``.
Both read one clock (``time.monotonic``: CLOCK_MONOTONIC, system-wide on Linux), so a token's time in either
process is on one timeline from the run's start. Greedy decoding only (what "the same tokens" needs).

What the two show: colocated, a long prefill stalls the decodes batched with it (the ITL spikes); split, the
decodes never wait for a prefill, but each request's second token waits for its transfer.
"""

from __future__ import annotations

import multiprocessing as mp
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.shared_memory import SharedMemory
from typing import Any

import numpy as np
import torch

from ..caches.block_table import SequenceBlocks
from ..caches.blocks import BlockPool
from ..caches.paged import PagedCache
from ..core.sampling import Sampling, SimulationError, choose
from ..models.tokenizer import Tokenizer
from ..models.transformer import Transformer
from .core import BatchLimits, RunOptions, warm_up
from .request_lists import RequestInput

#: how long the run waits for the decode process to load its model and answer
START_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Transfer:
    """One request's K/V rows moved from the prefill pool to the decode pool."""

    request: int
    blocks: int
    nbytes: int
    pack_ms: float  # prefill side: rows copied from its pool into the shared segment
    unpack_ms: float  # decode side: rows copied from the segment into its pool
    delivered_ms: float  # from the start of the pack to the rows in the decode pool (waits for a decode step included)
    arrived_ms: float  # the run's clock when the rows were in the decode pool
    # the two pools (a view draws them side by side): the prefill pool's blocks the rows left (block j first) and
    # the decode pool's blocks they went into; each pool's size then; and every request the decode pool held
    # right after they arrived, with its blocks (this one included)
    prefill_blocks: tuple[int, ...] = ()
    decode_blocks: tuple[int, ...] = ()
    prefill_pool_blocks: int = 0
    decode_pool_blocks: int = 0
    decode_held: tuple[tuple[int, tuple[int, ...]], ...] = ()


@dataclass(frozen=True)
class ServedRequest:
    index: int
    tokens: tuple[int, ...]
    token_ms: tuple[float, ...]  # each output token's time on the run's clock

    @property
    def ttft_ms(self) -> float:
        return self.token_ms[0]

    @property
    def itl_ms(self) -> tuple[float, ...]:
        return tuple(b - a for a, b in zip(self.token_ms[:-1], self.token_ms[1:], strict=True))


@dataclass(frozen=True)
class Served:
    """A request list served one way: "colocated" or "disaggregated"."""

    mode: str
    requests: tuple[ServedRequest, ...]
    transfers: tuple[Transfer, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return {
            "mode": self.mode,
            "requests": [
                {
                    "request": r.index,
                    "output_tokens": len(r.tokens),
                    "ttft_ms": round(r.ttft_ms, 4),
                    "itl_ms_median": round(float(np.median(r.itl_ms)), 4) if r.itl_ms else None,
                    "itl_ms_max": round(max(r.itl_ms), 4) if r.itl_ms else None,
                }
                for r in self.requests
            ],
            "transfers": [t.__dict__ for t in self.transfers],
            "transfer_bytes": sum(t.nbytes for t in self.transfers),
            **self.meta,
        }


def _ids(inputs: Sequence[RequestInput | Sequence[int]]) -> list[list[int]]:
    return [list(r.prompt_ids) if isinstance(r, RequestInput) else [int(t) for t in r] for r in inputs]


def run_colocated(
    model: Transformer, tokenizer: Tokenizer, inputs: Sequence[RequestInput | Sequence[int]], steps: int, block_size: int = 16
) -> Served:
    """The requests through one pool, continuous batching, all arriving at once (greedy, no end token)."""
    from .batching import BatchingEngine

    options = RunOptions(block_size=block_size, steps=steps, stop_at_eos=False, keep_snapshots=False, prefix_caching=False)
    run = BatchingEngine(model, tokenizer, list(inputs), options, BatchLimits()).run()
    served = tuple(ServedRequest(r.index, r.output_ids, tuple(t - r.arrival_ms for t in r.token_ms)) for r in run.requests)
    return Served("colocated", served, meta={"pool_blocks": run.pool_blocks})


def _block_rows(pool: BlockPool, blocks: list[int]) -> torch.Tensor:
    k, v = pool.rows()
    return torch.stack([k[:, blocks], v[:, blocks]])  # (2, L, n, B, H_kv, D)


def run_disaggregated(
    model_spec: str,
    model: Transformer,
    tokenizer: Tokenizer,
    inputs: Sequence[RequestInput | Sequence[int]],
    steps: int,
    block_size: int = 16,
    dtype: str | None = None,
) -> Served:
    """Prefill here, decode in a spawned process that loads ``model_spec`` (the same model as ``model``, on the
    CPU, in ``dtype``)."""
    prompts = _ids(inputs)
    if steps < 1:
        raise SimulationError(f"steps must be ≥ 1, got {steps}")
    ctx = mp.get_context("spawn")  # a forked child would inherit torch's thread pool mid-state
    here, there = ctx.Pipe()
    worker = ctx.Process(target=_decode_instance, args=(model_spec, dtype, there, block_size, steps), daemon=True)
    worker.start()
    segments: dict[int, SharedMemory] = {}
    try:
        if not here.poll(START_TIMEOUT_S):
            raise SimulationError("the decode instance did not start")
        started = here.recv()
        if started != "ready":  # ("error", what stopped it): said, not hidden behind "did not start"
            said = started[1] if isinstance(started, tuple) else started
            raise SimulationError(f"the decode instance did not start: {said}")
        cfg = model.cfg
        pool = BlockPool(block_size, None, prefix_caching=False)
        pool.ensure_storage(cfg.n_layers, cfg.n_kv_heads, cfg.head_dim, model.dtype, model.device)
        t0 = time.monotonic()
        here.send(("start", t0))
        first: dict[int, tuple[int, float]] = {}
        packs: dict[int, tuple[float, float, int, int, tuple[int, ...], int]] = {}
        for i, ids in enumerate(prompts):
            seq = SequenceBlocks(pool, owner=i)
            cache = PagedCache(cfg.n_layers, block_size, pool=pool, sequence=seq)
            with torch.inference_mode():
                out = model(torch.tensor([ids]), torch.arange(len(ids)), cache, last_only=True)
            token = choose(out.logits[0, -1].float(), Sampling(), 0.5)
            first[i] = (token, (time.monotonic() - t0) * 1e3)
            start = time.monotonic()
            rows = _block_rows(pool, seq.blocks)
            segment = SharedMemory(create=True, size=rows.numel() * rows.element_size())
            view = np.ndarray(tuple(rows.shape), dtype=rows.numpy().dtype, buffer=segment.buf)
            view[...] = rows.numpy()
            pack_ms = (time.monotonic() - start) * 1e3
            segments[i] = segment
            packs[i] = (start, pack_ms, len(seq.blocks), segment.size, tuple(seq.blocks), pool.n_blocks)
            here.send(("kv", i, segment.name, tuple(rows.shape), str(view.dtype), ids, token))
            seq.free()  # the prefill pool lets the request go: its rows are in the segment
        here.send(("end",))
        transfers: dict[int, Transfer] = {}
        served: dict[int, ServedRequest] = {}
        while len(served) < len(prompts):
            if not here.poll(START_TIMEOUT_S):
                raise SimulationError("the decode instance stopped answering")
            msg = here.recv()
            if msg[0] == "got":
                _, i, done_at, unpack_ms, decode_blocks, decode_pool_blocks, held = msg
                start, pack_ms, n_blocks, nbytes, prefill_blocks, prefill_pool_blocks = packs[i]
                transfers[i] = Transfer(
                    i,
                    n_blocks,
                    nbytes,
                    pack_ms,
                    unpack_ms,
                    (done_at - start) * 1e3,
                    (done_at - t0) * 1e3,
                    prefill_blocks=prefill_blocks,
                    decode_blocks=tuple(decode_blocks),
                    prefill_pool_blocks=prefill_pool_blocks,
                    decode_pool_blocks=decode_pool_blocks,
                    decode_held=tuple((int(j), tuple(bs)) for j, bs in held),
                )
                segments.pop(i).unlink()
            elif msg[0] == "done":
                _, i, tokens, times = msg
                token, ttft = first[i]
                served[i] = ServedRequest(i, (token, *tokens), (ttft, *((t - t0) * 1e3 for t in times)))
            else:
                raise SimulationError(f"the decode instance failed: {msg[1]}")
        worker.join(timeout=10)
        return Served(
            "disaggregated",
            tuple(served[i] for i in range(len(prompts))),
            tuple(transfers[i] for i in range(len(prompts))),
            meta={"prefill_pool_blocks": pool.n_blocks, "channel": "shared memory (rows) + pipe (messages)"},
        )
    finally:
        for segment in segments.values():
            segment.close()
            segment.unlink()
        if worker.is_alive():
            worker.terminate()
            worker.join(timeout=5)
        here.close()


def _decode_instance(model_spec: str, dtype: str | None, conn: Connection, block_size: int, steps: int) -> None:
    """The decode process: load the model, take requests' rows as they arrive, decode them round-robin."""
    try:
        from ..models.loading import load_model

        torch.set_num_threads(1)
        model = load_model(model_spec, dtype=dtype).model
        cfg = model.cfg
        pool = BlockPool(block_size, None, prefix_caching=False)
        pool.ensure_storage(cfg.n_layers, cfg.n_kv_heads, cfg.head_dim, model.dtype, model.device)
        warm_up(model, block_size, [0, 1, 2, 3])  # the first timed step pays no lazy set-up (as the engines do)
        conn.send("ready")
        conn.recv()  # ("start", t0)
        active: list[dict[str, Any]] = []
        ended = False
        while active or not ended:
            while conn.poll(0) or (not active and not ended):
                msg = conn.recv()
                if msg[0] == "end":
                    ended = True
                    continue
                _, i, name, shape, dtype, ids, token = msg
                start = time.monotonic()
                segment = SharedMemory(name=name)
                rows = torch.from_numpy(np.ndarray(shape, dtype=np.dtype(dtype), buffer=segment.buf))
                seq = SequenceBlocks(pool, owner=i)
                seq.reserve(0, len(ids), ids)
                k, v = pool.rows()
                k[:, seq.blocks] = rows[0]
                v[:, seq.blocks] = rows[1]
                del rows
                segment.close()
                done = time.monotonic()
                held = [(r["i"], tuple(r["seq"].blocks)) for r in active] + [(i, tuple(seq.blocks))]
                conn.send(("got", i, done, (done - start) * 1e3, tuple(seq.blocks), pool.n_blocks, held))
                if steps == 1:  # its one token came out of the prefill
                    conn.send(("done", i, [], []))
                    seq.free()
                    continue
                cache = PagedCache(cfg.n_layers, block_size, pool=pool, sequence=seq)
                active.append({"i": i, "seq": seq, "cache": cache, "last": token, "pos": len(ids), "out": [], "at": []})
            for r in list(active):
                with torch.inference_mode():
                    out = model(torch.tensor([[r["last"]]]), torch.tensor([r["pos"]]), r["cache"], last_only=True)
                r["last"] = choose(out.logits[0, -1].float(), Sampling(), 0.5)
                r["pos"] += 1
                r["out"].append(r["last"])
                r["at"].append(time.monotonic())
                if len(r["out"]) >= steps - 1:
                    conn.send(("done", r["i"], r["out"], r["at"]))
                    r["seq"].free()
                    active.remove(r)
        conn.close()
    except Exception as exc:  # noqa: BLE001 - the run names whatever stopped the decode instance
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
