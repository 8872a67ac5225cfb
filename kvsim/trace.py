"""Step records and traces: what a run leaves behind, numpy only, no live tensors.

A ``StepRecord`` is frozen and its arrays are read-only, so it can cross threads and be drawn from
at any time. It stores only the step's *new* Q/K/V rows; everything else a view shows (the whole
K/V table, attention rows) is derived from the records, so a trace is O(n) in size.

A ``Trace`` is records + metadata, saved as one ``.kvsim`` file: a zip holding ``manifest.json``
(schema, metadata, every scalar of every step) and ``arrays.npz`` (the rows), written atomically
and validated on load (``allow_pickle=False``).
"""

from __future__ import annotations

import io
import json
import os
import tempfile
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

SCHEMA = "kvsim-trace"
SCHEMA_VERSION = 1


class TraceError(ValueError):
    """A trace file that cannot be read: wrong format, truncated, tampered with."""


@dataclass(frozen=True)
class LaneStep:
    """What one lane did in one step."""

    name: str
    policy: str
    kv_positions: int  # positions whose K/V this lane computed this step
    context: int  # key rows its attention read (S)
    flops: int  # matmul FLOPs (the total torch's counter would report)
    flops_by_component: dict[str, int]
    bytes_by_component: dict[str, int]
    wall_ms: float
    cache_tokens: int
    cache_bytes: int
    logit_diff: float  # max |logits - reference lane's logits| at the sampled position
    token_id: int  # the token this lane's own logits choose (same random draw as the reference)
    top_ids: tuple[int, ...] = ()
    top_probs: tuple[float, ...] = ()
    recompute_diff: float | None = None  # uncached lane: max |recomputed old K/V - first K/V|
    first_key: int = 0  # lowest position still visible to this lane (sliding windows evict)


@dataclass(frozen=True)
class StepRecord:
    run_id: str
    step: int
    phase: str  # "prefill" | "decode"
    positions: np.ndarray  # (T,) positions whose K/V are new this step
    input_ids: np.ndarray  # (T,) the tokens at those positions
    token_id: int  # the token this step produced (at position positions[-1] + 1)
    token: str
    q: np.ndarray  # (L, H, T, D)
    k: np.ndarray  # (L, H_kv, T, D), after RoPE: what the cache holds
    v: np.ndarray  # (L, H_kv, T, D)
    lanes: tuple[LaneStep, ...] = field(default=())

    def __post_init__(self) -> None:
        for name in ("positions", "input_ids", "q", "k", "v"):
            arr = np.asarray(getattr(self, name))
            if arr.flags.writeable:
                arr = arr.copy() if not arr.flags.owndata else arr
                arr.flags.writeable = False
            object.__setattr__(self, name, arr)

    def lane(self, name: str) -> LaneStep:
        for lane in self.lanes:
            if lane.name == name:
                return lane
        raise KeyError(name)

    @property
    def n_tokens(self) -> int:
        """Sequence length after this step's K/V rows (before the produced token)."""
        return int(self.positions[-1]) + 1


@dataclass
class Trace:
    meta: dict[str, Any]
    records: list[StepRecord] = field(default_factory=list)

    def token_ids(self, upto_step: int | None = None) -> list[int]:
        """Prompt ids followed by every produced token, up to and including ``upto_step``."""
        records = self.records if upto_step is None else self.records[: upto_step + 1]
        if not records:
            return []
        ids = [int(i) for i in records[0].input_ids]
        ids += [r.token_id for r in records]
        return ids

    # ---------------------------------------------------------------- save / load
    def save(self, path: str | os.PathLike[str]) -> Path:
        path = Path(path)
        steps, arrays = [], {}
        for i, r in enumerate(self.records):
            steps.append({
                "run_id": r.run_id, "step": r.step, "phase": r.phase,
                "token_id": r.token_id, "token": r.token,
                "lanes": [_lane_to_json(lane) for lane in r.lanes],
            })
            for name in ("positions", "input_ids", "q", "k", "v"):
                arrays[f"s{i}_{name}"] = getattr(r, name)
        manifest = {"schema": SCHEMA, "version": SCHEMA_VERSION, "meta": self.meta, "steps": steps}
        npz = io.BytesIO()
        np.savez(npz, **arrays)
        fd, tmp = tempfile.mkstemp(prefix=".kvsim-", suffix=".tmp", dir=path.parent or ".")
        try:
            with os.fdopen(fd, "wb") as fh, zipfile.ZipFile(fh, "w", zipfile.ZIP_DEFLATED) as zf:
                zf.writestr("manifest.json", json.dumps(manifest))
                zf.writestr("arrays.npz", npz.getvalue())
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        return path

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Trace:
        path = Path(path)
        if not path.is_file():
            raise TraceError(f"{path}: no such trace file")
        try:
            with zipfile.ZipFile(path) as zf:
                names = set(zf.namelist())
                for member in ("manifest.json", "arrays.npz"):
                    if member not in names:
                        raise TraceError(f"{path}: not a kvsim trace (missing {member})")
                manifest = json.loads(zf.read("manifest.json"))
                arrays_blob = zf.read("arrays.npz")
        except (zipfile.BadZipFile, EOFError, OSError) as exc:
            raise TraceError(f"{path}: damaged or truncated trace file ({exc})") from exc
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise TraceError(f"{path}: manifest.json is not valid JSON ({exc})") from exc
        if not isinstance(manifest, dict) or manifest.get("schema") != SCHEMA:
            raise TraceError(f"{path}: not a kvsim trace (schema {manifest.get('schema')!r})"
                             if isinstance(manifest, dict) else f"{path}: manifest is not an object")
        if manifest.get("version") != SCHEMA_VERSION:
            raise TraceError(f"{path}: trace schema version {manifest.get('version')!r} is not supported "
                             f"(this kvsim reads version {SCHEMA_VERSION})")
        try:
            npz = np.load(io.BytesIO(arrays_blob), allow_pickle=False)
            arrays = {k: npz[k] for k in npz.files}
        except Exception as exc:  # numpy raises many kinds for a corrupt archive
            raise TraceError(f"{path}: arrays.npz is damaged ({exc})") from exc
        meta = manifest.get("meta", {})
        try:
            _check_meta(meta)
            records = [_record_from_json(i, s, arrays, meta) for i, s in enumerate(manifest["steps"])]
            _check_sequence(records, meta)
        except TraceError as exc:
            raise TraceError(f"{path}: {exc}") from exc
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise TraceError(f"{path}: malformed step data ({exc!r})") from exc
        return cls(meta=meta, records=records)


