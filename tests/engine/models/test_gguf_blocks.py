"""A GGUF file's own blocks kept as they are (``kv@gguf``): kvsim's Q8_0/Q4_0/Q4_1 dequantization equals
``gguf.quants.dequantize`` bit for bit, the kept projections (Q/K rows un-permuted) equal the weights the
loader dequantizes once, the lane's logits are the full model's, and its bytes are the file's blocks."""

from __future__ import annotations

import numpy as np
import pytest
import torch

gguf = pytest.importorskip("gguf")
pytest.importorskip("transformers")

from test_gguf import hf_llama, write_gguf  # noqa: E402

from kvsim.caches import parse_lanes  # noqa: E402
from kvsim.core.sampling import SimulationError  # noqa: E402
from kvsim.engine.simulate import Simulator, summarize  # noqa: E402
from kvsim.models.gguf.blocks import BLOCK_BYTES, GGUFBlockLinear, dequantize_blocks  # noqa: E402
from kvsim.models.kernels.quantized_weights import weight_bytes  # noqa: E402
from kvsim.models.loading import load_model  # noqa: E402

KINDS = ["Q8_0", "Q4_0", "Q4_1"]


@pytest.mark.parametrize("kind", KINDS)
def test_block_dequantization_is_gguf_s(kind: str) -> None:
    qtype = getattr(gguf.GGMLQuantizationType, kind)
    rng = np.random.default_rng(1)
    w = (rng.standard_normal((12, 160)) * 0.2).astype(np.float32)
    w[2] = 0.0
    w[4, 3] = 3.0
    raw = gguf.quants.quantize(w, qtype)
    assert raw.shape == (12, 160 // 32 * BLOCK_BYTES[kind])
    ref = gguf.quants.dequantize(raw, qtype).astype(np.float32)
    got = dequantize_blocks(torch.from_numpy(np.ascontiguousarray(raw)), kind, 12, 160).numpy()
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("kind", KINDS)
def test_a_gguf_lane_keeps_the_files_blocks(kind: str, tmp_path) -> None:
    qtype = getattr(gguf.GGMLQuantizationType, kind)
    path = write_gguf(tmp_path / f"tiny-{kind}.gguf", hf_llama(), qtype=qtype)
    loaded = load_model(str(path))
    sim = Simulator(loaded.model, loaded.tokenizer, [5, 9, 40, 7, 7, 12], parse_lanes("kv,kv@gguf"))
    kept = sim.lanes[1].model
    blocks = [m for m in kept.modules() if isinstance(m, GGUFBlockLinear)]
    assert len(blocks) == 2 * 7 and all(b.kind == kind for b in blocks)
    # every kept projection dequantizes to exactly the weight the loader dequantized once (rows un-permuted)
    full = dict(loaded.model.named_modules())
    for name, module in kept.named_modules():
        if isinstance(module, GGUFBlockLinear):
            torch.testing.assert_close(module.dequantized(), full[name].weight.detach(), rtol=0, atol=0)
    # the bytes are the file's blocks
    reader = gguf.GGUFReader(str(path))
    file_bytes = sum(int(t.n_bytes) for t in reader.tensors if t.name.startswith("blk.") and len(t.shape) == 2)
    assert sum(b.stored_bytes for b in blocks) == file_bytes
    assert weight_bytes(kept)["quantized"] == file_bytes
    records = list(sim.run(6, stop_at_eos=False))
    summary = summarize(sim.trace)["lanes"]["kv@gguf"]
    assert summary["tokens_identical"] and summary["max_abs_logit_diff"] < 1e-4
    assert sim.trace.meta["lanes"][1]["weights"] == "gguf"
    assert records[-1].lane("kv@gguf").bytes_by_component["weights"] < records[-1].lane("kv").bytes_by_component["weights"]


def test_gguf_suffix_on_a_model_not_from_gguf_is_one_clear_error() -> None:
    loaded = load_model("random:family=llama,layers=2,heads=4,kv_heads=2,dim=64,vocab=300,ctx=64,seed=1")
    with pytest.raises(SimulationError, match="not loaded from one"):
        Simulator(loaded.model, loaded.tokenizer, [1, 2, 3], parse_lanes("kv,kv@gguf"))


@pytest.mark.slow
def test_smollm2_speculation_and_its_own_blocks() -> None:
    """Opt-in (KVSIM_SMOLLM2=1): on SmolLM2-135M, greedy prompt-lookup speculation and the lane on the
    file's own Q4_1 blocks both choose exactly the kv lane's tokens; lookup is accepted on a copying prompt."""
    from helpers import opt_in_model_file

    path = opt_in_model_file("KVSIM_SMOLLM2", "smollm2-135m", "run SmolLM2's own blocks and speculation")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        loaded = load_model(str(path))
        tok = loaded.tokenizer
        ids = tok.encode("The cat sat on the mat. The dog sat on the log. The cat sat on the mat. The dog")
        sim = Simulator(loaded.model, tok, ids, parse_lanes("kv,spec:4:lookup,kv@gguf"), free_running=True)
        records = list(sim.run(12, stop_at_eos=False))
        kv, spec, blocks = sim.lane_tokens
        assert spec == kv and blocks == kv
        assert sum(r.lane("spec:4:lookup").accepted for r in records) > 0
    finally:
        torch.set_num_threads(before)


# ------------------------------------------------------------------ K-quants and Q5 (Gemma 3's Q4_K_M file mixes them)
NEW_KINDS = ["Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q6_K"]


def _random_blocks(kind: str, out: int, nb: int, seed: int) -> np.ndarray:
    """Random blocks of ``kind`` (gguf has no quantizer for the K-quants: every byte pattern is a valid block,
    only its fp16 fields are set to finite values, some of them subnormal)."""
    from kvsim.models.gguf.blocks import BLOCK_BYTES

    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, size=(out, nb, BLOCK_BYTES[kind]), dtype=np.uint8)

    def f16() -> np.ndarray:
        x = (rng.standard_normal((out, nb)) * 0.02).astype(np.float16)
        x[0, 0] = np.float16(3e-6)  # subnormal in fp16
        return x.view(np.uint8).reshape(out, nb, 2)

    fields = {"Q6_K": (208,), "Q4_K": (0, 2), "Q5_K": (0, 2), "Q5_1": (0, 2), "Q5_0": (0,)}[kind]
    for at in fields:
        raw[..., at : at + 2] = f16()
    return raw.reshape(out, -1)


