"""Nothing lost: every writer of kvsim, failed half-way by a file-size limit (RLIMIT_FSIZE, what
``ulimit -f`` sets; SIGXFSZ ignored, so a write past it fails with EFBIG), over an existing good file,
leaves that file byte-identical and nothing else in its folder; a command exits 2 with one
``error:`` line. Targets that are not regular files (a FIFO, a device node made here) are refused
and left as they were; an empty path is refused; a replaced file keeps its mode, a new one follows
the umask. The references are the bytes and the ``os.stat`` of the files before the write."""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import stat
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from helpers import ROOT, kvsim_in_process

from kvsim.core.atomic import WriteError, atomic_target, check_target, write_bytes  # noqa: E402
from kvsim.engine.trace import Trace  # noqa: E402

MODEL = "random:family=llama,layers=1,heads=2,kv_heads=1,dim=32,ctx=64,seed=3"
GOOD = os.urandom(300_000)  # the "good file" every failed write lands on (larger than any limit below)

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX only (RLIMIT_FSIZE, FIFOs)")


def _good(path: Path, mode: int = 0o644) -> Path:
    path.write_bytes(GOOD)
    os.chmod(path, mode)
    return path


def _intact(folder: Path, *good: Path) -> None:
    """The good files are byte-identical and nothing else is in ``folder`` (no temporary file left)."""
    for p in good:
        assert p.read_bytes() == GOOD, f"{p.name} was changed"
    names = sorted(p.name for p in folder.iterdir())
    assert names == sorted(p.name for p in good), f"stray files: {names}"


