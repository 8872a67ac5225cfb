"""The serving core: its options refuse each bad figure in one line naming it, and a prefix lookup walks
the hash chain once, taking the blocks only when asked."""

from __future__ import annotations

import types

import pytest

import kvsim.caches.block_table as block_table
from kvsim.caches.block_table import SequenceBlocks
from kvsim.caches.blocks import BlockPool
from kvsim.core.sampling import Sampling, SimulationError
from kvsim.serving.core import BatchLimits, OneAtATime, RequestState, RunOptions, Scheduled, build_result, check_arrivals
from kvsim.serving.request_lists import MAX_ARRIVAL_STEP, RequestInput
from kvsim.serving.schedules import ONE_AT_A_TIME, SCHEDULES

CFG = types.SimpleNamespace(max_seq_len=32, vocab_size=50)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: RunOptions(block_size=0), r"block size must be a whole number ≥ 1, got 0"),
        (lambda: RunOptions(block_size=True), r"block size must be a whole number ≥ 1, got True"),
        (lambda: RunOptions(block_size=2.5), r"block size must be a whole number ≥ 1, got 2\.5"),
        (lambda: RunOptions(steps=-1), r"steps must be a whole number ≥ 1, got -1"),
        (lambda: OneAtATime(schedule="continuous"), r"schedule must be one of sequential, interleaved, got 'continuous'"),
        (lambda: OneAtATime(repeats=0), r"repeats must be a whole number from 1 to 100, got 0"),
        (lambda: OneAtATime(repeats=101), r"repeats must be a whole number from 1 to 100, got 101"),
        (lambda: BatchLimits(max_batched_tokens=0), r"max batched tokens must be a whole number ≥ 1, got 0"),
        (lambda: BatchLimits(chunk_size=0), r"chunk size must be a whole number ≥ 1, got 0"),
        (lambda: BatchLimits(max_running=False), r"max running requests must be a whole number ≥ 1, got False"),
        (lambda: check_arrivals([0], 2), r"1 arrival steps for 2 requests"),
        (lambda: check_arrivals([0, -1], 2), rf"request 2: arrival step must be a whole number from 0 to {MAX_ARRIVAL_STEP}"),
        (lambda: check_arrivals([True, 0], 2), r"request 1: arrival step"),
    ],
)
def test_each_bad_option_is_refused_with_its_name(make, message) -> None:
    with pytest.raises(SimulationError, match=message):
        make()


def test_requests_are_checked_against_the_model_and_the_pool() -> None:
    options = RunOptions(block_size=4, steps=3)
    given, pool_blocks = options.check_requests(CFG, [[1, 2, 3], [4, 5, 6, 7, 8]])
    assert [g.prompt_ids for g in given] == [(1, 2, 3), (4, 5, 6, 7, 8)]
    assert pool_blocks == 2 + 2  # 5 rows → 2 blocks; 7 rows → 2 blocks: room for both at once
    for requests, message in (
        ([], "no requests: give at least one prompt"),
        ([[1], []], "request 2 is an empty prompt"),
        ([list(range(31))], r"request 1: prompt \(31 tokens\) \+ 3 steps needs more than the model's context of 32"),
        ([[1, 50]], r"request 1: token id 50 is outside the vocabulary \(0..49\)"),
    ):
        with pytest.raises(SimulationError, match=message):
            options.check_requests(CFG, requests)
    with pytest.raises(SimulationError, match="the pool needs at least 1 block, got 0"):
        RunOptions(pool_blocks=0).check_requests(CFG, [[1]])
    with pytest.raises(SimulationError, match=r"request 2 needs up to 2 blocks of 4 slots .* but the pool has 1"):
        RunOptions(block_size=4, steps=3, pool_blocks=1).check_requests(CFG, [[1], [1, 2, 3, 4, 5]])
    with pytest.raises(SimulationError, match=r"request 1: without chunked prefill .* \(5\)"):
        BatchLimits(max_batched_tokens=5, chunked_prefill=False).check_requests([RequestInput((1,) * 4)], steps=3)
    BatchLimits(max_batched_tokens=6, chunked_prefill=False).check_requests([RequestInput((1,) * 4)], steps=3)


def test_keyword_options_split_between_the_run_and_the_engine() -> None:
    given = {"block_size": 8, "sampling": None, "schedule": "interleaved", "repeats": 2}
    options = RunOptions.take(given)
    assert (options.block_size, options.sampling) == (8, Sampling())  # None is greedy, as the engines took it
    assert given == {"schedule": "interleaved", "repeats": 2}  # what is left is the engine's own
    assert OneAtATime(**given).schedule == "interleaved"
    assert SCHEDULES[: len(ONE_AT_A_TIME)] == ONE_AT_A_TIME and "continuous" in SCHEDULES


def _pool_with_a_cached_prefix() -> tuple[BlockPool, list[int]]:
    """A pool of 8 blocks of 4 whose first sequence registered 3 full blocks, then finished (ref 0, cached)."""
    pool = BlockPool(4, 8)
    tokens = list(range(1, 15))  # 14 tokens: 3 full blocks + 2
    first = SequenceBlocks(pool, owner=0)
    first.reserve(0, len(tokens), tokens)
    first.commit()
    first.free()
    return pool, tokens


