"""numba's row-major one-row kernel (``kvsim.models.kernels.row_matmul.gemv_rows``) and the layout that goes with it:

* a one-row fp32 product on a row-major weight laid out for it (``rows``, the choice its module holds) goes to it
  and agrees with ``F.linear`` and a float64 reference to float32 rounding; NaN and infinities propagate as in
  ``F.linear``; a weight not laid out for it stays with ``F.linear`` bit for bit, whatever was built before in the
  process; a ``RowLinear`` gives exactly what its kernel gives;
* ``kernel_for`` picks it for a large model with one thread, never for a small one, never with more threads,
  and an explicit ``KVSIM_ROW_MATMUL`` wins;
* a model laid out for it keeps every value, fuses Q/K/V and gate+up as row-major views, keeps the tied head
  the embedding, counts the same FLOPs and decodes the same greedy tokens as with ``F.linear``; its trace says so.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from helpers import FAMILY_SPECS, assert_one_row_product_agrees, load
from torch.utils.flop_counter import FlopCounterMode

from kvsim.caches import KVCache, parse_lanes
from kvsim.engine.simulate import Simulator
from kvsim.models.kernels import row_matmul
from kvsim.models.kernels.row_matmul import Linear, RowLinear, linear, one_row_kernel
from kvsim.models.loading import load_model

pytest.importorskip("numba")


@pytest.fixture
def numba_ready():
    if row_matmul.WANTED in ("torch", "numpy"):
        pytest.skip(f"KVSIM_ROW_MATMUL={row_matmul.WANTED} in the environment turns numba's kernel off")
    assert row_matmul.numba_kernel() is not None
    return row_matmul.numba_kernel()


@pytest.mark.parametrize("shape", [(1, 576), (1, 1, 64), (64,)])
def test_one_row_on_a_row_major_weight_goes_to_numba_and_agrees(numba_ready, shape) -> None:
    gen = torch.Generator().manual_seed(5)
    w = torch.randn(300, shape[-1], generator=gen) / shape[-1] ** 0.5  # row-major, as nn.Linear keeps it
    bias = torch.randn(300, generator=gen)
    x = torch.randn(shape, generator=gen)
    assert one_row_kernel(x, w, rows=True) == "numba"
    assert_one_row_product_agrees(x, w, bias, rows=True)
    # a row slice of a larger matrix (a fused weight's view) is still read in place
    big = torch.randn(500, shape[-1], generator=gen) / shape[-1] ** 0.5
    part = big[100:400]
    assert one_row_kernel(x, part, rows=True) == "numba"
    torch.testing.assert_close(linear(x, part, rows=True), F.linear(x, part), rtol=1e-5, atol=1e-5)


def test_nan_and_infinity_propagate_as_in_f_linear(numba_ready) -> None:
    w = torch.randn(8, 16)
    x = torch.randn(1, 16)
    x[0, 3] = math.nan
    assert torch.isnan(linear(x, w, rows=True)).all()
    x[0, 3] = math.inf
    w[:, 3] = 1.0
    assert torch.isposinf(linear(x, w, rows=True)).all()
    x[0, 3] = 1.0
    w[5, 7] = math.nan
    assert torch.isnan(linear(x, w, rows=True)).nonzero()[:, 1].tolist() == [5]


def test_not_one_fp32_row_on_the_cpu_is_f_linear_bit_for_bit(numba_ready) -> None:
    gen = torch.Generator().manual_seed(6)
    w = torch.randn(40, 32, generator=gen)
    assert one_row_kernel(torch.randn(1, 32), w) is None  # row-major but not laid out for numba: F.linear
    for x, weight in [
        (torch.randn(1, 5, 32, generator=gen), w),  # a prefill
        (torch.randn(1, 1, 32, generator=gen).double(), w.double()),
        (torch.randn(1, 1, 32, generator=gen).bfloat16(), w.bfloat16()),
        (torch.randn(1, 1, 32, generator=gen), w[::2]),  # neither layout: every other row
    ]:
        assert one_row_kernel(x, weight, rows=True) is None
        assert torch.equal(linear(x, weight, rows=True), F.linear(x, weight))
    assert one_row_kernel(torch.randn(1, 32), w.requires_grad_(True), rows=True) is None


def test_kernel_for_a_model(numba_ready, monkeypatch) -> None:
    big, small = row_matmul.NUMBA_MIN_BYTES, row_matmul.NUMBA_MIN_BYTES - 1
    monkeypatch.setattr(row_matmul, "WANTED", "auto")
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        assert row_matmul.kernel_for(big) == "numba"
        assert row_matmul.kernel_for(small) == row_matmul.KERNEL  # numba's start costs more than it saves
        torch.set_num_threads(2)  # numba's kernel is one thread: BLAS's pool keeps a model with more
        assert row_matmul.kernel_for(big) == row_matmul.KERNEL
        for wanted in ("numba", "numpy", "torch"):
            monkeypatch.setattr(row_matmul, "WANTED", wanted)
            if wanted != "numba":
                monkeypatch.setattr(row_matmul, "KERNEL", wanted)
            assert row_matmul.kernel_for(small) == wanted
    finally:
        torch.set_num_threads(threads)


def rows_model(spec: str, monkeypatch):
    monkeypatch.setattr(row_matmul, "WANTED", "numba")
    return load_model(spec).model


def test_a_model_laid_out_for_numba(numba_ready, monkeypatch) -> None:
    spec = FAMILY_SPECS["llama-mha-tied-bias"]
    monkeypatch.setattr(row_matmul, "WANTED", "auto")  # a small model: the column kernels, whatever the environment
    plain = load(spec).model
    model = rows_model(spec, monkeypatch)
    assert model.one_row_kernel == "numba" and plain.one_row_kernel in ("numpy", "torch")
    for (name, p), (_, q) in zip(model.state_dict().items(), plain.state_dict().items(), strict=True):
        assert torch.equal(p, q), name
    head = model.lm_head.weight
    assert head is model.tok_embeddings.weight and head.is_contiguous()
    for block in model.layers:
        qkv = block.attn.fused_qkv.weight
        assert qkv.is_contiguous() and block.attn.wk.weight.data_ptr() > qkv.data_ptr()  # a view into it
        assert block.attn.wo.weight.is_contiguous() and block.mlp.w_down.weight.is_contiguous()
        assert block.mlp.fused_gate_up.weight.is_contiguous()
        # the fused projections hold the kernel they are laid out for, as every projection module does
        assert isinstance(block.attn.fused_qkv, RowLinear) and block.attn.fused_qkv.rows and block.mlp.fused_gate_up.rows
    assert all(m.rows for m in model.modules() if isinstance(m, Linear))
    assert not any(m.rows for m in plain.modules() if isinstance(m, Linear | RowLinear))
    assert all(not vars(p) for p in model.parameters())  # a weight is just a tensor: it carries no mark of a kernel
    ids = torch.tensor([[0, 3, model.cfg.vocab_size - 1]])
    assert torch.equal(model.tok_embeddings(ids), plain.tok_embeddings(ids))
    loaded = load_model(spec)
    sim = Simulator(model, loaded.tokenizer, [1, 2, 3], parse_lanes("kv"))
    assert sim.trace.meta["one_row_matmul"] == "numba"


def test_numba_decode_counts_and_chooses_as_f_linear(numba_ready, monkeypatch) -> None:
    model = rows_model(FAMILY_SPECS["llama-gqa"], monkeypatch)
    cfg = model.cfg

    def decode(steps: int) -> tuple[list[int], list[torch.Tensor], int]:
        cache = KVCache(cfg.n_layers)
        ids = [5, 17, 42, 7, 99]
        logits = model(torch.tensor([ids]), torch.arange(len(ids)), cache, last_only=True).logits[0, -1]
        tokens, all_logits, flops = [], [], 0
        for pos in range(len(ids), len(ids) + steps):
            token = int(logits.argmax())
            tokens.append(token)
            with FlopCounterMode(display=False) as counter:
                logits = model(torch.tensor([[token]]), torch.tensor([pos]), cache).logits[0, -1]
            flops += counter.get_total_flops()
            all_logits.append(logits)
        return tokens, all_logits, flops

    got_tokens, got_logits, got_flops = decode(12)
    monkeypatch.setattr(row_matmul, "WANTED", "torch")  # the same weights through F.linear
    want_tokens, want_logits, want_flops = decode(12)
    assert got_tokens == want_tokens and got_flops == want_flops > 0
    for got, want in zip(got_logits, want_logits, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_a_one_column_weight_is_both_layouts_and_each_kernel_takes_it_right(numba_ready) -> None:
    """(out, 1) is contiguous and column-major at once: not laid out for numba it is numpy's (any strides), laid
    out for numba (``rows``) numba's."""
    x = torch.tensor([[2.0]])
    w = torch.arange(6, dtype=torch.float32)[:, None]
    assert one_row_kernel(x, w) in ("numpy", None)
    torch.testing.assert_close(linear(x, w), F.linear(x, w))
    assert one_row_kernel(x, w, rows=True) == "numba"
    torch.testing.assert_close(linear(x, w, rows=True), F.linear(x, w))
