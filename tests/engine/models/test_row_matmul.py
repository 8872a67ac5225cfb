"""The one-row matmul kernel (``kvsim.models.kernels.row_matmul``) against ``F.linear``, and what it keeps:

* a one-row fp32 product on a column-major weight goes to numpy's BLAS (when ``KERNEL`` is "numpy") and
  agrees with ``F.linear`` to float32 rounding; anything else is ``F.linear`` itself, bit for bit;
* torch's FLOP counter sees the operator and counts it as ``aten::mm``, so a decode step counts the same
  FLOPs whichever kernel ran;
* a whole greedy decode gives the same tokens with either kernel, logits within 1e-5;
* the tied embedding, column-major for the LM head, still is the embedding (one Parameter) and its rows
  look up the same values;
* a ``RowLinear`` (and a model's ``Linear``) gives exactly, bit for bit, what the kernel its layout takes gives:
  numba's dot products on a row-major weight laid out for it, numpy's matmul on a column-major one, ``F.linear``
  for everything else (a prefill);
* ``limit_threads`` gives numpy's BLAS the thread count asked.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from helpers import FAMILY_SPECS, assert_one_row_product_agrees, load
from torch.utils.flop_counter import FlopCounterMode

from kvsim.caches import KVCache
from kvsim.models.kernels import row_matmul
from kvsim.models.kernels.row_matmul import Linear, RowLinear, linear, one_row_kernel

numpy_kernel = pytest.mark.skipif(row_matmul.KERNEL != "numpy", reason="numpy's BLAS is not OpenBLAS here: F.linear throughout")


def column_major(w: torch.Tensor) -> torch.Tensor:
    return w.t().contiguous().t()


@numpy_kernel
@pytest.mark.parametrize("shape", [(1, 576), (1, 1, 64), (64,)])
def test_one_row_goes_to_numpy_and_agrees_with_f_linear(shape) -> None:
    gen = torch.Generator().manual_seed(1)
    w = column_major(torch.randn(300, shape[-1], generator=gen) / shape[-1] ** 0.5)
    bias = torch.randn(300, generator=gen)
    x = torch.randn(shape, generator=gen)
    assert one_row_kernel(x, w) == "numpy"
    assert_one_row_product_agrees(x, w, bias)


def test_everything_else_is_f_linear_bit_for_bit() -> None:
    gen = torch.Generator().manual_seed(2)
    w = torch.randn(40, 32, generator=gen)
    x_rows = torch.randn(1, 5, 32, generator=gen)  # a prefill: 5 rows
    x_row = torch.randn(1, 1, 32, generator=gen)
    cases = [
        (x_rows, column_major(w)),  # several rows
        (x_row, w),  # a row-major weight
        (x_row.double(), column_major(w.double())),  # not fp32
        (x_row.bfloat16(), column_major(w.bfloat16())),
    ]
    for x, weight in cases:
        assert one_row_kernel(x, weight) != "numpy"
        assert torch.equal(linear(x, weight), F.linear(x, weight))
    # a weight that needs gradients is left to autograd
    grad_w = column_major(w).requires_grad_(True)
    assert one_row_kernel(x_row, grad_w) != "numpy"


def use_column_kernel(model: torch.nn.Module, kernel: str) -> None:
    """Switch a loaded model's column-major products to ``kernel`` (what its layout measured fastest is held by each
    product module: ``Linear.column``, ``RowLinear.column``)."""
    for module in model.modules():
        for m in [module, *vars(module).values()]:
            if isinstance(m, Linear | RowLinear) and not m.rows:
                m.column = kernel


def test_the_flop_counter_counts_the_operator_as_a_matmul(monkeypatch) -> None:
    """A cached decode step of a loaded model (decode-friendly layout) counts the same FLOPs with the numpy
    kernel as with F.linear, and both equal the closed form's (tests/engine/runs/test_counting.py) by equality."""
    model = load(FAMILY_SPECS["llama-gqa"]).model
    cfg = model.cfg
    ids = torch.randint(0, cfg.vocab_size, (1, 12), generator=torch.Generator().manual_seed(3))

    def decode_flops() -> int:
        cache = KVCache(cfg.n_layers)
        model(ids[:, :11], torch.arange(11), cache, last_only=True)
        with FlopCounterMode(display=False) as counter:
            model(ids[:, 11:], torch.tensor([11]), cache)
        return counter.get_total_flops()

    with_kernel = decode_flops()
    use_column_kernel(model, "numpy")
    with_numpy = decode_flops()
    use_column_kernel(model, "torch")
    with_torch = decode_flops()
    assert with_numpy == with_torch
    assert with_kernel == with_torch > 0


