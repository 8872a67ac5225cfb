"""kvsim's log file: warnings and errors (with their tracebacks), kept when the terminal is gone.

One rotating file, ``kvsim.log`` (1 MB, then ``kvsim.log.1`` … ``.3``), in the platform's log folder
(platformdirs' ``user_log_dir("kvsim")``: ``~/.local/state/kvsim/log`` on Linux,
``~/Library/Logs/kvsim`` on macOS, ``%LOCALAPPDATA%\\kvsim\\Logs`` on Windows) or in ``$KVSIM_LOG_DIR``
(the tests point it at a temporary folder). Everything logged to the ``kvsim`` logger at WARNING or
above goes there; ``setup()`` is called by the command line and the app, once, and never fails: a
folder that cannot be made or written to, or a ``kvsim.log`` that is not a regular file (a FIFO, a folder,
a device), means no log file (``setup`` returns None) and one warning line on stderr, not an error. The
file is opened without blocking (a FIFO with no reader would stop every run that logs) and a write that
fails later turns logging off with that one line, never Python's "--- Logging error ---" traceback.
"""

from __future__ import annotations

import io
import logging
import logging.handlers
import os
import stat
import sys
from pathlib import Path
from typing import Any

__all__ = ["LOGGER", "log_path", "setup", "log_exception"]

LOGGER = "kvsim"
MAX_BYTES = 1_000_000
BACKUPS = 3
_handler: logging.Handler | None = None


def log_path() -> Path:
    """Where the log file is (or would be)."""
    folder = os.environ.get("KVSIM_LOG_DIR")
    if not folder:
        try:
            import platformdirs

            folder = platformdirs.user_log_dir("kvsim", appauthor=False)
        except Exception:  # noqa: BLE001 - no platformdirs: beside the user's home
            folder = os.path.join(os.path.expanduser("~"), ".kvsim", "log")
    return Path(folder) / "kvsim.log"


_warned: set[tuple[str, str]] = set()  # (path, reason) already said: one line each per process


def _warn(path: Path, reason: str) -> None:
    if (str(path), reason) in _warned:
        return
    _warned.add((str(path), reason))
    try:
        print(f"warning: the log file {path} cannot be used ({reason}); logging to a file is off", file=sys.stderr)
    except Exception:  # noqa: BLE001 - no stderr either: nothing more to say
        pass


class _SafeFileHandler(logging.handlers.RotatingFileHandler):
    """A rotating file that never blocks (opened O_NONBLOCK; only a regular file is written) and that a
    failure turns off with one warning line, instead of the logging module's traceback on every record."""

    failed = False

    def _open(self) -> io.TextIOWrapper:
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(self.baseFilename, flags, 0o644)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(f"{self.baseFilename} is not a regular file")
            if hasattr(os, "set_blocking"):
                os.set_blocking(fd, True)  # a regular file: O_NONBLOCK only guarded the open
            return open(fd, "a", encoding=self.encoding, errors=self.errors)  # noqa: SIM115 - the handler closes it
        except BaseException:
            os.close(fd)
            raise

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging's name
        self.failed = True
        reason = sys.exc_info()[1]
        _warn(Path(self.baseFilename), _reason(reason) if reason is not None else "a write failed")
        logging.getLogger(LOGGER).removeHandler(self)
        try:
            self.close()
        except Exception:  # noqa: BLE001 - already broken
            pass


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return (str(exc).splitlines() or [type(exc).__name__])[0][:200]


def _unusable(path: Path) -> str | None:
    """Why ``path`` cannot be the log file (its folder cannot be made or written to; it is not a regular
    file), or None."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"its folder cannot be made: {_reason(exc)}"
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        return _reason(exc)
    if mode is not None and not stat.S_ISREG(mode):
        return "it is a folder" if stat.S_ISDIR(mode) else "it is not a regular file"
    if not os.access(path if mode is not None else path.parent, os.W_OK):
        return "permission denied"
    return None


def setup() -> Path | None:
    """Attach the rotating file to the ``kvsim`` logger (once); its path, or None when it cannot be used
    (then one warning line on stderr, once per path)."""
    global _handler
    path = log_path()
    if _handler is not None and getattr(_handler, "baseFilename", None) == str(path.absolute()):
        return None if getattr(_handler, "failed", False) else path
    if (why := _unusable(path)) is not None:
        _warn(path, why)
        return None
    try:
        handler = _SafeFileHandler(path, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8", delay=True)
    except OSError as exc:
        _warn(path, _reason(exc))
        return None
    handler.setLevel(logging.WARNING)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s [pid %(process)d]: %(message)s"))
    logger = logging.getLogger(LOGGER)
    if _handler is not None:
        logger.removeHandler(_handler)
        _handler.close()
    logger.addHandler(handler)
    if logger.level == logging.NOTSET or logger.level > logging.WARNING:
        logger.setLevel(logging.WARNING)
    _handler = handler
    return path


def log_exception(message: str, exc_info: Any = True) -> Path | None:
    """Log ``message`` as an error with its traceback; the log file's path (None: no log file)."""
    path = setup()
    try:
        logging.getLogger(LOGGER).error(message, exc_info=exc_info)
    except Exception:  # noqa: BLE001 - logging must never turn one error into two
        return None
    if path is None or _handler is None or getattr(_handler, "failed", False):
        return None  # (the write failed: the message does not point at a log without it)
    return path
