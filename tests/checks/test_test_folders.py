"""The tests are in folders by what they exercise (tests/conftest.py: engine, commands, checks quick;
processes, reference, app slow), so a new test file at the top of tests/ would escape the slow rule: none is there."""

from conftest import SLOW_FOLDERS
from helpers import TESTS

FOLDERS = {"engine", "commands", "checks", "processes", "reference", "app"}


def test_every_test_file_is_in_one_of_the_folders() -> None:
    assert sorted(p.name for p in TESTS.glob("test_*.py")) == []
    folders = {p.parent.relative_to(TESTS).parts[0] for p in TESTS.rglob("test_*.py")}
    assert folders == FOLDERS, folders
    assert SLOW_FOLDERS < FOLDERS
