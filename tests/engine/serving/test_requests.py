"""Several requests through one shared paged pool: prefix hits skip exactly the shared blocks and change
no output, block tables stay sound at every step, reference counts return to zero, eviction under a
small pool, request files, and the CLI's several-requests mode and its errors."""

from __future__ import annotations

import json
import types
from collections import Counter

import pytest
from helpers import cli_json_lines

from kvsim.cli.entry import main
from kvsim.core.sampling import SimulationError
from kvsim.models.loading import load_model
from kvsim.serving.request_lists import (
    RequestInput,
    RequestList,
    demo_request_files,
    encode_requests,
    load_requests,
    parse_requests,
)
from kvsim.serving.requests import RequestsEngine, compare_prefix_caching, run_requests
from kvsim.serving.waste import shared_prefix_blocks

SMALL = "random:family=llama,layers=2,heads=4,kv_heads=2,dim=32,vocab=300,ctx=128,seed=5"
SHARED = list(range(40, 63))  # 23 shared tokens: 5 full blocks of 4, 1 of 16
PROMPTS = [SHARED + [1, 2, 3], SHARED + [4, 5], SHARED + [6, 7, 8, 9, 10], SHARED[:9]]


@pytest.fixture(scope="module")
def small():
    return load_model(SMALL)


def _check_tables(run, prompts) -> None:
    """At every step: a physical block is in at most one place of one table unless several live tables
    share it at the same logical index with equal token ids (a hash hit); ref count = its holders."""
    texts = [list(p) + list(r.output_ids) for p, r in zip(prompts, run.requests, strict=True)]
    size = run.block_size
    for snap in run.snapshots:
        places: dict[int, list[tuple[int, int]]] = {}
        for table in snap.tables:
            assert len(set(table.blocks)) == len(table.blocks), "a table maps two logical blocks to one physical block"
            for j, b in enumerate(table.blocks):
                places.setdefault(b, []).append((table.request, j))
        for b, where in places.items():
            assert snap.ref_counts[b] == len(where)
            if len(where) > 1:
                assert snap.hashes[b] is not None, f"block {b} shared without a hash"
                assert len({j for _, j in where}) == 1
                contents = {tuple(texts[r][j * size : (j + 1) * size]) for r, j in where}
                assert len(contents) == 1 and len(next(iter(contents))) == size
        unheld = [b for b in range(snap.n_blocks) if b not in places and b != snap.null_block]  # vLLM's null block: never free
        assert all(snap.ref_counts[b] == 0 for b in unheld)
        assert snap.free_blocks == len(unheld)


