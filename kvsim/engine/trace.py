"""Step records and traces: what a run leaves behind, numpy only, no live tensors.

A ``StepRecord`` is frozen and its arrays are read-only, so it can cross threads and be drawn from
at any time. It stores only the step's *new* Q/K/V rows; everything else a view shows (the whole
K/V table, attention rows) is derived from the records, so a trace is O(n) in size.

A ``Trace`` is records + metadata, saved as one ``.kvsim`` file: a zip holding ``manifest.json``
(schema, metadata, every scalar of every step) and ``arrays.npz`` (the rows), written atomically
and validated on load (``allow_pickle=False``).
"""

from __future__ import annotations

import gc
import io
import json
import os
import struct
import zipfile
import zlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..core.atomic import atomic_target
from .records import EVICT_REASONS, DraftRows, HeadRows, LaneRows, LaneStep, SelectedRows, StepRecord
from .trace_checks import TraceError, check_meta, check_sequence, is_int

SCHEMA = "kvsim-trace"
SCHEMA_VERSION = 2
READABLE_VERSIONS = (1, 2)  # version 1 (before per-lane rows) reads as lanes that hold the shared rows
MAX_MEMBER_BYTES = 2 * 1024**3  # an archive member that unpacks to more is refused before it is read
MAX_MANIFEST_BYTES = 256 * 1024**2
ARCHIVE_MEMBERS = ("arrays.npz", "manifest.json")  # what write_archive writes, sorted: a reader accepts nothing else


