"""Traces round-trip exactly; damaged files give clear errors."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest
from helpers import FAMILY_SPECS, load

from kvsim.engine.simulate import Simulator
from kvsim.engine.trace import Trace, TraceError


@pytest.fixture(scope="module")
def trace() -> Trace:
    loaded = load(FAMILY_SPECS["llama-gqa"])
    sim = Simulator(loaded.model, loaded.tokenizer, loaded.tokenizer.encode("round trip"), model_id="t")
    list(sim.run(6))
    return sim.trace


def test_round_trip_is_exact(trace: Trace, tmp_path) -> None:
    path = trace.save(tmp_path / "run.kvsim")
    back = Trace.load(path)
    assert back.meta == json.loads(json.dumps(trace.meta))
    assert len(back.records) == len(trace.records)
    for a, b in zip(trace.records, back.records, strict=True):
        for name in ("positions", "input_ids", "q", "k", "v"):
            x, y = getattr(a, name), getattr(b, name)
            assert x.dtype == y.dtype and np.array_equal(x, y)
        assert (a.run_id, a.step, a.phase, a.token_id, a.token) == (b.run_id, b.step, b.phase, b.token_id, b.token)
        assert a.lanes == b.lanes
    assert back.token_ids() == trace.token_ids()


def test_records_are_immutable(trace: Trace) -> None:
    r = trace.records[0]
    with pytest.raises(ValueError):
        r.k[0, 0, 0, 0] = 1.0
    with pytest.raises(AttributeError):
        r.step = 3  # type: ignore[misc]


def test_save_is_atomic_and_leaves_no_temp(trace: Trace, tmp_path) -> None:
    target = tmp_path / "a.kvsim"
    target.write_bytes(b"old")
    trace.save(target)
    assert zipfile.is_zipfile(target)
    assert [p.name for p in tmp_path.iterdir()] == ["a.kvsim"]


def test_truncated_file(trace: Trace, tmp_path) -> None:
    path = trace.save(tmp_path / "run.kvsim")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceError, match="damaged|truncated|not a kvsim"):
        Trace.load(path)


def _rewrite(src, dst, manifest=None, arrays=None) -> None:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        zout.writestr("manifest.json", manifest if manifest is not None else zin.read("manifest.json"))
        zout.writestr("arrays.npz", arrays if arrays is not None else zin.read("arrays.npz"))


def test_tampered_files(trace: Trace, tmp_path) -> None:
    good = trace.save(tmp_path / "good.kvsim")
    manifest = json.loads(zipfile.ZipFile(good).read("manifest.json"))

    bad = tmp_path / "version.kvsim"
    _rewrite(good, bad, json.dumps({**manifest, "version": 99}))
    with pytest.raises(TraceError, match="version"):
        Trace.load(bad)

    bad = tmp_path / "json.kvsim"
    _rewrite(good, bad, "{not json")
    with pytest.raises(TraceError, match="JSON"):
        Trace.load(bad)

    meta = dict(manifest["meta"])
    meta["config"] = {**meta["config"], "n_kv_heads": 3}
    bad = tmp_path / "meaning.kvsim"
    _rewrite(good, bad, json.dumps({**manifest, "meta": meta}))
    with pytest.raises(TraceError, match="multiple of kv heads"):
        Trace.load(bad)  # shapes could be checked, but 8 heads over 3 K/V heads means nothing

    meta["config"] = {**meta["config"], "n_kv_heads": meta["config"]["n_heads"]}
    bad = tmp_path / "shape.kvsim"
    _rewrite(good, bad, json.dumps({**manifest, "meta": meta}))
    with pytest.raises(TraceError, match="do not match"):
        Trace.load(bad)

    bad = tmp_path / "arrays.kvsim"
    _rewrite(good, bad, arrays=b"garbage")
    with pytest.raises(TraceError, match="arrays.npz"):
        Trace.load(bad)

    bad = tmp_path / "plain.kvsim"
    bad.write_text("hello")
    with pytest.raises(TraceError):
        Trace.load(bad)
    with pytest.raises(TraceError, match="no such"):
        Trace.load(tmp_path / "missing.kvsim")


def test_pickled_arrays_are_refused(trace: Trace, tmp_path) -> None:
    import io

    good = trace.save(tmp_path / "good.kvsim")
    arrays = dict(np.load(io.BytesIO(zipfile.ZipFile(good).read("arrays.npz"))))
    arrays["s0_q"] = np.array([{"evil": 1}], dtype=object)  # every other array stays valid
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    bad = tmp_path / "pickle.kvsim"
    _rewrite(good, bad, arrays=buf.getvalue())
    with pytest.raises(TraceError, match="pickle|[Oo]bject"):
        Trace.load(bad)


def test_inconsistent_runs_are_refused(trace: Trace, tmp_path) -> None:
    good = trace.save(tmp_path / "good.kvsim")
    manifest = json.loads(zipfile.ZipFile(good).read("manifest.json"))
    cases = {
        "meta": {**manifest, "meta": "not an object"},
        "config": {**manifest, "meta": {**manifest["meta"], "config": {"n_layers": 2}}},
        "lanes": {**manifest, "meta": {**manifest["meta"], "lanes": [{"name": "warp"}]}},
        "order": {**manifest, "steps": [manifest["steps"][1], manifest["steps"][0], *manifest["steps"][2:]]},
    }
    for name, bad_manifest in cases.items():
        bad = tmp_path / f"{name}.kvsim"
        _rewrite(good, bad, json.dumps(bad_manifest))
        with pytest.raises(TraceError):
            Trace.load(bad)


@pytest.mark.parametrize(
    "key,value",
    [
        ("prompt_tokens", {"x": "a"}),
        ("prompt_tokens", {"1": 5}),
        ("prompt_tokens", ["a"]),
        ("prompt_tokens", {"99999999": "a"}),
        ("prompt_ids", [1, "2"]),
        ("prompt_ids", [-1]),
        ("prompt_ids", [10**9]),
        ("model_id", 7),
        ("prompt", ["text"]),
    ],
)
def test_load_refuses_what_the_apps_open_cannot_show(trace: Trace, tmp_path, key, value) -> None:
    """Trace.load and the app's Open agree: metadata the app's run builder (RunInfo.from_trace) would fail
    on, or show wrongly, is refused by Trace.load itself, naming the field; a valid trace builds."""
    pytest.importorskip("PySide6")
    from kvsim.ui.session import RunInfo

    src = tmp_path / "good.kvsim"
    trace.save(src)
    RunInfo.from_trace(Trace.load(src).meta, "r")  # the valid one builds
    with zipfile.ZipFile(src) as zf:
        manifest = json.loads(zf.read("manifest.json"))
    manifest["meta"][key] = value
    bad = tmp_path / "bad.kvsim"
    _rewrite(src, bad, manifest=json.dumps(manifest))
    with pytest.raises(TraceError, match=key):
        Trace.load(bad)


def test_a_member_beside_the_two_is_refused(trace: Trace, tmp_path) -> None:
    """The writer writes exactly manifest.json and arrays.npz; a file with anything else is not one it wrote."""
    good = trace.save(tmp_path / "good.kvsim")
    bad = tmp_path / "extra.kvsim"
    _rewrite(good, bad)
    with zipfile.ZipFile(bad, "a") as zf:
        zf.writestr("readme.txt", "hello")
    with pytest.raises(TraceError) as info:
        Trace.load(bad)
    line = str(info.value)
    assert line.startswith(f"{bad}: not a kvsim trace") and "readme.txt" in line and "\n" not in line
    assert "holds only manifest.json and arrays.npz" in line


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_a_manifest_with_a_constant_that_is_not_a_number_is_refused(trace: Trace, tmp_path, constant: str) -> None:
    """JSON's NaN/Infinity literals (Python writes them, the writer never does) are refused before any check."""
    good = trace.save(tmp_path / "good.kvsim")
    manifest = json.loads(zipfile.ZipFile(good).read("manifest.json"))
    manifest["meta"]["created"] = "__X__"
    bad = tmp_path / "nan.kvsim"
    _rewrite(good, bad, json.dumps(manifest).replace('"__X__"', constant))
    with pytest.raises(TraceError) as info:
        Trace.load(bad)
    assert str(info.value) == f"{bad}: manifest.json holds {constant}, which is not a number"


