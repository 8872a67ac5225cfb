"""``int4:g32:hadamard``: the INT4 cache with Hadamard-rotated keys, against a reference written here (scipy's
Hadamard matrix, normalized; KIVI's per-channel min/max 4-bit quantizer in numpy), the folded-query form
of the same scores, and its bill against the recorded bytes."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import torch

from kvsim.caches import make_cache, parse_spec
from kvsim.caches.rotated import hadamard
from kvsim.engine.simulate import Simulator, parse_lanes
from kvsim.models.loading import load_model

MODEL = "random:family=llama,layers=2,heads=4,kv_heads=2,dim=64,vocab=300,seed=3"  # head dim 16


def ref_int4_keys(k: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """KIVI's keys: per channel over the group's tokens (axis −2), asymmetric min/max, 16 levels:
    (dequantized, the scale each element has, how far (x − min)/scale lies from a rounding tie)."""
    lo, hi = k.min(-2, keepdims=True), k.max(-2, keepdims=True)
    scale = (hi - lo) / 15
    steps = (k - lo) / np.where(scale > 0, scale, 1)
    codes = np.clip(np.round(steps), 0, 15)
    return codes * scale + lo, np.broadcast_to(scale, k.shape), np.abs(steps - np.floor(steps) - 0.5)


@pytest.mark.parametrize("d", [8, 16, 64, 96])
def test_hadamard_is_the_normalized_sylvester_matrix(d: int) -> None:
    h = hadamard(d, torch.float64)
    block = d & -d
    want = scipy.linalg.block_diag(*[scipy.linalg.hadamard(block) / np.sqrt(block)] * (d // block))
    assert np.array_equal(h.numpy(), want)
    assert torch.allclose(h @ h.T, torch.eye(d, dtype=torch.float64), atol=1e-12) and torch.equal(h, h.T)


def test_keys_are_quantized_rotated_and_read_back_turned() -> None:
    lm = load_model(MODEL)
    ids = torch.randint(0, 300, (1, 40), generator=torch.Generator().manual_seed(0))
    exact, rotated, plain = (make_cache(s, 2) for s in ("kv", "int4:g8:r4:hadamard", "int4:g8:r4"))
    for cache in (exact, rotated, plain):
        lm.model(ids[:, :37], torch.arange(37), cache)
        for n in range(37, 40):
            lm.model(ids[:, n : n + 1], torch.tensor([n]), cache)
    for layer in range(2):
        k, v, _ = exact.held_rows(layer)  # (1, 2, 40, 16): the rows as computed
        k_read, v_read, _ = rotated.held_rows(layer)
        q = rotated._layers[layer].q  # rows quantized (whole groups of 8 beyond the last 4)
        assert q == 32
        h = scipy.linalg.hadamard(16) / 4.0
        got = k_read.numpy()[..., :q, :].astype(np.float64)
        for a in range(0, q, 8):
            want, scale, tie = ref_int4_keys(k.numpy()[..., a : a + 8, :].astype(np.float64) @ h)
            # turned back (Hᵀ): the rotated codes' error stays in the rotated frame, so compare there; a value
            # within 1e-4 of a rounding tie may take the other code (float32 here, float64 in the reference)
            error = np.abs(got[..., a : a + 8, :] @ h - want)
            assert (error[tie > 1e-4] < 1e-5).all() and (error < scale + 1e-5).all()
            assert (tie > 1e-4).mean() > 0.99
        # the prompt's rows (later ones differ from layer 1 on: the layers below read quantized keys)
        assert torch.equal(k_read[:, :, q:37], k[:, :, q:37])  # the residual untouched
        assert torch.equal(v_read[:, :, :37], plain.held_rows(layer)[1][:, :, :37])  # the values: int4's, unrotated
        assert not torch.allclose(
            k_read[:, :, :q], plain.held_rows(layer)[0][:, :, :q], atol=1e-3
        )  # …and the keys are not int4's
        # folded into the query instead of undone on read: the same scores within fp32 rounding
        query = torch.randn(5, 16, generator=torch.Generator().manual_seed(layer))
        stored = rotated.rotated_keys(layer)[0]  # (2, 32, 16): dequantized, still rotated
        folded = (query @ rotated.rotation(16, stored.device)) @ stored.transpose(-1, -2)
        assert float((folded - query @ k_read[0, :, :q].transpose(-1, -2)).abs().max()) < 1e-5
    assert rotated.bytes_split() == plain.bytes_split()  # the rotation costs no byte


def test_lane_runs_its_bill_equals_the_recorded_bytes_and_spec_words() -> None:
    from kvsim.costs.memory import lane_bill

    spec = parse_spec("int4:g8:hadamard")
    assert (spec.policy, spec.options) == ("int4:hadamard", {"group": 8})
    assert parse_spec("int4:hadamard:g8").options == {"group": 8} and parse_spec("int4:g8").policy == "int4"
    info = make_cache("int4:g32:hadamard", 1).describe()
    assert info.spec == "int4:g32:r32:hadamard" and info.lossy and "Hadamard" in info.explanation
    assert parse_spec(info.spec).policy == "int4:hadamard"  # its own spec parses back
    lm = load_model(MODEL)
    prompt = list(range(1, 20))
    sim = Simulator(lm.model, lm.tokenizer, prompt, parse_lanes("kv,int4:g8:r0,int4:g8:r0:hadamard"), warmup=False)
    for step in range(6):
        record = sim.step()
        for lane, done in zip(sim.trace.meta["lanes"][1:], record.lanes[1:], strict=True):
            bill = lane_bill(lane, 2, 2, 16, len(prompt) + step, done.kv_positions)
            assert bill is not None and bill.expected_bytes == done.cache_bytes, (step, lane["name"])
        assert record.lane("int4:g8:r0").cache_bytes == record.lane("int4:g8:r0:hadamard").cache_bytes
    assert record.lane("int4:g8:r0:hadamard").kl_div > 0  # it is lossy, and recorded as such
