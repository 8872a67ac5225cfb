"""The per-step figures of a run as CSV: one row per step per lane, the numbers exactly as recorded.

No Qt here: ``figure_rows(records)`` reads ``StepRecord``s (a live session's or a saved trace's) and
``write_csv`` writes them atomically (``kvsim.core.atomic``) with the csv module (floats in their
shortest exact form, so a spreadsheet or a script reading the file gets the recorded numbers back bit
for bit).
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterable
from pathlib import Path

from kvsim.core.atomic import atomic_target
from kvsim.engine.records import StepRecord

COLUMNS = (
    "step",
    "phase",
    "token_id",
    "token",
    "lane",
    "policy",
    "rows_computed",  # K/V positions this lane computed this step
    "keys_read",  # key rows its attention read (context)
    "flops",
    "wall_ms",
    "wall_ms_min",
    "wall_ms_max",
    "cache_tokens",
    "cache_bytes",
    "cache_overhead_bytes",
    "logit_diff",
    "kl_div",
    "own_token_id",
)


def figure_rows(records: Iterable[StepRecord]) -> list[dict[str, object]]:
    """One dict per (step, lane), in step order then lane order, keyed by ``COLUMNS``."""
    rows: list[dict[str, object]] = []
    for r in records:
        for lane in r.lanes:
            rows.append(
                {
                    "step": r.step,
                    "phase": r.phase,
                    "token_id": r.token_id,
                    "token": r.token,
                    "lane": lane.name,
                    "policy": lane.policy,
                    "rows_computed": lane.kv_positions,
                    "keys_read": lane.context,
                    "flops": lane.flops,
                    "wall_ms": lane.wall_ms,
                    "wall_ms_min": lane.wall_ms if lane.wall_ms_min is None else lane.wall_ms_min,
                    "wall_ms_max": lane.wall_ms if lane.wall_ms_max is None else lane.wall_ms_max,
                    "cache_tokens": lane.cache_tokens,
                    "cache_bytes": lane.cache_bytes,
                    "cache_overhead_bytes": lane.cache_overhead_bytes,
                    "logit_diff": lane.logit_diff,
                    "kl_div": lane.kl_div,
                    "own_token_id": lane.token_id,
                }
            )
    return rows


def write_csv(records: Iterable[StepRecord], path: str | os.PathLike[str]) -> Path:
    """Write the figures to ``path`` (UTF-8, a header row, then ``figure_rows``); OSError if it cannot."""
    path = Path(path)
    rows = figure_rows(records)

    def check(tmp: Path) -> None:  # read back: a header and one row per figure row
        with open(tmp, newline="", encoding="utf-8") as f:
            if sum(1 for _ in csv.reader(f)) != len(rows) + 1:
                raise ValueError("the rows read back are not the rows written")

    with atomic_target(path, check) as tmp:
        with open(tmp, "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=COLUMNS)
            w.writeheader()
            for row in rows:
                w.writerow({k: repr(float(v)) if isinstance(v, float) else v for k, v in row.items()})
    return path
