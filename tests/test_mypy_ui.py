"""The app's types: ``mypy ui`` (the settings in pyproject.toml) may report no error that
tests/mypy_ui_baseline.txt does not already hold, so the app's errors only shrink (the engine has none:
.ci/run runs ``mypy kvsim``). An error is its file and message without the line number, so code that
moves within a file keeps its entry; each entry counts as many times as it is listed.

After fixing errors (or moving code between files), record the new baseline:

    python tests/test_mypy_ui.py --update
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BASELINE = ROOT / "tests" / "mypy_ui_baseline.txt"
HEADER = (
    "# mypy ui: the app's known type errors (file: message  [code]), one a line, without line numbers.\n"
    "# tests/test_mypy_ui.py fails on any error not listed here; fix errors and shrink this file with\n"
    "#     python tests/test_mypy_ui.py --update\n"
)
_ERROR = re.compile(r"^(?P<path>[^:\n]+):\d+(?::\d+)?: error: (?P<message>.*)$")


def normalize(output: str) -> list[str]:
    """mypy's error lines as ``path: message  [code]`` (notes and the summary dropped), sorted."""
    found = []
    for line in output.splitlines():
        m = _ERROR.match(line.strip())
        if m:
            found.append(f"{m['path'].replace(os.sep, '/')}: {m['message']}")
    return sorted(found)


def run_mypy() -> tuple[int, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "ui", "--no-error-summary", "--no-pretty", "--show-error-codes"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=1800,
    )
    return proc.returncode, proc.stdout + proc.stderr


def read_baseline() -> list[str]:
    return [line for line in BASELINE.read_text(encoding="utf-8").splitlines() if line.strip() and not line.startswith("#")]


def test_normalize_keeps_file_and_message_and_drops_line_numbers() -> None:
    out = (
        'ui/a.py:12: error: "type[Qt]" has no attribute "X"  [attr-defined]\n'
        "ui/a.py:30: note: See https://mypy.readthedocs.io\n"
        'ui/b/c.py:7:5: error: Item "None" of "QLineEdit | None" has no attribute "text"  [union-attr]\n'
        'ui/a.py:99: error: "type[Qt]" has no attribute "X"  [attr-defined]\n'
        "Found 3 errors in 2 files (checked 65 source files)\n"
    )
    assert normalize(out) == [
        'ui/a.py: "type[Qt]" has no attribute "X"  [attr-defined]',
        'ui/a.py: "type[Qt]" has no attribute "X"  [attr-defined]',
        'ui/b/c.py: Item "None" of "QLineEdit | None" has no attribute "text"  [union-attr]',
    ]


def test_the_baseline_is_sorted_and_names_only_app_files() -> None:
    entries = read_baseline()
    assert entries == sorted(entries)
    assert all(e.startswith("ui/") and e.endswith("]") for e in entries), [e for e in entries if not e.startswith("ui/")]
    files = {e.split(":", 1)[0] for e in entries}
    assert all((ROOT / f).is_file() for f in files), [f for f in files if not (ROOT / f).is_file()]


@pytest.mark.slow
def test_mypy_reports_no_app_error_beyond_the_baseline() -> None:
    pytest.importorskip("mypy", reason="mypy comes with the [test] extra")
    code, output = run_mypy()
    errors = normalize(output)
    assert code in (0, 1) and (code == 0) == (not errors), output[-3000:]  # 2: mypy itself failed
    new = Counter(errors) - Counter(read_baseline())
    assert not new, (
        f"mypy ui: {sum(new.values())} error(s) not in tests/mypy_ui_baseline.txt (fix them; the baseline only shrinks):\n"
        + "\n".join(sorted(new.elements()))
    )


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit(__doc__)
    code, output = run_mypy()
    if code not in (0, 1):
        sys.exit(output)
    errors = normalize(output)
    before = len(read_baseline()) if BASELINE.exists() else None
    BASELINE.write_text(HEADER + "".join(f"{e}\n" for e in errors), encoding="utf-8")
    print(f"{BASELINE.relative_to(ROOT)}: {len(errors)} errors (was {before})")
