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
from kvsim.models.gguf_blocks import BLOCK_BYTES, GGUFBlockLinear, dequantize_blocks  # noqa: E402
from kvsim.models.loading import load_model  # noqa: E402
from kvsim.models.quantized_weights import weight_bytes  # noqa: E402

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
