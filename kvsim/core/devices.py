"""Waiting for a device: the one place kvsim asks a GPU to finish its queued work."""

from __future__ import annotations

import torch


def sync(device: torch.device | str) -> None:
    """Wait until ``device`` has finished the work queued on it, so a clock read next times that work: a CUDA or
    Apple (mps) GPU runs asynchronously; the CPU finishes each op before returning (nothing to wait for)."""
    kind = torch.device(device).type
    if kind == "cuda":
        torch.cuda.synchronize(device)
    elif kind == "mps":
        torch.mps.synchronize()
