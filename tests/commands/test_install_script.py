"""scripts/install.py, the README's install: its decisions against a stand-in package index on 127.0.0.1 (never
PyTorch's real one): no GPU → the CPU index, a GPU (a stand-in ``nvidia-smi``) → the CUDA index, an index that
cannot be reached → pip's default index, a suitable torch installed → kept, and kvsim pinned to it. Two of pip's
own dry runs (``--report``) show what the CPU and CUDA choices resolve: no ``nvidia-*`` without a GPU."""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import shlex
import socket
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote

import pytest
from helpers import ROOT

SCRIPT = ROOT / "scripts" / "install.py"
spec = importlib.util.spec_from_file_location("kvsim_install_script", SCRIPT)
assert spec is not None and spec.loader is not None
install = importlib.util.module_from_spec(spec)
spec.loader.exec_module(install)


def _wheel(folder: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> None:
    """A wheel that holds only its metadata: enough for pip to resolve it (a dry run installs nothing)."""
    dist = f"{name.replace('-', '_')}-{version}"
    project = folder / name
    project.mkdir(parents=True, exist_ok=True)
    path = project / f"{dist}-py3-none-any.whl"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(f"Requires-Dist: {r}\n" for r in requires)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{dist}.dist-info/METADATA", metadata)
        z.writestr(f"{dist}.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{dist}.dist-info/RECORD", "")
    (project / "index.html").write_text(f'<html><body><a href="{quote(path.name)}">{path.name}</a></body></html>\n')


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> Iterator[str]:
    """PyTorch's index as pip sees it (PEP 503 pages), on 127.0.0.1: its CPU build alone; its CUDA build, which
    pulls an ``nvidia-*`` package; and a default index (PyPI's place) with the plain release."""
    root = tmp_path_factory.mktemp("index")
    _wheel(root / "whl" / "cpu", "torch", "2.13.0+cpu")
    _wheel(root / "whl" / "cu128", "torch", "2.13.0", ("nvidia-cublas-cu12",))
    _wheel(root / "whl" / "cu128", "nvidia-cublas-cu12", "12.8.0")
    _wheel(root / "pypi", "torch", "2.13.0")
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a: None  # type: ignore[method-assign]
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def no_gpu(tmp_path, monkeypatch) -> Path:
    """A PATH with no nvidia-smi; ``gpu(bin)`` adds a stand-in that lists one GPU."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    return bin_dir


def gpu(bin_dir: Path) -> None:
    stub = bin_dir / "nvidia-smi"
    stub.write_text("#!/bin/sh\necho 'GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)'\n")
    stub.chmod(0o755)


def test_the_decisions(index, no_gpu, monkeypatch) -> None:
    monkeypatch.setenv("KVSIM_TORCH_INDEX", f"{index}/whl")
    monkeypatch.setattr(install, "installed_torch", lambda: None)
    why, args = install.plan_torch("cu128", "2.13.0")  # no torch, no GPU: PyTorch's CPU index
    assert args == ["torch==2.13.0", "--index-url", f"{index}/whl/cpu"] and "CPU build" in why
    gpu(no_gpu)  # an NVIDIA GPU: its CUDA index
    why, args = install.plan_torch("cu128", "2.13.0")
    assert args == ["torch==2.13.0", "--index-url", f"{index}/whl/cu128"] and "NVIDIA H100" in why
    # PyTorch's index cannot be reached: pip's default index (and its configuration) provides the tested release
    monkeypatch.setenv("KVSIM_TORCH_INDEX", f"http://127.0.0.1:{_closed_port()}/whl")
    why, args = install.plan_torch("cu128", "2.13.0")
    assert args == ["torch==2.13.0"] and "cannot be reached" in why
    # a torch outside kvsim's range is replaced; one inside it is kept, whatever its build
    monkeypatch.setenv("KVSIM_TORCH_INDEX", f"{index}/whl")
    monkeypatch.setattr(install, "installed_torch", lambda: "2.1.2")
    why, args = install.plan_torch("cu128", "2.13.0")
    assert args is not None and "2.1.2 is outside" in why
    monkeypatch.setattr(install, "installed_torch", lambda: "2.14.1")
    assert install.plan_torch("cu128", "2.13.0") == ("torch 2.14.1 is installed and within kvsim's range: kept", None)


def test_kvsims_range_is_read_from_pyproject() -> None:
    bounds = install.torch_range()
    assert install.within("2.13.0+cpu", bounds) and install.within("2.2", bounds)
    assert not install.within("2.1.2", bounds) and not install.within(f"2.{bounds[-1][1][1]}.0", bounds)


def test_a_suitable_torch_is_kept_and_kvsim_pinned_to_it(capsys) -> None:
    """This environment's torch (the tests run on it) is kept: nothing re-pulls another, the exact version pinned."""
    have = install.installed_torch()
    assert install.main(["--dry-run", "-e", ".[test]"]) == 0
    out = capsys.readouterr().out
    assert f"torch {have} is installed and within kvsim's range: kept" in out
    assert f"-c <torch=={have}> -e .[test]" in out and "--index-url" not in out


def readme_first_command() -> list[str]:
    """The install script's arguments in the README's first set-up command (``python scripts/install.py -e .``)."""
    readme = (ROOT / "README.md").read_text()
    block = readme.split("```bash", 1)[1].split("```", 1)[0]
    first = next(line for line in block.splitlines() if line.startswith("python scripts/install.py"))
    words = shlex.split(first.split("&&", 1)[0])
    assert words[:2] == ["python", "scripts/install.py"], words
    return words[2:]


def _dry_run(index: str, path: str, report: Path) -> tuple[str, list[str]]:
    """The README's first command, as a dry run by pip itself, with no torch in sight (``-S``: no site-packages)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}  # no local wheels, mirrors, caps
    env |= {"PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}
    env |= {"KVSIM_TORCH_INDEX": f"{index}/whl", "PATH": path, "PIP_INDEX_URL": f"{index}/pypi"}
    run = subprocess.run(
        [sys.executable, "-S", str(SCRIPT), "--dry-run", "--report", str(report), *readme_first_command()],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    resolved = [f"{i['metadata']['name']}=={i['metadata']['version']}" for i in json.loads(report.read_text())["install"]]
    return run.stdout, resolved


def test_no_gpu_resolves_nothing_of_cuda_and_a_gpu_does(index, no_gpu, tmp_path) -> None:
    out, resolved = _dry_run(index, str(no_gpu), tmp_path / "cpu.json")
    assert resolved == ["torch==2.13.0+cpu"], resolved  # no nvidia-*, cuda-* or triton
    assert "the CPU build (no NVIDIA GPU)" in out and "kvsim with torch==2.13.0" in out
    gpu(no_gpu)  # the same command where nvidia-smi lists a GPU: the check above could fail
    out, resolved = _dry_run(index, str(no_gpu), tmp_path / "gpu.json")
    assert sorted(resolved) == ["nvidia-cublas-cu12==12.8.0", "torch==2.13.0"] and "the CUDA build" in out
