"""Which one-row kernel a model's decode products take on this machine, and whether its weights go to huge pages:
measured on the model's own matrices, not ruled.

A cached decode step streams every weight once through a one-row product (``kvsim.models.kernels.row_matmul``). Which
kernel streams fastest depends on the host, not on the model alone: on a host whose single thread reads 31–35 GB/s
numba's row-major dot products lead OpenBLAS by ~20 %; on a host of the same class reading 10–11 GB/s, where every
kernel is starved, OpenBLAS's column-major product leads numba's (docs/benchmarks.md). Huge pages likewise: ~8 %
faster on one host, nothing on another, and their first touch costs more under a memory balloon.

So ``choice_for`` times the candidates on the model's largest matrices — a block of the LM head's rows and the
largest layer matrices, each up to ``SAMPLE_BYTES``, every candidate on its own copies in the layout it reads
(row-major for numba, column-major for numpy's BLAS and torch), in huge and in ordinary pages, interleaved over
``ROUNDS`` rounds in an order rotating each round — scales each group's time to the bytes the model has of it
(the predicted time of one step's products), and takes the fastest kernel (``decide``). Huge pages are kept only
when they make that kernel's products at least ``HUGE_MARGIN`` faster (median of the rounds' paired ratios).

The answer is cached beside the roofline's measured peaks (the user cache folder, ``row_kernels.json``), under a
key naming the processor, torch, numpy and its BLAS, numba, the thread count and the matrices' shapes, with the
read rate of the machine at that time (a ``torch.sum`` over a 128 MiB buffer, ``read_rate``). A later load reads
the rate again (~0.1 s) and measures anew when it moved by more than ``BANDWIDTH_CHANGE`` — a host whose neighbours
now starve its memory may want another kernel. One process decides once per key (``_decided``): every model it
loads with the same shapes gets the same kernel, so two loads of a model compute the same values bit for bit.

``KVSIM_ROW_MATMUL=numba|numpy|torch`` forces the kernel and ``KVSIM_HUGE_PAGES=0`` turns huge pages off; what is
forced is not measured. The trace records the choice and why (``Trace.meta["one_row_choice"]``).
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ...core.atomic import write_bytes
from ...core.devices import cpu_name
from . import huge_pages, row_matmul

#: the candidates, in the order a tie keeps (numba's kernel is one thread; numpy's BLAS and torch take torch's count)
KERNELS = ("numba", "numpy", "torch")
#: measure again when the machine's read rate moved by more than this fraction since the cached choice
BANDWIDTH_CHANGE = 0.35
#: huge pages are kept only when they make the chosen kernel's products at least this much faster
HUGE_MARGIN = 0.02
#: bytes of each sampled group (the LM head's block of rows, the largest layer matrices), per candidate copy
SAMPLE_BYTES = 16 << 20
#: timed rounds (after one warm-up round)
ROUNDS = 7
#: the buffer the read rate is probed over: four times a large last-level cache, so the probe reads memory (over 64 MiB
#: a 32 MiB-L3 host read 15–21 GB/s where 512 MiB read 8–11: the probe compares with itself, never with other figures)
PROBE_BYTES = 128 << 20
CACHE_NAME = "row_kernels.json"

Variant = tuple[str, bool]  # (kernel, huge pages)


@dataclass(frozen=True)
class KernelChoice:
    """A model's one-row kernel and page size on this machine, and why."""

    kernel: str  # "numba" (row-major weights), "numpy" or "torch" (column-major)
    huge_pages: bool
    reason: str  # one line: the figures that decided, or what forced it
    ms: dict[str, float] = field(default_factory=dict)  # "numpy, huge pages": the predicted ms of a step's products
    read_gbps: float = 0.0  # the machine's read rate when it was measured (0: not probed)
    measured_at: str = ""
    cached: bool = False  # read back from the cache (measured by an earlier process)
    key: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def variant_name(kernel: str, huge: bool) -> str:
    return f"{kernel}, {'huge' if huge else 'ordinary'} pages"


def decide(times: Mapping[Variant, Sequence[float]], margin: float = HUGE_MARGIN) -> tuple[str, bool, str]:
    """The kernel and page kind from per-round times of each (kernel, huge pages) variant (the same rounds, paired):
    the kernel whose best variant has the lowest median; huge pages for it when the median of its rounds' paired
    ratios huge / ordinary is at most ``1 - margin`` (or when only one kind was timed, that kind). Returns the
    kernel, the page kind and the reason in one line."""
    if not times or any(len(t) == 0 for t in times.values()):
        raise ValueError("decide needs at least one timed round of every variant")
    med = {v: statistics.median(t) for v, t in times.items()}
    kernels = sorted({k for k, _ in times}, key=lambda k: (min(med[v] for v in med if v[0] == k), KERNELS.index(k)))
    best = kernels[0]
    ranked = " < ".join(f"{k} {min(med[v] for v in med if v[0] == k) * 1e3:.1f} ms" for k in kernels)
    reason = f"measured: {ranked}" if len(kernels) > 1 else f"{best}: the only candidate"
    if (best, True) in times and (best, False) in times:
        ratios = [h / o for h, o in zip(times[(best, True)], times[(best, False)], strict=True) if o > 0]
        ratio = statistics.median(ratios) if ratios else 1.0
        huge = ratio <= 1.0 - margin
        verdict = "kept" if huge else f"not kept (less than {margin:.0%} faster)"
        reason += f"; huge pages {ratio:.3f}× ordinary: {verdict}"
    else:
        huge = (best, True) in times
    return best, huge, reason