def test_cached_prefix_looks_without_taking(monkeypatch) -> None:
    pool, tokens = _pool_with_a_cached_prefix()
    refs, free, events = list(pool.ref), list(pool.free), dict(pool.events)
    calls = []
    real = block_table.block_hash
    monkeypatch.setattr(block_table, "block_hash", lambda parent, ids: calls.append(1) or real(parent, ids))
    seq = SequenceBlocks(pool, owner=1)
    found = seq.cached_prefix(tokens[:10] + [99, 98, 97])  # 13 tokens: 2 hits, then a miss in block 2
    assert len(calls) == 3  # one hash per block walked: the two hits and the miss, no block twice
    assert found.rows == 8 and len(found.blocks) == 2 and found.free_blocks == 2
    assert found.token_ids == tuple(tokens[:8])
    assert pool.ref == refs and list(pool.free) == free and pool.events == events  # nothing taken
    assert seq.blocks == [] and seq.n_tokens == 0
    pool.check()


def test_taking_the_found_prefix_takes_its_references_without_walking_again(monkeypatch) -> None:
    pool, tokens = _pool_with_a_cached_prefix()
    seq = SequenceBlocks(pool, owner=1)
    found = seq.cached_prefix(tokens)
    assert found.rows == 12  # 3 full blocks; the last token is left to compute (13 > 12)
    n_free = pool.n_free
    monkeypatch.setattr(block_table, "block_hash", lambda *a: pytest.fail("take_prefix hashed a block again"))
    assert seq.take_prefix(found) == 12
    monkeypatch.undo()
    assert [pool.ref[b] for b in found.blocks] == [1, 1, 1]
    assert pool.n_free == n_free - found.free_blocks
    assert all(pool.events[b] == "hit" for b in found.blocks)
    assert (seq.blocks, seq.n_tokens, seq.hit_blocks) == (list(found.blocks), 12, 3)
    pool.check()
    other = SequenceBlocks(pool, owner=2)  # take=True looks and takes in one call: a second holder each
    assert other.cached_prefix(tokens, take=True).rows == 12
    assert [pool.ref[b] for b in found.blocks] == [2, 2, 2]
    with pytest.raises(RuntimeError, match="already holds blocks"):
        other.take_prefix(found)


def test_a_prefix_found_before_its_block_was_handed_out_again_is_refused() -> None:
    pool, tokens = _pool_with_a_cached_prefix()
    seq = SequenceBlocks(pool, owner=1)
    found = seq.cached_prefix(tokens)
    while pool.n_free:  # every free block handed out: the cached ones are evicted
        pool.allocate()
    with pytest.raises(RuntimeError, match="handed out again"):
        seq.take_prefix(found)


def test_caching_off_finds_nothing() -> None:
    pool = BlockPool(4, 4, prefix_caching=False)
    found = SequenceBlocks(pool).cached_prefix(list(range(12)), take=True)
    assert (found.rows, found.blocks, found.free_blocks) == (0, (), 0)


def test_blocks_to_reserve_counts_a_copy_on_write() -> None:
    pool = BlockPool(4, 8)
    seq = SequenceBlocks(pool)
    assert seq.blocks_to_reserve(9) == 3
    seq.reserve(0, 6, list(range(6)))
    assert seq.blocks_to_reserve(2) == 0  # the partial last block is its own: written in place
    assert seq.blocks_to_reserve(3) == 1
    fork = seq.fork(owner=1)
    assert fork.blocks_to_reserve(2) == 1  # shared now: the first write copies it


def test_one_request_state_builds_one_result() -> None:
    pool = BlockPool(4, 8)
    r = RequestState(0, RequestInput((5, 6, 7, 8, 9), "hi"), SequenceBlocks(pool))
    assert r.tokens == [5, 6, 7, 8, 9] and r.status == "pending" and not r.started
    step = Scheduled.reserve(r, 0, 5)
    assert step.emits and step.end == 5 and step.blocks.tolist() == [0, 0, 0, 0, 1]
    r.first_step, r.reused, r.ttft = 0, 4, (2.0, 1.0, 3.0)
    r.emit(11)
    r.emit(12)
    r.itl_ms.append(0.5)
    assert r.tokens[-2:] == [11, 12] and r.started
    r.finish()
    assert r.done and r.held == (2, 5) and pool.n_free == 8
    tok = types.SimpleNamespace(decode=lambda ids: "".join(chr(96 + i) for i in ids))
    res = build_result(r, tok, 4)
    assert (res.prompt, res.output_ids, res.output_text) == ("hi", (11, 12), "kl")
    assert (res.prefill_rows, res.reused_rows, res.hit_blocks, res.miss_blocks) == (1, 4, 1, 1)
    assert (res.ttft_ms, res.ttft_ms_min, res.ttft_ms_max, res.decode_steps, res.itl_ms) == (2.0, 1.0, 3.0, 1, 0.5)
    assert (res.blocks_held, res.rows_held, res.token_ms, res.preemptions) == (2, 5, (), 0)
