"""``none`` (alias ``uncached``): no cache. Every step recomputes K/V for the whole prefix, as
nanoGPT's ``generate`` does: the quadratic Σt = n(n+1)/2 rows the seeds start from."""

from __future__ import annotations

from typing import Any, ClassVar

import torch

from ..core.formulas import KVShape, LaneBill, nothing_held
from ..core.words import QT_TRANSLATE_NOOP
from .base import Cache, PolicyInfo, PolicyWords
from .registry import register_policy


@register_policy
class NoCache(Cache):
    terms = ("none",)
    aliases = ("uncached", "nocache")
    grammar = "none"
    reuses_past: ClassVar[bool] = False
    holds_latent: ClassVar[bool] = True  # recomputes an mla model's latents like any rows

    def __init__(self, n_layers: int) -> None:
        self._positions: list[torch.Tensor | None] = [None] * n_layers

    @classmethod
    def words(cls, options: dict[str, Any]) -> PolicyWords:
        return PolicyWords(
            QT_TRANSLATE_NOOP("policies", "no cache"), QT_TRANSLATE_NOOP("policies", "recomputes all rows, every step")
        )

    @classmethod
    def bill(cls, options: dict[str, Any], shape: KVShape, tokens: int, new_tokens: int, elem_bits: int) -> LaneBill:
        return nothing_held(elem_bits)

    def describe(self) -> PolicyInfo:
        return PolicyInfo.from_words("none", self.words({}), reuses_past=False, lossy=False, evicts=False)

    def update(
        self, layer: int, k_new: torch.Tensor, v_new: torch.Tensor, positions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        self._positions[layer] = positions
        return k_new, v_new

    def key_positions(self, layer: int) -> torch.Tensor:
        pos = self._positions[layer]
        if pos is None:
            raise RuntimeError("key_positions before update")
        return pos

    @property
    def record_layer(self) -> int:
        """The first layer that had rows (a hybrid model's recurrent layers and CLA's borrowers have none)."""
        return next((i for i, p in enumerate(self._positions) if p is not None), 0)

    def reset(self) -> None:
        self._positions = [None] * len(self._positions)

    def truncate(self, n_tokens: int) -> None:
        pass  # holds nothing between steps

    @property
    def n_tokens(self) -> int:
        return 0

    def bytes_split(self) -> tuple[int, int]:
        return 0, 0
