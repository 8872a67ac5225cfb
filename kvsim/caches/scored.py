"""The machinery shared by the policies that evict by attention (``h2o``, ``tova``, ``snapkv``).

Unlike a window, which drops rows by position alone, these policies drop the rows the model reads
least — so they need the attention probabilities. The model hands them over after each layer's
softmax: ``Attention.attend`` calls every cache's ``observe_attention(layer, probs)`` (``Cache``'s does nothing) with
``probs`` (B, H_kv, g, T, S) in float32 (the g query heads of each KV head, the T new queries, the S
rows ``update`` returned; masked keys are 0). A step of one layer is therefore:

1. ``update``: the new rows are appended to the held ones; attention reads all of them;
2. ``observe_attention``: the policy scores the rows and keeps the ones it wants (``_keep``).

Heads may hold different rows (H2O and SnapKV choose per KV head), so ``key_positions(layer)`` is
(H_kv, S): row ``j`` of KV head ``h`` is the token at position ``key_positions(layer)[h, j]``. Every
head holds the same number of rows, and each head's rows are kept in position order. The model
masks per head with these positions; the records keep S (the rows each head read) as the lane's
context and the union of the heads' positions of layer 0 as its spans.

One request at a time (batch 1): the rows kept are per head, not per sequence of a batch.

A step that does not complete is undone (``truncate``): each layer keeps what it held before its
last ``update`` (tensors are replaced, never written in place), so it is put back exactly.
"""

from __future__ import annotations

import re

import torch

from .base import Cache, SpecError


def parse_count(term: str, text: str, letter: str, meaning: str, minimum: int, example: str) -> int:
    """A whole number parameter (``64`` in ``h2o:64``, ``16`` in ``r16``), with words that say what is wrong."""
    if not text:
        raise SpecError(f"{term}:{letter} has no value, e.g. {example}")
    if not re.fullmatch(r"[+-]?[0-9]+", text):  # plain ASCII digits, as window:W
        raise SpecError(f"{term}:{letter} must be a whole number ({meaning}), got {text!r}")
    if len(text.lstrip("+-")) > 7:
        raise SpecError(f"{term}:{letter} = {text} is too large (at most 9,999,999)")
    value = int(text)
    if value < minimum:
        raise SpecError(f"{term}:{letter} must be ≥ {minimum} ({meaning}), got {value}")
    return value


class _Held:
    """One layer's rows: k, v (1, H_kv, S, D), positions (H_kv, S) int64, scores (H_kv, S) float32."""

    __slots__ = ("k", "v", "pos", "score")

    def __init__(self, k: torch.Tensor, v: torch.Tensor, pos: torch.Tensor, score: torch.Tensor) -> None:
        self.k, self.v, self.pos, self.score = k, v, pos, score