@pytest.mark.parametrize("kind", NEW_KINDS)
def test_k_quant_and_q5_dequantization_is_gguf_s_bit_for_bit(kind: str) -> None:
    from kvsim.models.gguf.blocks import BLOCK_WEIGHTS

    qtype = getattr(gguf.GGMLQuantizationType, kind)
    out, nb = 7, 3
    raw = _random_blocks(kind, out, nb, seed=len(kind) + NEW_KINDS.index(kind))
    assert gguf.GGML_QUANT_SIZES[qtype] == (BLOCK_WEIGHTS[kind], BLOCK_BYTES[kind])  # the format table agrees
    ref = gguf.quants.dequantize(raw, qtype).astype(np.float32)
    got = dequantize_blocks(torch.from_numpy(raw.copy()), kind, out, nb * BLOCK_WEIGHTS[kind]).numpy()
    assert got.shape == ref.shape == (out, nb * BLOCK_WEIGHTS[kind])
    np.testing.assert_array_equal(got.view(np.uint32), ref.view(np.uint32))  # the same bits, not only close


def test_a_q4_k_weight_spelled_out_from_the_format() -> None:
    """One Q4_K super-block decoded by hand from ggml's layout (independent of both implementations):
    scale/min 6-bit packing, and the nibble order (32 low nibbles, then the same 32 bytes' high ones)."""
    raw = _random_blocks("Q4_K", 1, 1, seed=5)[0]
    d = float(raw[0:2].view(np.float16)[0])
    dmin = float(raw[2:4].view(np.float16)[0])
    sc_bytes, qs = raw[4:16], raw[16:144]

    def scale_min(j: int) -> tuple[int, int]:  # ggml's get_scale_min_k4
        if j < 4:
            return int(sc_bytes[j] & 63), int(sc_bytes[j + 4] & 63)
        return (
            int((sc_bytes[j + 4] & 0xF) | ((sc_bytes[j - 4] >> 6) << 4)),
            int((sc_bytes[j + 4] >> 4) | ((sc_bytes[j] >> 6) << 4)),
        )

    want = np.zeros(256, dtype=np.float32)
    for chunk in range(4):  # 64 weights per 32 bytes
        for half in range(2):
            sc, m = scale_min(2 * chunk + half)
            d1, m1 = np.float32(d) * np.float32(sc), np.float32(dmin) * np.float32(m)
            for i in range(32):
                byte = int(qs[32 * chunk + i])
                q = (byte & 0xF) if half == 0 else (byte >> 4)
                want[64 * chunk + 32 * half + i] = d1 * np.float32(q) - m1
    got = dequantize_blocks(torch.from_numpy(raw.reshape(1, -1).copy()), "Q4_K", 1, 256).numpy()[0]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("kind", NEW_KINDS)
