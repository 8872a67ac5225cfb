"""What a plain ``pip install .`` leaves out, and what says so: numba (the ``fast`` extra) and imageio-ffmpeg (the
``video`` extra) are not required; a run that asks for numba's kernel by name, or an export to MP4, says in one
line which extra to add. Also each model's licence in ``kvsim models list``, and ``python -m kvsim`` from a
checkout whose ``kvsim/`` has no ``ui/`` (a plain install)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import site
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from helpers import ROOT, kvsim_in_process

from kvsim.cli.entry import main as cli_main
from kvsim.models import catalog
from kvsim.models.base import user_models_dir
from kvsim.models.kernels import row_matmul

TINY_LICENCE = "GPL-2.0-or-later AND GFDL-1.2-only"


def test_the_heavy_parts_are_extras_and_the_tests_install_them() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    required = " ".join(project["dependencies"]).lower()
    for heavy in ("numba", "llvmlite", "imageio-ffmpeg", "imageio_ffmpeg"):
        assert heavy not in required, heavy
    extras = project["optional-dependencies"]
    assert [r.split(">=")[0] for r in extras["fast"]] == ["numba"]
    assert [r.split(">=")[0] for r in extras["video"]] == ["imageio-ffmpeg"]
    assert "kvsim[fast,video]" in extras["test"]  # the tests use both: `.[test]` pulls them in


def _without(monkeypatch, module: str) -> None:
    """``module`` as if not installed (find_spec answers None), everything else as it is."""
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == module else real(name, *a))


def test_asking_for_numba_without_it_says_which_extra_once(monkeypatch, capsys) -> None:
    _without(monkeypatch, "numba")
    monkeypatch.setattr(row_matmul, "WANTED", "numba")
    monkeypatch.setattr(row_matmul, "_numba_kernel", None)  # not built yet in this "process"
    assert row_matmul.kernel_for(1 << 30) == row_matmul.KERNEL  # numpy's or torch's BLAS serves
    assert row_matmul.kernel_for(1 << 30) == row_matmul.KERNEL
    err = capsys.readouterr().err
    assert err == row_matmul.NUMBA_MISSING + "\n" and 'pip install "kvsim[fast]"' in err  # one line, once
    # not asked for by name ("auto"): numba's absence is the plain install's normal state, said nowhere
    monkeypatch.setattr(row_matmul, "WANTED", "auto")
    monkeypatch.setattr(row_matmul, "_numba_kernel", None)
    assert row_matmul.kernel_for(1 << 30) == row_matmul.KERNEL and capsys.readouterr().err == ""


def test_an_mp4_without_ffmpeg_says_which_extra(monkeypatch, capsys, tmp_path) -> None:
    pytest.importorskip("PySide6")
    from kvsim.ui.export import movie

    _without(monkeypatch, "imageio_ffmpeg")
    with pytest.raises(movie.ExportError, match=r'pip install "kvsim\[video\]"'):
        movie.check_output(tmp_path / "run.mp4", (640, 360), 15)
    assert movie.check_output(tmp_path / "run.gif", (640, 360), 15) == "gif"  # GIF needs nothing more
    done = kvsim_in_process(capsys, "export", "--model", "tiny", "--prompt", "Hi", "--out", str(tmp_path / "run.mp4"))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        f"error: an MP4 needs ffmpeg, which kvsim's video extra brings: {movie.VIDEO_EXTRA}"
    ]
    assert not (tmp_path / "run.mp4").exists()


def test_models_list_shows_each_models_licence(capsys) -> None:
    # a fetched model folder whose card names its licence in Hugging Face's metadata, and one without a card
    card = user_models_dir() / "carded"
    card.mkdir(parents=True)
    (card / "README.md").write_text("---\nlicense: mit\n---\n# carded\n\nA model with a card.\n")
    (user_models_dir() / "bare").mkdir()
    assert cli_main(["models", "list", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)["models"]}
    assert rows["tiny"]["licence"] == TINY_LICENCE and rows["tiny"]["description"].startswith("A 2.2 M-parameter")
    assert rows["smollm2-135m"]["licence"] == "Apache-2.0" and rows["gemma3-270m"]["licence"] == "Gemma Terms of Use"
    assert rows["carded"]["licence"] == "mit" and rows["carded"]["description"] == "A model with a card."
    assert rows["bare"]["licence"] == ""
    assert cli_main(["models", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["name", "kind", "size", "licence", "description"]
    table = {line.split()[0]: line for line in lines[1:-1]}
    assert TINY_LICENCE in table["tiny"] and "Gemma Terms of Use" in table["gemma3-270m"]
    # the column starts where the header's does, on every row
    at = lines[0].index("licence")
    assert table["tiny"][at:].startswith(TINY_LICENCE) and table["bare"][at:].startswith("- ")


def test_the_card_names_the_licence_the_wheel_declares() -> None:
    card = (ROOT / "resources/models/tiny/MODEL_CARD.md").read_text()
    assert catalog._card_licence(ROOT / "resources/models/tiny") == TINY_LICENCE
    license_expression = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]
    assert license_expression == f"Apache-2.0 AND {TINY_LICENCE}"
    for source in ("resources/corpus/portugues.txt.xz", "scripts/train_tiny.py", "resources/corpus/PROVENANCE.md"):
        assert f"`{source}`" in card or source.split("/")[-1] in card, source
        assert (ROOT / source).is_file(), source


def test_python_m_kvsim_in_a_checkout_after_a_plain_install(tmp_path) -> None:
    """A checkout's ``kvsim/`` without ``ui/`` (what a plain, non-editable install leaves the current folder
    with): ``python -m kvsim`` maps the checkout's ``ui/`` as ``kvsim.ui``, as the editable install does."""
    checkout = tmp_path / "checkout"
    shutil.copytree(ROOT / "kvsim", checkout / "kvsim", ignore=shutil.ignore_patterns("ui", "resources", "__pycache__"))
    (checkout / "ui").symlink_to(ROOT / "ui")
    (checkout / "resources").symlink_to(ROOT / "resources")
    # -S: no .pth files, so no editable install's finder answers for kvsim.ui; the packages kvsim needs by hand
    code = (
        f"import sys, runpy; sys.path[1:1] = {site.getsitepackages()!r}; import kvsim.cli.entry as e; "
        "e.main = lambda: (__import__('kvsim.ui.i18n'), print(sys.modules['kvsim.ui'].__file__), 0)[2]; "
        "runpy.run_module('kvsim', run_name='__main__')"
    )
    run = subprocess.run(
        [sys.executable, "-S", "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=checkout,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert Path(run.stdout.strip()) == checkout / "ui" / "__init__.py"
