"""The app's types: ``mypy ui`` (the settings in pyproject.toml) may report no error that
tests/mypy_ui_baseline.txt does not already hold, so the app's errors only shrink (the engine has none:
.ci/run runs ``mypy kvsim``). An error is its file and message without the line number, so code that
moves within a file keeps its entry; each entry counts as many times as it is listed.

mypy over the app takes minutes, so .ci/run runs the check beside pytest, not inside it (the tests here
check the reading of mypy's output and the baseline file):

    python tests/checks/test_mypy_ui.py --check

After fixing errors (or moving code between files), record the new baseline:

    python tests/checks/test_mypy_ui.py --update
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())  # also run as a script
BASELINE = ROOT / "tests" / "mypy_ui_baseline.txt"
HEADER = (
    "# mypy ui: the app's known type errors (file: message  [code]), one a line, without line numbers.\n"
    "# tests/checks/test_mypy_ui.py fails on any error not listed here; fix errors and shrink this file with\n"
    "#     python tests/checks/test_mypy_ui.py --update\n"
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


def errors_beyond_the_baseline(errors: list[str]) -> Counter[str]:
    """The errors the baseline does not hold (each entry counts as many times as it is listed)."""
    return Counter(errors) - Counter(read_baseline())


def test_an_error_beyond_the_baseline_is_found_and_a_listed_one_is_not() -> None:
    """The --check is not vacuous: a new error is reported; the errors the baseline lists (also when mypy
    reports one of them fewer times than listed) are not."""
    listed = read_baseline()
    assert not errors_beyond_the_baseline(listed) and not errors_beyond_the_baseline(listed[1:])
    new = 'ui/window.py: Name "nowhere" is not defined  [name-defined]'
    assert errors_beyond_the_baseline([*listed, new]) == Counter([new])
    if listed:  # one more of a listed error is new, too
        assert errors_beyond_the_baseline([*listed, listed[0]]) == Counter([listed[0]])


if __name__ == "__main__":
    if sys.argv[1:] not in (["--update"], ["--check"]):
        sys.exit(__doc__)
    code, output = run_mypy()
    if code not in (0, 1):
        sys.exit(output)
    errors = normalize(output)
    if sys.argv[1:] == ["--check"]:
        new = errors_beyond_the_baseline(errors)
        if new or (code == 0) != (not errors):
            sys.exit(
                f"mypy ui: {sum(new.values())} error(s) not in tests/mypy_ui_baseline.txt"
                " (fix them; the baseline only shrinks):\n"
                + "\n".join(sorted(new.elements()))
                + ("" if new else "\n" + output[-3000:])
            )
        print(f"mypy ui: {len(errors)} error(s), all in tests/mypy_ui_baseline.txt")
        sys.exit(0)
    before = len(read_baseline()) if BASELINE.exists() else None
    BASELINE.write_text(HEADER + "".join(f"{e}\n" for e in errors), encoding="utf-8")
    print(f"{BASELINE.relative_to(ROOT)}: {len(errors)} errors (was {before})")
