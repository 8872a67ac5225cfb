"""Saving a requests run (several requests through one paged pool) as a ``.kvsim`` file, and reading it back.

The file is a zip, as a trace is (``docs/trace-format.md``), with ``"schema": "kvsim-requests"``:

* ``manifest.json``: ``{"schema": "kvsim-requests", "version": 1, "runs": [RUN, …]}`` — one run, or two
  (prefix caching off, then on: ``--compare-prefix-cache``). A RUN holds the run's settings, each
  request (``RequestResult`` fields, token ids included), the waste figures' inputs and, per step,
  the snapshot's scalars, block tables, hashes and events;
* ``arrays.npz``: per run ``r``: ``r{r}_ref_counts`` and ``r{r}_filled`` ``(S, N)`` int32 and
  ``r{r}_tokens`` ``(S, N, B)`` int64 (each block's token ids, −1 where a slot holds none).

Version 2 (written when a run used continuous batching, ``kvsim.serving.batching``): a RUN also holds
``"batches"``, one ``BatchStep`` per step (its ``entries`` as ``[request, kind, start, tokens, emits]``),
and each request its arrival, token steps and clock, preemptions and recomputed rows. Version 1 files
read as before.

Optional fields (a file without them reads as before): a snapshot's ``"free_queue"`` (the free blocks in
eviction order, the next one handed out first) and a RUN's ``"pool_semantics"`` (``"vllm"``: block 0 is
vLLM's null block, counted in ``pool_blocks``, never held; absent: ``"kvsim"``).

Written atomically (``kvsim.core.atomic``); read with ``allow_pickle=False``, sizes checked before
anything is read, then every figure checked (types, finiteness, ranges, and the counts that must agree
with each other) into the same frozen records the engine returns; a bad file is one ``TraceError`` line.
"""

from __future__ import annotations

import math
import os
import zipfile
import zlib
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

import numpy as np

from ..caches.blocks import MAX_BLOCK_SIZE, MAX_POOL_BLOCKS, POOL_SEMANTICS
from ..engine.trace import SCHEMA as TRACE_SCHEMA
from ..engine.trace import ArchiveLimits, read_archive, short, write_archive
from ..engine.trace_checks import TraceError
from .records import BatchEntry, BatchStep, PoolSnapshot, RequestResult, RequestsRun, TableState
from .request_lists import MAX_REQUESTS
from .schedules import SCHEDULES
from .waste import allocation_waste

SCHEMA = "kvsim-requests"
VERSION = 2  # written when a run holds batch steps; 1 otherwise
VERSIONS = (1, 2)
BATCH_KINDS = ("prefill", "decode", "recompute")
MAX_BYTES = 512 * 1024**2
_RUN_FIELDS = ("model_id", "block_size", "pool_blocks", "block_bytes", "prefix_caching", "schedule", "repeats", "evictions")


def save_runs(runs: list[RequestsRun] | tuple[RequestsRun, ...], path: str | os.PathLike[str]) -> Path:
    path = Path(path)
    manifest_runs: list[dict[str, Any]] = []
    arrays: dict[str, np.ndarray] = {}
    for i, run in enumerate(runs):
        snaps = run.snapshots
        n, size = run.pool_blocks, run.block_size
        tokens = np.full((len(snaps), n, size), -1, dtype=np.int64)
        for s, snap in enumerate(snaps):
            for b, ids in enumerate(snap.token_ids):
                tokens[s, b, : len(ids)] = ids
        arrays[f"r{i}_ref_counts"] = np.array([s.ref_counts for s in snaps], dtype=np.int32).reshape(len(snaps), n)
        arrays[f"r{i}_filled"] = np.array([s.filled for s in snaps], dtype=np.int32).reshape(len(snaps), n)
        arrays[f"r{i}_tokens"] = tokens
        manifest_runs.append(
            {
                **{name: getattr(run, name) for name in _RUN_FIELDS},
                # written only when not the order every file before it had (those files say nothing: "kvsim")
                **({"pool_semantics": run.pool_semantics} if run.pool_semantics != "kvsim" else {}),
                "meta": run.meta,
                "waste": {"max_len": run.waste.max_len, "bytes_per_slot": run.waste.bytes_per_slot},
                "requests": [
                    {
                        **asdict(r),
                        "prompt_ids": list(r.prompt_ids),
                        "output_ids": list(r.output_ids),
                        "token_steps": list(r.token_steps),
                        "token_ms": list(r.token_ms),
                    }
                    for r in run.requests
                ],
                **({"batches": [_batch_dict(b) for b in run.batches]} if run.batches else {}),
                "snapshots": [
                    {
                        "step": s.step,
                        "request": s.request,
                        "phase": s.phase,
                        "owners": [list(o) for o in s.owners],
                        "hashes": list(s.hashes),
                        "events": list(s.events),
                        "tables": [asdict(t) for t in s.tables],
                        "free_blocks": s.free_blocks,
                        "cached_free_blocks": s.cached_free_blocks,
                        "evictions": s.evictions,
                        **({"free_queue": list(s.free_queue)} if s.free_queue is not None else {}),
                    }
                    for s in snaps
                ],
            }
        )
    version = VERSION if any(run.batches for run in runs) else 1
    return write_archive(path, {"schema": SCHEMA, "version": version, "runs": manifest_runs}, arrays)


