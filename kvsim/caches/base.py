"""The cache-policy interface: what a lane keeps of the past K/V rows between steps.

One interface, shaped like `transformers`' ``Cache.update``::

    k_all, v_all = cache.update(layer, k_new, v_new, positions)   # (B, H_kv, S, D) each
    cache.key_positions(layer)   # (S,) absolute position of every returned row
    cache.n_tokens, cache.nbytes, cache.bytes_split(), cache.truncate(n), cache.reset()

A policy may drop rows (so ``key_positions`` is not always ``0..S-1``) or store them differently
(quantized), but ``update`` always returns full-precision rows the attention can read. Each policy
also describes itself (``PolicyInfo``): the app draws titles, explanations, dimming and eviction
from that description and from what the records say the lane held, never from a policy's name.

A technique carries everything about itself, in its one file: its behaviour (``update`` …), its
bytes formula (``bill``: what the memory dock checks the live bytes against) and its words
(``words``: title, explanation and parameter meanings as templates marked with ``QT_TRANSLATE_NOOP``
in the "policies" context, which the app translates and fills; ``describe`` fills them in English).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Protocol

import torch

from ..core.formulas import KVShape, LaneBill
from ..core.masking import visibility  # noqa: F401 - part of the policy interface


class SpecError(ValueError):
    """A lane spec that does not parse or names a policy that does not exist."""


@dataclass(frozen=True)
class PolicyWords:
    """A policy's words as templates marked for translation (``QT_TRANSLATE_NOOP("policies", …)``) and the
    values that fill their named placeholders. The engine shows them filled in English (``filled``); the
    app translates each template, then fills it."""

    title: str  # e.g. "sliding window"
    explanation: str  # e.g. "keeps the last {window} rows; older ones are evicted"
    values: dict[str, Any] = field(default_factory=dict)  # e.g. {"window": 64}
    parameters: dict[str, str] = field(default_factory=dict)  # a spec letter → what it means: {"W": "the rows kept"}
    # the lane in a few words with its key number, for a narrow header ("window {window}", "H2O {heavy}+{recent}");
    # "" when the title is short already
    short: str = ""

    def filled(self) -> tuple[str, str]:
        """(title, explanation) in English, the values put in."""
        return self.title.format(**self.values), self.explanation.format(**self.values)


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
    words: PolicyWords | None = None  # title and explanation as translatable templates (None: English only)

    @classmethod
    def from_words(cls, spec: str, words: PolicyWords, **flags: Any) -> PolicyInfo:
        """The description whose title and explanation are ``words`` filled in English."""
        title, explanation = words.filled()
        return cls(spec=spec, title=title, explanation=explanation, words=words, **flags)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if self.words is None:
            del out["words"]  # a plug-in's description stays as it was
        return out


class Cache(ABC):
    """Per-lane K/V storage for every layer of one model. Subclasses register with
    ``kvsim.caches.register_policy`` and are built from a spec string by ``make_cache``."""

    #: the spec's term names, in order: ("kv",), ("window",), ("sink", "window")
    terms: ClassVar[tuple[str, ...]] = ()
    #: whole-spec aliases that build this policy with no parameters ("cached" for "kv")
    aliases: ClassVar[tuple[str, ...]] = ()
    #: the grammar shown in errors and in the app's lane chooser, e.g. "window:W"
    grammar: ClassVar[str] = ""
    #: an example spec for the lane chooser (a policy with parameters needs one): the app's preset, sized so
    #: its effect shows on the example prompts within a short run (tests/engine/runs/test_demo_effects.py)
    example: ClassVar[str] = ""
    #: True when rows computed in earlier steps are reused (the lane feeds only new tokens)
    reuses_past: ClassVar[bool] = True
    #: the attention mask window this policy imposes on its queries (None: causal only)…
    mask_window: int | None = None
    #: …except for the first positions, which every query still sees (attention sinks)
    mask_sinks: int = 0

    # The optional hooks: the model and the simulator call each of them on every cache, so each is declared
    # here with the default that means "this policy does nothing special" (as transformers' CacheLayerMixin).

    #: True when the model leaves RoPE to this cache: q and k come unrotated and ``read_scores`` rotates them
    #: (StreamingLLM's positions by slot, a latent cache's rebuilt keys)
    rope_at_read: ClassVar[bool] = False
    #: True when it stores rows of any width, so it can hold a latent-attention (mla) model's latents
    holds_latent: ClassVar[bool] = False

    #: True when it holds a recurrent layer's state (a hybrid linear-attention model's Gated DeltaNet layers:
    #: ``layer_state`` / ``keep_state``, kept by ``kvsim.caches.state.RecurrentStates``)
    holds_state: ClassVar[bool] = False

    def layer_state(self, layer: int, n_tokens: int) -> tuple[torch.Tensor, ...] | None:
        """A recurrent ``layer``'s state after the first ``n_tokens`` positions, as ``keep_state`` was given it;
        None when it holds none for that point (a policy that holds no state: the default)."""
        return None

    def keep_state(self, layer: int, states: dict[int, tuple[torch.Tensor, ...]]) -> None:  # noqa: B027 - a hook
        """Hold a recurrent ``layer``'s state after a forward: ``states`` maps a number of positions seen to the
        state after them (the newest, the one a step before it, so a step can be undone, and any point
        ``state_checkpoints`` asked for). Default: nothing."""

    def state_checkpoints(self, start: int, end: int) -> tuple[int, ...]:
        """Points in ``start + 1 … end`` (positions seen) at which a recurrent layer feeding positions
        ``start … end - 1`` should also hand ``keep_state`` its state: a paged pool's block boundaries, where a
        prefix hit may later resume (``kvsim.caches.paged``). Default: none."""
        return ()

    def bind_model(self, model: Any) -> None:  # noqa: B027 - a hook; model: a kvsim Transformer (models/ sits above)
        """Called by the model before its layers run, every forward: a cache built from the model's own
        weights (``latent:R``) factors them here. Default: nothing."""

    def read_scores(
        self, layer: int, q: torch.Tensor, k_all: torch.Tensor, positions: torch.Tensor, theta: float
    ) -> torch.Tensor:
        """q·k of this step's queries ``q`` (B, H, T, D) and the rows ``k_all`` (B, H_kv, S, D) the last ``update``
        of ``layer`` returned, unscaled: (B, H_kv, g, T, S). Read only when ``rope_at_read``, where a policy rotates
        them here (RoPE base ``theta``). Default: the product of the rows as they are (already rotated)."""
        b, h, t, d = q.shape
        hkv, s = k_all.shape[1], k_all.shape[2]
        g = h // hkv
        return (q.reshape(b, hkv, g * t, d) @ k_all.transpose(-1, -2)).view(b, hkv, g, t, s)

    def observe_attention(self, layer: int, probs: torch.Tensor) -> None:  # noqa: B027 - a hook, empty by default
        """This step's attention probabilities of ``layer`` (B, H_kv, g, T, S), float32, handed over after the
        softmax: a policy that evicts by attention scores its rows here (``kvsim.caches.scored``). Default: nothing."""

    @property
    def record_layer(self) -> int:
        """The layer whose key positions the records show (one that holds every row the lane reads). Default: 0."""
        return 0

    def head_rows(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, str] | None:
        """After a step, for a policy whose KV heads hold different rows (eviction by attention): (positions,
        scores) (L, H_kv, S) each head holds, ``evicted`` (L, H_kv, E) the positions dropped after the step and why
        (a key of ``kvsim.engine.records.EVICT_REASONS``, "" when none was dropped). Default: None (heads share rows)."""
        return None

    @classmethod
    def parse_options(cls, args: list[list[str]]) -> dict[str, Any]:
        """Options (JSON values) from the arguments of each term; raise ``SpecError`` when bad."""
        if any(args):
            raise SpecError(f"{'+'.join(cls.terms)} takes no parameters")
        return {}

    @classmethod
    def words(cls, options: dict[str, Any]) -> PolicyWords | None:
        """The title and explanation of a lane with these ``options`` (``parse_options``' result), as
        templates marked ``QT_TRANSLATE_NOOP("policies", …)`` and the values that fill them. None: the
        policy writes English only (``describe``), which the app then shows as it is."""
        return None

    @classmethod
    def bill(cls, options: dict[str, Any], shape: KVShape, tokens: int, new_tokens: int, elem_bits: int) -> LaneBill | None:
        """What the closed form says a lane with these ``options`` holds (all layers, batch 1) after a step
        that fed ``new_tokens`` and left ``tokens`` positions, its K/V elements ``elem_bits`` wide: the
        memory dock's "formula = live" check. None: no closed form (the live bytes are the policy's own count)."""
        return None

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

    def take_rewritten_from(self) -> int:
        """The lowest row slot (index into ``held_rows``' rows) written since the last call — appended, rewritten or
        cut and written again — and start counting anew: rows below it are bit for bit what they were, so the
        simulator compares only the rows from there with what it last recorded (``kvsim.engine.lane.RowMirror``).
        Default 0: any row may have changed (every held row is compared, O(n) a step)."""
        return 0


class SequenceAttention(Protocol):
    """What a packed batch asks of a layer's attention (``kvsim.models.transformer.Attention``): one
    sequence's attention, its rows stored in and read from that sequence's own ``cache``."""

    def attend(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        positions: torch.Tensor,
        cache: Cache,
        layer: int,
        rope_at_read: bool = False,
    ) -> torch.Tensor: ...


class PackedBatch(ABC):
    """Several sequences packed in one row of a forward (``kvsim.serving.batching``), handed to the model in
    place of a ``Cache``: the projections and MLP run over the whole row, and the model hands each layer's
    attention to ``attend_packed``, which runs it per sequence. It is no cache: nothing is held or billed here."""

    @abstractmethod
    def attend_packed(
        self,
        attention: SequenceAttention,
        layer: int,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        positions: torch.Tensor,
    ) -> torch.Tensor:
        """``layer``'s attention of the packed row: q (B, H, T, D), k and v (B, H_kv, T, D) of every sequence,
        side by side along T, at ``positions`` (T,); the heads' outputs (B, T, H*D), the sequences in order."""
