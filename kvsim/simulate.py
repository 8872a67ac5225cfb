"""The simulator: one model, several lanes (cache policies), advanced in lockstep.

Step 0 is the prefill: every lane computes K/V for all prompt positions and produces the first
token. Every later step decodes one token: a lane that reuses its past feeds only the newest token,
the uncached lane feeds the whole sequence again. All lanes continue on the *same* token — sampled
once per step from the reference lane (lane 0) with one seeded uniform draw — so their costs and
outputs stay comparable; each lane also records which token its own logits would have chosen with
that same draw, and how far its logits are from the reference.

    sim = Simulator(model, tokenizer, prompt_ids)
    for record in sim.run(steps=32):     # a generator of frozen StepRecords
        ...
    sim.trace.save("run.kvsim")
"""

from __future__ import annotations

import math
import platform
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import torch

from . import __version__
from .cache import Cache, KVCache, make_cache
from .counting import step_cost
from .model import Transformer
from .tokenizer import Tokenizer
from .trace import LaneStep, StepRecord, Trace

Progress = Callable[[str, int, int], None]  # (lane name, layers done, layers total)


class SimulationError(ValueError):
    """Bad simulator input: empty prompt, too long for the model, unknown lane."""


@dataclass(frozen=True)
class Sampling:
    temperature: float = 0.0  # 0 = greedy
    top_k: int | None = None
    top_p: float | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if not math.isfinite(self.temperature) or self.temperature < 0:
            raise SimulationError(f"temperature must be a number ≥ 0, got {self.temperature}")
        if self.top_k is not None and self.top_k < 1:
            raise SimulationError(f"top-k must be ≥ 1, got {self.top_k}")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise SimulationError(f"top-p must be in (0, 1], got {self.top_p}")


@dataclass(frozen=True)
class LaneSpec:
    name: str
    policy: str
    options: dict[str, object] = field(default_factory=dict)


LANE_PRESETS = {
    "uncached": LaneSpec("uncached", "none"),
    "cached": LaneSpec("cached", "kv"),
}
DEFAULT_LANES = (LANE_PRESETS["uncached"], LANE_PRESETS["cached"])


def parse_lanes(text: str) -> tuple[LaneSpec, ...]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise SimulationError("no lanes given (e.g. --lanes uncached,cached)")
    unknown = [n for n in names if n not in LANE_PRESETS]
    if unknown:
        raise SimulationError(f"unknown lane {unknown[0]!r} (known: {', '.join(LANE_PRESETS)})")
    if len(set(names)) != len(names):
        raise SimulationError(f"lane named twice in {text!r}")
    return tuple(LANE_PRESETS[n] for n in names)


def probabilities(logits: torch.Tensor, sampling: Sampling) -> torch.Tensor:
    """The distribution a sampled token is drawn from (temperature, then top-k, then top-p)."""
    logits = logits.float()
    if sampling.temperature == 0:
        probs = torch.zeros_like(logits)
        probs[int(torch.argmax(logits))] = 1.0
        return probs
    logits = logits / sampling.temperature
    if sampling.top_k is not None and sampling.top_k < logits.numel():
        kth = torch.topk(logits, sampling.top_k).values[-1]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits, dim=-1)
    if sampling.top_p is not None and sampling.top_p < 1:
        sorted_p, order = torch.sort(probs, descending=True)
        keep = torch.cumsum(sorted_p, 0) - sorted_p < sampling.top_p  # always keeps the top token
        probs = torch.zeros_like(probs).scatter(0, order[keep], sorted_p[keep])
        probs = probs / probs.sum()
    return probs


def choose(logits: torch.Tensor, sampling: Sampling, u: float) -> int:
    """The token ``logits`` pick under ``sampling`` with the uniform draw ``u`` (argmax when greedy)."""
    if sampling.temperature == 0:
        return int(torch.argmax(logits))
    return draw(probabilities(logits, sampling), u)


