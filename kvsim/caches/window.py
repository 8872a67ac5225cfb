"""``window:W`` (sliding window) and ``sink:S+window:W`` (StreamingLLM's attention sinks).

Both really evict: between steps a lane holds the last ``W`` rows (plus the first ``S`` positions,
the *sinks*, for ``sink:S+window:W``), so its memory plateaus at ``W`` (``S + W``) rows however
long the sequence grows. Each query sees only the keys inside its window (``mask_window``), which
the model's attention mask applies, so a prompt longer than ``W`` is prefilled exactly as a
sliding-window model (Mistral) computes it.

Storage is a ring buffer *unrolled* into a strip of ``S + 2W`` slots: the held rows are one
contiguous run in position order (sinks first), new rows are written after the run and its start
slides forward as the oldest row is evicted. When the strip's end is reached the run (at most
``S + W`` rows) is copied back to the front — once every ``W`` steps, so about one row per step,
never a tensor that grows with the sequence. Attention reads a view of the run: no copy per step
(a sink lane copies its ``S`` sink rows one slot forward when a row behind them is evicted).

A step that does not complete is undone (``truncate``): each layer keeps the rows its last
``update`` evicted until the next one, so they can be put back exactly.

Bytes: held rows × 2 (K, V) × H_kv × head_dim × element size, all layers, as ``kvsim memory
--window`` computes (``min(n, W)`` rows a layer). The bookkeeping (one int64 position a slot) and
the strip's spare slots are not counted, as the ``kv`` cache counts neither its positions nor its
spare capacity; ``allocated_bytes`` says what the strip reserves.
"""

from __future__ import annotations

import re
from typing import Any

import torch

from .base import Cache, PolicyInfo, SpecError
from .registry import register_policy


def _parse_int(term: str, args: list[str], letter: str, meaning: str, minimum: int) -> int:
    """The one integer parameter of ``term`` (``window:64``), with a message that says what is wrong."""
    example = f"{term}:{64 if term == 'window' else 4}"
    if not args:
        raise SpecError(f"{term} needs {letter} ({meaning}), e.g. {example}")
    if len(args) > 1:
        raise SpecError(f"{term} takes one parameter, {letter} ({meaning}); got {len(args)}: {':'.join(args)!r}")
    text = args[0]
    if not text:
        raise SpecError(f"{term}:{letter} has no value, e.g. {example}")
    if not re.fullmatch(r"[+-]?[0-9]+", text):  # plain ASCII digits: no '1_000', no '٣', no '1e3'
        raise SpecError(f"{term}:{letter} must be a whole number ({meaning}), got {text!r}")
    if len(text.lstrip("+-")) > 9:
        raise SpecError(f"{term}:{letter} = {text} is too large (at most 999,999,999)")
    value = int(text)
    if value < minimum:
        raise SpecError(f"{term}:{letter} must be ≥ {minimum} ({meaning}), got {value}")
    return value


class _Strip:
    """One layer's rows: buffers (B, H_kv, C, D) and positions (C,); the held run is [start, end)."""

    __slots__ = ("k", "v", "pos", "start", "end", "undo")

    def __init__(self) -> None:
        self.k: torch.Tensor | None = None
        self.v: torch.Tensor | None = None
        self.pos: torch.Tensor | None = None
        self.start = 0
        self.end = 0
        # (first position of the last update, rows it evicted: k, v, positions) — to undo that update
        self.undo: tuple[int, torch.Tensor, torch.Tensor, torch.Tensor] | None = None

    @property
    def capacity(self) -> int:
        return 0 if self.k is None else self.k.shape[2]


