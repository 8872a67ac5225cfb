"""The decode speed paths against their plain references (issue 24):

* the fused RMSNorm (``F.rms_norm``) against the norm written out, for Llama's and Gemma's forms;
* the RoPE table against ``rope_cos_sin`` computed afresh for the same positions;
* a whole cached decode of the optimised model against an independent float64 recomputation of the
  same weights with every step's full prefix (no cache), the greedy tokens identical;
* ``@bf16``: the lane's weights really bfloat16, its bytes half, and the divergence the run reports
  (max |Δlogit|, the first step whose greedy choice differs) equal to the one recomputed here from a
  bfloat16 copy and the fp32 model; refused with one clear line where the CPU lacks the instructions.
"""

from __future__ import annotations

import json

import pytest
import torch

from kvsim.caches import KVCache, NoCache, parse_lanes
from kvsim.caches.weights import parse_weights, weights_label
from kvsim.cli.entry import main
from kvsim.core.sampling import Sampling
from kvsim.engine.simulate import RunSummary, Simulator
from kvsim.models import precision
from kvsim.models.loading import load_model
from kvsim.models.transformer import (
    GemmaRMSNorm,
    RMSNorm,
    RopeRows,
    RopeTables,
    apply_rope,
    apply_rope_signed,
    rms_norm_reference,
    rope_cos_sin,
)
from tests.helpers import FAMILY_SPECS

GEMMA = "random:family=gemma3,layers=4,heads=4,kv_heads=1,dim=64,vocab=300,ctx=512,window=4,global_every=2,seed=5"


@pytest.mark.parametrize("cls", [RMSNorm, GemmaRMSNorm])
def test_fused_rms_norm_equals_the_written_out_norm(cls) -> None:
    torch.manual_seed(0)
    norm = cls(48, 1e-6)
    with torch.no_grad():
        norm.weight.copy_(torch.randn(48) * 0.3)
    x = torch.randn(2, 5, 48) * 3
    scale = 1.0 + norm.weight if cls is GemmaRMSNorm else norm.weight
    want = rms_norm_reference(x, 1e-6) * scale
    torch.testing.assert_close(norm(x), want, rtol=1e-6, atol=1e-6)
    # bfloat16 input: statistics in float32, the result in bfloat16, within one bfloat16 rounding
    got = norm.to(torch.bfloat16)(x.to(torch.bfloat16))
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.float(), want, rtol=2e-2, atol=2e-2)


def test_gemma_norm_scale_follows_its_weight() -> None:
    """Gemma's 1 + weight is kept between calls; an in-place edit, a new tensor or a dtype change is seen."""
    norm = GemmaRMSNorm(16, 1e-6)
    x = torch.randn(3, 16)
    first = norm(x)
    torch.testing.assert_close(first, rms_norm_reference(x, 1e-6))
    with torch.no_grad():
        norm.weight.copy_(torch.full((16,), 0.5))  # in place: the version counter moves
    torch.testing.assert_close(norm(x), rms_norm_reference(x, 1e-6) * 1.5)
    norm.weight = torch.nn.Parameter(torch.full((16,), -0.5))  # a new tensor
    torch.testing.assert_close(norm(x), rms_norm_reference(x, 1e-6) * 0.5)
    norm.load_state_dict({"weight": torch.zeros(16)})
    torch.testing.assert_close(norm(x), first)


def test_rope_table_rows_are_the_fresh_rows() -> None:
    tables = RopeTables()
    for positions in (torch.tensor([0]), torch.tensor([5]), torch.arange(0, 70), torch.tensor([200]), torch.tensor([3, 9, 1])):
        got = tables(positions, 64, 10000.0, torch.float32)
        want = rope_cos_sin(positions, 64, 10000.0, torch.float32)
        torch.testing.assert_close(got[0], want[0], rtol=0, atol=1e-6)
        torch.testing.assert_close(got[1], want[1], rtol=0, atol=1e-6)
    assert next(iter(tables._tables.values()))[0].shape[0] >= 201  # grew past the largest position asked


def test_the_signed_rotation_is_apply_rope_bit_for_bit() -> None:
    torch.manual_seed(4)
    rows = RopeTables()(torch.tensor([3, 40, 41]), 32, 10000.0, torch.float32)
    assert isinstance(rows, RopeRows) and len(rows) == 2  # still (cos, sin) for apply_rope(x, *rows)
    x = torch.randn(2, 5, 3, 32) * 4
    assert torch.equal(apply_rope_signed(x, rows[0], rows.signed), apply_rope(x, *rows))


