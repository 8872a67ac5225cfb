"""The radix tree of cached prefixes: its matches equal a brute-force longest common prefix over what was
inserted, its paths are exactly the inserted sequences, eviction takes least recently used unpinned
leaves first and never a locked path; token-level reuse against block-level reuse on the same requests
equals the closed forms (min(LCP, n-1) and B·floor of it), and the block side equals what the real
requests engine reused."""

from __future__ import annotations

import numpy as np
import pytest

from kvsim.core.sampling import SimulationError
from kvsim.models.loading import load_model
from kvsim.serving.radix import RadixTree, compare_reuse
from kvsim.serving.requests import run_requests


def lcp(a, b) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def random_sequences(rng, n: int, alphabet: int = 3):
    """Sequences over a small alphabet, many built on earlier ones: lots of partial edge matches."""
    out: list[list[int]] = []
    for _ in range(n):
        base = out[int(rng.integers(len(out)))][: int(rng.integers(0, 12))] if out and rng.random() < 0.7 else []
        out.append(base + [int(t) for t in rng.integers(0, alphabet, size=int(rng.integers(1, 10)))])
    return out


@pytest.mark.parametrize("seed", range(6))
def test_match_is_the_longest_common_prefix_and_paths_are_the_inserted(seed: int) -> None:
    rng = np.random.default_rng(seed)
    seqs = random_sequences(rng, 40)
    tree = RadixTree()
    inserted: list[list[int]] = []
    for s in seqs:
        expected_present = max((lcp(s, t) for t in inserted), default=0)
        assert tree.insert(s) == expected_present
        inserted.append(s)
        tree.check()
        for q in random_sequences(rng, 5):
            assert tree.match(q) == max(lcp(q, t) for t in inserted)
    maximal = {tuple(s) for s in inserted if not any(len(t) > len(s) and t[: len(s)] == s for t in inserted)}
    assert set(tree.sequences()) == maximal
    assert tree.n_tokens == len({tuple(s[:k]) for s in inserted for k in range(1, len(s) + 1)})  # distinct prefixes


def test_eviction_takes_lru_unlocked_leaves_first() -> None:
    tree = RadixTree()
    shared = [1, 2, 3, 4]
    a, b, c = shared + [10, 11], shared + [20, 21, 22], shared + [30]
    for s in (a, b, c):
        tree.insert(s)
    tree.match(a)  # a used last: b is now the least recently used leaf, then c
    assert tree.evict(1) == 3 and set(tree.sequences()) == {tuple(a), tuple(c)}
    tree.lock(c)
    assert tree.evict(100) == 2  # only a's own edge: c is locked, and so is the shared part
    assert tree.sequences() == [tuple(c)]
    tree.unlock(c)
    assert tree.evict(100) == 5 and tree.n_tokens == 0 and tree.sequences() == []
    with pytest.raises(RuntimeError):
        tree.insert(a)
        tree.unlock(a)


@pytest.mark.parametrize("seed", range(4))
def test_capacity_holds_and_locked_paths_survive(seed: int) -> None:
    rng = np.random.default_rng(50 + seed)
    tree = RadixTree(capacity=30)
    pinned = [9, 9, 9, 9, 9]
    tree.insert(pinned)
    tree.lock(pinned)
    inserted = [pinned]
    for s in random_sequences(rng, 60):
        tree.insert(s)
        inserted.append(s)
        tree.check()
        assert tree.n_tokens <= 30 and tree.match(pinned) == 5
        assert tree.match(s) == len(s)  # the newest is the most recently used: kept whole
    assert tree.evicted > 0
    for s in tree.sequences():  # whatever survived is a prefix of something inserted
        assert any(tuple(t[: len(s)]) == s for t in inserted)


@pytest.mark.parametrize("block", [1, 2, 4, 16])
def test_token_vs_block_reuse_closed_forms(block: int) -> None:
    rng = np.random.default_rng(block)
    prompts = random_sequences(rng, 25, alphabet=4)
    outputs = [[int(t) for t in rng.integers(0, 4, size=3)] for _ in prompts]
    got = compare_reuse(prompts, outputs, block_size=block)
    held: list[list[int]] = []
    for i, p in enumerate(prompts):
        best = min(max((lcp(p, h) for h in held), default=0), len(p) - 1)
        assert got.radix[i] == best
        assert got.blocks[i] == block * (best // block)
        held.append(list(p) + outputs[i][:-1])
    if block == 1:
        assert got.radix == got.blocks
    assert sum(got.radix) >= sum(got.blocks)


def test_block_side_equals_the_requests_engine() -> None:
    loaded = load_model("random:family=llama,layers=2,heads=4,kv_heads=2,dim=32,vocab=300,ctx=128,seed=5")
    shared = list(range(40, 63))
    prompts = [shared + [1, 2, 3], shared[:13] + [4, 5], shared + [6, 7, 8, 9, 10], shared[:9], shared[:20] + [7]]
    for pool in (None, 12):
        run = run_requests(loaded.model, loaded.tokenizer, prompts, block_size=4, steps=4, repeats=1, pool_blocks=pool)
        outputs = [r.output_ids for r in run.requests]
        got = compare_reuse(prompts, outputs, block_size=4, capacity=None if pool is None else 4 * pool)
        assert list(got.blocks) == [r.reused_rows for r in run.requests]
        assert got.block_evictions == run.evictions
    assert list(got.radix) == [0, 13, 25, 8, 20] or pool == 12


def test_bad_input() -> None:
    with pytest.raises(SimulationError):
        RadixTree(capacity=0)
    with pytest.raises(SimulationError):
        compare_reuse([[1, 2]], [[1], [2]])
    with pytest.raises(SimulationError):
        compare_reuse([[]])
