"""The wheel's dependency floors, checked: a fresh virtual environment with every requirement at the oldest
version pyproject.toml allows, then the quick tests.

    python scripts/check_floors.py [--venv /tmp/kvsim-floors] [--keep-torch]

Reads ``[project] dependencies`` (and, of the test extras, pytest and gguf's writer, at their floors), writes a
constraints file pinning each ``name>=X`` to ``name==X`` (markers kept), creates the venv, installs the checkout
with those constraints (editable, as the README does), and runs ``python -m pytest -q -m "not slow"`` in it.
``--keep-torch``: torch is pinned to the version already installed beside this Python instead of its floor
(the floor's CPU build may not be at hand; say so when reporting). Prints the versions installed and the
tests' summary; exit status is the tests'.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FLOOR = re.compile(r"^\s*([A-Za-z0-9_.-]+)\s*(?:\[[^\]]*\])?\s*((?:[<>=!~]=?[^,;]+,?\s*)*)\s*(;.*)?$")


def floors(requirements: list[str], keep_torch: bool) -> list[str]:
    pins = []
    for req in requirements:
        m = FLOOR.match(req)
        if not m:
            raise SystemExit(f"cannot read {req!r}")
        name, spec, marker = m.group(1), m.group(2) or "", m.group(3) or ""
        if keep_torch and name == "torch":
            pins.append(f"torch=={metadata.version('torch').split('+')[0]}{marker}")
            continue
        low = re.search(r">=\s*([0-9][^,;\s]*)", spec)
        if low:
            pins.append(f"{name}=={low.group(1)}{marker}")
    # a name given twice under the same marker (gguf: the engine's floor, then the tests' higher one): the last
    last = {(pin.split("==")[0], pin.partition(";")[2]): pin for pin in pins}
    return list(last.values())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--venv", default="/tmp/kvsim-floors")
    ap.add_argument("--keep-torch", action="store_true")
    args = ap.parse_args()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    test_runner = [r for r in project["optional-dependencies"]["test"] if r.startswith(("pytest>=", "gguf>="))]
    extras = project["optional-dependencies"]  # the heavy parts the tests use: `fast` (numba), `video` (MP4)
    pins = floors(project["dependencies"] + extras["fast"] + extras["video"] + test_runner, args.keep_torch)
    venv = Path(args.venv)
    constraints = venv.parent / (venv.name + "-constraints.txt")
    constraints.write_text("\n".join(pins) + "\n")
    print("constraints:", *pins, sep="\n  ")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    # editable, as the README installs it: the tests run from the checkout, whose kvsim/ has no ui/ of its own
    # (pyproject maps kvsim.ui to ui/; an editable install's finder serves it, a plain one is shadowed by the cwd)
    checkout = f"{ROOT}[fast,video]"  # the heavy extras too: the quick tests exercise them
    subprocess.run([py, "-m", "pip", "install", "-q", "-c", str(constraints), "-e", checkout, *test_runner], check=True)
    subprocess.run([py, "-m", "pip", "list", "--format=freeze"], check=True)
    return subprocess.run([py, "-m", "pytest", "-q", "-m", "not slow", "-p", "no:cacheprovider"], cwd=ROOT).returncode


if __name__ == "__main__":
    raise SystemExit(main())
