"""The trace's ``.npz`` reader: the bulk path (a plain archive as ``np.savez`` writes it, zip64 included) reads what
numpy reads, knows which arrays are finite, refuses what the member-by-member path refuses, and leaves any other
archive to that path; a lane step built without its generated ``__init__`` is the one the constructor builds."""

from __future__ import annotations

import io
import warnings
import zipfile
from dataclasses import fields

import numpy as np
import pytest

from kvsim.engine.records import LaneStep
from kvsim.engine.trace import _LANE_DEFAULTS, _lane_step, _read_plain, read_npz


def _savez(arrays: dict[str, np.ndarray], compressed: bool = False) -> bytes:
    out = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(out, **arrays)  # type: ignore[operator]
    return out.getvalue()


def _sample() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    arrays = {f"s{i}_q": rng.standard_normal((2, 1, 1, 4)).astype(np.float32) for i in range(5)}
    arrays |= {f"s{i}_positions": np.array([i]) for i in range(5)}
    arrays |= {"half": rng.standard_normal((3, 2)).astype(np.float16), "empty": np.zeros((0, 4)), "scalar": np.array(7)}
    arrays["s3_q"][1, 0, 0, 2] = np.nan
    arrays["half"][2, 1] = np.inf
    return arrays


def test_bulk_path_reads_what_numpy_reads_and_knows_which_are_finite() -> None:
    arrays = _sample()
    blob = _savez(arrays)
    assert _read_plain(blob) is not None  # the bulk path took it
    got = read_npz(blob)
    assert set(got) == set(arrays)
    for key, want in arrays.items():
        assert got[key].dtype == want.dtype and got[key].shape == want.shape
        np.testing.assert_array_equal(got[key], want)
        assert not got[key].flags.writeable
        assert got.finite(key) == bool(np.isfinite(want).all())
    assert not got.finite("s3_q") and got.finite("s2_q") and not got.finite("half") and got.finite("s1_positions")


def test_a_compressed_archive_goes_member_by_member() -> None:
    arrays = _sample()
    blob = _savez(arrays, compressed=True)
    assert _read_plain(blob) is None
    got = read_npz(blob)
    for key, want in arrays.items():
        np.testing.assert_array_equal(got[key], want)
        assert got.finite(key) == bool(np.isfinite(want).all())


def test_zip64_archive_of_more_than_65535_members_is_read_in_bulk() -> None:
    arrays = {f"a{i}": np.array([i], dtype=np.int32) for i in range(65_600)}
    blob = _savez(arrays)
    assert blob[-22:-18] == b"PK\x05\x06" and blob[-22 - 20 : -22 - 16] == b"PK\x06\x07"  # a zip64 end record
    got = _read_plain(blob)
    assert got is not None and len(got) == 65_600 and int(got["a65599"][0]) == 65_599


def test_both_paths_refuse_a_duplicate_a_non_array_and_short_data() -> None:
    for compress in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        out = io.BytesIO()
        with warnings.catch_warnings(), zipfile.ZipFile(out, "w", compress) as zf:
            warnings.simplefilter("ignore")  # zipfile warns of the duplicate name it writes
            one = io.BytesIO()
            np.save(one, np.arange(3))
            zf.writestr("x.npy", one.getvalue())
            zf.writestr("x.npy", one.getvalue())
        with pytest.raises(ValueError, match="twice"):
            read_npz(out.getvalue())
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", compress) as zf:
            zf.writestr("x.txt", b"\x93NUMPY\x01\x00")
        with pytest.raises(ValueError, match="not an array"):
            read_npz(out.getvalue())
    blob = bytearray(_savez({"x": np.arange(4, dtype=np.int64)}))
    at = blob.index(b"(4,)")
    blob[at : at + 4] = b"(9,)"  # the header says 9 values, the member holds 4
    with pytest.raises(ValueError, match="shorter"):
        read_npz(bytes(blob))


def test_damaged_directory_leaves_the_archive_to_zipfile() -> None:
    blob = bytearray(_savez(_sample()))
    at = blob.rindex(b"PK\x01\x02")
    blob[at : at + 4] = b"PK\x01\x03"  # a directory entry's signature damaged
    assert _read_plain(bytes(blob)) is None
    with pytest.raises(zipfile.BadZipFile):
        read_npz(bytes(blob))


def test_lane_step_without_init_is_the_constructors() -> None:
    assert not hasattr(LaneStep, "__post_init__")  # _lane_step skips the generated __init__ only: nothing else runs
    required = {f.name for f in fields(LaneStep)} - set(_LANE_DEFAULTS)
    values = {name: 1 for name in required} | {"name": "kv", "policy": "kv", "flops_by_component": {}, "top_ids": (1,)}
    assert _lane_step(dict(values)) == LaneStep(**values)
    values.pop("wall_ms")
    with pytest.raises(TypeError):
        _lane_step(values)
