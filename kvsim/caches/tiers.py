"""KV offload tiers under the block pool: a host tier and a disk tier that catch the cached blocks the
device pool evicts and give them back on a later prefix hit (what LMCache, SGLang's HiCache and vLLM's
offloading connector do; written here from their descriptions).

    pool = TieredBlockPool(16, 64, OffloadSpec.parse("host:4MB,disk:64MB"))
    pool.ensure_storage(...)                 # the tiers are made once a block's shape is known
    b = pool.allocate()                      # evicting a cached block stores its rows in the host tier
    pool.offloaded(h)                        # "host", "disk" or None
    b = pool.recall(h, owner)                # a prefix hit on an offloaded block: its rows copied back
    pool.offload_summary()                   # bytes and measured time of every move, per tier
    pool.close()                             # the disk tier's folder removed

The *device* pool is ``BlockPool`` unchanged (its allocation order and free queue are its own): this layer
only watches what it evicts (``allocate``) and, when ``SequenceBlocks.cached_prefix`` misses on the device,
asks whether a tier holds the hash. A tier is keyed by the block's chained hash, so a block brought back
serves exactly the prefixes it served before.

* **host**: one slab of ``capacity // block bytes`` slots allocated once, pinned (page-locked) when torch can
  pin — it cannot without a CUDA driver, so on a CPU-only machine the slab is ordinary memory and
  ``host_pinned`` says so with the reason. Least recently used block first out: it moves down to the disk
  tier (when there is one) or is dropped.
* **disk**: one safetensors file per block (K and V of every layer, the block's token ids in its metadata)
  in a temporary folder the pool owns and removes (``close``, or when the pool is collected); each file is
  written atomically (a temporary file renamed over it; not fsynced: the folder is scratch, see
  ``DiskTier.write``) and read back with ``safe_open`` (memory-mapped). Least recently used block first
  out: dropped. A block read soon after it was written comes from the page cache, not the platter: the
  measured loads are the page cache's unless the machine was short of memory in between.

A tier keeps a block it gave back (a cache, not a move): evicted again from the device, it costs nothing.

Every move is timed (``TierMove``: tier, direction, bytes, ms, waiting for the device before the clock is
read). ``save_state``/``restore_state`` roll the tiers back with the pool (the requests engine times a
prefill several times from the same state): the rows of device blocks evicted and host slots overwritten
since the save are journaled and put back, disk files dropped since are kept until the next save.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from ..core.devices import sync
from ..core.sampling import SimulationError
from .blocks import BlockPool

TIERS = ("host", "disk")
#: a block id in a ``CachedPrefix`` whose rows are in a tier, not on the device (taking it recalls them)
OFFLOADED = -1

_UNITS = {"": 1, "B": 1, "K": 10**3, "KB": 10**3, "M": 10**6, "MB": 10**6, "G": 10**9, "GB": 10**9}
_UNITS |= {"KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30}
_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*$")


def parse_bytes(text: str) -> int:
    """``"64MB"``, ``"1.5GiB"``, ``"4096"`` → bytes (SI units powers of 10, IEC units powers of 2)."""
    m = _SIZE.match(text)
    unit = m.group(2).upper() if m else ""
    if m is None or unit not in _UNITS:
        raise SimulationError(f"{text!r} is not a size (a number with B, KB, MB, GB, KiB, MiB or GiB)")
    return int(float(m.group(1)) * _UNITS[unit])


@dataclass(frozen=True)
class OffloadSpec:
    """The tiers' byte budgets (0: no such tier)."""

    host_bytes: int = 0
    disk_bytes: int = 0

    @classmethod
    def parse(cls, text: str) -> OffloadSpec:
        """``"host:64MB,disk:1GB"`` (either tier may be left out)."""
        given: dict[str, int] = {}
        for part in text.split(","):
            tier, _, size = part.strip().partition(":")
            if tier not in TIERS or not size:
                raise SimulationError(f"offload tiers are host:BYTES and disk:BYTES, comma-separated; got {part.strip()!r}")
            if tier in given:
                raise SimulationError(f"offload tier {tier} given twice")
            given[tier] = parse_bytes(size)
            if given[tier] < 1:
                raise SimulationError(f"offload tier {tier} needs at least 1 byte, got {size!r}")
        return cls(given.get("host", 0), given.get("disk", 0))

    def describe(self) -> str:
        return ",".join(f"{t}:{b}" for t, b in (("host", self.host_bytes), ("disk", self.disk_bytes)) if b)


