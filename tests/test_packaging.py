"""The wheel (`pip install .`, not only `-e .`): the app installs as kvsim.ui (no top-level `ui` in
site-packages), with its views and the bundled model, and imports from outside the checkout."""

from __future__ import annotations

import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("setuptools", reason="builds the wheel with the installed setuptools (no network)")


def test_the_wheel_holds_kvsim_ui_and_resources_and_imports_outside_the_checkout(tmp_path):
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(ROOT),
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path / "wheel"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    wheel = next((tmp_path / "wheel").glob("kvsim-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names} == {"kvsim", wheel.name.split("-py")[0] + ".dist-info"}
    for needed in (
        "kvsim/ui/window.py",
        "kvsim/ui/lanes/view.py",
        "kvsim/ui/prompts.json",
        "kvsim/caches/kv.py",
        "kvsim/py.typed",  # the engine ships its types (PEP 561)
        "kvsim/models/transformer.py",
        "kvsim/resources/models/tiny/model.safetensors",
    ):
        assert needed in names, needed
    target = tmp_path / "site"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(target)  # a wheel is installed by unpacking it
    # -I -S: no .pth files, so the editable checkout's finder cannot answer for kvsim
    code = (
        f"import sys; sys.path[:0] = [{str(target)!r}] + {site.getsitepackages()!r}; "
        "import kvsim.ui.window, kvsim.ui.lanes.view; from kvsim.models.base import bundled_models_dir; "
        "print(kvsim.ui.window.__file__); print(bundled_models_dir() / 'tiny')"
    )
    run = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={"QT_QPA_PLATFORM": "offscreen", "PATH": "/usr/bin:/bin"},
    )
    assert run.returncode == 0, run.stderr[-2000:]
    window_file, tiny = run.stdout.split()
    assert Path(window_file).is_relative_to(target) and (Path(tiny) / "model.safetensors").is_file()
    assert Path(tiny).is_relative_to(target)