@contextlib.contextmanager
def file_size_limit(nbytes: int):
    """This process may not grow a file past ``nbytes`` (threads and child encoders included)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    old = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, old)


def _kvsim(args: list[str], limit: int | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # kept across exec: a write past the limit fails (EFBIG)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "kvsim", *args],
        cwd=cwd or ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        preexec_fn=limited if limit is not None else None,
    )


def _one_error_line(proc: subprocess.CompletedProcess, *fragments: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    for f in fragments:
        assert f in lines[0], lines[0]


# ====================================================================== the helper itself
def test_a_failed_check_or_an_exception_keeps_the_old_file(tmp_path):
    target = _good(tmp_path / "a.bin")
    with pytest.raises(WriteError, match="does not read back"):
        write_bytes(target, b"new", check=lambda p: (_ for _ in ()).throw(ValueError("bad")))
    with pytest.raises(KeyError), atomic_target(target) as tmp:
        tmp.write_bytes(b"half")
        raise KeyError("interrupted")
    with pytest.raises(WriteError, match="nothing was written"), atomic_target(target):
        pass
    _intact(tmp_path, target)
    write_bytes(target, b"new")
    assert target.read_bytes() == b"new" and [p.name for p in tmp_path.iterdir()] == ["a.bin"]


def test_modes_kept_on_replace_and_umask_for_new_files(tmp_path):
    old = _good(tmp_path / "old.kvsim", 0o644)
    write_bytes(old, b"x")
    assert stat.S_IMODE(old.stat().st_mode) == 0o644  # was 0600 before the shared writer
    _good(tmp_path / "ro.kvsim", 0o640)
    write_bytes(tmp_path / "ro.kvsim", b"x")
    assert stat.S_IMODE((tmp_path / "ro.kvsim").stat().st_mode) == 0o640
    for mask, mode in ((0o022, 0o644), (0o077, 0o600), (0o002, 0o664)):
        previous = os.umask(mask)
        try:
            write_bytes(tmp_path / f"new-{mask:o}", b"x")
        finally:
            os.umask(previous)
        assert stat.S_IMODE((tmp_path / f"new-{mask:o}").stat().st_mode) == mode


def test_a_link_is_written_through(tmp_path):
    real = _good(tmp_path / "real.bin")
    (tmp_path / "link.bin").symlink_to(real)
    write_bytes(tmp_path / "link.bin", b"new")
    assert (tmp_path / "link.bin").is_symlink() and real.read_bytes() == b"new"


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_killed_writers_temporary_files_are_removed_by_the_next_write(tmp_path):
    from kvsim.core.atomic import remove_stale, temporary_prefix

    gone, here = _dead_pid(), os.getpid()
    left = tmp_path / f".run.kvsim.kvsim-{gone}.abcd1234.tmp.kvsim"  # what a kill -9 mid-write leaves
    left.write_bytes(b"half a run")
    ours = tmp_path / f".run.kvsim.kvsim-{here}.efgh5678.tmp.kvsim"  # a write still going on (this process)
    ours.write_bytes(b"in progress")
    folder = tmp_path / f"kvsim-fetch-{gone}-xyz"  # a killed download's folder
    folder.mkdir()
    (folder / "part").write_bytes(b"x")
    other = tmp_path / ".notes.txt.tmp"  # not kvsim's: never touched
    other.write_bytes(b"keep")
    assert temporary_prefix("fetch") == f"kvsim-fetch-{here}-"
    write_bytes(tmp_path / "run.kvsim", b"new")  # the next write into the folder cleans what the dead left
    assert not left.exists() and not folder.exists() and ours.exists() and other.exists()
    left.write_bytes(b"again")
    assert remove_stale(tmp_path) == [left] and remove_stale(tmp_path) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([ours.name, other.name, "run.kvsim"])


def test_a_replaced_file_keeps_its_owner_and_a_hard_link_is_said_lost(tmp_path, capsys):
    target = _good(tmp_path / "shared.kvsim", 0o640)
    if os.geteuid() == 0:  # only root may give a file to someone else
        os.chown(target, 12345, 23456)
    before = target.stat()
    os.link(target, tmp_path / "other-name.kvsim")
    write_bytes(target, b"new")
    after = target.stat()
    assert (after.st_uid, after.st_gid, stat.S_IMODE(after.st_mode)) == (before.st_uid, before.st_gid, 0o640)
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"warning: {target} had 1 other hard link(s); they keep the old content (the new file replaces this name only)"
    ]
    assert (tmp_path / "other-name.kvsim").read_bytes() == GOOD  # (what the warning says)


def test_a_long_legal_file_name_is_written(tmp_path):
    target = tmp_path / ("r" * 240 + ".kvsim")  # 246 characters: the file system allows 255
    write_bytes(target, b"x")
    assert target.read_bytes() == b"x" and [p.name for p in tmp_path.iterdir()] == [target.name]


def _special_files(tmp_path: Path) -> list[Path]:
    fifo = tmp_path / "fifo.kvsim"
    os.mkfifo(fifo)
    out = [fifo, tmp_path]
    if os.geteuid() == 0:  # a character device (the null device's numbers), made here, never the system's
        dev = tmp_path / "null.kvsim"
        os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        out.append(dev)
    return out


def test_special_targets_and_empty_paths_are_refused(tmp_path):
    for p in _special_files(tmp_path):
        kind = stat.S_IFMT(os.stat(p).st_mode)
        with pytest.raises(WriteError, match="not a regular file|a folder"):
            write_bytes(p, b"x")
        assert stat.S_IFMT(os.stat(p).st_mode) == kind
    for empty in ("", "  ", None):
        with pytest.raises(WriteError, match="empty"):
            check_target(empty)
    with pytest.raises(WriteError, match="no such folder"):
        check_target(tmp_path / "nope" / "x.png")


# ====================================================================== the command lines
@pytest.fixture(scope="module")
def small_trace(tmp_path_factory) -> Path:
    from kvsim.cli.entry import main

    path = tmp_path_factory.mktemp("trace") / "run.kvsim"
    assert main(["run", "--model", MODEL, "--prompt-ids", "1,2,3", "--steps", "3", "--save", str(path)]) == 0
    return path


def test_kvsim_run_save_under_a_file_size_limit(tmp_path, small_trace):
    target = _good(tmp_path / "good.kvsim")
    size = small_trace.stat().st_size
    proc = _kvsim(["run", "--model", MODEL, "--prompt-ids", "1,2,3", "--steps", "3", "--save", str(target)], limit=size // 2)
    _one_error_line(proc, str(target), "File too large")
    _intact(tmp_path, target)


def test_requests_save_under_a_file_size_limit(tmp_path_factory, capsys):
    scratch, folder = tmp_path_factory.mktemp("scratch"), tmp_path_factory.mktemp("requests")
    target = _good(folder / "good.kvsim")
    prompts = scratch / "prompts.txt"
    prompts.write_text("a b c\na b d\n")
    args = ["run", "--model", MODEL, "--requests", str(prompts), "--steps", "2", "--block-size", "2", "--save"]
    proc = kvsim_in_process(capsys, *args, str(scratch / "ref.kvsim"))  # the size of the file it writes
    assert proc.returncode == 0, proc.stderr
    proc = _kvsim([*args, str(target)], limit=(scratch / "ref.kvsim").stat().st_size // 2)  # the limit: its own process
    _one_error_line(proc, str(target), "File too large")
    _intact(folder, target)
    proc = kvsim_in_process(capsys, *args, str(target))  # without the limit the same command writes it, with the mode kept
    assert proc.returncode == 0, proc.stderr
    from kvsim.serving.saved_runs import load_runs

    assert load_runs(target) and stat.S_IMODE(target.stat().st_mode) == 0o644


def test_save_refuses_special_files_and_empty_paths(tmp_path, capsys):
    # refused before anything is written: no limit is involved, so the command runs in this process
    for p in _special_files(tmp_path):
        kind = stat.S_IFMT(os.stat(p).st_mode)
        proc = kvsim_in_process(capsys, "run", "--model", MODEL, "--prompt-ids", "1,2", "--steps", "1", "--save", str(p))
        _one_error_line(proc, "--save")
        assert stat.S_IFMT(os.stat(p).st_mode) == kind
    proc = kvsim_in_process(capsys, "run", "--model", MODEL, "--prompt-ids", "1,2", "--steps", "1", "--save", "")
    _one_error_line(proc, "empty")


@pytest.mark.parametrize("ext,limit", [("gif", 24_000), ("mp4", 12_000)])
def test_export_under_a_file_size_limit(tmp_path, ext, limit):
    target = _good(tmp_path / f"good.{ext}")
    args = ["export", "--model", MODEL, "--prompt-ids", "1,2", "--steps", "3", "--size", "320x180", "--out", str(target)]
    proc = _kvsim(args, limit=limit)
    _one_error_line(proc, str(target))
    _intact(tmp_path, target)


def test_export_whose_run_file_is_over_the_limit_is_one_line(tmp_path):
    target = _good(tmp_path / "good.gif")
    args = ["export", "--model", MODEL, "--prompt-ids", "1,2", "--steps", "3", "--size", "320x180", "--out", str(target)]
    proc = _kvsim(args, limit=2_000)  # the run it films (~3.6 KB, kept in the temporary folder) is larger than this
    _one_error_line(proc, "the run to film could not be kept in the temporary folder")
    _intact(tmp_path, target)


def test_export_refuses_a_fifo(tmp_path):
    fifo = tmp_path / "film.gif"
    os.mkfifo(fifo)
    proc = _kvsim(["export", "--model", MODEL, "--prompt-ids", "1,2", "--steps", "1", "--size", "320x180", "--out", str(fifo)])
    _one_error_line(proc, "not a regular file")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_web_page_under_a_file_size_limit_and_refusing_a_fifo(tmp_path, capsys):
    from kvsim.cli.entry import main
    from kvsim.engine.html_page import write_page

    target = _good(tmp_path / "good.html")
    trace = Trace.load(ROOT / "resources" / "demos" / "cache-vs-no-cache.kvsim")  # a 0.3 MB page
    with file_size_limit(100_000), pytest.raises(WriteError, match="File too large"):
        write_page(trace, target)
    _intact(tmp_path, target)
    fifo = tmp_path / "page.html"
    os.mkfifo(fifo)
    assert main(["export", "--from", str(ROOT / "resources" / "demos" / "cache-vs-no-cache.kvsim"), "--html", str(fifo)]) == 2
    assert "not a regular file" in capsys.readouterr().err and stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_screenshot_under_a_file_size_limit(tmp_path):
    target = _good(tmp_path / "kvsim.png")
    args = ["screenshot", "--model", MODEL, "--prompt", "a b", "--steps", "1", "--size", "640x360", "--out", str(tmp_path)]
    proc = _kvsim(args, limit=8192)
    _one_error_line(proc, "kvsim.png")
    _intact(tmp_path, target)


# ====================================================================== the app's writers (PNG 1×/2×, SVG, CSV)
@pytest.fixture
def window(qtbot, qapp):
    pytest.importorskip("pytestqt")
    from helpers import ready_window

    w = ready_window(qtbot, qapp, MODEL, "a b c", size=(1280, 720))
    assert w.controller.run_steps(3, timeout_s=120), w.controller.last_error
    yield w
    w.shutdown()


@pytest.mark.parametrize(
    "name,kind,ext,limit",
    [("window", "png", "png", 8192), ("window", "png2", "png", 8192), ("costs", "svg", "svg", 8192), (None, "csv", "csv", 600)],
)
def test_app_writers_under_a_file_size_limit(window, tmp_path, name, kind, ext, limit):
    from kvsim.ui.export import menu as export

    target = _good(tmp_path / f"good.{ext}")

    def write() -> None:
        if kind == "csv":
            export.save_csv(window, target)
        else:
            export.save_view(window, name, target, kind)

    with file_size_limit(limit), pytest.raises(OSError) as info:
        write()
    assert "\n" not in str(info.value)
    _intact(tmp_path, target)
    write()  # without the limit: written, and the replaced file's mode kept
    assert target.read_bytes() != GOOD and stat.S_IMODE(target.stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir()] == [target.name]


def test_trace_save_keeps_the_mode_it_replaces(tmp_path, small_trace):
    target = _good(tmp_path / "t.kvsim", 0o644)
    Trace.load(small_trace).save(target)
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert Trace.load(target).records