def _batch_dict(b: BatchStep) -> dict[str, object]:
    return {
        **{name: getattr(b, name) for name in ("step", "ms", "clock_ms", "held_blocks", "cached_free_blocks", "free_blocks")},
        **{name: list(getattr(b, name)) for name in ("arrived", "preempted", "finished", "waiting")},
        "entries": [[e.request, e.kind, e.start, e.tokens, e.emits] for e in b.entries],
    }


def load_runs(path: str | os.PathLike[str]) -> tuple[RequestsRun, ...]:
    """Read and check a saved requests run; every failure is one ``TraceError`` line.

    Sizes are checked before anything is read (the file, each member, the snapshot count and the arrays
    the manifest implies); then every figure: types, finiteness, ranges, and the counts that must agree
    (a request's rows and blocks, each snapshot's reference counts with its block tables, the free
    blocks with the reference counts, the steps with the snapshots)."""
    path = Path(path)
    try:
        with read_archive(
            path, schema=SCHEMA, versions=VERSIONS, what="kvsim requests file", limits=LIMITS, others=_OTHERS
        ) as archive:
            manifest, version = archive.manifest, archive.version
            runs = manifest.get("runs")
            if not isinstance(runs, list) or not 1 <= len(runs) <= 2:
                raise TraceError(f"{path}: a requests file holds one or two runs")
            shapes = [_sizes(i, r) for i, r in enumerate(runs)]  # before a byte of the arrays is read
            arrays = _arrays(archive.open_arrays(), shapes)
            if version == 2 and not any(isinstance(r, dict) and "batches" in r for r in runs):
                raise TraceError("a version 2 file holds batch steps, this one none (version 1 is written without them)")
            for i, r in enumerate(runs):
                if "batches" in r and version < 2:
                    raise TraceError(f"run {i}: batch steps in a version {version} file (they came with version 2)")
        return tuple(_run(i, r, arrays) for i, r in enumerate(runs))
    except TraceError as exc:
        text = str(exc)
        raise TraceError(text if text.startswith(str(path)) else f"{path}: {text}") from None
    except MemoryError:
        raise TraceError(f"{path}: too large to open") from None
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
        raise TraceError(f"{path}: damaged or truncated file ({exc})") from None
    except Exception as exc:  # noqa: BLE001 - a damaged file may fail anywhere below
        raise TraceError(f"{path}: damaged or not a kvsim requests file ({type(exc).__name__}: {exc})") from None


