"""PagedAttention's memory manager: a pool of fixed-size blocks, block tables, prefix caching by hash.

The K/V rows of every sequence live in one *pool* of physical blocks. A block holds ``B`` token
slots for every layer, K and V: ``pool.k[layer, block, slot]`` is one (H_kv, D) row. A sequence owns
a *block table* (``SequenceBlocks.blocks``): logical block ``j`` (positions ``j·B … j·B+B-1``) is
physical block ``blocks[j]``. Memory is taken one block at a time as the sequence grows, so at most
``B - 1`` slots are ever empty (the tail of the last block), never a reservation for the longest
possible answer.

Prefix caching (as vLLM's v1 block pool does it; written here from its description, not its code):

* a FULL block gets a hash of its token ids chained with the hash of the block before it
  (``block_hash``), so equal hashes mean equal contents *and* equal prefix — the K/V rows of a
  block depend on every token before it, not only on its own;
* full blocks are registered by hash; a new sequence looks up the full blocks of its prompt, in
  order, and stops at the first miss (``SequenceBlocks.match_prefix``); hits are shared, with a
  reference count, and its prefill computes only the rest. The last prompt token is always
  computed (its logits give the first answer token), so a prompt's final block is never a hit;
* a block whose count drops to 0 goes to the free queue but keeps its hash and rows: it can still
  be hit until it is handed out again. The free queue is in eviction order — least recently used
  first; a finished sequence returns its blocks tail first, so its tail is evicted before the
  prefix that other requests share;
* two orders of the free queue (``POOL_SEMANTICS``): ``"vllm"`` is vLLM v1's block pool step for step
  — block 0 is the *null block* (reserved, never handed out, never freed: ``num_gpu_blocks`` counts
  it), a freed block with no hash goes to the *front* of the queue (it can never be hit, so it is
  handed out first) while a freed cached block goes to the back, and a second block registered
  under a hash already held stays findable (vLLM does not deduplicate; a lookup takes the first
  one registered, and evicting it leaves the next); ``"kvsim"`` is kvsim's first pool — every freed
  block to the back, no null block, one block per hash;
* a block is only written while its sequence alone holds it and it has no hash. Writing into a
  block that is shared (a ``fork``) or registered (a ``truncate`` back into it) first copies it to
  a fresh block (copy-on-write).

A hybrid linear-attention model (``family=qwen3_next``) also needs, for a prefix hit, its recurrent layers' state
*at* the hit's last block boundary — a recurrence cannot be resumed from K/V rows. With ``keeps_states`` the pool
holds one state checkpoint per registered full block (what vLLM's hybrid KV cache manager keeps for its Mamba
layers, a snapshot per block boundary): the state of every recurrent layer after the block's last token, dropped
when the block is handed out again. A lookup hits only through a block that holds its checkpoint. The checkpoints
are bytes the pool holds besides the rows (``checkpoint_bytes``: one state × the checkpoints kept).

The bookkeeping is plain Python (a few integers per block); the rows are torch tensors allocated
once the model's shape is known (``ensure_storage``). Only the layers that hold K/V rows get storage when the
model says which (``layers``: a hybrid's attention layers); ``row_layer`` maps a model layer to its storage.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np
import torch

from ..core.pool_semantics import POOL_SEMANTICS
from ..core.sampling import SimulationError

#: the parent hash of a sequence's first block (any fixed value: it only starts the chain)
ROOT_HASH = int.from_bytes(hashlib.sha256(b"kvsim prefix cache").digest()[:8], "little")


def check_semantics(semantics: object) -> str:
    """``semantics`` when it names a free-queue order, else ``SimulationError`` naming the choices."""
    if semantics not in POOL_SEMANTICS:
        raise SimulationError(f"pool semantics must be one of {', '.join(POOL_SEMANTICS)}, got {semantics!r}")
    return str(semantics)


#: the largest pool kvsim makes: its bookkeeping is a few Python objects a block (~130 bytes: 2^20 blocks
#: ~140 MB before any row), and a block of more slots than this is no longer a *block* of a sequence
MAX_POOL_BLOCKS = 1 << 20
MAX_BLOCK_SIZE = 1 << 16
MEMORY_SHARE = 0.5  # the rows of a pool may take at most this share of the memory the machine has free


def check_pool_figures(block_size: object, n_blocks: object = None) -> None:
    """``SimulationError`` naming the figure and its limit when a pool of ``n_blocks`` blocks of
    ``block_size`` slots is past what kvsim makes (checked before anything is allocated)."""
    if not isinstance(block_size, int) or isinstance(block_size, bool) or block_size < 1:
        raise SimulationError(f"block size must be a whole number ≥ 1, got {block_size!r}")
    if n_blocks is not None and (not isinstance(n_blocks, int) or isinstance(n_blocks, bool) or n_blocks < 1):
        raise SimulationError(f"pool size must be a whole number of blocks ≥ 1, got {n_blocks!r}")
    if block_size > MAX_BLOCK_SIZE:
        raise SimulationError(f"a block of {block_size:,} token slots is more than kvsim makes (at most {MAX_BLOCK_SIZE:,})")
    if n_blocks is not None and n_blocks > MAX_POOL_BLOCKS:
        raise SimulationError(f"a pool of {n_blocks:,} blocks is more than kvsim makes (at most {MAX_POOL_BLOCKS:,})")


def available_memory() -> int | None:
    """Bytes of memory the machine has available now (Linux: MemAvailable, or less where this process's
    control group has a memory limit: its limit less what the group holds, reclaimable file pages aside),
    or None when unknown."""
    free: int | None = None
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    free = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    if free is None:
        try:
            import os

            free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            free = None
    group = _cgroup_free()
    if group is not None:
        free = group if free is None else min(free, group)
    return free


_CGROUP_FILES = (  # (limit, usage, statistics, the reclaimable file pages' key): cgroup v2, then v1
    ("memory.max", "memory.current", "memory.stat", "inactive_file"),
    ("memory/memory.limit_in_bytes", "memory/memory.usage_in_bytes", "memory/memory.stat", "total_inactive_file"),
)


def _cgroup_free() -> int | None:
    """What this process's memory control group may still take (None: no limit, or not Linux)."""
    from pathlib import Path

    root = Path("/sys/fs/cgroup")
    folders = [root]
    try:
        for line in Path("/proc/self/cgroup").read_text(encoding="ascii").splitlines():
            if line.startswith("0::/") and line.strip() != "0::/":
                folders.insert(0, root / line.strip()[4:])  # cgroup v2: the process's own group
    except (OSError, ValueError):
        pass
    best: int | None = None
    for folder in folders:
        for limit_name, usage_name, stat_name, inactive_key in _CGROUP_FILES:
            try:
                raw = (folder / limit_name).read_text(encoding="ascii").strip()
                if raw == "max" or int(raw) >= 1 << 60:  # no limit (v1 writes a huge number)
                    continue
                used = int((folder / usage_name).read_text(encoding="ascii").strip())
                inactive = 0
                for line in (folder / stat_name).read_text(encoding="ascii").splitlines():
                    key, _, value = line.partition(" ")
                    if key == inactive_key:
                        inactive = int(value)
                left = max(0, int(raw) - max(0, used - inactive))
            except (OSError, ValueError):
                continue
            best = left if best is None else min(best, left)
    return best


