"""Install kvsim with the right build of torch: ``python scripts/install.py [pip install arguments]``.

    python scripts/install.py -e .            # the README's first command: torch, then kvsim (editable)
    python scripts/install.py -e ".[test]"    # the second: the same torch kept, the test tools added
    python scripts/install.py --dry-run -e .  # what it would do: the decisions, pip's resolution of torch

A torch release has one name and version for its CPU and CUDA builds: which one pip installs depends on the index
it comes from (PyPI's torch for Linux x86-64 is the CUDA build, ~3 GB with its ``nvidia-*`` packages). So torch
is installed first, by this script, and then kvsim, whose ``torch`` requirement is then met:

1. a torch already installed within kvsim's range (pyproject.toml) is kept, whatever its build;
2. else an NVIDIA GPU (``nvidia-smi -L`` names one) takes PyTorch's CUDA index, no GPU its CPU index;
3. an index that cannot be reached (no network to it, a proxy, an offline mirror) leaves pip's default index
   (and its configuration: a local wheel, a mirror) to provide ``torch==TESTED_TORCH``;
4. kvsim is installed with ``-c`` pinning the installed torch's exact version, so no later command re-pulls a
   different torch (a newer release, or a CUDA build in place of a CPU one).

Standard library only (it runs before anything is installed). ``KVSIM_TORCH_INDEX`` replaces PyTorch's index
root (``https://download.pytorch.org/whl``, the tests' stand-in on 127.0.0.1); ``--cuda TAG`` the CUDA build
(default cu128). docs/install.md says how it was checked and what it saves.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tempfile

if sys.version_info < (3, 11):  # noqa: UP036 - this script runs before the requirement is checked: say it in one line
    sys.exit(f"kvsim needs Python 3.11 or newer; this is {sys.version.split()[0]} ({sys.executable})")

import tomllib  # noqa: E402 - after the version check
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: the torch release CI tests with, installed when none suitable is there
TESTED_TORCH = "2.13.0"
PYTORCH_INDEX = "https://download.pytorch.org/whl"
DEFAULT_CUDA = "cu128"
PROBE_TIMEOUT_S = 10.0


def torch_range(pyproject: Path = ROOT / "pyproject.toml") -> list[tuple[str, tuple[int, ...]]]:
    """kvsim's torch requirement as (operator, release) pairs, e.g. [(">=", (2, 2)), ("<", (2, 15))]."""
    dependencies = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["dependencies"]
    requirement = next(d for d in dependencies if re.match(r"torch\s*[<>=!~]", d))
    return [(op, release(v)) for op, v in re.findall(r"(>=|<=|==|!=|<|>)\s*([\d.]+)", requirement)]


def release(version: str) -> tuple[int, ...]:
    """The numeric release of a version: "2.13.0+cpu" → (2, 13, 0); a pre-release counts as its release."""
    numbers = re.match(r"\d+(?:\.\d+)*", version.strip())
    return tuple(int(n) for n in numbers.group(0).split(".")) if numbers else ()


def within(version: str, bounds: list[tuple[str, tuple[int, ...]]]) -> bool:
    """Whether ``version`` meets every (operator, release) bound (releases compared padded with zeros)."""
    have = release(version)
    for op, bound in bounds:
        width = max(len(have), len(bound))
        a, b = have + (0,) * (width - len(have)), bound + (0,) * (width - len(bound))
        if not {">=": a >= b, "<=": a <= b, "==": a == b, "!=": a != b, "<": a < b, ">": a > b}[op]:
            return False
    return True


def installed_torch() -> str | None:
    """The installed torch's version ("2.13.0+cpu"), None when there is none."""
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return None


def nvidia_gpu() -> str | None:
    """The first GPU ``nvidia-smi -L`` names, None without one (no driver, no nvidia-smi, no GPU)."""
    tool = shutil.which("nvidia-smi")
    if tool is None:
        return None
    try:
        listed = subprocess.run([tool, "-L"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    gpus = [line.strip() for line in listed.stdout.splitlines() if line.strip().startswith("GPU")]
    return gpus[0] if listed.returncode == 0 and gpus else None


def reachable(index: str, timeout: float = PROBE_TIMEOUT_S) -> bool:
    """Whether the package index answers for torch (its PEP 503 page ``INDEX/torch/``)."""
    try:
        with urllib.request.urlopen(f"{index.rstrip('/')}/torch/", timeout=timeout) as page:
            return 200 <= page.status < 300
    except (urllib.error.URLError, OSError, ValueError):
        return False


def plan_torch(cuda: str, torch_version: str) -> tuple[str, list[str] | None]:
    """(why, the pip arguments that install torch — None: keep the one installed)."""
    have = installed_torch()
    bounds = torch_range()
    if have is not None and within(have, bounds):
        return f"torch {have} is installed and within kvsim's range: kept", None
    gpu = nvidia_gpu()
    root = os.environ.get("KVSIM_TORCH_INDEX", PYTORCH_INDEX).rstrip("/")
    index, build = (f"{root}/{cuda}", f"the CUDA build ({gpu})") if gpu else (f"{root}/cpu", "the CPU build (no NVIDIA GPU)")
    wanted = f"torch=={torch_version}"
    already = f"torch {have} is outside kvsim's range; " if have else ""
    if reachable(index):
        return f"{already}{build}: {wanted} from {index}", [wanted, "--index-url", index]
    return f"{already}{build}: {index} cannot be reached, so {wanted} from pip's default index", [wanted]


def pip(args: list[str]) -> int:
    command = [sys.executable, "-m", "pip", "install", *args]
    print("+", " ".join(command), flush=True)
    return subprocess.run(command).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        usage="%(prog)s [options] [pip install arguments]",
        allow_abbrev=False,  # a pip option (--dry, --tor…) is pip's, never an abbreviation of this script's
    )
    parser.add_argument("--cuda", default=DEFAULT_CUDA, help=f"PyTorch's CUDA build on a GPU (default {DEFAULT_CUDA})")
    parser.add_argument("--torch", default=TESTED_TORCH, help=f"the torch release to install (default {TESTED_TORCH})")
    parser.add_argument("--dry-run", action="store_true", help="say what would be installed; install nothing")
    parser.add_argument("--report", type=Path, help="with --dry-run: pip's JSON report of torch's resolution")
    options, pip_args = parser.parse_known_args(argv)
    why, torch_args = plan_torch(options.cuda, options.torch)
    print(f"install: {why}", flush=True)
    if torch_args is not None:
        if options.dry_run:  # what a fresh environment would get: resolved, nothing installed
            report = ["--report", str(options.report)] if options.report else []
            if pip(["--dry-run", "--ignore-installed", "--quiet", *report, *torch_args]):
                return 1
        elif pip(torch_args):
            return 1
    kept = installed_torch() or options.torch  # (a dry run installed nothing: the release it would install)
    if not pip_args:
        return 0
    # kvsim and its extras with the torch that is there, never another: a constraint on its exact version
    with tempfile.TemporaryDirectory(prefix="kvsim-install-") as tmp:
        constraints = Path(tmp) / "torch.txt"
        constraints.write_text(f"torch=={kept}\n", encoding="utf-8")
        print(f"install: kvsim with torch=={kept}", flush=True)
        if options.dry_run:
            print("+", " ".join([sys.executable, "-m", "pip", "install", "-c", "<torch==" + str(kept) + ">", *pip_args]))
            return 0
        return 1 if pip(["-c", str(constraints), *pip_args]) else 0


if __name__ == "__main__":
    sys.exit(main())
