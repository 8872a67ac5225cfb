"""Commands that answer at once: `kvsim --help`, `--version`, `memory`, `roofline --preset`, `models list` and
`inspect` never import torch (held by an import hook in a fresh interpreter, not by a clock); every option
has help text, every subcommand's help ends with examples, and the lazy parser agrees with the whole one."""

from __future__ import annotations

import argparse
import ast
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT

from kvsim.cli.entry import COMMANDS, build_parser, command_module, main, parse

SMALL = "random:family=llama,layers=2,heads=4,kv_heads=2,dim=32,ctx=64,seed=0"

# run in a fresh interpreter: any import of torch (or of one of its submodules) raises, and the exit code
# and whether torch reached sys.modules are printed last
NO_TORCH = """
import sys
class NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "huggingface_hub"):  # nor the Hub's client (models list reads its cache)
            raise ImportError(name + " was imported")
sys.meta_path.insert(0, NoTorch())
from kvsim.cli.entry import main
try:
    rc = main(sys.argv[1:])
except SystemExit as exc:
    rc = exc.code
print("RESULT", rc, "torch" in sys.modules, file=sys.stderr)
"""


def _without_torch(*argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", NO_TORCH, *argv], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)


@pytest.fixture(scope="module")
def saved_run(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("run") / "run.kvsim"
    assert main(["run", "--model", SMALL, "--prompt", "hi", "--steps", "3", "--save", str(path), "--json"]) == 0
    return path


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["--help"], "kvsim memory"),
        (["--version"], "kvsim 0.1.0"),
        (["memory", "--preset", "llama-3-8b", "--context", "8192"], "1,073,741,824 bytes"),
        (["memory", "--layers", "2", "--kv-heads", "2", "--head-dim", "4", "--context", "10", "--json"], '"bytes": 640'),
        (["memory", "--list"], "llama-3-8b"),
        (["memory", "--help"], "examples:"),
        (["roofline", "--preset", "llama-3-8b", "--gpu", "H100"], "memory-bound"),
        (["models", "list"], "smollm2-135m"),
        (["models", "--help"], "examples:"),
        (["inspect", "RUN"], "lanes: uncached, cached"),
        (["inspect", "RUN", "--json"], '"steps": 3'),
    ],
)
def test_quick_commands_never_import_torch(argv, expected, saved_run) -> None:
    argv = [str(saved_run) if a == "RUN" else a for a in argv]
    done = _without_torch(*argv)
    assert done.stderr.splitlines()[-1] == "RESULT 0 False", done.stderr[-2000:]
    assert expected in done.stdout


def test_the_hook_catches_a_torch_import() -> None:
    """The check above could fail: a command that needs torch, under the same hook, does not get it."""
    done = _without_torch("run", "--model", SMALL, "--prompt", "hi", "--steps", "2")
    assert done.stderr.splitlines()[-1] != "RESULT 0 False"


def test_user_errors_are_one_line_without_torch(saved_run) -> None:
    done = _without_torch("memory", "--preset", "no-such-model", "--context", "5")
    lines = done.stderr.splitlines()
    assert lines[-1] == "RESULT 2 False" and lines[0].startswith("error: unknown preset")
    assert "Traceback" not in done.stderr


def _parsers(p: argparse.ArgumentParser, path: tuple[str, ...] = ("kvsim",)):
    yield path, p
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _parsers(child, (*path, name))


def test_every_option_has_help_and_every_command_examples() -> None:
    missing, no_examples = [], []
    for path, p in _parsers(build_parser()):
        for action in p._actions:
            if not isinstance(action, argparse._HelpAction) and not (action.help or "").strip():
                missing.append(f"{' '.join(path)} {'/'.join(action.option_strings) or action.dest}")
        lines = (p.epilog or "").splitlines()
        if not (lines and lines[0] == "examples:" and 2 <= len(lines) - 1 <= 3):
            no_examples.append(" ".join(path))
        assert all(line.startswith("  kvsim") for line in lines[1:]), path
        help_text = p.format_help()
        assert help_text.rstrip().endswith(lines[-1].strip()) if lines else True  # examples close the help
    assert missing == []
    assert no_examples == []


def test_every_example_parses() -> None:
    for _, p in _parsers(build_parser()):
        for line in (p.epilog or "").splitlines()[1:]:
            words = shlex.split(line)[1:]
            parse(words)  # raises UsageError (a test failure) on an example that no longer parses


def test_the_listed_help_lines_are_the_commands_own() -> None:
    table = {name: command.help for name, command in COMMANDS.items()}
    assert table == {name: command_module(name).HELP for name in COMMANDS}
    full = {a.dest: a.help for a in build_parser()._subparsers._group_actions[0]._choices_actions}
    assert full == table
    for only in ("", "run", "memory"):
        listed = {a.dest: a.help for a in build_parser(only)._subparsers._group_actions[0]._choices_actions}
        assert listed == table


def _top_level_names(path: Path) -> set[str]:
    """The functions and variables ``path`` defines at its top level (read, not imported)."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def test_the_table_is_the_only_registration_of_a_subcommand() -> None:
    """A module of kvsim/cli that defines any of a subcommand's three names is in COMMANDS, and every module
    COMMANDS names exports all three: a subcommand written but not registered (or half written) fails here."""
    parts = {"HELP", "add_parser", "run"}
    defining = {path.stem for path in (ROOT / "kvsim" / "cli").glob("*.py") if _top_level_names(path) & parts}
    assert defining == {command.module for command in COMMANDS.values()}
    for name in COMMANDS:
        module = command_module(name)
        assert isinstance(module.HELP, str) and module.HELP.strip(), name
        assert callable(module.add_parser) and callable(module.run), name
        assert name in build_parser(name)._subparsers._group_actions[0].choices  # its add_parser adds the command


def test_the_table_registration_catches_an_unregistered_module(tmp_path) -> None:
    """The check above could fail: a module with a subcommand's names is found by it."""
    (tmp_path / "extra.py").write_text('HELP = "x"\n\ndef add_parser(sub):\n    pass\n', encoding="utf-8")
    assert _top_level_names(tmp_path / "extra.py") & {"HELP", "add_parser", "run"} == {"HELP", "add_parser"}


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--prompt", "x", "--steps", "3"],
        ["--threads", "3", "run", "--prompt", "x"],
        ["--model", "run", "--lang", "en"],  # a model named like a command: the app, not `run`
        ["--model=tiny", "memory", "--preset", "gpt2", "--context", "5"],
        ["models", "get", "smollm2-135m"],
        ["--lang", "en"],
        [],
    ],
)
def test_the_lazy_parse_agrees_with_the_whole_parser(argv) -> None:
    whole = vars(build_parser().parse_args(argv))
    assert whole.pop("print_completion") is None  # only the whole parser has it
    assert vars(parse(argv)) == whole


def test_shell_completion_knows_the_commands_and_their_options(capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--print-completion", "bash"])
    assert exit_.value.code == 0
    script = capsys.readouterr().out
    assert "complete" in script and "kvsim" in script
    for word in (*COMMANDS, "--kv-heads", "--lanes", "--print-completion"):
        assert word in script, word
