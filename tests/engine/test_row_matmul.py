"""The one-row matmul kernel (``kvsim.models.row_matmul``) against ``F.linear``, and what it keeps:

* a one-row fp32 product on a column-major weight goes to numpy's BLAS (when ``KERNEL`` is "numpy") and
  agrees with ``F.linear`` to float32 rounding; anything else is ``F.linear`` itself, bit for bit;
* torch's FLOP counter sees the operator and counts it as ``aten::mm``, so a decode step counts the same
  FLOPs whichever kernel ran;
* a whole greedy decode gives the same tokens with either kernel, logits within 1e-5;
* the tied embedding, column-major for the LM head, still is the embedding (one Parameter) and its rows
  look up the same values;
* ``limit_threads`` gives numpy's BLAS the thread count asked.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from helpers import FAMILY_SPECS, assert_one_row_product_agrees, load
from torch.utils.flop_counter import FlopCounterMode

from kvsim.caches import KVCache
from kvsim.models import row_matmul
from kvsim.models.row_matmul import Linear, linear, one_row_kernel

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


def test_the_flop_counter_counts_the_operator_as_a_matmul(monkeypatch) -> None:
    """A cached decode step of a loaded model (decode-friendly layout) counts the same FLOPs with the numpy
    kernel as with F.linear, and both equal the closed form's (tests/engine/test_counting.py) by equality."""
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
    monkeypatch.setattr(row_matmul, "KERNEL", "torch")
    with_torch = decode_flops()
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

    got_tokens, got_logits = decode(12)
    monkeypatch.setattr(row_matmul, "KERNEL", "torch")
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


def test_limit_threads_sets_numpy_blas_threads() -> None:
    threadpoolctl = pytest.importorskip("threadpoolctl")
    if not any(p["user_api"] == "blas" for p in threadpoolctl.threadpool_info()):
        pytest.skip("no BLAS pool that threadpoolctl can see")
    with threadpoolctl.threadpool_limits(limits=None):  # restores the limits on exit
        row_matmul.limit_threads(1)
        assert {p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"} == {1}
