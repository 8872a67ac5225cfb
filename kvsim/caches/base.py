"""The cache-policy interface: what a lane keeps of the past K/V rows between steps.

One interface, shaped like `transformers`' ``Cache.update``::

    k_all, v_all = cache.update(layer, k_new, v_new, positions)   # (B, H_kv, S, D) each
    cache.key_positions(layer)   # (S,) absolute position of every returned row
    cache.n_tokens, cache.nbytes, cache.bytes_split(), cache.truncate(n), cache.reset()

A policy may drop rows (so ``key_positions`` is not always ``0..S-1``) or store them differently
(quantized), but ``update`` always returns full-precision rows the attention can read. Each policy
also describes itself (``PolicyInfo``): the app draws titles, explanations, dimming and eviction
from that description and from what the records say the lane held, never from a policy's name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

import torch

from ..core.masking import visibility  # noqa: F401 - part of the policy interface


class SpecError(ValueError):
    """A lane spec that does not parse or names a policy that does not exist."""


@dataclass(frozen=True)
class PolicyInfo:
    """A policy's self-description, carried by traces and drawn by the app."""

    spec: str  # the canonical spec, e.g. "kv", "window:64"
    title: str  # short display name, e.g. "KV cache"
    explanation: str  # one line: what the lane does each step
    reuses_past: bool  # feeds only new tokens (True) or recomputes the prefix (False)
    lossy: bool  # its stored rows may differ from full precision (quantized)
    evicts: bool  # it may drop positions, so attention sees fewer keys than the sequence has
    window: int | None = None  # queries see at most this many most recent keys (its attention mask)…
    sinks: int = 0  # …besides the first `sinks` positions, which stay visible (StreamingLLM's attention sinks)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Cache(ABC):
    """Per-lane K/V storage for every layer of one model. Subclasses register with
    ``kvsim.caches.register_policy`` and are built from a spec string by ``make_cache``."""

    #: the spec's term names, in order: ("kv",), ("window",), ("sink", "window")
    terms: ClassVar[tuple[str, ...]] = ()
    #: whole-spec aliases that build this policy with no parameters ("cached" for "kv")
    aliases: ClassVar[tuple[str, ...]] = ()
    #: the grammar shown in errors and in the app's lane chooser, e.g. "window:W"
    grammar: ClassVar[str] = ""
    #: an example spec for the lane chooser (a policy with parameters needs one)
    example: ClassVar[str] = ""
    #: True when rows computed in earlier steps are reused (the lane feeds only new tokens)
    reuses_past: ClassVar[bool] = True
    #: the attention mask window this policy imposes on its queries (None: causal only)…
    mask_window: int | None = None
    #: …except for the first positions, which every query still sees (attention sinks)
    mask_sinks: int = 0

    @classmethod
    def parse_options(cls, args: list[list[str]]) -> dict[str, Any]:
        """Options (JSON values) from the arguments of each term; raise ``SpecError`` when bad."""
        if any(args):
            raise SpecError(f"{'+'.join(cls.terms)} takes no parameters")
        return {}

    @abstractmethod
    def describe(self) -> PolicyInfo:
        """This lane's policy, in words and flags the app can draw from."""

    @abstractmethod
    def update(
        self, layer: int, k_new: torch.Tensor, v_new: torch.Tensor, positions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Store the new rows of ``layer`` and return every row attention may read."""

    @abstractmethod
    def key_positions(self, layer: int) -> torch.Tensor:
        """Absolute positions of the rows the last ``update`` of ``layer`` returned."""

    @abstractmethod
    def reset(self) -> None:
        """Forget everything (a new prompt)."""

    @abstractmethod
    def truncate(self, n_tokens: int) -> None:
        """Forget rows at positions ≥ ``n_tokens`` (undo a step that did not complete)."""

    @property
    @abstractmethod
    def n_tokens(self) -> int:
        """Tokens whose K/V are held between steps (per layer)."""

    @property
    def nbytes(self) -> int:
        """Bytes held, all layers: payload + overhead."""
        payload, overhead = self.bytes_split()
        return payload + overhead

    @abstractmethod
    def bytes_split(self) -> tuple[int, int]:
        """(payload, overhead) bytes held: K/V values, and what serves them (scales, block tables)."""

    def held_rows(self, layer: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(k, v, positions) as attention reads them now, (B, H_kv, S, D): a lossy policy's
        dequantized rows. The simulator records the rows that changed, so a trace holds them."""
        raise NotImplementedError(f"{type(self).__name__} is lossy but does not expose its rows")
