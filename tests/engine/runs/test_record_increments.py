"""A lossy lane records only the stored rows that changed, and finds them without comparing every row each step
(``Cache.take_rewritten_from``: the caches say from which slot they wrote since the last record):

* replaying the records' changed rows over one another gives, after every step, exactly the rows the lane's cache
  holds (int8, int4 whose groups re-encode older rows, a full-precision cache with quantized weights), with repeated
  forwards (a cut and a write again each step) too;
* the records are the same as comparing every held row (the old way: ``take_rewritten_from`` answering 0);
* a KV cache with quantized weights records exactly the step's new row.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers import FAMILY_SPECS, load

from kvsim.caches import Cache, parse_lanes
from kvsim.engine.simulate import Simulator

SPEC = FAMILY_SPECS["llama-gqa"]


def run(lanes: str, steps: int, repeats: int = 1) -> tuple[Simulator, list]:
    loaded = load(SPEC)
    sim = Simulator(loaded.model, loaded.tokenizer, list(range(3, 12)), parse_lanes(lanes), repeats=repeats)
    return sim, [sim.step() for _ in range(steps)]


@pytest.mark.parametrize("lanes,repeats", [("kv,int4:g4:r4", 2), ("kv,int8:g4:r2", 1), ("kv,kv@w8", 2)])
def test_replayed_records_are_the_rows_the_cache_holds(lanes, repeats) -> None:
    loaded = load(SPEC)
    sim = Simulator(loaded.model, loaded.tokenizer, list(range(3, 12)), parse_lanes(lanes), repeats=repeats)
    lane = sim.lanes[1]
    n_layers = loaded.model.cfg.n_layers
    k_seen: dict[int, np.ndarray] = {}
    v_seen: dict[int, np.ndarray] = {}
    for _ in range(14):
        rows = sim.step().lanes[1].rows
        assert rows is not None
        assert list(rows.positions) == sorted(set(rows.positions.tolist()))
        for j, p in enumerate(rows.positions.tolist()):
            k_seen[p], v_seen[p] = rows.k[:, :, j], rows.v[:, :, j]
        for layer in range(n_layers):
            k, v, pos = lane.cache.held_rows(layer)
            assert sorted(k_seen) == pos.tolist()
            for j, p in enumerate(pos.tolist()):
                assert np.array_equal(k_seen[p][layer], k[0, :, j].numpy()), (layer, p)
                assert np.array_equal(v_seen[p][layer], v[0, :, j].numpy()), (layer, p)


@pytest.mark.parametrize("lanes", ["kv,int4:g4:r4", "kv,kv@w8"])
def test_the_records_are_those_of_comparing_every_row(lanes, monkeypatch) -> None:
    _, fast = run(lanes, 12, repeats=2)
    monkeypatch.setattr(type(run(lanes, 1)[0].lanes[1].cache), "take_rewritten_from", Cache.take_rewritten_from)
    _, full = run(lanes, 12, repeats=2)
    for a, b in zip(fast, full, strict=True):
        ra, rb = a.lanes[1].rows, b.lanes[1].rows
        assert np.array_equal(ra.positions, rb.positions)
        assert np.array_equal(ra.k, rb.k) and np.array_equal(ra.v, rb.v) and np.array_equal(ra.q, rb.q)


def test_a_kv_cache_with_quantized_weights_records_just_the_new_row(monkeypatch) -> None:
    compared: list[int] = []
    from kvsim.engine.lane import RowMirror

    changed = RowMirror.changed

    def counting(self, k: torch.Tensor, v: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        compared.append(positions.numel())
        return changed(self, k, v, positions)

    monkeypatch.setattr(RowMirror, "changed", counting)
    sim, records = run("kv,kv@w8", 6)
    assert [r.lanes[1].rows.positions.tolist() for r in records[1:]] == [[9 + i] for i in range(5)]
    assert compared == [9, 1, 1, 1, 1, 1]  # the prompt's rows, then one row a step: not every held row
