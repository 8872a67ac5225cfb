"""Attention rows derived from stored Q and K: pure numpy, no Qt.

A StepRecord keeps only each step's new Q/K/V rows, so the attention a view draws is recomputed
here, exactly as the model computes it::

    p = softmax(q · Kᵀ / √d)   over the key positions the query may see (causal, optional window)

For GQA, query head ``h`` reads kv head ``h // (H / H_kv)``. Masked positions come back as NaN so
a view can draw them as "masked", not as probability 0.
"""

from __future__ import annotations

import numpy as np

from kvsim.core.masking import visibility


def kv_head_of(head: int, n_heads: int, n_kv_heads: int) -> int:
    """The K/V head query head ``head`` reads (GQA: groups of H/H_kv query heads share one)."""
    if not 0 <= head < n_heads:
        raise ValueError(f"head {head} outside 0..{n_heads - 1}")
    return head // (n_heads // n_kv_heads)


def visible_mask(
    q_pos: np.ndarray, k_pos: np.ndarray, window: int | None = None, lane_window: int | None = None, sinks: int = 0
) -> np.ndarray:
    """(T, S) bool: which key positions each query position attends to — the model's own rule."""
    return visibility(np.asarray(q_pos), np.asarray(k_pos), window, lane_window, sinks)


def attention_rows(
    q: np.ndarray,
    k: np.ndarray,
    q_pos: np.ndarray,
    k_pos: np.ndarray,
    window: int | None = None,
    lane_window: int | None = None,
    sinks: int = 0,
    scale_dim: float | None = None,
) -> np.ndarray:
    """Attention probabilities (T, S) of queries ``q`` (T, D) over keys ``k`` (S, D); NaN where masked.
    Scores are divided by √``scale_dim`` (the model's ``query_pre_attn_scalar``; default D — MLA's latent
    rows are r + d_R wide but scaled by its heads' d + d_R)."""
    q = np.asarray(q, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    if q.ndim != 2 or k.ndim != 2 or q.shape[1] != k.shape[1]:
        raise ValueError(f"q {q.shape} and k {k.shape} must be (T, D) and (S, D)")
    scores = (q @ k.T) / np.sqrt(scale_dim or q.shape[1])  # (T, S)
    visible = visible_mask(q_pos, k_pos, window, lane_window, sinks)
    scores = np.where(visible, scores, -np.inf)
    top = scores.max(axis=1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.exp(scores - top)
    total = e.sum(axis=1, keepdims=True)
    probs = e / np.where(total > 0, total, 1.0)
    return np.where(visible, probs, np.nan).astype(np.float32)


class AttentionRows:
    """Lazily computed attention rows of one (layer, query head) over a growing sequence.

    Row ``p`` depends only on ``q_p`` and ``K[:p+1]``, so once computed it never changes: rows are
    kept and only missing ones are computed (stepping back and forth costs nothing).
    """

    def __init__(self, window: int | None = None, scale_dim: float | None = None) -> None:
        self.window = window
        self.scale_dim = scale_dim
        self._rows: dict[int, np.ndarray] = {}

    def clear(self) -> None:
        self._rows.clear()

    def rows(self, q_all: np.ndarray, k_all: np.ndarray, lo: int, hi: int, n: int) -> np.ndarray:
        """Rows ``lo..hi-1`` as a (hi-lo, n) matrix over key positions 0..n-1 (NaN = masked)."""
        out = np.full((hi - lo, n), np.nan, dtype=np.float32)
        missing = [p for p in range(lo, hi) if p not in self._rows]
        if missing:
            a, b = missing[0], missing[-1] + 1
            block = attention_rows(q_all[a:b], k_all[:b], np.arange(a, b), np.arange(b), self.window, scale_dim=self.scale_dim)
            for i, p in enumerate(range(a, b)):
                self._rows[p] = block[i, : p + 1]
        for i, p in enumerate(range(lo, hi)):
            row = self._rows[p]
            m = min(row.shape[0], n)
            out[i, :m] = row[:m]
        return out