def test_traces_and_requests_runs_share_one_reader(trace: Trace, tmp_path) -> None:
    """Trace.load and load_runs open a .kvsim file through the same reader: a file damaged before its kind is
    known gets the same line from both, and each names what the other's file holds."""
    from kvsim.serving.saved_runs import load_runs

    good = trace.save(tmp_path / "good.kvsim")
    data = good.read_bytes()
    manifest = json.loads(zipfile.ZipFile(good).read("manifest.json"))
    damaged = {
        "garbage": b"PK\x03\x04" + b"\x00" * 100,
        "truncated": data[: len(data) // 2],
        "empty": b"",
    }
    paths = {}
    for name, raw in damaged.items():
        paths[name] = tmp_path / f"{name}.kvsim"
        paths[name].write_bytes(raw)
    paths["nan"] = tmp_path / "nan.kvsim"
    _rewrite(good, paths["nan"], json.dumps({**manifest, "version": float("nan")}))
    paths["deep"] = tmp_path / "deep.kvsim"
    _rewrite(good, paths["deep"], "[" * 100_000 + "]" * 100_000)
    paths["folder"] = tmp_path / "folder.kvsim"
    paths["folder"].mkdir()
    paths["missing"] = tmp_path / "missing.kvsim"
    lines: dict[str, list[str]] = {}
    for name, path in paths.items():
        lines[name] = []
        for loader in (Trace.load, load_runs):
            with pytest.raises(TraceError) as info:
                loader(path)
            lines[name].append(str(info.value))
        assert all(line.startswith(f"{path}: ") and "\n" not in line for line in lines[name]), lines[name]
    same = {name: pair for name, pair in lines.items() if name != "deep"}  # the deep one names the kind it was read as
    assert all(a == b for a, b in same.values()), same
    assert lines["nan"][0].endswith("manifest.json holds NaN, which is not a number")
    assert lines["missing"][0].endswith(": no such file") and lines["folder"][0].endswith(": not a regular file")
    assert [line.split(": ", 1)[1] for line in lines["deep"]] == [
        "the manifest is nested too deeply to be a kvsim trace",
        "the manifest is nested too deeply to be a kvsim requests file",
    ]

    with pytest.raises(TraceError, match="holds one run \\(a kvsim trace\\)"):
        load_runs(good)  # a trace read as requests says what it holds, as a requests file read as a trace does
    requests_file = tmp_path / "requests.kvsim"
    _rewrite(good, requests_file, json.dumps({"schema": "kvsim-requests", "version": 1, "runs": []}))
    with pytest.raises(TraceError, match="several requests"):
        Trace.load(requests_file)
    with pytest.raises(TraceError, match="one or two runs"):
        load_runs(requests_file)  # past the shared reader: the requests' own checks


@pytest.mark.parametrize(
    ("explanation", "shown"),
    [
        ("{heavy:>999999999}", "{heavy:>999999999}"),  # a width: a gigabyte string when the app fills it
        ("{window.__class__}", "{window.__class__}"),  # an attribute: reaches into the value
        ("{window!r}", "{window!r}"),
        ("{window:{width}}", "{window:{width}}"),  # a nested field: a width from the values
        ("keeps { the last", "an unmatched brace"),
    ],
)
def test_a_lane_whose_words_ask_what_kvsim_does_not_fill_is_refused(trace: Trace, tmp_path, explanation, shown) -> None:
    good = trace.save(tmp_path / "good.kvsim")
    manifest = json.loads(zipfile.ZipFile(good).read("manifest.json"))
    lanes = [dict(lane) for lane in manifest["meta"]["lanes"]]
    assert lanes[1]["words"]["explanation"]  # the run recorded its words: what a crafted file rewrites
    lanes[1]["words"] = {**lanes[1]["words"], "explanation": explanation}
    bad = tmp_path / "words.kvsim"
    _rewrite(good, bad, json.dumps({**manifest, "meta": {**manifest["meta"], "lanes": lanes}}))
    with pytest.raises(TraceError, match="explanation holds a field kvsim does not fill") as refused:
        Trace.load(bad)
    assert shown in str(refused.value) and str(refused.value).count("\n") == 0


def test_every_registered_policys_words_are_templates_kvsim_fills() -> None:
    # the check refuses nothing kvsim writes: each policy's title and explanation, for an example of its spec
    from kvsim.caches import parse_spec, policy_class, policy_examples
    from kvsim.core.words import unsafe_field

    checked = 0
    for example, _grammar in policy_examples():
        lane = parse_spec(example)
        cls = policy_class(lane.policy)
        words = cls.words(lane.options) if cls is not None else None
        if words is None:
            continue
        assert unsafe_field(words.title) is None and unsafe_field(words.explanation) is None, (example, words)
        checked += 1
    assert checked >= 8
