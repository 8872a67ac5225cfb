"""What the Requests dock runs on the worker thread: a requests study (``kvsim.serving.study``: the same
request list with prefix caching off and on, and what the views need to draw any step later without
touching the model), with the dock's words around it. The runs go a slice at a time
(``Pending.advance``), one worker job per slice, so the main lanes' Step never waits for a whole run.

The study module is torch-free at module level; the engines load when a study starts, on the worker thread.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kvsim.core.words import QT_TRANSLATE_NOOP  # typed str, found by pyside6-lupdate as Qt's
from kvsim.serving.study import SCHEDULES, TRADE_OFF_SIZES, Study, encode, findings, last_owners, start_study
from kvsim.serving.study import StudySettings as RequestsSettings
from kvsim.serving.study import demo_lists as _demo_lists

from ...i18n import is_portuguese, translate

__all__ = ["SCHEDULES", "TRADE_OFF_SIZES", "RequestsSettings", "last_owners"]  # the dock's names for the study's

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
#: one worker job runs the requests for about this long, then hands the worker back (main Steps go between)
SLICE_MS = 100.0


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
    return _demo_lists()


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


class Pending:
    """A requests study under way on the worker thread, advanced a slice of time at a time (``advance``).
    Each slice is its own worker job, so a main-lane Step queued meanwhile runs between two slices
    instead of waiting for the whole run; the dock shows ``fraction()`` and may stop submitting slices
    (cancel)."""

    def __init__(self, loaded, given: RequestsInput, settings: RequestsSettings, study: Study) -> None:
        self.loaded, self.given, self.settings, self.study = loaded, given, settings, study
        self._steps = study.steps()

    def fraction(self) -> float:
        return self.study.fraction()

    def advance(self, loaded, budget_ms: float | None = None) -> Computed | Pending:
        """Run steps for about ``budget_ms`` (``SLICE_MS`` unless given; at least one step); the finished
        ``Computed`` once both runs are done."""
        from kvsim.core.sampling import SimulationError

        budget_ms = SLICE_MS if budget_ms is None else budget_ms
        if loaded is not self.loaded:
            raise SimulationError(translate("views.requests_job", "the model changed while the requests ran: run them again"))
        start = time.perf_counter()
        for _ in self._steps:
            if (time.perf_counter() - start) * 1e3 >= budget_ms:
                return self
        return finish(loaded, self.study.result(), self.given, self.settings)


def start(loaded, given: RequestsInput, settings: RequestsSettings) -> Pending:
    """Check and encode ``given`` and set up its two runs (prefix caching off and on, same settings);
    raises a one-line error. Nothing is computed yet but the engines' warm-up."""
    from kvsim.core.sampling import SimulationError

    if loaded is None:
        raise SimulationError(translate("views.requests_job", "no model is loaded yet"))
    if settings.schedule not in SCHEDULES:
        raise SimulationError(
            translate("views.requests_job", "schedule must be one of {names}").format(names=", ".join(SCHEDULES))
        )
    system = given.system.strip() if given.system and given.system.strip() else None
    prompts, inputs = encode(loaded.tokenizer, [p.strip() for p in given.prompts if p.strip()], system, given.title)
    study = start_study(loaded.model, loaded.tokenizer, inputs, settings, loaded.model_id)
    return Pending(loaded, RequestsInput(prompts, system, given.title), settings, study)


def compute(loaded, given: RequestsInput, settings: RequestsSettings) -> Computed:
    """Run ``given`` with prefix caching off and on (same settings), all at once; raises a one-line error."""
    result: Computed | Pending = start(loaded, given, settings)
    while isinstance(result, Pending):
        result = result.advance(loaded, math.inf)
    return result


def finish(loaded, both, given: RequestsInput, settings: RequestsSettings) -> Computed:
    """The two runs and what the views need besides them (``kvsim.serving.study.findings``)."""
    seen = findings(loaded.tokenizer, both, settings.block_size)
    return Computed(
        prefix_tree=seen.prefix_tree,
        tree_paths=seen.tree_paths,
        both=both,
        settings=settings,
        given=given,
        model_id=loaded.model_id,
        token_text=seen.token_text,
        last_owner=seen.last_owner,
        paged_waste_by_size=seen.paged_waste_by_size,
        reuse=seen.reuse,
    )


def start_demo(loaded, settings: RequestsSettings) -> Pending | None:
    """The default demo list's runs, set up (None when no model is loaded yet)."""
    if loaded is None:
        return None
    return start(loaded, default_demo(loaded.tokenizer), settings)