def test_a_greedy_decode_is_the_same_with_either_kernel(monkeypatch) -> None:
    model = load(FAMILY_SPECS["llama-gqa"]).model
    cfg = model.cfg

    def decode(steps: int) -> tuple[list[int], list[torch.Tensor]]:
        cache = KVCache(cfg.n_layers)
        ids = [5, 17, 42, 7, 99]
        logits = model(torch.tensor([ids]), torch.arange(len(ids)), cache, last_only=True).logits[0, -1]
        tokens, all_logits = [], []
        for pos in range(len(ids), len(ids) + steps):
            token = int(logits.argmax())
            tokens.append(token)
            logits = model(torch.tensor([[token]]), torch.tensor([pos]), cache).logits[0, -1]
            all_logits.append(logits)
        return tokens, all_logits

    use_column_kernel(model, "numpy")
    got_tokens, got_logits = decode(12)
    use_column_kernel(model, "torch")
    want_tokens, want_logits = decode(12)
    assert got_tokens == want_tokens
    for got, want in zip(got_logits, want_logits, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_the_tied_head_is_column_major_and_still_the_embedding() -> None:
    model = load(FAMILY_SPECS["llama-mha-tied-bias"]).model
    head, table = model.lm_head.weight, model.tok_embeddings.weight
    assert model.cfg.tie_embeddings and head is table
    if model.one_row_kernel == "numba":  # (KVSIM_ROW_MATMUL=numba in the environment: every model row-major)
        assert head.is_contiguous()
    else:
        assert head.stride() == (1, head.shape[0])  # column-major: the LM head streams it in order
    ids = torch.tensor([[0, 3, model.cfg.vocab_size - 1, 3]])
    assert torch.equal(model.tok_embeddings(ids), table.contiguous()[ids])


def test_linear_modules_keep_their_state_dict() -> None:
    layer = Linear(8, 3)
    plain = torch.nn.Linear(8, 3)
    assert set(layer.state_dict()) == set(plain.state_dict())
    plain.load_state_dict(layer.state_dict())
    x = torch.randn(4, 8)
    assert torch.equal(layer(x), plain(x))


@pytest.mark.parametrize("rows", [False, True], ids=["column-major", "row-major for numba"])
def test_a_row_linear_gives_its_kernels_product_bit_for_bit(rows) -> None:
    if rows and (row_matmul.WANTED in ("torch", "numpy") or row_matmul.numba_kernel() is None):
        pytest.skip("numba's kernel is off here (not installed, or KVSIM_ROW_MATMUL)")
    gen = torch.Generator().manual_seed(8)
    w = torch.randn(300, 64, generator=gen) / 8
    w = w if rows else column_major(w)
    bias = torch.randn(300, generator=gen)
    layer = RowLinear(w, bias, rows)
    assert not set(dict(layer.named_parameters())) and not set(dict(layer.named_buffers()))  # plain tensors
    x = torch.randn(1, 1, 64, generator=gen)
    kernel = one_row_kernel(x, w, rows)
    assert kernel == ("numba" if rows else "numpy" if row_matmul.KERNEL == "numpy" else None)
    if kernel == "numba":
        out = np.empty(300, np.float32)
        row_matmul.numba_kernel()(w.numpy(), x.view(-1).numpy(), out)
        want = torch.from_numpy(out).view(1, 1, 300) + bias
    elif kernel == "numpy":
        want = torch.from_numpy(np.matmul(x.numpy(), w.numpy().T)) + bias
    else:
        want = F.linear(x, w, bias)
    got = layer(x)
    assert torch.equal(got, want)
    torch.testing.assert_close(got, F.linear(x, w, bias), rtol=1e-5, atol=1e-5)  # F.linear, to float32 rounding
    # the model's own projection holding the same weight and choice gives the same product
    own = Linear(64, 300)
    own.weight, own.bias = torch.nn.Parameter(w, requires_grad=False), torch.nn.Parameter(bias, requires_grad=False)
    own.rows = rows
    assert torch.equal(own(x), got)
    # several rows (a prefill) are F.linear's, bit for bit, whatever the layout
    xs = torch.randn(1, 5, 64, generator=gen)
    assert one_row_kernel(xs, w, rows) is None and torch.equal(layer(xs), F.linear(xs, w, bias))


def test_limit_threads_sets_numpy_blas_threads() -> None:
    threadpoolctl = pytest.importorskip("threadpoolctl")
    if not any(p["user_api"] == "blas" for p in threadpoolctl.threadpool_info()):
        pytest.skip("no BLAS pool that threadpoolctl can see")
    with threadpoolctl.threadpool_limits(limits=None):  # restores the limits on exit
        row_matmul.limit_threads(1)
        assert {p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"} == {1}
