"""The roofline: each recorded step placed by its arithmetic intensity and achieved FLOP/s, and the
same arithmetic for a real model on a real GPU. Pure functions, numpy/stdlib only (no torch, no Qt).

Arithmetic intensity = FLOPs ÷ bytes moved, both from the engine's closed-form counts that every
record carries (``LaneStep.flops_by_component`` / ``bytes_by_component``, see ``kvsim/engine/counting.py``).
Achieved FLOP/s = FLOPs ÷ the step's measured wall time. A roof is ``min(peak, bandwidth × I)``: left of
the ridge point (``peak ÷ bandwidth``) a step cannot go faster than memory feeds it (memory-bound),
right of it the arithmetic units are the limit (compute-bound).

Components, as the records split them:
- ``total``: every FLOP (matmuls + the element-wise estimate) over every byte (weights + K/V read + K/V written);
- ``linear``: the weight matmuls (Q/K/V and output projections, MLP, LM head) over the weights' bytes;
- ``attention``: q·Kᵀ and ·V over the K/V rows read and written.
A component's achieved rate divides its FLOPs by the *whole* step's time (the clock times steps, not
kernels): a lower bound on that component's own rate.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from .hardware import Chip
from .presets import Preset

LINEAR = ("qkv_proj", "out_proj", "mlp", "lm_head")
ATTENTION = ("attn_scores", "attn_values")
COMPONENTS = ("total", "linear", "attention")
COMPONENT_WORDS = {
    "total": "the whole step",
    "linear": "weight matmuls (projections, MLP, LM head)",
    "attention": "attention (q·Kᵀ and ·V)",
}


@dataclass(frozen=True)
class RooflinePoint:
    step: int
    lane: int  # the lane's index in the run
    lane_name: str
    phase: str  # "prefill" | "decode"
    component: str  # one of COMPONENTS
    flops: int
    bytes: int
    seconds: float  # the step's measured wall time
    new_positions: int  # query rows this lane computed this step
    context: int  # key rows it read
    held: int | None = None  # sparse attention (deepseek_v32): the rows it held, of which it read ``context``

    @property
    def intensity(self) -> float:
        """FLOP per byte moved."""
        return self.flops / self.bytes

    @property
    def achieved(self) -> float:
        """FLOP/s: the FLOPs over the step's measured time."""
        return self.flops / self.seconds

    def brief(self, lane_label: str | None = None) -> str:
        """A shorter description: the lane, its rows, intensity and achieved FLOP/s."""
        rows = f"{self.new_positions} row{'s' if self.new_positions != 1 else ''}"
        return f"{lane_label or self.lane_name}: {rows}, {self.intensity:.3g} FLOP/byte, {num(self.achieved)}FLOP/s"

    def describe(self, lane_label: str | None = None) -> str:
        """The point in plain words (the hover text)."""
        label = lane_label or self.lane_name
        rows = f"{self.new_positions} new of {self.context} rows"
        if self.held is not None:  # sparse attention: what a step reads is not what the cache holds
            rows = f"{self.new_positions} new, read {self.context} of {self.held} rows held"
        return (
            f"step {self.step} ({self.phase}, {rows}) · lane {label} · "
            f"{COMPONENT_WORDS[self.component]}: {num(self.flops)}FLOP over {num(self.bytes)}B moved = "
            f"{self.intensity:.3g} FLOP/byte · {num(self.achieved)}FLOP/s achieved in {self.seconds * 1e3:.3g} ms"
        )


