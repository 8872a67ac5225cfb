"""Heads that hold different numbers of rows (``adakv``, ``duo``), laid out as one (H_kv, S) block.

``ScoredCache`` keeps every KV head's rows in one tensor, so every head holds the same count. A policy
whose heads keep different counts pads the shorter heads with rows at position ``PAD``: after every
query, so the causal mask hides them (they get zero attention) and nothing they hold is read. The
padding is how this simulator lays rows out, not what is held: the bytes count only real rows (a real
kernel stores the heads' rows flattened, one varlen block); ``kept_positions`` and the records' spans
leave it out. ``n_tokens`` is the widest head's count, and the records' context is that width. Each
head's rows are kept in position order, its padding last.
"""

from __future__ import annotations

import torch

from .scored import ScoredCache, _Held

PAD = 1 << 30  # the position of a padding row: after every query, so the causal mask hides it


class PaddedHeadsCache(ScoredCache):
    """``ScoredCache`` whose heads may hold different counts: a subclass marks rows dropped with ``keep_only``."""

    def update(
        self, layer: int, k_new: torch.Tensor, v_new: torch.Tensor, positions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        k, v = super().update(layer, k_new, v_new, positions)
        held = self._held[layer]
        assert held is not None  # set by the update
        if bool((held.pos == PAD).any()):  # the new rows went after the padding: padding back to the end
            held = _in_order(held)
            self._held[layer], self._read[layer] = held, held.pos
            return held.k, held.v
        return k, v

    def keep_only(self, layer: int, keep: torch.Tensor, score: torch.Tensor | None = None) -> None:
        """Keep the rows ``keep`` (H_kv, S) bool of ``layer``'s held rows, each head its own; ``score`` (H_kv, S)
        replaces the rows' scores (None: as they were)."""
        held = self._held[layer]
        assert held is not None
        pos = torch.where(keep, held.pos, torch.full_like(held.pos, PAD))
        kept = torch.where(keep, held.score if score is None else score, 0.0)
        self._held[layer] = _trimmed(_in_order(_Held(held.k, held.v, pos, kept)))

    def truncate(self, n_tokens: int) -> None:
        """Undo the last update of every layer that stored positions ≥ ``n_tokens``; then drop any held row at
        or past ``n_tokens`` (each head its own: the padding takes their place)."""
        for layer in range(self.n_layers):
            first = self._first[layer]
            if first is not None and first >= n_tokens:
                self._held[layer] = self._before[layer]
                self._first[layer] = None
            held = self._held[layer]
            if held is not None:
                late = (held.pos >= n_tokens) & (held.pos != PAD)
                if bool(late.any()):
                    pos = torch.where(late, torch.full_like(held.pos, PAD), held.pos)
                    held = _trimmed(_in_order(_Held(held.k, held.v, pos, held.score)))
                    held = None if held.pos.shape[1] == 0 else held
                self._held[layer] = held
            self._read[layer] = None if held is None else held.pos

    def head_rows(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, str] | None:
        """None: the heads hold different counts, which the records' per-head rows (one count) cannot carry."""
        return None

    def kept_positions(self, layer: int) -> list[list[int]]:
        """The positions each KV head of ``layer`` holds, in order, the padding left out."""
        held = self._held[layer]
        if held is None:
            return []
        return [[p for p in row if p != PAD] for row in held.pos.tolist()]

    def bytes_split(self) -> tuple[int, int]:
        """(K and V of the rows the heads hold, all layers, the padding left out; 0: no scores are kept)."""
        payload = 0
        for held in self._held:
            if held is not None:
                real = int((held.pos != PAD).sum())
                payload += 2 * real * held.k.shape[3] * held.k.element_size()
        return payload, 0


def _in_order(held: _Held) -> _Held:
    """``held`` with each head's rows in position order, its padding (position ``PAD``) last."""
    order = torch.sort(held.pos, dim=1, stable=True).indices
    index = order[None, :, :, None].expand(1, -1, -1, held.k.shape[3])
    return _Held(held.k.gather(2, index), held.v.gather(2, index), held.pos.gather(1, order), held.score.gather(1, order))


def _trimmed(held: _Held) -> _Held:
    """``held`` (in order) without the columns that are padding in every head."""
    width = int((held.pos != PAD).sum(1).max()) if held.pos.numel() else 0
    return _Held(held.k[:, :, :width], held.v[:, :, :width], held.pos[:, :width], held.score[:, :width])
