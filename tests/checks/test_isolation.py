"""The test suite never touches the user's real folders (conftest.py's autouse fixture).

The app's ``QSettings("kvsim", "kvsim-ui")`` file lands in this test's temporary config folder, and
the data dir kvsim fetches models into is a temporary one, whatever the real HOME holds.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import REAL_ENV, REAL_HOME

from kvsim.models.base import user_models_dir


def _real_settings_file() -> Path:
    config = REAL_ENV.get("XDG_CONFIG_HOME") or str(REAL_HOME / ".config")
    return Path(config) / "kvsim" / "kvsim-ui.conf"


def _snapshot(path: Path) -> tuple[bool, int, int]:
    return (True, path.stat().st_mtime_ns, path.stat().st_size) if path.exists() else (False, 0, 0)


def test_user_folders_are_temporary(isolated_user_dirs):
    for var in ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "KVSIM_DATA_DIR"):
        assert Path(os.environ[var]).is_relative_to(isolated_user_dirs), var
        if REAL_ENV.get(var):
            assert os.environ[var] != REAL_ENV[var]
    assert user_models_dir().is_relative_to(isolated_user_dirs)
    assert not user_models_dir().is_relative_to(REAL_HOME)


def test_window_settings_land_in_the_temporary_config_folder(qtbot, qapp, isolated_user_dirs):
    pytest.importorskip("PySide6")
    from PySide6.QtCore import QSettings

    from kvsim.ui.shell.window import MainWindow

    real = _real_settings_file()
    before = _snapshot(real)
    w = MainWindow(model="random:family=llama,layers=1,heads=2,kv_heads=1,dim=32,seed=1", prompt="x", persist=True)
    qtbot.addWidget(w)
    w.show()
    assert w.controller.wait_ready(60), w.controller.last_error
    settings_file = Path(w.settings.fileName())
    w.close()
    QSettings("kvsim", "kvsim-ui").sync()
    assert settings_file.is_relative_to(isolated_user_dirs), settings_file
    assert settings_file.is_file() and settings_file.stat().st_size > 0  # the layout really was written
    assert _snapshot(real) == before  # the user's own file: not created, not changed
