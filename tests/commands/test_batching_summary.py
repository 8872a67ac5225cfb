"""The batching run's summary line gives its throughput as a reader takes it in (the JSON keeps 4 decimals)."""

from __future__ import annotations

import re

from helpers import kvsim_in_process

from kvsim.cli.batching import _rate


def test_a_rate_is_rounded_for_reading() -> None:
    assert _rate(786.7092) == "787" and _rate(100.0) == "100"
    assert _rate(12.4567) == "12.5" and _rate(0.04) == "0.0"
    assert _rate(None) == "-"


def test_the_summary_line_prints_a_rounded_rate(tmp_path, capsys) -> None:
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("a b c d e\nh i\n")
    argv = ["run", "--model", "tiny", "--requests", str(prompts), "--steps", "4", "--batching", "continuous"]
    done = kvsim_in_process(capsys, *argv, "--max-batched-tokens", "8")
    assert done.returncode == 0, done.stderr
    summary = next(line for line in done.stdout.splitlines() if "tokens/s" in line)
    rate = re.search(r"([\d.]+) tokens/s", summary).group(1)
    assert re.fullmatch(r"\d{3,}|\d{1,2}\.\d", rate), summary  # never "786.7092"
