"""The model side of a lane: which weights it runs (the model as loaded, or weight-only INT8/INT4
codes for a ``@w8`` / ``@w4:gG`` spec) and, for a ``spec:K:DRAFT`` lane, its speculative driver.
The simulator calls ``attach`` once per run; lanes with the same weight format share one copy."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from ..caches.speculative import SpeculativeCache
from ..caches.weights import weights_label
from ..core.sampling import Sampling, SimulationError
from ..models.gguf.blocks import BLOCK_BYTES, GGUFBlockLinear, keep_gguf_blocks
from ..models.kernels.quantized_weights import QuantizedLinear, head_format, quantize_model, weight_bytes
from ..models.tokenizer import Tokenizer
from ..models.transformer import Transformer
from .counting import StepCost
from .lane import Lane
from .speculative import SpeculativeLane, make_drafter


def _load_draft(target: Transformer) -> Callable[[str], tuple[Transformer, Tokenizer]]:
    def load(name: str) -> tuple[Transformer, Tokenizer]:
        from ..models.loading import ModelLoadError, load_model

        try:
            loaded = load_model(name, device=target.device.type)
        except ModelLoadError as exc:
            raise SimulationError(f"draft model {name!r}: {exc}") from None
        loaded.model = loaded.model.to(dtype=target.dtype)
        return loaded.model, loaded.tokenizer

    return load


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
    return quantize_model(model, weights["bits"], weights.get("group"), head=not weights.get("fphead"))


def attach(lanes: list[Lane], model: Transformer, tokenizer: Tokenizer, sampling: Sampling) -> None:
    """Give each lane its model (quantized where its spec says) and, for a speculative lane, its driver."""
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
            drafter = make_drafter(lane.cache, own, tokenizer, _load_draft(model))
            lane.driver = SpeculativeLane(own, lane.cache, lane.cache.k, drafter, sampling)


def lane_meta(lane: Lane) -> dict[str, Any]:
    """What a trace's metadata says of a lane's model side."""
    meta: dict[str, Any] = {"weight_bytes": lane.weight_bytes["total"]}
    if lane.spec.weights:
        meta["weights"] = weights_label(lane.spec.weights)
        meta["quantized_weight_bytes"] = lane.weight_bytes["quantized"]
        meta["weight_head"] = head_format(lane.model)  # "Q8_0", or "as loaded" (the bill says which)
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
