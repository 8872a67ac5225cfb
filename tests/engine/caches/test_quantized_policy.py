"""The quantized KV cache (``int8``, ``int4[:gG][:rR]``, KIVI-style) against an independent reference:
a plain numpy group quantizer written here (keys per channel over G tokens, values per token over
groups of channels), byte counts from the closed formula, the CLI, an exact undo of a cancelled step,
and the app drawing the lane's dequantized rows."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest
import torch
from helpers import ready_window

from kvsim.caches import KVCache, SpecError, make_cache, parse_spec
from kvsim.cli.entry import main
from kvsim.engine.simulate import Simulator
from kvsim.engine.trace import Trace
from kvsim.models.loading import load_model

MODEL = "random:family=llama,layers=2,heads=4,kv_heads=2,dim=64,seed=3"  # head dim 16


# ---------------------------------------------------------------------- the reference (numpy, by the book)
def ref_quantize(x: np.ndarray, axis: int, bits: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Asymmetric min/max quantization, statistics over ``axis``: (dequantized, scale, codes), float32."""
    levels = np.float32(2**bits - 1)
    x = x.astype(np.float32)
    lo = x.min(axis=axis, keepdims=True)
    scale = (x.max(axis=axis, keepdims=True) - lo) / levels
    safe = np.where(scale > 0, scale, np.float32(1))
    codes = np.clip(np.round((x - lo) / safe), 0, levels).astype(np.float32)
    return codes * scale + lo, scale, codes


def ref_rows(k: np.ndarray, v: np.ndarray, q: int, group: int, bits: int):
    """What a KIVI cache reads for rows (…, S, D) when the first ``q`` are quantized: (k̂, v̂, k_scale, v_scale),
    the scales broadcast to every element they serve."""
    k_hat, v_hat = k.astype(np.float32).copy(), v.astype(np.float32).copy()
    k_step, v_step = np.zeros_like(k_hat), np.zeros_like(v_hat)
    d = k.shape[-1]
    vg = math.gcd(group, d)
    for a in range(0, q, group):
        kq, ks, _ = ref_quantize(k[..., a : a + group, :], -2, bits)  # per channel, over the group's tokens
        k_hat[..., a : a + group, :], k_step[..., a : a + group, :] = kq, ks
        for c in range(0, d, vg):  # per token, over each group of vg channels
            vq, vs, _ = ref_quantize(v[..., a : a + group, c : c + vg], -1, bits)
            v_hat[..., a : a + group, c : c + vg], v_step[..., a : a + group, c : c + vg] = vq, vs
    return k_hat, v_hat, k_step, v_step


