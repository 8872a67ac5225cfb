"""What the Requests dock computes on the worker thread: a request list run twice through one shared
paged pool (prefix caching off, then on, as ``kvsim.serving.requests.compare_prefix_caching`` does), with
what the views need to draw any step later without touching the model (each token's text, each block's
last owner, the paged waste at other block sizes). The runs go a slice at a time (``Pending.advance``),
one worker job per slice, so the main lanes' Step never waits for a whole requests run.

Nothing here is imported from the engine at module level (the engine loads torch): the functions
import it when they run, on the worker thread.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kvsim.core.words import QT_TRANSLATE_NOOP  # typed str, found by pyside6-lupdate as Qt's

from ...i18n import is_portuguese, translate

SCHEDULES = ("sequential", "interleaved", "continuous")
SCHEDULE_LABELS = {  # what the schedule combo shows (translated where shown; the data stays the engine's word)
    "sequential": QT_TRANSLATE_NOOP("views.requests_job", "sequential"),
    "interleaved": QT_TRANSLATE_NOOP("views.requests_job", "interleaved"),
    "continuous": QT_TRANSLATE_NOOP("views.requests_job", "continuous batching"),
}
#: the demo list run by default: one whose requests share a prefix for this kind of model
DEFAULT_DEMO = {"chat": "system-prompt.json", "plain": "austen-openings.json"}
#: the same in a Portuguese app: Portuguese questions behind a Portuguese system prompt, a Portuguese opening
DEFAULT_DEMO_PT = {"chat": "pt-prompt-de-sistema.json", "plain": "pt-aberturas.json"}
PORTUGUESE_PREFIX = "pt-"
#: the block sizes the paged-waste trade-off line is computed for (the chosen one is added)
TRADE_OFF_SIZES = (1, 2, 4, 8, 16, 32, 64)
#: one worker job runs the requests for about this long, then hands the worker back (main Steps go between)
SLICE_MS = 100.0


@dataclass(frozen=True)
class RequestsSettings:
    block_size: int = 16
    pool_blocks: int | None = None  # None: room for every request at once
    steps: int = 8
    schedule: str = "sequential"
    repeats: int = 3
    max_batched_tokens: int = 64  # continuous batching: positions per batched forward
    arrival_every: int = 2  # continuous batching: request i arrives at step i × this


@dataclass(frozen=True)
class RequestsInput:
    prompts: tuple[str, ...]
    system: str | None = None
    title: str | None = None


@dataclass(frozen=True, eq=False)
class Computed:
    """One press of Run: the same requests with prefix caching off and on, and what drawing needs."""

    both: Any  # kvsim.serving.records.SideBySide
    settings: RequestsSettings
    given: RequestsInput
    model_id: str
    token_text: dict[int, str] = field(default_factory=dict)
    last_owner: dict[bool, np.ndarray] = field(default_factory=dict)  # caching on? → (steps, blocks), -1 never held
    paged_waste_by_size: tuple[tuple[int, float], ...] = ()
    reuse: Any = None  # kvsim.serving.radix.ReuseComparison: token-level (radix tree) vs these blocks, same requests
    prefix_tree: tuple = ()  # kvsim.serving.radix.NodeView of a radix tree holding every request's computed tokens
    tree_paths: dict = field(default_factory=dict)  # node id → the tokens from the root to the end of its edge

    def run(self, caching: bool):
        return self.both.on if caching else self.both.off


def schedule_label(schedule: str) -> str:
    """The schedule's name in the app's language ("interleaved" → "intercalado")."""
    return translate("views.requests_job", SCHEDULE_LABELS[schedule]) if schedule in SCHEDULE_LABELS else schedule


def demo_lists() -> list[tuple[Path, Any]]:
    """The bundled demo request lists, read (a file that does not read is left out)."""
    from kvsim.core.sampling import SimulationError
    from kvsim.serving.request_lists import demo_request_files, load_requests

    out = []
    for path in demo_request_files():
        try:
            out.append((path, load_requests(path)))
        except SimulationError:
            continue
    return out


def default_demo(tokenizer) -> RequestsInput:
    """The demo list for this model: its own system prompt behind four questions when it has a chat
    template, otherwise a shared opening paragraph (the bundled tiny model has no template). In a
    Portuguese app, the Portuguese lists."""
    kind = "chat" if getattr(tokenizer, "chat_template", None) else "plain"
    lists = demo_lists()
    if not lists:
        raise ValueError(translate("views.requests_job", "no demo request lists found in resources/requests"))
    wanted = [(DEFAULT_DEMO_PT if is_portuguese() else DEFAULT_DEMO)[kind], DEFAULT_DEMO[kind]]
    path, chosen = next(((p, r) for name in wanted for p, r in lists if p.name == name), lists[0])
    return RequestsInput(tuple(chosen.prompts), chosen.system, chosen.title or path.stem)


def last_owners(snapshots) -> np.ndarray:
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


class Pending:
    """A requests run under way on the worker thread: the two engines (prefix caching off, then on),
    advanced a slice of time at a time (``advance``). Each slice is its own worker job, so a main-lane
    Step queued meanwhile runs between two slices instead of waiting for the whole run; the dock shows
    ``fraction()`` and may stop submitting slices (cancel)."""

    def __init__(self, loaded, given: RequestsInput, settings: RequestsSettings, engines, comparison=None) -> None:
        self.loaded, self.given, self.settings, self.engines = loaded, given, settings, engines
        # one-at-a-time schedules: the engine's PrefixComparison advances both runs side by side (paired times)
        self.comparison = comparison
        self._steps = [comparison.iterate()] if comparison is not None else [engine.iterate() for engine in engines]

    def fraction(self) -> float:
        done = total = 0
        for engine in self.engines:
            d, t = engine.progress()
            done, total = done + d, total + t
        return done / total if total else 1.0

    def advance(self, loaded, budget_ms: float | None = None) -> Computed | Pending:
        """Run steps for about ``budget_ms`` (``SLICE_MS`` unless given; at least one step); the finished
        ``Computed`` once both runs are done."""
        from kvsim.core.sampling import SimulationError
        from kvsim.serving.records import SideBySide

        budget_ms = SLICE_MS if budget_ms is None else budget_ms
        if loaded is not self.loaded:
            raise SimulationError(translate("views.requests_job", "the model changed while the requests ran: run them again"))
        start = time.perf_counter()
        for steps in self._steps:
            for _ in steps:
                if (time.perf_counter() - start) * 1e3 >= budget_ms:
                    return self
        if self.comparison is not None:
            return finish(loaded, self.comparison.result(), self.given, self.settings)
        off, on = (engine.result() for engine in self.engines)
        return finish(loaded, SideBySide(off, on), self.given, self.settings)


def start(loaded, given: RequestsInput, settings: RequestsSettings) -> Pending:
    """Check and encode ``given`` and set up its two runs (prefix caching off and on, same settings);
    raises a one-line error. Nothing is computed yet but the engines' warm-up."""
    from kvsim.core.sampling import SimulationError
    from kvsim.serving.request_lists import RequestList, check_prompts, encode_requests
    from kvsim.serving.requests import PrefixComparison

    if loaded is None:
        raise SimulationError(translate("views.requests_job", "no model is loaded yet"))
    if settings.schedule not in SCHEDULES:
        raise SimulationError(
            translate("views.requests_job", "schedule must be one of {names}").format(names=", ".join(SCHEDULES))
        )
    prompts = check_prompts([p.strip() for p in given.prompts if p.strip()], "the request list")
    system = given.system.strip() if given.system and given.system.strip() else None
    inputs = encode_requests(loaded.tokenizer, RequestList(prompts, system, given.title))
    if settings.schedule == "continuous":
        from kvsim.serving.batching import BatchingEngine

        engines = [
            BatchingEngine(
                loaded.model,
                loaded.tokenizer,
                inputs,
                arrivals=[i * settings.arrival_every for i in range(len(inputs))],
                block_size=settings.block_size,
                pool_blocks=settings.pool_blocks,
                prefix_caching=caching,
                steps=settings.steps,
                max_batched_tokens=settings.max_batched_tokens,
                model_id=loaded.model_id,
            )
            for caching in (False, True)
        ]
        return Pending(loaded, RequestsInput(prompts, system, given.title), settings, engines)
    comparison = PrefixComparison(
        loaded.model,
        loaded.tokenizer,
        inputs,
        block_size=settings.block_size,
        pool_blocks=settings.pool_blocks,
        steps=settings.steps,
        schedule=settings.schedule,
        repeats=settings.repeats,
        model_id=loaded.model_id,
        budget_s=1.0,  # a prefill's trials go on at most about a second (the main lanes wait for a slice)
    )
    return Pending(loaded, RequestsInput(prompts, system, given.title), settings, list(comparison.engines), comparison)


