"""Weights in huge pages (kvsim.models.kernels.huge_pages): the same values in memory that asks for 2 MiB pages.

What is checked is what kvsim controls — the layout, the values, the advice on the mapping (Linux's
``VmFlags``), the lifetime — not whether the kernel could find a free 2 MiB page at that moment (memory
fragmentation decides that; ``benchmarks/weights/huge_pages.py`` reports it with the speed)."""

from __future__ import annotations

import gc
import mmap
import sys

import pytest
import torch

from kvsim.caches import KVCache
from kvsim.models.kernels import huge_pages, kernel_choice, row_matmul
from kvsim.models.loading import load_model

LINUX_ADVICE = sys.platform.startswith("linux") and hasattr(mmap, "MADV_HUGEPAGE")
# dim 512: the fused Q/K/V, the MLP's gate+up and down, and the tied head each span ≥ 2 MiB
SPEC = "random:family=llama,layers=2,heads=8,kv_heads=8,dim=512,vocab=2048,ctx=64,tie=true,seed=4"


@pytest.fixture(autouse=True)
def pages_as_enabled(monkeypatch):
    """A model takes huge pages whenever they are on (``ENABLED``), and one kernel throughout: what is checked here is
    where the weights live, not which kernel or page kind measured faster (tests/engine/models/test_kernel_choice.py)."""
    pinned = lambda *a, **k: kernel_choice.KernelChoice(row_matmul.KERNEL, huge_pages.ENABLED, "pinned by the test")  # noqa: E731
    monkeypatch.setattr(kernel_choice, "choice_for", pinned)


def test_a_column_major_copy_keeps_shape_values_and_layout():
    w = torch.randn(1536, 512)  # 3 MiB
    c = huge_pages.column_major(w)
    assert c.shape == w.shape and torch.equal(c, w)
    assert c.stride() == (1, 1536)  # (in, out) in memory
    small = torch.randn(8, 4)
    s = huge_pages.column_major(small)
    assert torch.equal(s, small) and s.stride() == (1, 8)


def test_empty_starts_on_a_huge_page_boundary_and_outlives_its_maker():
    t = huge_pages.empty((3, 1 << 20), torch.float32, huge=True)  # 12 MiB
    if LINUX_ADVICE:
        assert t.data_ptr() % huge_pages.HUGE_PAGE == 0
    view = t[2]
    view.fill_(7.0)
    del t
    gc.collect()  # the mapping lives as long as a tensor on it
    assert float(view.sum()) == 7.0 * (1 << 20)
    assert huge_pages.empty((10,), torch.float32, huge=True).data_ptr() % 64 == 0  # small: an ordinary tensor


@pytest.mark.skipif(not LINUX_ADVICE, reason="the huge-page advice is Linux's")
def test_the_advice_is_on_the_big_weights_mappings_and_not_on_ordinary_memory():
    assert huge_pages.advised_huge(huge_pages.empty((1 << 20,), torch.float32, huge=True))
    # (whether torch's own memory carries the advice is the allocator's business: after some tests it does,
    # glibc having moved its mmap threshold; kvsim's part is that huge=False makes no mapping of its own, below)
    model = load_model(SPEC).model
    big = [model.lm_head.weight]
    for block in model.layers:
        big += [block.attn.fused_qkv.weight, block.mlp.fused_gate_up.weight, block.mlp.w_down.weight]
    assert all(w.numel() * 4 >= huge_pages.HUGE_PAGE for w in big)
    assert all(huge_pages.advised_huge(w) for w in big)
    assert model.tok_embeddings.weight is model.lm_head.weight  # still tied


def test_a_model_in_huge_pages_computes_what_one_in_ordinary_pages_does(monkeypatch):
    """Where the weights live changes no number: logits of a prefill and of decode steps bit for bit."""
    mappings = []
    real_mmap = mmap.mmap
    monkeypatch.setattr(huge_pages.mmap, "mmap", lambda *a, **k: mappings.append(a) or real_mmap(*a, **k))
    was = huge_pages.ENABLED
    huge = load_model(SPEC).model
    assert huge.huge_page_weights is was and (len(mappings) >= 5) is was  # the big matrices, each its mapping
    monkeypatch.setattr(huge_pages, "ENABLED", False)
    mappings.clear()
    plain = load_model(SPEC).model
    assert mappings == [] and not plain.huge_page_weights  # turned off: no mapping of kvsim's own
    ids = torch.tensor([[3, 14, 15, 92, 65, 35]])
    caches = KVCache(2), KVCache(2)
    outs = [m(ids, torch.arange(6), c).logits for m, c in zip((huge, plain), caches, strict=True)]
    assert torch.equal(outs[0], outs[1])
    for step in range(3):
        token, pos = torch.tensor([[7 + step]]), torch.arange(6 + step, 7 + step)
        a, b = (m(token, pos, c).logits for m, c in zip((huge, plain), caches, strict=True))
        assert torch.equal(a, b)
    for (name, p), (_, q) in zip(huge.state_dict().items(), plain.state_dict().items(), strict=True):
        assert torch.equal(p, q), name


def test_a_trace_says_whether_its_weights_asked_for_huge_pages(monkeypatch):
    from kvsim.caches import parse_lanes
    from kvsim.engine.simulate import Simulator

    loaded = load_model(SPEC)
    sim = Simulator(loaded.model, loaded.tokenizer, [1, 2, 3], parse_lanes("kv"))
    assert sim.trace.meta["huge_page_weights"] is huge_pages.ENABLED
    monkeypatch.setattr(huge_pages, "ENABLED", not huge_pages.ENABLED)  # the model says how it was laid out
    sim = Simulator(loaded.model, loaded.tokenizer, [1, 2, 3], parse_lanes("kv"))
    assert sim.trace.meta["huge_page_weights"] is not huge_pages.ENABLED
    other = load_model(SPEC)
    sim = Simulator(other.model, other.tokenizer, [1, 2, 3], parse_lanes("kv"))
    assert sim.trace.meta["huge_page_weights"] is huge_pages.ENABLED