@pytest.mark.parametrize("spec", [FAMILY_SPECS["llama-gqa"], FAMILY_SPECS["llama-mha-tied-bias"], GEMMA])
@pytest.mark.parametrize("t", [1, 6])
def test_projections_with_the_table_rows_equal_the_plain_rotation(spec: str, t: int) -> None:
    """q and k rotated together (no QK-norm) or one by one with the signed table equal the plain ``apply_rope``
    path of the same layer exactly, for a decode row and a prefill."""
    model = load_model(spec).model
    cfg = model.cfg
    x = torch.randn(1, t, cfg.dim, generator=torch.Generator().manual_seed(t))
    rows = model.rope_tables(torch.arange(7, 7 + t), cfg.rope_head_dim, cfg.rope_theta_of(0), torch.float32)
    attn = model.layers[0].attn
    assert attn.fused_qkv is not None  # the decode-friendly layout, as a lane runs it
    for got, want in zip(attn.project(x, rows), attn.project(x, (rows[0], rows[1])), strict=True):
        assert got.shape == want.shape and torch.equal(got, want)


@pytest.mark.parametrize("spec", [FAMILY_SPECS["llama-gqa"], GEMMA])
def test_the_fused_gate_and_up_are_the_two_projections(spec: str) -> None:
    """The MLP's one gate+up matmul gives the two projections' values; once the Parameters are converted in place
    (``.to(float64)``) or a projection is replaced (a quantized lane), the stale fused weight is not used."""
    model = load_model(spec).model
    mlp = model.layers[0].mlp
    assert mlp.fused_gate_up is not None and mlp.w_gate.weight.data_ptr() == mlp.fused_gate_up.weight.data_ptr()
    x = torch.randn(1, 1, model.cfg.dim, generator=torch.Generator().manual_seed(8))
    gate, up = mlp._gate_up(x)
    torch.testing.assert_close(gate, torch.nn.functional.linear(x, mlp.w_gate.weight.contiguous()), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(up, torch.nn.functional.linear(x, mlp.w_up.weight.contiguous()), rtol=1e-5, atol=1e-5)
    mlp.to(torch.float64)
    gate64, up64 = mlp._gate_up(x.double())
    assert gate64.dtype == up64.dtype == torch.float64  # the float32 fused weight would have failed or cast
    torch.testing.assert_close(gate64, gate.double(), rtol=1e-5, atol=1e-5)
    halved = torch.nn.Linear(model.cfg.dim, mlp.w_up.out_features, bias=False, dtype=torch.float64)
    with torch.no_grad():
        halved.weight.copy_(mlp.w_up.weight * 0.5)
    mlp.w_up = halved  # what a weight lane does to its modules
    torch.testing.assert_close(mlp._gate_up(x.double())[1], up64 * 0.5)


def _float64_logits(model, tokens: list[int]) -> torch.Tensor:
    """The last position's logits of the whole prefix, the model converted to float64, no cache."""
    import copy

    m64 = copy.deepcopy(model).double()
    for block in m64.layers:
        block.attn.fused_qkv = None  # the fused copy is float32: use the converted per-projection weights
    ids = torch.tensor([tokens])
    return m64(ids, torch.arange(len(tokens)), NoCache(model.cfg.n_layers), last_only=True).logits[0, -1]


@pytest.mark.parametrize("spec", [FAMILY_SPECS["llama-gqa"], FAMILY_SPECS["gpt2"], GEMMA])
def test_cached_decode_matches_a_float64_recompute(spec) -> None:
    model = load_model(spec).model
    cfg = model.cfg
    tokens = [3, 17, 42, 9, 100]
    cache = KVCache(cfg.n_layers, layer_windows=cfg.layer_windows)
    out = model(torch.tensor([tokens]), torch.arange(len(tokens)), cache, last_only=True)
    worst = 0.0
    for _ in range(8):
        logits = out.logits[0, -1]
        ref = _float64_logits(model, tokens)
        worst = max(worst, float((logits.double() - ref).abs().max()))
        assert int(logits.argmax()) == int(ref.argmax())
        tokens.append(int(logits.argmax()))
        out = model(torch.tensor([[tokens[-1]]]), torch.tensor([len(tokens) - 1]), cache, last_only=True)
    assert worst < 1e-3, worst  # fp32 rounding of a two- to four-layer model: ~1e-5 measured


def test_bf16_suffix_parses() -> None:
    assert parse_weights("bf16") == {"format": "bf16"}
    assert weights_label(parse_weights("BF16")) == "bf16"


@pytest.mark.skipif(not precision.bf16_supported(torch.device("cpu")), reason="this CPU has no bfloat16 instructions")
def test_bf16_lane_reports_its_divergence_from_fp32() -> None:
    loaded = load_model(FAMILY_SPECS["llama-gqa"])
    model, steps, prompt = loaded.model, 10, [5, 6, 7, 8]
    sim = Simulator(model, loaded.tokenizer, prompt, parse_lanes("kv,kv@bf16"), Sampling())
    running = RunSummary()
    for record in sim.run(steps, stop_at_eos=False):
        running.add(record)
    lane = sim.lanes[1]
    assert all(p.dtype == torch.bfloat16 for p in lane.model.parameters())
    assert model.dtype == torch.float32  # the model itself untouched
    assert lane.weight_bytes["total"] * 2 == sim.lanes[0].weight_bytes["total"]
    summary = running.as_dict()["lanes"]["kv@bf16"]
    # recompute independently: the bf16 copy and the fp32 model on the reference's tokens, no cache
    m16 = precision.bf16_model(model)
    worst, first = 0.0, None
    for step in range(steps):
        tokens = sim.tokens[: len(prompt) + step]
        ids = torch.tensor([tokens])
        pos = torch.arange(len(tokens))
        ref = model(ids, pos, NoCache(model.cfg.n_layers), last_only=True).logits[0, -1]
        got = m16(ids, pos, NoCache(model.cfg.n_layers), last_only=True).logits[0, -1].float()
        worst = max(worst, float((got - ref).abs().max()))
        if first is None and int(got.argmax()) != int(ref.argmax()):
            first = step
    assert summary["max_abs_logit_diff"] > 0  # bfloat16 is not silently fp32
    assert summary["max_abs_logit_diff"] == pytest.approx(worst, rel=0.05, abs=1e-3)
    assert summary["first_divergent_step"] == first


def test_a_tied_head_is_column_major_in_fp32_and_row_major_in_bf16() -> None:
    """fp32: the LM head streams fastest column-major (numpy's kernel, MKL too); bf16: row-major (torch's one-row
    bf16 product). Either way the head is still the embedding table, and the bf16 copy's values are the fp32 ones."""
    if not precision.bf16_supported(torch.device("cpu")):
        pytest.skip("no bfloat16 instructions on this CPU")
    model = load_model(FAMILY_SPECS["llama-mha-tied-bias"]).model
    head = model.lm_head.weight
    assert head is model.tok_embeddings.weight
    # column-major for the BLAS kernels; row-major when laid out for numba (KVSIM_ROW_MATMUL=numba)
    assert head.is_contiguous() if model.one_row_kernel == "numba" else head.stride() == (1, head.shape[0])
    half = precision.bf16_model(model)
    head16 = half.lm_head.weight
    assert head16 is half.tok_embeddings.weight and head16.dtype == torch.bfloat16 and head16.is_contiguous()
    assert torch.equal(head16, head.to(torch.bfloat16))


def test_bf16_refused_where_the_cpu_lacks_it(monkeypatch, capsys) -> None:
    monkeypatch.setattr(precision, "bf16_supported", lambda device: False)
    with pytest.raises(ValueError, match="bfloat16 instructions"):
        precision.bf16_model(load_model(FAMILY_SPECS["llama-gqa"]).model)
    code = main(["run", "--model", FAMILY_SPECS["llama-gqa"], "--prompt-ids", "3,4", "--steps", "2", "--lanes", "kv,kv@bf16"])
    err = capsys.readouterr().err
    assert code == 2 and "bfloat16 instructions" in err and "Traceback" not in err


@pytest.mark.skipif(not precision.bf16_supported(torch.device("cpu")), reason="this CPU has no bfloat16 instructions")
def test_bf16_lane_in_the_cli_json(capsys) -> None:
    args = ["run", "--model", FAMILY_SPECS["llama-gqa"], "--prompt-ids", "3,4,5", "--steps", "4"]
    args += ["--lanes", "kv,kv@bf16", "--json"]
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out.splitlines()[-1])["summary"]["lanes"]["kv@bf16"]
    assert summary["weights"] == "bf16" and summary["max_abs_logit_diff"] > 0
    assert "first_divergent_step" in summary