class PoolFullError(SimulationError):
    """The pool has no free block left (every block is held by a running sequence)."""


def block_hash(parent: int | None, tokens: Sequence[int]) -> int:
    """The 64-bit hash of one full block: its token ids chained with its prefix's hash."""
    data = np.asarray(tokens, dtype=np.int64).tobytes()
    seed = (ROOT_HASH if parent is None else parent).to_bytes(8, "little")
    return int.from_bytes(hashlib.sha256(seed + data).digest()[:8], "little")


def prefix_hashes(tokens: Sequence[int], block_size: int) -> list[int]:
    """Chained hashes of every full block of ``tokens``."""
    hashes: list[int] = []
    for j in range(len(tokens) // block_size):
        hashes.append(block_hash(hashes[-1] if hashes else None, tokens[j * block_size : (j + 1) * block_size]))
    return hashes


class BlockPool:
    """Physical blocks of ``block_size`` slots, their reference counts, hashes and the free queue.

    ``n_blocks`` fixes the pool's size (so eviction and a full pool can be shown); ``None`` lets it
    grow (doubling; block ids stay valid) for a single sequence that should never run out. Under
    ``semantics="vllm"`` ``n_blocks`` counts the null block 0 as vLLM's ``num_gpu_blocks`` does (one
    fewer is ever handed out)."""

    def __init__(
        self,
        block_size: int,
        n_blocks: int | None = None,
        prefix_caching: bool = True,
        semantics: str = "kvsim",  # a lane's own pool and the tests' pools; requests runs choose (RunOptions)
    ) -> None:
        check_pool_figures(block_size, n_blocks)
        self.semantics = check_semantics(semantics)
        if self.semantics == "vllm" and n_blocks is not None and n_blocks < 2:
            raise SimulationError(f"a vLLM pool needs at least 2 blocks (block 0 is the null block), got {n_blocks}")
        self.block_size = block_size
        self.fixed = n_blocks is not None
        self.prefix_caching = prefix_caching
        self.k: torch.Tensor | None = None  # (L, N, B, H_kv, D)
        self.v: torch.Tensor | None = None
        self.ref: list[int] = []
        self.filled: list[int] = []  # slots written (by the sequence that last held the block)
        self.hash: list[int | None] = []  # set while the block is registered (full, reusable)
        self.free: OrderedDict[int, None] = OrderedDict()  # eviction order: first = least recently used
        self.cached: dict[int, int] = {}  # hash → block (the first registered under it: what a lookup finds)
        self.duplicates: dict[int, list[int]] = {}  # hash → later blocks registered under it, in order ("vllm")
        self.tokens: dict[int, tuple[int, ...]] = {}  # registered block → the token ids its rows belong to
        self.evictions = 0
        self.events: dict[int, str] = {}  # block → what happened to it since the last snapshot
        self.layer_rows: dict[int, int] | None = None  # model layer → its index in the storage (None: every layer)
        # a hybrid model's state checkpoints (keeps_states): registered block → {recurrent layer: its state there}
        self.keeps_states = False
        self.checkpoints: dict[int, dict[int, tuple[torch.Tensor, ...]]] = {}
        self.checkpoint_bytes_peak = 0
        self._grow(n_blocks if n_blocks is not None else 16)
        self.null_block: int | None = None
        if self.semantics == "vllm":  # as vLLM's pool: the first block of the queue is the placeholder
            self.null_block, _ = self.free.popitem(last=False)

    # ------------------------------------------------------------------ storage
    @property
    def n_blocks(self) -> int:
        return len(self.ref)

    def _grow(self, n: int) -> None:
        start = self.n_blocks
        check_pool_figures(self.block_size, n)
        if self.k is not None:
            self._check_memory((self.k.shape[0], n, *self.k.shape[2:]), self.k.element_size())
        self.ref += [0] * (n - start)
        self.filled += [0] * (n - start)
        self.hash += [None] * (n - start)
        for b in range(start, n):
            self.free[b] = None
        if self.k is not None and self.v is not None:  # allocated together
            extra = (self.k.shape[0], n - start, *self.k.shape[2:])
            self.k = torch.cat([self.k, self.k.new_zeros(extra)], 1)
            self.v = torch.cat([self.v, self.v.new_zeros(extra)], 1)

    def ensure_storage(
        self,
        n_layers: int,
        n_kv_heads: int,
        head_dim: int,
        dtype: torch.dtype,
        device: torch.device,
        layers: Sequence[int] | None = None,
    ) -> None:
        """Allocate the rows once the model's shape is known (a second model must match it). ``layers``: the
        model layers that hold rows, when not all of its ``n_layers`` do (the storage then has only theirs)."""
        if self.k is None and layers is not None and list(layers) != list(range(n_layers)):
            self.layer_rows = {int(layer): i for i, layer in enumerate(layers)}
        stored = len(self.layer_rows) if self.layer_rows is not None else n_layers
        shape = (stored, self.n_blocks, self.block_size, n_kv_heads, head_dim)
        if self.k is None:
            self._check_memory(shape, torch.empty(0, dtype=dtype).element_size())
            try:
                self.k = torch.zeros(shape, dtype=dtype, device=device)
                self.v = torch.zeros(shape, dtype=dtype, device=device)
            except (RuntimeError, MemoryError) as exc:  # a memory limit (ulimit -v, a container) below what is free
                self.k = self.v = None
                first = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
                raise SimulationError(f"could not allocate the block pool {tuple(shape)}: {first}") from None
        elif self.k.shape != shape or self.k.dtype != dtype:
            raise SimulationError(f"this block pool holds rows of shape {tuple(self.k.shape)}, not {shape}")

    def _check_memory(self, shape: tuple[int, ...], element_size: int) -> None:
        need = 2 * int(np.prod(shape, dtype=object)) * element_size  # K and V
        free = available_memory()
        if free is not None and need > MEMORY_SHARE * free:
            layers, n, b, heads, dim = shape
            raise SimulationError(
                f"the block pool needs {need / 1e9:,.2f} GB ({n:,} blocks × {b:,} slots × {layers} layers × {heads} K/V heads × "
                f"{dim} × {element_size} bytes × K and V), more than {MEMORY_SHARE:.0%} of this machine's free memory "
                f"({free / 1e9:,.2f} GB): fewer or smaller blocks"
            )

    def row_layer(self, layer: int) -> int:
        """Where model layer ``layer``'s rows are in the storage."""
        if self.layer_rows is None:
            return layer
        if layer not in self.layer_rows:
            raise RuntimeError(f"layer {layer} holds no K/V rows in this pool")
        return self.layer_rows[layer]

    def rows(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The K and V storage (allocated by ``ensure_storage``)."""
        if self.k is None or self.v is None:
            raise RuntimeError("the block pool holds no rows yet (ensure_storage comes first)")
        return self.k, self.v

    @property
    def block_bytes(self) -> int:
        """Bytes of one block, all layers, K and V."""
        if self.k is None:
            return 0
        layers, _, slots, heads, dim = self.k.shape
        return 2 * layers * slots * heads * dim * self.k.element_size()

    # ------------------------------------------------------------------ blocks
    def allocate(self) -> int:
        """Hand out the least recently used free block (evicting its hash if it still has one)."""
        if not self.free:
            if self.fixed:
                raise PoolFullError(
                    f"the block pool is full: all {self.n_blocks} blocks of {self.block_size} slots "
                    f"({self.n_blocks * self.block_size} token slots) are held"
                )
            self._grow(2 * self.n_blocks)
        b, _ = self.free.popitem(last=False)
        old = self.hash[b]
        if old is not None:
            self._forget(old, b)
            self.hash[b] = None
            self.tokens.pop(b, None)
            self.checkpoints.pop(b, None)
            self.evictions += 1
            self.events[b] = "evicted"
        else:
            self.events.setdefault(b, "allocated")
        self.ref[b] = 1
        self.filled[b] = 0
        return b

    def _forget(self, h: int, b: int) -> None:
        """``b`` no longer answers hash ``h`` (it is handed out again): a later block registered under
        ``h`` ("vllm") answers it instead."""
        later = self.duplicates.get(h)
        if self.cached.get(h) == b:
            if later:
                self.cached[h] = later.pop(0)
            else:
                del self.cached[h]
        elif later and b in later:
            later.remove(b)
        if later is not None and not later:
            del self.duplicates[h]

    def lookup(self, h: int) -> int | None:
        """The block registered under hash ``h``, if any (prefix caching on)."""
        return self.cached.get(h) if self.prefix_caching else None

    def touch(self, b: int) -> None:
        """One more holder for ``b`` (a prefix hit, a fork); a free cached block leaves the free queue."""
        if self.ref[b] == 0:
            del self.free[b]
        self.ref[b] += 1

    def release(self, b: int) -> None:
        """One holder fewer; at zero the block joins the free queue (``free_blocks`` says where)."""
        self.free_blocks((b,))

    def free_blocks(self, ordered: Sequence[int]) -> None:
        """One holder fewer for each of ``ordered`` (the first to be evicted first); those at zero join
        the free queue. "kvsim": all at its back, in order. "vllm" (as vLLM's ``free_blocks``): cached
        ones at its back in order, those with no hash — nothing to hit — at its front in order, so they
        are handed out first (with prefix caching off vLLM puts every one at the back)."""
        front: list[int] = []
        for b in ordered:
            if b == self.null_block:
                continue  # never counted, never freed
            if self.ref[b] <= 0:
                raise RuntimeError(f"block {b} released more often than it was held")
            self.ref[b] -= 1
            if self.ref[b]:
                continue
            if self.hash[b] is None:
                self.filled[b] = 0
                self.events[b] = "freed"
                if self.semantics == "vllm" and self.prefix_caching:
                    front.append(b)
                    continue
            else:
                self.events.setdefault(b, "cached")
            self.free[b] = None
        for b in reversed(front):
            self.free[b] = None
            self.free.move_to_end(b, last=False)

    def register(
        self, b: int, h: int, tokens: Sequence[int] = (), states: dict[int, tuple[torch.Tensor, ...]] | None = None
    ) -> None:
        """``b`` is full and its contents hash to ``h``: later sequences may reuse it. As vLLM, a
        second block with a hash already registered is not deduplicated (block tables only grow);
        "vllm" keeps it findable once the first is evicted, "kvsim" only marks it. ``states``: a hybrid
        model's recurrent states after the block's last token, kept as its checkpoint (``keeps_states``)."""
        if self.prefix_caching and self.hash[b] is None:
            self.hash[b] = h
            self.tokens[b] = tuple(int(t) for t in tokens)
            if self.keeps_states and states:
                self.checkpoints[b] = dict(states)
                self.checkpoint_bytes_peak = max(self.checkpoint_bytes_peak, self.checkpoint_bytes)
            if h not in self.cached:
                self.cached[h] = b
            elif self.semantics == "vllm":
                self.duplicates.setdefault(h, []).append(b)

    def copy_block(self, src: int, dst: int, slots: int) -> None:
        """Copy the first ``slots`` rows of every layer from ``src`` to ``dst`` (copy-on-write)."""
        if self.k is not None and self.v is not None and slots:
            self.k[:, dst, :slots] = self.k[:, src, :slots]
            self.v[:, dst, :slots] = self.v[:, src, :slots]
        self.filled[dst] = slots
        self.events[dst] = "copied"

    @property
    def checkpoint_bytes(self) -> int:
        """Bytes of the state checkpoints the pool keeps (a hybrid model's: one state per registered block)."""
        return sum(t.numel() * t.element_size() for states in self.checkpoints.values() for s in states.values() for t in s)

    # ------------------------------------------------------------------ state, for exact repeats
    def save_state(self) -> tuple:
        return (
            list(self.ref),
            list(self.filled),
            list(self.hash),
            OrderedDict(self.free),
            dict(self.cached),
            dict(self.tokens),
            self.evictions,
            {h: list(bs) for h, bs in self.duplicates.items()},
            (dict(self.checkpoints), self.checkpoint_bytes_peak),  # the states are never written in place: shared
        )

    def restore_state(self, state: tuple) -> None:
        ref, filled, hashes, free, cached, tokens, evictions, duplicates, (checkpoints, peak) = state
        self.ref, self.filled, self.hash = list(ref), list(filled), list(hashes)
        self.free, self.cached, self.tokens, self.evictions = OrderedDict(free), dict(cached), dict(tokens), evictions
        self.duplicates = {h: list(bs) for h, bs in duplicates.items()}
        self.checkpoints, self.checkpoint_bytes_peak = dict(checkpoints), peak

    def take_events(self) -> dict[int, str]:
        events, self.events = self.events, {}
        return events

    @property
    def n_free(self) -> int:
        return len(self.free)

    @property
    def n_usable(self) -> int:
        """Blocks a sequence can be handed (all but the null block)."""
        return self.n_blocks - (self.null_block is not None)

    def free_queue(self) -> tuple[int, ...]:
        """The free blocks in eviction order: the first is the next one ``allocate`` hands out."""
        return tuple(self.free)

    @property
    def n_cached_free(self) -> int:
        """Free blocks that still hold reusable rows (registered by hash): a prefix hit may take them back."""
        return sum(1 for b in self.free if self.hash[b] is not None)

    def check(self) -> None:
        """Invariants (tests call this): free ⇔ ref 0, the hash table and the hashes agree."""
        for b in range(self.n_blocks):
            if b == self.null_block:
                if b in self.free or self.ref[b] or self.hash[b] is not None:
                    raise AssertionError(f"the null block {b} was handed out, freed or registered")
                continue
            if (self.ref[b] == 0) != (b in self.free) or self.ref[b] < 0:
                raise AssertionError(f"block {b}: ref {self.ref[b]}, in free queue {b in self.free}")
        for h, b in self.cached.items():
            if self.hash[b] != h:
                raise AssertionError(f"hash table maps {h:x} to block {b}, which has {self.hash[b]}")
        for h, bs in self.duplicates.items():
            if h not in self.cached or any(self.hash[b] != h for b in bs):
                raise AssertionError(f"the later blocks under hash {h:x} do not hold it")
        for b in self.checkpoints:
            if self.hash[b] is None:
                raise AssertionError(f"block {b} keeps a state checkpoint but is not registered")
