"""One way to write every file kvsim produces (runs, requests runs, pictures, movies, tables).

``atomic_target(path, check)`` hands the caller a temporary file in the target's own folder (same
filesystem, so the final rename is atomic), named ``.NAME.kvsim-PID.XXXX.tmpEXT`` (the extension kept,
for encoders that read it; the writer's process id in it). When the caller's block ends, ``check(tmp)``
reads the result back (a PNG opened, a movie's frames counted: a writer that failed quietly is caught
here), the data are fsynced, the file is given the mode and, where permitted, the owner and group of the
file it replaces (a new file follows the umask), and it is renamed over the target (a target with other
hard links is said to lose them: one warning line). On any failure — an exception in the block, a failed
check, a full disk, a file-size limit, an interruption — the temporary file is removed and the target is
untouched. A kill leaves no such chance: the next write into that folder removes the temporary files of
writers whose process is gone (``remove_stale``).

Refused before anything is written: an empty path, a target that exists and is not a regular file (a
folder, a FIFO, a device: ``--save /dev/null`` must never replace the device), a missing folder. A
target that is a symbolic link is written through the link (the link stays). Every refusal and
failure is a ``WriteError`` (an ``OSError``) with one line.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

__all__ = ["WriteError", "atomic_target", "check_target", "remove_stale", "temporary_prefix", "write_bytes"]


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


TAG = "kvsim-"  # temporary names carry "kvsim-PID": a later start knows whose they were
_STALE = re.compile(r"^\..+\.kvsim-(\d+)\.[^/]*\.tmp[^/]*$|^kvsim-[a-z]+-(\d+)-[^/]*$")


def temporary_prefix(kind: str) -> str:
    """The prefix of a temporary folder of this process (``kvsim-KIND-PID-``), which ``remove_stale``
    removes once the process is gone (a killed download's folder in the system's temporary folder)."""
    return f"{TAG}{kind}-{os.getpid()}-"


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # someone else's process (or cannot tell): not ours to clean
    return True


def remove_stale(folder: str | os.PathLike[str]) -> list[Path]:
    """Remove the temporary files (``atomic_target``'s) and folders (``temporary_prefix``'s) in ``folder``
    that a killed kvsim left: those whose process is gone. What was removed."""
    import shutil

    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        match = _STALE.match(entry.name)
        if match is None or _alive(int(match.group(1) or match.group(2))):
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
        except OSError:
            continue
        removed.append(Path(entry.path))
    return removed


def _keep_owner(tmp: Path, old: os.stat_result | None) -> None:
    """The replaced file's owner and group, where this process may give them (root, or a group it is in)."""
    if old is None or not hasattr(os, "chown"):
        return
    with contextlib.suppress(OSError):
        st = os.stat(tmp)
        if (st.st_uid, st.st_gid) != (old.st_uid, old.st_gid):
            os.chown(tmp, old.st_uid, old.st_gid)


@contextlib.contextmanager
def atomic_target(path: str | os.PathLike[str] | None, check: Callable[[Path], None] | None = None) -> Iterator[Path]:
    """Yield a temporary path to write; on success check it, fsync it and rename it over ``path``.

    ``check(tmp)`` raises (any exception) when the written file is not what it should be. Exceptions
    raised inside the block pass through unchanged after the temporary file is removed; an ``OSError``
    becomes a ``WriteError`` naming the target."""
    target = check_target(path)
    remove_stale(target.parent)
    try:
        old = os.stat(target) if target.exists() else None
        old_mode = stat.S_IMODE(old.st_mode) if old is not None else None
        prefix = f".{target.name[:150]}.{TAG}{os.getpid()}."  # (cut: the name's own limit leaves room for ours)
        fd, name = tempfile.mkstemp(prefix=prefix, suffix=f".tmp{target.suffix[:20]}", dir=target.parent)
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
        _keep_owner(tmp, old)
        os.chmod(tmp, old_mode if old_mode is not None else 0o666 & ~_umask())
        if old is not None and old.st_nlink > 1:
            print(
                f"warning: {target} had {old.st_nlink - 1} other hard link(s); they keep the old content "
                "(the new file replaces this name only)",
                file=sys.stderr,
            )
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
