"""The one-row kernel and the page kind picked by measuring (``kvsim.models.kernels.kernel_choice``):

* ``decide`` takes the kernel whose best variant has the lowest median, keeps huge pages only when the paired
  ratio huge / ordinary is at most 1 − ``HUGE_MARGIN``, and says so (injected timings, no clock);
* ``choice_for`` measures once, caches beside the roofline's peaks, reuses the cached answer while the machine's read
  rate stays within ``BANDWIDTH_CHANGE`` and measures again when it moved (an injected probe and timer); what the
  environment forces is not measured; one process decides once per key;
* a model laid out for each kernel gives the same logits (float32 rounding) and the same greedy tokens, the trace
  records which kernel, the page kind and why; the real measurement runs on a small model and picks a candidate.
"""

from __future__ import annotations

import json

import pytest
import torch
from helpers import FAMILY_SPECS

from kvsim.caches import KVCache, parse_lanes
from kvsim.engine.simulate import Simulator
from kvsim.models.kernels import huge_pages, kernel_choice, row_matmul
from kvsim.models.kernels.kernel_choice import HUGE_MARGIN, KernelChoice, choice_for, decide
from kvsim.models.loading import load_model


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    monkeypatch.setattr(kernel_choice, "_decided", {})
    monkeypatch.setattr(row_matmul, "WANTED", "auto")


def test_decide_takes_the_fastest_kernel_and_keeps_huge_pages_only_when_they_help() -> None:
    times = {
        ("numba", True): [0.050, 0.052, 0.049],
        ("numba", False): [0.051, 0.052, 0.050],
        ("numpy", True): [0.040, 0.041, 0.039],  # fastest, and huge pages 5 % faster than ordinary, paired
        ("numpy", False): [0.042, 0.043, 0.041],
        ("torch", True): [0.045, 0.046, 0.044],
        ("torch", False): [0.045, 0.046, 0.044],
    }
    kernel, huge, reason = decide(times)
    assert (kernel, huge) == ("numpy", True)
    assert reason.startswith("measured: numpy 40.0 ms < torch 45.0 ms < numba 50.0 ms") and "kept" in reason
    # huge pages 1 % faster: less than the margin, not kept
    times[("numpy", True)] = [t * 0.99 for t in times[("numpy", False)]]
    kernel, huge, reason = decide(times)
    assert (kernel, huge) == ("numpy", False) and f"less than {HUGE_MARGIN:.0%} faster" in reason
    # the ordinary pages faster: the kernel still by its best variant
    kernel, huge, _ = decide({("numba", True): [3.0], ("numba", False): [1.0], ("torch", True): [2.0], ("torch", False): [2.0]})
    assert (kernel, huge) == ("numba", False)
    # one page kind timed: that kind; a tie keeps the candidates' order (numba, numpy, torch)
    assert decide({("torch", False): [1.0], ("numpy", False): [1.0]})[:2] == ("numpy", False)
    assert decide({("torch", True): [1.0]}) == ("torch", True, "torch: the only candidate")
    with pytest.raises(ValueError):
        decide({("torch", True): []})


def fake_timer(fastest: str, calls: list):
    def timer(head, layers, kernels, pages):
        calls.append((tuple(kernels), tuple(pages)))
        return {(k, h): [0.010 if k == fastest else 0.020] * 3 for k in kernels for h in pages}

    return timer


