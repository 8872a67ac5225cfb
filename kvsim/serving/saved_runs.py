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

Written atomically; read with ``allow_pickle=False`` and checked (shapes, ranges, lengths) into the
same frozen records the engine returns; a bad file is one ``TraceError`` line.
"""

from __future__ import annotations

import io
import json
import os
import zipfile
import zlib
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

import numpy as np

from ..engine.trace import write_archive
from ..engine.trace_checks import TraceError
from .records import BatchEntry, BatchStep, PoolSnapshot, RequestResult, RequestsRun, TableState
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


def is_requests_file(manifest: object) -> bool:
    return isinstance(manifest, dict) and manifest.get("schema") == SCHEMA


def load_runs(path: str | os.PathLike[str]) -> tuple[RequestsRun, ...]:
    """Read and check a saved requests run; every failure is one ``TraceError`` line."""
    path = Path(path)
    try:
        if not path.is_file():
            raise TraceError(f"{path}: no such file (or not a regular file)")
        with zipfile.ZipFile(path) as zf:
            infos = {i.filename: i for i in zf.infolist()}
            if set(infos) < {"manifest.json", "arrays.npz"} or any(i.file_size > MAX_BYTES for i in infos.values()):
                raise TraceError(f"{path}: not a kvsim requests file (members missing or too large)")
            manifest = json.loads(zf.read("manifest.json"))
            npz = np.load(io.BytesIO(zf.read("arrays.npz")), allow_pickle=False)
            arrays = {k: npz[k] for k in npz.files}
        if not is_requests_file(manifest):
            raise TraceError(f"{path}: not a kvsim requests file")
        if manifest.get("version") not in VERSIONS:
            raise TraceError(
                f"{path}: requests file version {manifest.get('version')!r} is not supported (reads "
                f"{', '.join(map(str, VERSIONS))})"
            )
        runs = manifest.get("runs")
        if not isinstance(runs, list) or not 1 <= len(runs) <= 2:
            raise TraceError(f"{path}: a requests file holds one or two runs")
        return tuple(_run(i, r, arrays) for i, r in enumerate(runs))
    except TraceError:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
        raise TraceError(f"{path}: damaged or truncated file ({exc})") from None
    except Exception as exc:  # noqa: BLE001 - a damaged file may fail anywhere below
        raise TraceError(f"{path}: damaged or not a kvsim requests file ({type(exc).__name__}: {exc})") from None


def _int(value: object, what: str, lo: int = 0, hi: int = 2**62) -> int:
    if type(value) is not int or not lo <= value <= hi:
        raise TraceError(f"{what} must be a whole number from {lo} to {hi}, got {value!r}")
    return value


def _run(i: int, data: Any, arrays: dict[str, np.ndarray]) -> RequestsRun:
    size = _int(data["block_size"], "block_size", 1, 1 << 20)
    n = _int(data["pool_blocks"], "pool_blocks", 1, 1 << 24)
    snaps = data["snapshots"]
    ref, filled, tokens = (arrays[f"r{i}_{k}"] for k in ("ref_counts", "filled", "tokens"))
    if ref.shape != (len(snaps), n) or filled.shape != ref.shape or tokens.shape != (len(snaps), n, size):
        raise TraceError(f"run {i}: snapshot arrays do not match {len(snaps)} steps × {n} blocks of {size}")
    if ref.dtype != np.int32 or filled.dtype != np.int32 or tokens.dtype != np.int64:
        raise TraceError(f"run {i}: snapshot arrays have the wrong dtypes")
    if ref.size and (ref.min() < 0 or filled.min() < 0 or filled.max() > size):
        raise TraceError(f"run {i}: reference counts or filled slots out of range")
    requests = []
    for r in data["requests"]:
        kw: dict[str, Any] = {f.name: r[f.name] if f.name in r else f.default for f in fields(RequestResult)}
        kw["prompt_ids"], kw["output_ids"] = tuple(_int(t, "token id") for t in r["prompt_ids"]), tuple(r["output_ids"])
        kw["token_steps"] = tuple(_int(t, "token step") for t in kw["token_steps"])
        kw["token_ms"] = tuple(kw["token_ms"])
        for name in ("ttft_ms", "ttft_ms_min", "ttft_ms_max", "arrival_ms") + (("itl_ms",) if r["itl_ms"] is not None else ()):
            _time(kw[name], f"run {i}: request {r.get('index')}: {name}")
        for t in kw["token_ms"]:
            _time(t, f"run {i}: request {r.get('index')}: token_ms")
        for name in ("arrival_step", "preemptions", "recomputed_rows"):
            _int(kw[name], name)
        if kw["token_ms"] and len(kw["token_ms"]) != len(kw["output_ids"]) or len(kw["token_steps"]) != len(kw["token_ms"]):
            raise TraceError(f"run {i}: request {r.get('index')}: token times do not match its output")
        requests.append(RequestResult(**kw))
    n_req = len(requests)
    batches = tuple(_batch(i, b, n_req) for b in data.get("batches", ()))
    if batches and len(batches) != len(snaps):
        raise TraceError(f"run {i}: {len(batches)} batch steps but {len(snaps)} snapshots")
    snapshots = []
    for s, snap in enumerate(snaps):
        lists = [snap[k] for k in ("owners", "hashes", "events")]
        if any(len(x) != n for x in lists):
            raise TraceError(f"run {i}, step {s}: per-block lists are not {n} long")
        tables = tuple(
            TableState(**{**t, "blocks": tuple(_int(b, "block", 0, n - 1) for b in t["blocks"])}) for t in snap["tables"]
        )
        if any(not 0 <= t.request < n_req for t in tables):
            raise TraceError(f"run {i}, step {s}: a table names a request that is not in the run")
        snapshots.append(
            PoolSnapshot(
                step=_int(snap["step"], "step"),
                request=_int(snap["request"], "request", 0, max(0, n_req - 1)),
                phase=str(snap["phase"]),
                block_size=size,
                ref_counts=_readonly(ref[s]),
                filled=_readonly(filled[s]),
                owners=tuple(tuple(_int(o, "owner", 0, n_req - 1) for o in own) for own in snap["owners"]),
                hashes=tuple(None if h is None else str(h) for h in snap["hashes"]),
                token_ids=tuple(tuple(int(t) for t in row if t >= 0) for row in tokens[s]),
                events=tuple(str(e) for e in snap["events"]),
                tables=tables,
                free_blocks=_int(snap["free_blocks"], "free_blocks", 0, n),
                cached_free_blocks=_int(snap["cached_free_blocks"], "cached_free_blocks", 0, n),
                evictions=_int(snap["evictions"], "evictions"),
            )
        )
    waste = allocation_waste(
        [r.rows_held for r in requests],
        size,
        _int(data["waste"]["max_len"], "max_len", 1),
        _int(data["waste"]["bytes_per_slot"], "bytes_per_slot"),
        prompts=[r.prompt_ids for r in requests] if data["prefix_caching"] else None,
    )
    scalars = {name: data[name] for name in _RUN_FIELDS}
    return RequestsRun(
        **scalars, requests=tuple(requests), snapshots=tuple(snapshots), waste=waste, meta=dict(data["meta"]), batches=batches
    )


def _time(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not np.isfinite(value) or value < 0:
        raise TraceError(f"{what} is not a time")
    return float(value)


def _batch(i: int, b: Any, n_req: int) -> BatchStep:
    def requests(name: str) -> tuple[int, ...]:
        return tuple(_int(r, f"run {i}: batch {name}", 0, n_req - 1) for r in b[name])

    entries = []
    for request, kind, start, tokens, emits in b["entries"]:
        if kind not in BATCH_KINDS or not isinstance(emits, bool):
            raise TraceError(f"run {i}: a batch entry of kind {kind!r} is not one of {', '.join(BATCH_KINDS)}")
        entries.append(
            BatchEntry(
                _int(request, "batch request", 0, n_req - 1),
                kind,
                _int(start, "batch start"),
                _int(tokens, "batch tokens", 1),
                emits,
            )
        )
    return BatchStep(
        step=_int(b["step"], "batch step"),
        ms=_time(b["ms"], f"run {i}: batch ms"),
        clock_ms=_time(b["clock_ms"], f"run {i}: batch clock_ms"),
        entries=tuple(entries),
        arrived=requests("arrived"),
        preempted=requests("preempted"),
        finished=requests("finished"),
        waiting=requests("waiting"),
        held_blocks=_int(b["held_blocks"], "held_blocks"),
        cached_free_blocks=_int(b["cached_free_blocks"], "cached_free_blocks"),
        free_blocks=_int(b["free_blocks"], "free_blocks"),
    )


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.array(a)
    a.flags.writeable = False
    return a
