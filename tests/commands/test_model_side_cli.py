"""`kvsim run --lanes kv,spec:4:lookup,kv@w8 --json`: per-lane speculative fields each step, and in
the summary acceptance, tokens per target forward and the weights' real bytes; bad specs are one
`error:` line with exit 2; `--save` keeps them in the trace."""

from __future__ import annotations

import json

import pytest

from kvsim.cli.entry import main
from kvsim.engine.trace import Trace
from kvsim.models.kernels.quantized_weights import quantize_model, weight_bytes
from kvsim.models.loading import load_model

SMALL = "random:family=llama,layers=2,heads=4,kv_heads=2,dim=32,ctx=64,seed=0"


def test_json_carries_the_model_side_fields(capsys, tmp_path) -> None:
    path = tmp_path / "run.kvsim"
    ids = ",".join(str(i) for i in [5, 6, 7, 8, 5, 6, 7, 8, 5, 6])
    lanes = "kv,spec:4:lookup,kv@w8,int4@w4:g16"
    args = ["run", "--model", SMALL, "--json", "--prompt-ids", ids, "--steps", "12", "--lanes", lanes, "--save", str(path)]
    assert main(args) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    steps, summary = lines[:-1], lines[-1]["summary"]
    for step in steps:
        spec = step["spec:4:lookup"]
        assert {"forwards", "drafted", "accepted", "rolled_back", "draft_ms"} <= set(spec)
        assert spec["accepted"] + spec["rolled_back"] == spec["drafted"]
        assert "drafted" not in step["kv"]  # the other lanes' records are as before
        # a check's drafted tokens, right after the step's positions; the accepted ones are the run's next tokens
        assert ("draft_ids" in spec) == bool(spec["drafted"])
        if spec["drafted"]:
            assert spec["draft_from"] == step["positions"][1] + 1 and len(spec["draft_ids"]) == spec["drafted"]
            ahead = [s["token_id"] for s in steps[step["step"] :]]
            assert spec["draft_ids"][: spec["accepted"]] == ahead[: spec["accepted"]]
            if spec["accepted"] < spec["drafted"] and spec["accepted"] < len(ahead):
                assert spec["draft_ids"][spec["accepted"]] != ahead[spec["accepted"]]  # the first rejected one
    assert any(s["spec:4:lookup"]["drafted"] for s in steps)
    lanes_sum = summary["lanes"]
    spec = lanes_sum["spec:4:lookup"]
    assert spec["drafted_total"] == sum(s["spec:4:lookup"]["drafted"] for s in steps)
    assert spec["target_forwards"] == sum(s["spec:4:lookup"]["forwards"] for s in steps)
    assert spec["tokens_per_forward"] == pytest.approx(len(steps) / spec["target_forwards"])
    assert spec["acceptance_rate"] == pytest.approx(spec["accepted_total"] / spec["drafted_total"])
    assert lanes_sum["kv"]["tokens_per_forward"] == 1.0 and lanes_sum["kv"]["acceptance_rate"] is None
    assert lanes_sum["spec:4:lookup"]["tokens_identical"]  # greedy: the target's own tokens
    # the weights' bytes are those of the stored tensors
    model = load_model(SMALL).model
    assert lanes_sum["kv"]["weight_bytes"] == weight_bytes(model)["total"]
    assert lanes_sum["kv@w8"]["weight_bytes"] == weight_bytes(quantize_model(model, 8, 32, blocks="Q8_0"))["total"]
    assert lanes_sum["int4@w4:g16"]["weights"] == "w4:g16"
    assert lanes_sum["int4@w4:g16"]["weight_bytes"] < lanes_sum["kv@w8"]["weight_bytes"] < lanes_sum["kv"]["weight_bytes"]
    trace = Trace.load(path)
    assert [lane["name"] for lane in trace.meta["lanes"]] == lanes.split(",")
    assert sum(r.lane("spec:4:lookup").drafted for r in trace.records) == spec["drafted_total"]


def test_text_output_names_acceptance_and_weights(capsys) -> None:
    assert main(["run", "--model", SMALL, "--prompt-ids", "3,4,3,4,3", "--steps", "6", "--lanes", "kv,spec:2:early:1,kv@w8"]) == 0
    out = capsys.readouterr().out
    assert "tokens per target forward" in out and "weights w8:" in out


@pytest.mark.parametrize(
    ("lanes", "fragment"),
    [
        ("kv,spec:4", "draft source"),
        ("kv,spec:99:lookup", "1 to 16"),
        ("kv@w5", "is not w8, w4, gguf or bf16"),
        ("kv,spec:2:early:9", "early:9"),
        ("kv,spec:2:model:nope", "nope"),
        ("kv@w4:g6", "groups of 6"),
    ],
)
def test_bad_model_side_lanes_are_one_line_exit_2(lanes, fragment, capsys) -> None:
    assert main(["run", "--model", SMALL, "--prompt", "x", "--steps", "2", "--lanes", lanes]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert fragment in err


def test_a_run_without_a_prompt_says_so_before_loading_the_model(capsys, monkeypatch) -> None:
    """`kvsim run --model M --lanes …` with no prompt: one `error:` line at once (a 270M model took 35 s to
    load before it said so); the model is never loaded."""
    import kvsim.models.loading as loading

    def never(*a, **k):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(loading, "load_model", never)
    assert main(["run", "--model", "tiny", "--lanes", "kv,kv@w8", "--steps", "2", "--json"]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == ["error: the prompt is empty: give --prompt TEXT or --prompt-ids 1,2,3"]


@pytest.mark.slow
def test_gemma3_weight_lanes_from_the_command_line(capsys) -> None:
    """Opt-in (KVSIM_GEMMA3=1): `kvsim run` on Gemma 3 270M (its tied 262k-vocabulary head) with the plain,
    the file's-own-blocks and the INT8/INT4 lanes: exit 0, one JSON object per step and a summary; the
    @gguf lane chooses kv's tokens from fewer bytes, the INT4 lane holds the fewest."""
    from helpers import opt_in_model_file

    path = opt_in_model_file("KVSIM_GEMMA3", "gemma3-270m", "run Gemma 3's weight lanes from the command line")
    lanes = "kv,kv@gguf,kv@w8,kv@w4:g64"
    args = ["run", "--model", str(path), "--prompt", "The key-value cache is a technique that", "--lanes", lanes]
    assert main([*args, "--steps", "3", "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(lines) == 4 and all(line["step"] == i for i, line in enumerate(lines[:3]))
    summary = lines[-1]["summary"]["lanes"]
    assert summary["kv@gguf"]["tokens_identical"] and summary["kv@gguf"]["max_abs_logit_diff"] < 1e-3
    sizes = {name: summary[name]["weight_bytes"] for name in lanes.split(",")}
    assert sizes["kv@w4:g64"] < sizes["kv@gguf"] < sizes["kv@w8"] < sizes["kv"]