def draw(probs: torch.Tensor, u: float) -> int:
    """Inverse-CDF draw: the same ``u`` on two lanes picks the same token when they agree."""
    cdf = torch.cumsum(probs.double(), 0)
    idx = int(torch.searchsorted(cdf, torch.tensor([u * float(cdf[-1])], dtype=torch.float64), right=True))
    return min(idx, probs.numel() - 1)


class Lane:
    def __init__(self, spec: LaneSpec, cache: Cache) -> None:
        self.spec = spec
        self.cache = cache

    @property
    def name(self) -> str:
        return self.spec.name


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


class Simulator:
    def __init__(self, model: Transformer, tokenizer: Tokenizer, prompt_ids: Sequence[int],
                 lanes: Sequence[LaneSpec] = DEFAULT_LANES, sampling: Sampling = Sampling(),
                 *, model_id: str = "model", prompt_text: str | None = None,
                 record_dtype: type = np.float32, top_k_record: int = 5,
                 progress: Progress | None = None) -> None:
        cfg = model.cfg
        prompt_ids = [int(i) for i in prompt_ids]
        if not prompt_ids:
            raise SimulationError("the prompt is empty: type some text first")
        if len(prompt_ids) > cfg.max_seq_len:
            raise SimulationError(f"the prompt is {len(prompt_ids)} tokens long, longer than the "
                                  f"model's context of {cfg.max_seq_len} tokens")
        bad = [i for i in prompt_ids if not 0 <= i < cfg.vocab_size]
        if bad:
            raise SimulationError(f"token id {bad[0]} is outside the model's vocabulary (0..{cfg.vocab_size - 1})")
        if not lanes:
            raise SimulationError("at least one lane is needed")
        self.model = model
        self.tokenizer = tokenizer
        self.sampling = sampling
        self.lanes = [Lane(spec, make_cache(spec.policy, cfg.n_layers, **spec.options)) for spec in lanes]
        self.progress = progress
        self.record_dtype = record_dtype
        self.top_k_record = top_k_record
        self.tokens: list[int] = list(prompt_ids)
        self.prompt_len = len(prompt_ids)
        self._done = 0  # positions whose K/V every lane that reuses its past holds
        self._generator = torch.Generator().manual_seed(sampling.seed)
        # first-computed rows, to show how far an uncached lane's recomputation drifts from them
        self._history = KVCache(cfg.n_layers) if any(not lane.cache.reuses_past for lane in self.lanes) else None
        self._row_lane = next((i for i, lane in enumerate(self.lanes) if lane.cache.policy == "kv"), 0)
        self.trace = Trace(meta={
            "model_id": model_id,
            "config": cfg.to_dict(),
            "prompt": prompt_text,
            "prompt_ids": list(prompt_ids),
            "prompt_tokens": {str(i): tokenizer.token_text(i) for i in sorted(set(prompt_ids))},
            "sampling": asdict(sampling),
            "lanes": [{"name": s.name, "policy": s.policy, "options": dict(s.options)} for s in lanes],
            "device": str(model.device),
            "dtype": str(model.dtype).replace("torch.", ""),
            "versions": {"kvsim": __version__, "torch": torch.__version__, "numpy": np.__version__,
                         "python": platform.python_version()},
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        })
        self.run_id = uuid.uuid4().hex[:12]

    @property
    def steps_done(self) -> int:
        return len(self.trace.records)

    @property
    def context_left(self) -> int:
        """Decode steps still possible before the next fed position would exceed the context."""
        return self.model.cfg.max_seq_len - len(self.tokens) + 1

    @property
    def ended_with_eos(self) -> bool:
        """The last produced token is the model's end-of-sequence token."""
        eos = getattr(self.tokenizer, "eos_id", None)
        return eos is not None and self.steps_done > 0 and self.tokens[-1] == eos

    def run(self, steps: int, stop_at_eos: bool = True) -> Iterator[StepRecord]:
        """Up to ``steps`` steps; stops early when the context is full or (by default) after the
        model produced its end-of-sequence token, as a chat model ends its answer."""
        if steps <= 0:
            raise SimulationError(f"steps must be ≥ 1, got {steps}")
        for _ in range(steps):
            if self.context_left <= 0 or (stop_at_eos and self.ended_with_eos):
                return
            yield self.step()

    def step(self) -> StepRecord:
        """Advance every lane by one step and return the frozen record of it."""
        if self.context_left <= 0:
            raise SimulationError(f"the model's context of {self.model.cfg.max_seq_len} tokens is full")
        device = self.model.device
        n = len(self.tokens)  # positions 0..n-1 have tokens; K/V of positions < self._done are cached
        step_index = self.steps_done
        phase = "prefill" if step_index == 0 else "decode"
        all_ids = torch.tensor([self.tokens], dtype=torch.long, device=device)  # (1, n)

        # a step that does not complete (cancelled from the progress hook, out of memory…) leaves
        # every cache as it was, so the run can go on
        try:
            record = self._step(all_ids, n, step_index, phase)
        except BaseException:
            for cache in [lane.cache for lane in self.lanes] + [self._history] * (self._history is not None):
                cache.truncate(self._done)
            raise
        self._done = n
        self.tokens.append(record.token_id)
        self.trace.records.append(record)
        return record

    def _step(self, all_ids: torch.Tensor, n: int, step_index: int, phase: str) -> StepRecord:
        cfg = self.model.cfg
        # 1. every lane runs its forward over what its policy must compute
        outputs, timings, fed = self._forward_lanes(all_ids, n)

        # 2. the token: one uniform draw, applied to the reference lane (and, to compare, to each lane)
        u = float(torch.rand((), generator=self._generator)) if self.sampling.temperature > 0 else 0.5
        ref_logits = outputs[0].logits[0, -1].float()
        token_id = choose(ref_logits, self.sampling, u)

        # 3. the step's new rows: taken from an exact caching lane (only new rows computed)
        new_t = n - self._done
        src = outputs[self._row_lane]
        q_new, k_new, v_new = (x[:, 0, :, -new_t:] for x in (src.q, src.k, src.v))  # (L, H, T, D)
        recompute_diffs = [self._recompute_diff(out) if not lane.cache.reuses_past else None
                           for lane, out in zip(self.lanes, outputs, strict=True)]
        if self._history is not None:
            positions = torch.arange(self._done, n, device=k_new.device)
            for layer in range(cfg.n_layers):
                self._history.update(layer, k_new[layer][None], v_new[layer][None], positions)

        # 4. per-lane accounting
        lane_steps = []
        elem = self.model.dtype.itemsize
        for lane, out, ms, t, rdiff in zip(self.lanes, outputs, timings, fed, recompute_diffs, strict=True):
            context = int(lane.cache.key_positions(0).numel())
            cost = step_cost(cfg, new=t, context=context, out=1, dtype_bytes=elem)
            logits = out.logits[0, -1].float()
            # candidates as the sampler sees them (tempered, top-k/top-p), plain softmax when greedy
            shown = probabilities(logits, self.sampling) if self.sampling.temperature > 0 \
                else torch.softmax(logits, -1)
            top = torch.topk(shown, min(self.top_k_record, shown.numel()))
            first_key = int(lane.cache.key_positions(0)[0])
            if cfg.sliding_window is not None:  # the newest query (position n-1) sees keys > n-1-W
                first_key = max(first_key, n - cfg.sliding_window)
            lane_steps.append(LaneStep(
                name=lane.name, policy=lane.cache.policy, kv_positions=t, context=context,
                flops=cost.matmul_flops, flops_by_component=dict(cost.flops),
                bytes_by_component=dict(cost.bytes), wall_ms=ms,
                cache_tokens=lane.cache.n_tokens, cache_bytes=lane.cache.nbytes,
                logit_diff=float((logits - ref_logits).abs().max()),
                token_id=choose(logits, self.sampling, u),
                top_ids=tuple(int(i) for i in top.indices), top_probs=tuple(float(p) for p in top.values),
                recompute_diff=rdiff, first_key=first_key,
            ))

        # 5. freeze the record, then advance the sequence
        as_np = lambda x: x.detach().float().cpu().numpy().astype(self.record_dtype)  # noqa: E731
        return StepRecord(
            run_id=self.run_id, step=step_index, phase=phase,
            positions=np.arange(self._done, n, dtype=np.int64),
            input_ids=np.asarray(self.tokens[self._done:n], dtype=np.int64),
            token_id=token_id, token=self.tokenizer.token_text(token_id),
            q=as_np(q_new), k=as_np(k_new), v=as_np(v_new), lanes=tuple(lane_steps),
        )

    def _forward_lanes(self, all_ids: torch.Tensor, n: int):
        device = self.model.device
        outputs, timings, fed = [], [], []
        for lane in self.lanes:
            start = self._done if lane.cache.reuses_past else 0
            ids = all_ids[:, start:n]
            positions = torch.arange(start, n, device=device)
            hook, in_hook = None, [0.0]
            if self.progress is not None:
                def hook(done: int, total: int, name: str = lane.name, spent: list[float] = in_hook) -> None:
                    t = time.perf_counter()
                    self.progress(name, done, total)
                    spent[0] += time.perf_counter() - t  # the observer's time is not the lane's

            _sync(device)
            t0 = time.perf_counter()
            out = self.model(ids, positions, lane.cache, record=True, last_only=True, layer_hook=hook)
            _sync(device)
            timings.append((time.perf_counter() - t0 - in_hook[0]) * 1e3)
            outputs.append(out)
            fed.append(n - start)
        return outputs, timings, fed

    def _recompute_diff(self, out) -> float | None:
        """How far an uncached lane's recomputed old rows are from when they were first computed."""
        old = self._history.n_tokens if self._history is not None else 0
        if old == 0:
            return None
        diff = 0.0
        for layer in range(self.model.cfg.n_layers):
            k_first, v_first = self._history.stored(layer)  # (1, H_kv, old, D)
            diff = max(diff, float((out.k[layer, :, :, :old] - k_first).abs().max()),
                       float((out.v[layer, :, :, :old] - v_first).abs().max()))
        return diff


