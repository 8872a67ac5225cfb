"""KV offload tiers under the block pool: a cached block the device pool evicts goes to the host tier,
then down to disk, and a later prefix hit brings it back bit for bit; runs with offload give the tokens
(and, where the hits match, the very logits) of runs without; every move is counted and timed; the
disk folder is the run's and is removed; the CLI's ``--offload`` flag and its JSON."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from kvsim.caches.block_table import SequenceBlocks
from kvsim.caches.blocks import block_hash
from kvsim.caches.tiers import OFFLOADED, OffloadSpec, TieredBlockPool, parse_bytes
from kvsim.cli.entry import main
from kvsim.core.sampling import SimulationError
from kvsim.models.loading import load_model
from kvsim.serving.batching import BatchingEngine
from kvsim.serving.core import BatchLimits, OneAtATime, RunOptions
from kvsim.serving.requests import RequestsEngine, run_requests

SMALL = "random:family=llama,layers=2,heads=4,kv_heads=2,dim=32,vocab=300,ctx=128,seed=5"
P, Q, R = list(range(40, 64)), list(range(100, 124)), list(range(150, 174))
# P's six blocks of 4 are evicted by Q's and R's prompts in a 9-block pool, then hit again
PROMPTS = [P + [1, 2], Q + [3], R + [7], P + [4, 5], Q + [6]]
RUN = {"block_size": 4, "steps": 4, "warmup": False}


@pytest.fixture(scope="module")
def small():
    return load_model(SMALL)


def test_offload_spec_parses_sizes_and_refuses_bad_ones() -> None:
    assert OffloadSpec.parse("host:4KiB,disk:1MB") == OffloadSpec(4096, 1_000_000)
    assert OffloadSpec.parse("disk:2GB") == OffloadSpec(0, 2 * 10**9)
    assert parse_bytes("1.5MiB") == 3 << 19
    for bad in ("gpu:1MB", "host:", "host:1MB,host:2MB", "host:lots", "host:0"):
        with pytest.raises(SimulationError):
            OffloadSpec.parse(bad)


def _pool(host_blocks: int, disk_blocks: int, n_blocks: int = 2) -> TieredBlockPool:
    block_bytes = 2 * 2 * 4 * 2 * 8 * 4  # K and V × 2 layers × 4 slots × 2 heads × dim 8 × fp32
    pool = TieredBlockPool(4, n_blocks, OffloadSpec(host_blocks * block_bytes, disk_blocks * block_bytes))
    pool.ensure_storage(2, 2, 8, torch.float32, torch.device("cpu"))
    assert pool.block_bytes == block_bytes
    return pool


def _fill_and_free(pool: TieredBlockPool, tokens: list[int], seed: int) -> tuple[int, torch.Tensor, torch.Tensor]:
    """One registered, free block holding random rows for ``tokens``: (its hash, its K rows, its V rows)."""
    b = pool.allocate()
    k, v = pool.rows()
    gen = torch.Generator().manual_seed(seed)
    k[:, b] = torch.randn(k[:, b].shape, generator=gen)
    v[:, b] = torch.randn(v[:, b].shape, generator=gen)
    h = block_hash(None, tokens)
    pool.filled[b] = 4
    pool.register(b, h, tokens)
    pool.release(b)
    return h, k[:, b].clone(), v[:, b].clone()


def test_an_evicted_block_goes_to_host_then_disk_and_comes_back_bit_identical() -> None:
    pool = _pool(host_blocks=1, disk_blocks=4)
    try:
        blocks = [_fill_and_free(pool, [i, i, i, i], seed=i) for i in range(4)]
        # four registered blocks through a two-block pool: the first two were evicted, one to host then down to disk
        assert pool.offloaded(blocks[0][0]) == "disk" and pool.offloaded(blocks[1][0]) == "host"
        assert pool.disk is not None and pool.disk.path(blocks[0][0]).is_file()
        for h, k_rows, v_rows in blocks[:2]:  # (each recall may push another block down a tier)
            b = pool.recall(h, owner=7)
            k, v = pool.rows()
            assert torch.equal(k[:, b], k_rows) and torch.equal(v[:, b], v_rows)
            assert pool.lookup(h) == b and pool.ref[b] == 1
            pool.release(b)
        summary = pool.offload_summary()
        tiers = summary["tiers"]
        assert isinstance(tiers, dict)
        assert tiers["host"]["store_blocks"] >= 2 and tiers["disk"]["store_blocks"] >= 1
        assert tiers["host"]["load_blocks"] + tiers["disk"]["load_blocks"] == 2 and tiers["disk"]["load_blocks"] >= 1
        assert tiers["disk"]["load_bytes"] == tiers["disk"]["load_blocks"] * pool.block_bytes and tiers["disk"]["store_ms"] > 0
        assert sum(summary["recalled"][7]) == 2
        pool.check()
    finally:
        pool.close()
    assert not pool.disk.folder.exists()


@pytest.mark.parametrize("disk_blocks", [0, 1, 4])
def test_a_recall_whose_allocation_stores_a_block_never_pushes_out_the_block_it_brings_back(disk_blocks: int) -> None:
    """The allocation a recall makes may evict a cached device block into a full tier: the block being brought back
    stays where it is (the evicted one goes down to disk, or is dropped), and comes back bit for bit."""
    pool = _pool(host_blocks=1, disk_blocks=disk_blocks, n_blocks=1)
    try:
        hx, kx, vx = _fill_and_free(pool, [1, 1, 1, 1], seed=1)
        hy, _, _ = _fill_and_free(pool, [2, 2, 2, 2], seed=2)  # x evicted: the host's one slot
        assert pool.offloaded(hx) == "host" and pool.lookup(hy) == 0
        b = pool.recall(hx, owner=3)  # takes block 0, evicting y into the full host tier
        k, v = pool.rows()
        assert torch.equal(k[:, b], kx) and torch.equal(v[:, b], vx)
        assert pool.offloaded(hy) == ("disk" if disk_blocks else None) and pool.offloaded(hx) == "host"
        assert [(m.tier, m.direction, m.owner) for m in pool.moves][-1] == ("host", "load", 3)
        pool.check()
    finally:
        pool.close()


def test_a_prefix_lookup_counts_an_offloaded_block_and_taking_it_recalls_it() -> None:
    pool = _pool(host_blocks=4, disk_blocks=0, n_blocks=3)
    try:
        h, k_rows, _ = _fill_and_free(pool, [1, 2, 3, 4], seed=1)
        for _ in range(3):  # the block is evicted to the host tier
            pool.allocate()
        assert pool.offloaded(h) == "host"
        for b in range(3):
            pool.release(b)
        seq = SequenceBlocks(pool, owner=0)
        found = seq.cached_prefix([1, 2, 3, 4, 5])
        assert found.blocks == (OFFLOADED,) and found.free_blocks == 1 and found.rows == 4
        assert seq.take_prefix(found) == 4
        k, _ = pool.rows()
        assert torch.equal(k[:, seq.blocks[0]], k_rows) and pool.hash[seq.blocks[0]] == h
        pool.check()
    finally:
        pool.close()


def test_requests_with_offload_give_the_tokens_of_runs_without(small) -> None:
    spec = "host:4KiB,disk:64KB"  # host holds 4 blocks: the 6-block prefix goes down to disk
    plain = run_requests(small.model, small.tokenizer, PROMPTS, pool_blocks=9, repeats=1, **RUN)
    options = RunOptions(pool_blocks=9, offload=OffloadSpec.parse(spec), **RUN)
    engine = RequestsEngine(small.model, small.tokenizer, PROMPTS, options, OneAtATime(repeats=2))  # rolled back once a prefill
    tiered = engine.run()
    assert isinstance(engine.pool, TieredBlockPool) and engine.pool.disk is not None
    assert not engine.pool.disk.folder.exists()  # the run's disk tier is removed with it
    assert [r.output_ids for r in tiered.requests] == [r.output_ids for r in plain.requests]
    assert [r.reused_rows for r in plain.requests] == [0] * 5  # without tiers the small pool lost every prefix
    assert [r.reused_rows for r in tiered.requests] == [0, 0, 0, 24, 24]  # with them, both came back
    offload = tiered.meta["offload"]
    assert offload["recalled"][3] == [0, 6] and offload["recalled"][4] == [0, 6]  # from disk (host holds 4 blocks)
    disk = offload["tiers"]["disk"]
    assert disk["load_blocks"] == 12 and disk["load_bytes"] == 12 * tiered.block_bytes
    assert all(m["ms"] >= 0 for m in offload["moves"]) and len(offload["moves"]) >= 12
    json.dumps(tiered.meta)  # the record is plain JSON


def test_batched_logits_with_recalled_blocks_equal_those_of_a_pool_that_never_evicted(small) -> None:
    prompts = [P + [1, 2], Q + [3], P + [4, 5]]
    arrivals = [0, 10, 20]  # one request at a time: the same forward shapes in both runs

    def logits(pool_blocks: int, offload: OffloadSpec | None) -> tuple[list[tuple[int, ...]], dict, list[int]]:
        options = RunOptions(pool_blocks=pool_blocks, offload=offload, **RUN)
        engine = BatchingEngine(
            small.model, small.tokenizer, prompts, options, BatchLimits(record_logits=True), arrivals=arrivals
        )
        run = engine.run()
        return [r.output_ids for r in run.requests], engine.logits, [r.reused_rows for r in run.requests]

    tokens_big, logits_big, reused_big = logits(64, None)
    tokens_off, logits_off, reused_off = logits(8, OffloadSpec.parse("host:64KB"))
    assert reused_off == reused_big == [0, 0, 24]
    assert tokens_off == tokens_big
    for i in range(3):
        assert all(np.array_equal(a, b) for a, b in zip(logits_off[i], logits_big[i], strict=True))


def test_cli_offload_json_and_table(tmp_path: Path, capsys) -> None:
    requests = tmp_path / "r.json"
    shared = "same opening words for all " * 2
    requests.write_text(json.dumps({"prompts": [shared + "one", "something else entirely " * 2, shared + "two"]}))
    base = ["run", "--model", SMALL, "--requests", str(requests), "--steps", "2"]
    base += ["--block-size", "4", "--pool-blocks", "20", "--no-chat-template", "--repeats", "1"]
    assert main([*base, "--offload", "host:64KB", "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    summary = lines[-1]["summary"]
    tiers = summary["on"]["offload"]["tiers"]
    assert tiers["host"]["store_bytes"] > 0 and "load_ms" in tiers["host"]
    assert all("hits_from_host" in line for line in lines[:-1])
    assert main([*base, "--offload", "host:64KB", "--compare-prefix-cache"]) == 0
    out = capsys.readouterr().out
    assert "from host" in out and "TTFT saved" in out
    assert main([*base, "--offload", "gpu:1MB"]) == 2
    assert "--offload" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--offload", "host:1MB", "--no-prefix-cache"], "needs prefix caching"),
        (["--disaggregate", "--offload", "host:1MB"], "drop --offload"),
        (["--disaggregate", "--temperature", "0.8"], "greedy only"),
    ],
)
def test_cli_refuses_offload_and_disaggregate_flags_that_do_not_go_together(capsys, flags: list[str], says: str) -> None:
    argv = ["run", "--model", SMALL, "--prompt", "ab", "--prompt", "ac", "--steps", "2", *flags]
    assert main(argv) == 2
    assert says in capsys.readouterr().err


def test_one_prompt_refuses_the_several_requests_flags(capsys) -> None:
    assert main(["run", "--model", SMALL, "--prompt", "ab", "--offload", "host:1MB"]) == 2
    assert "--offload applies to several requests" in capsys.readouterr().err


def test_snapshots_record_what_each_tier_holds_and_the_moves_of_each_step(small) -> None:
    """What the views draw: every snapshot names the blocks each tier holds (least recently used first), the
    moves of a step are those made between the previous snapshot and it (all of them, once, in order), and a
    store names the request whose allocation evicted the block, a load the request whose hit brought it back."""
    options = RunOptions(pool_blocks=9, offload=OffloadSpec.parse("host:4KiB,disk:64KB"), **RUN)
    run = RequestsEngine(small.model, small.tokenizer, PROMPTS, options, OneAtATime(repeats=2)).run()
    moves = run.moves
    assert moves == tuple(run.meta["offload"]["moves"]) and moves
    assert sum((run.moves_at(s) for s in range(len(run.snapshots))), ()) == moves
    held: dict[str, list[str]] = {"host": [], "disk": []}
    for s, snap in enumerate(run.snapshots):
        assert [t.tier for t in snap.tiers] == ["host", "disk"] and snap.tier("host").capacity == 4
        for m in run.moves_at(s):  # each move changes what its tier holds as the snapshot says
            if m["direction"] == "store":
                assert 0 <= m["owner"] < len(PROMPTS) and m["owner"] <= snap.request
                held[m["tier"]].append(m["block_hash"])
            else:
                assert m["owner"] == snap.request and m["block_hash"] in held[m["tier"]]
        for tier in snap.tiers:
            assert set(tier.hashes) <= set(held[tier.tier]) and len(tier.hashes) <= tier.capacity
            assert all(len(ids) == run.block_size for ids in tier.token_ids)
    last = run.snapshots[-1]
    assert len(last.tier("host").hashes) == 4 and len(last.tier("disk").hashes) >= 2
    plain = run_requests(small.model, small.tokenizer, PROMPTS, pool_blocks=9, repeats=1, **RUN)
    assert all(s.tiers == () and s.moves_done == 0 for s in plain.snapshots) and plain.moves == ()
