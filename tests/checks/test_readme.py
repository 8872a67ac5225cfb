"""CI must run exactly the README's test command; the set-up (a virtual environment, then the two
commands) comes before the README's pictures."""

from helpers import ROOT


def _setup_block(readme: str) -> list[str]:
    block = readme.split("```bash", 1)[1].split("```", 1)[0]
    return [line.split("  #", 1)[0].strip() for line in block.splitlines() if line.strip() and not line.startswith("#")]


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    venv, *commands = _setup_block(readme)
    assert venv == "python3 -m venv .venv && . .venv/bin/activate"
    assert len(commands) == 2, commands  # exactly two set-up commands: run, test
    assert "kvsim" in commands[0] and "pytest" in commands[1]
    ci_lines = [line.strip() for line in (ROOT / ".ci/run").read_text().splitlines()]
    assert commands[1] in ci_lines


def test_the_setup_comes_before_the_pictures() -> None:
    readme = (ROOT / "README.md").read_text()
    assert readme.index("```bash") < readme.index("![")
    assert readme.index('-m "not slow"') < readme.index("![")  # the contributors' quick subset, named up top
