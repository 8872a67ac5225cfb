"""A hybrid model's recurrent states: what a linear-attention layer holds instead of K/V rows.

Qwen3-Next's Gated DeltaNet layers (``kvsim.models.attention.hybrid``) carry two tensors per sequence from step to step:
the short convolution's last ``conv_kernel - 1`` inputs (``conv``) and one dk × dv matrix per value head
(``recurrent``). Their size does not depend on how many tokens came before: a layer's state bytes are flat in
n, where an attention layer's K/V grow by a row a token. ``RecurrentStates`` holds them for a cache policy that
keeps them (``kv``), by layer and by the number of positions each state has seen; the newest is what the cache
holds and bills, the one a step before it is kept only so that a step can be undone (``truncate``: a step timed
several times, the warm-up's throwaway decode), as a recurrence cannot drop its last token the way a K/V cache
drops its last row. The bytes (``nbytes``) are the newest states' only, as transformers' and vLLM's caches hold.
"""

from __future__ import annotations

import torch

from ..core.formulas import LaneBill
from ..core.words import QT_TRANSLATE_NOOP

#: the memory dock's line on a hybrid model's bill: what the states add to the K/V rows' bytes
STATE_WHY = QT_TRANSLATE_NOOP(
    "policies",
    "the recurrent states: {layers} Gated DeltaNet layers hold {state:,} B in all, flat in n, "
    "beside the K/V rows that only the attention layers ({attention} of them) hold, linear in n",
)


class RecurrentStates:
    """The states of a cache's recurrent layers, by layer, each by the number of positions it has seen."""

    def __init__(self) -> None:
        self._by_layer: dict[int, dict[int, tuple[torch.Tensor, ...]]] = {}

    def get(self, layer: int, n_tokens: int) -> tuple[torch.Tensor, ...] | None:
        return self._by_layer.get(layer, {}).get(n_tokens)

    def keep(self, layer: int, states: dict[int, tuple[torch.Tensor, ...]]) -> None:
        """Hold ``states`` (positions seen → state); of the older ones only the newest before them stays (the
        point this forward started from), so at most a step can be undone."""
        held = self._by_layer.setdefault(layer, {})
        older = [n for n in held if n < min(states)]
        kept = dict(states)
        if older:
            kept[max(older)] = held[max(older)]
        self._by_layer[layer] = {n: kept[n] for n in sorted(kept)[-3:]}

    def truncate(self, n_tokens: int) -> None:
        """Forget the states past ``n_tokens``; a layer left with no state at exactly ``n_tokens`` holds none,
        and the next forward that starts there fails loudly (``kvsim.models.attention.hybrid``) rather than guess."""
        for layer, held in self._by_layer.items():
            self._by_layer[layer] = {n: s for n, s in held.items() if n <= n_tokens}

    def reset(self) -> None:
        self._by_layer.clear()

    def newest(self, layer: int) -> tuple[torch.Tensor, ...] | None:
        held = self._by_layer.get(layer)
        return held[max(held)] if held else None

    @property
    def nbytes(self) -> int:
        """The bytes of every layer's newest state: what the cache holds for the sequence."""
        total = 0
        for layer in self._by_layer:
            state = self.newest(layer)
            if state is not None:
                total += sum(t.numel() * t.element_size() for t in state)
        return total


def state_bytes(conv_values: int, recurrent_values: int, layers: int, elem_bits: int) -> int:
    """The closed form of what ``layers`` recurrent layers hold: the convolution's inputs at the model's element
    width, the recurrent matrices in float32 (transformers' and FLA's kernels keep them so, whatever the dtype)."""
    return layers * (conv_values * elem_bits // 8 + recurrent_values * 4)


def with_states(bill: LaneBill, state: int, layers: int, attention: int) -> LaneBill:
    """``bill`` (the K/V rows of the attention layers) with the recurrent states' bytes added and said."""
    values = {"state": state, "layers": layers, "attention": attention}
    return LaneBill.explained(bill.formula_bytes, bill.expected_bytes + state, bill.bits, bill.window, STATE_WHY, values)