def read_rate(nbytes: int = PROBE_BYTES, *, budget_s: float = 0.6, repeats: int = 30) -> float:
    """Bytes per second read by one ``sum`` over a float32 buffer of ``nbytes`` in the memory kvsim keeps weights
    in (huge pages where the system gives them), the best of up to ``repeats`` within ~``budget_s`` (at least 3);
    with torch's current thread count. (``kvsim.costs.hardware.read_bandwidth``'s CPU reading.)"""
    buf = huge_pages.empty((max(1, nbytes // 4),), torch.float32).fill_(1.0)  # written once: the pages are in
    buf.sum()
    best = float("inf")
    deadline = time.perf_counter() + budget_s
    for i in range(max(3, repeats)):
        t0 = time.perf_counter()
        buf.sum()
        best = min(best, time.perf_counter() - t0)
        if i >= 2 and time.perf_counter() > deadline:
            break
    return buf.numel() * 4 / best


def cache_file() -> Path:
    """Beside the roofline's measured peaks: ``KVSIM_CACHE_DIR`` or the user cache folder, ``row_kernels.json``."""
    folder = os.environ.get("KVSIM_CACHE_DIR")
    if not folder:
        from platformdirs import user_cache_dir

        folder = user_cache_dir("kvsim", appauthor=False)
    return Path(folder) / CACHE_NAME


def candidates(weight_bytes: int, largest: int = huge_pages.HUGE_PAGE) -> tuple[list[str], list[bool], str]:
    """The kernels and page kinds worth timing for a model of ``weight_bytes`` fp32 weights whose largest matrix has
    ``largest`` bytes, and what was forced. numba only with one thread (its kernel is one thread) and for weights of
    at least ``NUMBA_MIN_BYTES`` (its start, ~0.9 s once a process, is more than it can save on a smaller model), and
    only where it is installed; huge pages only where the system has them and some matrix spans one."""
    forced = ""
    if row_matmul.WANTED != "auto":
        kernels = [row_matmul.WANTED]
        forced = f"KVSIM_ROW_MATMUL={row_matmul.WANTED}"
        if row_matmul.WANTED == "numba" and row_matmul.numba_kernel() is None:
            kernels = [row_matmul.KERNEL]
    else:
        kernels = ["numpy", "torch"]
        if torch.get_num_threads() == 1 and weight_bytes >= row_matmul.NUMBA_MIN_BYTES and row_matmul.numba_kernel():
            kernels.insert(0, "numba")
    pages = [True, False] if huge_pages.ENABLED and largest >= huge_pages.HUGE_PAGE else [False]
    if not huge_pages.ENABLED:
        forced = ", ".join(filter(None, [forced, "huge pages off (KVSIM_HUGE_PAGES=0 or not on this system)"]))
    return kernels, pages, forced


def _key(head: torch.Tensor, layers: Sequence[torch.Tensor], kernels: Sequence[str], pages: Sequence[bool]) -> str:
    shapes = sorted({tuple(w.shape) for w in layers}) + [tuple(head.shape)]
    digest = hashlib.sha1(repr((shapes, sum(w.numel() for w in layers))).encode()).hexdigest()[:12]
    numba_version = ""
    if "numba" in kernels:
        import numba

        numba_version = numba.__version__
    return (
        f"{cpu_name()}|torch {torch.__version__}|numpy {np.__version__} {row_matmul._numpy_blas()}|numba {numba_version}"
        f"|threads {torch.get_num_threads()}|{'/'.join(kernels)}|huge {'/'.join(map(str, pages))}|matrices {digest}"
    )


def _sample(head: torch.Tensor, layers: Sequence[torch.Tensor], budget: int) -> list[tuple[list[torch.Tensor], float]]:
    """The groups timed and the factor that scales each group's time to the model's bytes of it: a block of the head's
    rows, and the largest layer matrices (largest first), each up to ``budget`` bytes."""
    groups = []
    head_rows = max(1, min(head.shape[0], budget // max(1, head.shape[1] * 4)))
    groups.append(([head.detach()[:head_rows]], head.shape[0] / head_rows))
    total = sum(w.numel() * 4 for w in layers)
    taken: list[torch.Tensor] = []
    for w in sorted(layers, key=lambda w: -w.numel()):
        if taken and sum(t.numel() * 4 for t in taken) + w.numel() * 4 > budget:
            break
        taken.append(w.detach())
    if taken:
        groups.append((taken, total / sum(t.numel() * 4 for t in taken)))
    return groups


def measure(
    head: torch.Tensor,
    layers: Sequence[torch.Tensor],
    kernels: Sequence[str],
    pages: Sequence[bool],
    *,
    rounds: int = ROUNDS,
    budget: int = SAMPLE_BYTES,
) -> dict[Variant, list[float]]:
    """Per round, the predicted seconds of one step's one-row products for each (kernel, huge pages) variant: each
    sampled group's products timed on that variant's own copies (in its layout and pages), scaled to the model's
    bytes of the group; one warm-up round first, the variants in an order rotating each round."""
    groups = _sample(head, layers, budget)
    copies: dict[Variant, list[tuple[list[torch.Tensor], float]]] = {}
    for kernel in kernels:
        for huge in pages:
            lay = huge_pages.row_major if kernel == "numba" else huge_pages.column_major
            with huge_pages.using(huge):
                copies[(kernel, huge)] = [([lay(w) for w in ws], scale) for ws, scale in groups]
    xs = {n: torch.ones(1, n) for n in {w.shape[1] for ws, _ in groups for w in ws}}
    # one thread: the thread's CPU time, which a shared machine's descheduling does not inflate (a memory stall is
    # CPU time, so a starved kernel still shows); with more threads the BLAS pools' workers run elsewhere: wall time
    clock = time.thread_time if torch.get_num_threads() == 1 else time.perf_counter
    variants = list(copies)
    times: dict[Variant, list[float]] = {v: [] for v in variants}
    for r in range(rounds + 1):
        turn = r % len(variants)
        for kernel, huge in variants[turn:] + variants[:turn]:
            rows, column = kernel == "numba", kernel if kernel != "numba" else None
            total = 0.0
            for ws, scale in copies[(kernel, huge)]:
                t0 = clock()
                for w in ws:
                    row_matmul.linear(xs[w.shape[1]], w, rows=rows, column=column)
                total += (clock() - t0) * scale
            if r:  # round 0 warms up (numba's first call, the pages' first touch)
                times[(kernel, huge)].append(total)
    return times


_decided: dict[str, KernelChoice] = {}  # this process's choices, by key: one answer per process and shapes


def choice_for(
    head: torch.Tensor,
    layers: Sequence[torch.Tensor],
    weight_bytes: int,
    *,
    probe: Callable[[], float] = read_rate,
    timer: Callable[..., dict[Variant, list[float]]] = measure,
    cache: Path | None = None,
) -> KernelChoice:
    """The kernel and page kind for a model whose LM head is ``head`` and whose other projection matrices are
    ``layers`` (fp32, any layout), ``weight_bytes`` in all: forced, decided earlier in this process, read from the
    cache (when the read rate ``probe`` gives is within ``BANDWIDTH_CHANGE`` of the cached one), or measured
    (``timer``) and cached. ``probe`` and ``timer`` are parameters for tests (injected figures)."""
    kernels, pages, forced = candidates(weight_bytes, max(w.numel() * 4 for w in [head, *layers]))
    if len(kernels) * len(pages) == 1:
        return KernelChoice(kernels[0], pages[0], f"forced: {forced}" if forced else "the only candidate")
    key = _key(head, layers, kernels, pages)
    if key in _decided:
        return _decided[key]
    path = cache if cache is not None else cache_file()
    # weights that fit in a large last-level cache are read from there: the memory's rate does not bear on them
    rate = probe() if weight_bytes >= PROBE_BYTES // 2 else 0.0
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
        stored = stored if isinstance(stored, dict) else {}
    except (OSError, ValueError):
        stored = {}
    entry, moved = stored.get(key), ""
    if isinstance(entry, dict) and entry.get("kernel") in kernels and entry.get("huge_pages") in pages:
        then = float(entry.get("read_gbps") or 0.0)
        if rate == 0.0 or (then > 0 and abs(rate / 1e9 / then - 1) <= BANDWIDTH_CHANGE):
            fields = {k: entry[k] for k in KernelChoice.__dataclass_fields__ if k in entry}
            try:
                choice = KernelChoice(**{**fields, "cached": True})
            except TypeError:  # an entry another version of kvsim wrote: measure again
                pass
            else:
                now = f"; read rate then {then:.1f}, now {rate / 1e9:.1f} GB/s" if rate else ""
                choice = KernelChoice(**{**asdict(choice), "reason": f"{choice.reason} (cached{now})"})
                _decided[key] = choice
                return choice
        if then > 0 and rate > 0:
            moved = f"; measured again: the read rate moved from {then:.1f} to {rate / 1e9:.1f} GB/s"
    times = timer(head, layers, kernels, pages)
    kernel, huge, reason = decide(times)
    if forced:
        reason = f"{reason} ({forced})"
    choice = KernelChoice(
        kernel=kernel,
        huge_pages=huge,
        reason=reason + moved,
        ms={variant_name(*v): round(statistics.median(t) * 1e3, 3) for v, t in times.items()},
        read_gbps=round(rate / 1e9, 2),
        measured_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        key=key,
    )
    _decided[key] = choice
    stored[key] = {k: v for k, v in choice.to_dict().items() if k != "cached"}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes(path, json.dumps(stored, indent=1).encode("utf-8"), check=lambda tmp: json.loads(tmp.read_bytes()))
    except OSError:
        pass  # a read-only cache folder: the choice holds for this process
    return choice