def test_a_gguf_lane_keeps_k_quant_and_q5_blocks(kind: str, tmp_path, monkeypatch) -> None:
    """A file whose 2-D weights are ``kind`` blocks (random blocks: gguf cannot quantize to the K-quants;
    the model is then whatever those blocks say): the lane keeps each projection as it is in the file —
    its bytes — and its weights are exactly the ones the loader dequantizes with gguf; the lane runs the
    loaded model's tokens and logits."""
    import test_gguf

    from kvsim.models.gguf.blocks import BLOCK_WEIGHTS

    monkeypatch.setattr(test_gguf, "DIM", 256)  # rows of 256 weights: whole K-quant super-blocks
    monkeypatch.setattr(test_gguf, "FFN", 512)
    qtype = getattr(gguf.GGMLQuantizationType, kind)
    calls = iter(range(10_000))

    def fake_quantize(t: np.ndarray, q) -> np.ndarray:  # random blocks of t's shape, small scales
        assert q == qtype
        raw = _random_blocks(kind, t.shape[0], t.shape[1] // BLOCK_WEIGHTS[kind], seed=next(calls))
        return raw

    monkeypatch.setattr(gguf.quants, "quantize", fake_quantize)
    path = test_gguf.write_gguf(tmp_path / f"tiny-{kind}.gguf", test_gguf.hf_llama(), qtype=qtype)
    loaded = load_model(str(path))
    sim = Simulator(loaded.model, loaded.tokenizer, [5, 9, 40, 7, 7, 12], parse_lanes("kv,kv@gguf"))
    kept = sim.lanes[1].model
    blocks = {name: m for name, m in kept.named_modules() if isinstance(m, GGUFBlockLinear)}
    assert len(blocks) == 2 * 7 and {b.kind for b in blocks.values()} == {kind}
    full = dict(loaded.model.named_modules())
    for name, module in blocks.items():
        torch.testing.assert_close(module.dequantized(), full[name].weight.detach(), rtol=0, atol=0)
    reader = gguf.GGUFReader(str(path))
    file_bytes = sum(int(t.n_bytes) for t in reader.tensors if t.name.startswith("blk.") and len(t.shape) == 2)
    assert sum(b.stored_bytes for b in blocks.values()) == file_bytes == weight_bytes(kept)["quantized"]
    list(sim.run(4, stop_at_eos=False))
    summary = summarize(sim.trace)["lanes"]["kv@gguf"]
    # random blocks make large logits: the float rounding of another summation order is relative to them
    from kvsim.caches import KVCache

    with torch.no_grad():
        out = loaded.model(torch.tensor([[5, 9, 40, 7, 7, 12]]), torch.arange(6), KVCache(2), last_only=True)
    scale = float(out.logits.abs().max())
    assert summary["tokens_identical"] and summary["max_abs_logit_diff"] <= 1e-4 * max(1.0, scale)


@pytest.mark.slow
def test_gemma3_files_blocks_kept_as_they_are() -> None:
    """Opt-in (KVSIM_GEMMA3=1): every projection of Gemma 3 270M's Q4_K_M file (Q5_0, Q4_K, Q6_K, Q8_0) is
    kept as its file's bytes and dequantizes to gguf's own values bit for bit."""
    from helpers import opt_in_model_file

    from kvsim.models.gguf.blocks import BLOCK_WEIGHTS, keep_gguf_blocks

    path = opt_in_model_file("KVSIM_GEMMA3", "gemma3-270m", "keep Gemma 3's own K-quant blocks")
    reader = gguf.GGUFReader(str(path))
    kinds: dict[str, int] = {}
    for t in reader.tensors:
        if not t.name.startswith("blk.") or len(t.shape) != 2:
            continue
        kind = t.tensor_type.name
        assert kind in BLOCK_BYTES, f"{t.name}: {kind} is not kept"
        out_f, in_f = (int(n) for n in reversed(t.shape))
        raw = np.asarray(t.data, dtype=np.uint8).reshape(out_f, -1)
        ref = gguf.quants.dequantize(raw, t.tensor_type).astype(np.float32)
        got = dequantize_blocks(torch.from_numpy(raw.copy()), kind, out_f, in_f).numpy()
        np.testing.assert_array_equal(got.view(np.uint32), ref.view(np.uint32), err_msg=t.name)
        assert in_f % BLOCK_WEIGHTS[kind] == 0
        kinds[kind] = kinds.get(kind, 0) + int(t.n_bytes)
    assert {"Q4_K", "Q6_K"} <= set(kinds)
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        loaded = load_model(str(path))
        kept, types = keep_gguf_blocks(loaded.model, path)
        assert set(types) == set(kinds)
        blocks = [m for m in kept.modules() if isinstance(m, GGUFBlockLinear)]
        assert sum(b.stored_bytes for b in blocks) == sum(kinds.values())  # the lane's bytes: the file's blocks
        ids = loaded.tokenizer.encode("The key-value cache is a technique that")
        sim = Simulator(loaded.model, loaded.tokenizer, ids, parse_lanes("kv,kv@gguf"))
        list(sim.run(4, stop_at_eos=False))
        summary = summarize(sim.trace)["lanes"]["kv@gguf"]
        assert summary["tokens_identical"] and summary["max_abs_logit_diff"] < 1e-3
    finally:
        torch.set_num_threads(before)
