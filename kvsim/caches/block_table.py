"""One sequence's block table over a shared ``BlockPool``: reserve slots, write rows, gather them back.

    seq = SequenceBlocks(pool, owner=0)
    reused = seq.match_prefix(prompt_ids)            # rows taken from registered blocks (prefix hits)
    hit = seq.cached_prefix(prompt_ids)              # the same blocks, only looked up (seq.take_prefix(hit) takes them)
    blk, slot = seq.reserve(reused, len(prompt_ids) - reused, prompt_ids[reused:])
    seq.write(layer, blk, slot, k_new, v_new)        # (1, H_kv, T, D) rows into their slots
    k_all, v_all = seq.gather(layer)                 # (1, H_kv, n, D) in position order (a persistent buffer)
    seq.commit()                                     # register the blocks that became full
    seq.free()                                       # the request finished: every block released

Position ``p`` lives in logical block ``p // B``, slot ``p % B``; ``blocks`` maps logical to physical.

Reading without copying every row every step: ``gather`` keeps, per layer, a contiguous read buffer
(capacity doubling, as the ``kv`` lane's) holding the rows of positions ``0 … valid-1`` as read through
the table; a step copies from the pool, through the table, only the rows past ``valid`` (the step's new
ones). The buffer stays exact because the rows of a position this sequence holds never change while it
holds them — a block it holds is written only by itself (a shared or registered block is copied first),
a copy-on-write copies the rows unchanged — and every place the table can change the rows of a held
position moves ``valid`` back: ``truncate`` (to the new length), ``free``, ``match_prefix`` and
``restore_state`` (to 0). ``gather_through_table`` is the full read, kept as the reference tests compare
against. The buffer is the simulator's read path (vLLM's kernels read the blocks in place); the lane's
bytes (``PagedCache.bytes_split``) stay those of its blocks and table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .blocks import BlockPool, block_hash
from .tiers import OFFLOADED, TieredBlockPool


@dataclass(frozen=True)
class CachedPrefix:
    """What a prefix lookup found: the leading full blocks of some tokens that the pool holds, registered
    under the same chained hashes. Kept as a value so a scheduler can decide (does the rest fit?) and
    then take exactly these blocks, without hashing the prompt a second time."""

    blocks: tuple[int, ...]  # physical blocks, logical block j first
    hashes: tuple[int, ...]  # their chained hashes (checked again when taken)
    token_ids: tuple[int, ...]  # the tokens whose rows they hold
    free_blocks: int  # of them, blocks in the free queue now: taking them leaves that many fewer free

    @property
    def rows(self) -> int:
        """Positions the prefix covers (its blocks × the block size): rows a prefill need not compute."""
        return len(self.token_ids)


class SequenceBlocks:
    """The block table of one sequence (``owner`` names it in snapshots)."""

    def __init__(self, pool: BlockPool, owner: int = 0) -> None:
        self.pool = pool
        self.owner = owner
        self.blocks: list[int] = []  # logical block j → physical block
        self.n_tokens = 0  # positions 0..n_tokens-1 hold rows
        self.token_ids: list[int] = []  # the positions' token ids, when known (needed for hashing)
        self.hashes: list[int] = []  # chained hashes of this sequence's full blocks, in order
        self.hit_blocks = 0  # leading blocks reused from the prefix cache
        self._table: torch.Tensor | None = None
        self._read: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}  # layer → (K, V) read buffers (1, H_kv, cap, D)
        self._valid: dict[int, int] = {}  # layer → leading positions the read buffer holds, as read through the table
        # a hybrid model's recurrent states at this sequence's block boundaries not registered yet (positions seen →
        # {layer: state}): ``commit`` hands each to the pool with its block, as the block's checkpoint
        self.pending_states: dict[int, dict[int, tuple[torch.Tensor, ...]]] = {}
        self.rows_copied = 0  # rows read from the pool through the table into the read buffers (all layers; tests count them)
        self.rows_regrown = 0  # rows moved when a read buffer doubled its capacity (amortised, as kv's appends)

    # ------------------------------------------------------------------ the table
    def cached_prefix(self, tokens: Sequence[int], take: bool = False) -> CachedPrefix:
        """The registered full blocks ``tokens`` start with (in order, up to the first miss), found by
        ONE walk of the hash chain. The last token is always left to compute: its logits are needed.

        ``take=False`` only looks (a scheduler asks what a request would reuse before it admits it:
        nothing in the pool changes); ``take=True`` also takes them (``take_prefix``). As vLLM's
        scheduler asks its cache manager for a request's computed blocks, never the pool's fields."""
        pool, size = self.pool, self.pool.block_size
        blocks: list[int] = []
        hashes: list[int] = []
        free = 0
        if pool.prefix_caching:
            parent = None
            for j in range((len(tokens) - 1) // size):
                h = block_hash(parent, tokens[j * size : (j + 1) * size])
                b = pool.lookup(h)
                if b is None:  # not on the device: an offload tier may hold it (taking it takes a free block)
                    if not (isinstance(pool, TieredBlockPool) and pool.offloaded(h)):
                        break
                    b = OFFLOADED
                blocks.append(b)
                hashes.append(h)
                free += b == OFFLOADED or pool.ref[b] == 0
                parent = h
            if pool.keeps_states:  # a hybrid resumes only where a block keeps the recurrent state (vLLM's Mamba rule)
                while blocks and blocks[-1] not in pool.checkpoints:
                    free -= blocks[-1] == OFFLOADED or pool.ref[blocks[-1]] == 0
                    blocks.pop()
                    hashes.pop()
        found = CachedPrefix(tuple(blocks), tuple(hashes), tuple(int(t) for t in tokens[: len(blocks) * size]), free)
        if take:
            self.take_prefix(found)
        return found

    def take_prefix(self, prefix: CachedPrefix) -> int:
        """Start this (empty) table with the blocks ``cached_prefix`` found — one more holder each —
        without walking the chain again; returns the rows reused. Take it before the pool hands out
        a block (an allocation may evict a free hit): a block whose hash changed since is refused."""
        if self.blocks:
            raise RuntimeError("a cached prefix taken by a sequence that already holds blocks")
        pool = self.pool
        pairs = list(zip(prefix.blocks, prefix.hashes, strict=True))
        stale = next((b for b, h in pairs if b != OFFLOADED and pool.hash[b] != h), None)
        if stale is not None:
            raise RuntimeError(f"block {stale} was handed out again after the prefix was found")
        for b, _ in pairs:
            if b != OFFLOADED:
                pool.touch(b)
                pool.events[b] = "hit"
        if OFFLOADED in prefix.blocks:  # brought back once every device hit is held (a recall may evict)
            if not isinstance(pool, TieredBlockPool):
                raise RuntimeError("an offloaded prefix block taken by a pool without offload tiers")
            pairs = [(pool.recall(h, self.owner) if b == OFFLOADED else b, h) for b, h in pairs]
        self.blocks, self.hashes = [b for b, _ in pairs], list(prefix.hashes)
        self.hit_blocks = len(self.blocks)
        self.n_tokens = prefix.rows
        self.token_ids = list(prefix.token_ids)
        self._table = None
        self._valid.clear()  # the hit blocks' rows are read from the pool on the next gather
        return self.n_tokens

    def match_prefix(self, prompt: Sequence[int]) -> int:
        """Take the registered full blocks of ``prompt``'s prefix and return the rows reused
        (``cached_prefix(prompt, take=True)``)."""
        return self.cached_prefix(prompt, take=True).rows

    def blocks_to_reserve(self, count: int) -> int:
        """Blocks ``reserve(n_tokens, count)`` would take from the pool now: the new ones past the held
        blocks, plus one when the partial last block is shared or registered (copy-on-write)."""
        pool, size, start = self.pool, self.pool.block_size, self.n_tokens
        need = -(-(start + count) // size) - len(self.blocks)
        if start % size and count:
            last = self.blocks[start // size]
            need += pool.ref[last] > 1 or pool.hash[last] is not None
        return need

    def reserve(self, start: int, count: int, token_ids: Sequence[int] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Room for positions ``start … start+count-1`` (``start`` must be ``n_tokens``): a shared or
        registered last block is copied first (copy-on-write), new blocks come from the pool.
        Returns the (physical block, slot) of each position, as index tensors."""
        if start != self.n_tokens:
            raise RuntimeError(f"positions must follow the held ones: got {start}, holding {self.n_tokens}")
        pool, size = self.pool, self.pool.block_size
        if isinstance(pool, TieredBlockPool):  # a block this allocation evicts is stored on this request's behalf
            pool.acting = self.owner
        end = start + count
        if start % size and count:
            j = start // size
            b = self.blocks[j]
            if pool.ref[b] > 1 or pool.hash[b] is not None:  # someone else reads it: write into a copy
                fresh = pool.allocate()
                pool.copy_block(b, fresh, start % size)
                pool.release(b)
                self.blocks[j] = fresh
                self._table = None
        while len(self.blocks) * size < end:
            self.blocks.append(pool.allocate())
            self._table = None
        for j in range(start // size, -(-end // size)):
            b = self.blocks[j]
            pool.filled[b] = min(size, end - j * size)
            pool.events.setdefault(b, "written")
        if token_ids is not None and len(self.token_ids) == start:
            self.token_ids += [int(t) for t in token_ids]
        self.n_tokens = end
        positions = np.arange(start, end)
        blocks = torch.tensor([self.blocks[p // size] for p in positions], dtype=torch.long)
        slots = torch.as_tensor(positions % size, dtype=torch.long)
        return blocks, slots

    def commit(self) -> None:
        """Register this sequence's blocks that are now full (their hashes chained in order)."""
        pool, size = self.pool, self.pool.block_size
        if not pool.prefix_caching or len(self.token_ids) < self.n_tokens:
            return  # token ids unknown (a lane fed by positions only): nothing to hash
        for j in range(len(self.hashes), self.n_tokens // size):
            h = block_hash(self.hashes[-1] if self.hashes else None, self.token_ids[j * size : (j + 1) * size])
            self.hashes.append(h)
            states = self.pending_states.pop((j + 1) * size, None)
            pool.register(self.blocks[j], h, self.token_ids[j * size : (j + 1) * size], states)

    def truncate(self, n_tokens: int) -> None:
        """Forget positions ≥ ``n_tokens``: blocks past them go back to the pool (tail first)."""
        pool, size = self.pool, self.pool.block_size
        n_tokens = min(n_tokens, self.n_tokens)
        keep = -(-n_tokens // size)
        if n_tokens == self.n_tokens and len(self.blocks) <= keep:
            return  # (a reserve that ran out of blocks may have left blocks past n_tokens)
        pool.free_blocks(self.blocks[keep:][::-1])
        del self.blocks[keep:]
        if keep and n_tokens % size:
            b = self.blocks[-1]
            if pool.ref[b] == 1 and pool.hash[b] is None:  # ours alone: its tail is free again
                pool.filled[b] = n_tokens - (keep - 1) * size
        self.n_tokens = n_tokens
        del self.token_ids[n_tokens:]
        del self.hashes[n_tokens // size :]
        self.hit_blocks = min(self.hit_blocks, n_tokens // size)
        self._table = None
        self._valid = {layer: min(valid, n_tokens) for layer, valid in self._valid.items()}
        self.pending_states = {n: s for n, s in self.pending_states.items() if n <= n_tokens}

    def free(self) -> None:
        """Release every block, tail first (so the tail is evicted before a shared prefix), in one call:
        the pool orders them as a group (vLLM puts the ones with no hash at the front together)."""
        self.pool.free_blocks(self.blocks[::-1])
        self.blocks, self.token_ids, self.hashes = [], [], []
        self.n_tokens = self.hit_blocks = 0
        self.pending_states = {}
        self._table = None
        self._valid.clear()  # the buffers are kept (reused by the next rows), their contents forgotten

    def fork(self, owner: int) -> SequenceBlocks:
        """A second sequence sharing every block of this one (parallel samples of one prompt); the
        first write into the shared partial last block copies it."""
        other = SequenceBlocks(self.pool, owner)
        for b in self.blocks:
            self.pool.touch(b)
        other.blocks, other.n_tokens = list(self.blocks), self.n_tokens
        other.token_ids, other.hashes = list(self.token_ids), list(self.hashes)
        return other

    def save_state(self) -> tuple:
        pending = dict(self.pending_states)
        return (list(self.blocks), self.n_tokens, list(self.token_ids), list(self.hashes), self.hit_blocks, pending)

    def restore_state(self, state: tuple) -> None:
        blocks, self.n_tokens, token_ids, hashes, self.hit_blocks, pending = state
        self.blocks, self.token_ids, self.hashes = list(blocks), list(token_ids), list(hashes)
        self.pending_states = dict(pending)
        self._table = None
        self._valid.clear()  # another table: every row is read again through it

    # ------------------------------------------------------------------ the rows
    def table(self, device: torch.device) -> torch.Tensor:
        """The block table as an index tensor (rebuilt only when it changed)."""
        if self._table is None or self._table.device != device:
            self._table = torch.tensor(self.blocks, dtype=torch.long, device=device)
        return self._table

    def write(self, layer: int, blocks: torch.Tensor, slots: torch.Tensor, k_new: torch.Tensor, v_new: torch.Tensor) -> None:
        """Store (1, H_kv, T, D) rows into their slots of ``layer``."""
        pool_k, pool_v = self.pool.rows()
        layer = self.pool.row_layer(layer)
        if k_new.shape[2] == 1 and blocks.device.type == "cpu":  # a decode step's row: plain indexing, no index_put
            b, slot = int(blocks[0]), int(slots[0])
            pool_k[layer, b, slot] = k_new[0, :, 0]
            pool_v[layer, b, slot] = v_new[0, :, 0]
            return
        blocks, slots = blocks.to(k_new.device), slots.to(k_new.device)
        pool_k[layer, blocks, slots] = k_new[0].transpose(0, 1)  # (T, H_kv, D)
        pool_v[layer, blocks, slots] = v_new[0].transpose(0, 1)

    def gather(self, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Every held row of ``layer`` in position order, read through the block table: (1, H_kv, n, D),
        views of the layer's read buffer. Only the rows the buffer does not hold yet are copied from the
        pool (one per layer on a decode step)."""
        (pool_k, pool_v), n = self.pool.rows(), self.n_tokens
        _, _, size, heads, dim = pool_k.shape
        row = self.pool.row_layer(layer)
        held = self._read.get(layer)
        valid = self._valid.get(layer, 0) if held is not None else 0
        if held is None or held[0].shape[2] < n or held[0].dtype != pool_k.dtype or held[0].device != pool_k.device:
            held = self._grow(layer, held, valid, n, pool_k)
            valid = self._valid[layer]
        buf_k, buf_v = held
        if valid < n:
            first, last = valid // size, (n - 1) // size
            if last - first <= 1:  # a step's rows: at most two blocks, read as slices
                for j in range(first, last + 1):
                    lo, hi, b = max(valid, j * size), min(n, (j + 1) * size), self.blocks[j]
                    buf_k[0, :, lo:hi] = pool_k[row, b, lo - j * size : hi - j * size].transpose(0, 1)
                    buf_v[0, :, lo:hi] = pool_v[row, b, lo - j * size : hi - j * size].transpose(0, 1)
            else:  # a prefill, a prefix hit, a restored table: one indexed read of the missing rows
                positions = torch.arange(valid, n, device=pool_k.device)
                table = self.table(pool_k.device)
                blocks, slots = table[positions // size], positions % size
                buf_k[0, :, valid:n] = pool_k[row, blocks, slots].transpose(0, 1)
                buf_v[0, :, valid:n] = pool_v[row, blocks, slots].transpose(0, 1)
            self.rows_copied += n - valid
            self._valid[layer] = n
        return buf_k[:, :, :n], buf_v[:, :, :n]

    def _grow(
        self, layer: int, held: tuple[torch.Tensor, torch.Tensor] | None, valid: int, n: int, like: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """A read buffer for ``layer`` with room for ``n`` rows (capacity doubling); keeps its valid rows."""
        _, _, _, heads, dim = like.shape
        old = held[0].shape[2] if held is not None else 0
        capacity = max(n, 2 * old, 64)
        k = like.new_empty((1, heads, capacity, dim))
        v = like.new_empty((1, heads, capacity, dim))
        if held is not None and valid and held[0].dtype == like.dtype and held[0].device == like.device:
            k[:, :, :valid] = held[0][:, :, :valid]
            v[:, :, :valid] = held[1][:, :, :valid]
            self.rows_regrown += valid
        else:
            valid = 0
        self._valid[layer] = valid
        self._read[layer] = (k, v)
        return k, v

    def gather_through_table(self, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Every held row of ``layer`` copied from the pool through the whole block table (no read buffer):
        the reference ``gather`` must equal."""
        (pool_k, pool_v), n = self.pool.rows(), self.n_tokens
        table = self.table(pool_k.device)
        _, _, size, heads, dim = pool_k.shape
        row = self.pool.row_layer(layer)
        k = pool_k[row].index_select(0, table).reshape(-1, heads, dim)[:n]  # (n, H_kv, D)
        v = pool_v[row].index_select(0, table).reshape(-1, heads, dim)[:n]
        return k.permute(1, 0, 2).unsqueeze(0), v.permute(1, 0, 2).unsqueeze(0)

    @property
    def read_buffer_bytes(self) -> int:
        """Bytes the read buffers reserve (every layer, K and V): the simulator's read path, not the lane's."""
        return sum((k.numel() + v.numel()) * k.element_size() for k, v in self._read.values())