CONFIG_KEYS = ("n_layers", "n_heads", "n_kv_heads", "head_dim", "max_seq_len")


def _check_meta(meta: object) -> None:
    if not isinstance(meta, dict) or not isinstance(meta.get("config"), dict):
        raise TraceError("metadata lacks the model config")
    missing = [k for k in CONFIG_KEYS if not isinstance(meta["config"].get(k), int)]
    if missing:
        raise TraceError(f"model config lacks {', '.join(missing)}")
    lanes = meta.get("lanes")
    if not isinstance(lanes, list) or not lanes or not all(isinstance(x, dict) and "name" in x for x in lanes):
        raise TraceError("metadata lacks the lanes")


def _check_sequence(records: list[StepRecord], meta: dict[str, Any]) -> None:
    """Steps 0..N-1 of one run, each carrying every lane the metadata names, positions contiguous."""
    names = [lane["name"] for lane in meta["lanes"]]
    next_position = 0
    for i, r in enumerate(records):
        if r.step != i or r.run_id != records[0].run_id:
            raise TraceError(f"step {i}: steps are not one run numbered 0..N-1")
        if [lane.name for lane in r.lanes] != names:
            raise TraceError(f"step {i}: lanes {[lane.name for lane in r.lanes]} differ from {names}")
        if int(r.positions[0]) != next_position or not np.array_equal(
                r.positions, np.arange(next_position, next_position + len(r.positions))):
            raise TraceError(f"step {i}: positions do not continue the previous step's")
        next_position = int(r.positions[-1]) + 1


def _lane_to_json(lane: LaneStep) -> dict[str, Any]:
    data = asdict(lane)
    data["top_ids"] = list(lane.top_ids)
    data["top_probs"] = list(lane.top_probs)
    return data


def _record_from_json(i: int, step: dict[str, Any], arrays: dict[str, np.ndarray],
                      meta: dict[str, Any]) -> StepRecord:
    def arr(name: str) -> np.ndarray:
        key = f"s{i}_{name}"
        if key not in arrays:
            raise TraceError(f"step {i}: missing array {name}")
        return arrays[key]

    positions, input_ids, q, k, v = (arr(n) for n in ("positions", "input_ids", "q", "k", "v"))
    t = positions.shape[0] if positions.ndim == 1 else -1
    if t <= 0 or input_ids.shape != positions.shape:
        raise TraceError(f"step {i}: positions/input_ids have shapes {positions.shape}, {input_ids.shape}")
    for name, a in (("q", q), ("k", k), ("v", v)):
        if a.ndim != 4 or a.shape[2] != t or a.dtype not in (np.float16, np.float32):
            raise TraceError(f"step {i}: {name} has shape {a.shape} dtype {a.dtype}, expected (L, H, {t}, D) float")
    if k.shape != v.shape or q.shape[0] != k.shape[0] or q.shape[3] != k.shape[3]:
        raise TraceError(f"step {i}: q {q.shape}, k {k.shape}, v {v.shape} do not fit together")
    cfg = meta.get("config", {})
    expected = (cfg.get("n_layers"), cfg.get("n_heads"), cfg.get("n_kv_heads"), cfg.get("head_dim"))
    if None not in expected and (q.shape[0], q.shape[1], k.shape[1], q.shape[3]) != expected:
        raise TraceError(f"step {i}: rows of shape {q.shape}/{k.shape} do not match the model config {expected}")
    lanes = tuple(LaneStep(**{**lane, "top_ids": tuple(lane["top_ids"]), "top_probs": tuple(lane["top_probs"])})
                  for lane in step["lanes"])
    return StepRecord(run_id=str(step["run_id"]), step=int(step["step"]), phase=str(step["phase"]),
                      positions=positions, input_ids=input_ids, token_id=int(step["token_id"]),
                      token=str(step["token"]), q=q, k=k, v=v, lanes=lanes)