@dataclass(frozen=True)
class TierMove:
    """One block moved between the device pool and a tier (or down from host to disk), timed."""

    tier: str  # "host" or "disk": the tier written or read
    direction: str  # "store" (into the tier) or "load" (back to the device)
    nbytes: int
    ms: float
    block_hash: str  # 16 hex digits
    # a load: the request whose prefix hit brought it back; a store: the request whose allocation evicted it
    # from the device (-1: not known, e.g. a host block moved down to disk by a tier's own pool)
    owner: int


def _pin(shape: tuple[int, ...], dtype: torch.dtype) -> tuple[torch.Tensor, bool, str]:
    """A host buffer, pinned when torch can pin memory here (it needs a CUDA driver), with the reason when not."""
    try:
        return torch.empty(shape, dtype=dtype, pin_memory=True), True, "pinned (page-locked) host memory"
    except (RuntimeError, AssertionError) as exc:  # no CUDA: pin_memory raises
        reason = str(exc).splitlines()[0].split(";")[0][:100] if str(exc) else type(exc).__name__
        return torch.empty(shape, dtype=dtype), False, f"ordinary host memory: torch cannot pin here ({reason})"


class HostTier:
    """A slab of block slots in host memory, least recently used first out."""

    def __init__(self, capacity: int, block_shape: tuple[int, ...], dtype: torch.dtype) -> None:
        self.block_bytes = 2 * int(torch.Size(block_shape).numel()) * torch.empty(0, dtype=dtype).element_size()
        self.n_slots = capacity // self.block_bytes
        if self.n_slots < 1:
            raise SimulationError(f"a host tier of {capacity:,} bytes holds no block of {self.block_bytes:,} bytes")
        self.slab, self.pinned, self.memory = _pin((self.n_slots, 2, *block_shape), dtype)
        self.index: OrderedDict[int, int] = OrderedDict()  # hash → slot, least recently used first
        self.tokens: dict[int, tuple[int, ...]] = {}
        self.free = list(range(self.n_slots - 1, -1, -1))  # popped from the end: slot 0 first
        self.journal: dict[int, torch.Tensor] | None = None  # slot → its contents at the last save point


class DiskTier:
    """One safetensors file per block in a folder the tier owns, least recently used first out."""

    def __init__(self, capacity: int, block_bytes: int) -> None:
        self.block_bytes = block_bytes
        self.n_slots = capacity // block_bytes
        if self.n_slots < 1:
            raise SimulationError(f"a disk tier of {capacity:,} bytes holds no block of {block_bytes:,} bytes")
        self.folder = Path(tempfile.mkdtemp(prefix="kvsim-offload-"))
        self._cleanup = weakref.finalize(self, shutil.rmtree, self.folder, True)
        self.index: OrderedDict[int, tuple[int, ...]] = OrderedDict()  # hash → the block's token ids
        self.stale: set[int] = set()  # hashes whose files may be removed once no save point can bring them back

    def path(self, h: int) -> Path:
        return self.folder / f"{h:016x}.safetensors"

    def write(self, h: int, data: bytes) -> None:
        """The block's file, atomically: written whole under a temporary name, then renamed over its own (a
        reader sees the old file or the new one, never part of one). Not fsynced: the folder is scratch,
        removed with the pool, so durability would only add a disk flush to every store (as offload caches
        do, the file goes to the page cache and the disk writes it back when it will)."""
        path = self.path(h)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=self.folder)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def sweep(self) -> None:
        """Remove the files of blocks the tier no longer holds."""
        for h in self.stale - set(self.index):
            self.path(h).unlink(missing_ok=True)
        self.stale.clear()

    def close(self) -> None:
        self._cleanup()


