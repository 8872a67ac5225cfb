"""Weight-quantized lanes (``kv@w8``, ``kv@w4:g64``, ``int4@w8``): the stored codes and scales,
dequantized, equal an independent quantizer written here from the formats' definitions (numpy,
element by element); the LM head's Q8_0 blocks are gguf-py's own, byte for byte; the bytes are those of the
stored tensors; the lane's forward is the full-precision model run on those dequantized weights (the head's
dequantized by gguf-py, an implementation independent of kvsim's)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gguf import GGMLQuantizationType
from gguf.quants import dequantize, quantize
from torch import nn

from kvsim.caches import KVCache, SpecError, parse_lanes
from kvsim.engine.simulate import Simulator, summarize
from kvsim.engine.trace import Trace
from kvsim.models.kernels.quantized_weights import (
    BlockEmbedding,
    QuantizedLinear,
    head_format,
    quantize_model,
    quantize_q8_0,
    weight_bytes,
)
from kvsim.models.loading import load_model

SPEC = "random:family=llama,layers=2,heads=4,kv_heads=2,dim=64,vocab=300,ctx=128,seed=21,qkv_bias=true"
TIED = SPEC.replace("seed=21", "seed=22,tie=true")  # one matrix for the embedding and the LM head
Q8_0 = GGMLQuantizationType.Q8_0


def reference_int8(w: np.ndarray, group: int | None) -> np.ndarray:
    """INT8, symmetric: per row (or per group of G inputs) s = max|w| / 127, q = clip(round(w / s), ±127)."""
    out, inp = w.shape
    g = inp if group is None else group
    deq = np.empty_like(w, dtype=np.float32)
    for r in range(out):
        for start in range(0, inp, g):
            block = w[r, start : start + g].astype(np.float32)
            amax = np.float32(np.abs(block).max())
            s = amax / np.float32(127) if amax > 0 else np.float32(1)
            q = np.clip(np.round(block / s), -127, 127)
            deq[r, start : start + g] = q.astype(np.float32) * s
    return deq


def reference_int4(w: np.ndarray, group: int) -> tuple[np.ndarray, np.ndarray]:
    """INT4, symmetric per group: s = max|w| / 7, q = clip(round(w / s), -8, 7); stored q + 8, two
    per byte (even input low nibble). Returns (dequantized, packed bytes)."""
    out, inp = w.shape
    deq = np.empty_like(w, dtype=np.float32)
    codes = np.empty((out, inp), dtype=np.int64)
    for r in range(out):
        for start in range(0, inp, group):
            block = w[r, start : start + group].astype(np.float32)
            amax = np.float32(np.abs(block).max())
            s = amax / np.float32(7) if amax > 0 else np.float32(1)
            q = np.clip(np.round(block / s), -8, 7)
            codes[r, start : start + group] = q
            deq[r, start : start + group] = q.astype(np.float32) * s
    nibbles = codes + 8
    packed = (nibbles[:, 0::2] | (nibbles[:, 1::2] << 4)).astype(np.uint8)
    return deq, packed


def _weight(out: int, inp: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(out, inp, generator=g) * 0.1
    w[3] = 0.0  # an all-zero row (scale 1, codes 0)
    w[5, 7] = 2.5  # an outlier that stretches its row's scale
    return w


@pytest.mark.parametrize("group", [None, 16, 64])
def test_int8_codes_dequantize_to_the_independent_quantizer(group) -> None:
    w = _weight(24, 128, seed=1)
    with torch.no_grad():
        linear = nn.Linear(128, 24)
        linear.weight.copy_(w)
    layer = QuantizedLinear(linear, 8, group)
    assert layer.codes.dtype == torch.int8 and layer.codes.shape == (24, 128)
    assert int(layer.codes.abs().max()) <= 127
    np.testing.assert_array_equal(layer.dequantized().numpy(), reference_int8(w.numpy(), group))
    scales = 24 if group is None else 24 * 128 // group
    assert layer.stored_bytes == 24 * 128 * 1 + scales * 4 + 24 * 4  # codes, fp32 scales, the bias


@pytest.mark.parametrize("group", [2, 32, 64])
def test_int4_codes_dequantize_to_the_independent_quantizer(group) -> None:
    w = _weight(10, 128, seed=2)
    linear = nn.Linear(128, 10, bias=False)
    with torch.no_grad():
        linear.weight.copy_(w)
    layer = QuantizedLinear(linear, 4, group)
    deq, packed = reference_int4(w.numpy(), group)
    assert layer.codes.dtype == torch.uint8 and layer.codes.shape == (10, 64)  # two codes a byte
    np.testing.assert_array_equal(layer.codes.numpy(), packed)
    np.testing.assert_array_equal(layer.dequantized().numpy(), deq)
    assert layer.stored_bytes == 10 * 128 // 2 + 10 * (128 // group) * 4


def test_int8pack_kernel_and_dequantize_then_matmul_agree() -> None:
    w = _weight(48, 64, seed=3)
    linear = nn.Linear(64, 48)
    with torch.no_grad():
        linear.weight.copy_(w)
    layer = QuantizedLinear(linear, 8, None)
    x = torch.randn(5, 64)
    layer.kernel = "dequant"
    a = layer(x)
    layer.kernel = "int8pack"
    b = layer(x)
    expected = x @ torch.from_numpy(reference_int8(w.numpy(), None)).T + linear.bias
    torch.testing.assert_close(a, expected, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(b, expected, rtol=1e-4, atol=1e-4)


def test_the_heads_q8_0_blocks_are_llama_cpps_byte_for_byte() -> None:
    w = _weight(7, 96, seed=4)
    w[2, :32] = 0.0  # an all-zero block: scale 0, codes 0
    w[4, 40] = -3.0  # an outlier that sets its block's scale
    w[6, :32] = torch.arange(32) * (2.0 / 254)  # codes landing on .5 ties (C's roundf: away from zero)
    raw = quantize_q8_0(w)
    assert raw.dtype == torch.uint8 and raw.shape == (7, 96 // 32 * 34)
    np.testing.assert_array_equal(raw.numpy(), quantize(w.numpy(), Q8_0))  # gguf-py's quantizer


@pytest.mark.parametrize(("spec", "bits", "group"), [(SPEC, 8, None), (SPEC, 4, 32), (TIED, 8, None), (TIED, 4, 64)])
def test_a_quantized_model_is_the_model_on_dequantized_weights(spec, bits, group) -> None:
    loaded = load_model(spec)
    model = loaded.model
    qmodel = quantize_model(model, bits, group)
    # an independent copy: the full-precision architecture with every block projection replaced by the
    # reference quantizer's dequantized weight, and the LM head by gguf-py's Q8_0 round trip (on the tied
    # model the same matrix is the embedding: its lookups read the dequantized rows too)
    ref = load_model(spec).model
    quantized = dict(qmodel.named_modules())
    for name, mod in ref.named_modules():
        if isinstance(quantized.get(name), QuantizedLinear):
            w = mod.weight.detach().numpy()
            deq = reference_int8(w, group) if bits == 8 else reference_int4(w, group)[0]
            with torch.no_grad():
                mod.weight.copy_(torch.from_numpy(deq))
    head = ref.lm_head.weight.detach().numpy()
    with torch.no_grad():
        ref.lm_head.weight.copy_(torch.from_numpy(dequantize(quantize(head, Q8_0), Q8_0)))
    for block in ref.layers:
        block.attn.fused_qkv = None  # read wq/wk/wv (views of the fused weight, overwritten above)
    ids = torch.tensor([[5, 17, 42, 7, 99, 3]])
    a = qmodel(ids, torch.arange(6), KVCache(2)).logits
    b = ref(ids, torch.arange(6), KVCache(2)).logits
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    assert head_format(qmodel) == "Q8_0" and head_format(model) == "as loaded"
    tied = spec == TIED
    assert isinstance(qmodel.tok_embeddings, BlockEmbedding) == tied  # a tied table: one Q8_0 matrix for both
    assert qmodel.dtype == model.dtype and qmodel.device == model.device
    if not tied:  # an untied input embedding (one row read a token) is shared as loaded
        assert qmodel.tok_embeddings.weight is model.tok_embeddings.weight
    # the original is untouched
    assert not any(isinstance(m, QuantizedLinear) for m in model.modules()) and head_format(model) == "as loaded"
    # :fphead keeps the head (and a tied embedding) as loaded, shared with the model
    kept = quantize_model(model, bits, group, head=False)
    assert kept.lm_head.weight is model.lm_head.weight and kept.tok_embeddings.weight is model.tok_embeddings.weight
    assert head_format(kept) == "as loaded"


@pytest.mark.parametrize(("bits", "group"), [(8, None), (8, 32), (4, 32), (4, 64)])
def test_weight_bytes_are_the_stored_tensors(bits, group) -> None:
    model = load_model(SPEC).model
    qmodel = quantize_model(model, bits, group)
    cfg = model.cfg
    layers = [m for m in qmodel.modules() if isinstance(m, QuantizedLinear)]
    assert len(layers) == cfg.n_layers * 7  # q, k, v, o, gate, up, down
    tensors = [t for m in layers for t in (m.codes, m.scales, m.bias) if t is not None]
    stored = sum(t.numel() * t.element_size() for t in tensors)
    # independently, from the shapes: codes at bits/8 bytes each, one fp32 scale per row or per group
    formula = 0
    for m in layers:
        n_scales = m.out_features * (1 if group is None else m.in_features // group)
        bias = 4 * m.out_features if m.bias is not None else 0
        formula += m.out_features * m.in_features * bits // 8 + 4 * n_scales + bias
    vocab, dim = cfg.vocab_size, cfg.dim
    formula += vocab * dim // 32 * 34  # the LM head: Q8_0, 34 bytes a block of 32
    got = weight_bytes(qmodel)
    assert got["quantized"] == stored + qmodel.lm_head.raw.numel() == formula
    full = weight_bytes(model)["total"]
    linear = sum(m.in_features * m.out_features * 4 + (4 * m.out_features if m.bias is not None else 0) for m in layers)
    assert got["full"] == full - linear - vocab * dim * 4  # SPEC is untied: its input embedding stays fp32
    assert got["total"] == got["quantized"] + got["full"] < full


def test_weight_lanes_run_beside_full_precision_and_save() -> None:
    loaded = load_model(SPEC)
    sim = Simulator(loaded.model, loaded.tokenizer, [1, 2, 3, 4, 5], parse_lanes("kv,kv@w8,int4@w4:g32,spec:2:lookup@w8"))
    list(sim.run(10, stop_at_eos=False))
    summary = summarize(sim.trace)["lanes"]
    assert summary["kv"]["max_abs_logit_diff"] == 0.0
    assert 0 < summary["kv@w8"]["max_abs_logit_diff"] < summary["int4@w4:g32"]["max_abs_logit_diff"]
    meta = {lane["name"]: lane for lane in sim.trace.meta["lanes"]}
    assert meta["kv@w8"]["weights"] == "w8" and meta["int4@w4:g32"]["weights"] == "w4:g32"
    assert meta["kv@w8"]["weight_head"] == "Q8_0"
    assert meta["int4@w4:g32"]["weight_bytes"] < meta["kv@w8"]["weight_bytes"] < meta["kv"]["weight_bytes"]
    assert meta["kv@w8"]["lossy"] and not meta["kv"]["lossy"]
    # the step's weight bytes are the stored ones (codes + scales in place of the fp32 matrices)
    rec = sim.trace.records[1]
    assert rec.lane("kv@w8").bytes_by_component["weights"] < rec.lane("kv").bytes_by_component["weights"]
    # a speculative lane on quantized weights is the w8 model's greedy decoding
    assert sim.lanes[3].model is sim.lanes[1].model


def test_weight_lane_trace_round_trip(tmp_path) -> None:
    loaded = load_model(SPEC)
    sim = Simulator(loaded.model, loaded.tokenizer, [1, 2, 3, 4, 5], parse_lanes("kv,kv@w4:g16"))
    list(sim.run(6, stop_at_eos=False))
    back = Trace.load(sim.trace.save(tmp_path / "w.kvsim"))
    assert back.meta["lanes"][1]["weights"] == "w4:g16"
    a, b = sim.trace.records[-1].lane("kv@w4:g16"), back.records[-1].lane("kv@w4:g16")
    assert a.logit_diff == b.logit_diff and a.rows is not None and np.array_equal(a.rows.k, b.rows.k)


@pytest.mark.parametrize(
    "bad",
    [
        "kv@w3",
        "kv@w4:g3",
        "kv@w8:x",
        "kv@",
        "@w8",
        "kv@w8@w4",
        "kv@w8:g64:g32",
        "kv@w4:g32:g32",
        "kv@w8:fphead:fphead",
        "kv@w8:row:g32",
        "kv@w8:row:row",
        "kv@w4:row",
    ],
)
def test_bad_weight_suffixes_are_one_clear_error(bad: str) -> None:
    with pytest.raises(SpecError):
        parse_lanes(bad)


def test_a_group_that_does_not_divide_the_width_is_a_clear_error() -> None:
    from kvsim.core.sampling import SimulationError

    loaded = load_model(SPEC)
    with pytest.raises(SimulationError, match="groups of 48"):
        Simulator(loaded.model, loaded.tokenizer, [1, 2], parse_lanes("kv@w4:g48"))


def test_w8_is_q8_0_blocks_and_w8_row_one_scale_per_row() -> None:
    """Plain ``w8`` is llama.cpp's Q8_0 (blocks of 32 with an fp16 scale, gguf-py's bytes); ``w8:row`` the per-row
    format it was before; both labels round-trip; the bill says which head."""
    from kvsim.caches.weights import parse_weights, weights_label
    from kvsim.models.gguf.blocks import GGUFBlockLinear

    assert parse_weights("w8") == {"bits": 8, "group": 32, "blocks": "Q8_0"}
    assert parse_weights("w8:row") == {"bits": 8, "group": None}
    assert parse_weights("w8:g32") == {"bits": 8, "group": 32}  # fp32 scales per 32: another format than Q8_0
    for text in ("w8", "w8:row", "w8:g32", "w8:fphead", "w8:row:fphead", "w4:g64"):
        assert weights_label(parse_weights(text)) == text
    loaded = load_model(TIED)
    sim = Simulator(loaded.model, loaded.tokenizer, [1, 2, 3], parse_lanes("kv,kv@w8,kv@w8:row"), warmup=False)
    q8, row = sim.lanes[1].model, sim.lanes[2].model
    wq = loaded.model.layers[0].attn.wq.weight.detach().numpy()
    assert isinstance(q8.layers[0].attn.wq, GGUFBlockLinear) and q8.layers[0].attn.wq.kind == "Q8_0"
    np.testing.assert_array_equal(q8.layers[0].attn.wq.raw.numpy(), quantize(wq, Q8_0))  # gguf-py's own bytes
    assert isinstance(row.layers[0].attn.wq, QuantizedLinear) and row.layers[0].attn.wq.scales.dim() == 1
    meta = {lane["name"]: lane for lane in sim.trace.meta["lanes"]}
    assert meta["kv@w8"]["weights"] == "w8" and meta["kv@w8:row"]["weights"] == "w8:row"
    assert meta["kv@w8"]["weight_head"] == meta["kv@w8:row"]["weight_head"] == "Q8_0"


@pytest.mark.parametrize("group", [None, 32, 64])
def test_the_int8_codes_kernel_is_dequantize_then_matmul(group) -> None:
    """One decode row through the codes kernel (kvsim.models.kernels.int8_matmul) equals dequantize-then-matmul to
    float32 rounding, per row, per group and on Q8_0 blocks (bias added); FlopCounterMode counts it as the matmul."""
    from torch.utils.flop_counter import FlopCounterMode

    from kvsim.models.gguf.blocks import GGUFBlockLinear
    from kvsim.models.kernels import int8_matmul

    if int8_matmul.int8_kernel() is None:
        pytest.skip("numba is not installed (or turned off): every product dequantizes")
    w = _weight(96, 192, seed=9)
    linear = nn.Linear(192, 96)
    with torch.no_grad():
        linear.weight.copy_(w)
    layers = [QuantizedLinear(linear, 8, group)]
    if group == 32:
        layers.append(GGUFBlockLinear(quantize_q8_0(w).numpy(), "Q8_0", 96, 192, torch.float32, linear.bias))
    x = torch.randn(1, 1, 192)
    for layer in layers:
        assert int8_matmul.usable(x, layer.raw if isinstance(layer, GGUFBlockLinear) else layer.codes)
        expected = torch.nn.functional.linear(x, layer.dequantized(), layer.bias)
        with FlopCounterMode(display=False) as counter:
            got = layer(x)
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
        assert counter.get_total_flops() == 2 * 192 * 96