class _WindowCache(Cache):
    """The shared machinery; the registered policies below fix ``sinks``."""

    def __init__(self, n_layers: int, window: int, sinks: int = 0) -> None:
        if window < 1 or sinks < 0:
            raise ValueError(f"window must be ≥ 1 and sinks ≥ 0, got window={window}, sinks={sinks}")
        self.n_layers = n_layers
        self.window = window
        self.sinks = sinks
        # the model masks each query to its window (and the sinks): what makes a long prefill exact
        self.mask_window = window
        self.mask_sinks = sinks
        self.reset()

    # ---------------------------------------------------------------- state
    def reset(self) -> None:
        self._layers = [_Strip() for _ in range(self.n_layers)]
        self._read: list[torch.Tensor | None] = [None] * self.n_layers  # positions the last update returned

    def _place(self, s: _Strip, like: torch.Tensor, k: torch.Tensor, v: torch.Tensor, pos: torch.Tensor,
               room: int) -> None:
        """Put the run (k, v, pos) at the front of a strip with ``room`` free slots after it, reusing
        the buffers when they fit (so the strip shrinks back after a long prompt)."""
        m = pos.numel()
        standard = self.sinks + 2 * self.window
        capacity = max(m + room, min(max(2 * s.capacity, 64), standard))
        if s.k is None or s.capacity != capacity:
            b, h, _, d = like.shape
            s.k, s.v = like.new_empty((b, h, capacity, d)), like.new_empty((b, h, capacity, d))
            s.pos = torch.empty(capacity, dtype=torch.long, device=like.device)
        if m:
            s.k[:, :, :m], s.v[:, :, :m], s.pos[:m] = k, v, pos
        s.start, s.end = 0, m

    def _evict(self, s: _Strip, count: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Drop the ``count`` oldest non-sink rows of the run (they sit right after the sinks); return copies."""
        if count <= 0:
            return (s.k[:, :, :0].clone(), s.v[:, :, :0].clone(), s.pos[:0].clone())
        n_sinks = int((s.pos[s.start:s.end] < self.sinks).sum())
        a = s.start + n_sinks
        gone = (s.k[:, :, a:a + count].clone(), s.v[:, :, a:a + count].clone(), s.pos[a:a + count].clone())
        if n_sinks:  # slide the sinks forward over the evicted rows so the run stays contiguous
            lo, hi = s.start, s.start + n_sinks
            sk, sv, sp = s.k[:, :, lo:hi].clone(), s.v[:, :, lo:hi].clone(), s.pos[lo:hi].clone()
            s.k[:, :, lo + count:hi + count], s.v[:, :, lo + count:hi + count], s.pos[lo + count:hi + count] = sk, sv, sp
        s.start += count
        return gone

    def _window_rows(self, s: _Strip) -> int:
        return int((s.pos[s.start:s.end] >= self.sinks).sum()) if s.pos is not None else 0

    # ---------------------------------------------------------------- the interface
    def update(self, layer: int, k_new: torch.Tensor, v_new: torch.Tensor,
               positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        s = self._layers[layer]
        t = k_new.shape[2]
        first = int(positions[0]) if t else (int(s.pos[s.end - 1]) + 1 if s.end else 0)
        # 1. rows no new query can see any more (older than the window of the first new query) go now,
        #    so a decode step reads exactly its window: W - 1 held rows + the new one (+ the sinks)
        if s.end > s.start:
            old = s.pos[s.start:s.end]
            stale = int(((old >= self.sinks) & (old <= first - self.window)).sum())
        else:
            stale = 0
        if s.k is None or s.end + t > s.capacity:  # no room after the run: move it to the front first
            run = slice(s.start, s.end)
            held = (s.k[:, :, run].clone(), s.v[:, :, run].clone(), s.pos[run].clone()) if s.k is not None \
                else (k_new[:, :, :0], v_new[:, :, :0], positions[:0].long())
            gone_k, gone_v, gone_p = held[0][:, :, :0], held[1][:, :, :0], held[2][:0]
            if stale:
                n_sinks = int((held[2] < self.sinks).sum())
                cut = slice(n_sinks, n_sinks + stale)
                gone_k, gone_v, gone_p = held[0][:, :, cut], held[1][:, :, cut], held[2][cut]
                keep = torch.ones(held[2].numel(), dtype=torch.bool, device=held[2].device)
                keep[cut] = False
                held = (held[0][:, :, keep], held[1][:, :, keep], held[2][keep])
            self._place(s, k_new, *held, room=t)
        else:
            gone_k, gone_v, gone_p = self._evict(s, stale)
        # 2. the new rows go after the run; attention reads the whole run, a view of the strip
        a, b = s.end, s.end + t
        s.k[:, :, a:b], s.v[:, :, a:b], s.pos[a:b] = k_new, v_new, positions
        s.end = b
        k_all, v_all = s.k[:, :, s.start:b], s.v[:, :, s.start:b]
        self._read[layer] = s.pos[s.start:b]
        # 3. between steps hold only the sinks and the last W rows (a long prompt's earlier rows are
        #    evicted now; the views returned above stay valid: nothing is written before the next update)
        extra = self._window_rows(s) - self.window
        if extra > 0:
            if self.sinks and bool((self._read[layer] < self.sinks).any()):
                # sliding the sinks forward would overwrite the rows just returned before attention
                # reads them: return copies instead (a prompt longer than the window: once, at prefill)
                k_all, v_all, self._read[layer] = k_all.clone(), v_all.clone(), self._read[layer].clone()
            more_k, more_v, more_p = self._evict(s, extra)
            # only rows from before this update need restoring on undo; the new ones are simply dropped
            old = more_p < first
            gone_k = torch.cat([gone_k, more_k[:, :, old]], 2)
            gone_v = torch.cat([gone_v, more_v[:, :, old]], 2)
            gone_p = torch.cat([gone_p, more_p[old]])
        s.undo = (first, gone_k, gone_v, gone_p)
        return k_all, v_all

    def key_positions(self, layer: int) -> torch.Tensor:
        read = self._read[layer]
        if read is None:
            raise RuntimeError("key_positions before update")
        return read

    def truncate(self, n_tokens: int) -> None:
        """Undo the last update of every layer that stored positions ≥ ``n_tokens`` (the step that did
        not complete): its new rows go, the rows it evicted come back. Rolling back further than one
        step can only drop rows: what earlier steps evicted is gone (the simulator never asks that)."""
        for layer, s in enumerate(self._layers):
            if s.pos is None or s.end == s.start and s.undo is None:
                continue
            run = slice(s.start, s.end)
            k, v, pos = s.k[:, :, run], s.v[:, :, run], s.pos[run]
            if s.undo is not None and s.undo[0] >= n_tokens:
                _, gone_k, gone_v, gone_p = s.undo
                k, v, pos = torch.cat([k, gone_k], 2), torch.cat([v, gone_v], 2), torch.cat([pos, gone_p])
                s.undo = None
            elif bool((pos < n_tokens).all()):
                continue
            order = torch.argsort(pos)
            keep = order[pos[order] < n_tokens]
            self._place(s, s.k, k[:, :, keep], v[:, :, keep], pos[keep], room=0)
            self._read[layer] = s.pos[s.start:s.end]

    @property
    def n_tokens(self) -> int:
        s = self._layers[0]
        return s.end - s.start

    def bytes_split(self) -> tuple[int, int]:
        total = 0
        for s in self._layers:
            if s.k is not None:
                row_bytes = s.k.shape[0] * s.k.shape[1] * s.k.shape[3] * s.k.element_size()
                total += 2 * row_bytes * (s.end - s.start)
        return total, 0

    @property
    def allocated_bytes(self) -> int:
        """Bytes the strips reserve (held rows and spare slots), all layers."""
        return sum(2 * s.k.numel() * s.k.element_size() for s in self._layers if s.k is not None)

    def held_rows(self, layer: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(k, v, positions) held between steps: the sinks then the last W rows (views)."""
        s = self._layers[layer]
        if s.k is None:
            raise RuntimeError("held_rows before update")
        run = slice(s.start, s.end)
        return s.k[:, :, run], s.v[:, :, run], s.pos[run]


@register_policy
class SlidingWindowCache(_WindowCache):
    """``window:W``: keeps the last W rows; older ones are evicted (Mistral's local attention)."""

    terms = ("window",)
    grammar = "window:W"
    example = "window:64"

    @classmethod
    def parse_options(cls, args: list[list[str]]) -> dict[str, Any]:
        return {"window": _parse_int("window", args[0], "W", "the rows kept", 1)}

    def __init__(self, n_layers: int, window: int) -> None:
        super().__init__(n_layers, window, 0)

    def describe(self) -> PolicyInfo:
        w = self.window
        return PolicyInfo(spec=f"window:{w}", title=f"sliding window ({w})",
                          explanation=f"keeps the last {w} rows; older ones are evicted",
                          reuses_past=True, lossy=False, evicts=True, window=w, sinks=0)


@register_policy
class SinkWindowCache(_WindowCache):
    """``sink:S+window:W`` (StreamingLLM, Xiao et al. 2023): the first S positions stay forever,
    besides the last W — the first tokens soak up attention mass, and keeping them stabilises it."""

    terms = ("sink", "window")
    grammar = "sink:S+window:W"
    example = "sink:4+window:60"

    @classmethod
    def parse_options(cls, args: list[list[str]]) -> dict[str, Any]:
        sinks = _parse_int("sink", args[0], "S", "the first positions kept", 0)
        return {"sinks": sinks, "window": _parse_int("window", args[1], "W", "the last rows kept", 1)}

    def __init__(self, n_layers: int, sinks: int, window: int) -> None:
        super().__init__(n_layers, window, sinks)

    def describe(self) -> PolicyInfo:
        s, w = self.sinks, self.window
        return PolicyInfo(spec=f"sink:{s}+window:{w}", title=f"attention sinks ({s}) + window ({w})",
                          explanation=f"keeps the first {s} rows forever and the last {w}; the rows between "
                                      "are evicted",
                          reuses_past=True, lossy=False, evicts=True, window=w, sinks=s)