MAX_FILE_BYTES = MAX_BYTES
MAX_MANIFEST_BYTES = 32 * 1024**2
LIMITS = ArchiveLimits(manifest_bytes=MAX_MANIFEST_BYTES, arrays_bytes=MAX_BYTES, file_bytes=MAX_FILE_BYTES)
_OTHERS = {TRACE_SCHEMA: "holds one run (a kvsim trace), not requests through a paged pool (kvsim.engine.trace reads it)"}
MAX_SNAPSHOTS = 10_000  # a run's steps (64 requests of ~150 steps); more is refused before the arrays are read
MAX_CELLS = 16 * 1024**2  # snapshot × block × slot cells of a run's token array (128 MB of int64)
MAX_IDS = 1 << 20  # token ids of one request
MAX_REPEATS = 1000
PHASES = ("prefill", "decode", "finish", "batch")  # "batch": a step of continuous batching
EVENTS = ("", "allocated", "written", "freed", "cached", "hit", "evicted", "copied")
_BATCHING_FIELDS = ("arrival_step", "arrival_ms", "token_steps", "token_ms", "preemptions", "recomputed_rows")
_HYBRID_FIELDS = ("state_restored_at",)  # a hybrid model's run only
_REQUEST_FIELDS = tuple(f.name for f in fields(RequestResult) if f.name not in _BATCHING_FIELDS + _HYBRID_FIELDS)
_BATCH_FIELDS = (
    "step",
    "ms",
    "clock_ms",
    "held_blocks",
    "cached_free_blocks",
    "free_blocks",
    "arrived",
    "preempted",
    "finished",
    "waiting",
    "entries",
)
_TABLE_FIELDS = ("request", "blocks", "n_tokens", "hit_blocks", "finished")
_SNAPSHOT_OPTIONAL = ("free_queue",)  # files written before the free queue was recorded lack it
_SNAPSHOT_FIELDS = (
    "step",
    "request",
    "phase",
    "owners",
    "hashes",
    "events",
    "tables",
    "free_blocks",
    "cached_free_blocks",
    "evictions",
)


def _int(value: object, what: str, lo: int = 0, hi: int = 2**62) -> int:
    if type(value) is not int or not lo <= value <= hi:
        raise TraceError(f"{what} must be a whole number from {lo:,} to {hi:,}, got {short(value)}")
    return value


def _obj(value: object, what: str, keys: tuple[str, ...], optional: tuple[str, ...] = ()) -> dict:
    if not isinstance(value, dict):
        raise TraceError(f"{what} is not an object")
    if not set(keys) <= set(value) <= set(keys) | set(optional):
        missing, extra = sorted(set(keys) - set(value)), sorted(set(value) - set(keys) - set(optional))
        raise TraceError(
            f"{what}: " + ("; ".join(x for x in (missing and f"lacks {missing}", extra and f"has unknown {extra}") if x))
        )
    return value


def _list(value: object, what: str, lo: int, hi: int) -> list:
    if not isinstance(value, list) or not lo <= len(value) <= hi:
        n = f"{len(value):,} entries" if isinstance(value, list) else type(value).__name__
        raise TraceError(f"{what} must be a list of {lo:,} to {hi:,} entries, got {n}")
    return value


def _text(value: object, what: str, most: int = 1 << 20) -> str:
    if not isinstance(value, str) or len(value) > most:
        raise TraceError(f"{what} must be text of at most {most:,} characters")
    return value


def _time(value: object, what: str) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value) or not 0 <= value <= 1e9:
        raise TraceError(f"{what} must be a time in ms from 0 to 1e9, got {short(value)}")
    return float(value)


def _sizes(i: int, data: object) -> tuple[int, int, int]:
    """(snapshots, blocks, slots) of run ``i``, checked against the limits before the arrays are read."""
    if not isinstance(data, dict):
        raise TraceError(f"run {i} is not an object")
    size = _int(data.get("block_size"), f"run {i}: block_size", 1, MAX_BLOCK_SIZE)
    n = _int(data.get("pool_blocks"), f"run {i}: pool_blocks", 1, MAX_POOL_BLOCKS)
    snaps = _list(data.get("snapshots"), f"run {i}: snapshots", 1, MAX_SNAPSHOTS)
    if len(snaps) * n * size > MAX_CELLS:
        raise TraceError(
            f"run {i}: {len(snaps):,} snapshots × {n:,} blocks × {size:,} slots is more than kvsim opens ({MAX_CELLS:,} cells)"
        )
    return len(snaps), n, size


