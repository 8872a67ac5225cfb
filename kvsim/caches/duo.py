"""``duo:P[:sS][:wW]``: DuoAttention (Xiao et al. 2024, "DuoAttention: Efficient Long-Context LLM Inference
with Retrieval and Streaming Heads").

Most attention heads look only at the first tokens (the attention sinks) and the recent ones; a few —
the *retrieval heads* — look anywhere in the context. DuoAttention keeps a full cache for the retrieval
heads only: every other KV head is a *streaming head* that keeps ``S`` sinks and the ``W`` newest rows, so
its cache stops growing. ``P`` is the share of KV heads, over the whole model, kept as retrieval heads
(the paper deploys 25–50 %): ``round(P/100 · L · H_kv)`` of them (half rounded up).

**How heads are chosen here — not the paper's way.** The paper *trains* a gate per head (distillation on
synthetic passkey-retrieval data: how much the head's output changes when it sees only sinks + recent
rows) and keeps the heads with the highest gates. kvsim trains nothing: it measures an attention pattern
on the prompt itself. At the prefill, for every layer and KV head, the *mass lost* is the attention its
queries (all the prompt's, and the group's query heads, averaged) put on rows a streaming head would not
hold — neither among the first ``S`` positions nor among the ``W`` positions before the query; the heads
with the most mass lost become the retrieval heads (ties: the lower layer, then the lower head). It is an
attention-profiling measure in the spirit of RazorAttention's, computed per prompt, so the split can
differ from prompt to prompt, unlike the paper's fixed one. The prefill attends in full (the measure reads
it) and the split is made after its last layer; the paper's streaming heads already use the Λ-shaped mask
at prefill.

After the prefill and after every step, each streaming head keeps the first ``S`` positions and the ``W``
newest; retrieval heads keep everything. Heads hold different counts (``padded_heads``).

Bytes: the rows each head holds: ``R`` retrieval heads × n rows, the others × min(n, S + W); no scores kept.
"""

from __future__ import annotations

from typing import Any

import torch

from ..core.formulas import KVShape, LaneBill, kv_cache_bytes
from ..core.words import QT_TRANSLATE_NOOP
from .base import PolicyInfo, PolicyWords, SpecError
from .padded_heads import PAD, PaddedHeadsCache
from .registry import register_policy
from .scored import parse_count

DEFAULT_SINKS = 4
DEFAULT_WINDOW = 64

SPLIT = QT_TRANSLATE_NOOP(
    "policies",
    "{retrieval} of {heads} KV heads keep every row; the other {streaming} keep {sinks} sinks and the last {window} rows",
)


def retrieval_count(percent: int, heads: int) -> int:
    """How many of ``heads`` KV heads (all layers) are retrieval heads at ``percent`` %: rounded, half up."""
    return (percent * heads * 2 + 100) // 200