def compute(loaded, given: RequestsInput, settings: RequestsSettings) -> Computed:
    """Run ``given`` with prefix caching off and on (same settings), all at once; raises a one-line error."""
    result: Computed | Pending = start(loaded, given, settings)
    while isinstance(result, Pending):
        result = result.advance(loaded, math.inf)
    return result


def finish(loaded, both, given: RequestsInput, settings: RequestsSettings) -> Computed:
    """What the views need besides the two runs: each token's text, each block's last owner, the
    paged waste at other block sizes, and the prefix reuse a radix tree would get on the same requests."""
    from kvsim.serving.radix import RadixTree, compare_reuse
    from kvsim.serving.waste import allocation_waste

    ids = {t for run in (both.off, both.on) for r in run.requests for t in (*r.prompt_ids, *r.output_ids)}
    texts = {t: loaded.tokenizer.token_text(t) for t in sorted(ids)}
    w = both.on.waste
    prompts_ids = [r.prompt_ids for r in both.on.requests]
    by_size = tuple(
        (b, allocation_waste(w.rows, b, w.max_len, w.bytes_per_slot, prompts_ids).paged_waste)
        for b in sorted({*TRADE_OFF_SIZES, settings.block_size})
    )
    tree = RadixTree()
    for r in both.on.requests:  # what each request computed: its prompt and all but its last token
        tree.insert(list(r.prompt_ids) + list(r.output_ids[:-1]))
    nodes = tuple(tree.nodes())
    paths: dict[int, tuple[int, ...]] = {}
    for node in nodes:  # parents come before children
        paths[node.id] = (paths[node.parent] if node.parent is not None else ()) + node.tokens
    return Computed(
        prefix_tree=nodes,
        tree_paths=paths,
        both=both,
        settings=settings,
        given=given,
        model_id=loaded.model_id,
        token_text=texts,
        last_owner={False: last_owners(both.off.snapshots), True: last_owners(both.on.snapshots)},
        paged_waste_by_size=by_size,
        reuse=compare_reuse(prompts_ids, [r.output_ids for r in both.on.requests], settings.block_size),
    )


def compute_demo(loaded, settings: RequestsSettings) -> Computed | None:
    """The default demo list for the loaded model (None when no model is loaded yet)."""
    if loaded is None:
        return None
    return compute(loaded, default_demo(loaded.tokenizer), settings)


def start_demo(loaded, settings: RequestsSettings) -> Pending | None:
    """The default demo list's runs, set up (None when no model is loaded yet)."""
    if loaded is None:
        return None
    return start(loaded, default_demo(loaded.tokenizer), settings)
