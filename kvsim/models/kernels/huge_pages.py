"""Weight matrices in huge pages, where the operating system gives them (Linux's transparent huge pages).

A cached decode step streams every weight once. With 4 KiB pages that is a page-table walk every 4 KiB
of weights; with 2 MiB pages, one every 2 MiB. Most Linux machines enable transparent huge pages only
for memory that asks for them (``madvise``), and torch's CPU allocator does not ask unless
``THP_MEM_ALLOC_ENABLE`` is set before its first allocation. So the column-major weight copies kvsim
makes at load time (``Transformer.use_decode_friendly_layout``) are allocated here: an anonymous
mapping aligned to 2 MiB, advised ``MADV_HUGEPAGE``, seen by torch through ``torch.frombuffer`` (no
copy; the tensor keeps the mapping alive). Measured gain: ``benchmarks/weights/huge_pages.py``.

Where the advice does not exist (macOS, Windows) or the matrix is smaller than one huge page, the
tensor is an ordinary ``torch.empty``: the values are the same either way, only where they live differs.
"""

from __future__ import annotations

import contextlib
import math
import mmap
import os
import threading
from collections.abc import Iterator

import numpy as np
import torch

HUGE_PAGE = 2 << 20  # bytes: x86-64's and arm64's transparent huge page

#: whether weight copies go to huge pages (``KVSIM_HUGE_PAGES=0`` turns it off, for an A/B comparison)
ENABLED = hasattr(mmap, "MADV_HUGEPAGE") and os.environ.get("KVSIM_HUGE_PAGES", "1").strip() != "0"
_choice = threading.local()  # .huge: what ``using`` asked for in this thread (a model's measured choice)


@contextlib.contextmanager
def using(huge: bool) -> Iterator[None]:
    """Within the block, ``empty``'s default (and so ``row_major``'s and ``column_major``'s) is ``huge`` and
    ``ENABLED``, in this thread: a model lays its weights out in the pages measured to stream faster on this host
    (``kvsim.models.kernels.kernel_choice``)."""
    was = getattr(_choice, "huge", None)
    _choice.huge = huge
    try:
        yield
    finally:
        _choice.huge = was


def empty(shape: tuple[int, ...], dtype: torch.dtype, *, huge: bool | None = None) -> torch.Tensor:
    """An uninitialised C-ordered CPU tensor, in huge pages when ``huge`` (default: ``ENABLED``, or what ``using``
    asked for) and the platform has the advice and the tensor spans at least one huge page."""
    if huge is None:
        asked = getattr(_choice, "huge", None)
        huge = ENABLED if asked is None else asked and ENABLED
    numel = math.prod(shape)
    nbytes = numel * torch.empty((), dtype=dtype).element_size()
    if not huge or not hasattr(mmap, "MADV_HUGEPAGE") or nbytes < HUGE_PAGE:
        return torch.empty(shape, dtype=dtype)
    # one huge page more than needed, so the tensor can start on a 2 MiB boundary (the kernel backs
    # only aligned 2 MiB extents of a mapping with huge pages)
    mapping = mmap.mmap(-1, nbytes + HUGE_PAGE, flags=mmap.MAP_PRIVATE)  # shared anonymous memory gets no THP
    try:
        mapping.madvise(mmap.MADV_HUGEPAGE)
    except OSError:  # a kernel without transparent huge pages: ordinary pages, same values
        pass
    address = np.frombuffer(mapping, dtype=np.uint8, count=1).ctypes.data
    offset = -address % HUGE_PAGE
    return torch.frombuffer(mapping, dtype=dtype, count=numel, offset=offset).view(shape)


def row_major(weight: torch.Tensor) -> torch.Tensor:
    """A C-ordered copy of a CPU ``weight`` (same shape and values), in huge pages where ``empty`` gives them.
    Other devices get ``weight.contiguous()``."""
    if weight.device.type != "cpu":
        return weight.contiguous()
    out = empty(tuple(weight.shape), weight.dtype)
    out.copy_(weight)
    return out


def column_major(weight: torch.Tensor) -> torch.Tensor:
    """A column-major copy of a 2-D ``weight`` (same shape and values; (in, out) in memory): the transpose's
    C-ordered copy (``row_major``), transposed back."""
    return row_major(weight.t()).t()


def _smaps_entry(address: int) -> dict[str, str]:
    """The fields of this process's ``/proc/self/smaps`` entry for the mapping holding ``address`` (Linux);
    empty where the system does not say."""
    try:
        with open("/proc/self/smaps", encoding="ascii", errors="replace") as f:
            fields: dict[str, str] | None = None
            for line in f:
                head, _, rest = line.partition(" ")
                if "-" in head and not head.endswith(":"):  # a mapping's first line: "start-end perms ..."
                    if fields is not None:
                        return fields
                    lo, hi = (int(x, 16) for x in head.split("-"))
                    fields = {} if lo <= address < hi else None
                elif fields is not None:
                    fields[head.rstrip(":")] = rest.strip()
            return fields or {}
    except (OSError, ValueError):
        return {}


def is_huge_page_backed(tensor: torch.Tensor) -> bool:
    """Whether some of ``tensor``'s mapping lies in 2 MiB pages now (its ``AnonHugePages`` > 0): the kernel's
    answer to the advice, which it may not follow when memory is fragmented. False where the system does not say."""
    return int(_smaps_entry(tensor.data_ptr()).get("AnonHugePages", "0 kB").split()[0]) > 0


def advised_huge(tensor: torch.Tensor) -> bool:
    """Whether ``tensor``'s mapping carries the huge-page advice (``hg`` among its ``VmFlags``): what kvsim
    asked for, whatever the kernel could give. False where the system does not say."""
    return "hg" in _smaps_entry(tensor.data_ptr()).get("VmFlags", "").split()
