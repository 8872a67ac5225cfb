"""`kvsim run` contract: JSON Lines per step, a summary line, and one-line errors with exit 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from helpers import cli_json_lines

from kvsim.cli.entry import main

SMALL = "random:family=llama,layers=2,heads=4,kv_heads=2,dim=32,ctx=64,seed=0"


def run_json(capsys, *args: str) -> tuple[list[dict], dict]:
    return cli_json_lines(capsys, "run", "--model", SMALL, "--json", *args)


def test_json_lines_contract(capsys) -> None:
    steps, summary = run_json(capsys, "--prompt", "hello", "--steps", "6")
    assert [s["step"] for s in steps] == list(range(6))
    assert [s["phase"] for s in steps] == ["prefill"] + ["decode"] * 5
    p = len(b"hello")
    assert [s["cached"]["kv_positions"] for s in steps] == [p, 1, 1, 1, 1, 1]
    assert [s["uncached"]["kv_positions"] for s in steps] == [p + i for i in range(6)]
    for s in steps:
        assert isinstance(s["token_id"], int) and isinstance(s["token"], str)
        for lane in ("uncached", "cached"):
            assert set(s[lane]) >= {"kv_positions", "flops", "wall_ms", "cache_tokens", "cache_bytes"}
            assert s[lane]["flops"] > 0 and s[lane]["wall_ms"] > 0
        assert s["cached"]["flops"] <= s["uncached"]["flops"]
    assert steps[-1]["cached"]["cache_tokens"] == p + 5
    assert summary["tokens_identical"] is True
    assert summary["max_abs_logit_diff"] < 1e-4
    assert set(summary["ttft_ms"]) == set(summary["itl_ms"]) == {"uncached", "cached"}


def test_prompt_ids_and_lanes(capsys) -> None:
    steps, summary = run_json(capsys, "--prompt-ids", "1,2,3", "--steps", "3", "--lanes", "cached")
    assert [s["cached"]["kv_positions"] for s in steps] == [3, 1, 1]
    assert "uncached" not in steps[0]


def test_seeded_sampling_is_reproducible(capsys) -> None:
    a, _ = run_json(capsys, "--prompt", "abc", "--steps", "12", "--temperature", "1.5", "--seed", "7")
    b, _ = run_json(capsys, "--prompt", "abc", "--steps", "12", "--temperature", "1.5", "--seed", "7")
    c, _ = run_json(capsys, "--prompt", "abc", "--steps", "12", "--temperature", "1.5", "--seed", "8")
    ids = lambda rows: [r["token_id"] for r in rows]  # noqa: E731
    assert ids(a) == ids(b)
    assert ids(a) != ids(c)


def test_table_output(capsys) -> None:
    assert main(["run", "--model", SMALL, "--prompt", "hi", "--steps", "3"]) == 0
    out = capsys.readouterr().out
    assert "prefill" in out and "decode" in out and "TTFT" in out and "identical" in out


def test_save_trace(tmp_path, capsys) -> None:
    from kvsim.engine.trace import Trace

    path = tmp_path / "x.kvsim"
    assert main(["run", "--model", SMALL, "--prompt", "hi", "--steps", "4", "--save", str(path), "--json"]) == 0
    assert len(Trace.load(path).records) == 4


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["run", "--model", SMALL, "--prompt", "", "--steps", "3"], "prompt is empty"),
        (["run", "--model", SMALL, "--prompt", "   ", "--steps", "3"], "prompt is empty"),
        (["run", "--model", SMALL, "--prompt", "x", "--steps", "0"], "steps"),
        (["run", "--model", SMALL, "--prompt", "x", "--steps", "-3"], "steps"),
        (["run", "--model", SMALL, "--prompt", "x" * 65, "--steps", "1"], "longer than the model's context"),
        (["run", "--model", SMALL, "--prompt", "x" * 60, "--steps", "10"], "context"),
        (["run", "--model", "no-such-model", "--prompt", "x"], "unknown model"),
        (["run", "--model", "random:layers=two", "--prompt", "x"], "integer"),
        (["run", "--model", "random:layers", "--prompt", "x"], "key=value"),
        (["run", "--model", "random:wings=3", "--prompt", "x"], "unknown random: setting"),
        (["run", "--model", "random:heads=8,kv_heads=3", "--prompt", "x"], "multiple"),
        (["run", "--model", SMALL, "--prompt-ids", "1,x"], "prompt-ids"),
        (["run", "--model", SMALL, "--prompt-ids", "1,99999"], "vocabulary"),
        (["run", "--model", SMALL, "--prompt", "x", "--lanes", "warp"], "unknown lane"),
        (["run", "--model", SMALL, "--prompt", "x", "--temperature", "-1"], "temperature"),
        (["run", "--model", SMALL, "--prompt", "x", "--top-p", "2"], "top-p"),
        (["memory", "--layers", "2", "--kv-heads", "2", "--head-dim", "8", "--context", "-5"], "context"),
        (["memory", "--preset", "gpt5", "--context", "5"], "unknown preset"),
        (["memory", "--layers", "2", "--context", "5"], "missing"),
        (["run", "--bogus"], "unrecognized"),
        (["run", "--model", "random:head_dim=-2", "--prompt", "x"], "positive"),
        (["run", "--model", "random:hidden=-4", "--prompt", "x"], "positive"),
        (["run", "--model", "random:rope_theta=0", "--prompt", "x"], "rope_theta"),
        (["run", "--model", SMALL, "--prompt", "x", "--temperature", "nan"], "temperature"),
        (["run", "--model", SMALL, "--prompt", "x", "--save", "/no/such/folder/x.kvsim"], "cannot write"),
    ],
)
def test_bad_input_is_one_line_exit_2(args, fragment, capsys) -> None:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert fragment in err


def test_real_entry_point_error_has_no_traceback() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "kvsim", "run", "--model", "/no/such/dir", "--prompt", "x"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: ") and "Traceback" not in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "kvsim", "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("kvsim ")


def test_corrupt_checkpoint_is_a_clear_error(tmp_path, capsys) -> None:
    (tmp_path / "config.json").write_text(
        json.dumps(
            {
                "model_type": "llama",
                "num_hidden_layers": 1,
                "num_attention_heads": 2,
                "hidden_size": 8,
                "intermediate_size": 16,
                "vocab_size": 300,
            }
        )
    )
    (tmp_path / "model.safetensors").write_bytes(b"\x00garbage" * 10)
    assert main(["run", "--model", str(tmp_path), "--prompt", "x"]) == 2
    assert "corrupt" in capsys.readouterr().err
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert"}))
    assert main(["run", "--model", str(tmp_path), "--prompt", "x"]) == 2
    assert "not supported" in capsys.readouterr().err


def test_no_arguments_opens_the_app_with_scale(monkeypatch) -> None:
    import kvsim.ui.app

    opened = {}

    def app_main(model=None, lang=None, threads=None, lanes=None, prompt=None) -> int:
        opened.update(model=model, lang=lang, threads=threads)
        assert lanes is None and prompt is None  # none given (tests/app/window/test_reach.py gives them)
        return 0

    monkeypatch.setattr(kvsim.ui.app, "main", app_main)
    monkeypatch.delenv("QT_SCALE_FACTOR", raising=False)
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    assert main(["--scale", "1.5", "--model", "tiny", "--lang", "pt-BR"]) == 0
    assert opened == {"model": "tiny", "lang": "pt-BR", "threads": None}
    assert main(["--threads", "2"]) == 0  # the app sets them once its splash is up (torch is not imported before)
    assert opened == {"model": None, "lang": None, "threads": 2}
    assert main(["--lang", "klingon"]) == 2
    import os

    # popped directly: monkeypatch.delenv would record "1.5" and restore it for later Qt tests
    assert os.environ.pop("QT_SCALE_FACTOR") == "1.5"


def test_threads_option_either_side_of_run() -> None:
    from kvsim.cli.entry import build_parser

    parser = build_parser()
    assert parser.parse_args(["--threads", "3", "run", "--prompt", "x"]).threads == 3
    assert parser.parse_args(["run", "--threads", "2", "--prompt", "x"]).threads == 2
    assert parser.parse_args(["run", "--prompt", "x"]).threads is None


def test_memory_config_of_the_wrong_kind(tmp_path, capsys) -> None:
    path = tmp_path / "config.json"
    for content in (
        "[1, 2]",
        json.dumps({"num_hidden_layers": 2, "num_attention_heads": 0, "hidden_size": 8, "vocab_size": 10}),
        json.dumps({"num_hidden_layers": "two", "num_attention_heads": 2, "hidden_size": 8}),
    ):
        path.write_text(content)
        assert main(["memory", "--config", str(path), "--context", "5"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1, err


def test_chat_templates_render_sandboxed() -> None:
    from tokenizers import Tokenizer, models

    from kvsim.models.tokenizer import ChatTemplateError, TextTokenizer

    tok = TextTokenizer(Tokenizer(models.WordLevel({"a": 0, "[UNK]": 1}, unk_token="[UNK]")))
    tok.chat_template = "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}<assistant>"
    assert tok.format_prompt("hi") == "<user>hi<assistant>"
    assert tok.format_prompt("hi", chat=False) == "hi"
    tok.chat_template = "{{ cycler.__init__.__globals__.os.getcwd() }}"  # a model file must not run code
    with pytest.raises(ChatTemplateError):
        tok.format_prompt("hi")
    tok.chat_template = "{{ raise_exception('only user turns') }}"
    with pytest.raises(ChatTemplateError, match="only user turns"):
        tok.format_prompt("hi")
    tok.chat_template = "{% if %}"
    with pytest.raises(ChatTemplateError):
        tok.format_prompt("hi")


def test_checkpoint_chat_template_is_applied(tmp_path, capsys) -> None:
    import shutil

    from kvsim.models.loading import bundled_models_dir, load_model

    ckpt = tmp_path / "tiny-chat"
    shutil.copytree(bundled_models_dir() / "tiny", ckpt)
    config = json.loads((ckpt / "tokenizer_config.json").read_text())
    config["chat_template"] = "{% for m in messages %}Q: {{ m.content }}\n{% endfor %}A:"
    (ckpt / "tokenizer_config.json").write_text(json.dumps(config))
    tok = load_model(str(ckpt)).tokenizer
    assert tok.format_prompt("Who?") == "Q: Who?\nA:"
    assert main(["run", "--model", str(ckpt), "--prompt", "Who?", "--steps", "1", "--json"]) == 0
    chat = json.loads(capsys.readouterr().out.splitlines()[0])
    assert main(["run", "--model", str(ckpt), "--prompt", "Who?", "--steps", "1", "--json", "--no-chat-template"]) == 0
    plain = json.loads(capsys.readouterr().out.splitlines()[0])
    assert chat["cached"]["kv_positions"] > plain["cached"]["kv_positions"]  # the template's tokens


def test_no_display_is_a_clear_error(monkeypatch, capsys) -> None:
    import sys as _sys

    if not _sys.platform.startswith("linux"):
        pytest.skip("the display check is for Linux")
    for var in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        monkeypatch.delenv(var, raising=False)
    assert main([]) == 2
    assert "no display" in capsys.readouterr().err


def test_gqa_compares_kv_head_counts_with_the_memory_formula(capsys):
    """MHA → GQA → MQA on one shape: the measured bytes per token are 2·L·H_kv·d·4 (fp32), halving."""
    assert main(["gqa", "--layers", "2", "--heads", "4", "--dim", "64", "--prompt-len", "8", "--steps", "3", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    kinds = [(r["kv_heads"], r["group_size"], r["kind"]) for r in rows]
    assert kinds == [(4, 1, "MHA"), (2, 2, "GQA"), (1, 4, "MQA"), (1, 4, "MLA")]
    head_dim = 64 // 4
    mla = rows.pop()  # latent attention at DeepSeek-V2's proportions: r = 4·d, d_R = d/2, one latent for every head
    assert mla["latent"] == 4 * head_dim + head_dim // 2 and mla["bytes_per_token"] == 2 * mla["latent"] * 4
    assert mla["cache_bytes"] == mla["bytes_per_token"] * (8 + 3 - 1)
    for r in rows:
        assert r["bytes_per_token"] == 2 * 2 * r["kv_heads"] * head_dim * 4
        assert r["cache_bytes"] == r["bytes_per_token"] * (8 + 3 - 1)
        assert r["itl_ms_median"] > 0
    # the steps are interleaved and paired with MHA's: 2 decode rounds are too few for a 95% interval
    assert all(r["pairs"] == 2 for r in [*rows, mla])
    for r in [*rows[1:], mla]:
        lo, hi = r["itl_ratio_spread"]
        assert lo <= r["itl_ratio_vs_mha"] <= hi and r["itl_ratio_coverage"] < 0.95 and r["verdict"] == "within noise"
    assert rows[0]["itl_ratio_vs_mha"] is None and rows[0]["verdict"] is None
    assert sorted(r["rank"] for r in [*rows, mla]) == [1, 2, 3, 4]
    # timed by this thread's CPU time instead: the same rows, the clock named
    small = "gqa --layers 1 --heads 2 --dim 32 --prompt-len 4 --steps 3 --clock cpu --json".split()
    assert main(small) == 0
    cpu = json.loads(capsys.readouterr().out)
    assert cpu["clock"] == "cpu" and [r["kind"] for r in cpu["rows"]] == ["MHA", "MQA", "MLA"]
    assert main(["gqa", "--heads", "8", "--dim", "100"]) == 2
    assert "multiple of --heads" in capsys.readouterr().err


@pytest.mark.parametrize("spec", ["int4:g¹", "int8:r²", "int4:g٣", "window:٣", "int4:g0", "window:1e3", "kv+kv"])
def test_lane_specs_take_ascii_numbers_only(spec, capsys):
    """Digits that str.isdigit() accepts (superscripts, Arabic-Indic) are not sizes: one error line."""
    assert main(["run", "--model", "random:layers=1,heads=2,kv_heads=1,dim=16", "--prompt-ids", "1,2", "--lanes", spec]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and len(err.splitlines()) == 1 and "unexpected" not in err


def test_reference_is_stripped_like_the_lanes(capsys):
    args = ["run", "--model", "random:layers=1,heads=2,kv_heads=1,dim=16", "--prompt-ids", "1,2", "--steps", "2"]
    assert main([*args, "--lanes", " kv , window:4 ", "--reference", " window:4", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["summary"]
    assert summary["lanes"]["window:4"]["max_abs_logit_diff"] == 0.0  # the reference is measured from itself


def test_repeats_give_each_step_a_median_and_its_spread(capsys):
    args = ["run", "--model", "random:layers=1,heads=2,kv_heads=1,dim=16", "--prompt-ids", "1,2,3", "--steps", "4"]
    assert main([*args, "--repeats", "5", "--json"]) == 0
    steps = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()[:-1]]
    for step in steps:
        for lane in ("uncached", "cached"):
            t = step[lane]
            assert t["wall_ms_min"] <= t["wall_ms"] <= t["wall_ms_max"]
    assert main([*args, "--json"]) == 0  # one forward: no spread to report
    assert "wall_ms_min" not in capsys.readouterr().out
    assert main([*args, "--repeats", "101"]) == 2


def test_compile_with_several_requests_is_refused_not_ignored(capsys) -> None:
    argv = ["run", "--model", "random:layers=1,heads=2,kv_heads=1,dim=32", "--prompt", "a", "--prompt", "b", "--compile"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: --compile applies to one prompt, not to several requests"], err


def test_a_memory_error_without_a_message_is_one_line_that_says_so(capsys, monkeypatch) -> None:
    from kvsim.cli import memory

    def exhausted(args):
        raise MemoryError()  # what an allocation that fails usually raises: no message at all

    monkeypatch.setattr(memory, "run", exhausted)
    assert main(["memory", "--list"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: not enough memory (MemoryError); fewer steps"), err


def test_inspect_escapes_a_lane_name_read_from_the_file_everywhere(capsys, tmp_path) -> None:
    import hostile

    good = tmp_path / "good.kvsim"
    model = "random:layers=1,heads=2,kv_heads=1,dim=32,seed=2"
    assert (
        main(["run", "--model", model, "--prompt-ids", "1,2,3", "--steps", "6", "--lanes", "kv,window:4", "--save", str(good)])
        == 0
    )
    capsys.readouterr()
    hostile_name = "\x1b]0;owned\x07kv"  # a title-setting escape as the first lane's name (the others compare to it)

    def rename(m, a) -> None:
        for lane in [*m["meta"]["lanes"], *(step["lanes"][0] for step in m["steps"])]:
            if lane["name"] == "kv":
                lane["name"] = hostile_name

    path = tmp_path / "renamed.kvsim"
    path.write_bytes(hostile._damaged_copies(good, {"renamed": rename})["renamed"])
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\\x1b]0;owned\\x07kv's" in out, out


def test_more_threads_than_an_address_space_limit_holds_are_one_line(capsys, monkeypatch) -> None:
    import resource

    from kvsim.models import loading

    limits = {resource.RLIMIT_AS: (4 * 1024**3, resource.RLIM_INFINITY), resource.RLIMIT_STACK: (8 * 1024**2, -1)}
    monkeypatch.setattr(resource, "getrlimit", lambda which: limits.get(which, (resource.RLIM_INFINITY,) * 2))
    most = loading.threads_that_fit()
    assert 1 <= most < 64  # 4 GB, less what is mapped and the arenas, over 40 MB a thread
    argv = ["run", "--model", "random:layers=1,heads=2,kv_heads=1,dim=32", "--prompt-ids", "1,2", "--steps", "1"]
    assert main([*argv, "--threads", "512"]) == 2  # (libgomp ended the process: "Thread creation failed", exit 1)
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "error: threads: the stacks and buffers of 512 threads do not fit in this process's address-space limit "
        f"(ulimit -v); at most {most} here"
    ], err
    import torch

    before = torch.get_num_threads()
    assert loading.set_threads(None) >= 1  # the default is never refused
    loading.set_threads(before)
    monkeypatch.setattr(resource, "getrlimit", lambda which: (resource.RLIM_INFINITY,) * 2)
    assert loading.threads_that_fit() == loading.MAX_THREADS
