"""CI must run exactly the README's test command; the set-up (a virtual environment, then the two
commands) comes before the README's pictures."""

import re
import shlex
from pathlib import Path

import pytest
from helpers import ROOT, kvsim_in_process


def _setup_block(readme: str) -> list[str]:
    block = readme.split("```bash", 1)[1].split("```", 1)[0]
    return [line.split("  #", 1)[0].strip() for line in block.splitlines() if line.strip() and not line.startswith("#")]


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    venv, *commands = _setup_block(readme)
    assert venv == "python3 -m venv .venv && . .venv/bin/activate"
    assert len(commands) == 2, commands  # exactly two set-up commands: run, test
    assert "kvsim" in commands[0] and "pytest" in commands[1]
    # both install through the script that picks torch's build and pins kvsim to it (never a bare `pip install`)
    assert all(c.startswith("python scripts/install.py ") for c in commands), commands
    ci_lines = [line.strip() for line in (ROOT / ".ci/run").read_text().splitlines()]
    assert commands[1] in ci_lines


def test_the_setup_comes_before_the_pictures() -> None:
    readme = (ROOT / "README.md").read_text()
    assert readme.index("```bash") < readme.index("![")
    assert readme.index('-m "not slow"') < readme.index("![")  # the contributors' quick subset, named up top


# ---------------------------------------------------------------------------------- a README read in a minute
def _prose(readme: str) -> str:
    return re.sub(r"```.*?```", "", readme, flags=re.S)


def test_the_readme_is_short_and_has_one_picture() -> None:
    readme = (ROOT / "README.md").read_text()
    words = len(_prose(readme).split())
    assert words < 700, f"the README has {words} words outside its code blocks: move reference material to docs/"
    assert readme.count("![") == 1  # what it is, in one picture; the others are in docs/usage.md
    assert "docs/README.md" in readme and "docs/usage.md" in readme


def test_the_hero_caption_counts_the_rows_the_picture_shows() -> None:
    """The picture is scripts/screenshots.sh's `decode` shot: the prompt's tokens plus every step's but the last
    (the last token is chosen, not yet a row): the caption's count, from the same prompt and tokenizer."""
    from tokenizers import Tokenizer

    script = (ROOT / "scripts/screenshots.sh").read_text()
    prompt = re.search(r'^SHORT="([^"]+)"', script, re.M).group(1)
    steps = int(re.search(r'^shot decode (\d+) uncached,cached "\$SHORT"( --variants)?$', script, re.M).group(1))
    tokens = len(Tokenizer.from_file(str(ROOT / "resources/models/tiny/tokenizer.json")).encode(prompt).ids)
    assert re.search(r'cp "\$TMP/decode/kvsim-1920x1080.png" "\$OUT/main-1920x1080.png"', script)
    caption = re.search(r"!\[([^]]*)\]\(docs/screenshots/main-1920x1080.png\)", (ROOT / "README.md").read_text()).group(1)
    assert f"all {tokens + steps - 1} rows" in caption, caption


def test_the_docs_index_lists_every_doc() -> None:
    index = (ROOT / "docs/README.md").read_text()
    linked = {Path(link).name for link in re.findall(r"\]\(([^)#]+)", index)}
    assert sorted(p.name for p in (ROOT / "docs").glob("*.md") if p.name != "README.md" and p.name not in linked) == []


def test_no_doc_cites_an_issue_number() -> None:
    """Readers cannot look up this project's issues: a doc says what changed, not which issue asked for it."""
    cited = [
        f"{p.name}: {m.group(0)}"
        for p in [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
        for m in re.finditer(r"\b[Ii]ssue \d+|\(issue #?\d+", p.read_text())
    ]
    assert cited == []


# the README's "Try" lines that are not run here, each with its reason; every other line runs
NOT_RUN_HERE = {
    "kvsim --lang pt_BR": "opens the window (tests/app start the app offscreen)",
}
NETWORK = ("kvsim models get smollm2-135m", "kvsim run --model smollm2-135m")  # against a stand-in Hub


def _try_block() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    block = readme.split("## Try", 1)[1].split("```bash", 1)[1].split("```", 1)[0].replace("\\\n", " ")
    return [line.split("  #", 1)[0].strip() for line in block.splitlines() if line.strip()]


@pytest.fixture
def smollm2_on_a_stand_in_hub(monkeypatch, tmp_path):
    """`kvsim models get smollm2-135m` against a Hub on 127.0.0.1 whose SmolLM2 repository holds the bundled
    model's files (the network is never reached; huggingface_hub in this process allowed online)."""
    import huggingface_hub.constants
    from hub_server import HubStandIn

    from kvsim.models import hub

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(hub.hub_cache_dir()))
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    repo = tmp_path / "repo"
    repo.mkdir()
    tiny = ROOT / "resources/models/tiny"
    for name in ("config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"):
        (repo / name).write_bytes((tiny / name).read_bytes())
    with HubStandIn() as server:
        server.add_repo(hub.HUB_MODELS["smollm2-135m"].repo_id, repo)
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        yield server


def test_the_readme_try_lines_run_in_order_in_a_fresh_folder(capsys, monkeypatch, tmp_path, smollm2_on_a_stand_in_hub) -> None:
    lines = _try_block()
    assert len(lines) >= 3 and all(line.startswith("kvsim") for line in lines), lines
    monkeypatch.chdir(tmp_path)  # a folder of its own, as a newcomer's
    ran, skipped = [], []
    for line in lines:
        if line in NOT_RUN_HERE:
            skipped.append(line)
            continue
        done = kvsim_in_process(capsys, *shlex.split(line)[1:])
        assert done.returncode == 0, f"{line}: {done.stderr[-2000:]}"
        assert done.stdout.strip() or done.stderr.strip(), line
        ran.append(line)
    assert skipped == list(NOT_RUN_HERE)  # a line that cannot run here is named, with its reason
    assert [r for r in ran if r.startswith(NETWORK)] and smollm2_on_a_stand_in_hub.requests  # the Hub was used
    assert any(line.startswith("kvsim memory") for line in ran)
