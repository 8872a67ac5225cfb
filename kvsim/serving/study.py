"""A requests study: which engine runs a schedule, the same request list with prefix caching off and on,
and what a view needs to draw any step later without the model (each token's text, each block's last
owner, the paged waste at other block sizes, the reuse a radix tree would get on the same requests).

    run = engine_for(model, tokenizer, inputs, RunOptions(steps=8), "continuous")   # one run (the CLI)
    study = start_study(model, tokenizer, inputs, StudySettings(schedule="interleaved"), model_id="tiny")
    for _ in study.steps(): ...                                                      # a slice at a time
    both = study.result(); seen = findings(tokenizer, both, study.settings.block_size)

The Requests dock runs a study on its worker thread; ``kvsim run`` with several requests picks its
engine here too. Torch-free at module level (the app's views import it before the engine loads): the
engines are imported when a study starts.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .schedules import SCHEDULES

if TYPE_CHECKING:
    from ..models.tokenizer import Tokenizer
    from ..models.transformer import Transformer
    from .batching import BatchingEngine
    from .core import BatchLimits, RunOptions
    from .radix import NodeView, ReuseComparison
    from .records import PoolSnapshot, SideBySide
    from .request_lists import RequestInput, RequestList
    from .requests import PrefixComparison, RequestsEngine

__all__ = [
    "SCHEDULES",
    "Findings",
    "Study",
    "StudySettings",
    "demo_lists",
    "encode",
    "engine_for",
    "findings",
    "last_owners",
    "start_study",
]

#: the block sizes the paged-waste trade-off line is computed for (the chosen one is added)
TRADE_OFF_SIZES = (1, 2, 4, 8, 16, 32, 64)
#: a one-at-a-time prefill's paired trials go on at most about this long (a view waits for a slice)
STUDY_BUDGET_S = 1.0


@dataclass(frozen=True)
class StudySettings:
    """What a study is run with (the Requests dock's settings bar)."""

    block_size: int = 16
    pool_blocks: int | None = None  # None: room for every request at once
    steps: int = 8
    schedule: str = "sequential"  # one of SCHEDULES
    repeats: int = 3  # one-at-a-time schedules: timed prefill trials at least
    max_batched_tokens: int = 64  # continuous batching: positions per batched forward
    arrival_every: int = 2  # continuous batching: request i arrives at step i × this
    offload: str | None = None  # offload tiers under the caching-on run's pool, as --offload takes them ("host:64KB,disk:1MB")


def engine_for(
    model: Transformer,
    tokenizer: Tokenizer,
    inputs: Sequence[RequestInput],
    options: RunOptions,
    schedule: str,
    *,
    repeats: int = 3,
    limits: BatchLimits | None = None,
    arrivals: Sequence[int] | None = None,
) -> RequestsEngine | BatchingEngine:
    """The engine that runs ``schedule`` ("continuous": ``BatchingEngine`` under ``limits`` with ``arrivals``;
    the others ``RequestsEngine``, each prefill timed ``repeats`` times)."""
    from .batching import BatchingEngine
    from .core import OneAtATime
    from .requests import RequestsEngine

    if schedule == "continuous":
        return BatchingEngine(model, tokenizer, inputs, options, limits, arrivals=arrivals)
    return RequestsEngine(model, tokenizer, inputs, options, OneAtATime(schedule, repeats))


class Study:
    """A study under way: its two runs (prefix caching off, then on), advanced a step at a time by
    ``steps()``; one-at-a-time schedules go side by side (``PrefixComparison``: paired times)."""

    def __init__(
        self,
        settings: StudySettings,
        engines: Sequence[RequestsEngine | BatchingEngine],
        comparison: PrefixComparison | None = None,
    ) -> None:
        self.settings, self.engines, self.comparison = settings, tuple(engines), comparison
        self._steps: list[Iterator[Any]] = (
            [comparison.iterate()] if comparison is not None else [engine.iterate() for engine in engines]
        )

    def fraction(self) -> float:
        """The share of the tokens both runs generate at most that are out."""
        done = total = 0
        for engine in self.engines:
            d, t = engine.progress()
            done, total = done + d, total + t
        return done / total if total else 1.0

    def steps(self) -> Iterator[None]:
        """One step of the runs at a time (stop between any two; go on by iterating again)."""
        for steps in self._steps:
            for _ in steps:
                yield

    def result(self) -> SideBySide:
        """The two finished runs (with the paired comparisons when they ran side by side)."""
        from .records import SideBySide

        if self.comparison is not None:
            return self.comparison.result()
        off, on = (engine.result() for engine in self.engines)
        return SideBySide(off, on)


def start_study(
    model: Transformer, tokenizer: Tokenizer, inputs: Sequence[RequestInput], settings: StudySettings, model_id: str
) -> Study:
    """Set up ``inputs``' two runs (prefix caching off and on, same settings; ``SimulationError`` on a bad
    figure). Nothing is computed yet but the engines' warm-up."""
    from ..caches.tiers import OffloadSpec
    from .core import BatchLimits, OneAtATime, RunOptions
    from .requests import PrefixComparison

    tiers = OffloadSpec.parse(settings.offload) if settings.offload else None

    def options(caching: bool) -> RunOptions:
        return RunOptions(
            offload=tiers,
            block_size=settings.block_size,
            pool_blocks=settings.pool_blocks,
            prefix_caching=caching,
            steps=settings.steps,
            model_id=model_id,
        )

    if settings.schedule == "continuous":
        arrivals = [i * settings.arrival_every for i in range(len(inputs))]
        limits = BatchLimits(max_batched_tokens=settings.max_batched_tokens)
        engines = [
            engine_for(model, tokenizer, inputs, options(caching), "continuous", limits=limits, arrivals=arrivals)
            for caching in (False, True)
        ]
        return Study(settings, engines)
    order = OneAtATime(settings.schedule, settings.repeats)
    comparison = PrefixComparison(model, tokenizer, inputs, options(True), order, budget_s=STUDY_BUDGET_S)
    return Study(settings, comparison.engines, comparison)


@dataclass(frozen=True, eq=False)
class Findings:
    """What drawing a study's runs needs besides the runs themselves (computed once, off the model)."""

    token_text: dict[int, str]  # every token id the runs hold → its text
    last_owner: dict[bool, np.ndarray]  # caching on? → (steps, blocks): the request that last held it, -1 never
    paged_waste_by_size: tuple[tuple[int, float], ...]  # (block size, paged waste) of the caching-on run's rows
    reuse: ReuseComparison  # token-level (radix tree) against these blocks, same requests
    prefix_tree: tuple[NodeView, ...]  # a radix tree holding every request's computed tokens
    tree_paths: dict[int, tuple[int, ...]]  # node id → the tokens from the root to the end of its edge


def findings(tokenizer: Tokenizer | None, both: SideBySide, block_size: int) -> Findings:
    """Each token's text, each block's last owner, the paged waste at other block sizes, and the prefix
    reuse a radix tree would get on the same requests. Without a tokenizer (a saved run of a model not
    loaded) no token has a text: the views show ids."""
    from .radix import RadixTree, compare_reuse
    from .waste import allocation_waste

    ids = {t for run in (both.off, both.on) for r in run.requests for t in (*r.prompt_ids, *r.output_ids)}
    texts = {t: tokenizer.token_text(t) for t in sorted(ids)} if tokenizer is not None else {}
    w = both.on.waste
    prompts_ids = [r.prompt_ids for r in both.on.requests]
    by_size = tuple(
        (b, allocation_waste(w.rows, b, w.max_len, w.bytes_per_slot, prompts_ids).paged_waste)
        for b in sorted({*TRADE_OFF_SIZES, block_size})
    )
    tree = RadixTree()
    for r in both.on.requests:  # what each request computed: its prompt and all but its last token
        tree.insert(list(r.prompt_ids) + list(r.output_ids[:-1]))
    nodes = tuple(tree.nodes())
    paths: dict[int, tuple[int, ...]] = {}
    for node in nodes:  # parents come before children
        paths[node.id] = (paths[node.parent] if node.parent is not None else ()) + node.tokens
    return Findings(
        token_text=texts,
        last_owner={False: last_owners(both.off.snapshots), True: last_owners(both.on.snapshots)},
        paged_waste_by_size=by_size,
        reuse=compare_reuse(prompts_ids, [r.output_ids for r in both.on.requests], block_size),
        prefix_tree=nodes,
        tree_paths=paths,
    )


def last_owners(snapshots: Sequence[PoolSnapshot]) -> np.ndarray:
    """(steps, blocks): the request that last held each block up to each step (-1: never held), so a
    free block that still holds reusable rows can be drawn in its last owner's colour."""
    if not snapshots:
        return np.zeros((0, 0), dtype=np.int32)
    n = snapshots[0].n_blocks
    out = np.full((len(snapshots), n), -1, dtype=np.int32)
    now = np.full(n, -1, dtype=np.int32)
    for s, snap in enumerate(snapshots):
        for b, owners in enumerate(snap.owners):
            if owners:
                now[b] = owners[0]
        out[s] = now
    out.flags.writeable = False
    return out


def demo_lists() -> list[tuple[Path, RequestList]]:
    """The bundled demo request lists, read (a file that does not read is left out)."""
    from ..core.sampling import SimulationError
    from .request_lists import demo_request_files, load_requests

    out = []
    for path in demo_request_files():
        try:
            out.append((path, load_requests(path)))
        except SimulationError:
            continue
    return out


def encode(
    tokenizer: Tokenizer, prompts: Sequence[str], system: str | None, title: str | None
) -> tuple[tuple[str, ...], list[RequestInput]]:
    """``prompts`` checked (each a prompt kvsim can run; ``SimulationError`` naming "the request list")
    and encoded, behind ``system`` when given: (the prompts, their inputs)."""
    from .request_lists import RequestList, check_prompts, encode_requests

    checked = check_prompts(list(prompts), "the request list")
    return checked, encode_requests(tokenizer, RequestList(checked, system, title))
