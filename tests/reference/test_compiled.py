"""``--compile``: the compiled model's tokens are the eager model's and its logits within float rounding;
the compile time is in the summary; the compiled kernels go to the folder asked for (a temporary one
here: never the user's cache). Slow (compiling takes minutes on a busy 2-core machine): in tests/reference."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from kvsim.caches import KVCache
from kvsim.cli.entry import main
from kvsim.models.kernels.compiled import compile_decode, warm_up
from kvsim.models.loading import load_model

PROMPT = [3, 17, 42, 9, 100, 7]


def _greedy(model, steps: int, cache: KVCache | None = None) -> tuple[list[int], torch.Tensor, list[torch.Tensor]]:
    """Greedy tokens, their logits and each decode step's recorded k rows (L, B, H_kv, 1, D)."""
    cache = KVCache(model.cfg.n_layers) if cache is None else cache
    out = model(torch.tensor([PROMPT]), torch.arange(len(PROMPT)), cache, last_only=True)
    tokens, logits, rows = [], [], []
    for pos in range(len(PROMPT), len(PROMPT) + steps):
        logits.append(out.logits[0, -1].clone())
        tokens.append(int(out.logits[0, -1].argmax()))
        out = model(torch.tensor([[tokens[-1]]]), torch.tensor([pos]), cache, last_only=True, record=True)
        rows.append(out.k.clone())
    return tokens, torch.stack(logits), rows


def test_compiled_decode_and_cli(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "unused"))  # restored after the test
    monkeypatch.setenv("KVSIM_CACHE_DIR", str(tmp_path))
    model = load_model("tiny").model
    eager_cache = KVCache(model.cfg.n_layers)
    eager_tokens, eager_logits, eager_rows = _greedy(model, 8, eager_cache)
    compile_decode(model)
    seconds = warm_up(model, len(PROMPT), lambda: KVCache(model.cfg.n_layers))
    assert seconds > 0 and model.compiled
    cache = KVCache(model.cfg.n_layers)
    # a decode step into a plain kv cache runs as one graph (Transformer.decode_graph), the cache updated after it
    assert model.one_graph_fits(eager_cache, torch.tensor([[1]]), {10000.0: None}, True, None, False)
    assert not model.one_graph_fits(eager_cache, torch.tensor([[1, 2]]), {}, True, None, False)  # a prefill
    tokens, logits, rows = _greedy(model, 8, cache)
    assert tokens == eager_tokens
    torch.testing.assert_close(logits, eager_logits, rtol=1e-4, atol=1e-4)  # inductor's fused float32 arithmetic
    for got, want in zip(rows, eager_rows, strict=True):  # the recorded rows: the eager path's
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    assert cache.n_tokens == eager_cache.n_tokens and cache.bytes_split() == eager_cache.bytes_split()
    for layer in range(model.cfg.n_layers):  # what the cache holds after the steps: the eager cache's rows
        k, v, pos = cache.held_rows(layer)
        k0, v0, pos0 = eager_cache.held_rows(layer)
        assert torch.equal(pos, pos0)
        torch.testing.assert_close((k, v), (k0, v0), rtol=1e-4, atol=1e-5)
    model.one_graph_steps = False  # the same steps layer by layer (what every other lane's cache takes)
    chained_tokens, chained_logits, _ = _greedy(model, 8)
    model.one_graph_steps = True
    assert chained_tokens == eager_tokens
    torch.testing.assert_close(chained_logits, eager_logits, rtol=1e-4, atol=1e-4)
    kernels = tmp_path / "torch-inductor"
    assert kernels.is_dir() and any(kernels.rglob("*")), "the kernels went somewhere else"

    # the CLI: the same tokens as without --compile, and the compile time in the JSON summary
    args = ["run", "--model", "tiny", "--prompt-ids", ",".join(map(str, PROMPT)), "--steps", "6", "--lanes", "kv", "--json"]
    assert main(args) == 0
    plain = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert main([*args, "--compile"]) == 0
    captured = capsys.readouterr()
    compiled = [json.loads(line) for line in captured.out.splitlines()]
    # minutes of compiling on a large model: the command line says what it compiles, part by part, on stderr
    told = [line for line in captured.err.splitlines() if line.startswith("--compile: ")]
    assert told and told[0].startswith("--compile: compiling for this run's shapes"), captured.err
    assert any(line.startswith("--compile: a decode step as one graph") for line in told), told
    assert told[-1].startswith("--compile: done (the last part took "), "\n".join(told)
    assert [r.get("token_id") for r in compiled[:-1]] == [r.get("token_id") for r in plain[:-1]]
    assert compiled[-1]["summary"]["compile_s"] > 0 and "compile_s" not in plain[-1]["summary"]


GEMMA = "random:family=gemma3,layers=2,heads=4,kv_heads=1,dim=64,vocab=300,ctx=128,window=4,global_every=2,seed=5"


def test_compiled_gemma_fuses_its_norm_scale(tmp_path: Path, monkeypatch) -> None:
    """Gemma's RMSNorm keeps ``1 + weight`` between eager calls, keyed by the weight's version and address; compiled, the
    scale is computed inside each graph instead. Guarding on that key made each norm's ``scale`` a frame of its own,
    recompiled once per norm: past torch.compile's recompile limit on Gemma 3 270M (109 norms), then looked up at ~40 µs
    a call, a compiled step 1.4× an eager one. Same tokens and logits as the eager model; no frame compiled for
    ``scale``."""
    from torch._dynamo.eval_frame import _debug_get_cache_entry_list

    from kvsim.models.transformer import GemmaRMSNorm

    monkeypatch.setenv("KVSIM_CACHE_DIR", str(tmp_path))
    model = load_model(GEMMA).model
    cfg = model.cfg
    windowed = lambda: KVCache(cfg.n_layers, layer_windows=cfg.layer_windows)  # noqa: E731
    eager_tokens, eager_logits, _ = _greedy(model, 8, windowed())
    compile_decode(model, cache_dir=tmp_path)  # compiled by the first forwards below (no warm-up: fewer shapes)
    tokens, logits, _ = _greedy(model, 8, windowed())  # past the window of 4: the local layers' masks at work
    assert tokens == eager_tokens
    torch.testing.assert_close(logits, eager_logits, rtol=1e-4, atol=1e-4)
    assert _debug_get_cache_entry_list(GemmaRMSNorm.scale.__code__) == []
