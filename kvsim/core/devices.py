"""The machine kvsim runs on: the one place it asks a GPU to finish its queued work, and the processor's name."""

from __future__ import annotations

import platform
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch is imported when a device is waited for, not with this module (quick commands)
    import torch


def cpu_name() -> str:
    """The processor's model name (from /proc/cpuinfo on Linux, else ``platform``)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown processor"


def sync(device: torch.device | str) -> None:
    """Wait until ``device`` has finished the work queued on it, so a clock read next times that work: a CUDA or
    Apple (mps) GPU runs asynchronously; the CPU finishes each op before returning (nothing to wait for)."""
    import torch

    kind = torch.device(device).type
    if kind == "cuda":
        torch.cuda.synchronize(device)
    elif kind == "mps":
        torch.mps.synchronize()
