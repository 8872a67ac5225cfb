"""``kv`` on a model with per-layer windows (Gemma 3): a local layer holds only its window, a global
one every row, as transformers' ``DynamicCache`` and vLLM's hybrid allocator do; ``kv:full`` keeps
every row everywhere (and masks) to show the difference.

* A Gemma-3-shaped random model (18 layers, every 6th global, window 512): at every step across
  n = 512 the ``kv`` lane holds (15 × min(n, 512) + 3 × n) × 2 × H_kv × d × 4 bytes, ``kv:full``
  18 × n × …, the memory dock's formula (``lane_bill``) says both, and the two lanes' logits agree
  within 1e-5 (the model's own mask already hid the rows a local layer drops).
* A tiny Gemma 3 built in transformers and loaded by kvsim: the ``kv`` lane's bytes equal the bytes
  of transformers' own cache, but for its one-row convention: a transformers sliding layer keeps
  W − 1 rows between steps (the next query brings the W-th), kvsim's keeps W (it evicts the oldest
  when the next row arrives, as ``window:W`` does) — one row per local layer once n ≥ W.
"""

from __future__ import annotations

import pytest
import torch

from kvsim.caches import SpecError, make_cache, parse_spec
from kvsim.costs.memory import kv_cache_bytes, lane_bill
from kvsim.engine.simulate import Simulator, parse_lanes
from kvsim.models.loading import load_model

GEMMA3_SHAPED = "random:family=gemma3,layers=18,heads=2,kv_heads=1,dim=32,head_dim=16,vocab=300,ctx=1024,window=512,seed=5"


def test_kv_on_gemma3_holds_the_local_windows_and_kv_full_holds_everything() -> None:
    lm = load_model(GEMMA3_SHAPED)
    cfg = lm.model.cfg
    windows = tuple(cfg.window_of(i) for i in range(18))
    assert windows.count(512) == 15 and windows.count(None) == 3
    row = 2 * cfg.n_kv_heads * cfg.head_dim * 4  # K and V, one position, one layer, fp32
    prompt = torch.randint(1, 300, (505,), generator=torch.Generator().manual_seed(3)).tolist()
    sim = Simulator(lm.model, lm.tokenizer, prompt, parse_lanes("kv,kv:full"), warmup=False)
    lanes = sim.trace.meta["lanes"]
    assert lanes[0]["explanation"].endswith("a local layer keeps only its window") and lanes[1]["spec"] == "kv:full"
    crossed = False
    for r in sim.run(14):  # n = 505 … 518: across the window
        n = r.n_tokens
        kv, full = r.lane("kv"), r.lane("kv:full")
        assert kv.cache_bytes == (15 * min(n, 512) + 3 * n) * row
        assert full.cache_bytes == 18 * n * row
        for lane, done in zip(lanes, r.lanes, strict=True):
            bill = lane_bill(lane, 18, cfg.n_kv_heads, cfg.head_dim, n, done.kv_positions, layer_windows=windows)
            assert bill.expected_bytes == bill.formula_bytes == done.cache_bytes
        assert kv.cache_bytes == kv_cache_bytes(18, cfg.n_kv_heads, cfg.head_dim, n, bits=32, layer_windows=windows)
        assert kv.logit_diff < 1e-5 and kv.token_id == full.token_id
        assert kv.cache_tokens == full.cache_tokens == n and kv.spans is None  # the records show a global layer
        crossed |= n > 512
    assert crossed
    cache = sim.lanes[0].cache
    assert cache.key_positions(0).tolist() == list(range(n - 512, n))  # a local layer read its window
    assert cache.key_positions(5).tolist() == list(range(n))  # a global one, everything


def test_kv_full_spec_and_a_model_without_windows() -> None:
    assert parse_spec("kv:full").options == {"full": True} and parse_spec("kv").options == {}
    with pytest.raises(SpecError, match="kv takes nothing or 'full'"):
        parse_spec("kv:half")
    # no windows (or kv:full): one strip per layer, every row, as before
    for cache in (make_cache("kv", 2, (None, None)), make_cache("kv:full", 2, (4, None))):
        k = torch.randn(1, 1, 9, 4)
        for layer in range(2):
            cache.update(layer, k, k, torch.arange(9))
        assert cache.n_tokens == 9 and cache.nbytes == 2 * 2 * 9 * 4 * 4
    # a cancelled step on a windowed layer is undone exactly
    cache = make_cache("kv", 2, (4, None))
    k = torch.randn(1, 1, 12, 4)
    for layer in range(2):
        cache.update(layer, k[:, :, :10], k[:, :, :10], torch.arange(10))
    cache.update(0, k[:, :, 10:11], k[:, :, 10:11], torch.tensor([10]))
    cache.truncate(10)
    assert cache.held_rows(0)[2].tolist() == [6, 7, 8, 9] and cache.held_rows(1)[2].tolist() == list(range(10))