def write_archive(path: str | os.PathLike[str] | None, manifest: dict[str, Any], arrays: dict[str, np.ndarray]) -> Path:
    """A ``.kvsim`` file: a zip of ``manifest.json`` and ``arrays.npz``, written atomically through
    ``kvsim.core.atomic`` (a temporary file in the same folder, read back, then renamed), so a failure or an
    interruption never leaves half a file; ``WriteError`` (an OSError) with one line when it cannot be written."""
    npz = io.BytesIO()
    np.savez(npz, **arrays)  # type: ignore[arg-type]  # mypy matches **arrays against savez's allow_pickle: bool
    with atomic_target(path, check=_check_archive) as tmp:
        with open(tmp, "wb") as fh, zipfile.ZipFile(fh, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("manifest.json", json.dumps(manifest))
            zf.writestr("arrays.npz", npz.getvalue())
    return Path(path)  # type: ignore[arg-type]


def _check_archive(tmp: Path) -> None:
    with zipfile.ZipFile(tmp) as zf:
        bad = zf.testzip()  # every member read back, its CRC checked
        if bad is not None or tuple(sorted(zf.namelist())) != ARCHIVE_MEMBERS:
            raise ValueError(f"member {bad} is damaged")


@dataclass(frozen=True)
class ArchiveLimits:
    """The most a reader opens: each member unpacked, and the file on disk (``None``: no limit of its own)."""

    manifest_bytes: int
    arrays_bytes: int
    file_bytes: int | None = None


TRACE_LIMITS = ArchiveLimits(manifest_bytes=MAX_MANIFEST_BYTES, arrays_bytes=MAX_MEMBER_BYTES)
_NOT_A_TRACE = {"kvsim-requests": "holds several requests through a paged pool, not one run (kvsim.serving.saved_runs reads it)"}


class ArchiveContents:
    """An opened ``.kvsim`` archive whose manifest is read and its schema and version checked; the arrays are
    read only when asked for, so a reader can check what the manifest implies first. Valid inside
    ``read_archive``'s ``with`` block only (the zip stays open there)."""

    def __init__(self, path: Path, zf: zipfile.ZipFile, manifest: dict[str, Any], version: int, what: str) -> None:
        self.path = path
        self.manifest = manifest
        self.version = version
        self._zip = zf
        self._what = what

    def open_arrays(self) -> np.lib.npyio.NpzFile:
        """``arrays.npz`` opened (``allow_pickle=False``); each array is unpacked when it is indexed."""
        with _archive_errors(self.path, self._what):
            blob = self._zip.read("arrays.npz")
        try:
            return np.load(io.BytesIO(blob), allow_pickle=False)
        except Exception as exc:  # noqa: BLE001 - numpy raises many kinds for a corrupt archive
            raise TraceError(f"{self.path}: arrays.npz is damaged ({exc})") from None

    def load_arrays(self) -> Arrays:
        """Every array of ``arrays.npz``, unpacked (read-only: ``read_npz``)."""
        with _archive_errors(self.path, self._what):
            blob = self._zip.read("arrays.npz")
        try:
            return read_npz(blob)
        except Exception as exc:  # noqa: BLE001 - numpy and zipfile raise many kinds for a corrupt archive
            raise TraceError(f"{self.path}: arrays.npz is damaged ({exc})") from None


_NPY_MAGIC = b"\x93NUMPY"
_LOCAL_HEADER = b"PK\x03\x04"


class Arrays(dict[str, np.ndarray]):
    """The arrays of an ``.npz`` by name (read-only), and which of them hold only finite values — found for each
    kind of array at once where the archive is read in bulk (a long run's five arrays a step: one check, not
    250,000)."""

    def __init__(self) -> None:
        super().__init__()
        self._finite: dict[str, bool] = {}

    def finite(self, key: str) -> bool:
        """Whether the array ``key`` holds only finite numbers (integers always do)."""
        known = self._finite.get(key)
        if known is None:
            array = self[key]
            known = self._finite[key] = array.dtype.kind not in "fc" or bool(np.isfinite(array).all())
        return known


def read_npz(blob: bytes) -> Arrays:
    """The arrays of an ``.npz`` held in memory, as ``np.load(…, allow_pickle=False)`` reads them, read-only.

    ``np.savez`` stores each member uncompressed: its bytes are read in place, and each distinct ``.npy`` header
    is parsed once (numpy's reader parses every member's header with ``ast``: about 0.3 ms a member, most of the
    load of a long run, whose every step has five arrays). A plain archive (``_read_plain``: what ``np.savez``
    writes) is read in bulk — its directory parsed here, the arrays of one header gathered into one block; any
    other goes member by member through ``zipfile``, and a member stored otherwise, or a ``.npy`` format other than
    1.0 / 2.0, through numpy's own reader. A member that is not an array, an object array, or data shorter than
    its header says: ``ValueError``."""
    plain = _read_plain(blob)
    if plain is not None:
        return plain
    out = Arrays()
    headers: dict[tuple[int, bytes], tuple[tuple[int, ...], bool, np.dtype]] = {}
    view = memoryview(blob)
    with zipfile.ZipFile(io.BytesIO(blob)) as zf:
        for info in zf.infolist():
            if not info.filename.endswith(".npy"):
                raise ValueError(f"member {info.filename[:60]!r} is not an array")
            key = info.filename[:-4]
            if key in out:
                raise ValueError(f"array {key[:60]!r} is there twice")
            raw = _stored_member(view, info)
            out[key] = _npy(raw if raw is not None else memoryview(zf.read(info)), headers)
    return out


_EOCD = struct.Struct("<4s4H2LH")  # end of central directory
_ZIP64_LOCATOR = struct.Struct("<4sLQL")
_ZIP64_EOCD = struct.Struct("<4sQ2H2L4Q")
_CENTRAL = struct.Struct("<4s4B4HL2L5H2L")  # one central directory entry
_BULK_CHUNK = 1 << 22  # bytes gathered at a time (the gather's index array is 8 times that)


def _read_plain(blob: bytes) -> Arrays | None:
    """A plain archive's arrays read in bulk, or None where it is not one (then ``read_npz`` reads it member by member,
    as before, with zipfile's checks): one disk, no archive comment, nothing before the entries or between the
    directory and its end, every member stored uncompressed, unencrypted, with an ASCII name, no extra field or comment
    in the directory, a local header where the directory says, a ``.npy`` of format 1.0 or 2.0 in C order."""
    size = len(blob)
    if size < _EOCD.size:
        return None
    sig, disk, cd_disk, count, total, cd_size, cd_offset, comment = _EOCD.unpack_from(blob, size - _EOCD.size)
    end = size - _EOCD.size
    if sig != b"PK\x05\x06" or comment or disk or cd_disk or count != total:
        return None
    if count == 0xFFFF or cd_size == 0xFFFFFFFF or cd_offset == 0xFFFFFFFF:  # the zip64 end record holds them
        at = end - _ZIP64_LOCATOR.size - _ZIP64_EOCD.size
        if at < 0:
            return None
        lsig, _disk64, where, disks = _ZIP64_LOCATOR.unpack_from(blob, end - _ZIP64_LOCATOR.size)
        zsig, length, _v1, _v2, d1, d2, count, total, cd_size, cd_offset = _ZIP64_EOCD.unpack_from(blob, at)
        if lsig != b"PK\x06\x07" or zsig != b"PK\x06\x06" or where != at or disks != 1 or length != 44 or d1 or d2:
            return None
        end = at
    if count != total or cd_offset + cd_size != end or count * _CENTRAL.size > cd_size:
        return None
    u8 = np.frombuffer(blob, dtype=np.uint8)
    headers: dict[tuple[int, bytes], tuple[tuple[int, ...], bool, np.dtype]] = {}
    groups: dict[tuple[int, bytes], tuple[list[str], list[int]]] = {}
    names: set[str] = set()
    at = cd_offset
    for _ in range(count):
        if at + _CENTRAL.size > end:
            return None
        (csig, _c1, _c2, _c3, _c4, flags, method, _t, _d, _crc, packed, unpacked, n_name, n_extra, n_comment, _disk, _ia, _ea,
         local) = _CENTRAL.unpack_from(blob, at)  # fmt: skip
        name = blob[at + _CENTRAL.size : at + _CENTRAL.size + n_name]
        at += _CENTRAL.size + n_name
        if csig != b"PK\x01\x02" or flags & 0x1 or method != zipfile.ZIP_STORED or packed != unpacked or n_extra or n_comment:
            return None
        if unpacked == 0xFFFFFFFF or local == 0xFFFFFFFF or not name.isascii() or local + 30 > cd_offset:
            return None
        if blob[local : local + 4] != b"PK\x03\x04":
            return None
        start = local + 30 + int.from_bytes(blob[local + 26 : local + 28], "little")  # its name's length
        start += int.from_bytes(blob[local + 28 : local + 30], "little")  # and its extra field's (np.savez: zip64 sizes)
        stop = start + unpacked
        if stop > cd_offset or blob[start : start + 6] != _NPY_MAGIC or blob[start + 6] not in (1, 2) or unpacked < 12:
            return None
        major = blob[start + 6]
        head = start + (10 if major == 1 else 12)
        header = blob[head : head + int.from_bytes(blob[start + 8 : head], "little")]
        text = name.decode("ascii")
        if not text.endswith(".npy"):
            raise ValueError(f"member {text[:60]!r} is not an array")
        key = text[:-4]
        if key in names:
            raise ValueError(f"array {key[:60]!r} is there twice")
        names.add(key)
        group = groups.get((major, header))
        if group is None:
            group = groups[(major, header)] = ([], [])
        group[0].append(key)
        group[1].extend((head + len(header), stop))  # where the member's data starts and ends (checked against its shape below)
    out = Arrays()
    for (major, header), (keys, bounds) in groups.items():
        parsed = headers.get((major, header))
        if parsed is None:
            read_header = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
            fp = io.BytesIO(len(header).to_bytes(2 if major == 1 else 4, "little") + header)
            parsed = headers[(major, header)] = read_header(fp)
        shape, fortran, dtype = parsed
        if dtype.hasobject:
            raise ValueError("an object array (kvsim never writes one, and never unpickles)")
        if fortran:
            return None
        count_one = 1
        for n in shape:
            count_one *= n
        nbytes = count_one * dtype.itemsize
        edges = np.array(bounds, dtype=np.int64).reshape(-1, 2)
        if (edges[:, 1] - edges[:, 0] < nbytes).any():
            raise ValueError(f"an array's data is shorter than its shape {shape} says")
        block = np.empty((len(keys), nbytes), dtype=np.uint8)
        step = max(1, _BULK_CHUNK // max(1, nbytes))
        span = np.arange(nbytes, dtype=np.int64)
        for first in range(0, len(keys), step):
            block[first : first + step] = u8[edges[first : first + step, :1] + span]
        stacked = block.view(dtype).reshape((len(keys), *shape))
        stacked.flags.writeable = False
        finite = np.isfinite(stacked.reshape(len(keys), -1)).all(axis=1).tolist() if dtype.kind in "fc" else [True] * len(keys)
        for i, key in enumerate(keys):
            out[key] = stacked[i]
            out._finite[key] = finite[i]
    return out


def _stored_member(view: memoryview, info: zipfile.ZipInfo) -> memoryview | None:
    """An uncompressed member's bytes, in place (None: compressed, or a local header that does not read: zipfile reads it)."""
    if info.compress_type != zipfile.ZIP_STORED or info.compress_size != info.file_size:
        return None
    at = info.header_offset
    if at < 0 or at + 30 > len(view) or bytes(view[at : at + 4]) != _LOCAL_HEADER:
        return None
    start = at + 30 + int.from_bytes(view[at + 26 : at + 28], "little") + int.from_bytes(view[at + 28 : at + 30], "little")
    end = start + info.file_size
    return view[start:end] if end <= len(view) else None


def _npy(raw: memoryview, headers: dict[tuple[int, bytes], tuple[tuple[int, ...], bool, np.dtype]]) -> np.ndarray:
    """One ``.npy`` member's array, read-only, over ``raw``; its header parsed once per distinct header."""
    major = raw[6] if len(raw) > 8 and bytes(raw[:6]) == _NPY_MAGIC else 0
    if major not in (1, 2):
        array = np.lib.format.read_array(io.BytesIO(bytes(raw)), allow_pickle=False)
        array.flags.writeable = False
        return array
    start = 10 if major == 1 else 12
    size = int.from_bytes(raw[8:start], "little")
    header = bytes(raw[start : start + size])
    parsed = headers.get((major, header))
    if parsed is None:
        fp = io.BytesIO(bytes(raw[8 : start + size]))
        read_header = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
        parsed = headers[(major, header)] = read_header(fp)
    shape, fortran, dtype = parsed
    if dtype.hasobject:
        raise ValueError("an object array (kvsim never writes one, and never unpickles)")
    count = 1
    for n in shape:
        count *= n
    data = raw[start + size :]
    if len(data) < count * dtype.itemsize:
        raise ValueError(f"an array's data is shorter than its shape {shape} says")
    return np.frombuffer(data, dtype=dtype, count=count).reshape(shape, order="F" if fortran else "C")


@contextmanager
def read_archive(
    path: Path,
    *,
    schema: str,
    versions: tuple[int, ...],
    what: str,
    limits: ArchiveLimits,
    others: Mapping[str, str] | None = None,
) -> Iterator[ArchiveContents]:
    """Open a ``.kvsim`` file written by ``write_archive``: the one reader of both kinds (traces, saved requests runs).

    Checked before anything is read: a regular file, within ``limits.file_bytes``, a zip of exactly
    ``manifest.json`` and ``arrays.npz`` (no other member), each within its limit unpacked. Then the manifest:
    JSON without ``NaN``/``Infinity`` literals (the writer never writes them), an object of ``schema`` (a
    schema in ``others`` is refused with its own words: what that file holds and who reads it), a version
    in ``versions``. ``what`` names the kind in the lines (``"kvsim trace"``). Every failure here is one
    ``TraceError`` line starting with the path; what the caller raises inside the block passes unchanged."""
    if not path.exists():
        raise TraceError(f"{path}: no such file")
    if not path.is_file():
        raise TraceError(f"{path}: not a regular file")
    with _archive_errors(path, what):
        size = path.stat().st_size
        if limits.file_bytes is not None and size > limits.file_bytes:
            raise TraceError(f"{path}: {size:,} bytes, more than kvsim opens as a {what} ({limits.file_bytes:,})")
        zf = zipfile.ZipFile(path)
    try:
        with _archive_errors(path, what):
            manifest = _read_manifest(path, zf, what, limits)
        checked, version = _check_schema(path, manifest, schema, versions, what, others or {})
        contents = ArchiveContents(path, zf, checked, version, what)
    except BaseException:
        zf.close()
        raise
    with zf:
        yield contents


def _read_manifest(path: Path, zf: zipfile.ZipFile, what: str, limits: ArchiveLimits) -> object:
    infos = zf.infolist()
    names = sorted(info.filename for info in infos)
    for member in ARCHIVE_MEMBERS[::-1]:
        if member not in names:
            raise TraceError(f"{path}: not a {what} (missing {member})")
    if tuple(names) != ARCHIVE_MEMBERS:
        raise TraceError(f"{path}: not a {what} (members {short(names)}; a .kvsim file holds only manifest.json and arrays.npz)")
    for info in infos:
        limit = limits.manifest_bytes if info.filename == "manifest.json" else limits.arrays_bytes
        if info.file_size > limit:
            raise TraceError(f"{path}: a member unpacks to more than kvsim opens ({info.filename} {info.file_size:,} bytes)")

    def no_constant(name: str) -> None:
        raise TraceError(f"{path}: manifest.json holds {name}, which is not a number")

    raw = zf.read("manifest.json")
    try:
        return json.loads(raw, parse_constant=no_constant)
    except TraceError:
        raise
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, an integer of more digits than Python converts
        raise TraceError(f"{path}: manifest.json is not valid JSON ({exc})") from None


class OtherKindError(TraceError):
    """A kvsim file of another kind (a requests run where a trace was asked for): its own reader says what
    is wrong with it, if anything."""


def _check_schema(
    path: Path, manifest: object, schema: str, versions: tuple[int, ...], what: str, others: Mapping[str, str]
) -> tuple[dict[str, Any], int]:
    if not isinstance(manifest, dict):
        raise TraceError(f"{path}: manifest is not an object")
    found = manifest.get("schema")
    if isinstance(found, str) and found in others:
        raise OtherKindError(f"{path}: {others[found]}")
    if found != schema:
        raise TraceError(f"{path}: not a {what} (schema {short(found)})")
    version = manifest.get("version")
    if type(version) is not int or version not in versions:
        raise TraceError(
            f"{path}: {what} version {short(version)} is not supported "
            f"(this kvsim reads versions {', '.join(map(str, versions))})"
        )
    return manifest, version


@contextmanager
def _archive_errors(path: Path, what: str) -> Iterator[None]:
    """The zip and JSON libraries' failures as one line each (a damaged file may fail in any of them)."""
    try:
        yield
    except TraceError:
        raise
    except RecursionError:  # before RuntimeError, its base
        raise TraceError(f"{path}: the manifest is nested too deeply to be a {what}") from None
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
        raise TraceError(f"{path}: damaged or truncated file ({exc})") from None
    except (NotImplementedError, RuntimeError) as exc:  # deflate64, encrypted members
        raise TraceError(f"{path}: a zip kvsim cannot read ({exc})") from None


def short(value: object) -> str:
    """``repr(value)`` cut to 60 characters: what a message quotes of a file's value."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


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
        steps, arrays = [], {}
        for i, r in enumerate(self.records):
            steps.append(
                {
                    "run_id": r.run_id,
                    "step": r.step,
                    "phase": r.phase,
                    "token_id": r.token_id,
                    "token": r.token,
                    "lanes": [_lane_to_json(lane) for lane in r.lanes],
                }
            )
            for name in ("positions", "input_ids", "q", "k", "v"):
                arrays[f"s{i}_{name}"] = getattr(r, name)
            if r.states is not None:
                arrays[f"s{i}_states"] = r.states
            for j, lane in enumerate(r.lanes):
                if lane.rows is not None:
                    for name in ("positions", "k", "v", "q"):
                        arrays[f"s{i}_l{j}_{name}"] = getattr(lane.rows, name)
                if lane.held is not None:
                    for name in ("positions", "scores", "evicted"):
                        arrays[f"s{i}_l{j}_held_{name}"] = getattr(lane.held, name)
                if lane.drafts is not None:
                    for name in DRAFT_ARRAYS:
                        arrays[f"s{i}_l{j}_draft_{name}"] = getattr(lane.drafts, name)
                if lane.selected is not None:
                    arrays[f"s{i}_l{j}_selected"] = lane.selected.positions
        manifest = {"schema": SCHEMA, "version": SCHEMA_VERSION, "meta": self.meta, "steps": steps}
        return write_archive(path, manifest, arrays)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Trace:
        """Read and validate a ``.kvsim`` file; every failure is a ``TraceError`` with one line."""
        path = Path(path)
        try:
            return cls._load(path)
        except TraceError:
            raise
        except RecursionError:
            raise TraceError(f"{path}: the manifest is nested too deeply to be a kvsim trace") from None
        except MemoryError:
            raise TraceError(f"{path}: too large to open") from None
        except Exception as exc:  # noqa: BLE001 - a damaged file may fail in any library below
            raise TraceError(f"{path}: damaged or not a kvsim trace ({type(exc).__name__}: {exc})") from None

    @classmethod
    def _load(cls, path: Path) -> Trace:
        with _no_cycle_collection():  # a long run's load makes millions of objects, none in a cycle: 1.7 s of 7 at 50k steps
            return cls._load_checked(path)

    @classmethod
    def _load_checked(cls, path: Path) -> Trace:
        with read_archive(
            path, schema=SCHEMA, versions=READABLE_VERSIONS, what="kvsim trace", limits=TRACE_LIMITS, others=_NOT_A_TRACE
        ) as archive:
            manifest = archive.manifest
            arrays = archive.load_arrays()
        meta = manifest.get("meta", {})
        steps = manifest.get("steps")
        try:
            check_meta(meta)
            if not isinstance(steps, list) or not steps:
                raise TraceError("the run has no steps" if isinstance(steps, list) else "the manifest has no list of steps")
            with_arrays = _lanes_with_arrays(arrays)
            records = [_record_from_json(i, s, arrays, meta, with_arrays) for i, s in enumerate(steps)]
            check_sequence(records, meta)
        except TraceError as exc:
            raise TraceError(f"{path}: {exc}") from None
        except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as exc:
            raise TraceError(f"{path}: malformed step data ({exc!r})") from None
        return cls(meta=meta, records=records)


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Python's cycle collector paused (as it was before, after): it walks every live object again and again while
    a load allocates them, and a trace's records, lanes and arrays hold no cycle."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _lane_to_json(lane: LaneStep) -> dict[str, Any]:
    data = asdict(replace(lane, rows=None, held=None, drafts=None, selected=None))  # their arrays go to arrays.npz
    for name in ("rows", "held", "drafts", "selected"):
        data.pop(name)
    data["top_ids"] = list(lane.top_ids)
    data["top_probs"] = list(lane.top_probs)
    data["spans"] = None if lane.spans is None else [list(s) for s in lane.spans]
    return data


_LANE_FIELDS = {f.name for f in fields(LaneStep)} - {"rows", "held", "drafts", "selected"}
_STEP_ARRAYS = ("positions", "input_ids", "q", "k", "v")  # every step's own arrays, s{i}_{name} in arrays.npz
DRAFT_ARRAYS = ("positions", "token_ids", "k", "v", "q")  # a speculative check's drafted rows, saved as arrays


def _lanes_with_arrays(arrays: dict[str, np.ndarray]) -> set[str]:
    """The ``s{i}_l{j}`` of every lane step with arrays of its own (rows, rows per head, drafts): the others'
    are not looked for (five lookups a lane and step: a long run's load)."""
    found = set()
    for key in arrays:
        parts = key.split("_", 2)
        if len(parts) == 3 and parts[1][:1] == "l":
            found.add(f"{parts[0]}_{parts[1]}")
    return found


def _lane_from_json(i: int, j: int, data: object, arrays: dict[str, np.ndarray], own_arrays: bool = True) -> LaneStep:
    if not isinstance(data, dict):
        raise TraceError(f"step {i}: lane {j} is not an object")
    if not _LANE_FIELDS.issuperset(data):
        raise TraceError(f"step {i}: lane {j} has unknown fields {sorted(set(data) - _LANE_FIELDS)}")
    for key in ("name", "policy"):
        if not isinstance(data.get(key), str):
            raise TraceError(f"step {i}: lane {j}'s {key} is not text")
    for key in ("flops_by_component", "bytes_by_component"):
        if not isinstance(data.get(key), dict) or not all(is_int(v) for v in data[key].values()):
            raise TraceError(f"step {i}: lane {j}'s {key} is not a table of whole numbers")
    spans = data.get("spans")
    if spans is not None:
        if not isinstance(spans, list) or not all(isinstance(s, list) and len(s) == 2 for s in spans):
            raise TraceError(f"step {i}: lane {j}'s spans are not [start, end] pairs")
        spans = tuple((s[0], s[1]) for s in spans)
    rows = None
    if own_arrays and f"s{i}_l{j}_positions" in arrays:
        parts = {}
        for name in ("positions", "k", "v", "q"):
            key = f"s{i}_l{j}_{name}"
            if key not in arrays:
                raise TraceError(f"step {i}: lane {j} lacks its {name} rows")
            parts[name] = arrays[key]
        if parts["positions"].dtype.kind != "i" or any(parts[n].dtype not in (np.float16, np.float32) for n in ("k", "v", "q")):
            raise TraceError(f"step {i}: lane {j}'s rows have the wrong dtypes")
        rows = LaneRows(**parts)
    reason = data.get("evict_reason", "")
    if reason not in ("", *EVICT_REASONS):
        raise TraceError(f"step {i}: lane {j}'s evict_reason {reason!r} is not one kvsim knows")
    held = _held_from_arrays(i, j, arrays) if own_arrays else None
    drafts = None
    if own_arrays and f"s{i}_l{j}_draft_positions" in arrays:
        found = {}
        for name in DRAFT_ARRAYS:
            key = f"s{i}_l{j}_draft_{name}"
            if key not in arrays:
                raise TraceError(f"step {i}: lane {j} lacks its drafted {name}")
            found[name] = arrays[key]
        if any(found[n].dtype.kind != "i" for n in ("positions", "token_ids")) or any(
            found[n].dtype not in (np.float16, np.float32) for n in ("k", "v", "q")
        ):
            raise TraceError(f"step {i}: lane {j}'s drafted rows have the wrong dtypes")
        drafts = DraftRows(**found)
    selected = arrays.get(f"s{i}_l{j}_selected") if own_arrays else None
    if selected is not None and (selected.ndim != 3 or selected.dtype.kind != "i"):
        raise TraceError(f"step {i}: lane {j}'s rows read (sparse attention) are not whole numbers (L, T, k)")
    return _lane_step(
        {
            **data,
            "top_ids": tuple(data["top_ids"]),
            "top_probs": tuple(data["top_probs"]),
            "spans": spans,
            "rows": rows,
            "held": held,
            "drafts": drafts,
            "selected": None if selected is None else SelectedRows(positions=selected.astype(np.int32)),
        }
    )


_LANE_DEFAULTS = {f.name: f.default for f in fields(LaneStep) if f.default is not MISSING}
_LANE_REQUIRED = frozenset(f.name for f in fields(LaneStep) if f.default is MISSING and f.default_factory is MISSING)


def _lane_step(values: dict[str, Any]) -> LaneStep:
    """``LaneStep(**values)`` without its generated ``__init__`` (a frozen dataclass sets each of its 35 fields through
    ``object.__setattr__``: 12 µs a lane, a second of a 50,000-step two-lane run's load): the same object — defaults
    filled, a missing field a ``TypeError`` as the constructor raises — for a class with no ``__post_init__``."""
    if not _LANE_REQUIRED.issubset(values):
        raise TypeError(f"LaneStep lacks {sorted(_LANE_REQUIRED - values.keys())}")
    lane = object.__new__(LaneStep)
    lane.__dict__.update(_LANE_DEFAULTS)
    lane.__dict__.update(values)
    return lane


def _held_from_arrays(i: int, j: int, arrays: dict[str, np.ndarray]) -> HeadRows | None:
    """A lane's rows per layer and KV head (eviction by attention), checked: shapes agree, dtypes are right."""
    keys = [f"s{i}_l{j}_held_{name}" for name in ("positions", "scores", "evicted")]
    present = [k in arrays for k in keys]
    if not any(present):
        return None
    if not all(present):
        raise TraceError(f"step {i}: lane {j} lacks part of its rows per head")
    positions, scores, evicted = (arrays[k] for k in keys)
    if positions.ndim != 3 or scores.shape != positions.shape or evicted.ndim != 3 or evicted.shape[:2] != positions.shape[:2]:
        raise TraceError(f"step {i}: lane {j}'s rows per head have shapes that do not fit together")
    if positions.dtype.kind != "i" or evicted.dtype.kind != "i" or scores.dtype not in (np.float16, np.float32):
        raise TraceError(f"step {i}: lane {j}'s rows per head have the wrong dtypes")
    if not np.isfinite(scores).all():
        raise TraceError(f"step {i}: lane {j}'s row scores hold values that are not numbers")
    return HeadRows(positions=positions.astype(np.int32), scores=scores, evicted=evicted.astype(np.int32))


def _record_from_json(
    i: int, step: object, arrays: dict[str, np.ndarray], meta: dict[str, Any], with_arrays: set[str] | None = None
) -> StepRecord:
    if not isinstance(step, dict):
        raise TraceError(f"step {i} is not an object")

    found: list[np.ndarray] = []
    for name in _STEP_ARRAYS:
        array = arrays.get(f"s{i}_{name}")
        if array is None:
            raise TraceError(f"step {i}: missing array {name}")
        found.append(array)
    positions, input_ids, q, k, v = found
    finite = arrays.finite if isinstance(arrays, Arrays) else lambda key: bool(np.isfinite(arrays[key]).all())
    t = positions.shape[0] if positions.ndim == 1 else -1
    if t <= 0 or input_ids.shape != positions.shape or positions.dtype.kind != "i" or input_ids.dtype.kind != "i":
        raise TraceError(f"step {i}: positions/input_ids have shapes {positions.shape}, {input_ids.shape}")
    for name, a in (("q", q), ("k", k), ("v", v)):
        if a.ndim != 4 or a.shape[2] != t or a.dtype not in (np.float16, np.float32):
            raise TraceError(f"step {i}: {name} has shape {a.shape} dtype {a.dtype}, expected (L, H, {t}, D) float")
        if not finite(f"s{i}_{name}"):
            raise TraceError(f"step {i}: {name} holds values that are not numbers")
    if k.shape != v.shape or q.shape[0] != k.shape[0] or q.shape[3] != k.shape[3]:
        raise TraceError(f"step {i}: q {q.shape}, k {k.shape}, v {v.shape} do not fit together")
    cfg = meta["config"]
    latent = cfg.get("family") in ("mla", "deepseek_v32")
    width = cfg.get("kv_lora_rank", 0) + cfg.get("qk_rope_head_dim", 0) if latent else cfg["head_dim"]
    expected = (cfg["n_layers"], cfg["n_heads"], cfg["n_kv_heads"], width)  # mla: rows are latents, r + d_R wide
    if (q.shape[0], q.shape[1], k.shape[1], q.shape[3]) != expected:
        raise TraceError(f"step {i}: rows of shape {q.shape}/{k.shape} do not match the model config {expected}")
    vocab = cfg.get("vocab_size")
    ids: list[Any] = input_ids.tolist() + [step.get("token_id")]  # the id is checked just below
    if not is_int(step.get("token_id")) or (vocab is not None and not all(0 <= x < vocab for x in ids)):
        raise TraceError(f"step {i}: token ids outside the model's vocabulary")
    for key in ("run_id", "phase", "token"):
        if not isinstance(step.get(key), str):
            raise TraceError(f"step {i}: {key} is not text")
    if not is_int(step.get("step")) or not isinstance(step.get("lanes"), list):
        raise TraceError(f"step {i}: step number or lanes missing")
    lanes = tuple(
        _lane_from_json(i, j, lane, arrays, with_arrays is None or f"s{i}_l{j}" in with_arrays)
        for j, lane in enumerate(step["lanes"])
    )
    states = arrays.get(f"s{i}_states")
    if states is not None:
        every = cfg.get("attention_every") or 0
        recurrent = sum(1 for layer in range(cfg["n_layers"]) if every and (layer + 1) % every)
        heads = cfg.get("linear_value_heads")
        if states.ndim != 4 or states.shape[:2] != (recurrent, heads) or states.dtype != np.float32:
            raise TraceError(f"step {i}: recurrent states of shape {states.shape} do not match the model config")
        if not finite(f"s{i}_states"):
            raise TraceError(f"step {i}: recurrent states hold values that are not numbers")
    return StepRecord(
        states=states,
        run_id=step["run_id"],
        step=step["step"],
        phase=step["phase"],
        positions=positions.astype(np.int64, copy=False),
        input_ids=input_ids.astype(np.int64, copy=False),
        token_id=step["token_id"],
        token=step["token"],
        q=q,
        k=k,
        v=v,
        lanes=lanes,
    )
