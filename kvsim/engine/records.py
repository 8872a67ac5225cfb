"""Step records: what one step of a run leaves behind, numpy only, no live tensors.

A ``StepRecord`` is frozen and its arrays are read-only, so it can cross threads and be drawn from
at any time. It stores only the step's *new* Q/K/V rows (and, per lane, a ``LaneStep``; a lossy
lane's own rows in ``LaneRows``). ``kvsim.engine.trace`` saves and loads them (import them from here);
``kvsim.engine.trace_checks`` validates them. This module imports neither.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


def _freeze(obj: object, names: tuple[str, ...]) -> None:
    for name in names:
        arr = np.asarray(getattr(obj, name))
        if arr.flags.writeable:
            arr = arr.copy() if not arr.flags.owndata else arr
            arr.flags.writeable = False
        object.__setattr__(obj, name, arr)


#: the widest recurrent state a record keeps as it is (values a side); a wider one is averaged over square blocks
STATE_TILE = 32


def state_tile(matrices: np.ndarray) -> np.ndarray:
    """(H_v, dk, dv) recurrent matrices as a record keeps them: unchanged up to ``STATE_TILE`` a side, else the
    mean of each f × f block (f = ceil(side / STATE_TILE); the last blocks padded by their own edge values)."""
    heads, rows, cols = matrices.shape
    f = -(-max(rows, cols) // STATE_TILE)
    if f <= 1:
        return matrices.astype(np.float32)
    pad = ((0, 0), (0, (-rows) % f), (0, (-cols) % f))
    m = np.pad(matrices.astype(np.float32), pad, mode="edge")
    return m.reshape(heads, m.shape[1] // f, f, m.shape[2] // f, f).mean(axis=(2, 4))


@dataclass(frozen=True)
class LaneRows:
    """A lane's own rows where they differ from the record's shared ones (a lossy cache):
    its queries for this step's new positions, and every stored K/V row that changed this step
    (new rows, and older rows the policy re-encoded), by absolute position."""

    positions: np.ndarray  # (R,) int64, sorted
    k: np.ndarray  # (L, H_kv, R, D): the rows as the lane's attention reads them (dequantized)
    v: np.ndarray  # (L, H_kv, R, D)
    q: np.ndarray  # (L, H, T, D): this step's queries, computed from the lane's own past

    def __post_init__(self) -> None:
        _freeze(self, ("positions", "k", "v", "q"))


#: why a lane that evicts by attention dropped rows at a step (``LaneStep.evict_reason``); the app says it in words
EVICT_REASONS = ("lowest_accumulated_score", "lowest_current_attention", "outside_recent_window", "compressed_at_prefill")


@dataclass(frozen=True)
class HeadRows:
    """The rows of a lane that evicts by attention (h2o, tova, snapkv) after its step, per layer and KV
    head — heads may hold different rows — with the score the policy ranks each by, and the rows it
    read this step and then dropped. Every head of every layer holds the same number of rows."""

    positions: np.ndarray  # (L, H_kv, S) int32: the positions each head holds, in position order
    scores: np.ndarray  # (L, H_kv, S) float32: each held row's score (the policy's ``score_meaning``)
    evicted: np.ndarray  # (L, H_kv, E) int32: positions read this step and dropped after it, sorted

    def __post_init__(self) -> None:
        _freeze(self, ("positions", "scores", "evicted"))


@dataclass(frozen=True)
class SelectedRows:
    """The rows a sparse-attention lane (deepseek_v32: DeepSeek Sparse Attention's top-k) read this step, per layer
    and per new query: its lightning indexer scored every held row and the query's attention read only these. The
    lane still holds every row; ``LaneStep.context`` is how many distinct rows the most-reading layer read."""

    positions: np.ndarray  # (L, T, k) int32: each new query's k positions, increasing; -1 past its visible rows

    def __post_init__(self) -> None:
        _freeze(self, ("positions",))

    def of(self, layer: int, query: int = -1) -> np.ndarray:
        """The positions ``layer``'s query ``query`` (this step's last by default) read, increasing."""
        row = self.positions[layer, query]
        return row[row >= 0].astype(np.int64)


@dataclass(frozen=True)
class DraftRows:
    """A speculative lane's drafted tokens checked by this step's target forward: at ``positions`` (the
    positions after the text, n .. n+d-1), their token ids, and the Q/K/V rows the check computed for
    them. The lane's ``accepted`` first ones stay in its cache; the rest were rolled back this step."""

    positions: np.ndarray  # (d,) int64, consecutive from the step's n_tokens
    token_ids: np.ndarray  # (d,) int64
    k: np.ndarray  # (L, H_kv, d, D)
    v: np.ndarray  # (L, H_kv, d, D)
    q: np.ndarray  # (L, H, d, D)

    def __post_init__(self) -> None:
        _freeze(self, ("positions", "token_ids", "k", "v", "q"))


