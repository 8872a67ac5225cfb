"""What a model file must hold: every tensor used, none ignored, every shape the config's.

Both loaders (checkpoint directories, GGUF files) describe the tensors a config implies, by name
and shape in the file's own layout, and compare them with the file's table of contents *before*
reading any data or building the model: a tensor kvsim would not use, a missing one or a wrong
shape is a ``ModelLoadError`` that names it. A config whose numbers describe more weights than
the file holds is refused the same way, so no allocation is ever sized by a damaged header.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import torch

from .base import ModelLoadError

Shape = tuple[int, ...]


def _names(names: Iterable[str], limit: int = 4) -> str:
    names = sorted(names)
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def check_tensor_set(
    source: str,
    expected: Mapping[str, Shape],
    found: Mapping[str, Shape],
    ignorable: Iterable[str] = (),
    what: str = "the config",
) -> None:
    """``found`` (the file's tensors) must be exactly ``expected`` (plus the ``ignorable`` names the
    caller has checked itself), with the same shapes. The error names the tensors at fault."""
    extra = set(found) - set(expected) - set(ignorable)
    if extra:
        raise ModelLoadError(
            f"{source}: the weights hold tensors kvsim would ignore: {_names(extra)} "
            f"(supported tensors only: a file with more in it is not a model kvsim can run exactly)"
        )
    missing = set(expected) - set(found)
    if missing:
        raise ModelLoadError(f"{source}: the weights lack tensor {_names(missing)} ({what} needs it)")
    for name, shape in expected.items():
        if tuple(found[name]) != tuple(shape):
            raise ModelLoadError(f"{source}: tensor {name!r} has shape {tuple(found[name])}, {what} implies {tuple(shape)}")


def check_size(source: str, n_params: int, found: Mapping[str, Shape], what: str = "the config") -> None:
    """Refuse a config that describes far more parameters than the file's tensors hold (a damaged
    header: 10^4 layers over a 2-layer file), before anything is built from its numbers. Smaller
    mismatches are named tensor by tensor by ``check_tensor_set``."""
    held = sum(math.prod(shape) for shape in found.values())
    if n_params > 2 * held:
        raise ModelLoadError(
            f"{source}: {what} describes {n_params:,} parameters but the weights hold only "
            f"{held:,} values (a damaged or mismatched config)"
        )


def check_finite(source: str, name: str, tensor: torch.Tensor) -> None:
    # a finite sum proves every value finite (NaN and ±inf propagate into it), at a fraction of the
    # cost of a per-element check (Gemma 3's 168M-value embedding: ~0.1 s against ~3 s); only a sum
    # that overflowed or met a bad value needs the element-wise look
    if bool(torch.isfinite(tensor.sum())):
        return
    if not bool(torch.isfinite(tensor).all()):
        raise ModelLoadError(f"{source}: tensor {name!r} holds values that are not numbers (NaN or infinity)")
