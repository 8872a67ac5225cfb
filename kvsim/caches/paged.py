"""``paged:B`` (``paged:B:N``): PagedAttention's layout — K/V rows in a pool of fixed-size blocks.

The lane's rows live in blocks of ``B`` token slots (every layer, K and V) taken from a pool one
block at a time as the sequence grows; a block table maps each logical block (positions
``j·B … j·B+B-1``) to its physical block. Attention reads the rows *through the table*, so the
logits are the contiguous ``kv`` lane's (exactly) — only where the rows sit differs. The read does
not copy every row every step: the sequence keeps a contiguous read buffer per layer and a step
copies into it, through the table, only the rows it wrote (``SequenceBlocks.gather``). ``N`` fixes
the pool's size (a clear error when the sequence outgrows it); without it the pool grows as needed.
Prefix sharing between requests is the requests engine's (``kvsim.serving.requests``): there
several ``PagedCache`` objects read one shared ``BlockPool``.

Bytes (``bytes_split``), all layers:

* payload = every slot of the blocks this sequence holds × 2 (K, V) × H_kv × head_dim × element
  size — *including the empty tail of the last block* (reserved, not yet written). Payload minus
  the ``kv`` lane's bytes is exactly the paged scheme's waste in ``kvsim.serving.waste``
  (internal fragmentation: at most ``B - 1`` slots);
* overhead = the block table: one int64 entry per held block (one table serves every layer).

A block shared with another sequence (a prefix hit) counts fully in each holder's bytes: this is
what the sequence reads, not what the pool holds (``allocated_bytes`` is the whole pool).

On a hybrid linear-attention model (the requests engine's pool, ``keeps_states``) the cache also carries the
recurrent layers' state (``layer_state`` / ``keep_state``, as ``kv`` does), asks those layers for their state at
every block boundary a forward crosses (``state_checkpoints``) and hands it to its block table, which registers it
with the block as the block's checkpoint (``kvsim.caches.blocks``); a sequence that starts with a prefix hit reads
its first state from the checkpoint of its last hit block.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from ..core.formulas import KVShape, LaneBill, kv_cache_bytes
from ..core.sampling import SimulationError
from ..core.words import QT_TRANSLATE_NOOP
from .base import Cache, PolicyInfo, PolicyWords, SpecError
from .block_table import SequenceBlocks
from .blocks import BlockPool, PoolFullError, check_pool_figures
from .registry import register_policy
from .state import RecurrentStates
from .window import _parse_int

TABLE_ENTRY_BYTES = 8  # int64 block ids


@register_policy
class PagedCache(Cache):
    """One sequence's rows in a block pool (its own, or a shared one given by the requests engine)."""

    terms = ("paged",)
    grammar = "paged:B[:N]"
    example = "paged:16"

    @classmethod
    def parse_options(cls, args: list[list[str]]) -> dict[str, Any]:
        given = args[0]
        if len(given) > 2:
            raise SpecError(f"paged takes B (slots per block) and optionally N (blocks in the pool); got {':'.join(given)!r}")
        options: dict[str, Any] = {"block_size": _parse_int("paged", given[:1], "B", "token slots per block", 1)}
        if len(given) == 2:
            options["pool_blocks"] = _parse_int("paged", given[1:], "N", "blocks in the pool", 1)
        try:  # sizes are checked before any model loads or anything is allocated
            check_pool_figures(options["block_size"], options.get("pool_blocks"))
        except SimulationError as exc:
            raise SpecError(f"paged:{':'.join(given)}: {exc}") from None
        return options

    def __init__(
        self,
        n_layers: int,
        block_size: int,
        pool_blocks: int | None = None,
        *,
        pool: BlockPool | None = None,
        sequence: SequenceBlocks | None = None,
    ) -> None:
        self.n_layers = n_layers
        self.block_size = block_size
        self.pool_blocks = pool_blocks
        self.pool = pool if pool is not None else BlockPool(block_size, pool_blocks, prefix_caching=False)
        self.seq = sequence if sequence is not None else SequenceBlocks(self.pool)
        self._pending: tuple[int, torch.Tensor, torch.Tensor] | None = None  # (first position, blocks, slots) of this step
        self._feed: list[int] | None = None
        self._positions = torch.arange(0)
        self._states = RecurrentStates()  # a hybrid model's recurrent layers: the newest state (and the one before)

    @classmethod
    def words(cls, options: dict[str, Any]) -> PolicyWords:
        parameters = {
            "B": QT_TRANSLATE_NOOP("policies", "token slots per block"),
            "N": QT_TRANSLATE_NOOP("policies", "blocks in the pool"),
        }
        return PolicyWords(
            QT_TRANSLATE_NOOP("policies", "paged KV cache"),
            QT_TRANSLATE_NOOP("policies", "rows in blocks of {block_size} slots, read through a block table"),
            {"block_size": int(options["block_size"])},
            parameters,
            short=QT_TRANSLATE_NOOP("policies", "paged {block_size}"),
        )

    @classmethod
    def bill(cls, options: dict[str, Any], shape: KVShape, tokens: int, new_tokens: int, elem_bits: int) -> LaneBill:
        """The seed formula for the rows written; the lane holds whole blocks (the last one's empty slots
        are reserved) and its block table, one int64 per block (``bytes_split``)."""
        size = int(options["block_size"])
        blocks = -(-tokens // size)
        formula = kv_cache_bytes(*shape, tokens, 1, elem_bits)
        payload = kv_cache_bytes(*shape, blocks * size, 1, elem_bits)
        table = blocks * TABLE_ENTRY_BYTES
        if not blocks:
            return LaneBill(formula, formula, elem_bits, None, "")
        why = QT_TRANSLATE_NOOP(
            "policies",
            "whole blocks of {block_size}: the last one's {empty} empty slots are reserved (+{tail:,} B), "
            "and the block table holds {blocks} entries (+{table:,} B)",
        )
        tail = payload - formula
        return LaneBill.explained(
            formula,
            payload + table,
            elem_bits,
            None,
            why,
            {"block_size": size, "empty": blocks * size - tokens, "tail": tail, "blocks": blocks, "table": table},
        )

    def describe(self) -> PolicyInfo:
        b, n = self.block_size, self.pool_blocks
        words = self.words({"block_size": b})
        return PolicyInfo.from_words(
            f"paged:{b}" + (f":{n}" if n is not None else ""), words, reuses_past=True, lossy=False, evicts=False
        )

    def feed(self, token_ids: Sequence[int]) -> None:
        """The token ids of the next update's positions (so full blocks can be hashed and shared)."""
        self._feed = [int(t) for t in token_ids]

    def update(
        self, layer: int, k_new: torch.Tensor, v_new: torch.Tensor, positions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if k_new.shape[0] != 1:
            raise SimulationError(f"a paged cache holds one sequence (batch 1), got a batch of {k_new.shape[0]}")
        b, heads, t, dim = k_new.shape
        self.pool.ensure_storage(self.n_layers, heads, dim, k_new.dtype, k_new.device)
        start = int(positions[0]) if t else self.seq.n_tokens
        if layer == 0 or self._pending is None or self._pending[0] != start:
            # the step's first layer takes the slots (and blocks) every layer then writes into
            feed, self._feed = self._feed, None
            try:
                blocks, slots = self.seq.reserve(start, t, feed if feed is not None and len(feed) == t else None)
            except PoolFullError as exc:
                if self.pool_blocks is None:
                    raise
                raise PoolFullError(f"{self.describe().spec}: {exc}; position {start + t - 1} needs more (raise N)") from None
            self._pending = (start, blocks, slots)
        _, blocks, slots = self._pending
        if t:
            self.seq.write(layer, blocks, slots, k_new, v_new)
        return self.seq.gather(layer)  # (1, H_kv, n, D) read through the block table

    def layer_state(self, layer: int, n_tokens: int) -> tuple[torch.Tensor, ...] | None:
        """The recurrent ``layer``'s state after ``n_tokens`` positions: the one this sequence computed, else — at a
        block boundary it holds (a prefix hit) — its block's checkpoint in the pool."""
        held = self._states.get(layer, n_tokens)
        size = self.pool.block_size
        if held is None and n_tokens and n_tokens % size == 0 and n_tokens <= len(self.seq.blocks) * size:
            held = self.pool.checkpoints.get(self.seq.blocks[n_tokens // size - 1], {}).get(layer)
        return held

    def keep_state(self, layer: int, states: dict[int, tuple[torch.Tensor, ...]]) -> None:
        """The newest state (and the one before it) held for the next step; those at block boundaries handed to the
        block table (copies: each block's checkpoint is its own), registered with their blocks by ``commit``."""
        size = self.pool.block_size
        if self.pool.keeps_states:
            for n, state in states.items():
                if n and n % size == 0:
                    self.seq.pending_states.setdefault(n, {})[layer] = tuple(t.clone() for t in state)
        newest = max(states)
        self._states.keep(layer, {n: states[n] for n in (newest - 1, newest) if n in states})

    def state_checkpoints(self, start: int, end: int) -> tuple[int, ...]:
        """Every block boundary in ``start + 1 … end`` when the pool keeps checkpoints (prefix caching on a hybrid)."""
        if not self.pool.keeps_states:
            return ()
        size = self.pool.block_size
        return tuple(range((start // size + 1) * size, end + 1, size))

    def key_positions(self, layer: int) -> torch.Tensor:
        n = self.seq.n_tokens
        device = self.pool.k.device if self.pool.k is not None else None
        if self._positions.numel() != n or self._positions.device != device:
            self._positions = torch.arange(n, device=device)
        return self._positions

    def truncate(self, n_tokens: int) -> None:
        self.seq.truncate(n_tokens)
        self._states.truncate(n_tokens)
        self._pending = None

    def reset(self) -> None:
        self.seq.free()
        self._states.reset()
        self._pending = None

    @property
    def n_tokens(self) -> int:
        return self.seq.n_tokens

    def bytes_split(self) -> tuple[int, int]:
        held = len(self.seq.blocks)
        return held * self.pool.block_bytes + self._states.nbytes, held * TABLE_ENTRY_BYTES

    @property
    def allocated_bytes(self) -> int:
        """Bytes the whole pool reserves (every block, held or free)."""
        return self.pool.n_blocks * self.pool.block_bytes

    def held_rows(self, layer: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        k, v = self.seq.gather(layer)
        return k, v, self.key_positions(layer)