@dataclass(frozen=True)
class LaneStep:
    """What one lane did in one step."""

    name: str
    policy: str
    kv_positions: int  # positions whose K/V this lane computed this step
    context: int  # key rows its attention read (S)
    flops: int  # matmul FLOPs (the total torch's counter would report)
    flops_by_component: dict[str, int]
    bytes_by_component: dict[str, int]
    wall_ms: float
    cache_tokens: int
    cache_bytes: int
    logit_diff: float  # max |logits - reference lane's logits| at the sampled position
    token_id: int  # the token this lane's own logits choose (same random draw as the reference)
    top_ids: tuple[int, ...] = ()
    top_probs: tuple[float, ...] = ()
    recompute_diff: float | None = None  # uncached lane: max |recomputed old K/V - first K/V|
    first_key: int = 0  # lowest position still visible to this lane (sliding windows evict)
    #: key positions this step's attention read, as [start, end) runs; None = every position 0..n-1
    spans: tuple[tuple[int, int], ...] | None = None
    cache_overhead_bytes: int = 0  # of cache_bytes, what is not K/V values (scales, block tables)
    wall_ms_min: float | None = None  # the spread of the step's repeated, measured forwards (None: one)
    wall_ms_max: float | None = None
    kl_div: float = 0.0  # KL(reference ‖ lane) of the next-token distributions (softmax of the logits), nats
    ref_logprob: float = 0.0  # log p_lane(the token the reference chose): teacher-forced, for perplexity
    rows: LaneRows | None = None  # a lossy lane's own rows (None: it holds the shared rows exactly)
    # a speculative lane (spec:K:DRAFT); every other lane does one forward a step and drafts nothing
    drafted: int = 0  # drafted tokens checked by this step's target forward
    accepted: int = 0  # of them, those the target agreed with (their rows stay in the cache)
    rolled_back: int = 0  # K/V rows removed from the cache this step (the rejected drafts')
    forwards: int = 1  # target forwards this step: 0 when the token came verified with an earlier check
    draft_ms: float = 0.0  # of wall_ms, the time spent drafting
    # a lane that evicts by attention: its rows per layer and KV head, their scores, what it dropped (None: any other)
    held: HeadRows | None = None
    evict_reason: str = ""  # one of EVICT_REASONS when this step dropped rows, else ""
    drafts: DraftRows | None = None  # the drafted rows this step checked (None: no check, or nothing drafted)
    selected: SelectedRows | None = None  # the rows each new query read (sparse attention, deepseek_v32; None: all)

    def read_positions(self, n: int) -> np.ndarray:
        """The key positions this step read, for a sequence of ``n`` positions."""
        if self.spans is None:
            return np.arange(n, dtype=np.int64)
        if not self.spans:
            return np.zeros(0, dtype=np.int64)
        return np.concatenate([np.arange(a, b, dtype=np.int64) for a, b in self.spans])


@dataclass(frozen=True)
class StepRecord:
    run_id: str
    step: int
    phase: str  # "prefill" | "decode"
    positions: np.ndarray  # (T,) positions whose K/V are new this step
    input_ids: np.ndarray  # (T,) the tokens at those positions
    token_id: int  # the token this step produced (at position positions[-1] + 1)
    token: str
    q: np.ndarray  # (L, H, T, D)
    k: np.ndarray  # (L, H_kv, T, D), after RoPE: what the cache holds
    v: np.ndarray  # (L, H_kv, T, D)
    lanes: tuple[LaneStep, ...] = field(default=())
    # a hybrid model (family=qwen3_next): each Gated DeltaNet layer's recurrent matrices after this step, per value
    # head — (L_rec, H_v, r, c), the dk × dv state itself when it is at most STATE_TILE wide, else its mean over
    # square blocks (``state_tile``); the same size at every step. None: no recurrent layer, or no lane held the state
    states: np.ndarray | None = None

    def __post_init__(self) -> None:
        _freeze(self, ("positions", "input_ids", "q", "k", "v"))
        if self.states is not None:
            _freeze(self, ("states",))

    def lane(self, name: str) -> LaneStep:
        for lane in self.lanes:
            if lane.name == name:
                return lane
        raise KeyError(name)

    @property
    def n_tokens(self) -> int:
        """Sequence length after this step's K/V rows (before the produced token)."""
        return int(self.positions[-1]) + 1