def summarize(trace: Trace) -> dict[str, object]:
    """Whole-run figures: did every lane choose the reference's tokens, how far apart, TTFT/ITL."""
    records = trace.records
    lanes = [lane.name for lane in records[0].lanes] if records else []
    per_lane: dict[str, dict[str, object]] = {}
    for name in lanes:
        steps = [r.lane(name) for r in records]
        decode_ms = [s.wall_ms for s in steps[1:]]
        per_lane[name] = {
            "tokens_identical": all(s.token_id == r.token_id for s, r in zip(steps, records, strict=True)),
            "max_abs_logit_diff": max(s.logit_diff for s in steps),
            "ttft_ms": steps[0].wall_ms,
            "itl_ms": float(np.mean(decode_ms)) if decode_ms else None,
            "itl_median_ms": float(np.median(decode_ms)) if decode_ms else None,
            "kv_positions_total": sum(s.kv_positions for s in steps),
            "flops_total": sum(s.flops for s in steps),
            "cache_bytes": steps[-1].cache_bytes,
            "max_recompute_diff": max((s.recompute_diff for s in steps if s.recompute_diff is not None),
                                      default=None),
        }
    return {
        "steps": len(records),
        "tokens_identical": all(v["tokens_identical"] for v in per_lane.values()),
        "max_abs_logit_diff": max((v["max_abs_logit_diff"] for v in per_lane.values()), default=0.0),
        "ttft_ms": {k: v["ttft_ms"] for k, v in per_lane.items()},
        "itl_ms": {k: v["itl_ms"] for k, v in per_lane.items()},
        "lanes": per_lane,
    }
