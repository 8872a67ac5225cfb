"""The paged cache (``paged:B``) and its block pool: logits equal the contiguous lane's, block tables
stay sound, prefix hits are exact, reference counts return to zero, LRU eviction, copy-on-write."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers import FAMILY_SPECS, load
from torch.utils._python_dispatch import TorchDispatchMode

from kvsim.caches import KVCache, make_cache, parse_lanes
from kvsim.caches.block_table import SequenceBlocks
from kvsim.caches.blocks import BlockPool, PoolFullError, block_hash, prefix_hashes
from kvsim.core.sampling import SimulationError
from kvsim.engine.simulate import Simulator
from kvsim.serving.waste import allocation_waste, shared_prefix_blocks

BLOCK_SIZES = {"llama-gqa": (1, 3, 4, 16), "gpt2": (3, 16)}


@pytest.mark.parametrize("family", ["llama-gqa", "gpt2"])
def test_paged_logits_equal_contiguous_over_many_steps(family: str) -> None:
    """Several block sizes, a prompt ending mid-block and 40 steps crossing many block boundaries:
    the paged lanes' logits equal the kv lane's exactly and their rows equal its rows."""
    loaded = load(FAMILY_SPECS[family])
    lanes = parse_lanes("kv," + ",".join(f"paged:{b}" for b in BLOCK_SIZES[family]))
    sim = Simulator(loaded.model, loaded.tokenizer, list(range(5, 18)), lanes, warmup=False)  # 13 prompt tokens
    records = list(sim.run(40, stop_at_eos=False))
    assert len(records) == 40
    for record in records:
        for lane in record.lanes[1:]:
            assert lane.logit_diff == 0.0, (record.step, lane.name, lane.logit_diff)
            assert lane.token_id == record.lanes[0].token_id
            assert lane.cache_tokens == record.lanes[0].cache_tokens
    kv = sim.lanes[0].cache
    for lane in sim.lanes[1:]:
        for layer in range(loaded.model.cfg.n_layers):
            k, v, pos = lane.cache.held_rows(layer)
            k_ref, v_ref = kv.stored(layer)
            assert torch.equal(k, k_ref) and torch.equal(v, v_ref)
            assert torch.equal(pos, torch.arange(kv.n_tokens))


def test_paged_bytes_are_blocks_and_table() -> None:
    """payload = held blocks' slots (tail included) and kv's payload + the tail; overhead = the table."""
    loaded = load(FAMILY_SPECS["llama-gqa"])
    cfg = loaded.model.cfg
    row = 2 * cfg.n_layers * cfg.n_kv_heads * cfg.head_dim * 4
    sim = Simulator(loaded.model, loaded.tokenizer, [1, 2, 3, 4, 5], parse_lanes("kv,paged:4"), warmup=False)
    for record in sim.run(12, stop_at_eos=False):
        kv, paged = record.lanes
        n = kv.cache_tokens
        blocks = -(-n // 4)
        assert paged.cache_bytes - paged.cache_overhead_bytes == blocks * 4 * row
        assert paged.cache_overhead_bytes == blocks * 8
        waste = allocation_waste([n], 4, cfg.max_seq_len, row)
        assert paged.cache_bytes - paged.cache_overhead_bytes - kv.cache_bytes == (waste.paged_slots - waste.exact_slots) * row


def test_truncate_restores_and_a_full_pool_is_one_clear_error() -> None:
    loaded = load(FAMILY_SPECS["llama-mqa"])
    cache = make_cache("paged:4:3", loaded.model.cfg.n_layers)
    ids = torch.tensor([list(range(1, 11))])
    loaded.model(ids, torch.arange(10), cache)  # 10 rows: 3 blocks
    assert cache.n_tokens == 10 and len(cache.seq.blocks) == 3
    with pytest.raises(PoolFullError, match=r"paged:4:3: the block pool is full: all 3 blocks"):
        loaded.model(torch.tensor([[1, 2, 3]]), torch.arange(10, 13), cache)
    cache.truncate(10)  # as the simulator undoes a step that failed
    assert cache.n_tokens == 10 and cache.pool.n_free == 0
    cache.truncate(5)
    assert len(cache.seq.blocks) == 2 and cache.pool.n_free == 1
    cache.pool.check()
    with pytest.raises(SimulationError):
        BlockPool(0)


def test_hashes_chain_the_prefix() -> None:
    a = block_hash(None, [1, 2, 3, 4])
    assert a == block_hash(None, [1, 2, 3, 4])
    assert block_hash(a, [5, 6, 7, 8]) != block_hash(block_hash(None, [9, 9, 9, 9]), [5, 6, 7, 8])
    assert prefix_hashes([1, 2, 3, 4, 5, 6, 7, 8, 9], 4) == [a, block_hash(a, [5, 6, 7, 8])]


def _pool(blocks: int, size: int = 4) -> BlockPool:
    pool = BlockPool(size, blocks)
    pool.ensure_storage(1, 1, 2, torch.float32, torch.device("cpu"))
    return pool


def _write(seq: SequenceBlocks, tokens: list[int]) -> None:
    """Append tokens whose (fake) K/V row is the token id itself, and register the full blocks."""
    start = seq.n_tokens
    blocks, slots = seq.reserve(start, len(tokens), tokens)
    rows = torch.tensor(tokens, dtype=torch.float32).view(1, 1, -1, 1).expand(1, 1, -1, 2)
    seq.write(0, blocks, slots, rows, -rows)
    seq.commit()


def test_prefix_hits_share_blocks_and_refcounts_return_to_zero() -> None:
    pool = _pool(8)
    a = SequenceBlocks(pool, 0)
    assert a.match_prefix([1, 2, 3, 4, 5, 6, 7, 8, 9]) == 0
    _write(a, [1, 2, 3, 4, 5, 6, 7, 8, 9])
    b = SequenceBlocks(pool, 1)
    assert b.match_prefix([1, 2, 3, 4, 5, 6, 7, 8, 10, 11]) == 8  # two full blocks shared
    _write(b, [10, 11])
    assert b.blocks[:2] == a.blocks[:2] and b.blocks[2] != a.blocks[2]
    assert [pool.ref[x] for x in a.blocks] == [2, 2, 1]
    k, _ = b.gather(0)
    assert k[0, 0, :, 0].tolist() == [1, 2, 3, 4, 5, 6, 7, 8, 10, 11]
    c = SequenceBlocks(pool, 2)
    assert c.match_prefix([1, 2, 3, 4, 5, 6, 7, 8]) == 4  # the last token is always computed: 1 block
    for seq in (a, b, c):
        seq.free()
    assert all(r == 0 for r in pool.ref) and pool.n_free == 8
    pool.check()
    d = SequenceBlocks(pool, 3)  # freed full blocks keep their rows and hashes until evicted
    assert d.match_prefix([1, 2, 3, 4, 5, 6, 7, 8, 0]) == 8
    d.free()


def test_lru_eviction_takes_the_least_recently_used_cached_block() -> None:
    pool = _pool(3)
    a, b = SequenceBlocks(pool, 0), SequenceBlocks(pool, 1)
    a.match_prefix([1, 2, 3, 4, 0])
    _write(a, [1, 2, 3, 4])
    b.match_prefix([5, 6, 7, 8, 0])
    _write(b, [5, 6, 7, 8])
    a.free()  # a's block is now the least recently used cached block
    b.free()
    c = SequenceBlocks(pool, 2)
    c.match_prefix([9, 9, 9, 9, 9])
    _write(c, [9, 9, 9, 9, 9])  # two blocks: the never-used one, then a's cached block is evicted
    assert pool.evictions == 1
    assert pool.lookup(block_hash(None, [1, 2, 3, 4])) is None
    assert pool.lookup(block_hash(None, [5, 6, 7, 8])) is not None
    _write(c, [9, 9, 9, 9])  # the third block: b's cached block goes too
    assert pool.evictions == 2 and pool.n_free == 0
    with pytest.raises(PoolFullError, match="all 3 blocks"):
        _write(c, [9, 9, 9, 9])  # a fourth block: every block is held
    c.truncate(9)  # undo the failed reserve
    pool.check()


def test_copy_on_write_for_a_shared_partial_block() -> None:
    pool = _pool(6)
    a = SequenceBlocks(pool, 0)
    _write(a, [1, 2, 3, 4, 5, 6])
    b = a.fork(1)
    assert pool.ref[a.blocks[1]] == 2
    _write(b, [7])  # b writes into the shared partial block: it gets a copy first
    assert b.blocks[0] == a.blocks[0] and b.blocks[1] != a.blocks[1]
    assert pool.ref[a.blocks[1]] == 1 and pool.events[b.blocks[1]] == "copied"
    assert b.gather(0)[0][0, 0, :, 0].tolist() == [1, 2, 3, 4, 5, 6, 7]
    assert a.gather(0)[0][0, 0, :, 0].tolist() == [1, 2, 3, 4, 5, 6]
    full = a.blocks[0]
    a.truncate(2)  # back into a registered block: the next write must not change what others may hit
    _write(a, [8])
    assert a.blocks[0] != full and pool.hash[full] is not None
    assert a.gather(0)[0][0, 0, :, 0].tolist() == [1, 2, 8]
    for seq in (a, b):
        seq.free()
    assert all(r == 0 for r in pool.ref)
    pool.check()


def test_reused_rows_equal_the_rows_a_fresh_prefill_computes() -> None:
    """Rows from a hit block (computed inside another request's longer prompt) equal the rows this
    request's own prefill computes (contiguous cache, no sharing)."""
    from kvsim.caches.paged import PagedCache

    loaded = load(FAMILY_SPECS["llama-gqa"])
    model, cfg = loaded.model, loaded.model.cfg
    pool = BlockPool(4, 32)
    pool.ensure_storage(cfg.n_layers, cfg.n_kv_heads, cfg.head_dim, model.dtype, model.device)
    first = list(range(30, 53))  # 23 tokens
    seq = SequenceBlocks(pool, 0)
    cache = PagedCache(cfg.n_layers, 4, pool=pool, sequence=seq)
    cache.feed(first)
    model(torch.tensor([first]), torch.arange(len(first)), cache)
    seq.commit()
    seq.free()
    second = first[:13] + [7, 8, 9]  # shares 3 full blocks (12 rows)
    other = SequenceBlocks(pool, 1)
    assert other.match_prefix(second) == 12
    fresh = KVCache(cfg.n_layers)
    model(torch.tensor([second]), torch.arange(len(second)), fresh)
    for layer in range(cfg.n_layers):
        k, v = other.gather(layer)
        k_ref, v_ref = fresh.stored(layer)
        np.testing.assert_allclose(k.numpy(), k_ref[:, :, :12].numpy(), atol=1e-5)
        np.testing.assert_allclose(v.numpy(), v_ref[:, :, :12].numpy(), atol=1e-5)


def test_waste_closed_form() -> None:
    w = allocation_waste([5, 16, 17], 16, 64, bytes_per_slot=10)
    assert (w.preallocated_slots, w.exact_slots, w.paged_slots) == (192, 38, 64)
    assert w.preallocated_waste == pytest.approx(1 - 38 / 192)
    assert w.paged_waste == pytest.approx(1 - 38 / 64) and w.exact_waste == 0.0
    assert w.as_dict()["paged_bytes"] == 640
    assert shared_prefix_blocks([[1, 2, 3, 4, 5], [1, 2, 3, 4, 6], [1, 2, 3, 4]], 2) == [0, 2, 1]
    with pytest.raises(ValueError):
        allocation_waste([65], 16, 64)


def test_repeats_leave_the_paged_lane_unchanged() -> None:
    """--repeats rolls the lane back between timed forwards: the blocks are released and taken again."""
    loaded = load(FAMILY_SPECS["llama-mqa"])
    runs = []
    for repeats in (1, 3):
        sim = Simulator(loaded.model, loaded.tokenizer, list(range(3, 12)), parse_lanes("kv,paged:4:8"), repeats=repeats)
        runs.append([(r.token_id, r.lanes[1].cache_bytes, r.lanes[1].logit_diff) for r in sim.run(12, stop_at_eos=False)])
        sim.lanes[1].cache.pool.check()
        assert len(sim.lanes[1].cache.seq.blocks) == 5 and sim.lanes[1].cache.pool.n_free == 3
    assert runs[0] == runs[1] and all(diff <= 1e-5 for _, _, diff in runs[0])


class _CountWrites(TorchDispatchMode):
    """Elements every non-view aten op produces (a copy into a slice counts the slice): an independent
    count of what a read moves."""

    def __init__(self) -> None:
        super().__init__()
        self.elements = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        out = func(*args, **(kwargs or {}))
        if not func.is_view:
            self.elements += sum(
                t.numel() for t in (out if isinstance(out, tuple | list) else (out,)) if isinstance(t, torch.Tensor)
            )
        return out


def test_a_decode_step_copies_only_its_new_rows() -> None:
    """Through a whole run (prefill, 39 decode steps crossing block and buffer-capacity boundaries), the
    paged lane reads from the pool exactly the rows written that step, once per layer; the elements its
    reads produce, counted by a dispatch hook, are two rows (K and V) per layer however long the sequence
    — the full read through the table (the reference) produces every held row."""
    loaded = load(FAMILY_SPECS["llama-gqa"])
    cfg = loaded.model.cfg
    sim = Simulator(loaded.model, loaded.tokenizer, list(range(5, 38)), parse_lanes("kv,paged:4"), warmup=False)
    seq = sim.lanes[1].cache.seq
    gather = seq.gather
    counted: list[int] = []

    def counting_gather(layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        with _CountWrites() as mode:
            out = gather(layer)
        counted.append(mode.elements)
        return out

    seq.gather = counting_gather  # type: ignore[method-assign]
    row = cfg.n_kv_heads * cfg.head_dim
    copied, regrown = seq.rows_copied, seq.rows_regrown
    for record in sim.run(40, stop_at_eos=False):  # each record comes after its step ran
        new_rows = 33 if record.step == 0 else 1
        assert record.lanes[1].cache_tokens == record.lanes[0].cache_tokens == 33 + record.step
        assert record.lanes[1].logit_diff == 0.0
        assert seq.rows_copied - copied == new_rows * cfg.n_layers, record.step  # the step's rows, read through the table
        if record.step and seq.rows_regrown == regrown:
            assert len(counted) == cfg.n_layers and all(n == 2 * row for n in counted), (record.step, counted)
        copied, regrown, counted[:] = seq.rows_copied, seq.rows_regrown, []
    assert seq.rows_regrown > 0  # the buffers doubled (64 → 128) on the way: amortised, as kv's appends
    with _CountWrites() as mode:
        seq.gather_through_table(0)
    assert mode.elements >= 2 * seq.n_tokens * row


def test_read_buffers_stay_equal_to_the_table_through_sharing_eviction_and_rollbacks() -> None:
    """Random sequences over one pool (fixed: evicts; growable: reallocates its rows), each step one of
    prefix hit, append, truncate, fork, free, a save/append/restore (as the requests engine repeats a
    prefill): every live sequence's buffered read equals the full read through its block table, on
    every layer. Each write stores fresh values, so a row the buffer failed to refresh would differ."""
    gen = np.random.default_rng(3)
    counter = [0.0]

    def write(seq: SequenceBlocks, tokens: list[int]) -> None:
        blocks, slots = seq.reserve(seq.n_tokens, len(tokens), tokens)
        for layer in range(2):
            values = counter[0] + torch.arange(len(tokens) * 6, dtype=torch.float32).view(1, 3, len(tokens), 2)
            counter[0] += len(tokens) * 6
            seq.write(layer, blocks, slots, values, -values)
        seq.commit()

    for fixed in (12, None):
        pool = BlockPool(4, fixed, prefix_caching=True)
        pool.ensure_storage(2, 3, 2, torch.float32, torch.device("cpu"))
        live: list[SequenceBlocks] = []
        for step in range(400):
            op = gen.integers(0, 8) if live else 0
            try:
                if op == 0 and len(live) < 4:
                    seq = SequenceBlocks(pool, step)
                    prompt = [int(t) for t in gen.integers(0, 2, gen.integers(2, 14))]
                    reused = seq.match_prefix(prompt)
                    live.append(seq)
                    write(seq, prompt[reused:])
                elif op in (1, 2):
                    write(live[gen.integers(len(live))], [int(t) for t in gen.integers(0, 2, gen.integers(1, 6))])
                elif op == 3:
                    seq = live[gen.integers(len(live))]
                    seq.truncate(int(gen.integers(0, seq.n_tokens + 1)))
                elif op == 4 and len(live) < 4:
                    live.append(live[gen.integers(len(live))].fork(step))
                elif op == 5:
                    live.pop(gen.integers(len(live))).free()
                elif op == 6:
                    seq = live[gen.integers(len(live))]
                    state, own = pool.save_state(), seq.save_state()
                    write(seq, [1, 0, 1])
                    seq.gather(0)  # the timed forward read them
                    pool.restore_state(state)
                    seq.restore_state(own)
                elif op == 7:
                    seq = live[gen.integers(len(live))]
                    seq.gather(int(gen.integers(2)))  # a read between changes (the buffer syncs lazily)
            except PoolFullError:
                for seq in live:  # undo a reserve that ran out, as the engines do
                    seq.truncate(seq.n_tokens)
            for seq in live:
                for layer in range(2):
                    k, v = seq.gather(layer)
                    k_ref, v_ref = seq.gather_through_table(layer)
                    assert torch.equal(k, k_ref) and torch.equal(v, v_ref), (fixed, step, op)
        for seq in live:
            seq.free()
        pool.check()
