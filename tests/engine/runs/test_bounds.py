"""Sizes are checked before anything is allocated: a pool of 10^9 blocks, a block of 10^6 slots,
10^8 layers of per-layer windows, a context of 400 digits — each is one ``error:`` line naming the
figure and the limit, exit 2, and the process's peak memory (ru_maxrss, which only grows) does not
move by more than a few tens of MB (before the checks these took gigabytes, or minutes)."""

from __future__ import annotations

import resource

import pytest

from kvsim.caches.blocks import MAX_BLOCK_SIZE, MAX_POOL_BLOCKS, BlockPool, check_pool_figures
from kvsim.cli.entry import main
from kvsim.core.sampling import SimulationError
from kvsim.costs.memory import SHAPE_LIMITS

MODEL = "random:family=llama,layers=1,heads=2,kv_heads=1,dim=32,ctx=64"
REQUESTS = ["--requests", "kvsim/resources/requests/austen-openings.json"]


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.parametrize(
    "argv,fragments",
    [
        (
            ["run", "--model", MODEL, "--prompt-ids", "1,2", "--lanes", "paged:1:100000000"],
            ["100,000,000", f"{MAX_POOL_BLOCKS:,}"],
        ),
        (["run", "--model", MODEL, "--prompt-ids", "1,2", "--lanes", "paged:1000000"], ["1,000,000", f"{MAX_BLOCK_SIZE:,}"]),
        (["run", "--model", MODEL, *REQUESTS, "--pool-blocks", "1000000000"], ["1,000,000,000", f"{MAX_POOL_BLOCKS:,}"]),
        (["run", "--model", MODEL, *REQUESTS, "--block-size", "1000000"], ["1,000,000", f"{MAX_BLOCK_SIZE:,}"]),
        (
            [
                "memory",
                "--layers",
                "100000000",
                "--kv-heads",
                "8",
                "--head-dim",
                "128",
                "--context",
                "10",
                "--layer-windows",
                "4096,full",
            ],
            ["--layers 100000000", f"{SHAPE_LIMITS['layers']:,}"],
        ),
        (
            ["memory", "--layers", "2", "--kv-heads", "1", "--head-dim", "1", "--context", "9" * 400],
            ["--context", "400 digits", f"{SHAPE_LIMITS['context']:,}"],
        ),
        (
            ["memory", "--preset", "llama3-8b", "--context", "10", "--batch", str(10**12)],
            ["--batch", f"{SHAPE_LIMITS['batch']:,}"],
        ),
    ],
)
def test_absurd_sizes_are_refused_before_allocating(argv, fragments, capsys):
    before = _peak_mb()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    for f in fragments:
        assert f in err[0], err[0]
    assert _peak_mb() - before < 100  # nothing of the asked size was made


def test_the_pool_checks_its_figures_and_the_machine_memory(monkeypatch):
    with pytest.raises(SimulationError, match="at most"):
        BlockPool(MAX_BLOCK_SIZE + 1, 4)
    with pytest.raises(SimulationError, match="at most"):
        BlockPool(16, MAX_POOL_BLOCKS + 1)
    for bad in (0, -1, True, 2.5, "16"):
        with pytest.raises(SimulationError):
            check_pool_figures(bad)
    import torch

    from kvsim.caches import blocks

    pool = BlockPool(1024, 1024)
    monkeypatch.setattr(blocks, "available_memory", lambda: 100 * 2**20)  # a machine with 100 MB free
    with pytest.raises(SimulationError, match=r"needs .* GB .*free memory") as info:
        pool.ensure_storage(32, 8, 128, torch.float32, torch.device("cpu"))  # 2 × 32·1024·1024·8·128·4 B = 275 GB
    assert "1,024 blocks" in str(info.value) and pool.k is None
    small = BlockPool(16, 4)
    small.ensure_storage(2, 2, 8, torch.float32, torch.device("cpu"))  # 4 KB: allowed
    assert small.k is not None and tuple(small.k.shape) == (2, 4, 16, 2, 8)