def num(x: float) -> str:
    """``3.2e9`` → ``"3.2 G"``: k … E prefixes (a long prefill passes peta-FLOPs)."""
    for unit, scale in (("E", 1e18), ("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= scale:
            return f"{x / scale:.3g} {unit}"
    return f"{x:.3g} "


def ratio(x: float) -> str:
    """An intensity (FLOP/byte) in three digits: ``0.509``, ``295``, ``181 k``."""
    return num(x).strip() if abs(x) >= 1000 else f"{x:.3g}"


def component_counts(flops: dict[str, int], nbytes: dict[str, int], component: str) -> tuple[int, int]:
    """(FLOPs, bytes) of ``component`` from a step's counts by component."""
    if component == "total":
        return sum(flops.values()), sum(nbytes.values())
    if component == "linear":
        return sum(flops.get(c, 0) for c in LINEAR), nbytes.get("weights", 0)
    if component == "attention":
        # a sparse-attention model's indexer keys (read whole every step) are cache reads too
        return sum(flops.get(c, 0) for c in ATTENTION), sum(nbytes.get(c, 0) for c in ("kv_read", "index_read", "kv_write"))
    raise ValueError(f"unknown component {component!r} (known: {', '.join(COMPONENTS)})")


def points_from_records(records: Iterable, components: Iterable[str] = COMPONENTS) -> list[RooflinePoint]:
    """Every (step, lane, component) of ``records`` (``StepRecord``s) as a roofline point. Steps with no
    measured time or nothing counted are left out (they have no place on log axes)."""
    components = tuple(components)
    for c in components:
        if c not in COMPONENTS:
            raise ValueError(f"unknown component {c!r} (known: {', '.join(COMPONENTS)})")
    points = []
    for record in records:
        for index, lane in enumerate(record.lanes):
            seconds = float(lane.wall_ms) / 1e3
            if not seconds > 0:
                continue
            for c in components:
                f, b = component_counts(lane.flops_by_component, lane.bytes_by_component, c)
                if f <= 0 or b <= 0:
                    continue
                points.append(
                    RooflinePoint(
                        step=record.step,
                        lane=index,
                        lane_name=lane.name,
                        phase=record.phase,
                        component=c,
                        flops=int(f),
                        bytes=int(b),
                        seconds=seconds,
                        new_positions=lane.kv_positions,
                        context=lane.context,
                        held=record.n_tokens if getattr(lane, "selected", None) is not None else None,
                    )
                )
    return points


def roof(intensity: float, peak_flops: float, bandwidth: float) -> float:
    """The attainable FLOP/s at ``intensity``: min(peak, bandwidth × intensity)."""
    return min(peak_flops, bandwidth * intensity)


def ridge(peak_flops: float, bandwidth: float) -> float:
    """The ridge point: the intensity (FLOP/byte) where the slope meets the flat roof."""
    return peak_flops / bandwidth


# ---------------------------------------------------------------------------- a preset on a GPU
def preset_counts(
    p: Preset,
    new: int,
    context: int,
    *,
    batch: int = 1,
    weight_bits: float = 16,
    kv_bits: float = 16,
    causal: bool = False,
) -> tuple[dict[str, int], dict[str, int]]:
    """FLOPs and bytes by component of one forward of preset ``p`` over ``new`` positions attending to
    ``context`` rows (per sequence, ``batch`` sequences), by the engine's formulas (``counting.step_cost``),
    with the preset's per-layer windows (a windowed layer reads at most its window) and its MLP kind.
    Weights are read once per step whatever the batch; K/V rows per sequence.

    ``causal=False`` counts the whole T × S score block, as kvsim's own model computes it (masked
    entries included: ``counting.step_cost``); ``causal=True`` counts only the keys each new query
    sees (S - T + i + 1 for the i-th, capped by the layer's window), as a FlashAttention kernel does."""
    if new < 1 or context < new or batch < 1:
        raise ValueError(f"bad step shape: new={new}, context={context}, batch={batch}")
    L, H, Hkv, D = p.layers, p.heads, p.kv_heads, p.head_dim
    dim, hidden, vocab = p.hidden, p.intermediate, p.vocab
    T, B = new, batch
    mlp_mats = 2 if p.arch in ("gpt2", "falcon") else 3
    windows = p.layer_windows or (None,) * L
    S = [context if w is None else min(context, w) for w in windows]  # key rows each layer reads
    # query-key pairs each layer scores, summed over the new rows
    pairs_of = {w: _pairs(T, context, w, causal) for w in set(windows)}
    pairs = [pairs_of[w] for w in windows]
    flops = {
        "qkv_proj": B * L * 2 * T * dim * (H + 2 * Hkv) * D,
        "attn_scores": B * sum(2 * H * n * D for n in pairs),
        "attn_values": B * sum(2 * H * n * D for n in pairs),
        "out_proj": B * L * 2 * T * H * D * dim,
        "mlp": B * L * mlp_mats * 2 * T * dim * hidden,
        "lm_head": B * 2 * dim * vocab,
    }
    norms = 4 if p.arch in ("gemma2", "gemma3") else 2
    flops["elementwise"] = B * (sum(5 * H * n for n in pairs) + L * (norms * 5 * T * dim + T * hidden) + 5 * dim)
    weights = L * (dim * (H + 2 * Hkv) * D + H * D * dim + mlp_mats * dim * hidden) + dim * vocab
    nbytes = {
        "weights": int(weights * weight_bits / 8),
        "kv_read": int(B * sum(2 * Hkv * D * s for s in S) * kv_bits / 8),
        "kv_write": int(B * L * 2 * Hkv * D * T * kv_bits / 8),
    }
    return flops, nbytes


def _pairs(new: int, context: int, window: int | None, causal: bool) -> int:
    """Query-key pairs scored by ``new`` queries (the last positions of ``context``) in one head."""
    if not causal:
        return new * (context if window is None else min(context, window))
    seen = np.arange(context - new + 1, context + 1, dtype=np.int64)  # keys the i-th new query may see
    return int((seen if window is None else np.minimum(seen, window)).sum())


@dataclass(frozen=True)
class Bound:
    """What one step of a preset costs on a chip, by the roofline: the larger of compute and memory time."""

    what: str  # "decode" | "prefill"
    new: int
    context: int
    batch: int
    flops: int
    bytes: int
    weight_bytes: int
    kv_bytes: int
    peak_flops: float
    bandwidth: float
    chip_memory: float = 0.0  # bytes the chip holds (0: unknown)

    @property
    def fits(self) -> bool:
        """Whether the weights and this step's K/V rows fit in the chip's memory (one chip, no offload)."""
        return not self.chip_memory or self.weight_bytes + self.kv_bytes <= self.chip_memory

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes

    @property
    def compute_s(self) -> float:
        return self.flops / self.peak_flops

    @property
    def memory_s(self) -> float:
        return self.bytes / self.bandwidth

    @property
    def time_s(self) -> float:
        """The roofline's lower bound on the step's time: max(FLOPs / peak, bytes / bandwidth)."""
        return max(self.compute_s, self.memory_s)

    @property
    def limit(self) -> str:
        return "memory-bound" if self.memory_s >= self.compute_s else "compute-bound"

    @property
    def tokens_per_s(self) -> float:
        """Tokens out (decode: one per sequence) or in (prefill) per second at the bound."""
        return self.batch * self.new / self.time_s


def preset_bound(
    p: Preset,
    chip: Chip,
    what: str,
    context: int,
    *,
    prompt: int | None = None,
    batch: int = 1,
    weight_bits: float = 16,
    kv_bits: float = 16,
    precision: str = "bf16",
    causal: bool = True,
) -> Bound:
    """A ``"decode"`` step (one new token per sequence at ``context``) or a ``"prefill"`` of ``prompt``
    tokens (default: the whole ``context``) of preset ``p`` on ``chip``; attention counted causally (the
    keys each query sees) unless ``causal=False``. Weights at ``weight_bits`` are read and multiplied at
    ``precision`` (weight-only quantization: fewer bytes, the same tensor-core rate)."""
    if what == "decode":
        new = 1
    elif what == "prefill":
        new = context if prompt is None else prompt
    else:
        raise ValueError(f"what must be 'decode' or 'prefill', got {what!r}")
    flops, nbytes = preset_counts(p, new, context, batch=batch, weight_bits=weight_bits, kv_bits=kv_bits, causal=causal)
    return Bound(
        what=what,
        new=new,
        context=context,
        batch=batch,
        flops=sum(flops.values()),
        bytes=sum(nbytes.values()),
        weight_bytes=nbytes["weights"],
        kv_bytes=nbytes["kv_read"] + nbytes["kv_write"],
        peak_flops=chip.peak_flops(precision),
        bandwidth=chip.bandwidth,
        chip_memory=chip.memory,
    )
