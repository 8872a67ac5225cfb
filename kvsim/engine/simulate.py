"""The simulator: one model, several lanes (cache policies), advanced in lockstep.

Step 0 is the prefill: every lane computes K/V for all prompt positions and produces the first
token. Every later step decodes one token: a lane that reuses its past feeds only the newest token,
the uncached lane feeds the whole sequence again. All lanes continue on the *same* token — sampled
once per step from the reference lane (the first, unless another is named) with one seeded draw — so their costs and
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
from dataclasses import asdict

import numpy as np
import torch

from .. import __version__
from ..caches import KVCache, LaneSpec, make_cache, parse_lanes, visibility
from ..core.devices import sync
from ..core.sampling import Sampling, SimulationError, argmax, choose, draw, probabilities, top, top_of_exp
from ..models.tokenizer import Tokenizer
from ..models.transformer import ForwardOutput, Transformer
from .counting import step_cost
from .lane import Lane, lane_spans
from .model_side import attach, lane_meta, with_weight_bytes
from .records import DraftRows, HeadRows, LaneRows, LaneStep, SelectedRows, StepRecord, state_tile
from .speculative import SpecStep
from .summary import RunSummary, summarize  # noqa: F401 - part of the simulator's API
from .trace import Trace

__all__ = ["DEFAULT_LANES", "LaneSpec", "Sampling", "SimulationError", "Simulator", "parse_lanes", "summarize"]

Progress = Callable[[str, int, int], None]  # (lane name, layers done, layers total)
AsNumpy = Callable[[torch.Tensor], np.ndarray]  # a step's tensor as the record stores it

DEFAULT_LANES = parse_lanes("uncached,cached")


def _draft_rows(spec: SpecStep | None, as_np: AsNumpy) -> DraftRows | None:
    """The drafted rows a speculative lane's check computed this step (None: no check, or no draft)."""
    if spec is None or spec.draft_rows is None or not spec.draft_ids:
        return None
    q, k, v = (as_np(x[:, 0]) for x in spec.draft_rows)
    d = len(spec.draft_ids)
    return DraftRows(
        positions=np.arange(spec.draft_from, spec.draft_from + d, dtype=np.int64),
        token_ids=np.asarray(spec.draft_ids, dtype=np.int64),
        k=k,
        v=v,
        q=q,
    )


