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

from ..core.formulas import KVShape, LaneBill, kv_cache_bytes
from ..core.words import QT_TRANSLATE_NOOP
from .base import Cache, PolicyInfo, PolicyWords, SpecError
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
    """One layer's rows: buffers (B, H_kv, C, D) and positions (C,). The held run is slots [start, end):
    ``sinks`` sink rows (positions 0..sinks-1), then window rows (positions w_lo, w_lo + 1, …).
    The counts are kept in Python so that a step costs no reductions over the positions."""

    __slots__ = ("k", "v", "pos", "start", "end", "sinks", "w_lo", "undo")

    def __init__(self) -> None:
        self.k: torch.Tensor | None = None
        self.v: torch.Tensor | None = None
        self.pos: torch.Tensor | None = None
        self.start = self.end = 0
        self.sinks = 0  # sink rows held
        self.w_lo = 0  # position of the first window row (the next position while the window is empty)
        # (first position of the last update, the rows it evicted from before it): to undo that update.
        # A piece is a slot range still intact in the buffers, or copies (when a copy overwrote them).
        self.undo: tuple[int, list[tuple]] | None = None

    @property
    def capacity(self) -> int:
        return 0 if self.k is None else self.k.shape[2]

    @property
    def window_rows(self) -> int:
        return self.end - self.start - self.sinks

    def buffers(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The K, V and position buffers (allocated by the layer's first update)."""
        if self.k is None or self.v is None or self.pos is None:
            raise RuntimeError("this layer holds no rows yet")
        return self.k, self.v, self.pos

    def rows(self, a: int, b: int, copy: bool = False) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        k, v, pos = self.buffers()
        got = (k[:, :, a:b], v[:, :, a:b], pos[a:b])
        return (got[0].clone(), got[1].clone(), got[2].clone()) if copy else got


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

    def _place(self, s: _Strip, like: torch.Tensor, k: torch.Tensor, v: torch.Tensor, pos: torch.Tensor, room: int) -> None:
        """Put the run (k, v, pos; not views of the strip) at the front of a strip with ``room`` free
        slots after it, reusing the buffers when they fit (so the strip shrinks back after a long prompt)."""
        m = pos.shape[0]
        capacity = max(m + room, min(max(2 * s.capacity, 64), self.sinks + 2 * self.window))
        if s.k is None or s.capacity != capacity:
            b, h, _, d = like.shape
            s.k, s.v = like.new_empty((b, h, capacity, d)), like.new_empty((b, h, capacity, d))
            s.pos = torch.empty(capacity, dtype=torch.long, device=like.device)
        if m:
            s_k, s_v, s_pos = s.buffers()
            s_k[:, :, :m], s_v[:, :, :m], s_pos[:m] = k, v, pos
        s.start, s.end = 0, m

    def _drop_after_sinks(self, s: _Strip, count: int, keep_from: int, undo: list[tuple]) -> None:
        """Evict the ``count`` oldest window rows (right after the sinks). Rows at positions <
        ``keep_from`` (held before this update) go into ``undo``: as a slot range when nothing
        overwrites them, as copies when the sinks slide forward over them to keep the run contiguous."""
        if count <= 0:
            return
        a = s.start + s.sinks
        old = min(count, max(0, keep_from - s.w_lo))  # of the evicted, the rows from before this update
        if s.sinks:
            if old:
                undo.append(s.rows(a, a + old, copy=True))
            sinks = s.rows(s.start, a, copy=True)
            s_k, s_v, s_pos = s.buffers()
            s_k[:, :, s.start + count : a + count], s_v[:, :, s.start + count : a + count] = sinks[0], sinks[1]
            s_pos[s.start + count : a + count] = sinks[2]
        elif old:
            undo.append((a, a + old))
        s.start += count
        s.w_lo += count

    # ---------------------------------------------------------------- the interface
    def update(
        self, layer: int, k_new: torch.Tensor, v_new: torch.Tensor, positions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``positions`` are consecutive (the simulator feeds arange(done, n)) and follow the held ones."""
        s = self._layers[layer]
        t = k_new.shape[2]
        first = int(positions[0]) if t else s.w_lo + s.window_rows
        undo: list[tuple] = []
        # 1. rows no new query can see any more (older than the first new query's window) go first, so
        #    a decode step reads exactly its window: W - 1 held rows + the new one (+ the sinks)
        stale = min(s.window_rows, max(0, first - self.window + 1 - s.w_lo))
        if s.k is None or s.end + t > s.capacity:  # no room after the run: move it to the front
            a = s.start + s.sinks
            if stale:
                undo.append(s.rows(a, a + stale, copy=True))
            parts = [s.rows(s.start, a), s.rows(a + stale, s.end)] if s.k is not None else []
            held = (
                [torch.cat([p[i] for p in parts], 2 if i < 2 else 0) for i in range(3)]
                if parts
                else [k_new[:, :, :0], v_new[:, :, :0], positions[:0].long()]
            )
            self._place(s, k_new, held[0], held[1], held[2], room=t)
            s.w_lo += stale
        else:
            self._drop_after_sinks(s, stale, first, undo)
        # 2. the new rows go after the run; attention reads the whole run, a view of the strip
        if s.window_rows == 0:  # the window starts after whatever part of the new rows are sinks
            s.sinks += max(0, min(self.sinks, first + t) - first)
            s.w_lo = max(first, min(self.sinks, first + t))
        a, b = s.end, s.end + t
        s_k, s_v, s_pos = s.buffers()
        s_k[:, :, a:b], s_v[:, :, a:b], s_pos[a:b] = k_new, v_new, positions
        s.end = b
        k_all, v_all, read = s.rows(s.start, b)
        # 3. between steps hold only the sinks and the last W rows (a long prompt's earlier rows go now;
        #    the views returned stay valid: nothing is written before the next update, except…)
        extra = s.window_rows - self.window
        if extra > 0 and s.sinks:  # …the sinks sliding forward: return copies then (a long prefill, once)
            k_all, v_all, read = k_all.clone(), v_all.clone(), read.clone()
        self._drop_after_sinks(s, extra, first, undo)
        self._read[layer] = read
        s.undo = (first, undo)
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
            if s.k is None:
                continue
            next_pos = s.w_lo + s.window_rows if s.window_rows else s.sinks
            undo = s.undo is not None and s.undo[0] >= n_tokens
            if not undo and next_pos <= n_tokens:
                continue  # this layer did not store the incomplete step's rows
            pieces = [s.rows(s.start, s.end)]
            if undo and s.undo is not None:  # (undo implies it)
                pieces += [s.rows(*p) if len(p) == 2 else p for p in s.undo[1]]
            k, v, pos = (torch.cat([p[i] for p in pieces], 2 if i < 2 else 0) for i in range(3))
            order = torch.argsort(pos)
            keep = order[pos[order] < n_tokens]
            self._place(s, s.k, k[:, :, keep], v[:, :, keep], pos[keep], room=0)
            held = s.buffers()[2][: s.end].tolist()
            s.sinks = sum(1 for p in held if p < self.sinks)
            s.w_lo = held[s.sinks] if s.window_rows else min(n_tokens, self.sinks) if not held else held[-1] + 1
            s.undo = None
            self._read[layer] = s.buffers()[2][s.start : s.end]

    @property
    def n_tokens(self) -> int:
        s = self._layers[0]
        return s.end - s.start

    @classmethod
    def bill(cls, options: dict[str, Any], shape: KVShape, tokens: int, new_tokens: int, elem_bits: int) -> LaneBill:
        """Each layer holds min(n, S + W) rows: the sinks and the window (as ``kvsim memory --window S+W``)."""
        window = int(options["window"]) + int(options.get("sinks", 0))
        b = kv_cache_bytes(*shape, tokens, 1, elem_bits, window)
        return LaneBill(b, b, elem_bits, window, "")

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
        return s.rows(s.start, s.end)


@register_policy
class SlidingWindowCache(_WindowCache):
    """``window:W``: keeps the last W rows; older ones are evicted (Mistral's local attention)."""

    terms = ("window",)
    grammar = "window:W"
    example = "window:16"  # the app's preset: rows dropped within a short run

    @classmethod
    def parse_options(cls, args: list[list[str]]) -> dict[str, Any]:
        return {"window": _parse_int("window", args[0], "W", "the rows kept", 1)}

    @classmethod
    def words(cls, options: dict[str, Any]) -> PolicyWords:
        # the sizes are in the spec, which the app shows next to the title: "sliding window (window:64)"
        return PolicyWords(
            QT_TRANSLATE_NOOP("policies", "sliding window"),
            QT_TRANSLATE_NOOP("policies", "keeps the last {window} rows; older ones are evicted"),
            {"window": int(options["window"])},
            {"W": QT_TRANSLATE_NOOP("policies", "the rows kept")},
            short=QT_TRANSLATE_NOOP("policies", "window {window}"),
        )

    def __init__(self, n_layers: int, window: int) -> None:
        super().__init__(n_layers, window, 0)

    def describe(self) -> PolicyInfo:
        w = self.window
        words = self.words({"window": w})
        return PolicyInfo.from_words(f"window:{w}", words, reuses_past=True, lossy=False, evicts=True, window=w, sinks=0)


@register_policy
class SinkWindowCache(_WindowCache):
    """``sink:S+window:W`` (the rows StreamingLLM keeps, Xiao et al. 2023): the first S positions stay
    forever, besides the last W — the first tokens soak up attention mass, and keeping them stabilises
    it. Each key keeps its original position (RoPE applied when it was computed); StreamingLLM itself
    re-assigns positions inside the cache: that is ``stream:S+window:W`` (``stream.py``)."""

    terms = ("sink", "window")
    grammar = "sink:S+window:W"
    example = "sink:4+window:12"

    @classmethod
    def parse_options(cls, args: list[list[str]]) -> dict[str, Any]:
        sinks = _parse_int("sink", args[0], "S", "the first positions kept", 0)
        return {"sinks": sinks, "window": _parse_int("window", args[1], "W", "the last rows kept", 1)}

    def __init__(self, n_layers: int, sinks: int, window: int) -> None:
        super().__init__(n_layers, window, sinks)

    @classmethod
    def words(cls, options: dict[str, Any]) -> PolicyWords:
        return PolicyWords(
            QT_TRANSLATE_NOOP("policies", "attention sinks + window"),
            QT_TRANSLATE_NOOP(
                "policies",
                "keeps the first {sinks} rows forever and the last {window}, at their original positions; "
                "the rows between are evicted",
            ),
            {"sinks": int(options["sinks"]), "window": int(options["window"])},
            {
                "S": QT_TRANSLATE_NOOP("policies", "the first positions kept"),
                "W": QT_TRANSLATE_NOOP("policies", "the last rows kept"),
            },
            short=QT_TRANSLATE_NOOP("policies", "sinks {sinks}+{window}"),
        )

    def describe(self) -> PolicyInfo:
        s, w = self.sinks, self.window
        words = self.words({"sinks": s, "window": w})
        return PolicyInfo.from_words(f"sink:{s}+window:{w}", words, reuses_past=True, lossy=False, evicts=True, window=w, sinks=s)
