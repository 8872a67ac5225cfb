"""The Session: the records of one run and the cursor the views draw. Qt, GUI thread only.

It is the one door into the data: views read the run's typed config, its lanes' descriptions,
rows, visible keys and counters through the methods here, never through the records' internals.
Records arrive from the worker (``add_record``); the session appends the shared Q/K/V rows to
growing arrays so that any view can slice "the table at step s" without concatenating, keeps each
lossy lane's own rows as per-step changes, and keeps cumulative counters per lane. Views subscribe
to ``run_started``, ``step_added`` and ``cursor_moved`` and redraw from records: stepping back is
moving the cursor, never recomputing.

Row bookkeeping, stated once: the prompt has P tokens. After step s (0-based; step 0 is the
prefill) the K/V tables hold ``n_rows(s) = P + s`` rows — the token produced at step s is not fed
yet, so after N steps the table has P + N - 1 rows and the text has P + N tokens.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from PySide6.QtCore import QObject, Signal

from kvsim.core.text import printable
from kvsim.engine.records import StepRecord
from kvsim.models.config import ConfigError, ModelConfig

from .i18n import translate


def _words(words: Any) -> dict[str, Any] | None:
    """A lane's recorded ``PolicyWords`` when they have its shape (a damaged file's are dropped, not shown)."""
    if not isinstance(words, dict) or not all(isinstance(words.get(k), str) for k in ("title", "explanation")):
        return None
    values, parameters = words.get("values", {}), words.get("parameters", {})
    if not isinstance(values, dict) or not isinstance(parameters, dict):
        return None
    parameters = {k: v for k, v in parameters.items() if isinstance(k, str) and isinstance(v, str)}
    return {"title": words["title"], "explanation": words["explanation"], "values": values, "parameters": parameters}


@dataclass(frozen=True)
class LaneInfo:
    """What the app knows of a lane before any step: its place, name and its policy's description."""

    index: int
    name: str
    title: str
    explanation: str
    reuses_past: bool = True
    lossy: bool = False
    evicts: bool = False
    window: int | None = None
    sinks: int = 0
    policy: str = ""  # the policy's registered name ("kv", "sink+window"), as the run recorded it
    options: dict[str, Any] = field(default_factory=dict)  # its parsed options
    words: dict[str, Any] | None = None  # its PolicyWords (templates + values), when the run recorded them
    weights: str = ""  # its weights' format when quantized ("w8", "w4:g32", "gguf"); "" for full precision
    draft: str = ""  # where a speculative lane's drafts come from ("lookup", "early:6"); "" for any other lane

    @property
    def exact(self) -> bool:
        """Its rows are the full-precision K/V of every position (a plain cache: kv, paged)."""
        return self.reuses_past and not (self.lossy or self.evicts or self.window or self.weights or self.draft)

    @classmethod
    def from_meta(cls, index: int, lane: dict[str, Any]) -> LaneInfo:
        """From a trace's ``meta["lanes"]`` entry; version-1 traces lack the description: rebuild it."""
        if "title" not in lane:
            from kvsim.caches import SpecError, describe_spec  # only for version-1 traces: imports torch

            try:
                info = describe_spec(str(lane.get("policy", lane["name"]))).to_dict()
            except SpecError:
                info = {"title": lane["name"], "explanation": ""}
            lane = {**info, **lane}
        return cls(
            index=index,
            name=str(lane["name"]),
            title=str(lane.get("title", lane["name"])),
            explanation=str(lane.get("explanation", "")),
            reuses_past=bool(lane.get("reuses_past", True)),
            lossy=bool(lane.get("lossy", False)),
            evicts=bool(lane.get("evicts", False)),
            window=lane.get("window"),
            sinks=int(lane.get("sinks", 0)),
            policy=str(lane.get("policy", lane["name"])),
            options=lane["options"] if isinstance(lane.get("options"), dict) else {},
            words=_words(lane.get("words")),
            weights=str(lane.get("weights") or ""),
            draft=str(lane.get("draft") or ""),
        )


