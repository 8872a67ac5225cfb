"""The model side of a lane: which weights it runs (the model as loaded, or weight-only INT8/INT4
codes for a ``@w8`` / ``@w4:gG`` spec) and, for a ``spec:K:DRAFT`` lane, its speculative driver.
The simulator calls ``attach`` once per run; lanes with the same weight format share one copy, lanes that draft
with the same model (``spec:K:model:NAME``) share one load of it, and the copies' bytes are planned and checked
against the memory available before any is made (``plan_copies``, ``check_copies``)."""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable
from typing import Any

import torch

from ..caches import blocks
from ..caches.speculative import SpeculativeCache
from ..caches.weights import weights_label
from ..core.sampling import Sampling, SimulationError
from ..models.gguf.blocks import BLOCK_BYTES, GGUFBlockLinear, keep_gguf_blocks
from ..models.kernels.quantized_weights import QuantizedLinear, head_format, quantize_model, quantized_bytes, weight_bytes
from ..models.tokenizer import Tokenizer
from ..models.transformer import Transformer
from .counting import StepCost
from .lane import Lane
from .speculative import SpeculativeLane, make_drafter

#: the lanes' model copies may take at most this share of the memory free when the run starts (the rest: the
#: caches, the activations, the app)
COPY_SHARE = 0.5


def _load_draft(target: Transformer) -> Callable[[str], tuple[Transformer, Tokenizer]]:
    """Loads a draft model by name, once per name: lanes that draft with the same model share it (each
    lane's drafter keeps its own KV cache over it)."""
    loaded_models: dict[str, tuple[Transformer, Tokenizer]] = {}

    def load(name: str) -> tuple[Transformer, Tokenizer]:
        from ..models.loading import ModelLoadError, load_model

        if name not in loaded_models:
            try:
                loaded = load_model(name, device=target.device.type)
            except ModelLoadError as exc:
                raise SimulationError(f"draft model {name!r}: {exc}") from None
            loaded.model = loaded.model.to(dtype=target.dtype)
            loaded_models[name] = (loaded.model, loaded.tokenizer)
        return loaded_models[name]

    return load


def _copy_bytes(model: Transformer, weights: dict[str, Any]) -> int:
    """The bytes a weight format's copy of ``model`` takes while it is made (``_weights_model``)."""
    if weights.get("format") == "bf16":  # a whole copy first, then converted tensor by tensor
        return int(weight_bytes(model)["total"])
    if weights.get("format") == "gguf":  # at most the file's bytes (its projections' blocks are kept)
        path = getattr(model, "gguf_path", None)
        try:
            return os.stat(path).st_size if path is not None else 0
        except OSError:
            return 0
    return quantized_bytes(
        model, weights["bits"], weights.get("group"), head=not weights.get("fphead"), blocks=weights.get("blocks")
    )


def plan_copies(lanes: list[Lane], model: Transformer) -> list[tuple[str, int | None]]:
    """What the lanes will load besides ``model``: (what, bytes) per weight format (one copy each, shared by its
    lanes) and per draft model (one load each, shared); bytes None where not known before loading."""
    planned: dict[str, int | None] = {}
    for lane in lanes:
        w = lane.spec.weights
        if w and f"@{weights_label(w)}" not in planned:
            planned[f"@{weights_label(w)}"] = _copy_bytes(model, w)
        cache = lane.cache
        if isinstance(cache, SpeculativeCache) and cache.draft == "model" and cache.draft_model:
            name = f"model:{cache.draft_model}"
            if name not in planned:
                from ..models.loading import planned_bytes

                planned[name] = planned_bytes(cache.draft_model, torch.empty((), dtype=model.dtype).element_size())
    return list(planned.items())


def free_memory(device: torch.device) -> int | None:
    """Bytes free where a model copy on ``device`` goes: the GPU's free memory, else the machine's available memory."""
    if device.type == "cuda":
        try:
            return int(torch.cuda.mem_get_info(device)[0])
        except (RuntimeError, AssertionError):
            return None
    return blocks.available_memory()