@register_policy
class DuoAttentionCache(PaddedHeadsCache):
    terms = ("duo",)
    grammar = "duo:P[:sS][:wW]"
    example = "duo:50:s4:w8"  # streaming heads drop rows within a short run
    score_meaning = "the attention mass the prompt's queries put outside sinks + window (the head split's measure)"

    @classmethod
    def parse_options(cls, args: list[list[str]]) -> dict[str, Any]:
        given = args[0]
        if not given:
            raise SpecError("duo needs P (the % of KV heads kept whole, the retrieval heads), e.g. duo:50:s4:w32")
        percent = parse_count("duo", given[0], "P", "% of KV heads kept whole", 0, "duo:50")
        if percent > 100:
            raise SpecError(f"duo:P is a percentage of the KV heads (0 to 100), got {percent}")
        options: dict[str, Any] = {"percent": percent}
        for arg in given[1:]:
            name = {"s": "sinks", "w": "window"}.get(arg[:1].lower())
            if name is None or name in options:
                raise SpecError(f"duo takes P, then sS (sinks) and wW (recent rows) of the streaming heads, got {arg!r}")
            least = 0 if name == "sinks" else 1
            options[name] = parse_count("duo", arg[1:], arg[:1] + arg[:1].upper(), name, least, "duo:50:s4:w32")
        return options

    def __init__(self, n_layers: int, percent: int, sinks: int = DEFAULT_SINKS, window: int = DEFAULT_WINDOW) -> None:
        if not 0 <= percent <= 100 or sinks < 0 or window < 1:
            raise ValueError(f"duo needs 0 ≤ P ≤ 100, S ≥ 0, W ≥ 1; got P={percent}, S={sinks}, W={window}")
        self.percent, self.sinks, self.window = percent, sinks, window
        super().__init__(n_layers)

    def reset(self) -> None:
        super().reset()
        self._lost: list[torch.Tensor | None] = [None] * self.n_layers  # (H_kv,) each layer's measure, at prefill
        self._retrieval: torch.Tensor | None = None  # (L, H_kv) bool, once the prefill's last layer is measured

    @staticmethod
    def _options(options: dict[str, Any]) -> tuple[int, int, int]:
        return (
            int(options["percent"]),
            int(options.get("sinks", DEFAULT_SINKS)),
            int(options.get("window", DEFAULT_WINDOW)),
        )

    @classmethod
    def words(cls, options: dict[str, Any]) -> PolicyWords:
        percent, sinks, window = cls._options(options)
        return PolicyWords(
            QT_TRANSLATE_NOOP("policies", "DuoAttention: retrieval and streaming heads"),
            QT_TRANSLATE_NOOP(
                "policies",
                "{percent}% of the KV heads keep every row; the others keep {sinks} sinks and the last {window} rows. "
                "The split: the heads whose prompt attention falls most outside those rows (measured here, not trained)",
            ),
            {"percent": percent, "sinks": sinks, "window": window},
            {
                "P": QT_TRANSLATE_NOOP("policies", "% of KV heads kept whole"),
                "S": QT_TRANSLATE_NOOP("policies", "sinks of a streaming head"),
                "W": QT_TRANSLATE_NOOP("policies", "recent rows of a streaming head"),
            },
            short=QT_TRANSLATE_NOOP("policies", "Duo {percent}%"),
        )

    @classmethod
    def bill(cls, options: dict[str, Any], shape: KVShape, tokens: int, new_tokens: int, elem_bits: int) -> LaneBill:
        """R retrieval heads hold n rows, the other L·H_kv − R hold min(n, S + W)."""
        percent, sinks, window = cls._options(options)
        heads = shape.layers * shape.kv_heads
        retrieval = retrieval_count(percent, heads)
        rows = retrieval * tokens + (heads - retrieval) * min(tokens, sinks + window)
        held = kv_cache_bytes(1, 1, shape.head_dim, rows, 1, elem_bits)
        formula = kv_cache_bytes(*shape, tokens, 1, elem_bits)
        values = {"retrieval": retrieval, "heads": heads, "streaming": heads - retrieval, "sinks": sinks, "window": window}
        return LaneBill.explained(formula, held, elem_bits, None, SPLIT, values)

    def describe(self) -> PolicyInfo:
        words = self.words({"percent": self.percent, "sinks": self.sinks, "window": self.window})
        spec = f"duo:{self.percent}:s{self.sinks}:w{self.window}"
        return PolicyInfo.from_words(spec, words, reuses_past=True, lossy=False, evicts=True)

    def evict_reason(self, layer: int) -> str:
        return "outside_recent_window"

    def retrieval_heads(self) -> torch.Tensor | None:
        """(L, H_kv) bool: the retrieval heads, once the prefill has been measured (None before)."""
        return self._retrieval

    def observe_attention(self, layer: int, probs: torch.Tensor) -> None:
        held = self._held[layer]
        if held is None:
            return
        if self._retrieval is None:  # the prefill: measure this layer; split once every layer is measured
            t = probs.shape[3]
            q_pos = held.pos[0, -t:]
            k_pos = held.pos[0]
            seen = (k_pos[None, :] < self.sinks) | (k_pos[None, :] >= q_pos[:, None] - self.window)  # (T, S)
            lost = (probs[0] * ~seen).sum(-1).mean(dim=(1, 2))  # (H_kv,): over the group's heads and the queries
            self._lost[layer] = lost
            held.score = lost[:, None].expand_as(held.score).clone()
            if layer < self.n_layers - 1 or any(x is None for x in self._lost):
                return
            measured = torch.stack([x for x in self._lost if x is not None])  # (L, H_kv)
            order = torch.sort(-measured.reshape(-1), stable=True).indices  # ties: the lower layer, then head
            retrieval = torch.zeros(measured.numel(), dtype=torch.bool, device=measured.device)
            retrieval[order[: retrieval_count(self.percent, measured.numel())]] = True
            self._retrieval = retrieval.view(measured.shape)
            for each in range(self.n_layers):
                self._stream(each)
            return
        self._stream(layer)

    def _stream(self, layer: int) -> None:
        """The streaming heads of ``layer`` keep their sinks and their ``W`` newest rows."""
        held, retrieval = self._held[layer], self._retrieval
        assert held is not None and retrieval is not None
        real = held.pos != PAD
        newest = torch.where(real, held.pos, -1).amax(1, keepdim=True)  # (H_kv, 1)
        streamed = (held.pos < self.sinks) | ((held.pos > newest - self.window) & real)
        keep = (retrieval[layer][:, None] & real) | streamed
        if not bool((keep == real).all()):
            self.keep_only(layer, keep)

    def truncate(self, n_tokens: int) -> None:
        super().truncate(n_tokens)
        if all(h is None for h in self._held):  # the prefill itself undone: measure the next one afresh
            self._lost = [None] * self.n_layers
            self._retrieval = None
