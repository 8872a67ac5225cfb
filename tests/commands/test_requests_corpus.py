"""Nothing invented: a hostile corpus of damaged requests runs (``kvsim run --requests … --save``).

A real small run (three requests, two sharing a prefix, prefix caching off and on, a pool small enough
to evict) is saved, then mutated here into well over 100 files: every figure of the manifest
set to a negative, a NaN, an infinity, text, a huge number, a wrong type or removed; counts that no
longer agree; a bogus schedule, phase, event or hash; 10,000 requests and 100,000 snapshots; arrays
out of range, of the wrong dtype or shape, or missing; the zip cut short, bytes flipped, not a zip.

Each file is given to ``kvsim inspect`` (in this process) and to ``load_runs``. It must be either
refused — exit 2 and one ``error:`` line, a ``TraceError`` — or, when the damage left a valid run (a
prompt's text changed, an escape code in the model's name), shown with every figure checked: the
run read back and saved again gives the very manifest and arrays of the file, and what ``inspect``
prints holds no control character. Bounded: the whole corpus's peak memory (ru_maxrss) grows by
less than 300 MB — work, not time, is what is bounded (no clock here)."""

from __future__ import annotations

import copy
import io
import json
import math
import random
import resource
import zipfile
from pathlib import Path

import numpy as np
import pytest

from kvsim.cli.entry import main
from kvsim.engine.trace_checks import TraceError
from kvsim.serving.saved_runs import load_runs, save_runs

MODEL = "random:family=llama,layers=1,heads=2,kv_heads=1,dim=32,ctx=64,seed=3"


def _read(path: Path) -> tuple[dict, dict[str, np.ndarray]]:
    with zipfile.ZipFile(path) as zf:
        manifest = json.loads(zf.read("manifest.json"))
        npz = np.load(io.BytesIO(zf.read("arrays.npz")), allow_pickle=False)
        return manifest, {k: npz[k] for k in npz.files}


def _write(path: Path, manifest: object, arrays: dict[str, np.ndarray], extra: dict[str, bytes] | None = None) -> Path:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("manifest.json", json.dumps(manifest) if not isinstance(manifest, bytes) else manifest)
        zf.writestr("arrays.npz", buf.getvalue())
        for name, data in (extra or {}).items():
            zf.writestr(name, data)
    return path


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> tuple[Path, dict, dict]:
    folder = tmp_path_factory.mktemp("requests-base")
    prompts = folder / "prompts.txt"
    prompts.write_text("a b c d e\na b c d f g\nh i\n")
    path = folder / "good.kvsim"
    argv = ["run", "--model", MODEL, "--requests", str(prompts), "--steps", "6", "--block-size", "2"]
    assert main([*argv, "--pool-blocks", "9", "--compare-prefix-cache", "--save", str(path)]) == 0
    manifest, arrays = _read(path)
    return path, manifest, arrays


BAD_VALUES = [-1, math.nan, math.inf, "7", None, 10**30, True, 2.5, [], {}]
RUN_FIELDS = ["block_size", "pool_blocks", "block_bytes", "prefix_caching", "schedule", "repeats", "evictions", "model_id"]
REQUEST_INTS = [
    "index",
    "prefill_rows",
    "reused_rows",
    "hit_blocks",
    "miss_blocks",
    "decode_steps",
    "blocks_held",
    "rows_held",
    "first_step",
    "last_step",
]
REQUEST_TIMES = ["ttft_ms", "ttft_ms_min", "ttft_ms_max", "itl_ms"]