def check_copies(planned: list[tuple[str, int | None]], device: torch.device) -> None:
    """``SimulationError`` (one line) when the planned copies would take more than ``COPY_SHARE`` of the memory free."""
    need = sum(b for _, b in planned if b)
    if not need:
        return
    free = free_memory(device)
    if free is None or need <= COPY_SHARE * free:
        return
    parts = sorted(((b, what) for what, b in planned if b), reverse=True)
    shown = ", ".join(f"{what} {b / 1e9:,.2f} GB" for b, what in parts[:4]) + (
        f" and {len(parts) - 4} more" if len(parts) > 4 else ""
    )
    raise SimulationError(
        f"the lanes' model copies need {need / 1e9:,.2f} GB ({shown}), more than {COPY_SHARE:.0%} of the memory "
        f"free here ({free / 1e9:,.2f} GB): fewer weight formats (@w…) or draft models"
    )


def _weights_model(model: Transformer, weights: dict[str, Any]) -> Transformer:
    if weights.get("format") == "bf16":  # every weight in bfloat16 (kvsim.models.precision)
        from ..models.precision import bf16_model

        return bf16_model(model)
    if weights.get("format") == "gguf":
        path = getattr(model, "gguf_path", None)
        if path is None:
            raise ValueError("@gguf keeps a .gguf file's own blocks, and this model was not loaded from one")
        kept, kinds = keep_gguf_blocks(model, path)
        if not kinds:
            raise ValueError(f"{path} has no projections in a block format kept as it is ({', '.join(BLOCK_BYTES)})")
        return kept
    return quantize_model(
        model, weights["bits"], weights.get("group"), head=not weights.get("fphead"), blocks=weights.get("blocks")
    )


def attach(lanes: list[Lane], model: Transformer, tokenizer: Tokenizer, sampling: Sampling) -> None:
    """Give each lane its model (quantized where its spec says) and, for a speculative lane, its driver."""
    check_copies(plan_copies(lanes, model), model.device)
    load_draft = _load_draft(model)
    shared: dict[str, Transformer] = {}
    for lane in lanes:
        w = lane.spec.weights
        own = model
        if w:
            key = weights_label(w)
            if key not in shared:
                try:
                    shared[key] = _weights_model(model, w)
                except ValueError as exc:
                    raise SimulationError(f"lane {lane.name!r}: {exc}") from None
            own = shared[key]
        lane.model = own
        lane.weight_bytes = weight_bytes(own)
        if isinstance(lane.cache, SpeculativeCache):
            drafter = make_drafter(lane.cache, own, tokenizer, load_draft)
            lane.driver = SpeculativeLane(own, lane.cache, lane.cache.k, drafter, sampling)


def lane_meta(lane: Lane) -> dict[str, Any]:
    """What a trace's metadata says of a lane's model side."""
    meta: dict[str, Any] = {"weight_bytes": lane.weight_bytes["total"]}
    if lane.spec.weights:
        meta["weights"] = weights_label(lane.spec.weights)
        meta["quantized_weight_bytes"] = lane.weight_bytes["quantized"]
        meta["weight_head"] = head_format(lane.model)  # "Q8_0", "Q6_K" or "as loaded" (the bill says which)
    if lane.driver is not None:
        meta["draft"] = lane.driver.drafter.label
        meta["draft_k"] = lane.driver.k
    return meta


#: per model (and element size): its quantized projections' full-precision and stored bytes, or None when it has
#: none — a lane's model does not change during a run, and walking its ~300 modules cost ~1 ms a step (SmolLM2)
_STORED: weakref.WeakKeyDictionary[Transformer, dict[int, tuple[int, int] | None]] = weakref.WeakKeyDictionary()


def _quantized_bytes(model: Transformer, elem: int) -> tuple[int, int] | None:
    by_elem = _STORED.setdefault(model, {})
    if elem not in by_elem:
        layers = [m for m in model.modules() if isinstance(m, QuantizedLinear | GGUFBlockLinear)]
        full = sum(m.in_features * m.out_features * elem for m in layers)
        stored = sum(
            m.raw.numel() if isinstance(m, GGUFBlockLinear) else m.codes.numel() * m.codes.element_size() + m.scales.numel() * 4
            for m in layers
        )
        by_elem[elem] = (full, stored) if layers else None
    return by_elem[elem]


def with_weight_bytes(cost: StepCost, model: Transformer, elem: int) -> StepCost:
    """A step's cost with its weight bytes as this lane's model stores them: each quantized projection's
    codes + scales in place of its full-precision matrix (the rest of the formula unchanged)."""
    quantized = _quantized_bytes(model, elem)
    if quantized is None or not cost.bytes.get("weights"):
        return cost
    full, stored = quantized
    return StepCost(flops=cost.flops, bytes={**cost.bytes, "weights": cost.bytes["weights"] - full + stored})
