"""kvsim's log file: warnings and errors (with their tracebacks), kept when the terminal is gone.

One rotating file, ``kvsim.log`` (1 MB, then ``kvsim.log.1`` … ``.3``), in the platform's log folder
(platformdirs' ``user_log_dir("kvsim")``: ``~/.local/state/kvsim/log`` on Linux,
``~/Library/Logs/kvsim`` on macOS, ``%LOCALAPPDATA%\\kvsim\\Logs`` on Windows) or in ``$KVSIM_LOG_DIR``
(the tests point it at a temporary folder). Everything logged to the ``kvsim`` logger at WARNING or
above goes there; ``setup()`` is called by the command line and the app, once, and never fails: a
folder that cannot be made means no log file (``setup`` returns None), not an error.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
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


def setup() -> Path | None:
    """Attach the rotating file to the ``kvsim`` logger (once); its path, or None when it cannot be made."""
    global _handler
    path = log_path()
    if _handler is not None and getattr(_handler, "baseFilename", None) == str(path.absolute()):
        return path
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.handlers.RotatingFileHandler(
            path, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8", delay=True
        )
    except OSError:
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
    return path
