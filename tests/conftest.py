"""Test-wide set-up: no display needed, and no test reads or writes the user's real folders.

kvsim keeps fetched models in the user data dir (``KVSIM_DATA_DIR`` or platformdirs' data dir)
and the app keeps its layout in ``QSettings("kvsim", "kvsim-ui")`` (on Linux,
``$XDG_CONFIG_HOME/kvsim/kvsim-ui.conf``). Every test gets its own HOME, XDG folders and
``KVSIM_DATA_DIR`` under a temporary directory (the autouse fixture below), and the same
variables point at a session temp folder from import time on, before anything imports Qt (Qt
reads the settings path once). ``REAL_ENV`` keeps the values from before, for opt-in tests that
read (never write) a model the user fetched.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

# GUI tests run without a display; set before any Qt import
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# one intra-op thread per process, as the app itself runs on 2 cores (kvsim.models.loading.default_threads), set
# before torch is imported and inherited by every child (the layout probes, the CLI's processes): the suite runs
# several processes side by side, and a second OpenMP thread per process only spins at each barrier waiting for a
# core another process holds — measured on 2 cores with other work beside it, one language of the lesson's layout
# probe took 300 s of CPU with torch's default two threads and 32 s with one (docs/testing.md)
os.environ.setdefault("OMP_NUM_THREADS", "1")
# the log file (kvsim/core/logfile.py) goes to a temporary folder, never the user's log folder
os.environ["KVSIM_LOG_DIR"] = tempfile.mkdtemp(prefix="kvsim-test-log-")
atexit.register(shutil.rmtree, os.environ["KVSIM_LOG_DIR"], True)
# no test reaches the network: the Hub's tests set HF_ENDPOINT to their own server on 127.0.0.1 and lift this
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.pop("HF_ENDPOINT", None)
# the shared test modules (helpers, hub_server, stage_probe...) live here, the tests in folders by what they exercise;
# some tests borrow another file's builders (``from test_gguf import hf_llama``), so every folder is importable too
_TESTS = Path(__file__).resolve().parent
sys.path[:0] = [
    str(_TESTS),
    *(
        str(d)
        for d in sorted(_TESTS.rglob("*"))
        if d.is_dir() and all(n.isidentifier() and n[0] != "_" for n in d.relative_to(_TESTS).parts)
    ),
]

ISOLATED_VARS = {
    "HOME": "home",
    "XDG_CONFIG_HOME": "config",
    "XDG_DATA_HOME": "data",
    "XDG_CACHE_HOME": "cache",
    "XDG_STATE_HOME": "state",
    "KVSIM_DATA_DIR": "kvsim-data",
    "HF_HOME": "hf-home",  # huggingface_hub's cache
}
REAL_ENV: dict[str, str | None] = {k: os.environ.get(k) for k in ISOLATED_VARS}
REAL_HOME = Path.home()

_SESSION_ROOT = Path(tempfile.mkdtemp(prefix="kvsim-tests-"))
atexit.register(shutil.rmtree, _SESSION_ROOT, True)
for _var, _name in ISOLATED_VARS.items():
    (_SESSION_ROOT / _name).mkdir()
    os.environ[_var] = str(_SESSION_ROOT / _name)

# the offscreen screen is 800×800 unless told otherwise, and the window never opens larger than its
# screen: give the in-process GUI tests a 2560×1440 screen so a 1920×1080 window is 1920×1080
# (tests/app/window/test_layout.py sets its own screen sizes in subprocesses)
if os.environ["QT_QPA_PLATFORM"] == "offscreen":
    from kvsim.ui.export.screenshot import offscreen_platform  # (no Qt import: the platform is read when Qt starts)

    os.environ["QT_QPA_PLATFORM"] = offscreen_platform(2560, 1440, _SESSION_ROOT)


def _point_qsettings_at(config: Path) -> None:
    """Qt caches the user settings folder on first use, so a later change of XDG_CONFIG_HOME is not
    enough once Qt is loaded: set the path explicitly (both formats the app may use)."""
    if "PySide6.QtCore" not in sys.modules:
        return
    from PySide6.QtCore import QSettings

    for fmt in (QSettings.NativeFormat, QSettings.IniFormat):
        QSettings.setPath(fmt, QSettings.UserScope, str(config))


@pytest.fixture(autouse=True)
def isolated_user_dirs(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME, the XDG folders and KVSIM_DATA_DIR of this test: fresh, temporary, its own."""
    root = tmp_path_factory.mktemp("user")
    for var, name in ISOLATED_VARS.items():
        (root / name).mkdir()
        monkeypatch.setenv(var, str(root / name))
    _point_qsettings_at(root / "config")
    return root


@pytest.fixture(scope="session")
def tiny():
    """The bundled tiny model (kvsim.models.loading's LoadedModel), loaded once for the whole session: the tests
    that take it only read it (a run builds its own caches), so one load serves them all."""
    from kvsim.models.loading import load_model

    return load_model("tiny")


# The quick subset (`pytest -m "not slow"`, under 2 minutes on 2 cores, for contributors) is what the folders say:
#   engine/     the engine: caches, models, runs, costs, traces (quick)
#   commands/   the CLI, called in this process (quick)
#   processes/  kvsim as its own process: start-up, file-size limits, the Hub, the hostile corpus (slow)
#   checks/     the project's own rules: layering, import cycles, translations, metadata, the README (quick)
#   reference/  the engine against transformers' and gguf's reference models, and torch.compile (slow)
#   app/        the window, its docks and views (pytest-qt), the layout probes in subprocesses (slow)
# A test elsewhere that builds Qt widgets (qtbot / qapp) is slow too; CI runs everything.
SLOW_FOLDERS = frozenset({"app", "reference", "processes"})


def _in_slow_folder(path: Path) -> bool:
    """``path`` is one of the slow folders or lies in one (tests/app, tests/app/window/test_ui.py, ...)."""
    parts = path.relative_to(_TESTS).parts if path.is_relative_to(_TESTS) else ()
    return bool(parts) and parts[0] in SLOW_FOLDERS


# The files that take longest, first: `-n auto --dist loadfile` hands out whole files in collection order, so the layout
# file (its probe processes run side by side, minutes of wall time) starts at once on one worker while the other takes
# the short files, instead of starting late and leaving one worker alone at the end (docs/testing.md)
LONG_FIRST = ("app/window/test_layout.py",)


def _long(path: Path) -> bool:
    return path.is_relative_to(_TESTS) and path.relative_to(_TESTS).as_posix() in LONG_FIRST


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _in_slow_folder(item.path) or {"qtbot", "qapp"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    items.sort(key=lambda item: not _long(item.path))  # stable: the order within and between the other files stays


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Under `-m "not slow"` the slow folders are not even imported (their imports of Qt, transformers and the
    window take longer than the quick tests themselves); every test in them would be deselected anyway."""
    if _in_slow_folder(collection_path) and "not slow" in (config.getoption("markexpr", "") or ""):
        return True
    return None
