"""How much reserved K/V memory holds no row: three ways to allocate the same requests' rows.

For requests that ended holding ``rows_i`` K/V rows each (prompt + generated tokens whose K/V were
computed), with every request's memory held at once, as a server holds its running batch:

* **contiguous, preallocated**: each request reserves ``max_len`` slots up front (the model's
  context: what a server that does not know the answer's length must reserve);
  waste = 1 − Σ rows / Σ max_len;
* **contiguous, exact**: each request reserves exactly ``rows_i`` — no waste, but only possible
  when the final length is known in advance (it is not: the answer's length is found by
  generating it);
* **paged**: each request holds ``ceil(rows_i / B)`` blocks of ``B`` slots; only the last block's
  tail is empty (internal fragmentation, < B slots a request); waste = 1 − Σ rows / Σ blocks·B;
* **paged, prefix shared** (a fourth figure): as paged, but the leading full prompt blocks a
  request shares with an earlier one (equal chained hashes, as the prefix cache finds them) are
  counted once — the pool's distinct blocks. Its "waste" can be negative: fewer slots than rows.

A slot is one token's K and V in every layer: ``bytes_per_slot`` turns slots into bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from ..caches.blocks import prefix_hashes


@dataclass(frozen=True)
class WasteReport:
    block_size: int
    max_len: int  # slots a preallocating server reserves per request
    bytes_per_slot: int  # one token's K and V, all layers
    rows: tuple[int, ...]  # rows each request holds
    shared_blocks: tuple[int, ...]  # leading prompt blocks each request shares with an earlier one
    preallocated_slots: int
    exact_slots: int
    paged_slots: int
    paged_shared_slots: int

    @staticmethod
    def _waste(reserved: int, used: int) -> float:
        return 1.0 - used / reserved if reserved else 0.0

    @property
    def preallocated_waste(self) -> float:
        return self._waste(self.preallocated_slots, self.exact_slots)

    @property
    def exact_waste(self) -> float:
        return 0.0

    @property
    def paged_waste(self) -> float:
        return self._waste(self.paged_slots, self.exact_slots)

    @property
    def paged_shared_waste(self) -> float:
        return self._waste(self.paged_shared_slots, self.exact_slots)

    def as_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["rows"], d["shared_blocks"] = list(self.rows), list(self.shared_blocks)
        for name in ("preallocated", "exact", "paged", "paged_shared"):
            d[f"{name}_bytes"] = d[f"{name}_slots"] * self.bytes_per_slot
            d[f"{name}_waste"] = getattr(self, f"{name}_waste")
        return d


def shared_prefix_blocks(prompts: Sequence[Sequence[int]], block_size: int) -> list[int]:
    """For each prompt in order: its leading full blocks (the last token left out, as a prefill must
    compute it) whose chained hash a full block of an earlier prompt has — what a prefix cache
    large enough to evict nothing would hit."""
    seen: set[int] = set()
    shared = []
    for prompt in prompts:
        hashes = prefix_hashes(prompt[: max(0, len(prompt) - 1)], block_size)
        hits = 0
        while hits < len(hashes) and hashes[hits] in seen:
            hits += 1
        shared.append(hits)
        seen.update(prefix_hashes(prompt, block_size))
    return shared


def allocation_waste(
    rows: Sequence[int],
    block_size: int,
    max_len: int,
    bytes_per_slot: int = 0,
    prompts: Sequence[Sequence[int]] | None = None,
) -> WasteReport:
    """The three (four) figures for requests holding ``rows`` rows each; ``prompts`` (token ids)
    give the prefix-shared figure (without them nothing is shared)."""
    if block_size < 1 or max_len < 1:
        raise ValueError(f"block size and max length must be ≥ 1, got {block_size}, {max_len}")
    rows = tuple(int(r) for r in rows)
    if any(r < 0 or r > max_len for r in rows):
        raise ValueError(f"rows must be between 0 and the max length {max_len}, got {list(rows)}")
    shared = tuple(shared_prefix_blocks(prompts, block_size)) if prompts is not None else (0,) * len(rows)
    blocks = [-(-r // block_size) for r in rows]
    return WasteReport(
        block_size=block_size,
        max_len=max_len,
        bytes_per_slot=bytes_per_slot,
        rows=rows,
        shared_blocks=shared,
        preallocated_slots=max_len * len(rows),
        exact_slots=sum(rows),
        paged_slots=sum(blocks) * block_size,
        paged_shared_slots=(sum(blocks) - sum(shared)) * block_size,
    )