def quantized_rows_after(m: int, group: int, residual: int) -> int:
    """Rows held quantized after an update that began with ``m`` rows: every whole group of G beyond the last R."""
    return group * (max(0, m - residual) // group)


def drive(spec: str, lengths: list[int], d: int = 12, heads: int = 2, layers: int = 2, seed: int = 0):
    """A cache fed chunks of random rows: yields (cache, exact k, exact v, rows held before, returned k, v)."""
    gen = torch.Generator().manual_seed(seed)
    cache = make_cache(spec, layers)
    ks = [torch.zeros(1, heads, 0, d)] * layers
    vs = [torch.zeros(1, heads, 0, d)] * layers
    for t in lengths:
        m = cache.n_tokens
        out = []
        for layer in range(layers):
            k_new = torch.randn(1, heads, t, d, generator=gen) * 3 + torch.arange(d) * 0.5  # channel offsets
            v_new = torch.randn(1, heads, t, d, generator=gen)
            ks[layer], vs[layer] = torch.cat([ks[layer], k_new], 2), torch.cat([vs[layer], v_new], 2)
            out.append(cache.update(layer, k_new, v_new, torch.arange(m, m + t)))
        yield cache, ks, vs, m, out


# ---------------------------------------------------------------------- 1. the rows attention reads
@pytest.mark.parametrize(
    "spec,bits,group,residual", [("int8", 8, 32, 32), ("int4:g8:r4", 4, 8, 4), ("int4:g4:r0", 4, 4, 0), ("int8:g16:r8", 8, 16, 8)]
)
def test_rows_match_an_independent_quantizer(spec, bits, group, residual):
    lengths = [11] + [1] * (3 * group + residual + 5)  # a prefill, then decode steps
    seen_quantized = False
    for cache, ks, vs, m, out in drive(spec, lengths):
        q = quantized_rows_after(m, group, residual)
        for layer in range(2):
            k_held, v_held, pos = cache.held_rows(layer)
            assert torch.equal(out[layer][0], k_held) and torch.equal(out[layer][1], v_held)  # what attention read
            n = ks[layer].shape[2]
            assert torch.equal(pos, torch.arange(n)) and torch.equal(cache.key_positions(layer), torch.arange(n))
            k, v = ks[layer].numpy(), vs[layer].numpy()
            k_hat, v_hat, k_step, v_step = ref_rows(k, v, q, group, bits)
            got_k, got_v = k_held.numpy(), v_held.numpy()
            # every element within half a step of the exact value
            assert (np.abs(got_k - k) <= k_step / 2 + 1e-5).all() and (np.abs(got_v - v) <= v_step / 2 + 1e-5).all()
            # the same arithmetic (fp32 statistics, no fused multiply-add): the same numbers
            np.testing.assert_array_equal(got_k, k_hat)
            np.testing.assert_array_equal(got_v, v_hat)
            # the residual is the exact rows, bit for bit; the quantized rows are not
            assert torch.equal(k_held[:, :, q:], ks[layer][:, :, q:]) and torch.equal(v_held[:, :, q:], vs[layer][:, :, q:])
            if q:
                seen_quantized = True
                assert not torch.equal(k_held[:, :, :q], ks[layer][:, :, :q])
                # codes use the whole range: a group's minimum and maximum are codes 0 and 2^b - 1, exactly
                assert np.allclose(got_k[..., :group, :].min(-2), k[..., :group, :].min(-2), atol=1e-6)
    assert seen_quantized


def test_int4_codes_are_packed_two_per_byte_and_fit():
    cache = list(drive("int4:g4:r0", [9, 1]))[-1][0]  # 9 rows held, then one more: 8 rows quantized
    st = cache._layers[0]
    assert st.q == 8 and st.k_codes.dtype == torch.uint8 and st.k_codes.shape == (1, 2, 8, 6)  # D = 12 → 6 bytes
    nibbles = torch.stack((st.k_codes & 15, st.k_codes >> 4), -1)
    assert int(nibbles.max()) == 15 and int(nibbles.min()) == 0  # a group's extremes are codes 15 and 0


def test_the_spec_grammar():
    assert parse_spec("int4").options == {} and parse_spec("INT4:g32:r16").options == {"group": 32, "residual": 16}
    assert parse_spec("int8:r0:g64").options == {"group": 64, "residual": 0}
    info = make_cache("int4:g32:r16", 2).describe()
    assert info.title == "INT4 cache (g32, r16)" and info.lossy and not info.evicts and info.reuses_past
    assert "keys per channel" in info.explanation and "last 16 tokens" in info.explanation
    assert make_cache("int8", 2).describe().spec == "int8:g32:r32"  # the defaults, named
    for bad in ("int4:x3", "int4:g", "int4:g0", "int4:g32:g16", "int4:r-1", "int4:g99999999"):
        with pytest.raises(SpecError):
            parse_spec(bad)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_a_half_precision_model_keeps_half_precision_statistics(dtype):
    """Scales and zero points in the model's 2-byte dtype, rounded outward so the group still fits."""
    gen = torch.Generator().manual_seed(1)
    k, v = (torch.randn(1, 2, 20, 16, generator=gen) * 5).to(dtype), torch.randn(1, 2, 20, 16, generator=gen).to(dtype)
    cache = make_cache("int4:g8:r0", 1)
    cache.update(0, k[:, :, :17], v[:, :, :17], torch.arange(17))
    cache.update(0, k[:, :, 17:], v[:, :, 17:], torch.arange(17, 20))  # began with 17 rows: 16 quantized
    st = cache._layers[0]
    assert st.q == 16 and st.k_scale.dtype == st.k_zero.dtype == st.v_scale.dtype == dtype
    kf = k[:, :, :16].float().reshape(1, 2, 2, 8, 16)  # (…, group, token in group, channel)
    zero, scale = st.k_zero.float()[:, :, :, None], st.k_scale.float()[:, :, :, None]
    assert (zero <= kf.amin(3, keepdim=True)).all() and (zero + 15 * scale >= kf.amax(3, keepdim=True)).all()
    k_held = cache.held_rows(0)[0][:, :, :16].float().reshape(kf.shape)
    half_ulp = k_held.abs() * torch.finfo(dtype).eps / 2  # the rows attention reads are in the model's dtype too
    assert ((k_held - kf).abs() <= scale / 2 + half_ulp + 1e-6).all()
    es = 2
    assert cache.bytes_split() == (
        2 * 2 * 16 * 8 + 2 * 2 * 4 * 16 * es,  # codes (2 per byte) + 4 residual rows
        2 * (2 * 2 * 16 + 2 * 16 * 2) * es,
    )  # K: 2 groups × 16 ch; V: 16 tokens × 2 groups
    assert cache.nbytes == sum(t.nbytes for t in cache.stored_tensors())


# ---------------------------------------------------------------------- 2. bytes
@pytest.mark.parametrize("spec,bits,group,residual", [("int8:g8:r8", 8, 8, 8), ("int4:g8:r8", 4, 8, 8), ("int4:g4:r0", 4, 4, 0)])
def test_bytes_are_the_tensors_held_and_the_formula(spec, bits, group, residual):
    d, heads, layers, es = 12, 2, 2, 4  # fp32 rows, fp32 scales and zero points (the model's dtype)
    checked = set()
    for cache, _, _, m, _ in drive(spec, [3] + [1] * (4 * group + residual), d=d, heads=heads, layers=layers):
        n = cache.n_tokens
        q = quantized_rows_after(m, group, residual)
        assert cache._layers[0].q == q
        codes = 2 * q * math.ceil(d * bits / 8)  # K and V codes, int4 two per byte
        stats = 2 * (q // group) * d + 2 * q * (d // math.gcd(group, d))  # K: per channel per group; V: per token per group
        rows = 2 * (n - q) * d * es  # the residual at full precision
        payload, overhead = cache.bytes_split()
        assert payload == layers * heads * (codes + rows) and overhead == layers * heads * stats * es
        assert cache.nbytes == sum(t.nbytes for t in cache.stored_tensors())
        if q == 0:
            assert cache.nbytes == 2 * layers * heads * n * d * es  # nothing quantized yet: what a KV cache holds
            checked.add("before")
        elif m == residual + group:
            checked.add("at the boundary")  # the first update after the residual held R + G rows
        elif q > group:
            checked.add("after")
            assert cache.nbytes < 2 * layers * heads * n * d * es
    assert checked == {"before", "at the boundary", "after"}


# ---------------------------------------------------------------------- 3. the CLI
def test_the_cli_runs_int8_and_int4_lanes(capsys, tmp_path):
    path = tmp_path / "q.kvsim"
    prompt = ",".join(str(i) for i in range(5, 45))  # 40 tokens
    code = main(
        [
            "run",
            "--model",
            MODEL,
            "--prompt-ids",
            prompt,
            "--steps",
            "60",
            "--lanes",
            "kv,int8,int4:g32:r16",
            "--json",
            "--save",
            str(path),
        ]
    )
    lines = capsys.readouterr().out.strip().splitlines()
    assert code == 0
    steps = [json.loads(line) for line in lines[:-1]]
    diffs = {lane: [s[lane]["logit_diff"] for s in steps] for lane in ("int8", "int4:g32:r16")}
    # measured on this model: int8 max 0.0055 (mean 0.0016), int4 max 0.10 (mean 0.048); the bound leaves 9× margin
    assert max(diffs["int8"]) < 0.05
    assert np.mean(diffs["int4:g32:r16"]) > 2 * np.mean(diffs["int8"]) > 0
    assert steps[0]["int8"]["logit_diff"] == 0  # the prefill reads its own rows in full precision
    for s in steps:
        n = s["positions"][1] + 1
        kv, i8, i4 = (s[lane]["cache_bytes"] for lane in ("kv", "int8", "int4:g32:r16"))
        assert s["int8"]["cache_tokens"] == s["int4:g32:r16"]["cache_tokens"] == n
        m = n - s["int8"]["kv_positions"]
        if quantized_rows_after(m, 32, 32):  # both hold quantized groups
            assert i4 < i8 < kv
        elif quantized_rows_after(m, 32, 16):
            assert i4 < i8 == kv
        else:
            assert i4 == i8 == kv
    assert steps[-1]["int4:g32:r16"]["cache_bytes"] < steps[-1]["int8"]["cache_bytes"] < steps[-1]["kv"]["cache_bytes"]
    # the trace records the lane's own rows only when they change: each position once when new, once when quantized
    trace = Trace.load(path)
    lane = [r.lanes[2] for r in trace.records]
    recorded = sum(ls.rows.positions.size for ls in lane if ls.rows is not None)
    n_final = steps[-1]["positions"][1] + 1
    q_final = quantized_rows_after(n_final - 1, 32, 16)
    assert recorded == n_final + q_final <= 2 * n_final + 32
    for r, ls in zip(trace.records, lane, strict=True):
        new = np.isin(ls.rows.positions, r.positions)
        assert new.sum() == r.positions.size
        # layer 0's new rows depend on the token only: the exact ones; deeper layers read quantized rows below
        np.testing.assert_array_equal(ls.rows.k[0][:, new], r.k[0])
        if quantized_rows_after(int(r.positions[0]), 32, 16):  # once it holds quantized rows
            assert not np.array_equal(ls.rows.k[-1][:, new], r.k[-1])


# ---------------------------------------------------------------------- 4. an incomplete step is undone exactly
def held(cache) -> list[torch.Tensor]:
    return [t.clone() for layer in range(cache.n_layers) for t in cache.held_rows(layer)] + [
        t.clone() for t in cache.stored_tensors()
    ]


def test_a_cancelled_step_is_undone_bit_for_bit():
    loaded = load_model(MODEL)
    lanes = (parse_spec("kv"), parse_spec("int4:g4:r4"))
    prompt = list(range(3, 13))  # 10 rows after the prefill: the next step quantizes 4 of them first

    class Cancelled(Exception):
        pass

    def run(cancel_steps: set[int]):
        def progress(lane: str, done: int, total: int) -> None:
            if sim.steps_done in cancel_steps and lane == "int4:g4:r4" and done == 1:
                cancel_steps.discard(sim.steps_done)
                before_cancel.append(sim.steps_done)
                raise Cancelled  # after layer 0 quantized a group and appended its row

        sim = Simulator(loaded.model, loaded.tokenizer, prompt, lanes, progress=progress)
        before_cancel, records = [], []
        while len(records) < 12:
            cache = sim.lanes[1].cache
            before = held(cache) if sim.steps_done else None
            try:
                records.append(sim.step())
            except Cancelled:
                after = held(cache)
                assert len(after) == len(before) and all(torch.equal(a, b) for a, b in zip(after, before, strict=True))
        return records, before_cancel

    plain, _ = run(set())
    cancelled, when = run({1, 5, 9})
    assert when == [1, 5, 9]
    for a, b in zip(plain, cancelled, strict=True):
        assert a.token_id == b.token_id and a.lanes[1].logit_diff == b.lanes[1].logit_diff
        ra, rb = a.lanes[1].rows, b.lanes[1].rows  # the recorded changes too: the mirror was rolled back
        np.testing.assert_array_equal(ra.positions, rb.positions)
        np.testing.assert_array_equal(ra.k, rb.k)


def test_a_deeper_truncate_keeps_what_attention_read():
    cache = list(drive("int4:g4:r0", [10, 1, 1, 1, 1]))[-1][0]  # 14 rows, 12 of them quantized
    k, v, _ = (t.clone() for t in cache.held_rows(0))
    cache.truncate(6)  # inside the second quantized group
    k6, v6, pos = cache.held_rows(0)
    assert torch.equal(k6, k[:, :, :6]) and torch.equal(v6, v[:, :, :6]) and pos.tolist() == list(range(6))
    assert cache._layers[0].q == 4 and cache.n_tokens == 6
    assert cache.nbytes == sum(t.nbytes for t in cache.stored_tensors())


def test_a_kv_cache_and_the_quantized_cache_agree_before_anything_is_quantized():
    exact, quant = KVCache(1), make_cache("int8", 1)
    k, v = torch.randn(1, 2, 20, 8), torch.randn(1, 2, 20, 8)
    a, b = exact.update(0, k, v, torch.arange(20)), quant.update(0, k, v, torch.arange(20))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) and exact.nbytes == quant.nbytes


# ---------------------------------------------------------------------- 5. the app draws the lane
def test_the_app_draws_the_dequantized_rows(qtbot, qapp):
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from kvsim.ui import theme
    from kvsim.ui.lanes.attention import attention_rows
    from kvsim.ui.lanes.plots import dim_rows

    w = ready_window(qtbot, qapp, MODEL, "Once upon", size=(1920, 1080))
    w.controller.set_lanes("kv,int4:g8:r8")
    qtbot.waitUntil(lambda: w.controller.can_step and len(w.lane_panels) == 2, timeout=20_000)
    assert w.controller.run_steps(30)
    s = w.session
    lane = w.lane_panels[1]
    assert "INT4 cache (g8, r8)" in lane.header.text() and "keys per channel" in lane.header.text()
    n = s.n_rows()
    layer, head = lane.layer, lane.head
    g = head // (s.config.n_heads // s.config.n_kv_heads)
    # the lane's own full-precision rows: each position as first recorded (deeper layers' rows are its own,
    # computed from hidden states that read quantized rows below)
    first: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for r in s.records:
        rows = r.lanes[1].rows
        for i, p in enumerate(rows.positions.tolist()):
            first.setdefault(p, (rows.k[layer, g, i], rows.v[layer, g, i]))
    assert sorted(first) == list(range(n))
    exact_k, exact_v = (np.stack([first[p][j] for p in range(n)]) for j in (0, 1))
    q = quantized_rows_after(n - 1, 8, 8)
    assert q >= 16
    # the session's rows of the lane (rebuilt from the records' LaneRows) are the reference quantizer's
    k_rows, v_rows = s.kv_rows(1, layer, g, 0, n)
    k_hat, v_hat, k_step, _ = ref_rows(exact_k, exact_v, q, 8, 4)
    np.testing.assert_allclose(k_rows, k_hat, rtol=0, atol=1e-6)
    np.testing.assert_allclose(v_rows, v_hat, rtol=0, atol=1e-6)
    assert (np.abs(k_rows - exact_k) <= k_step / 2 + 1e-5).all()
    np.testing.assert_array_equal(k_rows[q:], exact_k[q:])
    assert not np.array_equal(k_rows[:q], s.kv_rows(0, layer, g, 0, q)[0])  # the kv lane holds the exact rows
    # its K table is those rows, colour-mapped on the run's shared levels (the rows read from the cache dimmed)
    m = w.derived.levels[(layer, g)]
    img = lane.k.image.image
    assert img.shape[:2] == (n, s.config.head_dim)
    expect = dim_rows(theme.colorize(k_rows, -m, m, theme.KV_CMAP), n - 1)
    np.testing.assert_array_equal(img, expect)
    kv_img = w.lane_panels[0].k.image.image
    assert not np.array_equal(img[:q], kv_img[:q])
    # its attention: softmax over its own query and the keys it held at that step, from the LaneRows
    own_q = s.records[-1].lanes[1].rows.q[layer, head]  # (1, D)
    expect_attn = attention_rows(own_q, k_rows, np.array([n - 1]), np.arange(n))[0]
    np.testing.assert_allclose(w.derived.attention_values(1, layer, head, n - 1), expect_attn, rtol=1e-5, atol=1e-7)
    exact_attn = w.derived.attention_values(0, layer, head, n - 1)
    assert np.abs(exact_attn - expect_attn).max() > 1e-6  # quantization moved the attention
    w.shutdown()
