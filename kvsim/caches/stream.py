"""``stream:S+window:W``: StreamingLLM as the paper runs it (Xiao et al. 2023, "Efficient Streaming
Language Models with Attention Sinks", §3.2 "Rolling KV Cache with Attention Sinks"): the first ``S``
rows (the sinks) and the last ``W``, **with positions re-assigned inside the cache**.

The rows held are exactly those of ``sink:S+window:W`` (the same strip, the same mask); what differs
is the positions RoPE sees. ``sink:S+window:W`` keeps each key rotated at its original position, so
after the window has slid far, a query at position 5,000 reads its sinks 5,000 positions away — a
distance the model never saw in training. Here the keys are cached **before RoPE** and rotated when
read, by their **slot in the cache**: with the cache holding the tokens [0, 1, 2, 3, 6, 7, 8] and the
query at 9, the keys sit at 0 … 6 and the query at 7 (the paper's example). Every distance a query
sees is then at most S + W − 1, however long the stream: what lets the paper's models run past their
trained context.

How it is computed. RoPE scores depend only on the difference of the two positions. A decode step
(one query) does it literally: the held keys rotated by their slots 0 … S − 1, the query by the last
slot. A step of several queries (a long prompt), where each query has its own cache and so its own
slots, uses the same differences: a window key is as far from its query in slots as in positions
(the window is contiguous), and a sink ``j`` is ``min(p, S + W − 1) − j`` slots away from the query
at ``p``; so the scores are the plain ones with the sink columns taken from the query rotated to
``min(p, S + W − 1)``. A model without RoPE (GPT-2's learned positions, added at the input) has
nothing to re-assign: there the lane is ``sink:S+window:W``.

The record's rows of this lane are rotated at their original positions like every other lane's (the
model returns them so), while the cache holds them unrotated; the app draws the lane's attention from
those original positions, i.e. as ``sink:S+window:W``'s — its logits and text are the lane's own.

Bytes: as ``sink:S+window:W`` — the rows held, ``min(n, S + W)`` a layer.
"""

from __future__ import annotations

from typing import Any

import torch

from ..core.words import QT_TRANSLATE_NOOP
from .base import PolicyInfo, PolicyWords
from .registry import register_policy
from .window import _parse_int, _WindowCache


def _cos_sin(positions: torch.Tensor, head_dim: int, theta: float, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """RoPE's tables for ``positions``, as the model computes them (rotate-half, Hugging Face's layout)."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=positions.device, dtype=torch.int64).float() / head_dim))
    freqs = positions.float()[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def _rotate(x: torch.Tensor, positions: torch.Tensor, theta: float) -> torch.Tensor:
    """``x`` (…, T, D) rotated to ``positions`` (T,)."""
    cos, sin = _cos_sin(positions, x.shape[-1], theta, x.dtype)
    half = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., half:], x[..., :half]), dim=-1) * sin


@register_policy
class StreamCache(_WindowCache):
    """``stream:S+window:W``: the sink lane's rows, RoPE applied when read, by slot in the cache."""

    terms = ("stream", "window")
    grammar = "stream:S+window:W"
    example = "stream:4+window:12"
    #: the model leaves RoPE to this cache: keys are stored unrotated, ``read_scores`` rotates them
    rope_at_read = True

    @classmethod
    def parse_options(cls, args: list[list[str]]) -> dict[str, Any]:
        sinks = _parse_int("stream", args[0], "S", "the first positions kept", 0)
        return {"sinks": sinks, "window": _parse_int("window", args[1], "W", "the last rows kept", 1)}

    def __init__(self, n_layers: int, sinks: int, window: int) -> None:
        super().__init__(n_layers, window, sinks)

    @classmethod
    def words(cls, options: dict[str, Any]) -> PolicyWords:
        s, w = int(options["sinks"]), int(options["window"])
        return PolicyWords(
            QT_TRANSLATE_NOOP("policies", "StreamingLLM: positions in the cache"),
            QT_TRANSLATE_NOOP(
                "policies",
                "keeps the first {sinks} rows and the last {window}; "
                "RoPE by slot in the cache, so no distance exceeds {distance}",
            ),
            {"sinks": s, "window": w, "distance": s + w - 1},
            {
                "S": QT_TRANSLATE_NOOP("policies", "the first positions kept"),
                "W": QT_TRANSLATE_NOOP("policies", "the last rows kept"),
            },
            short=QT_TRANSLATE_NOOP("policies", "Stream {sinks}+{window}"),
        )

    def describe(self) -> PolicyInfo:
        s, w = self.sinks, self.window
        words = self.words({"sinks": s, "window": w})
        return PolicyInfo.from_words(
            f"stream:{s}+window:{w}", words, reuses_past=True, lossy=False, evicts=True, window=w, sinks=s
        )

    def read_scores(
        self, layer: int, q: torch.Tensor, k_all: torch.Tensor, positions: torch.Tensor, theta: float
    ) -> torch.Tensor:
        """q·k of this step's queries ``q`` (B, H, T, D) and the rows ``k_all`` (B, H_kv, S, D) the last
        ``update`` returned, both unrotated, with positions re-assigned by slot: (B, H_kv, g, T, S)."""
        b, h, t, d = q.shape
        hkv, s = k_all.shape[1], k_all.shape[2]
        g = h // hkv
        key_pos = self.key_positions(layer)
        if t == 1:  # literally: the keys at their slots 0 … S-1, the query at the last slot
            slots = torch.arange(s, device=k_all.device)
            k_rot = _rotate(k_all, slots, theta)
            q_rot = _rotate(q, slots[-1:], theta)
            return (q_rot.reshape(b, hkv, g, d) @ k_rot.transpose(-1, -2)).view(b, hkv, g, 1, s)
        # several queries, each with its own cache: the same differences of slots (see the module's words)
        k_abs = _rotate(k_all, key_pos, theta)
        q_abs = _rotate(q, positions, theta).reshape(b, hkv, g * t, d)
        scores = (q_abs @ k_abs.transpose(-1, -2)).view(b, hkv, g, t, s)
        sink = key_pos < self.sinks
        if bool(sink.any()):
            capped = positions.clamp(max=self.sinks + self.window - 1)
            q_cap = _rotate(q, capped, theta).reshape(b, hkv, g * t, d)
            sink_scores = (q_cap @ k_abs[:, :, sink].transpose(-1, -2)).view(b, hkv, g, t, -1)
            scores[..., sink] = sink_scores
        return scores