def _arrays(npz: Any, shapes: list[tuple[int, int, int]]) -> dict[str, np.ndarray]:
    out = {}
    for i, (s, n, size) in enumerate(shapes):
        for key, shape, dtype in (
            ("ref_counts", (s, n), np.int32),
            ("filled", (s, n), np.int32),
            ("tokens", (s, n, size), np.int64),
        ):
            name = f"r{i}_{key}"
            if name not in npz.files:
                raise TraceError(f"run {i}: arrays.npz lacks {name}")
            stored = npz.zip.getinfo(f"{name}.npy").file_size
            if stored > int(np.prod(shape)) * np.dtype(dtype).itemsize + 4096:  # the header is < 4 KB
                raise TraceError(f"run {i}: {name} holds more than {shape} {np.dtype(dtype).name}")
            a = npz[name]
            if a.shape != shape or a.dtype != dtype:
                raise TraceError(f"run {i}: {name} is {a.shape} {a.dtype}, expected {shape} {np.dtype(dtype).name}")
            out[name] = a
    return out


def _run(i: int, data: dict, arrays: dict[str, np.ndarray]) -> RequestsRun:
    where = f"run {i}"
    size, n = data["block_size"], data["pool_blocks"]
    model_id = _text(data.get("model_id"), f"{where}: model_id", 4096)
    block_bytes = _int(data.get("block_bytes"), f"{where}: block_bytes", 1)
    if type(data.get("prefix_caching")) is not bool:
        raise TraceError(f"{where}: prefix_caching must be true or false")
    if data.get("schedule") not in SCHEDULES:
        raise TraceError(f"{where}: schedule must be one of {', '.join(SCHEDULES)}, got {short(data.get('schedule'))}")
    repeats = _int(data.get("repeats"), f"{where}: repeats", 1, MAX_REPEATS)
    semantics = data.get("pool_semantics", "kvsim")  # files before it had kvsim's order
    if semantics not in POOL_SEMANTICS:
        raise TraceError(f"{where}: pool_semantics must be one of {', '.join(POOL_SEMANTICS)}, got {short(semantics)}")
    if semantics == "vllm" and n < 2:
        raise TraceError(f"{where}: a vLLM pool holds the null block and at least one more, got {n} blocks")
    null = 0 if semantics == "vllm" else None
    evictions = _int(data.get("evictions"), f"{where}: evictions")
    if not isinstance(data.get("meta"), dict):
        raise TraceError(f"{where}: meta is not an object")
    waste_in = _obj(data.get("waste"), f"{where}: waste", ("max_len", "bytes_per_slot"))
    max_len = _int(waste_in["max_len"], f"{where}: waste max_len", 1, 1 << 24)
    bytes_per_slot = _int(waste_in["bytes_per_slot"], f"{where}: waste bytes_per_slot", 1)
    if bytes_per_slot * size != block_bytes:
        raise TraceError(f"{where}: block_bytes {block_bytes:,} is not {size} slots × {bytes_per_slot:,} bytes")
    snaps = data["snapshots"]
    n_snaps = len(snaps)
    batched = "batches" in data
    requests = tuple(
        _request(f"{where}, request {j}", j, r, size, n_snaps, batched)
        for j, r in enumerate(_list(data.get("requests"), f"{where}: requests", 1, MAX_REQUESTS))
    )
    n_req = len(requests)
    batches: tuple[BatchStep, ...] = ()
    if batched:
        batches = tuple(
            _batch(f"{where}, batch step {k}", k, b, n_req)
            for k, b in enumerate(_list(data["batches"], f"{where}: batches", n_snaps, n_snaps))
        )
    if batched:
        # a vLLM pool's null block (block 0) is neither held nor free: held + free covers the others
        _check_batched(where, data["meta"], requests, batches, n - (null is not None), n_snaps)
    ref, filled, tokens = (arrays[f"r{i}_{k}"] for k in ("ref_counts", "filled", "tokens"))
    if ref.min() < 0 or ref.max() > n_req or filled.min() < 0 or filled.max() > size or tokens.min() < -1:
        raise TraceError(f"{where}: reference counts, filled slots or token ids out of range")
    slots = np.arange(size)
    if not np.array_equal(tokens >= 0, slots[None, None, :] < filled[:, :, None]):
        raise TraceError(f"{where}: the blocks' token ids do not match their filled slots")
    if not data["prefix_caching"] and any(r.reused_rows for r in requests):
        raise TraceError(f"{where}: rows are reused although prefix caching is off")
    snapshots, last_evictions = [], 0
    for s, snap in enumerate(snaps):
        snapshot = _snapshot(f"{where}, step {s}", s, snap, ref[s], filled[s], tokens[s], size, n, n_req, null)
        full = [b for b in range(n) if filled[s][b] == size]
        on = data["prefix_caching"]
        if (on and any(snapshot.hashes[b] is None for b in full)) or (not on and any(h is not None for h in snapshot.hashes)):
            # with prefix caching every full block is registered by its hash; without, none is
            raise TraceError(f"{where}, step {s}: the blocks' hashes do not match prefix caching {'on' if on else 'off'}")
        if snapshot.evictions < last_evictions:
            raise TraceError(f"{where}, step {s}: evictions went down ({last_evictions} → {snapshot.evictions})")
        last_evictions = snapshot.evictions
        snapshots.append(snapshot)
    if evictions != last_evictions:
        raise TraceError(f"{where}: {evictions} evictions, but its last step counts {last_evictions}")
    for k, b in enumerate(batches):  # a batch step and the pool's snapshot after it count the same blocks
        if (b.free_blocks, b.cached_free_blocks) != (snapshots[k].free_blocks, snapshots[k].cached_free_blocks):
            raise TraceError(f"{where}, batch step {k}: its free blocks do not match the pool's at that step")
    waste = allocation_waste(
        [r.rows_held for r in requests],
        size,
        max_len,
        bytes_per_slot,
        prompts=[r.prompt_ids for r in requests] if data["prefix_caching"] else None,
    )
    return RequestsRun(
        model_id=model_id,
        block_size=size,
        pool_blocks=n,
        block_bytes=block_bytes,
        prefix_caching=data["prefix_caching"],
        schedule=data["schedule"],
        repeats=repeats,
        evictions=evictions,
        requests=requests,
        snapshots=tuple(snapshots),
        waste=waste,
        meta=dict(data["meta"]),
        batches=batches,
        pool_semantics=semantics,
    )


