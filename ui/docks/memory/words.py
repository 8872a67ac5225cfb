"""The memory dock's sentences that the engine writes in English (``kvsim.costs.memory`` / ``kvsim.costs.presets``
stay English: the CLI prints them), said again in the app's language from the same figures.

Each function returns exactly the engine's English text when the app runs in English (tests compare
them), and the translated sentence otherwise; a sentence it does not recognise passes through as is.
"""

from __future__ import annotations

import re

from kvsim.costs.memory import formula_rows_text
from kvsim.costs.presets import PRESETS, Preset

from ...i18n import integer, translate


def rows_text(layers: int, window: int | None, layer_windows: tuple[int | None, ...] | None) -> str:
    """``formula_rows_text`` ("15 layers × min(n, 512) + 3 layers × n") with "layers" in the app's language."""
    text = formula_rows_text(layers, window, layer_windows)
    return re.sub(r"(\d+) layers × ", lambda m: translate("views.memory_words", "{n} layers × ").format(n=m.group(1)), text)


def context_warning(p: Preset, tokens: int) -> str | None:
    """``kvsim.costs.presets.context_warning`` in the app's language: a line when ``tokens`` is past the
    model's own maximum context, naming a preset of the same shape that reads that far."""
    if not p.context or tokens <= p.context:
        return None
    line = translate(
        "views.memory_words", "{model} reads at most {context} tokens (its max_position_embeddings): {tokens} is past it"
    ).format(model=p.name, context=integer(p.context), tokens=integer(tokens))
    shape = (p.layers, p.heads, p.kv_heads, p.head_dim, p.hidden)
    twins = [
        o for o in PRESETS.values() if (o.layers, o.heads, o.kv_heads, o.head_dim, o.hidden) == shape and o.context >= tokens
    ]
    if twins:
        twin = min(twins, key=lambda o: o.context)
        line += translate("views.memory_words", "; {model} has the same shape and reads {context}").format(
            model=twin.name, context=integer(twin.context)
        )
    return line