@pytest.mark.parametrize("schedule", ["sequential", "interleaved"])
def test_prefix_hits_skip_shared_blocks_and_change_no_output(small, schedule: str) -> None:
    both = compare_prefix_caching(small.model, small.tokenizer, PROMPTS, block_size=4, steps=6, schedule=schedule, repeats=2)
    off, on = both.off, both.on
    assert [r.output_ids for r in on.requests] == [r.output_ids for r in off.requests]  # greedy: same text
    assert [r.reused_rows for r in off.requests] == [0, 0, 0, 0]
    expected = shared_prefix_blocks(PROMPTS, 4)  # independent: chained hashes of the prompts alone
    assert expected == [0, 5, 5, 2]
    assert [r.hit_blocks for r in on.requests] == expected
    for r, p in zip(on.requests, PROMPTS, strict=True):
        assert r.reused_rows == 4 * r.hit_blocks and r.prefill_rows + r.reused_rows == len(p)
        assert r.miss_blocks == -(-len(p) // 4) - r.hit_blocks
        assert 0 < r.ttft_ms_min <= r.ttft_ms <= r.ttft_ms_max
        assert r.rows_held == len(p) + 5 and r.blocks_held == -(-r.rows_held // 4)
    for run in (off, on):
        _check_tables(run, PROMPTS)
        last = run.snapshots[-1]
        assert last.phase == "finish" and not last.ref_counts.any() and last.free_blocks == last.usable_blocks
    if schedule == "interleaved":  # requests live at once: the shared blocks are held by all of them
        assert max(int(s.ref_counts.max()) for s in on.snapshots) == 4
        assert [s.phase for s in on.snapshots[:4]] == ["prefill"] * 4
    assert on.waste.paged_shared_slots == on.waste.paged_slots - 4 * sum(expected)
    assert off.waste.paged_shared_slots == off.waste.paged_slots


def test_compared_runs_pair_their_trials_on_a_clock_that_counts_rows(small, monkeypatch) -> None:
    """A fake clock that moves by the rows each forward computes: a prefill with prefix hits takes
    (prompt - reused) / prompt of the time without, exactly, every pair alike — so the ratio is that,
    its interval has no width, and it is "faster" exactly for the requests with hits; a decode step
    computes one row in both runs: "within noise"."""
    import kvsim.serving.requests as engine_module

    clock = types.SimpleNamespace(now=0.0)
    monkeypatch.setattr(engine_module, "time", types.SimpleNamespace(perf_counter=lambda: clock.now))
    forward = RequestsEngine._forward

    def counted(self, r, start):
        clock.now += len(r.tokens) - start
        return forward(self, r, start)

    monkeypatch.setattr(RequestsEngine, "_forward", counted)
    both = compare_prefix_caching(small.model, small.tokenizer, PROMPTS, block_size=4, steps=4, repeats=2)
    expected = shared_prefix_blocks(PROMPTS, 4)
    for p, hits, ttft, itl in zip(PROMPTS, expected, both.ttft, both.itl, strict=True):
        assert ttft is not None and itl is not None
        assert ttft.pairs == 8 and itl.pairs == 3  # the minimum: every pair alike, the interval is as narrow as can be
        assert ttft.ratio == pytest.approx((len(p) - 4 * hits) / len(p)) and ttft.low == ttft.high == ttft.ratio
        assert ttft.verdict == ("faster" if hits else "within noise")
        assert itl.ratio == 1.0 and itl.verdict == "within noise"  # 3 pairs cannot reach 95% either


def test_snapshots_are_frozen_plain_values(small) -> None:
    run = run_requests(small.model, small.tokenizer, PROMPTS[:2], block_size=4, steps=3, repeats=1)
    snap = run.snapshots[len(run.snapshots) // 2]
    with pytest.raises(ValueError):
        snap.ref_counts[0] = 5
    with pytest.raises(AttributeError):
        snap.step = 3
    hit = run.snapshots[run.requests[1].first_step]
    assert Counter(hit.events)["hit"] == run.requests[1].hit_blocks == 5
    assert all(isinstance(t, int) for ids in hit.token_ids for t in ids)
    table = hit.table(1)
    assert table is not None and table.hit_blocks == 5 and not table.finished and hit.table(0).finished
    assert [t for b in table.blocks[:5] for t in hit.token_ids[b]] == SHARED[:20]  # the hit blocks hold the shared rows
    assert all(hit.hashes[b] is not None and hit.owners[b] == (1,) for b in table.blocks[:5])


def test_eviction_under_a_small_pool_and_pool_errors(small) -> None:
    prompts = [SHARED + [1, 2, 3], list(range(100, 126)), SHARED + [4, 5]]
    # each needs 8 blocks of 4: a pool of 9 keeps only one block of the first request's shared prefix
    run = RequestsEngine.from_keywords(
        small.model, small.tokenizer, prompts, block_size=4, steps=6, pool_blocks=9, repeats=1
    ).run()
    assert run.evictions > 0
    assert run.requests[2].hit_blocks < 5  # the second request's blocks pushed most of the prefix out
    assert run.requests[2].output_ids == run_requests(small.model, small.tokenizer, prompts[2:], steps=6).requests[0].output_ids
    _check_tables(run, prompts)
    with pytest.raises(SimulationError, match="request 1 needs up to 8 blocks of 4 slots"):
        RequestsEngine.from_keywords(small.model, small.tokenizer, prompts, block_size=4, steps=6, pool_blocks=7)
    with pytest.raises(SimulationError, match="pool has no room|block pool is full"):
        RequestsEngine.from_keywords(
            small.model, small.tokenizer, prompts, block_size=4, steps=6, pool_blocks=9, schedule="interleaved"
        ).run()
    with pytest.raises(SimulationError, match="empty prompt"):
        RequestsEngine.from_keywords(small.model, small.tokenizer, [[1, 2], []])
    with pytest.raises(SimulationError, match="block size"):
        RequestsEngine.from_keywords(small.model, small.tokenizer, [[1, 2]], block_size=0)


def test_request_files(tmp_path) -> None:
    assert parse_requests("a\n\n  b  \n").prompts == ("a", "b")
    assert parse_requests('["x", "y"]').prompts == ("x", "y")
    got = parse_requests('{"system": "S", "prompts": ["x"], "title": "t"}')
    assert (got.system, got.title, got.prompts) == ("S", "t", ("x",))
    for bad, message in [
        ("  \n", "is empty"),
        ('["x", ""]', "request 2 is an empty prompt"),
        ("[1]", "not a string"),
        ("[", "not valid JSON"),
        ('{"prompts": "x"}', "a list of strings or an object"),
        ("[]", "no requests"),
    ]:
        with pytest.raises(SimulationError, match=message):
            parse_requests(bad)
    with pytest.raises(SimulationError, match="no such file"):
        load_requests(tmp_path / "missing.txt")
    (tmp_path / "latin1.txt").write_bytes(b"caf\xe9\n")
    with pytest.raises(SimulationError, match="not UTF-8"):
        load_requests(tmp_path / "latin1.txt")


def test_demo_request_lists_load_and_share_a_prefix() -> None:
    files = demo_request_files()
    assert {f.name for f in files} >= {"system-prompt.json", "support-desk.json", "austen-openings.json"}
    tiny = load_model("tiny")  # no chat template: a list's system prompt is prepended as text
    reqs = encode_requests(tiny.tokenizer, load_requests(next(f for f in files if f.name == "austen-openings.json")))
    assert len(reqs) == 4 and all(isinstance(r, RequestInput) and r.text for r in reqs)
    assert shared_prefix_blocks([r.prompt_ids for r in reqs], 16)[1:] == [6, 6, 6]
    plain = encode_requests(tiny.tokenizer, RequestList(("hello",)))
    assert plain[0].prompt_ids == tuple(tiny.tokenizer.encode("hello"))


def _cli_json(capsys, *args: str) -> tuple[list[dict], dict]:
    return cli_json_lines(capsys, "run", "--model", SMALL, "--json", "--steps", "3", *args)


def test_cli_several_prompts(capsys, tmp_path) -> None:
    shared = "The same long opening line of every request, "
    rows, summary = _cli_json(capsys, "--prompt", shared + "one", "--prompt", shared + "two", "--block-size", "8")
    assert [r["request"] for r in rows] == [0, 1] and all(r["prefix_cache"] for r in rows)
    for r in rows:
        assert r["prefill_rows"] + r["reused_rows"] == r["prompt_tokens"] and r["ttft_ms"] > 0 and r["blocks_held"] > 0
    assert rows[1]["reused_rows"] == 8 * (len(shared.encode()) // 8)  # byte tokenizer: 1 token a byte
    assert summary["on"]["waste"]["paged_slots"] >= summary["on"]["waste"]["exact_slots"]
    path = tmp_path / "reqs.json"
    path.write_text(json.dumps([shared + "one", shared + "two"]))
    rows, summary = _cli_json(capsys, "--requests", str(path), "--compare-prefix-cache", "--interleave")
    assert [r["prefix_cache"] for r in rows] == [False, False, True, True]
    assert rows[1]["reused_rows"] == 0 and rows[3]["reused_rows"] > 0
    assert set(summary) == {"off", "on", "ttft_ratio_on_off", "on_vs_off", "load"}
    for c in summary["on_vs_off"]:  # per request, paired: the ratio inside its interval, the verdict from it
        for what in ("ttft", "itl"):
            lo, hi = c[what]["spread"]
            assert lo <= c[what]["ratio"] <= hi and c[what]["baseline"] == "off"
            said = "within noise" if lo <= 1 <= hi or c[what]["coverage"] < 0.95 else "faster" if hi < 1 else "slower"
            assert c[what]["verdict"] == said
        assert c["ttft"]["pairs"] >= 8
    assert main(["run", "--model", SMALL, "--steps", "2", "--prompt", "ab", "--prompt", "ac", "--no-prefix-cache"]) == 0
    text = capsys.readouterr().out
    assert "prefix caching off" in text and "contiguous, preallocated" in text and "paged (last block" in text


@pytest.mark.parametrize(
    "args, message",
    [
        (["--prompt", "a", "--prompt", " "], "request 2 is an empty prompt"),
        (["--prompt", "a", "--prompt", "b", "--block-size", "0"], "--block-size: must be ≥ 1"),
        (["--prompt", "a", "--prompt", "b", "--pool-blocks", "-1"], "--pool-blocks: must be ≥ 1"),
        (["--prompt", "a" * 40, "--prompt", "b", "--block-size", "4", "--pool-blocks", "2"], "needs up to"),
        (["--prompt", "a", "--block-size", "4"], "--block-size applies to several requests"),
        (["--prompt", "a", "--prompt", "b", "--lanes", "kv"], "--lanes applies to one prompt"),
        (["--prompt", "a", "--prompt", "b", "--no-prefix-cache", "--compare-prefix-cache"], "exclude each other"),
        (["--requests", "EMPTY"], "is empty"),
    ],
)
def test_cli_errors_are_one_line(capsys, tmp_path, args: list[str], message: str) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("\n \n")
    args = [str(empty) if a == "EMPTY" else a for a in args]
    assert main(["run", "--model", SMALL, "--steps", "2", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and len(err.strip().splitlines()) == 1


def test_saved_requests_run_round_trips_and_bad_files_are_one_error(capsys, tmp_path) -> None:
    from kvsim.engine.trace import Trace, TraceError
    from kvsim.serving.saved_runs import load_runs

    path = tmp_path / "reqs.kvsim"
    args = ["--prompt", "a shared opening, then one", "--prompt", "a shared opening, then two", "--block-size", "4"]
    assert main(["run", "--model", SMALL, "--steps", "3", "--json", "--compare-prefix-cache", "--save", str(path), *args]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    rows, summary = lines[:-1], lines[-1]["summary"]
    off, on = load_runs(path)
    assert (off.prefix_caching, on.prefix_caching) == (False, True)
    assert [r.reused_rows for r in on.requests] == [row["reused_rows"] for row in rows[2:]]
    assert len(on.snapshots) == 2 * 3 + 2 and on.snapshots[-1].phase == "finish"
    assert on.snapshots[on.requests[1].first_step].table(1).hit_blocks == on.requests[1].hit_blocks > 0
    assert all(len(s.token_ids) == on.pool_blocks for s in on.snapshots)
    assert on.waste.as_dict() == summary["on"]["waste"] and off.waste.as_dict() == summary["off"]["waste"]
    with pytest.raises(TraceError, match="several requests"):
        Trace.load(path)  # a one-run trace reader says what the file is
    broken = tmp_path / "broken.kvsim"
    broken.write_bytes(path.read_bytes()[:200])
    with pytest.raises(TraceError, match="broken.kvsim"):
        load_runs(broken)
    assert main(["inspect", str(path), "--json"]) == 0  # kvsim inspect reads it as what it is
    inspected = json.loads(capsys.readouterr().out)["requests_runs"]
    assert [r["reused_rows"] for r in inspected[1]["requests"]] == [r.reused_rows for r in on.requests]
    assert [run["prefix_caching"] for run in inspected] == [False, True]
    assert main(["inspect", str(broken)]) == 2 and "broken.kvsim" in capsys.readouterr().err
