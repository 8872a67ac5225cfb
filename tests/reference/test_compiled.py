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


def _greedy(model, steps: int) -> tuple[list[int], torch.Tensor]:
    cache = KVCache(model.cfg.n_layers)
    out = model(torch.tensor([PROMPT]), torch.arange(len(PROMPT)), cache, last_only=True)
    tokens, logits = [], []
    for pos in range(len(PROMPT), len(PROMPT) + steps):
        logits.append(out.logits[0, -1].clone())
        tokens.append(int(out.logits[0, -1].argmax()))
        out = model(torch.tensor([[tokens[-1]]]), torch.tensor([pos]), cache, last_only=True)
    return tokens, torch.stack(logits)


def test_compiled_decode_and_cli(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "unused"))  # restored after the test
    monkeypatch.setenv("KVSIM_CACHE_DIR", str(tmp_path))
    model = load_model("tiny").model
    eager_tokens, eager_logits = _greedy(model, 8)
    compile_decode(model)
    seconds = warm_up(model, len(PROMPT), lambda: KVCache(model.cfg.n_layers))
    assert seconds > 0 and model.compiled
    tokens, logits = _greedy(model, 8)
    assert tokens == eager_tokens
    torch.testing.assert_close(logits, eager_logits, rtol=1e-4, atol=1e-4)  # inductor's fused float32 arithmetic
    kernels = tmp_path / "torch-inductor"
    assert kernels.is_dir() and any(kernels.rglob("*")), "the kernels went somewhere else"

    # the CLI: the same tokens as without --compile, and the compile time in the JSON summary
    args = ["run", "--model", "tiny", "--prompt-ids", ",".join(map(str, PROMPT)), "--steps", "6", "--lanes", "kv", "--json"]
    assert main(args) == 0
    plain = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert main([*args, "--compile"]) == 0
    compiled = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r.get("token_id") for r in compiled[:-1]] == [r.get("token_id") for r in plain[:-1]]
    assert compiled[-1]["summary"]["compile_s"] > 0 and "compile_s" not in plain[-1]["summary"]