def _cases(base) -> list[tuple[str, object]]:
    """(name, mutation): a mutation is a function (manifest, arrays) → (manifest, arrays[, extra]) or raw bytes."""
    path, _, _ = base
    good_bytes = path.read_bytes()
    cases: list[tuple[str, object]] = []

    def set_path(keys: tuple, value: object):
        def mutate(m, a):
            target = m
            for k in keys[:-1]:
                target = target[k]
            if value is _DELETE:
                del target[keys[-1]]
            else:
                target[keys[-1]] = value
            return m, a

        return mutate

    for field in RUN_FIELDS:
        for v in BAD_VALUES[:6] + [BAD_VALUES[6]]:
            cases.append((f"run.{field}={v!r}", set_path(("runs", 0, field), v)))
        cases.append((f"run.{field} removed", set_path(("runs", 0, field), _DELETE)))
    for field in REQUEST_INTS:
        for v in (-1, math.nan, "3", 2.5, 10**30):
            cases.append((f"request.{field}={v!r}", set_path(("runs", 1, "requests", 1, field), v)))
    for field in REQUEST_TIMES:
        for v in (math.nan, math.inf, -1.0, "fast"):
            cases.append((f"request.{field}={v!r}", set_path(("runs", 0, "requests", 0, field), v)))
    for v in (-1, "a", 1.5, 2**40, None):
        cases.append((f"prompt_ids[0]={v!r}", set_path(("runs", 0, "requests", 0, "prompt_ids", 0), v)))
    cases += [
        ("output_ids empty", set_path(("runs", 0, "requests", 0, "output_ids"), [])),
        ("request field removed", set_path(("runs", 0, "requests", 0, "rows_held"), _DELETE)),
        ("request unknown field", set_path(("runs", 0, "requests", 0, "extra"), 1)),
        ("request not an object", set_path(("runs", 0, "requests", 0), "req")),
        ("schedule bogus", set_path(("runs", 0, "schedule"), "round-robin")),
        ("waste bytes_per_slot off", lambda m, a: (_bump(m["runs"][0]["waste"], "bytes_per_slot"), a)),
        ("waste removed", set_path(("runs", 0, "waste"), _DELETE)),
        ("meta a list", set_path(("runs", 0, "meta"), [])),
        ("three runs", lambda m, a: ({**m, "runs": m["runs"] + m["runs"][:1]}, a)),
        ("no runs", lambda m, a: ({**m, "runs": []}, a)),
        ("runs an object", lambda m, a: ({**m, "runs": {}}, a)),
        ("version 2", lambda m, a: ({**m, "version": 2}, a)),  # version 2 holds batch steps: this one has none
        ("version 3", lambda m, a: ({**m, "version": 3}, a)),
        ("batch steps in version 1", set_path(("runs", 0, "batches"), [])),
        ("version '1'", lambda m, a: ({**m, "version": "1"}, a)),
        ("version true", lambda m, a: ({**m, "version": True}, a)),
        ("schema other", lambda m, a: ({**m, "schema": "kvsim-trace"}, a)),
        ("manifest a list", lambda m, a: ([m], a)),
        ("10,000 requests", lambda m, a: (_set(m, ("runs", 0, "requests"), m["runs"][0]["requests"] * 5000), a)),
        ("100,000 snapshots", lambda m, a: (_set(m, ("runs", 0, "snapshots"), [{}] * 100_000), a)),
        ("a snapshot fewer", lambda m, a: (_set(m, ("runs", 0, "snapshots"), m["runs"][0]["snapshots"][:-1]), a)),
        ("steps renumbered", lambda m, a: (_each_snapshot(m, lambda s, i: s.update(step=i + 1)), a)),
        ("evictions going down", lambda m, a: (_each_snapshot(m, lambda s, i: s.update(evictions=max(0, 5 - i))), a)),
        ("phase bogus", set_path(("runs", 0, "snapshots", 2, "phase"), "warmup")),
        ("request of a step out of range", set_path(("runs", 0, "snapshots", 2, "request"), 99)),
        ("an event unknown", set_path(("runs", 0, "snapshots", 2, "events", 0), "\x1b[2Jboom")),
        ("a hash not hex", set_path(("runs", 1, "snapshots", 3, "hashes", 0), "zzzzzzzzzzzzzzzz")),
        ("a hash a number", set_path(("runs", 1, "snapshots", 3, "hashes", 0), 12345)),
        ("owners of a block changed", set_path(("runs", 0, "snapshots", 3, "owners", 0), [1])),
        (
            "owners too short",
            lambda m, a: (_set(m, ("runs", 0, "snapshots", 3, "owners"), m["runs"][0]["snapshots"][3]["owners"][:-1]), a),
        ),
        ("free blocks off by one", lambda m, a: (_bump(m["runs"][0]["snapshots"][3], "free_blocks"), a)),
        ("cached free above free", lambda m, a: (_set(m, ("runs", 1, "snapshots", 3, "cached_free_blocks"), 10**6), a)),
        ("a table's block out of the pool", set_path(("runs", 0, "snapshots", 3, "tables", 0, "blocks", 0), 10**6)),
        ("a table's rows changed", lambda m, a: (_bump(m["runs"][0]["snapshots"][3]["tables"][0], "n_tokens", 5), a)),
        ("a table's finished a string", set_path(("runs", 0, "snapshots", 3, "tables", 0, "finished"), "no")),
        ("two tables for one request", lambda m, a: (_dup_table(m), a)),
        ("a snapshot not an object", set_path(("runs", 0, "snapshots", 1), 7)),
        # arrays
        ("ref_counts negative", lambda m, a: (m, _array(a, "r0_ref_counts", lambda x: x - 5))),
        ("ref_counts changed", lambda m, a: (m, _array(a, "r0_ref_counts", lambda x: x + 1))),
        ("filled past the block", lambda m, a: (m, _array(a, "r0_filled", lambda x: x + 7))),
        ("tokens negative", lambda m, a: (m, _array(a, "r0_tokens", lambda x: x - 9))),
        ("tokens as floats", lambda m, a: (m, _array(a, "r0_tokens", lambda x: x.astype(np.float64)))),
        ("tokens a row short", lambda m, a: (m, _array(a, "r0_tokens", lambda x: x[:-1]))),
        ("ref_counts int64", lambda m, a: (m, _array(a, "r1_ref_counts", lambda x: x.astype(np.int64)))),
        ("filled missing", lambda m, a: (m, {k: v for k, v in a.items() if k != "r1_filled"})),
        ("tokens huge", lambda m, a: (m, {**a, "r0_tokens": np.zeros((400, 9, 2000), np.int64)})),
        # text that is valid: shown, escaped, every figure as in the file
        ("model name with escape codes", set_path(("runs", 0, "model_id"), "evil\x1b[2J\x1b[31mmodel\r\u202e")),
        ("prompt text with escape codes", set_path(("runs", 0, "requests", 0, "prompt"), "\x1b]0;title\x07hi")),
        ("a time changed (still a time)", set_path(("runs", 0, "requests", 0, "ttft_ms_max"), 12345.5)),
    ]
    # the container
    for cut in (0, 1, 22, 100, len(good_bytes) // 3, len(good_bytes) // 2, len(good_bytes) - 30, len(good_bytes) - 1):
        cases.append((f"cut at {cut}", good_bytes[:cut]))
    rng = random.Random(19)
    for k in range(12):
        data = bytearray(good_bytes)
        for _ in range(1 + k):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        cases.append((f"flipped bits {k}", bytes(data)))
    cases += [
        ("not a zip", b"kvsim" * 100),
        ("manifest not JSON", lambda m, a: (b"{not json", a)),
        ("manifest NaN literal", lambda m, a: (json.dumps(m).replace('"evictions": 0', '"evictions": NaN', 1).encode(), a)),
        ("manifest deeply nested", lambda m, a: (b"[" * 100_000 + b"]" * 100_000, a)),
        ("an extra member", lambda m, a: (m, a, {"evil.py": b"print(1)"})),
        ("pickled arrays", lambda m, a: (m, {**a, "r0_tokens": np.array([object()], dtype=object)})),
    ]
    return cases


class _Delete:
    pass


_DELETE = _Delete()


def _set(m, keys, value):
    target = m
    for k in keys[:-1]:
        target = target[k]
    target[keys[-1]] = value
    return m


def _bump(d: dict, key: str, by: int = 1) -> dict:
    d[key] = d[key] + by
    return d


def _each_snapshot(m, f):
    for i, s in enumerate(m["runs"][0]["snapshots"]):
        f(s, i)
    return m


def _dup_table(m):
    tables = m["runs"][0]["snapshots"][-1]["tables"]
    tables.append(copy.deepcopy(tables[0]))
    return m


def _array(a: dict, key: str, f) -> dict:
    return {**a, key: f(a[key])}


def _make(folder: Path, i: int, base, mutation) -> Path:
    path = folder / f"case{i:03d}.kvsim"
    _, manifest, arrays = base
    if isinstance(mutation, bytes):
        path.write_bytes(mutation)
        return path
    out = mutation(copy.deepcopy(manifest), dict(arrays))
    m, a = out[0], out[1]
    extra = out[2] if len(out) > 2 else None
    if isinstance(m, bytes):
        return _write(path, m, a, extra)
    if isinstance(a, dict) and any(v.dtype == object for v in a.values()):
        buf = io.BytesIO()
        np.savez(buf, **a)  # object arrays are pickled by savez; the loader must refuse them
        with zipfile.ZipFile(path, "w") as zf:
            zf.writestr("manifest.json", json.dumps(m))
            zf.writestr("arrays.npz", buf.getvalue())
        return path
    return _write(path, m, a, extra)


def test_the_base_run_is_rich_enough(base):
    runs = load_runs(base[0])
    assert [r.prefix_caching for r in runs] == [False, True]
    assert runs[1].requests[1].reused_rows > 0  # the shared prefix is reused
    assert any(r.evictions for r in runs) or any(s.cached_free_blocks for r in runs for s in r.snapshots)


def test_damaged_requests_runs_are_refused_or_shown_exactly(base, tmp_path, capsys):
    cases = _cases(base)
    assert len(cases) >= 100
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    refused, shown = [], []
    for i, (name, mutation) in enumerate(cases):
        path = _make(tmp_path, i, base, mutation)
        rc = main(["inspect", str(path)])
        out, err = capsys.readouterr()
        try:
            runs = load_runs(path)
        except TraceError as exc:
            assert "\n" not in str(exc), name
            assert rc == 2, (name, rc, out, err)
            lines = err.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, (name, err)
            assert "\x1b" not in err, name
            refused.append(name)
            path.unlink()
            continue
        assert rc == 0 and not err, (name, err)
        assert not any(ord(c) < 32 and c != "\n" for c in out) and "\u202e" not in out, (name, out)
        # every figure checked: read back and saved again, the file's own manifest and arrays come out
        again = save_runs(runs, tmp_path / "again.kvsim")
        m1, a1 = _read(path)
        m2, a2 = _read(again)
        assert m1 == m2, name
        assert a1.keys() == a2.keys() and all(np.array_equal(a1[k], a2[k]) and a1[k].dtype == a2[k].dtype for k in a1), name
        shown.append(name)
        path.unlink()
    assert len(refused) >= 100, len(refused)
    valid = {"model name with escape codes", "prompt text with escape codes", "a time changed (still a time)", "run.model_id='7'"}
    assert set(shown) <= valid, shown
    assert "model name with escape codes" in shown  # valid text is shown, escaped, not refused
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 300, grown_mb


@pytest.fixture(scope="module")
def batched(tmp_path_factory) -> tuple[Path, dict, dict]:
    folder = tmp_path_factory.mktemp("requests-batched")
    prompts = folder / "prompts.txt"
    prompts.write_text("a b c d e\na b c d f g\nh i\n")
    path = folder / "batched.kvsim"
    argv = ["run", "--model", MODEL, "--requests", str(prompts), "--steps", "6", "--block-size", "2", "--pool-blocks", "9"]
    assert main([*argv, "--batching", "continuous", "--max-batched-tokens", "8", "--save", str(path)]) == 0
    manifest, arrays = _read(path)
    return path, manifest, arrays


def test_damaged_batched_runs_are_refused(batched, tmp_path, capsys):
    """Version 2 (continuous batching): its own figures damaged, each refused in one line."""
    runs = load_runs(batched[0])
    assert runs[0].batches and any(r.preemptions for r in runs[0].requests)  # a run rich enough: preemptions

    def at(keys, value):
        def mutate(m, a):
            return _set(m, keys, value), a

        return mutate

    b, r = ("runs", 0, "batches", 2), ("runs", 0, "requests", 1)
    cases = [(f"batch.{k}={v!r}", at((*b, k), v)) for k in ("ms", "clock_ms") for v in (math.nan, -1.0, "x", None)]
    cases += [(f"batch.{k}={v!r}", at((*b, k), v)) for k in ("held_blocks", "free_blocks", "step") for v in (-1, 2.5, 10**30)]
    cases += [
        ("batch entry kind", at((*b, "entries", 0, 1), "prefetch")),
        ("batch entry short", at((*b, "entries", 0), [0, "decode"])),
        ("batch entry emits text", at((*b, "entries", 0, 4), "yes")),
        ("batch entry tokens 0", at((*b, "entries", 0, 3), 0)),
        ("batch entry request out", at((*b, "entries", 0, 0), 99)),
        ("batch waiting out", at((*b, "waiting"), [99])),
        ("batch unknown field", at((*b, "extra"), 1)),
        ("a batch step fewer", lambda m, a: (_set(m, ("runs", 0, "batches"), m["runs"][0]["batches"][:-1]), a)),
        ("token_ms NaN", at((*r, "token_ms", 0), math.nan)),
        ("token_ms backwards", lambda m, a: (_set(m, (*r, "token_ms"), m["runs"][0]["requests"][1]["token_ms"][::-1]), a)),
        ("token_steps out of the run", at((*r, "token_steps", 0), 10**6)),
        ("token_steps short", lambda m, a: (_set(m, (*r, "token_steps"), m["runs"][0]["requests"][1]["token_steps"][:-1]), a)),
        ("arrival_step negative", at((*r, "arrival_step"), -1)),
        ("arrival_ms infinite", at((*r, "arrival_ms"), math.inf)),
        ("preemptions text", at((*r, "preemptions"), "1")),
        ("recomputed_rows negative", at((*r, "recomputed_rows"), -4)),
        ("version 1 with batch steps", lambda m, a: ({**m, "version": 1}, a)),
    ]
    for i, (name, mutation) in enumerate(cases):
        path = _make(tmp_path, i, batched, mutation)
        with pytest.raises(TraceError) as info:
            load_runs(path)
        assert "\n" not in str(info.value), name
        assert main(["inspect", str(path)]) == 2, name
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: "), (name, err)