class Simulator:
    """One model, N lanes. The reference lane (the first unless ``reference`` names another)
    picks the token every lane continues on and is what logit differences are measured from."""

    def __init__(
        self,
        model: Transformer,
        tokenizer: Tokenizer,
        prompt_ids: Sequence[int],
        lanes: Sequence[LaneSpec] = DEFAULT_LANES,
        sampling: Sampling | None = None,
        *,
        reference: str | None = None,
        free_running: bool = False,
        model_id: str = "model",
        prompt_text: str | None = None,
        record_dtype: type = np.float32,
        top_k_record: int = 5,
        progress: Progress | None = None,
        repeats: int = 1,
        warmup: bool = True,
    ) -> None:
        cfg = model.cfg
        prompt_ids = [int(i) for i in prompt_ids]
        if not prompt_ids:
            raise SimulationError("the prompt is empty: type some text first")
        if len(prompt_ids) > cfg.max_seq_len:
            raise SimulationError(
                f"the prompt is {len(prompt_ids)} tokens long, longer than the model's context of {cfg.max_seq_len} tokens"
            )
        bad = [i for i in prompt_ids if not 0 <= i < cfg.vocab_size]
        if bad:
            raise SimulationError(f"token id {bad[0]} is outside the model's vocabulary (0..{cfg.vocab_size - 1})")
        if not lanes:
            raise SimulationError("at least one lane is needed")
        if not isinstance(repeats, int) or not 1 <= repeats <= 100:
            raise SimulationError(f"repeats must be a whole number from 1 to 100, got {repeats!r}")
        names = [spec.name for spec in lanes]
        if len(set(names)) != len(names):
            raise SimulationError(f"lane names must differ, got {names}")
        if reference is not None and reference not in names:
            raise SimulationError(f"reference lane {reference!r} is not one of the lanes ({', '.join(names)})")
        self.model = model
        self.tokenizer = tokenizer
        self.sampling = sampling = sampling if sampling is not None else Sampling()
        # the model's own window of each layer: the kv cache keeps only that many rows there (Gemma 3's local layers)
        self._layer_windows = tuple(cfg.window_of(i) for i in range(cfg.n_layers))
        self.lanes = [Lane(spec, make_cache(spec, cfg.n_layers, self._layer_windows)) for spec in lanes]
        if cfg.latent:  # a latent cache: the policies that store K and V per head do not apply (yet)
            for lane in self.lanes:
                if not lane.cache.holds_latent or lane.spec.weights:
                    raise SimulationError(
                        f"lane {lane.name!r}: a latent-attention ({cfg.family}) model caches one latent per token and "
                        "layer; only the lanes none and kv run on it (this one keeps K and V per head)"
                    )
        if cfg.family == "qwen3_next":  # a hybrid: its recurrent layers' states are held by a cache that holds them
            for lane in self.lanes:
                if (lane.cache.reuses_past and not lane.cache.holds_state) or lane.spec.weights:
                    raise SimulationError(
                        f"lane {lane.name!r}: a hybrid linear-attention (qwen3_next) model's Gated DeltaNet layers "
                        "hold a recurrent state; only the lanes none and kv run on it"
                    )
        attach(self.lanes, model, tokenizer, sampling)  # quantized weights (@w8, @w4), speculative drivers (spec:K:DRAFT)
        self._itemsize = [lane.model.dtype.itemsize for lane in self.lanes]  # bytes of a weight and a row, per lane
        self.reference = names.index(reference) if reference is not None else 0
        self.progress = progress
        self.record_dtype = record_dtype
        self.top_k_record = top_k_record
        self.tokens: list[int] = list(prompt_ids)  # the reference lane's sequence (the record's text)
        # free-running: each lane continues on its own choice, so each has its own sequence
        self.free_running = free_running
        self.lane_tokens = [list(prompt_ids) for _ in lanes] if free_running else None
        self.prompt_len = len(prompt_ids)
        self._texts: dict[int, str] = {}  # token id → its text (_token_text)
        self._ids_from = 0  # the first position of the step's token tensor (Simulator.step)
        self._done = 0  # positions whose K/V every lane that reuses its past holds
        self._generator = torch.Generator().manual_seed(sampling.seed)
        # first-computed rows, to show how far an uncached lane's recomputation drifts from them
        self._history = KVCache(cfg.n_layers) if any(not lane.cache.reuses_past for lane in self.lanes) else None
        # the record's shared rows are what an exact cache holds: from the first exact lane that
        # reuses its past (it computes only the new rows), else from any exact lane
        exact = [i for i, lane in enumerate(self.lanes) if not lane.info.lossy]
        caching = [i for i in exact if self.lanes[i].cache.reuses_past]
        self._row_lane = (caching or exact or [self.reference])[0]
        if free_running:  # the shared rows must be those of the record's text: the reference's own
            self._row_lane = self.reference
        self.trace = Trace(
            meta={
                "model_id": model_id,
                "config": cfg.to_dict(),
                "prompt": prompt_text,
                "prompt_ids": list(prompt_ids),
                "prompt_tokens": {str(i): tokenizer.token_text(i) for i in sorted(set(prompt_ids))},
                "sampling": asdict(sampling),
                "lanes": [
                    {
                        "name": lane.name,
                        "policy": lane.spec.policy,
                        "options": dict(lane.spec.options),
                        **lane.info.to_dict(),
                        **lane_meta(lane),
                    }
                    for lane in self.lanes
                ],
                "reference": names[self.reference],
                "free_running": free_running,
                "device": str(model.device),
                "dtype": str(model.dtype).replace("torch.", ""),
                # the kernel of the decode steps' products, as the weights were laid out (kvsim.models.kernels.row_matmul)
                "one_row_matmul": model.one_row_kernel,
                # the weights' copies asked for 2 MiB pages (kvsim.models.kernels.huge_pages), where measured faster
                "huge_page_weights": model.huge_page_weights and model.device.type == "cpu",
                # how both were chosen: measured on the model's matrices, cached or forced, and the figures
                # (kvsim.models.kernels.kernel_choice); None where nothing was measured (GPUs, bf16)
                "one_row_choice": model.kernel_choice.to_dict() if model.kernel_choice is not None else None,
                "versions": {
                    "kvsim": __version__,
                    "torch": torch.__version__,
                    "numpy": np.__version__,
                    "python": platform.python_version(),
                },
                "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            }
        )
        self.run_id = uuid.uuid4().hex[:12]
        self.repeats = repeats
        if warmup:
            with torch.no_grad():
                self._warm_up(torch.tensor([prompt_ids], dtype=torch.long, device=model.device), len(prompt_ids))
        self.keep_records = True  # False: records are yielded, not kept (a long CLI run without --save)
        self._steps_done = 0

    @property
    def steps_done(self) -> int:
        return self._steps_done

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
        # the tokens some lane feeds this step: from the first not cached by every lane (a long run's decode step
        # builds one token's tensor, not the whole sequence's); a lane that recomputes its past needs them all
        first = self._done if all(lane.cache.reuses_past for lane in self.lanes) else 0
        all_ids = torch.tensor([self.tokens[first:]], dtype=torch.long, device=device)  # (1, n - first)
        self._ids_from = first

        # a step that does not complete (cancelled from the progress hook, out of memory…) leaves
        # every cache as it was, so the run can go on
        try:
            record = self._step(all_ids, n, step_index, phase)
        except BaseException:
            for cache in [lane.cache for lane in self.lanes] + ([self._history] if self._history is not None else []):
                cache.truncate(self._done)
            for lane in self.lanes:
                if lane.mirror is not None:
                    lane.mirror.truncate(self._done)
            raise
        self._done = n
        self.tokens.append(record.token_id)
        if self.lane_tokens is not None:
            for own, lane_step in zip(self.lane_tokens, record.lanes, strict=True):
                own.append(lane_step.token_id)
        self._steps_done += 1
        if self.keep_records:
            self.trace.records.append(record)
        return record

    def _step(self, all_ids: torch.Tensor, n: int, step_index: int, phase: str) -> StepRecord:
        cfg = self.model.cfg
        # 1. every lane runs its forward over what its policy must compute
        outputs, timings, fed = self._forward_lanes(all_ids, n)

        # 2. the token: one uniform draw, applied to the reference lane (and, to compare, to each lane)
        u = float(torch.rand((), generator=self._generator)) if self.sampling.temperature > 0 else 0.5
        ref_logits = outputs[self.reference].logits[0, -1].float()
        for lane, out in zip(self.lanes, outputs, strict=True):
            # finite iff the smallest and the largest are (NaN propagates through both): one pass, no copy (~7 µs on a
            # 49,152-entry vocabulary; |x|'s amax ~25, isfinite().all() ~125-300)
            low, high = torch.aminmax(out.logits[0, -1])
            if not (math.isfinite(low) and math.isfinite(high)):
                raise SimulationError(
                    f"lane {lane.name!r}: the model produced logits that are not numbers "
                    "(NaN or infinity): its weights are damaged or out of range"
                )
        token_id = choose(ref_logits, self.sampling, u)
        ref_logp = torch.log_softmax(ref_logits, -1)
        ref_p: torch.Tensor | None = None  # its probabilities, computed when a lane needs them all (sampling, KL)

        # 3. the step's new rows: taken from an exact lane (a caching one computes only new rows)
        new_t = n - self._done
        src = outputs[self._row_lane]
        q_new, k_new, v_new = (x[:, 0, :, -new_t:] for x in src.rows())  # (L, H, T, D)
        # an uncached lane's recomputed rows against the first-computed ones (of the same text only)
        recompute_diffs = [
            self._recompute_diff(out) if not lane.cache.reuses_past and self._same_text(i) else None
            for i, (lane, out) in enumerate(zip(self.lanes, outputs, strict=True))
        ]
        if self._history is not None:
            positions = torch.arange(self._done, n, device=k_new.device)
            for layer in range(cfg.n_layers):
                self._history.update(layer, k_new[layer][None], v_new[layer][None], positions)

        # 4. per-lane accounting, and the rows/positions of lanes that differ from the shared ones
        as_np = lambda x: x.detach().float().cpu().numpy().astype(self.record_dtype)  # noqa: E731
        lane_steps = []
        for i, (lane, out, ms, t, rdiff) in enumerate(zip(self.lanes, outputs, timings, fed, recompute_diffs, strict=True)):
            elem = self._itemsize[i]  # a @bf16 lane reads 2-byte weights and rows
            key_pos = lane.cache.key_positions(lane.cache.record_layer).detach().cpu().numpy()
            spec = lane.driver.last if lane.driver is not None else None
            if spec is not None:  # rows it accepted ahead of the run are not the sequence's yet
                key_pos = key_pos[key_pos < n]
            context = int(key_pos.shape[-1])  # the rows each head read
            if key_pos.ndim == 2:  # heads hold different rows (eviction by attention): spans of their union
                key_pos = np.unique(key_pos)
                key_pos = key_pos[key_pos < n]  # a head holding fewer rows is padded past every query (adakv)
            selected, per_layer = _selected_rows(out, new_t)  # sparse attention: the rows each query read of those held
            read = sum(per_layer) if per_layer else None
            cost = step_cost(cfg, new=t, context=context, out=1, dtype_bytes=elem, read=read) if spec is None else spec.cost
            if per_layer:  # the keys it read: the most any layer's queries read, not every row it holds
                context = max(per_layer)
            assert cost is not None, "a speculative lane's step always records its cost"
            cost = with_weight_bytes(cost, lane.model, elem)
            logits = out.logits[0, -1].float()
            is_ref = i == self.reference  # its log-probabilities are the reference's: computed once
            logp = ref_logp if is_ref else torch.log_softmax(logits, -1)
            # candidates as the sampler sees them (tempered, top-k/top-p), plain softmax when greedy;
            # the lane's own choice is drawn from that same distribution (choose() would rebuild it)
            k = min(self.top_k_record, logits.numel())
            if self.sampling.temperature > 0:
                shown = probabilities(logits, self.sampling)
                own_token = draw(shown, u)
                top_probs, top_ids = top(shown, k)  # torch.topk's answer
            else:  # softmax as exp(log-softmax): the k likeliest's exponentials only (torch.topk(logp.exp(), k)'s answer)
                top_probs, top_ids = top_of_exp(logp, k)
                own_token = token_id if is_ref else argmax(logits)  # the reference's: choose()'s argmax
            seen = key_pos[
                visibility(np.array([n - 1]), key_pos, cfg.sliding_window, lane.cache.mask_window, lane.cache.mask_sinks)[0]
            ]
            first_key = int(seen[0]) if seen.size else n - 1  # the lowest position the newest query sees
            payload, overhead = lane.cache.bytes_split()
            kl = 0.0  # KL(ref ‖ lane), nats
            if not is_ref:
                ref_p = ref_logp.exp() if ref_p is None else ref_p
                kl = float((ref_p * (ref_logp - logp)).sum().clamp_min(0.0))
            held, reason = _head_rows(lane)
            lane_steps.append(
                LaneStep(
                    name=lane.name,
                    policy=lane.spec.policy,
                    kv_positions=t,
                    context=context,
                    flops=cost.matmul_flops,
                    flops_by_component=dict(cost.flops),
                    bytes_by_component=dict(cost.bytes),
                    wall_ms=ms[0],
                    wall_ms_min=ms[1] if self.repeats > 1 else None,
                    wall_ms_max=ms[2] if self.repeats > 1 else None,
                    cache_tokens=lane.cache.n_tokens,
                    cache_bytes=payload + overhead,
                    logit_diff=0.0 if is_ref else float((logits - ref_logits).abs().max()),
                    token_id=own_token,
                    top_ids=tuple(top_ids.tolist()),
                    top_probs=tuple(top_probs.tolist()),
                    recompute_diff=rdiff,
                    first_key=first_key,
                    spans=lane_spans(key_pos, n),
                    cache_overhead_bytes=overhead,
                    kl_div=kl,
                    ref_logprob=min(0.0, float(logp[token_id])),
                    rows=self._own_rows(i, lane, out, new_t, as_np),
                    held=held,
                    evict_reason=reason,
                    drafts=_draft_rows(spec, as_np),
                    selected=selected,
                    **(
                        {  # type: ignore[arg-type]  # int and float fields: each key has its LaneStep field's type
                            "drafted": spec.drafted,
                            "accepted": spec.accepted,
                            "rolled_back": spec.rolled_back,
                            "forwards": spec.forwards,
                            "draft_ms": spec.draft_ms,
                        }
                        if spec is not None
                        else {}
                    ),
                )
            )

        # 5. freeze the record, then advance the sequence
        return StepRecord(
            run_id=self.run_id,
            step=step_index,
            phase=phase,
            positions=np.arange(self._done, n, dtype=np.int64),
            input_ids=np.asarray(self.tokens[self._done : n], dtype=np.int64),
            token_id=token_id,
            token=self._token_text(token_id),
            q=as_np(q_new),
            k=as_np(k_new),
            v=as_np(v_new),
            lanes=tuple(lane_steps),
            states=self._states(n),
        )

    def _token_text(self, token_id: int) -> str:
        """The tokenizer's text of one token, kept once asked (a decode through the tokenizer costs ~20-40 µs)."""
        text = self._texts.get(token_id)
        if text is None:
            text = self._texts[token_id] = self.tokenizer.token_text(token_id)
        return text

    def _states(self, n: int) -> np.ndarray | None:
        """A hybrid model's recurrent matrices after this step (``StepRecord.states``), from the first lane that holds
        them (``kv``); None when no lane does (``none`` recomputes them every step and keeps nothing)."""
        layers = self.model.cfg.linear_layers
        holder = next((lane.cache for lane in self.lanes if lane.cache.holds_state), None)
        if not layers or holder is None:
            return None
        tiles = []
        for layer in layers:
            held = holder.layer_state(layer, n)
            if held is None:
                return None
            tiles.append(state_tile(held[-1][0].detach().float().cpu().numpy()))  # (H_v, dk, dv) of the one sequence
        return np.stack(tiles)

    def _same_text(self, lane: int) -> bool:
        return self.lane_tokens is None or self.lane_tokens[lane] == self.tokens

    def _own_rows(self, i: int, lane: Lane, out: ForwardOutput, new_t: int, as_np: AsNumpy) -> LaneRows | None:
        """What a lane records of its own: a lossy lane its changed stored rows; in free-running mode,
        a lane other than the reference its new rows (they belong to its own text)."""
        if lane.mirror is not None:
            return self._lane_rows(lane, out, new_t, as_np)
        if self.free_running and i != self._row_lane:
            positions = np.arange(self._done, self._done + new_t, dtype=np.int64)
            q, k, v = out.rows()
            return LaneRows(
                positions=positions,
                k=as_np(k[:, 0, :, -new_t:]),
                v=as_np(v[:, 0, :, -new_t:]),
                q=as_np(q[:, 0, :, -new_t:]),
            )
        return None

    def _lane_rows(self, lane: Lane, out: ForwardOutput, new_t: int, as_np: AsNumpy) -> LaneRows:
        """A lossy lane's own rows: its new queries, and every stored row that changed this step."""
        assert lane.mirror is not None  # a lossy lane keeps a mirror of its rows
        if not lane.cache.reuses_past:  # `none@w8`: it holds nothing; its rows are the ones it recomputed this step
            q_all, k_all, v_all = out.rows()  # (L, B, H_kv, n, D): every position, fed again
            k, v = k_all[:, 0], v_all[:, 0]
            changed = lane.mirror.changed(k, v, torch.arange(k.shape[2], device=k.device))
            return LaneRows(
                positions=changed.cpu().numpy().astype(np.int64),
                k=as_np(k[:, :, changed]),
                v=as_np(v[:, :, changed]),
                q=as_np(q_all[:, 0, :, -new_t:]),
            )
        low = lane.cache.take_rewritten_from()  # the rows in slots below it are as last recorded
        held = [lane.cache.held_rows(layer) for layer in range(self.model.cfg.n_layers)]
        positions = held[0][2]
        if not all(h[2].ndim == 1 and torch.equal(h[2], positions) for h in held):
            # layers or heads hold different rows (h2o/tova/snapkv, kv on Gemma 3's local layers) with quantized weights
            changed = lane.mirror.changed_held(held)
            k, v = lane.mirror.rows(changed)
            return LaneRows(
                positions=changed.cpu().numpy().astype(np.int64),
                k=as_np(k),
                v=as_np(v),
                q=as_np(out.rows()[0][:, 0, :, -new_t:]),
            )
        # only the slots written since the last record are compared (and copied): O(new rows) a step, not O(n)
        positions = positions[low:]
        k = torch.stack([h[0][0, :, low:] for h in held])  # (L, H_kv, S - low, D)
        v = torch.stack([h[1][0, :, low:] for h in held])
        changed = lane.mirror.changed(k, v, positions)
        index = torch.searchsorted(positions, changed)
        return LaneRows(
            positions=changed.cpu().numpy().astype(np.int64),
            k=as_np(k[:, :, index]),
            v=as_np(v[:, :, index]),
            q=as_np(out.rows()[0][:, 0, :, -new_t:]),
        )

    def _warm_up(self, all_ids: torch.Tensor, n: int) -> None:
        """Run each lane's prefill once on a throwaway cache before the first recorded step (here, not in
        a step: a step does only its own work), so that no lane's first measured time pays for lazy
        initialisation (kernels, allocators) another lane skipped."""
        positions = torch.arange(0, n, device=self.model.device)
        for lane in self.lanes:
            scratch = make_cache(lane.spec, self.model.cfg.n_layers, self._layer_windows)
            lane.model(all_ids[:, :n], positions, scratch, record=True, last_only=True)
            if scratch.reuses_past and n > 1:  # and one decode-shaped call (a single new row)
                scratch.truncate(n - 1)
                lane.model(all_ids[:, n - 1 : n], positions[-1:], scratch, record=True, last_only=True)
            if lane.driver is not None:  # and its drafter (a draft model's first call)
                lane.driver.drafter.propose([int(i) for i in all_ids[0, :n]], lane.driver.k, self.sampling, lane.driver.gen)

    def _forward_lanes(
        self, all_ids: torch.Tensor, n: int
    ) -> tuple[list[ForwardOutput], list[tuple[float, float, float]], list[int]]:
        device = self.model.device
        count = len(self.lanes)
        outputs: list = [None] * count
        timings: list = [None] * count
        fed: list = [0] * count
        progress = self.progress
        # the lanes run in an order that rotates each step, so none always runs first (its times paired
        # step by step with the others' in the summary: kvsim.core.compare)
        turn = self.steps_done % count
        for i in [*range(turn, count), *range(turn)]:
            lane = self.lanes[i]
            start = self._done if lane.cache.reuses_past else 0
            if self.lane_tokens is not None:  # free-running: the lane's own text
                ids = torch.tensor([self.lane_tokens[i][start:n]], dtype=torch.long, device=device)
            else:  # all_ids holds the tokens from position self._ids_from (Simulator.step)
                ids = all_ids[:, start - self._ids_from : n - self._ids_from]
            positions = torch.arange(start, n, device=device)
            hook, in_hook = None, [0.0]
            if progress is not None:

                def hook(done: int, total: int, name: str = lane.name, spent: list[float] = in_hook) -> None:
                    t = time.perf_counter()
                    progress(name, done, total)
                    spent[0] += time.perf_counter() - t  # the observer's time is not the lane's

            if lane.driver is not None:  # speculative: a check forward, or logits an earlier check verified
                own = self.lane_tokens[i] if self.lane_tokens is not None else self.tokens
                out, ms = lane.driver.step(own, n, self._done, self.repeats, hook, in_hook)
                outputs[i], timings[i], fed[i] = out, ms, lane.driver.last.kv_positions
                continue
            # the step's forward k times, the cache rolled back between (its exact undo): the median is
            # the recorded time, min and max its spread; the last forward is the one the run keeps
            times = []
            for repeat in range(self.repeats):
                if repeat:
                    lane.cache.truncate(self._done)
                in_hook[0] = 0.0
                sync(device)
                t0 = time.perf_counter()
                out = lane.model(ids, positions, lane.cache, record=True, last_only=True, layer_hook=hook)
                sync(device)
                times.append((time.perf_counter() - t0 - in_hook[0]) * 1e3)
            timings[i] = (float(np.median(times)) if len(times) > 1 else times[0], min(times), max(times))
            outputs[i], fed[i] = out, n - start
        return outputs, timings, fed

    def _recompute_diff(self, out: ForwardOutput) -> float | None:
        """How far an uncached lane's recomputed old rows are from when they were first computed."""
        history = self._history
        if history is None or history.n_tokens == 0:
            return None
        old = history.n_tokens
        _, k_out, v_out = out.rows()
        diff = 0.0
        for layer in range(self.model.cfg.n_layers):
            k_first, v_first = history.stored(layer)  # (1, H_kv, old, D)
            diff = max(
                diff,
                float((k_out[layer, :, :, :old] - k_first).abs().max()),
                float((v_out[layer, :, :, :old] - v_first).abs().max()),
            )
        return diff


def _selected_rows(out: ForwardOutput, new_t: int) -> tuple[SelectedRows | None, list[int]]:
    """A sparse-attention forward's choices (``ForwardOutput.selected``): the rows this step's ``new_t`` new queries
    read, per layer, and how many distinct rows each layer's queries read in all (a lane that recomputes the prefix
    reads for every position it fed). (None, []) for a model that reads every row it holds."""
    if out.selected is None:
        return None, []
    chosen = out.selected[:, 0]  # (L, T fed, k)
    per_layer = [int(torch.unique(c[c >= 0]).numel()) for c in chosen]
    return SelectedRows(positions=chosen[:, -new_t:].cpu().numpy().astype(np.int32)), per_layer


def _head_rows(lane: Lane) -> tuple[HeadRows | None, str]:
    """A lane that evicts by attention: the rows each layer's KV heads hold, their scores, what it dropped and why."""
    got = lane.cache.head_rows()
    if got is None:
        return None, ""
    positions, scores, evicted, reason = got
    as_np = lambda x: x.detach().cpu().numpy()  # noqa: E731
    held = HeadRows(
        positions=as_np(positions).astype(np.int32),  # int32: a step's rows of every layer and head, kept per step
        scores=as_np(scores).astype(np.float32),
        evicted=as_np(evicted).astype(np.int32),
    )
    return held, reason
