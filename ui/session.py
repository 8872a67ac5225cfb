"""The Session: the records of one run and the cursor the views draw. Qt, GUI thread only.

Records arrive from the worker (``add_record``); the session appends their new K/V/Q rows to
growing arrays so that any view can slice "the table at step s" without concatenating, and keeps
cumulative counters per lane. Views subscribe to ``run_started``, ``step_added`` and
``cursor_moved`` and redraw from records: stepping back is moving the cursor, never recomputing.

Row bookkeeping, stated once: the prompt has P tokens. After step s (0-based; step 0 is the
prefill) the K/V tables hold ``n_rows(s) = P + s`` rows — the token produced at step s is not fed
yet, so after N steps the table has P + N - 1 rows and the text has P + N tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from PySide6.QtCore import QObject, Signal

from kvsim.trace import StepRecord


@dataclass
class RunInfo:
    """What the worker tells the session about a new run (before its first step)."""

    run_id: str
    model_id: str
    config: dict
    prompt_ids: list[int]
    prompt_text: str
    token_texts: dict[int, str] = field(default_factory=dict)  # id -> label for the prompt's ids
    lanes: list[dict] = field(default_factory=list)
    info: dict = field(default_factory=dict)
    max_seq_len: int = 0
    eos_id: int | None = None
    token_text: object = None  # callable id -> str (the tokenizer's; pure, safe from any thread)
    meta: dict = field(default_factory=dict)  # the trace's metadata (what a saved .kvsim file carries)


class _Grow:
    """An append-only array along axis 2 with doubling capacity: (A, B, n, D)."""

    def __init__(self, a: int, b: int, d: int) -> None:
        self.buf = np.zeros((a, b, 64, d), dtype=np.float32)
        self.n = 0

    def append(self, rows: np.ndarray) -> None:
        t = rows.shape[2]
        if self.n + t > self.buf.shape[2]:
            cap = max(2 * self.buf.shape[2], self.n + t)
            new = np.zeros(self.buf.shape[:2] + (cap, self.buf.shape[3]), dtype=np.float32)
            new[:, :, : self.n] = self.buf[:, :, : self.n]
            self.buf = new
        self.buf[:, :, self.n : self.n + t] = rows
        self.n += t


class Session(QObject):
    run_started = Signal()
    step_added = Signal(int)
    cursor_moved = Signal(int)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.run: RunInfo | None = None
        self.records: list[StepRecord] = []
        self.cursor = -1
        self._token_labels: dict[int, str] = {}

    # ------------------------------------------------------------------ building
    def start_run(self, run: RunInfo) -> None:
        self.run = run
        self.records = []
        self.cursor = -1
        cfg = run.config
        L, H, Hkv, D = cfg["n_layers"], cfg["n_heads"], cfg["n_kv_heads"], cfg["head_dim"]
        self.q = _Grow(L, H, D)
        self.k = _Grow(L, Hkv, D)
        self.v = _Grow(L, Hkv, D)
        self.lane_names = [lane["name"] for lane in run.lanes]
        self.cum_rows = {name: [] for name in self.lane_names}
        self.cum_flops = {name: [] for name in self.lane_names}
        self.wall_ms = {name: [] for name in self.lane_names}
        self._token_labels = dict(run.token_texts)
        self.tokens: list[int] = list(run.prompt_ids)
        self.run_started.emit()
        self.cursor_moved.emit(self.cursor)

    def add_record(self, record: StepRecord) -> bool:
        """Append a record of the current run (stale runs are ignored). Does not move the cursor."""
        if self.run is None or record.run_id != self.run.run_id or record.step != len(self.records):
            return False
        self.records.append(record)
        self.q.append(np.asarray(record.q, dtype=np.float32))
        self.k.append(np.asarray(record.k, dtype=np.float32))
        self.v.append(np.asarray(record.v, dtype=np.float32))
        for lane in record.lanes:
            rows, flops = self.cum_rows[lane.name], self.cum_flops[lane.name]
            rows.append((rows[-1] if rows else 0) + lane.kv_positions)
            flops.append((flops[-1] if flops else 0) + lane.flops)
            self.wall_ms[lane.name].append(lane.wall_ms)
        self.tokens.append(record.token_id)
        self._token_labels.setdefault(record.token_id, record.token)
        self.step_added.emit(record.step)
        return True

    def set_cursor(self, step: int) -> None:
        step = max(-1, min(step, len(self.records) - 1))
        if step != self.cursor:
            self.cursor = step
            self.cursor_moved.emit(step)

    # ------------------------------------------------------------------ reading
    @property
    def prompt_len(self) -> int:
        return len(self.run.prompt_ids) if self.run else 0

    @property
    def n_steps(self) -> int:
        return len(self.records)

    def record(self, step: int | None = None) -> StepRecord | None:
        step = self.cursor if step is None else step
        return self.records[step] if 0 <= step < len(self.records) else None

    def n_rows(self, step: int | None = None) -> int:
        """K/V rows held after ``step`` (P + step); 0 before the prefill."""
        step = self.cursor if step is None else step
        return self.prompt_len + step if step >= 0 else 0

    def new_rows(self, step: int | None = None) -> tuple[int, int]:
        """[lo, hi) of the rows that are new at ``step``."""
        r = self.record(step)
        if r is None:
            return (0, 0)
        return int(r.positions[0]), int(r.positions[-1]) + 1

    def n_text_tokens(self, step: int | None = None) -> int:
        """Tokens of text after ``step``: the prompt plus every token produced so far."""
        step = self.cursor if step is None else step
        return self.prompt_len + step + 1

    def token_label(self, position: int) -> str:
        return self.id_label(self.tokens[position])

    def id_label(self, token_id: int) -> str:
        """The text of a token id (labels seen in this run first, then the tokenizer)."""
        label = self._token_labels.get(token_id)
        if label is None:
            fn = self.run.token_text if self.run is not None else None
            label = fn(token_id) if callable(fn) else f"<{token_id}>"
            self._token_labels[token_id] = label
        return label

    def k_table(self, layer: int, kv_head: int, step: int | None = None) -> np.ndarray:
        return self.k.buf[layer, kv_head, : self.n_rows(step)]

    def v_table(self, layer: int, kv_head: int, step: int | None = None) -> np.ndarray:
        return self.v.buf[layer, kv_head, : self.n_rows(step)]

    def q_rows(self, layer: int, head: int, step: int | None = None) -> np.ndarray:
        return self.q.buf[layer, head, : self.n_rows(step)]

    def cumulative(self, lane: str, step: int | None = None) -> tuple[int, int]:
        step = self.cursor if step is None else step
        if step < 0:
            return 0, 0
        return self.cum_rows[lane][step], self.cum_flops[lane][step]

    def ttft_itl(self, lane: str, step: int | None = None) -> tuple[float | None, float | None]:
        step = self.cursor if step is None else step
        if step < 0:
            return None, None
        ms = self.wall_ms[lane][: step + 1]
        return ms[0], (float(np.mean(ms[1:])) if len(ms) > 1 else None)