@dataclass
class RunInfo:
    """What the session knows of a run before its first step (from the worker or a saved trace)."""

    run_id: str
    model_id: str
    config: ModelConfig
    prompt_ids: list[int]
    prompt_text: str
    lanes: list[LaneInfo]
    token_texts: dict[int, str] = field(default_factory=dict)  # id -> label for the prompt's ids
    info: dict = field(default_factory=dict)
    eos_id: int | None = None
    token_text: Callable[[int], str] | None = None  # the tokenizer's (pure, safe from any thread)
    meta: dict = field(default_factory=dict)  # the trace's metadata (what a saved .kvsim file carries)

    @property
    def max_seq_len(self) -> int:
        return self.config.max_seq_len

    @classmethod
    def from_trace(
        cls,
        meta: dict,
        run_id: str,
        *,
        info: dict | None = None,
        eos_id: int | None = None,
        token_text: Callable[[int], str] | None = None,
    ) -> RunInfo:
        """The one builder: from a trace's metadata (a live run's, or a validated saved one's)."""
        try:
            config = ModelConfig.from_dict(meta["config"])
        except (ConfigError, TypeError, ValueError) as exc:
            raise ValueError(translate("session", "the run's model config is not usable: {error}").format(error=exc)) from None
        labels = {int(k): str(v) for k, v in meta.get("prompt_tokens", {}).items()}
        return cls(
            run_id=run_id,
            model_id=printable(meta.get("model_id", translate("session", "saved run")), 200),  # escape codes shown, not obeyed
            config=config,
            prompt_ids=[int(i) for i in meta.get("prompt_ids", [])],
            prompt_text=str(meta.get("prompt") or ""),
            lanes=[LaneInfo.from_meta(i, lane) for i, lane in enumerate(meta["lanes"])],
            token_texts=labels,
            info=dict(info or {}),
            eos_id=eos_id,
            token_text=token_text,
            meta=meta,
        )


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


class _OwnRows:
    """A lossy lane's rows: its own queries, and its stored rows as changes step by step."""

    def __init__(self, cfg: ModelConfig) -> None:
        self.q = _Grow(cfg.n_layers, cfg.n_heads, cfg.row_width)
        self.changes: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]] = []  # (step, positions, k, v)

    def table(self, shared: _Grow, which: int, layer: int, kv_head: int, lo: int, hi: int, step: int) -> np.ndarray:
        """Rows lo..hi-1 as the lane held them after ``step`` (K if which == 0, else V)."""
        out = shared.buf[layer, kv_head, lo:hi].copy()
        for s, positions, k, v in self.changes:
            if s > step:
                break
            inside = (positions >= lo) & (positions < hi)
            if inside.any():
                out[positions[inside] - lo] = (k if which == 0 else v)[layer, kv_head, inside]
        return out


