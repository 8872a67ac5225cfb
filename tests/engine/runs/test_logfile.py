"""The log file: warnings and errors with their tracebacks go to one rotating file in the platform's
log folder (here ``$KVSIM_LOG_DIR``, a temporary folder: conftest sets it), whose path ``kvsim --help``
and every unexpected-failure line (CLI and the app's banner) name."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from kvsim.core import logfile


@pytest.fixture
def log_dir(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("KVSIM_LOG_DIR", str(tmp_path / "logs"))
    yield tmp_path / "logs"
    monkeypatch.setenv("KVSIM_LOG_DIR", os.environ.get("KVSIM_LOG_DIR", ""))
    logfile.setup()


def test_the_log_goes_where_the_variable_says_and_never_to_the_users_folder(log_dir):
    path = logfile.setup()
    assert path == log_dir / "kvsim.log" and logfile.log_path() == path
    logging.getLogger("kvsim.models").warning("a special token outside the vocabulary")
    logging.getLogger("kvsim").info("not kept: below WARNING")
    try:
        raise ValueError("boom")
    except ValueError:
        assert logfile.log_exception("it failed") == path
    text = path.read_text(encoding="utf-8")
    assert "WARNING kvsim.models" in text and "a special token outside the vocabulary" in text
    assert "not kept" not in text
    assert "ERROR kvsim" in text and "Traceback (most recent call last)" in text and "ValueError: boom" in text


def test_the_log_rotates(log_dir):
    path = logfile.setup()
    for _ in range(3 * logfile.MAX_BYTES // 1000 + 10):
        logging.getLogger("kvsim").warning("x" * 1000)
    files = sorted(p.name for p in log_dir.iterdir())
    assert files == ["kvsim.log", "kvsim.log.1", "kvsim.log.2", "kvsim.log.3"]
    assert all((log_dir / f).stat().st_size <= logfile.MAX_BYTES + 2000 for f in files)
    assert path.exists()


def test_a_folder_that_cannot_be_made_means_no_log_not_an_error(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("KVSIM_LOG_DIR", str(tmp_path / "file" / "logs"))
    assert logfile.setup() is None
    assert logfile.log_exception("still fine", exc_info=False) is None


def test_help_names_the_log_file(log_dir, capsys):
    from kvsim.cli.entry import main

    with pytest.raises(SystemExit):
        main(["--help"])
    out = "".join(capsys.readouterr().out.split())  # argparse wraps long lines (even inside a path)
    assert str(log_dir / "kvsim.log") in out


def test_an_unexpected_failure_is_one_line_naming_the_log_with_the_traceback_in_it(log_dir, capsys, monkeypatch):
    from kvsim.cli import entry, memory

    def broken(args):
        raise RuntimeError("a bug")

    monkeypatch.setattr(memory, "run", broken)  # the entry point looks it up when `memory` is asked for
    assert entry.main(["memory", "--list"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: unexpected failure: RuntimeError: a bug")
    assert str(log_dir / "kvsim.log") in err[0]
    text = (log_dir / "kvsim.log").read_text(encoding="utf-8")
    assert "kvsim memory --list: unexpected failure" in text and 'raise RuntimeError("a bug")' in text


def test_the_apps_banner_names_the_log(log_dir, qtbot, qapp):
    from PySide6.QtCore import QObject

    from kvsim.ui.app import ErrorHandlers

    shown = []

    class Sink(QObject):
        def show_message(self, text, error=False):
            shown.append(text)

    handlers = ErrorHandlers(stream=open(os.devnull, "w"))  # noqa: SIM115 - closed with the test process
    handlers.relay.report.disconnect()
    handlers.relay.report.connect(shown.append)
    try:
        raise KeyError("slot failed")
    except KeyError as exc:
        handlers.excepthook(KeyError, exc, exc.__traceback__)
    qtbot.waitUntil(lambda: bool(shown), timeout=5_000)
    assert str(log_dir / "kvsim.log") in shown[0] and str(log_dir / "kvsim.log") in handlers.lines[0]
    assert "KeyError: 'slot failed'" in (log_dir / "kvsim.log").read_text(encoding="utf-8")


def _one_warning(capsys, path: Path, reason: str) -> None:
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"warning: the log file {path} cannot be used ({reason}); logging to a file is off"], err


def test_a_log_that_is_not_a_regular_file_is_one_warning_and_no_log_never_a_block(log_dir, capsys):
    log_dir.mkdir()
    path = log_dir / "kvsim.log"
    os.mkfifo(path)  # a FIFO with no reader: opening it to write would wait for ever
    assert logfile.setup() is None
    _one_warning(capsys, path, "it is not a regular file")
    logging.getLogger("kvsim").warning("not written anywhere")
    assert capsys.readouterr().err == ""  # (the warning is said once)
    path.unlink()
    path.mkdir()  # a folder where the file should be
    assert logfile.setup() is None
    assert logfile.log_exception("still fine", exc_info=False) is None
    assert "it is a folder" in capsys.readouterr().err


def test_a_log_that_breaks_after_setup_turns_logging_off_in_one_line(log_dir, capsys):
    path = logfile.setup()
    assert path == log_dir / "kvsim.log" and not path.exists()  # opened on the first record
    os.mkfifo(path)  # replaced by a FIFO before the first record: opened without blocking, refused
    try:
        raise ValueError("boom")
    except ValueError:
        assert logfile.log_exception("it failed") is None  # no "traceback in …" pointing at nothing
    err = capsys.readouterr().err
    assert "--- Logging error ---" not in err and "Traceback" not in err
    assert err.strip().splitlines() == [
        f"warning: the log file {path} cannot be used (no such device or address); logging to a file is off"
    ]
    logging.getLogger("kvsim").warning("after: nothing, not even a warning")
    assert capsys.readouterr().err == ""


def test_an_unwritable_log_folder_is_one_warning(tmp_path, monkeypatch, capsys):
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("KVSIM_LOG_DIR", str(tmp_path / "file" / "logs"))
    assert logfile.setup() is None
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot be used (its folder cannot be made: not a directory)" in err[0], err
    monkeypatch.setenv("KVSIM_LOG_DIR", str(tmp_path / "locked"))
    (tmp_path / "locked").mkdir(mode=0o500)
    monkeypatch.setattr(os, "access", lambda *a, **k: False)  # (root may write anywhere: the check is what is tested)
    assert logfile.setup() is None
    assert "(permission denied)" in capsys.readouterr().err
