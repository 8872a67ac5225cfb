"""``pyramid:B[:wW]``: PyramidKV (Cai et al. 2024, "PyramidKV: Dynamic KV Cache Compression based on
Pyramidal Information Funneling").

SnapKV's prefill compression (``snapkv``: the last ``W`` prompt tokens' attention, summed over those
queries and the group's query heads, average-pooled with kernel 5, ranks the earlier prompt rows; the
window's rows are all kept) with a budget that differs by layer: the paper observes that lower layers
spread their attention over the whole prompt and upper layers focus on a few rows ("pyramidal
information funneling"), so lower layers keep more rows and upper layers fewer, the total the same as
``B`` rows in every layer. Decoding then appends every new row in every layer.

The layer budgets, as in the authors' code (``PyramidKVCluster.update_kv`` in Zefan-Cai/PyramidKV,
β = 20), over the ``B − W`` rows each layer may choose beside its window:

* the top layer keeps ``(B − W) // β`` rows, the bottom layer ``2(B − W) − top`` (so their mean is
  ``B − W``), the layers between them on a straight line from bottom to top;
* when the prompt has fewer than ``bottom`` rows before the window, the bottom layer keeps all of them
  and the top rises to keep the mean (``bottom = prompt − W``, ``top = 2(B − W) − bottom``);
* a prompt of at most ``B`` tokens is kept whole in every layer.

Where kvsim differs: the authors' code rounds the line's step down (``steps = (max − min) // (L − 1)``),
which can leave the total above ``B·L`` (by fewer than ``L(L − 1)/2`` rows); here
each layer's share on the exact line is rounded down and the rows left over go one each to the layers
with the largest remainders (the lower layer on a tie), so the layers hold exactly ``B·L`` prompt rows
in total. The selection is per KV head (the group's query heads summed), as ``snapkv``; ``W`` defaults
to 32 but at most ``B``, as ``snapkv``'s.

Bytes: the rows each layer holds (K and V); the scores are used once and not kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F

from ..core.formulas import KVShape, LaneBill, kv_cache_bytes
from ..core.words import QT_TRANSLATE_NOOP
from .base import PolicyInfo, PolicyWords
from .registry import register_policy
from .scored import _Held, top_rows
from .snapkv import DEFAULT_WINDOW, KERNEL, SnapKVCache

BETA = 20  # the authors' β: the top layer keeps 1/β of the mean budget


def pyramid_budgets(budget: int, window: int, layers: int, prompt: int) -> list[int]:
    """The prompt rows each layer keeps (its window included) after a prompt of ``prompt`` tokens: the
    module's schedule. Their sum is ``budget · layers`` unless the prompt is kept whole (``prompt ≤ budget``)."""
    if prompt <= budget:
        return [prompt] * layers
    mean = budget - window
    top = mean // BETA
    bottom = 2 * mean - top
    if bottom > prompt - window:
        bottom = prompt - window
        top = 2 * mean - bottom
    if layers == 1:
        return [budget]
    # layer l's exact share is bottom − l·(bottom − top)/(L − 1); in integers: (bottom·(L−1) − l·(bottom − top)) / (L − 1)
    span = layers - 1
    exact = [bottom * span - layer * (bottom - top) for layer in range(layers)]  # ×(L − 1)
    rows = [e // span for e in exact]
    left = mean * layers - sum(rows)
    by_remainder = sorted(range(layers), key=lambda layer: (-(exact[layer] % span), layer))
    for layer in by_remainder[:left]:
        rows[layer] += 1
    return [window + r for r in rows]


@register_policy
class PyramidKVCache(SnapKVCache):
    terms = ("pyramid",)
    grammar = "pyramid:B[:wW]"
    example = "pyramid:8:w4"  # a budget the app's example prompts exceed
    score_meaning = "the observation window's attention at prefill, pooled (kernel 5); each layer keeps its own count"
    budget_meaning = "prompt rows kept per layer on average"

    @classmethod
    def words(cls, options: dict[str, Any]) -> PolicyWords:
        budget = int(options["budget"])
        return PolicyWords(
            QT_TRANSLATE_NOOP("policies", "PyramidKV: fewer rows in upper layers"),
            QT_TRANSLATE_NOOP(
                "policies",
                "keeps {budget} prompt rows per layer on average, more in lower layers and fewer in upper ones, "
                "chosen by the attention of the last {window} tokens; then appends",
            ),
            {"budget": budget, "window": int(options.get("window") or min(DEFAULT_WINDOW, budget))},
            {
                "B": QT_TRANSLATE_NOOP("policies", "prompt rows kept per layer on average"),
                "W": QT_TRANSLATE_NOOP("policies", "observation window"),
            },
            short=QT_TRANSLATE_NOOP("policies", "PyramidKV {budget}"),
        )

    @classmethod
    def bill(
        cls,
        options: dict[str, Any],
        shape: KVShape,
        tokens: int,
        new_tokens: int,
        elem_bits: int,
        context: Mapping[str, Any] | None = None,
    ) -> LaneBill | None:
        """Each layer's prompt budget (``pyramid_budgets``), then every new row: Σ_l min(prompt, B_l) + L·(n − prompt)
        rows, summed layer by layer. The seed formula is ``snapkv``'s at the same B: the same total, split differently.
        None without the prompt's length."""
        prompt = (context or {}).get("prompt_tokens")
        if prompt is None:
            return None
        budget = int(options["budget"])
        window = int(options.get("window") or min(DEFAULT_WINDOW, budget))
        layers, heads, dim = shape
        kept = pyramid_budgets(budget, window, layers, int(prompt))
        after = max(0, tokens - int(prompt))
        per_layer = [min(tokens, rows) + after for rows in kept]
        held = sum(kv_cache_bytes(1, heads, dim, rows, 1, elem_bits) for rows in per_layer)
        formula = kv_cache_bytes(layers, heads, dim, min(int(prompt), budget) + after, 1, elem_bits)
        return LaneBill(formula, held, elem_bits, None, "")  # equal: the layers' budgets sum to B·L

    def describe(self) -> PolicyInfo:
        b, w = self.budget, self.window
        words = self.words({"budget": b, "window": w})
        return PolicyInfo.from_words(f"pyramid:{b}:w{w}", words, reuses_past=True, lossy=False, evicts=True)

    def layer_budgets(self, prompt: int) -> list[int]:
        """The prompt rows each layer keeps after a prompt of ``prompt`` tokens."""
        return pyramid_budgets(self.budget, self.window, self.n_layers, prompt)

    def _keep(self, layer: int, held: _Held, probs: torch.Tensor, new: int) -> torch.Tensor | None:
        s = held.pos.shape[1]
        if self._before[layer] is not None or s <= self.budget:  # decode appends; a short prompt stays whole
            return None
        keep, w = self.layer_budgets(s)[layer], self.window
        observed = probs[:, :, -w:, :].sum(dim=(1, 2))  # (H_kv, S): the window's queries, the group's heads
        pooled = F.avg_pool1d(observed[:, None, : s - w], KERNEL, stride=1, padding=KERNEL // 2)[:, 0]
        held.score = torch.cat([pooled, observed[:, s - w :]], 1)
        chosen = top_rows(pooled, keep - w)
        window = torch.arange(s - w, s, device=chosen.device).expand(chosen.shape[0], -1)
        return torch.cat([chosen, window], 1)
