"""One way to write every file kvsim produces (runs, requests runs, pictures, movies, tables).

``atomic_target(path, check)`` hands the caller a temporary file in the target's own folder (same
filesystem, so the final rename is atomic), named ``.NAME.XXXX.tmpEXT`` (the extension kept, for
encoders that read it). When the caller's block ends, ``check(tmp)`` reads the result back (a PNG
opened, a movie's frames counted: a writer that failed quietly is caught here), the data are
fsynced, the file is given the mode of the file it replaces (a new file follows the umask), and it
is renamed over the target. On any failure — an exception in the block, a failed check, a full disk,
a file-size limit, an interruption — the temporary file is removed and the target is untouched.

Refused before anything is written: an empty path, a target that exists and is not a regular file (a
folder, a FIFO, a device: ``--save /dev/null`` must never replace the device), a missing folder. A
target that is a symbolic link is written through the link (the link stays). Every refusal and
failure is a ``WriteError`` (an ``OSError``) with one line.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

__all__ = ["WriteError", "atomic_target", "check_target", "write_bytes"]


class WriteError(OSError):
    """A file that could not be written (or was refused); ``str()`` is one line."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "could not write the file"


def check_target(path: str | os.PathLike[str] | None) -> Path:
    """The path to write, or ``WriteError`` when it may not be written: empty, a non-regular file, no folder."""
    if path is None or not str(os.fspath(path)).strip():
        raise WriteError("no file name given (the path is empty)")
    p = Path(path)
    if os.path.lexists(p):
        try:
            st = os.stat(p)
        except OSError as exc:
            raise WriteError(f"cannot write {p}: {exc.strerror or exc}") from None
        if not stat.S_ISREG(st.st_mode):
            what = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file (a device, a pipe or a socket)"
            raise WriteError(f"cannot write {p}: it exists and is {what}; kvsim only replaces regular files")
        p = Path(os.path.realpath(p))  # through a link: the link stays, its file is replaced
    folder = p.parent if str(p.parent) else Path(".")
    if not folder.is_dir():
        raise WriteError(f"cannot write {p}: no such folder {folder}")
    return p


_umask_lock = threading.Lock()


def _umask() -> int:
    try:  # Linux: read without changing it (threads may be creating files)
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    with _umask_lock:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_target(path: str | os.PathLike[str] | None, check: Callable[[Path], None] | None = None) -> Iterator[Path]:
    """Yield a temporary path to write; on success check it, fsync it and rename it over ``path``.

    ``check(tmp)`` raises (any exception) when the written file is not what it should be. Exceptions
    raised inside the block pass through unchanged after the temporary file is removed; an ``OSError``
    becomes a ``WriteError`` naming the target."""
    target = check_target(path)
    try:
        old_mode = stat.S_IMODE(os.stat(target).st_mode) if target.exists() else None
        fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=f".tmp{target.suffix}", dir=target.parent)
    except OSError as exc:
        raise WriteError(f"cannot write {target}: {exc.strerror or exc}") from None
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        if not tmp.is_file() or tmp.stat().st_size == 0:
            raise WriteError(f"cannot write {target}: nothing was written")
        if check is not None:
            try:
                check(tmp)
            except WriteError:
                raise
            except Exception as exc:  # noqa: BLE001 - any reader failing on the result means a bad file
                detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                raise WriteError(f"cannot write {target}: the written file does not read back ({detail})") from None
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.chmod(tmp, old_mode if old_mode is not None else 0o666 & ~_umask())
        os.replace(tmp, target)
        _sync_folder(target.parent)
    except WriteError:
        _remove(tmp)
        raise
    except OSError as exc:
        _remove(tmp)
        raise WriteError(f"cannot write {target}: {exc.strerror or exc}") from None
    except BaseException:
        _remove(tmp)
        raise


def write_bytes(path: str | os.PathLike[str] | None, data: bytes, check: Callable[[Path], None] | None = None) -> Path:
    """``data`` as the whole content of ``path``, atomically (see ``atomic_target``)."""
    with atomic_target(path, check) as tmp:
        with open(tmp, "wb") as f:
            f.write(data)
    return check_target(path)


def _remove(tmp: Path) -> None:
    with contextlib.suppress(OSError):
        tmp.unlink()


def _sync_folder(folder: Path) -> None:
    with contextlib.suppress(OSError, AttributeError):  # not every platform opens a folder
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
