"""llama.cpp's Q6_K for a 4-bit lane's LM head (``kvsim.models.kernels.q6_k``): the bytes equal a line-by-line
transliteration of ``quantize_row_q6_K_ref`` and ``make_qx_quants`` written here (scalar float32, loop for loop);
gguf-py's own dequantizer (an implementation independent of kvsim's) reads them back to within half a step of
each weight; and the head rule is llama-quantize's: Q6_K for a 4-bit lane whose head's rows split into 256s, else
Q8_0 (its fallback), and Q8_0 for an 8-bit lane."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gguf import GGMLQuantizationType
from gguf.quants import dequantize

from kvsim.caches import KVCache, parse_lanes
from kvsim.engine.simulate import Simulator
from kvsim.models.gguf.blocks import dequantize_blocks
from kvsim.models.kernels.q6_k import quantize_q6_k
from kvsim.models.kernels.quantized_weights import (
    BlockEmbedding,
    head_format,
    head_kind,
    quantize_model,
    quantized_bytes,
    weight_bytes,
)
from kvsim.models.loading import load_model

Q6_K = GGMLQuantizationType.Q6_K
F = np.float32
WIDE = "random:family=llama,layers=2,heads=4,kv_heads=2,dim=256,vocab=256,ctx=64,seed=5,tie=true"


def nearest_int(v: np.float32) -> int:
    return int(np.rint(F(v)))


def make_qx_quants(x: np.ndarray, nmax: int) -> tuple[np.float32, list[int]]:
    """ggml-quants.c's make_qx_quants(n, nmax, x, L, rmse_type = 1, qw = NULL), scalar."""
    amax, mx = F(0), F(0)
    for v in x:
        if abs(v) > amax:
            amax, mx = F(abs(v)), F(v)
    if amax < F(1e-15):
        return F(0), [0] * len(x)
    iscale = F(-nmax) / mx
    L, sumlx, suml2 = [], F(0), F(0)
    for v in x:
        q = max(-nmax, min(nmax - 1, nearest_int(iscale * v)))
        L.append(q + nmax)
        w = F(v * v)
        sumlx = F(sumlx + F(F(w * v) * F(q)))
        suml2 = F(suml2 + F(F(w * F(q)) * F(q)))
    scale = F(sumlx / suml2) if suml2 else F(0)
    best = F(scale * sumlx)
    for step in range(-9, 10):
        if step == 0:
            continue
        iscale = F(-F(F(nmax) + F(F(0.1) * F(step)))) / mx
        sumlx = suml2 = F(0)
        for v in x:
            q = max(-nmax, min(nmax - 1, nearest_int(iscale * v)))
            w = F(v * v)
            sumlx = F(sumlx + F(F(w * v) * F(q)))
            suml2 = F(suml2 + F(F(w * F(q)) * F(q)))
        if suml2 > 0 and F(sumlx * sumlx) > F(best * suml2):
            L = [nmax + max(-nmax, min(nmax - 1, nearest_int(iscale * v))) for v in x]
            scale = F(sumlx / suml2)
            best = F(scale * sumlx)
    return scale, L


def quantize_row_q6_k_ref(x: np.ndarray) -> bytes:
    """ggml-quants.c's quantize_row_q6_K_ref for one super-block of 256, scalar."""
    L = [0] * 256
    scales = []
    max_scale, max_abs = F(0), F(0)
    for ib in range(16):
        scale, sub = make_qx_quants(x[16 * ib : 16 * ib + 16], 32)
        L[16 * ib : 16 * ib + 16] = sub
        scales.append(scale)
        if abs(scale) > max_abs:
            max_abs, max_scale = F(abs(scale)), scale
    if max_abs < F(1e-15):
        return bytes(210)
    iscale = F(F(-128) / max_scale)
    d16 = np.float16(F(1) / iscale)
    sc = [min(127, nearest_int(iscale * s)) for s in scales]
    for j in range(16):
        d = F(F(d16) * F(sc[j]))
        if not d:
            continue
        for ii in range(16):
            q = max(-32, min(31, nearest_int(F(x[16 * j + ii] / d))))
            L[16 * j + ii] = q + 32
    ql, qh = bytearray(128), bytearray(64)
    for half, j in enumerate((0, 128)):
        for lane in range(32):
            q1, q2, q3, q4 = (L[j + lane + k] for k in (0, 32, 64, 96))
            ql[64 * half + lane] = (q1 & 0xF) | ((q3 & 0xF) << 4)
            ql[64 * half + lane + 32] = (q2 & 0xF) | ((q4 & 0xF) << 4)
            qh[32 * half + lane] = (q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6)
    return bytes(ql) + bytes(qh) + np.array(sc, dtype=np.int8).tobytes() + d16.tobytes()