def test_choice_for_caches_and_measures_again_when_the_read_rate_moves(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(huge_pages, "ENABLED", True)
    head, layers = torch.zeros(1024, 1024), [torch.zeros(32, 16)]  # the head spans huge pages: both kinds timed
    big = kernel_choice.PROBE_BYTES // 2  # large enough that the read rate is probed, too small for numba
    assert big < row_matmul.NUMBA_MIN_BYTES
    cache = tmp_path / "row_kernels.json"
    calls: list = []
    first = choice_for(head, layers, big, probe=lambda: 10e9, timer=fake_timer("torch", calls), cache=cache)
    assert (first.kernel, first.cached, first.read_gbps) == ("torch", False, 10.0)
    assert calls == [(("numpy", "torch"), (True, False))]  # numba: not below NUMBA_MIN_BYTES
    name = kernel_choice.variant_name
    assert first.ms[name("torch", True)] == 10.0 and first.ms[name("numpy", False)] == 20.0
    assert not first.huge_pages  # equal times: huge pages did not help
    stored = json.loads(cache.read_text())
    assert stored[first.key]["kernel"] == "torch" and stored[first.key]["read_gbps"] == 10.0
    assert choice_for(head, layers, big, probe=lambda: 99e9, timer=fake_timer("numpy", calls), cache=cache) is first
    # another process: the cache answers while the read rate is within BANDWIDTH_CHANGE
    monkeypatch.setattr(kernel_choice, "_decided", {})
    again = choice_for(head, layers, big, probe=lambda: 11e9, timer=fake_timer("numpy", calls), cache=cache)
    assert (again.kernel, again.cached, len(calls)) == ("torch", True, 1) and "cached" in again.reason
    # the host's memory now starved (or freed): measured again, and the reason says why
    monkeypatch.setattr(kernel_choice, "_decided", {})
    moved = choice_for(head, layers, big, probe=lambda: 20e9, timer=fake_timer("numpy", calls), cache=cache)
    assert (moved.kernel, moved.cached, len(calls)) == ("numpy", False, 2)
    assert "read rate moved from 10.0 to 20.0 GB/s" in moved.reason
    assert json.loads(cache.read_text())[moved.key]["kernel"] == "numpy"


def test_a_small_model_is_not_probed_and_what_is_forced_is_not_measured(tmp_path, monkeypatch) -> None:
    head, layers = torch.zeros(64, 16), [torch.zeros(32, 16)]
    calls: list = []

    def no_probe() -> float:
        raise AssertionError("a model that fits in the cache is not probed")

    small = choice_for(head, layers, 1 << 20, probe=no_probe, timer=fake_timer("numpy", calls), cache=tmp_path / "c.json")
    assert small.kernel == "numpy" and small.read_gbps == 0.0 and calls == [(("numpy", "torch"), (False,))]
    monkeypatch.setattr(kernel_choice, "_decided", {})
    monkeypatch.setattr(row_matmul, "WANTED", "torch")
    forced = choice_for(head, layers, 1 << 20, probe=no_probe, timer=fake_timer("numpy", calls), cache=tmp_path / "c.json")
    assert forced.kernel == "torch" and "KVSIM_ROW_MATMUL=torch" in forced.reason and len(calls) == 1


def decode(model, steps: int = 8) -> tuple[list[int], list[torch.Tensor]]:
    cache = KVCache(model.cfg.n_layers)
    ids = [5, 17, 42, 7, 99]
    logits = model(torch.tensor([ids]), torch.arange(len(ids)), cache, last_only=True).logits[0, -1]
    tokens, seen = [], []
    for pos in range(len(ids), len(ids) + steps):
        tokens.append(int(logits.argmax()))
        logits = model(torch.tensor([[tokens[-1]]]), torch.tensor([pos]), cache).logits[0, -1]
        seen.append(logits)
    return tokens, seen


def test_each_kernel_gives_the_same_logits_and_the_trace_says_which_and_why(monkeypatch) -> None:
    kernels = ["numpy", "torch"] + (["numba"] if row_matmul.numba_kernel() is not None else [])
    results = {}
    for kernel in kernels:
        chosen = KernelChoice(kernel, False, f"injected: {kernel}")
        monkeypatch.setattr(kernel_choice, "choice_for", lambda *a, chosen=chosen, **k: chosen)
        model = load_model(FAMILY_SPECS["llama-gqa"]).model
        assert model.one_row_kernel == kernel and model.kernel_choice is chosen and not model.huge_page_weights
        qkv = model.layers[0].attn.fused_qkv
        x = torch.randn(1, model.cfg.dim)
        assert row_matmul.one_row_kernel(x, qkv.weight, qkv.rows, qkv.column) == (None if kernel == "torch" else kernel)
        results[kernel] = decode(model)
        meta = Simulator(model, load_model(FAMILY_SPECS["llama-gqa"]).tokenizer, [1, 2, 3], parse_lanes("kv")).trace.meta
        assert meta["one_row_matmul"] == kernel and meta["one_row_choice"]["reason"] == f"injected: {kernel}"
    want_tokens, want_logits = results["torch"]
    for kernel, (tokens, logits) in results.items():
        assert tokens == want_tokens, kernel
        for got, want in zip(logits, want_logits, strict=True):
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_the_real_measurement_picks_a_candidate_on_a_small_model(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("KVSIM_CACHE_DIR", str(tmp_path))
    model = load_model(FAMILY_SPECS["llama-mqa"]).model
    choice = model.kernel_choice
    assert choice is not None and choice.kernel == model.one_row_kernel in ("numpy", "torch")
    assert set(choice.ms) == {kernel_choice.variant_name(k, False) for k in ("numpy", "torch")}  # no matrix spans 2 MiB
    assert all(ms > 0 for ms in choice.ms.values()) and choice.reason.startswith("measured: ")
    assert json.loads((tmp_path / kernel_choice.CACHE_NAME).read_text())[choice.key]["kernel"] == choice.kernel
