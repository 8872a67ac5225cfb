"""The wheel (`pip install .`, not only `-e .`): the app installs as kvsim.ui (no top-level `ui` in
site-packages), with its views and the bundled model, and imports from outside the checkout.

Building the wheel (pip, setuptools, a copy of the whole project) takes a minute of a busy core, so .ci/run
runs that check beside pytest, not inside it:

    python tests/checks/test_packaging.py --wheel

The project's metadata is checked here, as a test."""

from __future__ import annotations

import site
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())  # also run as a script
# the code is Apache-2.0; the bundled model tiny's weights carry the licences of the text they were trained on
# (resources/models/tiny/MODEL_CARD.md), whose texts ship beside kvsim's own LICENSE
LICENSE_EXPRESSION = "Apache-2.0 AND GPL-2.0-or-later AND GFDL-1.2-only"
LICENSE_FILES = ["LICENSE", "resources/corpus/licenses/GPL-2.txt", "resources/corpus/licenses/GFDL-1.2.txt"]


def check_the_wheel_holds_kvsim_ui_and_resources_and_imports_outside_the_checkout(tmp_path: Path) -> None:
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
        "kvsim/ui/shell/window.py",
        "kvsim/ui/lanes/view.py",
        "kvsim/ui/prompts.json",
        "kvsim/caches/kv.py",
        "kvsim/py.typed",  # the engine ships its types (PEP 561)
        "kvsim/models/transformer.py",
        "kvsim/resources/models/tiny/model.safetensors",
        "kvsim/resources/draft_heads/tiny/head.safetensors",  # spec:K:head's learned draft head, and its card
        "kvsim/resources/draft_heads/tiny/MODEL_CARD.md",
    ):
        assert needed in names, needed
    with zipfile.ZipFile(wheel) as z:
        info = wheel.name.split("-py")[0] + ".dist-info"
        metadata = z.read(f"{info}/METADATA").decode()
        # every licence of what the wheel ships: the code's, and those of tiny's weights (their training text's)
        assert f"License-Expression: {LICENSE_EXPRESSION}" in metadata.splitlines()
        for name in LICENSE_FILES:
            assert f"License-File: {name}" in metadata.splitlines(), name
            assert z.read(f"{info}/licenses/{name}") == (ROOT / name).read_bytes(), name
        assert "Classifier: Programming Language :: Python :: 3.11" in metadata
    target = tmp_path / "site"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(target)  # a wheel is installed by unpacking it
    # -I -S: no .pth files, so the editable checkout's finder cannot answer for kvsim
    code = (
        f"import sys; sys.path[:0] = [{str(target)!r}] + {site.getsitepackages()!r}; "
        "import kvsim.ui.shell.window, kvsim.ui.lanes.view; from kvsim.models.base import bundled_models_dir; "
        "print(kvsim.ui.shell.window.__file__); print(bundled_models_dir() / 'tiny')"
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


def test_the_project_metadata_names_only_files_that_exist() -> None:
    import re
    import tomllib

    text = (ROOT / "pyproject.toml").read_text()
    project = tomllib.loads(text)["project"]
    assert project["license"] == LICENSE_EXPRESSION  # an SPDX expression, not the table setuptools drops in 2027
    assert project["license-files"] == LICENSE_FILES
    from packaging.licenses import canonicalize_license_expression  # (setuptools' own check, with SPDX's list)

    assert canonicalize_license_expression(LICENSE_EXPRESSION) == LICENSE_EXPRESSION
    assert (
        "GNU GENERAL PUBLIC LICENSE" in (ROOT / LICENSE_FILES[1]).read_text()
        and "Version 2, June 1991" in (ROOT / LICENSE_FILES[1]).read_text()
    )
    assert "GNU Free Documentation License" in (ROOT / LICENSE_FILES[2]).read_text()
    assert "Version 1.2, November 2002" in (ROOT / LICENSE_FILES[2]).read_text()
    for name in [project["readme"], *project["license-files"]]:
        assert (ROOT / name).is_file(), name
    assert "Apache License" in (ROOT / "LICENSE").read_text() and "Version 2.0, January 2004" in (ROOT / "LICENSE").read_text()
    for named in set(re.findall(r"[\w./-]+\.(?:md|txt|html|cfg|ini)\b", text)):  # every file a comment names, too
        assert (ROOT / named).is_file() or any(ROOT.rglob(Path(named).name)), named
    requires = tomllib.loads(text)["build-system"]["requires"]
    assert any(r.replace(" ", "").startswith("setuptools>=") and int(r.split(">=")[1].split(".")[0]) >= 77 for r in requires)


if __name__ == "__main__":
    import tempfile

    if sys.argv[1:] != ["--wheel"]:
        sys.exit(__doc__)
    with tempfile.TemporaryDirectory(prefix="kvsim-wheel-") as tmp:  # builds with the installed setuptools (no network)
        check_the_wheel_holds_kvsim_ui_and_resources_and_imports_outside_the_checkout(Path(tmp))
    print("the wheel holds kvsim, kvsim.ui and the resources, and imports outside the checkout")
