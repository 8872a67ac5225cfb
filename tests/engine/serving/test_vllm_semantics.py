"""The pool under ``semantics="vllm"`` does what vLLM v1's KV cache manager does, step for step.

Each ``test_vllm_*`` replays one scenario of vLLM's own prefix-caching unit tests
(``tests/v1/core/test_prefix_caching.py`` in vllm-project/vllm; named in each docstring) with the same block
size, the same number of blocks (``num_blocks`` counts vLLM's null block 0, as ``BlockPool(…, n_blocks)``
does here) and the same prompts (synthetic token ids, as theirs), and asserts what that test asserts: the
block ids handed out, the reference counts, the hits and the free queue's order. Token ids and hashes are
kvsim's own (``kvsim.caches.blocks.block_hash``): only the chain's structure is vLLM's.

``Manager`` is the few calls of vLLM's ``KVCacheManager`` those tests make, written over kvsim's
``SequenceBlocks`` as kvsim's engines use it (look up the prefix, check the pool has room, take the prefix,
reserve the rest, register the full blocks). The last test runs a small model through a requests run
under the same rules and checks the block ids, hits and evictions it records against those the rules give.
"""

from __future__ import annotations

import json
import zipfile

import pytest
from helpers import cli_json_lines

from kvsim.caches.block_table import CachedPrefix, SequenceBlocks
from kvsim.caches.blocks import BlockPool, PoolFullError, block_hash, prefix_hashes
from kvsim.cli.entry import main
from kvsim.core.sampling import SimulationError
from kvsim.engine.trace_checks import TraceError
from kvsim.models.loading import load_model
from kvsim.serving.batching import run_batched
from kvsim.serving.requests import run_requests
from kvsim.serving.saved_runs import load_runs, save_runs

SMALL = "random:family=llama,layers=2,heads=4,kv_heads=2,dim=32,vocab=300,ctx=256,seed=5"
COMMON = [i for i in range(3) for _ in range(16)]  # vLLM's "complete 3 blocks (48 tokens)"