class TieredBlockPool(BlockPool):
    """A ``BlockPool`` whose evicted cached blocks go to a host tier, then a disk tier, and come back on a hit."""

    def __init__(
        self, block_size: int, n_blocks: int | None, spec: OffloadSpec, prefix_caching: bool = True, semantics: str = "kvsim"
    ) -> None:
        super().__init__(block_size, n_blocks, prefix_caching=prefix_caching, semantics=semantics)
        if not (spec.host_bytes or spec.disk_bytes):
            raise SimulationError("an offload pool needs a host or a disk tier")
        self.spec = spec
        self.host: HostTier | None = None
        self.disk: DiskTier | None = None
        self.moves: list[TierMove] = []
        self.recalled: dict[int, dict[str, int]] = {}  # request → tier → blocks its prefix hits brought back
        self._registered: dict[int, tuple[int, tuple[int, ...]]] = {}  # block → (hash, tokens) while registered
        self._save_point = False
        self._journal: dict[int, tuple[torch.Tensor, torch.Tensor]] | None = None  # evicted device rows since the save
        self._pinned: int | None = None  # the block a recall is bringing back (no store may push it out of its tier)
        self.acting = -1  # the request whose block table is taking blocks now (``SequenceBlocks`` says): a store's owner

    # ------------------------------------------------------------------ set-up
    def ensure_storage(
        self,
        n_layers: int,
        n_kv_heads: int,
        head_dim: int,
        dtype: torch.dtype,
        device: torch.device,
        layers: Sequence[int] | None = None,
    ) -> None:
        if layers is not None and list(layers) != list(range(n_layers)):  # a tier's block holds every layer's rows
            raise SimulationError("offload tiers hold every layer's rows: a model whose layers do not all hold K/V has none")
        super().ensure_storage(n_layers, n_kv_heads, head_dim, dtype, device)
        if self.host is None and self.disk is None:
            shape = (n_layers, self.block_size, n_kv_heads, head_dim)
            if self.spec.host_bytes:
                self.host = HostTier(self.spec.host_bytes, shape, dtype)
            if self.spec.disk_bytes:
                self.disk = DiskTier(self.spec.disk_bytes, self.block_bytes)

    def close(self) -> None:
        """Remove the disk tier's folder (its blocks are gone; the record of the moves is kept)."""
        if self.disk is not None:
            self.disk.close()
            self.disk.index.clear()

    # ------------------------------------------------------------------ the pool's hooks
    def register(
        self, b: int, h: int, tokens: Sequence[int] = (), states: dict[int, tuple[torch.Tensor, ...]] | None = None
    ) -> None:
        super().register(b, h, tokens, states)
        if self.hash[b] == h:
            self._registered[b] = (h, tuple(int(t) for t in tokens))

    def allocate(self) -> int:
        """The device pool's next block; when handing it out drops a cached block, its rows go to a tier first
        (they are still in the block: nothing has written it yet)."""
        b = super().allocate()
        gone = self._registered.pop(b, None)
        if gone is not None and self._journal is not None and b not in self._journal:
            # a rolled-back pool says this block holds these rows again: keep them to put back
            k, v = self.rows()
            self._journal[b] = (k[:, b].clone(), v[:, b].clone())
        if gone is not None and gone[0] not in self.cached:  # its only copy on the device
            self._store(b, *gone)
        return b

    def offloaded(self, h: int) -> str | None:
        """The tier holding the block registered under ``h`` ("host" first), or None."""
        if self.host is not None and h in self.host.index:
            return "host"
        if self.disk is not None and h in self.disk.index:
            return "disk"
        return None

    def recall(self, h: int, owner: int = -1) -> int:
        """A device block holding the offloaded block ``h``'s rows again (bit for bit), registered under ``h``
        and held once (as a prefix hit takes it). The allocation may itself offload another block."""
        tier = self.offloaded(h)
        if tier is None:
            raise RuntimeError(f"block {h:016x} is in no offload tier")
        self.acting = owner
        self._pinned = h  # the allocation may store an evicted block: it must not push this one out of its tier
        try:
            b = self.allocate()
        finally:
            self._pinned = None
        k, v = self.rows()
        sync(k.device)
        t0 = time.perf_counter()
        if tier == "host" and self.host is not None:
            slot = self.host.index[h]
            self.host.index.move_to_end(h)
            k[:, b].copy_(self.host.slab[slot, 0])
            v[:, b].copy_(self.host.slab[slot, 1])
            tokens = self.host.tokens[h]
            nbytes = self.host.block_bytes
        elif self.disk is not None:
            from safetensors import safe_open

            self.disk.index.move_to_end(h)
            tokens = self.disk.index[h]
            with safe_open(str(self.disk.path(h)), framework="pt") as f:  # memory-mapped
                k[:, b].copy_(f.get_tensor("k"))
                v[:, b].copy_(f.get_tensor("v"))
            nbytes = self.disk.block_bytes
        sync(k.device)
        self.moves.append(TierMove(tier, "load", nbytes, (time.perf_counter() - t0) * 1e3, f"{h:016x}", owner))
        counts = self.recalled.setdefault(owner, {"host": 0, "disk": 0})
        counts[tier] += 1
        self.filled[b] = self.block_size
        self.register(b, h, tokens)
        self.events[b] = "hit"  # a prefix hit (saved runs know these events; the moves say from which tier)
        return b

    # ------------------------------------------------------------------ moves down
    def _store(self, b: int, h: int, tokens: tuple[int, ...]) -> None:
        tier = self.offloaded(h)
        if tier is not None:  # a tier still holds it (it came back from there): nothing to move, only fresher
            held = self.host.index if tier == "host" and self.host is not None else self.disk.index if self.disk else None
            if held is not None:
                held.move_to_end(h)
            return
        k, v = self.rows()
        if self.host is None:
            self._to_disk(h, tokens, lambda: (k[:, b].cpu(), v[:, b].cpu()))
            return
        host = self.host
        if not host.free:  # the least recently used host block moves down (or is dropped)
            old = next((x for x in host.index if x != self._pinned), None)
            if old is None:  # the host holds only the block being brought back: this one goes straight to disk
                self._to_disk(h, tokens, lambda: (k[:, b].cpu(), v[:, b].cpu()))
                return
            slot = host.index.pop(old)
            old_tokens = host.tokens.pop(old)
            if self.disk is not None:
                self._to_disk(old, old_tokens, lambda: (host.slab[slot, 0], host.slab[slot, 1]))
            host.free.append(slot)
        slot = host.free.pop()
        if host.journal is not None and slot not in host.journal:
            host.journal[slot] = host.slab[slot].clone()
        sync(k.device)
        t0 = time.perf_counter()
        host.slab[slot, 0].copy_(k[:, b])
        host.slab[slot, 1].copy_(v[:, b])
        sync(k.device)
        self.moves.append(TierMove("host", "store", host.block_bytes, (time.perf_counter() - t0) * 1e3, f"{h:016x}", self.acting))
        host.index[h] = slot
        host.tokens[h] = tokens

    def _to_disk(self, h: int, tokens: tuple[int, ...], rows: Callable[[], tuple[torch.Tensor, torch.Tensor]]) -> None:
        from safetensors.torch import save

        disk = self.disk
        if disk is None:
            return  # no disk tier: the block is dropped
        if len(disk.index) >= disk.n_slots:
            old = next((x for x in disk.index if x != self._pinned), None)
            if old is None:  # the disk holds only the block being brought back: this one is dropped
                return
            del disk.index[old]
            disk.stale.add(old)
            if not self._save_point:
                disk.sweep()
        t0 = time.perf_counter()
        k_rows, v_rows = rows()
        data = save({"k": k_rows.contiguous(), "v": v_rows.contiguous()}, metadata={"tokens": ",".join(map(str, tokens))})
        disk.write(h, data)
        self.moves.append(TierMove("disk", "store", disk.block_bytes, (time.perf_counter() - t0) * 1e3, f"{h:016x}", self.acting))
        disk.index[h] = tokens
        disk.stale.discard(h)

    # ------------------------------------------------------------------ state, for exact repeats
    def save_state(self) -> tuple:
        host, disk = self.host, self.disk
        if disk is not None:
            disk.sweep()  # the previous save point can no longer be restored
        if host is not None:
            host.journal = {}
        self._save_point = True
        self._journal = {}
        tiers = (
            (OrderedDict(host.index), dict(host.tokens), list(host.free)) if host is not None else None,
            OrderedDict(disk.index) if disk is not None else None,
            len(self.moves),
            {k: dict(v) for k, v in self.recalled.items()},
        )
        return (super().save_state(), tiers)

    def restore_state(self, state: tuple) -> None:
        base, (host_state, disk_state, n_moves, recalled) = state
        super().restore_state(base)
        if self._journal:  # the cached blocks evicted since the save hold their rows again
            k, v = self.rows()
            for b, (k_rows, v_rows) in self._journal.items():
                k[:, b].copy_(k_rows)
                v[:, b].copy_(v_rows)
        self._journal = {}
        self._registered = {b: (h, self.tokens.get(b, ())) for b, h in enumerate(self.hash) if h is not None}
        host, disk = self.host, self.disk
        if host is not None and host_state is not None:
            for slot, rows in (host.journal or {}).items():
                host.slab[slot].copy_(rows)
            host.journal = {}
            index, tokens, free = host_state
            host.index, host.tokens, host.free = OrderedDict(index), dict(tokens), list(free)
        if disk is not None and disk_state is not None:
            disk.stale |= set(disk.index) - set(disk_state)
            disk.index = OrderedDict(disk_state)
        del self.moves[n_moves:]
        self.recalled = {k: dict(v) for k, v in recalled.items()}

    # ------------------------------------------------------------------ the record
    def held(self) -> list[tuple[str, int, list[int], list[tuple[int, ...]]]]:
        """Per tier the pool has: (tier, capacity in blocks, the hashes it holds least recently used first —
        the next out first —, their token ids); what a snapshot of the pool records."""
        out: list[tuple[str, int, list[int], list[tuple[int, ...]]]] = []
        if self.host is not None:
            out.append(("host", self.host.n_slots, list(self.host.index), [self.host.tokens[h] for h in self.host.index]))
        if self.disk is not None:
            out.append(("disk", self.disk.n_slots, list(self.disk.index), list(self.disk.index.values())))
        return out

    def offload_summary(self, n_requests: int = 0) -> dict[str, object]:
        """Per tier: capacity, blocks and bytes stored and loaded, their measured ms (total, and each move);
        per request: blocks its prefix hits brought back from host and from disk."""
        tiers: dict[str, object] = {}
        for tier, held in (("host", self.host), ("disk", self.disk)):
            if held is None:
                continue
            entry: dict[str, object] = {"capacity_blocks": held.n_slots, "held_blocks": len(held.index)}
            for direction in ("store", "load"):
                moves = [m for m in self.moves if m.tier == tier and m.direction == direction]
                entry[f"{direction}_blocks"] = len(moves)
                entry[f"{direction}_bytes"] = sum(m.nbytes for m in moves)
                entry[f"{direction}_ms"] = round(sum(m.ms for m in moves), 4)
            tiers[tier] = entry
        n = max([n_requests, *(o + 1 for o in self.recalled)])
        return {
            "spec": self.spec.describe(),
            "block_bytes": self.block_bytes,
            "host_pinned": self.host.pinned if self.host is not None else None,
            "host_memory": self.host.memory if self.host is not None else None,
            "tiers": tiers,
            "recalled": [[self.recalled.get(i, {}).get(t, 0) for t in TIERS] for i in range(n)],
            "moves": [asdict(m) for m in self.moves],
        }
