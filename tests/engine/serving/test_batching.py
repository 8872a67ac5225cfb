"""Continuous batching through one paged pool: every request's tokens and logits equal the same request
run alone through a contiguous KV cache (an independent path: no pool, no table, one forward per
token), for random arrival schedules, token budgets, chunk sizes, block sizes and pool sizes — small
pools force preemption and recompute. At every step no physical block is in two places unless the
holders share it at the same logical index with equal token ids, and each block's reference count
equals its holders. Also: the scheduler's rules (budget, chunking, preemption order, first come first
served), the records, and cancellation."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kvsim.caches.kv import KVCache
from kvsim.core.sampling import Sampling, SimulationError, choose
from kvsim.models.loading import load_model
from kvsim.serving.batching import BatchingEngine, RunCancelled, poisson_arrivals, run_batched
from kvsim.serving.core import blocks_needed

SPECS = {
    "llama": "random:family=llama,layers=2,heads=4,kv_heads=2,dim=32,vocab=300,ctx=160,seed=5",
    "gpt2": "random:family=gpt2,layers=2,heads=4,dim=32,vocab=300,ctx=160,seed=1",
    "gemma3": "random:family=gemma3,layers=3,heads=4,kv_heads=1,dim=32,vocab=300,window=8,global_every=3,ctx=160,seed=6",
}
TOL = 1e-5


def assert_same_logits(want: list[np.ndarray], got: list[np.ndarray], what: str = "") -> None:
    """Equal up to float32 rounding: torch's default fp32 tolerance (rtol 1.3e-6, atol 1e-5). A packed batch
    multiplies several rows at once (torch's GEMM) where a request alone decodes one row (kvsim.models.kernels.row_matmul's
    kernel): the same dot products summed in a different order, ~1e-6 of a logit apart."""
    assert len(want) == len(got), what
    for a, b in zip(want, got, strict=True):
        np.testing.assert_allclose(b, a, rtol=1.3e-6, atol=TOL, err_msg=what)


@pytest.fixture(scope="module")
def models():
    return {name: load_model(spec) for name, spec in SPECS.items()}


def alone(model, prompt, steps: int, sampling: Sampling, index: int, eos: int | None = None):
    """The request by itself: a contiguous KV cache, the prompt in one forward, then one token a step,
    drawing from the generator the batched engine gives request ``index``."""
    cache = KVCache(model.cfg.n_layers)
    gen = torch.Generator().manual_seed(sampling.seed + index)
    tokens, out, logits, start = list(prompt), [], [], 0
    for _ in range(steps):
        o = model(torch.tensor([tokens[start:]]), torch.arange(start, len(tokens)), cache, last_only=True)
        row = o.logits[0, -1].float()
        u = float(torch.rand((), generator=gen)) if sampling.temperature > 0 else 0.5
        token = choose(row, sampling, u)
        out.append(token)
        logits.append(row.numpy())
        start = len(tokens)
        tokens.append(token)
        if eos is not None and token == eos:
            break
    return out, logits


def check_live(engine: BatchingEngine) -> None:
    """The pool right after a step, from the live tables: sharing only of equal full registered blocks
    at equal logical index; reference counts = holders; the free queue = the unheld blocks."""
    pool, size = engine.pool, engine.block_size
    pool.check()
    places: dict[int, list[tuple[int, int]]] = {}
    for r in engine.requests:
        if r.status != "running":
            assert not r.seq.blocks, f"request {r.index} ({r.status}) still holds blocks"
            continue
        assert len(r.seq.blocks) == -(-r.seq.n_tokens // size), "a table holds blocks past its rows"
        assert len(set(r.seq.blocks)) == len(r.seq.blocks)
        for j, b in enumerate(r.seq.blocks):
            places.setdefault(b, []).append((r.index, j))
    for b, where in places.items():
        assert pool.ref[b] == len(where), f"block {b}: ref {pool.ref[b]}, holders {where}"
        if len(where) > 1:
            assert pool.hash[b] is not None and len({j for _, j in where}) == 1
            texts = {tuple(engine.requests[i].tokens[j * size : (j + 1) * size]) for i, j in where}
            assert len(texts) == 1 and len(next(iter(texts))) == size, f"block {b} shared by unequal rows"
    unheld = [b for b in range(pool.n_blocks) if b not in places and b != pool.null_block]  # vLLM's null block: never free
    assert all(pool.ref[b] == 0 for b in unheld) and pool.n_free == len(unheld)


def check_snapshots(run) -> None:
    """The same invariants from the frozen snapshots (what a saved file and the views see)."""
    texts = [list(r.prompt_ids) + list(r.output_ids) for r in run.requests]
    size = run.block_size
    assert len(run.snapshots) == len(run.batches)
    for snap, step in zip(run.snapshots, run.batches, strict=True):
        places: dict[int, list[tuple[int, int]]] = {}
        for t in snap.tables:
            for j, b in enumerate(t.blocks):
                places.setdefault(b, []).append((t.request, j))
        for b, where in places.items():
            assert snap.ref_counts[b] == len(where)
            if len(where) > 1:
                assert snap.hashes[b] is not None and len({j for _, j in where}) == 1
                assert len({tuple(texts[r][j * size : (j + 1) * size]) for r, j in where}) == 1
        usable = snap.usable_blocks  # vLLM's null block is neither held nor free
        assert snap.free_blocks == step.free_blocks == usable - len(places) == usable - step.held_blocks


def random_case(rng: np.random.Generator, shared: bool):
    n = int(rng.integers(2, 7))
    base = [int(t) for t in rng.integers(0, 300, size=int(rng.integers(4, 20)))]
    prompts = []
    for _ in range(n):
        own = [int(t) for t in rng.integers(0, 300, size=int(rng.integers(1, 24)))]
        prompts.append((base[: int(rng.integers(0, len(base) + 1))] if shared else []) + own)
    arrivals = sorted(int(a) for a in rng.integers(0, 10, size=n))
    rng.shuffle(arrivals)  # arrival order is not request order
    return prompts, [int(a) for a in arrivals]


@pytest.mark.parametrize("family", list(SPECS))
@pytest.mark.parametrize("seed", range(4))
def test_batched_equals_alone_for_random_schedules(models, family: str, seed: int) -> None:
    rng = np.random.default_rng(100 * seed + len(family))
    loaded = models[family]
    model, tok = loaded.model, loaded.tokenizer
    prompts, arrivals = random_case(rng, shared=seed % 2 == 0)
    steps = int(rng.integers(2, 9))
    block = int(rng.choice([1, 2, 3, 4, 8, 16]))
    needs = [blocks_needed(len(p), steps, block) for p in prompts]
    # from the one request's worst case (preemptions certain when several run) to room for all
    pool = int(rng.integers(max(needs), sum(needs) + 1)) if seed < 3 else max(needs)
    budget = int(rng.integers(1, 40))
    chunk = int(rng.integers(1, budget + 1)) if rng.random() < 0.5 else None
    chunked = seed != 2  # without chunking a prompt (or a recompute) runs whole: the budget must hold it
    if not chunked:
        budget, chunk = max(budget, max(len(p) for p in prompts) + steps - 1), None
    sampling = Sampling(temperature=0.8, top_k=50, seed=seed) if seed == 1 else Sampling()
    engine = BatchingEngine.from_keywords(
        model,
        tok,
        prompts,
        arrivals=arrivals,
        block_size=block,
        pool_blocks=pool,
        steps=steps,
        max_batched_tokens=budget,
        chunk_size=chunk,
        chunked_prefill=chunked,
        prefix_caching=seed != 2,
        sampling=sampling,
        stop_at_eos=False,
        record_logits=True,
        warmup=False,
        on_step=lambda step, e: check_live(e),
    )
    run = engine.run()
    for i, p in enumerate(prompts):
        want, logits = alone(model, p, steps, sampling, i)
        got = run.requests[i]
        assert list(got.output_ids) == want, f"request {i}: {got.output_ids} != {want}"
        assert len(engine.logits[i]) == steps
        assert_same_logits(logits, engine.logits[i], f"request {i}")
    check_snapshots(run)
    for step in run.batches:
        assert 0 < step.tokens <= budget and len({e.request for e in step.entries}) == len(step.entries)
        assert all(e.tokens <= (chunk or budget) for e in step.entries)
        if not chunked:  # every prefill or recompute took the request to its last token in one step
            assert all(e.emits for e in step.entries)
    for r, a in zip(run.requests, arrivals, strict=True):
        assert r.arrival_step == a and a <= run.batches[r.first_step].step
        assert len(r.token_ms) == steps and r.token_ms == tuple(sorted(r.token_ms)) and r.ttft_ms >= 0
    last = run.snapshots[-1]
    assert not last.ref_counts.any() and last.free_blocks == last.usable_blocks  # every block back in the pool


def test_a_small_pool_preempts_the_latest_and_recomputes_it(models) -> None:
    """Two requests that cannot both hold their blocks: the later one is preempted (its blocks freed at
    once), recomputed when the first finishes, and both still equal their runs alone."""
    loaded = models["llama"]
    prompts = [list(range(10, 22)), list(range(50, 62))]  # 12 tokens each, 8 steps: 19 rows = 5 blocks of 4
    engine = BatchingEngine.from_keywords(
        loaded.model,
        loaded.tokenizer,
        prompts,
        block_size=4,
        pool_blocks=7,
        steps=8,
        max_batched_tokens=32,
        stop_at_eos=False,
        record_logits=True,
        warmup=False,
        prefix_caching=False,
        on_step=lambda step, e: check_live(e),
    )
    run = engine.run()
    assert [r.preemptions for r in run.requests] == [0, 1]
    pre = next(s for s in run.batches if s.preempted)
    assert pre.preempted == (1,) and [e.request for e in pre.entries] == [0] and 1 in pre.waiting
    back = next(e for s in run.batches if s.step > pre.step for e in s.entries if e.request == 1)
    assert back.kind == "recompute" and back.start == 0  # caching off: every row again
    assert run.requests[1].recomputed_rows > 0
    assert run.requests[1].token_steps[-1] > run.requests[0].token_steps[-1]
    assert run.summary()["preemptions"] == 1
    for i, p in enumerate(prompts):
        want, logits = alone(loaded.model, p, 8, Sampling(), i)
        assert list(run.requests[i].output_ids) == want
        assert_same_logits(logits, engine.logits[i], f"request {i}")


def test_budget_chunks_prefill_and_decodes_ride_along(models) -> None:
    loaded = models["llama"]
    prompts = [list(range(1, 6)), list(range(100, 130))]  # 5 and 30 tokens
    run = run_batched(
        loaded.model,
        loaded.tokenizer,
        prompts,
        arrivals=[0, 2],
        block_size=4,
        steps=6,
        max_batched_tokens=8,
        stop_at_eos=False,
        warmup=False,
    )
    comp = [[(e.request, e.kind, e.start, e.tokens) for e in s.entries] for s in run.batches]
    assert comp[0] == [(0, "prefill", 0, 5)]
    assert comp[1] == [(0, "decode", 5, 1)]
    assert comp[2] == [(0, "decode", 6, 1), (1, "prefill", 0, 7)]  # the decode first, the prompt takes the rest
    assert comp[3] == [(0, "decode", 7, 1), (1, "prefill", 7, 7)]
    assert run.batches[2].arrived == (1,)
    firsts = [s for s in run.batches if any(e.request == 1 and e.emits for e in s.entries)]
    assert firsts[0].entries[-1] == next(e for e in firsts[0].entries if e.request == 1)
    # without chunking the 30-token prompt needs a budget of 35 (prompt + 5 generated, for a recompute)
    with pytest.raises(SimulationError, match="without chunked prefill"):
        BatchingEngine.from_keywords(
            loaded.model, loaded.tokenizer, prompts, steps=6, max_batched_tokens=8, chunked_prefill=False
        )
    whole = run_batched(
        loaded.model,
        loaded.tokenizer,
        prompts,
        arrivals=[0, 2],
        block_size=4,
        steps=6,
        max_batched_tokens=40,
        chunked_prefill=False,
        stop_at_eos=False,
        warmup=False,
    )
    assert [(e.request, e.tokens) for e in whole.batches[2].entries] == [(0, 1), (1, 30)]  # a decode stalls behind it
    assert [r.output_ids for r in whole.requests] == [r.output_ids for r in run.requests]


def test_prefix_hits_across_running_requests(models) -> None:
    loaded = models["llama"]
    shared = list(range(200, 217))  # 17 tokens: 4 full blocks of 4
    prompts = [shared + [1, 2], shared + [3], shared[:9]]
    run = run_batched(
        loaded.model, loaded.tokenizer, prompts, arrivals=[0, 1, 1], block_size=4, steps=3, stop_at_eos=False, warmup=False
    )
    assert [r.reused_rows for r in run.requests] == [0, 16, 8]
    assert [r.prefill_rows for r in run.requests] == [19, 2, 1]
    assert max(int(s.ref_counts.max()) for s in run.snapshots) == 3
    check_snapshots(run)


def test_idle_steps_are_skipped_and_arrivals_are_exact(models) -> None:
    loaded = models["gpt2"]
    run = run_batched(
        loaded.model, loaded.tokenizer, [[5, 6, 7], [8, 9]], arrivals=[0, 50], steps=2, stop_at_eos=False, warmup=False
    )
    assert [s.step for s in run.batches] == [0, 1, 50, 51]
    assert run.requests[1].arrival_ms == run.batches[1].clock_ms  # nothing ran between: no time passed
    assert run.requests[1].ttft_ms == pytest.approx(run.batches[2].ms)


def test_poisson_arrivals_and_bad_input() -> None:
    a = poisson_arrivals(200, 0.5, seed=3)
    assert a[0] == 0 and a == sorted(a) and a == poisson_arrivals(200, 0.5, seed=3)
    assert 300 < a[-1] < 500  # 199 gaps of mean 2
    with pytest.raises(SimulationError):
        poisson_arrivals(3, 0)


def test_errors_are_one_line(models) -> None:
    loaded = models["llama"]
    m, t = loaded.model, loaded.tokenizer
    for kwargs, words in (
        ({"arrivals": [0]}, "arrival steps for"),
        ({"arrivals": [0, -1]}, "arrival step"),
        ({"max_batched_tokens": 0}, "max batched tokens"),
        ({"pool_blocks": 1, "block_size": 2}, "needs up to"),
        ({"chunk_size": 0}, "chunk size"),
    ):
        with pytest.raises(SimulationError, match=words):
            BatchingEngine.from_keywords(m, t, [[1, 2, 3], [4, 5]], warmup=False, **kwargs)


def test_progress_and_cancel(models) -> None:
    loaded = models["llama"]
    seen = []
    run_batched(
        loaded.model, loaded.tokenizer, [[1, 2, 3]], steps=4, stop_at_eos=False, warmup=False, on_step=lambda s, e: seen.append(s)
    )
    assert [s.step for s in seen] == [0, 1, 2, 3]
    with pytest.raises(RunCancelled):
        run_batched(
            loaded.model, loaded.tokenizer, [[1, 2, 3]], steps=4, warmup=False, should_stop=lambda: len(seen) >= 6,
            on_step=lambda s, e: seen.append(s),
        )  # fmt: skip
    assert len(seen) == 6


def test_tiny_model_batched_equals_alone() -> None:
    loaded = load_model("tiny")
    tok = loaded.tokenizer
    prompts = [tok.encode(p) for p in ("It is a truth universally", "Once upon a time", "The weather was fine", "She said")]
    steps = 6
    engine = BatchingEngine.from_keywords(
        loaded.model,
        tok,
        prompts,
        arrivals=[0, 1, 1, 4],
        block_size=4,
        pool_blocks=max(blocks_needed(len(p), steps, 4) for p in prompts) + 2,
        steps=steps,
        max_batched_tokens=12,
        stop_at_eos=False,
        record_logits=True,
        warmup=False,
        on_step=lambda s, e: check_live(e),
    )
    run = engine.run()
    assert run.summary()["preemptions"] >= 1
    for i, p in enumerate(prompts):
        want, logits = alone(loaded.model, p, steps, Sampling(), i)
        assert list(run.requests[i].output_ids) == want
        assert_same_logits(logits, engine.logits[i], f"request {i}")


CLI_MODEL = SPECS["llama"]


def test_cli_continuous_json_save_and_inspect(capsys, tmp_path) -> None:
    import json

    from kvsim.cli.entry import main
    from kvsim.serving.saved_runs import load_runs

    path = tmp_path / "batch.kvsim"
    prompts = ["the same opening and then one", "the same opening and then two", "another"]
    args = ["run", "--model", CLI_MODEL, "--steps", "4", "--ignore-eos", "--batching", "continuous"]
    args += ["--max-batched-tokens", "12", "--block-size", "4", "--pool-blocks", "12", "--arrivals", "0,1,3"]
    for p in prompts:
        args += ["--prompt", p]
    assert main([*args, "--json", "--save", str(path)]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    steps = [x["batch_step"] for x in lines if "batch_step" in x]
    rows = [x for x in lines if "request" in x]
    summary = lines[-1]["summary"]
    assert summary["schedule"] == "continuous" and summary["batch_steps"] == len(steps) and len(rows) == 3
    assert all(0 < s["tokens"] <= 12 for s in steps) and [r["arrival_step"] for r in rows] == [0, 1, 3]
    assert sum(len([b for b in s["batch"] if b[1] in ("prefill", "recompute")]) for s in steps) >= 3
    assert summary["largest_batch"] >= 2  # they ran together
    assert sum(r["output_tokens"] for r in rows) == 12
    (run,) = load_runs(path)
    assert [b.as_dict() for b in run.batches] == steps
    assert [r.as_dict() for r in run.requests] == [{k: v for k, v in r.items() if k != "prefix_cache"} for r in rows]
    assert len(run.snapshots) == len(run.batches)
    check_snapshots(run)
    assert main(["inspect", str(path), "--json"]) == 0
    inspected = json.loads(capsys.readouterr().out)["requests_runs"][0]
    assert inspected["batches"] == steps and inspected["preemptions"] == summary["preemptions"]
    assert main(["inspect", str(path)]) == 0
    text = capsys.readouterr().out
    assert "continuous batching" in text and "step    0" in text
    assert main(args) == 0  # the text report
    text = capsys.readouterr().out
    assert "largest batch" in text and "r1:p" in text


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--max-batched-tokens", "8"], "applies to --batching continuous"),
        (["--batching", "continuous", "--interleave"], "does not apply"),
        (["--batching", "continuous", "--arrivals", "0,1,2"], "gives 3 steps for 2 requests"),
        (["--batching", "continuous", "--arrivals", "0,x"], "--arrivals"),
        (["--batching", "continuous", "--arrivals", "0,1", "--arrival-rate", "1"], "exclude each other"),
        (["--batching", "continuous", "--arrival-rate", "0"], "arrival rate"),
        (["--batching", "continuous", "--no-chunked-prefill", "--max-batched-tokens", "2"], "without chunked prefill"),
    ],
)
def test_cli_batching_errors_are_one_line(capsys, extra, message) -> None:
    from kvsim.cli.entry import main

    assert main(["run", "--model", CLI_MODEL, "--steps", "2", "--prompt", "ab", "--prompt", "cd", *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and len(err.strip().splitlines()) == 1


def test_request_file_arrivals(tmp_path) -> None:
    from kvsim.serving.request_lists import load_requests

    f = tmp_path / "r.json"
    f.write_text('{"prompts": ["a", "b"], "arrivals": [0, 4]}', encoding="utf-8")
    assert load_requests(f).arrivals == (0, 4)
    f.write_text('{"prompts": ["a", "b"], "arrivals": [0]}', encoding="utf-8")
    with pytest.raises(SimulationError, match="arrivals"):
        load_requests(f)
