"""Prefix caching on a hybrid linear-attention model (``family=qwen3_next``): the paged pool keeps, per registered
full block, the recurrent layers' state after the block's last token (vLLM's hybrid KV cache manager keeps a state
snapshot per block boundary for its Mamba layers), and a prefix hit resumes the recurrence from the checkpoint of its
last hit block.

* Requests sharing a prefix through one pool, greedy: every request's tokens equal, and its logits agree within 1e-5
  with, the same request run alone through a pool of its own with prefix caching off; the hits are counted, each hit
  request's ``state_restored_at`` is where its hit ends, and the checkpoints' bytes equal the closed form: one state
  (conv inputs at the element width, recurrent matrices in fp32, every Gated DeltaNet layer) × the registered blocks.
* A pool too small to keep everything: an evicted block takes its checkpoint with it, the closed form still holds
  and the outputs still equal the requests alone.
* Mutation tried (``kvsim.models.attention.hybrid``): the checkpoint at a boundary n taken one token late (the state
  after n + 1 tokens) — the hit requests' tokens diverge from the requests alone and the first test fails.
"""

from __future__ import annotations

import pytest
import torch

from kvsim.caches.state import state_bytes
from kvsim.models.loading import load_model
from kvsim.serving.requests import RequestsEngine, run_requests

HYBRID = (
    "random:family=qwen3_next,layers=4,heads=4,kv_heads=2,dim=64,head_dim=16,hidden=96,vocab=256,"
    "linear_heads=2,linear_value_heads=4,linear_head_dim=16,conv=4,seed=3"
)
SHARED = list(range(10, 37))  # 27 shared tokens: 3 full blocks of 8, then 3 more
PROMPTS = [SHARED + [60, 61, 62], SHARED + [70, 71], SHARED[:17] + [5, 6, 7, 8], [90, 91, 92]]
STEPS = 5


@pytest.fixture(scope="module")
def hybrid():
    return load_model(HYBRID)


def _run_recording(lm, prompts, **options):
    """A one-at-a-time run (greedy, sequential, one trial a prefill) and each request's logits rows, in order."""
    model = lm.model
    rows: list[torch.Tensor] = []

    class Recording:  # the model, its logits rows kept (sequential: request by request, token by token)
        def __init__(self) -> None:
            self.cfg, self.device, self.dtype = model.cfg, model.device, model.dtype

        def __call__(self, *args, **kwargs):
            out = model(*args, **kwargs)
            rows.append(out.logits[0, -1].float().clone())
            return out

    engine = RequestsEngine.from_keywords(
        Recording(), lm.tokenizer, prompts, steps=STEPS, stop_at_eos=False, warmup=False, repeats=1, **options
    )
    run = engine.run()
    per_request = [rows[i * STEPS : (i + 1) * STEPS] for i in range(len(prompts))]
    return run, per_request, engine.pool


def _registered(pool) -> int:
    return sum(h is not None for h in pool.hash)


def test_hits_resume_from_the_block_checkpoint_and_change_nothing(hybrid) -> None:
    cfg = hybrid.model.cfg
    run, logits, pool = _run_recording(hybrid, PROMPTS, block_size=8)
    for i, prompt in enumerate(PROMPTS):
        alone, alone_logits, _ = _run_recording(hybrid, [prompt], block_size=8, prefix_caching=False)
        assert run.requests[i].output_ids == alone.requests[0].output_ids
        for got, want in zip(logits[i], alone_logits[0], strict=True):
            assert float((got - want).abs().max()) < 1e-5
    hits = [r.hit_blocks for r in run.requests]
    assert hits == [0, 3, 2, 0]  # 27 shared tokens: 3 full blocks; the third prompt shares 17: 2
    assert [r.state_restored_at for r in run.requests] == [0, 24, 16, 0]
    rec = run.summary()["recurrent_state"]
    conv, recurrent = cfg.recurrent_state_values()
    one = state_bytes(conv, recurrent, len(cfg.linear_layers), 32)
    assert rec["checkpoint_bytes_each"] == one == len(cfg.linear_layers) * 4 * (conv + recurrent)
    assert rec["checkpoints_kept"] == _registered(pool) == len(pool.checkpoints) > 0
    assert rec["checkpoint_bytes"] == one * rec["checkpoints_kept"] == pool.checkpoint_bytes
    assert rec["states_restored"] == 2 and rec["tokens_not_recomputed"] == 24 + 16
    # the pool stores K/V for the attention layer only: a block is one layer's rows, not four
    assert run.block_bytes == 2 * 1 * 8 * cfg.n_kv_heads * cfg.head_dim * 4
    pool.check()


def test_an_evicted_block_takes_its_checkpoint_and_outputs_stay_exact(hybrid) -> None:
    prompts = [SHARED + [60, 61, 62], [90 + i for i in range(30)], SHARED + [70, 71]]
    run, logits, pool = _run_recording(hybrid, prompts, block_size=8, pool_blocks=6)
    assert run.evictions > 0
    rec = run.summary()["recurrent_state"]
    assert rec["checkpoint_bytes"] == rec["checkpoint_bytes_each"] * _registered(pool) == pool.checkpoint_bytes
    assert rec["checkpoint_bytes_peak"] >= rec["checkpoint_bytes"]
    for i, prompt in enumerate(prompts):
        alone, alone_logits, _ = _run_recording(hybrid, [prompt], block_size=8, prefix_caching=False)
        assert run.requests[i].output_ids == alone.requests[0].output_ids
        assert max(float((a - b).abs().max()) for a, b in zip(logits[i], alone_logits[0], strict=True)) < 1e-5
    pool.check()


def test_no_checkpoints_without_prefix_caching_and_the_refusals(hybrid) -> None:
    run = run_requests(hybrid.model, hybrid.tokenizer, PROMPTS[:2], block_size=8, steps=2, prefix_caching=False, repeats=1)
    rec = run.summary()["recurrent_state"]
    assert rec["checkpoints_kept"] == rec["checkpoint_bytes"] == rec["states_restored"] == 0
    from kvsim.core.sampling import SimulationError
    from kvsim.serving.batching import run_batched

    with pytest.raises(SimulationError, match="Gated DeltaNet"):
        run_batched(hybrid.model, hybrid.tokenizer, PROMPTS[:2], steps=2)


def test_the_cli_says_the_checkpoints_and_what_a_hit_saved(capsys) -> None:
    from helpers import cli_json_lines

    from kvsim.cli.entry import main

    shared = "The quick brown fox jumps over the lazy dog. "
    args = ["run", "--model", HYBRID, "--prompt", shared + "One?", "--prompt", shared + "Two!", "--steps", "2"]
    args += ["--block-size", "8", "--no-chat-template", "--repeats", "1"]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "(1 attention with K/V blocks, 3 Gated DeltaNet with a state)" in text
    assert "recurrent state checkpoints (one per registered block" in text and "1 prefill(s) resumed from one" in text
    lines, summary = cli_json_lines(capsys, *args, "--json")
    assert [line["state_restored_at"] for line in lines] == [0, 40]
    assert summary["on"]["recurrent_state"]["tokens_not_recomputed"] == 40
    for flag in (["--batching", "continuous"], ["--offload", "host:1MB"]):
        assert main([*args[:-2], *flag]) == 2
        assert "Gated DeltaNet" in capsys.readouterr().err