class Manager:
    """vLLM's ``KVCacheManager`` calls, over one kvsim pool (ids: ``request → SequenceBlocks``)."""

    def __init__(self, block_size: int, num_blocks: int, caching: bool = True) -> None:
        self.pool = BlockPool(block_size, num_blocks, prefix_caching=caching, semantics="vllm")
        self.seqs: dict[str, SequenceBlocks] = {}
        self.tokens: dict[str, list[int]] = {}

    def get_computed_blocks(self, rid: str, tokens: list[int]) -> CachedPrefix:
        self.seqs[rid] = SequenceBlocks(self.pool, owner=len(self.seqs))
        self.tokens[rid] = list(tokens)
        return self.seqs[rid].cached_prefix(tokens)

    def allocate_slots(self, rid: str, hit: CachedPrefix | None = None) -> list[int] | None:
        """Room for every token of ``rid`` not yet held; the new block ids, or None when the free queue is
        too short (free hit blocks count against it, as vLLM's ``num_evictable_computed_blocks``)."""
        seq, tokens, size = self.seqs[rid], self.tokens[rid], self.pool.block_size
        taking = hit if hit is not None and hit.blocks else None
        held = len(seq.blocks) if taking is None else len(taking.blocks)
        start = seq.n_tokens if taking is None else taking.rows
        need = seq.blocks_to_reserve(len(tokens) - start) if taking is None else -(-len(tokens) // size) - held
        if need + (taking.free_blocks if taking else 0) > self.pool.n_free:
            return None
        if taking is not None:
            seq.take_prefix(taking)
        before = len(seq.blocks)
        seq.reserve(start, len(tokens) - start, tokens[start:])
        seq.commit()
        return seq.blocks[before:]

    def append(self, rid: str, tokens: list[int]) -> list[int] | None:
        """A decode: ``tokens`` more for a running request (vLLM's ``append_output_token_ids`` + allocate)."""
        self.tokens[rid] += tokens
        return self.allocate_slots(rid)

    def free(self, rid: str) -> None:
        self.seqs.pop(rid).free()

    def queue(self) -> list[int]:
        self.pool.check()
        return list(self.pool.free_queue())


def test_vllm_prefill() -> None:
    """vLLM's ``test_prefill``: block ids in queue order after the null block, hits on a shared prefix held
    and freed, hash-less blocks to the front of the free queue, cached ones to the back tail first, and the
    eviction order a cache-missing request sees."""
    m = Manager(16, 11)
    assert m.pool.null_block == 0 and m.pool.n_free == 10 and 0 not in m.queue()
    tokens0 = COMMON + [3] * 7
    hit = m.get_computed_blocks("0", tokens0)
    assert hit.blocks == () and hit.rows == 0
    assert len(prefix_hashes(tokens0, 16)) == 3
    assert m.allocate_slots("0", hit) == [1, 2, 3, 4]
    parent = None
    for b in (1, 2, 3):  # full blocks: chained hashes, one holder
        parent = block_hash(parent, tokens0[(b - 1) * 16 : b * 16])
        assert m.pool.hash[b] == parent and m.pool.ref[b] == 1
    assert m.pool.hash[4] is None and m.pool.ref[4] == 1  # the partial block

    hit = m.get_computed_blocks("1", COMMON + [3] * 5)  # held by request 0: hit
    assert hit.blocks == (1, 2, 3) and hit.rows == 48
    assert m.allocate_slots("1", hit) == [5]
    assert [m.pool.ref[b] for b in (1, 2, 3)] == [2, 2, 2]
    assert m.pool.n_free == 5

    m.free("0")
    m.free("1")
    assert m.pool.n_free == 10
    # [partial, no hash: 5, 4 (prepended)] [never handed out: 6 … 10] [common, tail first: 3, 2, 1]
    assert m.queue() == [5, 4, 6, 7, 8, 9, 10, 3, 2, 1]

    hit = m.get_computed_blocks("2", COMMON + [3] * 6)  # freed but cached: still a hit
    assert hit.blocks == (1, 2, 3) and hit.rows == 48 and hit.free_blocks == 3
    assert m.allocate_slots("2", hit) == [5]  # the partial block 5 reused first
    assert m.pool.n_free == 6 and all(m.pool.ref[b] == 0 for b in m.queue())
    m.free("2")

    hit = m.get_computed_blocks("3", [99] * (16 * 10))  # a miss taking the whole pool: eviction order
    assert hit.blocks == ()
    assert m.allocate_slots("3", hit) == [5, 4, 6, 7, 8, 9, 10, 3, 2, 1]
    assert m.pool.n_free == 0 and m.queue() == []
    assert m.pool.evictions == 3  # the three cached blocks were handed out again


def test_vllm_prefill_plp_duplicates_stay_findable() -> None:
    """vLLM's ``test_prefill_plp``: a request that skips the cache (there: prompt logprobs) gets new blocks
    whose hashes equal the cached ones (vLLM does not deduplicate). A lookup finds the first registered;
    once it is evicted the duplicate answers (vLLM's hash → {block id: block} map) — kvsim's first pool
    forgot the duplicate."""
    m = Manager(16, 11)
    tokens0 = COMMON + [3] * 7
    assert m.allocate_slots("0", m.get_computed_blocks("0", tokens0)) == [1, 2, 3, 4]
    hashes0 = [m.pool.hash[b] for b in (1, 2, 3, 4)]
    assert m.allocate_slots("1", m.get_computed_blocks("1", COMMON + [3] * 5)) == [5]
    m.free("0")
    m.free("1")
    assert m.queue() == [5, 4, 6, 7, 8, 9, 10, 3, 2, 1]
    m.get_computed_blocks("2", COMMON + [3] * 6)
    blocks = m.allocate_slots("2")  # the hit not taken
    assert blocks == [5, 4, 6, 7] and blocks != [1, 2, 3, 4]
    assert [m.pool.hash[b] for b in blocks] == hashes0  # the same hashes, other ids
    assert all(m.pool.ref[b] == 1 for b in blocks)
    assert m.pool.lookup(hashes0[0]) == 1  # the first registered
    m.free("2")
    assert m.queue() == [7, 8, 9, 10, 3, 2, 1, 6, 4, 5]  # 7: hash-less, to the front; 6, 4, 5: cached, tail first
    # seven blocks for a miss: 7 … 10, then the first-registered 3, 2, 1 are evicted
    assert m.allocate_slots("3", m.get_computed_blocks("3", [99] * (16 * 7))) == [7, 8, 9, 10, 3, 2, 1]
    assert m.pool.evictions == 3
    assert m.pool.lookup(hashes0[0]) == 5  # the duplicate answers now
    hit = m.get_computed_blocks("4", COMMON + [3] * 6)
    assert hit.blocks == (5, 4, 6) and hit.rows == 48
    kvsim = BlockPool(16, 11)  # the first pool: one block per hash, the duplicate only marked
    first, second = SequenceBlocks(kvsim, 0), SequenceBlocks(kvsim, 1)
    for seq in (first, second):
        seq.reserve(0, 48, COMMON)
        seq.commit()
    assert kvsim.lookup(kvsim.hash[first.blocks[0]] or 0) == first.blocks[0] and kvsim.duplicates == {}


def test_vllm_decode() -> None:
    """vLLM's ``test_decode``: decode tokens fill the partial block without a new one; a block that fills is
    registered and the next one is new and hash-less."""
    m = Manager(16, 11)
    assert m.allocate_slots("0", m.get_computed_blocks("0", COMMON + [3] * 7)) == [1, 2, 3, 4]
    assert m.append("0", [8] * 4) == []
    assert m.pool.hash[m.seqs["0"].blocks[-1]] is None
    assert m.append("0", [7] * (9 + 10)) == [5]
    assert m.pool.hash[m.seqs["0"].blocks[-2]] is not None
    assert m.pool.hash[m.seqs["0"].blocks[-1]] is None


def test_vllm_evict() -> None:
    """vLLM's ``test_evict``: a freed request's hash-less tail goes to the front, its cached blocks to the
    back tail first; a later hit on the first two blocks takes them out of the queue and its new block is the
    queue's first."""
    m = Manager(16, 11)
    last = 5 * 16 + 7
    assert len(m.allocate_slots("0", m.get_computed_blocks("0", list(range(last)))) or []) == 6  # 5 full + 1 partial
    assert len(m.allocate_slots("1", m.get_computed_blocks("1", list(range(last, last + 3 * 16)))) or []) == 3
    assert m.pool.n_free == 1
    m.free("0")
    assert m.queue() == [6, 10, 5, 4, 3, 2, 1]
    m.free("1")
    assert m.pool.n_free == 10 and m.queue() == [6, 10, 5, 4, 3, 2, 1, 9, 8, 7]
    hit = m.get_computed_blocks("2", list(range(2 * 16 + 3)))
    assert hit.blocks == (1, 2) and hit.rows == 32
    assert m.allocate_slots("2", hit) == [6]
    assert m.pool.n_free == 7


def test_vllm_hash_block_correct_reuse() -> None:
    """vLLM's ``test_hash_block_correct_reuse``: a cached block handed out again for a partial block loses its
    hash (one eviction)."""
    m = Manager(16, 2)
    assert m.allocate_slots("0", m.get_computed_blocks("0", list(range(16)))) == [1]
    assert m.pool.hash[1] is not None
    m.free("0")
    hit = m.get_computed_blocks("1", list(range(15)))
    assert hit.blocks == ()
    assert m.allocate_slots("1", hit) == [1]
    assert m.pool.hash[1] is None and m.pool.evictions == 1


def test_vllm_computed_blocks_not_evicted() -> None:
    """vLLM's ``test_computed_blocks_not_evicted``: a hit on a free cached block takes it out of the queue
    before new blocks are handed out, so the other cached block is evicted, not the hit."""
    m = Manager(16, 3)
    assert m.allocate_slots("0", m.get_computed_blocks("0", list(range(16)))) == [1]
    assert m.allocate_slots("1", m.get_computed_blocks("1", list(range(16, 32)))) == [2]
    m.free("0")
    m.free("1")
    hit = m.get_computed_blocks("2", list(range(32)))
    assert hit.blocks == (1,) and hit.rows == 16
    assert m.allocate_slots("2", hit) == [2]


def test_vllm_basic_prefix_caching_disabled() -> None:
    """vLLM's ``test_basic_prefix_caching_disabled``: no hashes, no hits on a shared prefix, and a request the
    free queue cannot hold is refused (vLLM: ``allocate_slots`` returns None; kvsim's pool: PoolFullError)."""
    m = Manager(4, 5, caching=False)
    assert len(m.allocate_slots("1", m.get_computed_blocks("1", list(range(10)))) or []) == 3
    m.free("1")
    hit = m.get_computed_blocks("2", list(range(16)))
    assert hit.blocks == ()
    assert len(m.allocate_slots("2", hit) or []) == 4
    assert all(h is None for h in m.pool.hash)
    assert m.allocate_slots("3", m.get_computed_blocks("3", list(range(4)))) is None
    with pytest.raises(PoolFullError):
        m.pool.allocate()


def test_vllm_last_block_of_a_cached_prompt_is_computed_again() -> None:
    """vLLM's ``KVCacheManager.get_computed_blocks`` caps a hit at ``num_tokens - 1`` (the last token's logits
    are needed): a prompt whose every block is cached hits all but its last, which is computed into a new
    block registered under the same hash."""
    m = Manager(16, 11)
    assert m.allocate_slots("0", m.get_computed_blocks("0", COMMON)) == [1, 2, 3]
    hit = m.get_computed_blocks("1", COMMON)
    assert hit.blocks == (1, 2) and hit.rows == 32
    assert m.allocate_slots("1", hit) == [4]
    assert m.pool.hash[4] == m.pool.hash[3] and m.pool.lookup(m.pool.hash[3] or 0) == 3


def test_kvsim_order_is_kept_and_vllm_needs_its_null_block() -> None:
    """``semantics="kvsim"`` (the first pool) appends every freed block and has no null block, so existing
    figures hold; a vLLM pool of one block has no block to hand out."""
    pool = BlockPool(16, 10)
    seq = SequenceBlocks(pool)
    seq.reserve(0, 55, COMMON + [3] * 7)
    seq.commit()
    assert seq.blocks == [0, 1, 2, 3]
    seq.free()
    assert list(pool.free_queue()) == [4, 5, 6, 7, 8, 9, 3, 2, 1, 0]
    with pytest.raises(SimulationError, match="null block"):
        BlockPool(16, 1, semantics="vllm")
    with pytest.raises(SimulationError, match="pool semantics"):
        BlockPool(16, 4, semantics="sglang")


@pytest.fixture(scope="module")
def small():
    return load_model(SMALL)


PROMPTS = [COMMON + [3] * 7, COMMON + [3] * 5, COMMON + [3] * 6, [99] * 160]


def _run(small, semantics: str):
    return run_requests(
        small.model,
        small.tokenizer,
        PROMPTS,
        block_size=16,
        pool_blocks=10,
        steps=1,
        repeats=1,
        warmup=False,
        pool_semantics=semantics,
    )


@pytest.fixture(scope="module")
def vllm_run(small):
    return _run(small, "vllm")


def test_a_requests_run_records_what_a_vllm_block_manager_would(vllm_run) -> None:
    """A small random model (cheaper than tiny here) through a sequential requests run (block 16, 10 blocks
    + the null block, one token each: rows = the prompt), prompts as ``test_prefill``'s: the block ids,
    hits, evictions and free queue the run records are those vLLM's rules give for this order — each
    request's partial block goes to the front when it finishes and is the next one handed out; the
    160-token miss evicts 3, 2, 1 last."""
    run = vllm_run
    assert run.pool_semantics == "vllm" and run.null_block == 0 and run.pool_blocks == 11 and run.usable_blocks == 10
    summary = run.summary()
    assert summary["pool_blocks"] == 10 and summary["pool_semantics"] == "vllm"
    # vLLM's PrefixCacheStats: queries = the requests' prompt tokens, hits = the tokens of their hit blocks
    assert summary["prefix_cache_queries"] == 55 + 53 + 54 + 160 and summary["prefix_cache_hits"] == 96
    tables = [run.snapshots[r.last_step].table(r.index) for r in run.requests]
    assert [t.blocks for t in tables if t is not None] == [
        (1, 2, 3, 4),
        (1, 2, 3, 4),
        (1, 2, 3, 4),
        (4, 5, 6, 7, 8, 9, 10, 3, 2, 1),
    ]
    assert [r.reused_rows for r in run.requests] == [0, 48, 48, 0]
    assert [r.hit_blocks for r in run.requests] == [0, 3, 3, 0]
    assert run.evictions == 3
    after_first = next(s for s in run.snapshots if (t := s.table(0)) is not None and t.finished)
    assert after_first.free_queue == (4, 5, 6, 7, 8, 9, 10, 3, 2, 1) and after_first.next_block == 4
    assert all(s.null_block == 0 and s.ref_counts[0] == 0 and 0 not in (s.free_queue or ()) for s in run.snapshots)
    assert run.snapshots[-1].free_queue == (1, 2, 3, 10, 9, 8, 7, 6, 5, 4)  # all cached: back, tail first


def _rewrite_manifest(path, change) -> None:
    with zipfile.ZipFile(path) as zf:
        manifest, arrays = json.loads(zf.read("manifest.json")), zf.read("arrays.npz")
    change(manifest)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("manifest.json", json.dumps(manifest))
        zf.writestr("arrays.npz", arrays)


def test_saved_runs_keep_the_free_queue_and_files_without_it_still_load(small, vllm_run, tmp_path) -> None:
    """A saved vLLM-order run reads back with its order, null block and free queue per step; a file written
    before these fields (no pool_semantics, no free_queue) loads as kvsim's order with no queue recorded; a
    free queue that is not the unheld blocks is one error line."""
    run = vllm_run
    path = save_runs([run], tmp_path / "vllm.kvsim")
    (back,) = load_runs(path)
    assert back.pool_semantics == "vllm" and back.null_block == 0 and back.pool_blocks == 11
    assert [s.free_queue for s in back.snapshots] == [s.free_queue for s in run.snapshots]
    assert all(s.null_block == 0 for s in back.snapshots) and back.summary() == run.summary()

    old = save_runs([_run(small, "kvsim")], tmp_path / "old.kvsim")

    def strip(manifest) -> None:
        for r in manifest["runs"]:
            assert "pool_semantics" not in r  # kvsim's order writes the run as before
            for snap in r["snapshots"]:
                del snap["free_queue"]

    _rewrite_manifest(old, strip)
    (legacy,) = load_runs(old)
    assert legacy.pool_semantics == "kvsim" and legacy.null_block is None and legacy.pool_blocks == 10
    assert all(s.free_queue is None and s.next_block is None for s in legacy.snapshots)

    def swap(manifest) -> None:
        snap = next(s for s in manifest["runs"][0]["snapshots"] if len(s["free_queue"]) > 1)
        snap["free_queue"][0] = 0  # the null block queued

    _rewrite_manifest(path, swap)
    with pytest.raises(TraceError, match="free queue"):
        load_runs(path)


def test_cli_pool_semantics_both_ways(capsys) -> None:
    """``--pool-semantics`` reaches both engines: vllm by default (the null block named, the summary's order),
    kvsim when asked (the first pool's ids, from 0); with one prompt it is refused like the other pool flags."""
    prompts = ["--prompt", "The same opening, one", "--prompt", "The same opening, two"]
    base = ("run", "--model", SMALL, "--json", "--steps", "2", "--block-size", "4", *prompts)
    _, summary = cli_json_lines(capsys, *base)
    assert summary["on"]["pool_semantics"] == "vllm"
    _, summary = cli_json_lines(capsys, *base, "--pool-semantics", "kvsim")
    assert summary["on"]["pool_semantics"] == "kvsim"
    _, summary = cli_json_lines(capsys, *base, "--batching", "continuous", "--pool-semantics", "kvsim")
    assert summary["pool_semantics"] == "kvsim"
    assert main(["run", "--model", SMALL, "--steps", "2", "--block-size", "4", "--batching", "continuous", *prompts]) == 0
    assert "+ null block 0 (vLLM's order)" in capsys.readouterr().out
    assert main(["run", "--model", SMALL, "--prompt", "one", "--pool-semantics", "vllm"]) == 2
    assert "--pool-semantics applies to several requests" in capsys.readouterr().err


def test_continuous_batching_hits_blocks_a_request_fills_in_the_same_step(small) -> None:
    """vLLM's scheduler caches the blocks a step fills when it schedules them (``allocate_slots`` →
    ``cache_blocks``), so a request admitted later in that step already hits them: two prompts sharing two
    full blocks that arrive together share them under vLLM's order (the second computes only its own rows),
    not under kvsim's (registered after the forward) — with the same tokens either way."""
    shared = list(range(10, 42))  # two full blocks of 16
    prompts = [shared + [1, 2, 3], shared + [4, 5]]
    runs = {
        semantics: run_batched(
            small.model,
            small.tokenizer,
            prompts,
            block_size=16,
            steps=3,
            max_batched_tokens=256,
            warmup=False,
            pool_semantics=semantics,
        )
        for semantics in ("vllm", "kvsim")
    }
    vllm, kvsim = runs["vllm"], runs["kvsim"]
    assert [r.reused_rows for r in vllm.requests] == [0, 32] and [r.reused_rows for r in kvsim.requests] == [0, 0]
    first = vllm.snapshots[0]
    assert first.table(0).blocks[:2] == first.table(1).blocks[:2] == (1, 2) and list(first.ref_counts[1:3]) == [2, 2]
    assert [r.output_ids for r in vllm.requests] == [r.output_ids for r in kvsim.requests]
