"""Hardware for the roofline: vendor peak figures of a few GPUs (as data, with their sources), and this
machine's own peaks, measured once and cached.

A roofline needs two numbers per processor: the peak FLOP/s (the flat roof) and the memory bandwidth
(the slope). For the GPUs below they are the vendor's datasheet figures, *dense* (NVIDIA quotes the
tensor-core figures "with sparsity", twice the dense rate; a model's matmuls are dense). For this
machine they are measured, with the thread count runs use (``kvsim.models.loading.set_threads``: the
CLI and the app set it before measuring): a short matmul (FLOP/s) and a *read* of a weight-sized fp32
buffer (``read_bandwidth``: a sum over it, bytes read per second — a decode step reads its weights, it
does not copy them), the best of a few repeats within about a second; cached in the user cache dir under
a key naming the device, dtype, torch version, thread count and processor, so a changed machine
re-measures. The benchmarks' bandwidth floor uses the same ``read_bandwidth``.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeGuard

from ..core.atomic import write_bytes
from ..core.devices import cpu_name

TERA = 1e12
READ_METHOD = "sum over an fp32 buffer (bytes read)"
#: the buffer the machine's bandwidth is read from: weight-sized (a small model's fp32 weights), far larger than any cache
READ_BYTES = {"cpu": 512 << 20, "cuda": 1 << 30}


@dataclass(frozen=True)
class Chip:
    """A GPU's peak figures from its vendor's datasheet."""

    name: str
    bf16_flops: float  # dense FP16/BF16 tensor-core FLOP/s (FP32 accumulate)
    fp32_flops: float  # FP32 (non-tensor) FLOP/s
    bandwidth: float  # memory bandwidth, bytes/s
    memory: float  # memory size, bytes
    source: str  # the vendor page or datasheet the figures come from
    note: str

    def peak_flops(self, precision: str = "bf16") -> float:
        """The compute roof for ``precision``: "bf16" (= fp16 tensor) or "fp32"."""
        if precision in ("bf16", "fp16"):
            return self.bf16_flops
        if precision == "fp32":
            return self.fp32_flops
        raise ValueError(f"unknown precision {precision!r} (known: bf16, fp16, fp32)")

    def ridge(self, precision: str = "bf16") -> float:
        """The intensity (FLOP/byte) where the bandwidth slope meets the compute roof."""
        return self.peak_flops(precision) / self.bandwidth


GPUS: dict[str, Chip] = {
    c.name: c
    for c in (
        Chip(
            "H100 SXM",
            989.4 * TERA,
            66.9 * TERA,
            3.35e12,
            80e9,
            "https://www.nvidia.com/en-us/data-center/h100/ (datasheet: BF16 Tensor Core 1,979 TFLOPS with sparsity, "
            "FP32 67 TFLOPS, HBM3 3.35 TB/s, 80 GB)",
            "dense BF16 = half the datasheet's sparse 1,979 TFLOPS; SXM5 board (the PCIe card is slower: 756 / 2.0 TB/s)",
        ),
        Chip(
            "H200 SXM",
            989.4 * TERA,
            66.9 * TERA,
            4.8e12,
            141e9,
            "https://www.nvidia.com/en-us/data-center/h200/ (datasheet: BF16 Tensor Core 1,979 TFLOPS with sparsity, "
            "FP32 67 TFLOPS, HBM3e 4.8 TB/s, 141 GB)",
            "the H100's compute with more and faster memory: the same roof, a steeper slope",
        ),
        Chip(
            "A100 SXM 80GB",
            312 * TERA,
            19.5 * TERA,
            2.039e12,
            80e9,
            "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
            "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf (BF16 Tensor Core 312 TFLOPS dense / 624 sparse, "
            "FP32 19.5 TFLOPS, HBM2e 2,039 GB/s)",
            "the 80 GB SXM card; the 40 GB card has 1,555 GB/s",
        ),
        Chip(
            "RTX 4090",
            165.2 * TERA,
            82.6 * TERA,
            1.008e12,
            24e9,
            "https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf (Ada whitepaper, "
            "appendix: peak FP16 Tensor TFLOPS with FP32 accumulate 165.2 / 330.4 sparse, FP32 82.6 TFLOPS, 1,008 GB/s)",
            "a consumer card: FP16 tensor with FP32 accumulate (the rate training and inference libraries use); "
            "with FP16 accumulate it is 330 TFLOPS",
        ),
    )
}


def gpu(name: str) -> Chip:
    """A GPU by name (case and spaces ignored: "h100", "H100 SXM", "rtx4090")."""
    want = name.lower().replace(" ", "").replace("-", "")
    for chip in GPUS.values():
        full = chip.name.lower().replace(" ", "")
        if want in (full, full.split("sxm")[0], full.replace("80gb", "")):
            return chip
    raise ValueError(f"unknown GPU {name!r} (known: {', '.join(GPUS)})")


# ---------------------------------------------------------------------------- this machine, measured
@dataclass(frozen=True)
class MeasuredPeaks:
    """This machine's (or device's) measured roof: best matmul FLOP/s and best copy bandwidth."""

    device: str  # "cpu" or "cuda:0"
    name: str  # the processor's name
    dtype: str
    flops: float  # FLOP/s of the best timed matmul
    bandwidth: float  # bytes/s read by the best timed sum over a large buffer (read_bandwidth)
    key: str  # what the cache entry is valid for
    matmul_n: int
    read_bytes: int  # the buffer read
    threads: int  # torch's thread count during the measurement (the runs' own)
    seconds: float  # how long the measurement took
    measured_at: str
    method: str = READ_METHOD  # how the bandwidth was measured (an entry measured otherwise is measured again)
    cached: bool = False  # True when read back from the cache

    @property
    def ridge(self) -> float:
        return self.flops / self.bandwidth


def device_name(device: str) -> str:
    import torch

    if device.startswith("cuda"):
        return torch.cuda.get_device_name(torch.device(device))
    return cpu_name()


def peaks_key(device: str = "cpu", dtype: str = "float32") -> str:
    """The cache key: a different torch, thread count, processor or dtype measures again."""
    import torch

    return f"{device}|{device_name(device)}|{dtype}|torch {torch.__version__}|threads {torch.get_num_threads()}"


def cache_file(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Where the measured peaks are kept: ``cache_dir`` or the user cache dir (platformdirs)."""
    if cache_dir is None:
        from platformdirs import user_cache_dir

        cache_dir = user_cache_dir("kvsim", appauthor=False)
    return Path(cache_dir) / "peaks.json"