_BATCH_META = ("max_batched_tokens", "chunked_prefill", "chunk_size", "max_running")
_COMMON_META = ("steps", "sampling", "device", "dtype", "max_len")  # serving.core.build_run's
MAX_BATCHED_TOKENS = 1 << 24


def _check_batched(
    where: str, meta: dict, requests: tuple[RequestResult, ...], batches: tuple[BatchStep, ...], n: int, n_snaps: int
) -> None:
    """A continuously batched run as a whole: its limits (printed by `inspect`) whole numbers, the pool's
    blocks held + free = the pool, the clock never going back, each step within its token budget, and
    each request's preemptions, recomputed rows and token times what its steps say."""
    limits = _obj(meta, f"{where}: meta", _BATCH_META, _COMMON_META)
    for key in ("steps", "max_len"):
        if key in limits:
            _int(limits[key], f"{where}: meta {key}", 0, 1 << 24)
    for key in ("device", "dtype"):
        if key in limits:
            _text(limits[key], f"{where}: meta {key}", 64)
    if "sampling" in limits and not isinstance(limits["sampling"], dict):
        raise TraceError(f"{where}: meta sampling is not an object")
    budget = _int(limits["max_batched_tokens"], f"{where}: max_batched_tokens", 1, MAX_BATCHED_TOKENS)
    if type(limits["chunked_prefill"]) is not bool:
        raise TraceError(f"{where}: chunked_prefill must be true or false")
    for key in ("chunk_size", "max_running"):
        if limits[key] is not None:
            _int(limits[key], f"{where}: {key}", 1, MAX_BATCHED_TOKENS)
    clock = 0.0
    preempted = [0] * len(requests)
    for k, b in enumerate(batches):
        at = f"{where}, batch step {k}"
        if b.held_blocks + b.free_blocks != n or b.cached_free_blocks > b.free_blocks:
            raise TraceError(f"{at}: {b.held_blocks} held + {b.free_blocks} free blocks is not the pool's {n}")
        if b.clock_ms < clock:
            raise TraceError(f"{at}: the clock went back ({clock:g} → {b.clock_ms:g} ms)")
        clock = b.clock_ms
        if sum(e.tokens for e in b.entries) > budget:
            raise TraceError(f"{at}: {sum(e.tokens for e in b.entries):,} positions in a step of at most {budget:,}")
        if len({e.request for e in b.entries}) != len(b.entries):
            raise TraceError(f"{at}: a request appears twice in one step")
        for index in b.preempted:
            preempted[index] += 1
    for r in requests:
        if r.preemptions != preempted[r.index]:
            raise TraceError(f"{where}, request {r.index}: {r.preemptions:,} preemptions, its steps say {preempted[r.index]}")
        if r.recomputed_rows > r.preemptions * (len(r.prompt_ids) + len(r.output_ids)):
            raise TraceError(f"{where}, request {r.index}: more rows recomputed than its preemptions could")
        if r.token_ms and (r.token_ms[0] < r.arrival_ms or r.token_ms[-1] > clock or r.token_steps[0] < r.arrival_step):
            raise TraceError(f"{where}, request {r.index}: a token before it arrived or after the run's clock")