transformers = pytest.importorskip("transformers")


def test_kv_bytes_equal_transformers_cache_but_for_its_one_row_convention(tmp_path) -> None:
    from test_gemma3 import WINDOW, gemma3_config, hf_gemma3
    from test_parity_hf import hf_step, write_tokenizer

    hf = hf_gemma3(gemma3_config())  # 7 layers: 6 local (window 8), 1 global; MQA, head dim 32
    hf.save_pretrained(tmp_path, safe_serialization=True)
    write_tokenizer(tmp_path, 96)
    ours = load_model(str(tmp_path))
    cfg = ours.model.cfg
    local = sum(w is not None for w in cfg.layer_windows)
    row = 2 * cfg.n_kv_heads * cfg.head_dim * 4
    ids = torch.randint(1, 96, (1, 5), generator=torch.Generator().manual_seed(7))
    sim = Simulator(ours.model, ours.tokenizer, ids[0].tolist(), parse_lanes("kv"), warmup=False)
    logits, past = hf_step(hf, ids, None)
    for _ in range(12):  # n = 5 … 16: below, at and past the window of 8
        r = sim.step()
        n = r.n_tokens
        hf_bytes = sum(layer.keys.numel() * 4 + layer.values.numel() * 4 for layer in past.layers)
        ours_bytes = r.lane("kv").cache_bytes
        assert ours_bytes - hf_bytes == (local * row if n >= WINDOW else 0), n
        assert r.token_id == int(logits[0, -1].argmax())  # the same model: the same greedy token
        logits, past = hf_step(hf, torch.tensor([[r.token_id]]), past)


# ------------------------------------------------------------------------------- the real model (opt-in)
@pytest.mark.slow
def test_gemma3_270m_kv_bytes_equal_transformers_cache_past_the_window() -> None:
    """Gemma 3 270M (``KVSIM_GEMMA3=1``): a 600-token prompt then decode steps, past the 512 window: the
    ``kv`` lane holds (15 × min(n, 512) + 3 × n) × 2 × H_kv × d × 4 bytes, transformers' own cache for the
    same GGUF holds exactly 15 rows less (its W − 1 convention, one row per local layer), and the two
    models choose the same greedy tokens (their local layers really read only the window)."""
    pytest.importorskip("accelerate")
    from test_gemma3 import ATOL, _gemma3_file
    from test_parity_hf import hf_step

    from kvsim.caches.kv import KVCache

    path = _gemma3_file()
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # a small shared machine: one thread a process is faster than two fighting
    try:
        loaded = load_model(str(path))
        model, cfg = loaded.model, loaded.model.cfg
        windows = tuple(cfg.window_of(i) for i in range(cfg.n_layers))
        assert windows.count(512) == 15 and windows.count(None) == 3
        hf = transformers.AutoModelForCausalLM.from_pretrained(
            path.parent, gguf_file=path.name, attn_implementation="eager", dtype=torch.float32
        ).eval()
        text = " ".join(f"Item {i}: the key-value cache keeps row {i} of the sequence." for i in range(60))
        ids = loaded.tokenizer.encode(text)[:600]
        assert len(ids) == 600
        row = 2 * cfg.n_kv_heads * cfg.head_dim * 4  # K and V of one position in one layer, fp32
        cache = make_cache("kv", cfg.n_layers, windows)
        assert isinstance(cache, KVCache)
        got = model(torch.tensor([ids]), torch.arange(600), cache, last_only=True).logits
        ref, past = hf_step(hf, torch.tensor([ids]), None)
        n, worst, figures = 600, 0.0, []
        for _ in range(4):  # n = 600 … 603
            hf_bytes = sum(layer.keys.numel() * 4 + layer.values.numel() * 4 for layer in past.layers)
            figures.append((n, cache.nbytes, hf_bytes))
            assert cache.nbytes == (15 * min(n, 512) + 3 * n) * row
            assert cache.nbytes == kv_cache_bytes(cfg.n_layers, cfg.n_kv_heads, cfg.head_dim, n, bits=32, layer_windows=windows)
            assert cache.nbytes - hf_bytes == 15 * row, (n, cache.nbytes, hf_bytes)
            worst = max(worst, float((got[0, -1] - ref[0, -1]).abs().max()))
            token = int(ref[0, -1].argmax())
            assert int(got[0, -1].argmax()) == token
            got = model(torch.tensor([[token]]), torch.tensor([n]), cache, last_only=True).logits
            ref, past = hf_step(hf, torch.tensor([[token]]), past)
            n += 1
        for n, ours, theirs in figures:
            print(f"\n  n = {n}: kv {ours:,} B, transformers {theirs:,} B, difference {ours - theirs:,} B = 15 rows of {row:,} B")
        print(f"  max |Δlogit| {worst:.2e}")
        assert worst < ATOL, f"max |Δlogit| {worst:.2e}"  # measured 4.3e-5
    finally:
        torch.set_num_threads(before)
