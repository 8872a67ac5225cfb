"""A saved requests run opened in the Requests dock: the runs of a ``.kvsim`` file that ``kvsim run --requests …
--save`` wrote (one run, or prefix caching off and on with ``--compare-prefix-cache``; a continuous-batching run
too, ``--batching continuous``), read and checked whole by ``kvsim.serving.saved_runs.load_runs`` before this
module sees them, turned into what a press of Run hands the dock (``job.Computed``), so the dock draws it as it
draws a run of its own.

A file holds no token texts: the loaded model's tokenizer gives them when the file is of that model; otherwise
the views show token ids. Nothing here touches the model.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvsim.core.text import printable
from kvsim.serving.records import SideBySide
from kvsim.serving.study import SCHEDULES, findings

from .job import Computed, RequestsInput, RequestsSettings

MAX_SETTING = 1_000_000  # a saved figure shown in the settings bar (its spin boxes clamp to their own range)


@dataclass(frozen=True, eq=False)
class SavedComputed(Computed):
    """A saved file's runs as the dock draws them; ``single``: the file holds one run (not off and on), shown as both."""

    source: str = ""  # the file it was read from
    single: bool = False


def saved_computed(runs: tuple[Any, ...], path: str, loaded: Any = None) -> SavedComputed:
    """``runs`` (``load_runs(path)``: one ``RequestsRun``, or off then on) as the dock's ``Computed``; ``loaded``
    (the app's loaded model, or None) gives the tokens' text when the file is of that model."""
    if len(runs) == 2:
        off, on = (runs[0], runs[1]) if runs[1].prefix_caching else (runs[1], runs[0])
    else:
        off = on = runs[0]
    both = SideBySide(off, on)
    tokenizer = loaded.tokenizer if loaded is not None and getattr(loaded, "model_id", None) == on.model_id else None
    seen = findings(tokenizer, both, on.block_size)
    budget = on.meta.get("max_batched_tokens") if isinstance(on.meta, dict) else None
    settings = RequestsSettings(
        block_size=on.block_size,
        pool_blocks=on.usable_blocks,
        steps=min(MAX_SETTING, max((len(r.output_ids) for r in on.requests), default=1)),
        schedule=on.schedule if on.schedule in SCHEDULES else "sequential",
        repeats=on.repeats,
        max_batched_tokens=budget if isinstance(budget, int) and not isinstance(budget, bool) else 64,
    )
    # the prompts as text, one a line in the request list (those given as token ids have none to show)
    prompts = tuple(" ".join(r.prompt.split()) for r in on.requests if r.prompt and r.prompt.strip())
    return SavedComputed(
        both=both,
        settings=settings,
        given=RequestsInput(prompts, None, Path(path).stem),
        model_id=printable(on.model_id, 120),
        token_text=seen.token_text,
        last_owner=seen.last_owner,
        paged_waste_by_size=seen.paged_waste_by_size,
        reuse=seen.reuse,
        prefix_tree=seen.prefix_tree,
        tree_paths=seen.tree_paths,
        source=str(path),
        single=len(runs) == 1,
    )