def _request(where: str, j: int, r: object, size: int, n_snaps: int, batched: bool) -> RequestResult:
    r = _obj(r, where, _REQUEST_FIELDS, _BATCHING_FIELDS + _HYBRID_FIELDS)
    if _int(r["index"], f"{where}: index", 0, MAX_REQUESTS) != j:
        raise TraceError(f"{where}: index {r['index']} is not its place {j}")
    if r["prompt"] is not None:
        _text(r["prompt"], f"{where}: prompt")
    prompt = tuple(
        _int(t, f"{where}: a prompt token id", 0, 2**31 - 1) for t in _list(r["prompt_ids"], f"{where}: prompt_ids", 1, MAX_IDS)
    )
    output = tuple(
        _int(t, f"{where}: an output token id", 0, 2**31 - 1) for t in _list(r["output_ids"], f"{where}: output_ids", 1, MAX_IDS)
    )
    _text(r["output_text"], f"{where}: output_text")
    counts = {
        k: _int(r[k], f"{where}: {k}")
        for k in ("prefill_rows", "reused_rows", "hit_blocks", "miss_blocks", "decode_steps", "blocks_held", "rows_held")
    }
    first, last = _int(r["first_step"], f"{where}: first_step"), _int(r["last_step"], f"{where}: last_step")
    times = {k: _time(r[k], f"{where}: {k}") for k in ("ttft_ms", "ttft_ms_min", "ttft_ms_max")}
    itl = None if r["itl_ms"] is None else _time(r["itl_ms"], f"{where}: itl_ms")
    token_steps = tuple(
        _int(t, f"{where}: a token step", 0, n_snaps - 1)
        for t in _list(r.get("token_steps", []), f"{where}: token_steps", 0, MAX_IDS)
    )
    token_ms = tuple(_time(t, f"{where}: a token time") for t in _list(r.get("token_ms", []), f"{where}: token_ms", 0, MAX_IDS))
    batching: dict[str, Any] = {
        "arrival_step": _int(r.get("arrival_step", 0), f"{where}: arrival_step", 0, max(0, n_snaps - 1)),
        "arrival_ms": _time(r.get("arrival_ms", 0.0), f"{where}: arrival_ms"),
        "preemptions": _int(r.get("preemptions", 0), f"{where}: preemptions"),
        "recomputed_rows": _int(r.get("recomputed_rows", 0), f"{where}: recomputed_rows"),
    }
    if len(token_steps) != len(token_ms) or (token_ms and len(token_ms) != len(output)):
        raise TraceError(f"{where}: token steps and times do not match its output")
    if list(token_steps) != sorted(token_steps) or list(token_ms) != sorted(token_ms):
        raise TraceError(f"{where}: its tokens' steps or times go backwards")
    if not batched and (token_ms or any(batching[k] for k in ("arrival_step", "preemptions", "recomputed_rows"))):
        raise TraceError(f"{where}: batching figures in a run without batch steps")
    checks = (
        (counts["prefill_rows"] + counts["reused_rows"] == len(prompt), "prefill_rows + reused_rows is not the prompt's length"),
        (counts["reused_rows"] == counts["hit_blocks"] * size, "reused_rows is not hit_blocks × the block size"),
        (counts["hit_blocks"] + counts["miss_blocks"] == -(-len(prompt) // size), "hit + miss blocks do not cover the prompt"),
        (counts["decode_steps"] == len(output) - 1, "decode_steps is not one less than the output tokens"),
        (counts["rows_held"] == len(prompt) + len(output) - 1, "rows_held is not prompt + output − 1"),
        (counts["blocks_held"] == -(-counts["rows_held"] // size), "blocks_held does not hold rows_held"),
        (first <= last < n_snaps, f"steps {first}..{last} are not within the run's {n_snaps} steps"),
        (times["ttft_ms_min"] <= times["ttft_ms"] <= times["ttft_ms_max"], "ttft_ms is not between its min and max"),
        ((itl is None) == (counts["decode_steps"] == 0), "itl_ms must be given exactly when there are decode steps"),
    )
    for ok, message in checks:
        if not ok:
            raise TraceError(f"{where}: {message}")
    restored = r.get("state_restored_at")
    if restored is not None and _int(restored, f"{where}: state_restored_at") != counts["reused_rows"]:
        raise TraceError(f"{where}: state_restored_at is not where its prefix hit ends (reused_rows)")
    return RequestResult(
        state_restored_at=restored,
        index=j,
        prompt=r["prompt"],
        prompt_ids=prompt,
        output_ids=output,
        output_text=r["output_text"],
        ttft_ms=times["ttft_ms"],
        ttft_ms_min=times["ttft_ms_min"],
        ttft_ms_max=times["ttft_ms_max"],
        itl_ms=itl,
        first_step=first,
        last_step=last,
        token_steps=token_steps,
        token_ms=token_ms,
        **batching,
        **counts,
    )


def _snapshot(
    where: str,
    s: int,
    snap: object,
    ref: np.ndarray,
    filled: np.ndarray,
    tokens: np.ndarray,
    size: int,
    n: int,
    n_req: int,
    null: int | None = None,
) -> PoolSnapshot:
    snap = _obj(snap, where, _SNAPSHOT_FIELDS, _SNAPSHOT_OPTIONAL)
    if _int(snap["step"], f"{where}: step") != s:
        raise TraceError(f"{where}: step number {snap['step']} is not its place {s}")
    request = _int(snap["request"], f"{where}: request", 0, n_req - 1)
    if snap["phase"] not in PHASES:
        raise TraceError(f"{where}: phase must be one of {', '.join(PHASES)}, got {short(snap['phase'])}")
    owners = tuple(
        tuple(_int(o, f"{where}: an owner", 0, n_req - 1) for o in _list(own, f"{where}: owners of a block", 0, n_req))
        for own in _list(snap["owners"], f"{where}: owners", n, n)
    )
    hashes = tuple(_hash(h, where) for h in _list(snap["hashes"], f"{where}: hashes", n, n))
    events = tuple(e if e in EVENTS else _bad_event(e, where) for e in _list(snap["events"], f"{where}: events", n, n))
    tables = []
    for t in _list(snap["tables"], f"{where}: tables", 0, n_req):
        t = _obj(t, f"{where}: a table", _TABLE_FIELDS)
        n_tokens = _int(t["n_tokens"], f"{where}: a table's n_tokens", 0, n * size)
        blocks = tuple(
            _int(b, f"{where}: a table's block", 0, n - 1) for b in _list(t["blocks"], f"{where}: a table's blocks", 0, n)
        )
        if len(blocks) != -(-n_tokens // size) or len(set(blocks)) != len(blocks):
            raise TraceError(f"{where}: a table's {len(blocks)} blocks do not hold its {n_tokens} rows")
        if type(t["finished"]) is not bool:
            raise TraceError(f"{where}: a table's finished must be true or false")
        hit = _int(t["hit_blocks"], f"{where}: a table's hit_blocks", 0, len(blocks))
        tables.append(
            TableState(_int(t["request"], f"{where}: a table's request", 0, n_req - 1), blocks, n_tokens, hit, t["finished"])
        )
    if len({t.request for t in tables}) != len(tables):
        raise TraceError(f"{where}: two tables name the same request")
    live: list[set[int]] = [set() for _ in range(n)]
    for t in tables:
        if not t.finished:
            for b in t.blocks:
                live[b].add(t.request)
    if any(set(owners[b]) != live[b] or len(owners[b]) != int(ref[b]) for b in range(n)):
        raise TraceError(f"{where}: the blocks' owners and reference counts do not match the block tables")
    if null is not None and (ref[null] or filled[null] or hashes[null] is not None):
        raise TraceError(f"{where}: the null block {null} is held, written or registered")
    unheld = [b for b in range(n) if ref[b] == 0 and b != null]
    free = _int(snap["free_blocks"], f"{where}: free_blocks", 0, n)
    cached = _int(snap["cached_free_blocks"], f"{where}: cached_free_blocks", 0, free)
    if free != len(unheld) or cached != sum(1 for b in unheld if hashes[b] is not None):
        raise TraceError(f"{where}: free_blocks / cached_free_blocks do not match the reference counts")
    queue = None
    if "free_queue" in snap:
        listed = _list(snap["free_queue"], f"{where}: free_queue", 0, n)
        queue = tuple(_int(b, f"{where}: a free-queue block", 0, n - 1) for b in listed)
        if sorted(queue) != unheld:
            raise TraceError(f"{where}: the free queue is not the blocks no table holds")
    return PoolSnapshot(
        step=s,
        request=request,
        phase=snap["phase"],
        block_size=size,
        ref_counts=_readonly(ref),
        filled=_readonly(filled),
        owners=owners,
        hashes=hashes,
        token_ids=tuple(tuple(int(x) for x in row[: int(k)]) for row, k in zip(tokens, filled, strict=True)),
        events=events,
        tables=tuple(tables),
        free_blocks=free,
        cached_free_blocks=cached,
        evictions=_int(snap["evictions"], f"{where}: evictions"),
        free_queue=queue,
        null_block=null,
    )


def _batch(where: str, k: int, b: object, n_req: int) -> BatchStep:
    """One step of a continuously batched run (version 2), every figure checked."""
    b = _obj(b, where, _BATCH_FIELDS)
    if _int(b["step"], f"{where}: step") != k:
        raise TraceError(f"{where}: step number {b['step']} is not its place {k}")

    def requests(name: str) -> tuple[int, ...]:
        return tuple(_int(r, f"{where}: a request {name}", 0, n_req - 1) for r in _list(b[name], f"{where}: {name}", 0, n_req))

    entries = []
    for e in _list(b["entries"], f"{where}: entries", 0, n_req):
        if not isinstance(e, list) or len(e) != 5:
            raise TraceError(f"{where}: an entry is not [request, kind, start, tokens, emits]")
        request, kind, start, tokens, emits = e
        if kind not in BATCH_KINDS or type(emits) is not bool:
            raise TraceError(f"{where}: an entry of kind {short(kind)} is not one of {', '.join(BATCH_KINDS)}")
        entries.append(
            BatchEntry(
                _int(request, f"{where}: an entry's request", 0, n_req - 1),
                kind,
                _int(start, f"{where}: an entry's start"),
                _int(tokens, f"{where}: an entry's tokens", 1, MAX_IDS),
                emits,
            )
        )
    return BatchStep(
        step=k,
        ms=_time(b["ms"], f"{where}: ms"),
        clock_ms=_time(b["clock_ms"], f"{where}: clock_ms"),
        entries=tuple(entries),
        arrived=requests("arrived"),
        preempted=requests("preempted"),
        finished=requests("finished"),
        waiting=requests("waiting"),
        held_blocks=_int(b["held_blocks"], f"{where}: held_blocks", 0, MAX_POOL_BLOCKS),
        cached_free_blocks=_int(b["cached_free_blocks"], f"{where}: cached_free_blocks", 0, MAX_POOL_BLOCKS),
        free_blocks=_int(b["free_blocks"], f"{where}: free_blocks", 0, MAX_POOL_BLOCKS),
    )


def _hash(h: object, where: str) -> str | None:
    if h is None:
        return None
    if not isinstance(h, str) or len(h) != 16 or any(c not in "0123456789abcdef" for c in h):
        raise TraceError(f"{where}: a block hash must be 16 hex digits or null, got {short(h)}")
    return h


def _bad_event(e: object, where: str) -> str:
    raise TraceError(f"{where}: unknown block event {short(e)} (known: {', '.join(repr(x) for x in EVENTS)})")


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.array(a)
    a.flags.writeable = False
    return a