class Session(QObject):
    run_started = Signal()
    step_added = Signal(int)
    cursor_moved = Signal(int)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.run: RunInfo | None = None
        self.records: list[StepRecord] = []
        self.cursor = -1
        self.lanes: list[LaneInfo] = []
        self._token_labels: dict[int, str] = {}
        self._compared: dict[tuple[str, int, int], Any] = {}  # itl/ttft_compared by (which, lane, step), this run

    # ------------------------------------------------------------------ building
    def start_run(self, run: RunInfo) -> None:
        self.run = run
        self.records = []
        self._compared = {}  # a run's records only grow: a comparison up to a step holds until the next run
        self.cursor = -1
        cfg = run.config
        L, H, Hkv, D = cfg.n_layers, cfg.n_heads, cfg.n_kv_heads, cfg.row_width  # MLA: the latent's width
        self._q = _Grow(L, H, D)
        self._k = _Grow(L, Hkv, D)
        self._v = _Grow(L, Hkv, D)
        self.lanes = list(run.lanes)
        self._own = {lane.index: _OwnRows(cfg) for lane in self.lanes if lane.lossy}
        self._cum_rows: list[list[int]] = [[] for _ in self.lanes]
        self._cum_flops: list[list[int]] = [[] for _ in self.lanes]
        self._wall_ms: list[list[float]] = [[] for _ in self.lanes]
        self._bytes: list[list[int]] = [[] for _ in self.lanes]
        self._ms_lo: list[list[float]] = [[] for _ in self.lanes]  # the spread of repeated timings
        self._ms_hi: list[list[float]] = [[] for _ in self.lanes]
        self._stepwise = [True for _ in self.lanes]  # one forward a step (a speculative lane's steps are not)
        self._token_labels = dict(run.token_texts)
        self.tokens: list[int] = list(run.prompt_ids)
        # free-running: each lane's own text (its own choices); lockstep: all read the reference's
        self.free_running = bool(run.meta.get("free_running"))
        self.lane_tokens = [list(run.prompt_ids) for _ in self.lanes] if self.free_running else None
        self.run_started.emit()
        self.cursor_moved.emit(self.cursor)

    def add_record(self, record: StepRecord) -> bool:
        """Append a record of the current run (stale runs are ignored). Does not move the cursor."""
        if self.run is None or record.run_id != self.run.run_id or record.step != len(self.records):
            return False
        if [lane.name for lane in record.lanes] != [lane.name for lane in self.lanes]:
            return False
        self.records.append(record)
        self._q.append(np.asarray(record.q, dtype=np.float32))
        self._k.append(np.asarray(record.k, dtype=np.float32))
        self._v.append(np.asarray(record.v, dtype=np.float32))
        for i, lane in enumerate(record.lanes):
            rows, flops = self._cum_rows[i], self._cum_flops[i]
            rows.append((rows[-1] if rows else 0) + lane.kv_positions)
            flops.append((flops[-1] if flops else 0) + lane.flops)
            self._wall_ms[i].append(lane.wall_ms)
            self._stepwise[i] = self._stepwise[i] and lane.forwards == 1 and not lane.drafted
            self._bytes[i].append(lane.cache_bytes)
            self._ms_lo[i].append(lane.wall_ms if lane.wall_ms_min is None else lane.wall_ms_min)
            self._ms_hi[i].append(lane.wall_ms if lane.wall_ms_max is None else lane.wall_ms_max)
            if lane.rows is not None and record.step == 0 and i not in self._own:
                self._own[i] = _OwnRows(self.run.config)  # a free-running lane: its rows follow its own text
            if self.lane_tokens is not None:
                self.lane_tokens[i].append(lane.token_id)
            own = self._own.get(i)
            if own is not None:
                if lane.rows is not None:
                    own.q.append(np.asarray(lane.rows.q, dtype=np.float32))
                    own.changes.append(
                        (
                            record.step,
                            lane.rows.positions,
                            np.asarray(lane.rows.k, np.float32),
                            np.asarray(lane.rows.v, np.float32),
                        )
                    )
                else:  # a lossy lane that recorded nothing of its own this step holds the shared rows
                    own.q.append(np.asarray(record.q, dtype=np.float32))
        self.tokens.append(record.token_id)
        self._token_labels.setdefault(record.token_id, record.token)
        self.step_added.emit(record.step)
        return True

    def set_cursor(self, step: int) -> None:
        step = max(-1, min(step, len(self.records) - 1))
        if step != self.cursor:
            self.cursor = step
            self.cursor_moved.emit(step)

    # ------------------------------------------------------------------ reading: the run
    @property
    def config(self) -> ModelConfig | None:
        return self.run.config if self.run is not None else None

    @property
    def prompt_len(self) -> int:
        return len(self.run.prompt_ids) if self.run else 0

    @property
    def n_steps(self) -> int:
        return len(self.records)

    def record(self, step: int | None = None) -> StepRecord | None:
        step = self.cursor if step is None else step
        return self.records[step] if 0 <= step < len(self.records) else None

    def lane_step(self, lane: int, step: int | None = None):
        """What lane ``lane`` (an index) did at ``step`` (a ``LaneStep``), or None before the prefill."""
        r = self.record(step)
        return r.lanes[lane] if r is not None else None

    @property
    def reference(self) -> int:
        """The lane the run's token is taken from (and differences are measured against)."""
        name = self.run.meta.get("reference") if self.run is not None else None
        index = self.lane_index(name) if isinstance(name, str) else None
        return 0 if index is None else index

    def lane_label(self, lane: int) -> str:
        """The lane's title, with its spec when that says more (parameters) or tells two lanes apart."""
        info = self.lanes[lane]
        twin = any(o.title == info.title and o.index != lane for o in self.lanes)
        unnamed = any(c in info.name for c in ":+") and "(" not in info.title  # parameters the title does not show
        return f"{info.title} ({info.name})" if twin or unnamed else info.title

    def lane_index(self, name: str) -> int | None:
        return next((lane.index for lane in self.lanes if lane.name == name), None)

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

    def step_of_position(self, position: int) -> int:
        """The step whose query was at ``position`` (prompt positions are all the prefill's)."""
        return max(0, position - self.prompt_len + 1)

    def n_text_tokens(self, step: int | None = None) -> int:
        """Tokens of text after ``step``: the prompt plus every token produced so far."""
        step = self.cursor if step is None else step
        return self.prompt_len + step + 1

    def token_label(self, position: int, lane: int | None = None) -> str:
        """The token at ``position`` — of ``lane``'s own text when lanes run free, else the run's."""
        tokens = self.lane_tokens[lane] if lane is not None and self.lane_tokens is not None else self.tokens
        return self.id_label(tokens[position]) if 0 <= position < len(tokens) else ""

    def id_label(self, token_id: int) -> str:
        """The text of a token id (labels seen in this run first, then the tokenizer)."""
        label = self._token_labels.get(token_id)
        if label is None:
            fn = self.run.token_text if self.run is not None else None
            label = fn(token_id) if callable(fn) else f"<{token_id}>"
            self._token_labels[token_id] = label
        return label

    # ------------------------------------------------------------------ reading: rows and keys
    def has_own_rows(self, lane: int) -> bool:
        """True when the lane's rows differ from the shared ones (a lossy cache)."""
        return lane in self._own

    def kv_rows(
        self, lane: int, layer: int, kv_head: int, lo: int, hi: int, step: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(K, V) rows lo..hi-1 of ``kv_head`` as lane ``lane`` held them after ``step``: (hi-lo, D) each."""
        own = self._own.get(lane)
        if own is None:
            return self._k.buf[layer, kv_head, lo:hi], self._v.buf[layer, kv_head, lo:hi]
        step = self.cursor if step is None else step
        return (own.table(self._k, 0, layer, kv_head, lo, hi, step), own.table(self._v, 1, layer, kv_head, lo, hi, step))

    def changed_positions(self, lane: int, after: int, upto: int) -> np.ndarray:
        """Sorted positions whose K/V rows lane ``lane`` (lossy) wrote at steps after..upto (``after``
        excluded): the only rows that differ between its tables at those two steps. Empty for other lanes."""
        own = self._own.get(lane)
        if own is None:
            return np.zeros(0, dtype=np.int64)
        hit = [np.asarray(positions, dtype=np.int64) for step, positions, _k, _v in own.changes if after < step <= upto]
        return np.unique(np.concatenate(hit)) if hit else np.zeros(0, dtype=np.int64)

    def q_rows(self, lane: int, layer: int, head: int, lo: int, hi: int) -> np.ndarray:
        """Query rows lo..hi-1 of ``head`` as lane ``lane`` computed them: (hi-lo, D)."""
        own = self._own.get(lane)
        return (own.q if own is not None else self._q).buf[layer, head, lo:hi]

    def shared_rows(self, layer: int, kv_head: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """The exact rows 0..hi-1 (what a full-precision cache holds), for colour levels."""
        return self._k.buf[layer, kv_head, :hi], self._v.buf[layer, kv_head, :hi]

    def selected_rows(self, lane: int, step: int | None = None):
        """The rows each new query of lane ``lane`` read at ``step`` (a ``SelectedRows``: sparse attention, deepseek_v32),
        or None when its queries read every row the lane held."""
        r = self.record(step)
        return None if r is None else getattr(r.lanes[lane], "selected", None)

    def read_positions(self, lane: int, step: int | None = None) -> np.ndarray | None:
        """Key positions lane ``lane``'s attention read at ``step``; None when it read every position."""
        r = self.record(step)
        if r is None:
            return None
        ls = r.lanes[lane]
        return None if ls.spans is None else ls.read_positions(r.n_tokens)

    # ------------------------------------------------------------------ reading: counters
    def cumulative(self, lane: int, step: int | None = None) -> tuple[int, int]:
        step = self.cursor if step is None else step
        if step < 0:
            return 0, 0
        return self._cum_rows[lane][step], self._cum_flops[lane][step]

    def series(self, which: str, lane: int) -> list:
        """Per-step values of one lane: "rows" / "flops" (cumulative), "ms" (measured per step) or
        "bytes" (the cache held after the step), "ms_min" / "ms_max" (the spread of its repeated timings)."""
        series: dict[str, list[list[int]] | list[list[float]]] = {
            "rows": self._cum_rows,
            "flops": self._cum_flops,
            "ms": self._wall_ms,
            "bytes": self._bytes,
            "ms_min": self._ms_lo,
            "ms_max": self._ms_hi,
        }
        return series[which][lane]

    def itl_compared(self, lane: int, step: int | None = None):
        """Lane ``lane``'s decode steps against the first lane's up to ``step``, paired step by step as the
        engine pairs them (``kvsim.core.compare.compare_paired``: ratio, 95% interval, verdict); None for
        the first lane, before a decode step, or when either lane's steps are not one forward each. Lanes
        whose every step did the same counted work read within noise whatever their clocks say."""
        step = self.cursor if step is None else step
        if lane == 0 or step < 1 or not (self._stepwise[0] and self._stepwise[lane]):
            return None
        key = ("itl", lane, step)
        if key not in self._compared:  # the costs panel asks for each lane several times a step (cells, words, tip)
            from kvsim.engine.summary import decode_compared

            records = self.records[1 : step + 1]
            self._compared[key] = decode_compared([r.lanes[0] for r in records], [r.lanes[lane] for r in records])
        return self._compared[key]

    def ttft_compared(self, lane: int):
        """Lane ``lane``'s prefill time against the first lane's as the run summary compares them
        (``kvsim.engine.summary.prefill_compared``): within noise with one timing each, and within noise
        when the two prefills did the same work (``Comparison.same_work``); None for the first lane and
        before the prefill."""
        if lane == 0 or not self.records:
            return None
        key = ("ttft", lane, 0)
        if key not in self._compared:
            from kvsim.engine.summary import prefill_compared

            first = self.records[0]
            self._compared[key] = prefill_compared(first.lanes[0], first.lanes[lane])
        return self._compared[key]

    def ttft_itl(self, lane: int, step: int | None = None) -> tuple[float | None, float | None]:
        step = self.cursor if step is None else step
        if step < 0:
            return None, None
        ms = self._wall_ms[lane][: step + 1]
        return ms[0], (float(np.mean(ms[1:])) if len(ms) > 1 else None)