class ScoredCache(Cache):
    """Per-head rows chosen by attention. Subclasses say which rows to keep (``_keep``)."""

    #: what ``scores`` hold, in words for the records and docs ("attention received since the row was stored")
    score_meaning = ""
    #: the scores are kept between steps (H2O's accumulated attention): their bytes count as overhead
    scores_held = False

    def __init__(self, n_layers: int) -> None:
        self.n_layers = n_layers
        self.reset()

    # ---------------------------------------------------------------- state
    def reset(self) -> None:
        self._held: list[_Held | None] = [None] * self.n_layers
        self._before: list[_Held | None] = [None] * self.n_layers  # what the last update started from
        self._first: list[int | None] = [None] * self.n_layers  # first position of the last update
        self._read: list[torch.Tensor | None] = [None] * self.n_layers  # positions the last update returned

    def _keep(self, layer: int, held: _Held, probs: torch.Tensor, new: int) -> torch.Tensor | None:
        """The row indices (H_kv, K) each head keeps, in position order, after attention ``probs``
        (H_kv, g, T, S) of the ``new`` rows' queries; None keeps everything. May update ``held.score``."""
        raise NotImplementedError

    # ---------------------------------------------------------------- the interface
    def update(
        self, layer: int, k_new: torch.Tensor, v_new: torch.Tensor, positions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        b, h, t, _ = k_new.shape
        if b != 1:
            raise ValueError(f"{type(self).__name__} keeps rows per head for one sequence; got a batch of {b}")
        before = self._held[layer]
        pos_new = positions.to(torch.long).view(1, t).expand(h, t)
        score_new = torch.zeros((h, t), dtype=torch.float32, device=k_new.device)
        if before is None:
            held = _Held(k_new, v_new, pos_new.contiguous(), score_new)
        else:
            held = _Held(
                torch.cat([before.k, k_new], 2),
                torch.cat([before.v, v_new], 2),
                torch.cat([before.pos, pos_new], 1),
                torch.cat([before.score, score_new], 1),
            )
        self._before[layer], self._held[layer] = before, held
        self._first[layer] = int(positions[0]) if t else None
        self._read[layer] = held.pos
        return held.k, held.v

    def observe_attention(self, layer: int, probs: torch.Tensor) -> None:
        """This step's attention of ``layer`` (B, H_kv, g, T, S), float32: score the rows, keep some."""
        held = self._held[layer]
        if held is None:
            return
        keep = self._keep(layer, held, probs[0], probs.shape[3])
        if keep is None:
            return
        index = keep[None, :, :, None].expand(1, -1, -1, held.k.shape[3])
        self._held[layer] = _Held(
            held.k.gather(2, index), held.v.gather(2, index), held.pos.gather(1, keep), held.score.gather(1, keep)
        )

    def key_positions(self, layer: int) -> torch.Tensor:
        """(H_kv, S): the position of every row each KV head read in the last ``update`` (before it evicted)."""
        read = self._read[layer]
        if read is None:
            raise RuntimeError("key_positions before update")
        return read

    def row_scores(self, layer: int) -> torch.Tensor:
        """(H_kv, S) float32: each held row's score, as the policy last ranked it (``score_meaning``)."""
        held = self._held[layer]
        if held is None:
            raise RuntimeError("row_scores before update")
        return held.score

    def evict_reason(self, layer: int) -> str:
        """Why this step's rows were dropped (a key of ``kvsim.engine.records.EVICT_REASONS``)."""
        return "lowest_accumulated_score"

    def head_rows(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, str] | None:
        """After a step: (positions, scores) (L, H_kv, S) each head holds, ``evicted`` (L, H_kv, E) the positions
        each head read in the step and dropped after it (sorted), and why (``evict_reason``, "" when none was
        dropped). None before the first step or when the layers hold different counts (they never do here)."""
        held = [self._held[layer] for layer in range(self.n_layers)]
        if any(h is None for h in held) or len({h.pos.shape[1] for h in held if h is not None}) != 1:
            return None
        positions = torch.stack([h.pos for h in held if h is not None])
        scores = torch.stack([h.score for h in held if h is not None]).float()
        dropped = []
        for layer, h in enumerate(held):
            read = self._read[layer]
            assert h is not None and read is not None  # read is set by the update that made h
            # (H_kv, S_read): read, not held — each head's positions offset apart, then one sorted membership test
            offset = torch.arange(read.shape[0], device=read.device)[:, None] * (int(read.max()) + 1 if read.numel() else 1)
            gone = ~torch.isin(read + offset, h.pos + offset)
            dropped.append(torch.sort(read[gone].view(read.shape[0], -1), dim=1).values)
        if len({d.shape[1] for d in dropped}) != 1:
            return None
        evicted = torch.stack(dropped)
        reason = self.evict_reason(0) if evicted.shape[2] else ""
        return positions, scores, evicted, reason

    def truncate(self, n_tokens: int) -> None:
        """Undo the last update of every layer that stored positions ≥ ``n_tokens``; then drop any held
        row at or past ``n_tokens`` (rows evicted by earlier steps are gone, as in a window)."""
        for layer in range(self.n_layers):
            first = self._first[layer]
            if first is not None and first >= n_tokens:
                self._held[layer] = self._before[layer]
                self._first[layer] = None
            held = self._held[layer]
            self._read[layer] = None if held is None else held.pos
            if held is None or not bool((held.pos >= n_tokens).any()):
                continue
            # heads may hold different counts below n_tokens (an older step's choice): keep the fewest
            count = int((held.pos < n_tokens).sum(1).min())
            if count == 0:
                self._held[layer] = self._read[layer] = None
                continue
            keep = torch.argsort((held.pos >= n_tokens).to(torch.int8), dim=1, stable=True)[:, :count]
            index = keep[None, :, :, None].expand(1, -1, -1, held.k.shape[3])
            kept = _Held(held.k.gather(2, index), held.v.gather(2, index), held.pos.gather(1, keep), held.score.gather(1, keep))
            self._held[layer], self._read[layer] = kept, kept.pos

    @property
    def n_tokens(self) -> int:
        held = self._held[0]
        return 0 if held is None else held.pos.shape[1]

    def bytes_split(self) -> tuple[int, int]:
        """(K and V of the rows held, all layers; the scores held between steps, float32, when the policy keeps them)."""
        payload = overhead = 0
        for held in self._held:
            if held is not None:
                payload += 2 * held.k.numel() * held.k.element_size()
                if self.scores_held:
                    overhead += held.score.numel() * held.score.element_size()
        return payload, overhead

    def held_rows(self, layer: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(k, v, positions) held between steps: (1, H_kv, S, D) and (H_kv, S)."""
        held = self._held[layer]
        if held is None:
            raise RuntimeError("held_rows before update")
        return held.k, held.v, held.pos


def top_rows(score: torch.Tensor, count: int, offset: int = 0) -> torch.Tensor:
    """Indices (H, count) of the ``count`` highest scores of each row of ``score`` (H, N), in position
    order, plus ``offset``. Ties go to the older row (a stable sort of the negated scores)."""
    order = torch.sort(-score, dim=1, stable=True).indices[:, :count]
    return torch.sort(order, dim=1).values + offset