def _read_cache(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _valid(entry: object) -> TypeGuard[dict[str, Any]]:
    if not isinstance(entry, dict):
        return False
    try:
        return all(float(entry[k]) > 0 and float(entry[k]) < 1e18 for k in ("flops", "bandwidth"))
    except (KeyError, TypeError, ValueError):
        return False


def measure_peaks(
    device: str = "cpu",
    dtype: str = "float32",
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    refresh: bool = False,
    budget_s: float = 1.2,
) -> MeasuredPeaks:
    """This machine's peak FLOP/s and bandwidth for ``device``/``dtype``: from the cache when its key
    matches (unless ``refresh``), else measured (about ``budget_s`` seconds) and written to the cache."""
    key = peaks_key(device, dtype)
    path = cache_file(cache_dir)
    cache = _read_cache(path)
    entry = cache.get(key)
    if not refresh and _valid(entry) and entry.get("method") == READ_METHOD:
        fields = {f: entry[f] for f in MeasuredPeaks.__dataclass_fields__ if f in entry}
        try:
            return MeasuredPeaks(**{**fields, "cached": True})
        except TypeError:
            pass  # an entry from another version of kvsim: measure again
    peaks = _measure(device, dtype, key, budget_s)
    cache[key] = {k: v for k, v in asdict(peaks).items() if k != "cached"}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes(path, json.dumps(cache, indent=1).encode("utf-8"), check=lambda tmp: json.loads(tmp.read_bytes()))
    except OSError:
        pass  # a read-only cache dir: the figures are still good for this session
    return peaks


def _measure(device: str, dtype: str, key: str, budget_s: float) -> MeasuredPeaks:
    import torch

    from ..core.devices import sync  # (torch is imported when a measurement runs, not with this module)

    dev = torch.device(device)
    dt = getattr(torch, dtype)
    cuda = dev.type == "cuda"

    start = time.perf_counter()
    # 1. matmul: C = A @ B, n×n, 2·n³ FLOPs (multiply-add = 2)
    n = 8192 if cuda else 1024
    a = torch.randn(n, n, device=dev).to(dt)
    b = torch.randn(n, n, device=dev).to(dt)
    torch.mm(a, b)  # warm-up: first-call set-up is not the roof
    sync(dev)
    best_mm = float("inf")
    deadline = time.perf_counter() + budget_s / 2
    for i in range(30):
        t0 = time.perf_counter()
        torch.mm(a, b)
        sync(dev)
        best_mm = min(best_mm, time.perf_counter() - t0)
        if i >= 2 and time.perf_counter() > deadline:
            break
    del a, b
    # 2. read: a sum over a weight-sized buffer, bytes read per second (read_bandwidth)
    nbytes = READ_BYTES["cuda" if cuda else "cpu"]
    bandwidth = read_bandwidth(nbytes, device, budget_s=budget_s / 2)
    return MeasuredPeaks(
        device=device,
        name=device_name(device),
        dtype=dtype,
        flops=2 * n**3 / best_mm,
        bandwidth=bandwidth,
        key=key,
        matmul_n=n,
        read_bytes=nbytes,
        threads=torch.get_num_threads(),
        seconds=round(time.perf_counter() - start, 3),
        measured_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    )


def read_bandwidth(nbytes: int, device: str = "cpu", *, budget_s: float = 0.6, repeats: int = 30) -> float:
    """Bytes per second *read* from memory: the best time of ``buf.sum()`` over an fp32 buffer of
    ``nbytes`` (make it weight-sized: far larger than any cache), up to ``repeats`` times within about
    ``budget_s`` seconds (at least 3), with torch's current thread count; on the CPU the buffer lies in the
    memory kvsim keeps weights in (``kvsim.models.kernels.huge_pages``). A decode step reads its weights
    once; a copy would count a write too (and run slower per byte read), so a read is the floor's rate."""
    import torch

    from ..core.devices import sync  # (torch is imported when a measurement runs, not with this module)

    dev = torch.device(device)
    n = max(1, nbytes // 4)
    if dev.type == "cpu":  # the kind of memory the weights live in (huge pages where the system gives them)
        from ..models.kernels import huge_pages

        buf = huge_pages.empty((n,), torch.float32).fill_(1.0)  # written once: the pages are in
    else:
        buf = torch.ones(n, dtype=torch.float32, device=dev)
    buf.sum()
    sync(dev)
    best = float("inf")
    deadline = time.perf_counter() + budget_s
    for i in range(max(3, repeats)):
        t0 = time.perf_counter()
        buf.sum()
        sync(dev)
        best = min(best, time.perf_counter() - t0)
        if i >= 2 and time.perf_counter() > deadline:
            break
    return buf.numel() * 4 / best