def _matrix() -> np.ndarray:
    rng = np.random.default_rng(7)
    w = (rng.standard_normal((3, 512)) * 0.05).astype(np.float32)
    w[0, 256:] = 0.0  # an all-zero super-block: every byte 0
    w[1, :16] = 0.0  # an all-zero sub-block inside a live super-block
    w[1, 300] = -0.9  # an outlier that sets its super-block's d
    w[2, 256:272] = np.arange(16, dtype=np.float32) * np.float32(0.01)  # a run of evenly spaced weights (ties)
    return w


def test_q6_k_bytes_are_the_references() -> None:
    w = _matrix()
    raw = quantize_q6_k(w)
    assert raw.dtype == np.uint8 and raw.shape == (3, 2 * 210)
    expected = b"".join(quantize_row_q6_k_ref(w[r, 256 * b : 256 * b + 256]) for r in range(3) for b in range(2))
    assert raw.tobytes() == expected
    assert not raw[0, 210:].any()  # the all-zero super-block


def test_q6_k_round_trips_through_gguf_py() -> None:
    w = _matrix()
    raw = quantize_q6_k(w)
    back = dequantize(raw, Q6_K)  # gguf-py's dequantizer, not kvsim's
    assert back.shape == w.shape
    ours = dequantize_blocks(torch.from_numpy(raw), "Q6_K", 3, 512).numpy()
    np.testing.assert_array_equal(ours, back)  # kvsim reads the blocks as gguf-py does, bit for bit
    # each weight within half a step of its sub-block (d · scale_j), or its clamp at the code range's end
    d = raw.reshape(6, 210)[:, 208:210].copy().view(np.float16).astype(np.float32)  # (6, 1)
    sc = raw.reshape(6, 210)[:, 192:208].copy().view(np.int8).astype(np.float32)  # (6, 16)
    step = np.abs(d * sc).reshape(3, 2, 16, 1)
    err = np.abs(back - w).reshape(3, 2, 16, 16)
    assert (err <= step * 0.5 + 1e-7).mean() > 0.99 and (err <= step * 1.5 + 1e-7).all()
    assert np.abs(back - w).max() < 0.06 * np.abs(w).max()


def test_the_head_type_is_llama_quantizes() -> None:
    assert head_kind(8, 256) == "Q8_0" and head_kind(8, 192) == "Q8_0"
    assert head_kind(4, 256) == "Q6_K" and head_kind(4, 2048) == "Q6_K"
    # rows that do not split into 256s fall back to Q8_0 (tensor_type_fallback): tiny 192, SmolLM2 576, Gemma 640
    assert {head_kind(4, n) for n in (192, 576, 640)} == {"Q8_0"}


@pytest.mark.parametrize("head", [True, False])
def test_a_w4_lane_on_a_256_wide_model_holds_a_q6_k_head(head: bool) -> None:
    loaded = load_model(WIDE)
    model = loaded.model
    qmodel = quantize_model(model, 4, 64, head=head)
    assert head_format(qmodel) == ("Q6_K" if head else "as loaded")
    assert weight_bytes(qmodel)["quantized"] == quantized_bytes(model, 4, 64, head=head)  # the plan = the copy
    if not head:
        return
    vocab, dim = model.cfg.vocab_size, model.cfg.dim
    assert qmodel.lm_head.raw.numel() == vocab * dim // 256 * 210 and isinstance(qmodel.tok_embeddings, BlockEmbedding)
    # the head's logits are the model's last hidden state times gguf-py's dequantized Q6_K matrix
    ids = torch.tensor([[3, 9, 27, 81]])
    hidden: dict[str, torch.Tensor] = {}

    def keep(mod, args, out) -> None:  # returns None: the head's output stays its own
        hidden["h"] = args[0].clone()

    qmodel.lm_head.register_forward_hook(keep)
    logits = qmodel(ids, torch.arange(4), KVCache(2)).logits
    table = torch.from_numpy(dequantize(qmodel.lm_head.raw.numpy(), Q6_K))
    torch.testing.assert_close(logits, hidden["h"] @ table.T, rtol=1e-5, atol=1e-5)
    # and the tied embedding's lookups read the same rows
    torch.testing.assert_close(qmodel.tok_embeddings(ids), table[ids])
    sim = Simulator(model, loaded.tokenizer, [3, 9, 27], parse_lanes("kv,kv@w4:g64,kv@w8"), warmup=False)
    heads = {lane["name"]: lane.get("weight_head") for lane in sim.trace.meta["lanes"]}
    assert heads == {"kv": None, "kv@w4:g64": "Q6_K", "kv@w8": "Q8_0"}
