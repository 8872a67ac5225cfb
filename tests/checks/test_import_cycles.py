"""No import cycle among kvsim's and the app's modules: every import statement counts, the ones under
``if TYPE_CHECKING:`` and the lazy ones inside functions included (a cycle there still ties two modules
together). The graph is read from the source with ``ast``; grimp (import-linter's graph) cross-checks it."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import ROOT


def _modules(root: Path, packages: tuple[str, ...]) -> dict[str, tuple[Path, bool]]:
    """module name → (file, is a package), for every .py under ``packages`` (a worktree's links, such as
    kvsim/ui → ../ui, are skipped: the app is read once, as ``ui``)."""
    out: dict[str, tuple[Path, bool]] = {}
    for top in packages:
        for path in sorted((root / top).rglob("*.py")):
            rel = path.relative_to(root)
            if any((root / Path(*rel.parts[:i])).is_symlink() for i in range(1, len(rel.parts))):
                continue
            parts = list(rel.with_suffix("").parts)
            is_pkg = parts[-1] == "__init__"
            out[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return out


def import_graph(root: Path, packages: tuple[str, ...] = ("kvsim", "ui")) -> dict[str, set[str]]:
    """module → the modules of ``packages`` it imports anywhere in its source (``kvsim.ui`` is ``ui``)."""
    mods = _modules(root, packages)

    def known(name: str) -> str | None:
        if name == "kvsim.ui" or name.startswith("kvsim.ui."):
            name = "ui" + name[len("kvsim.ui") :]
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in mods}
    for module, (path, is_pkg) in mods.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = module.split(".") if is_pkg else module.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                # `from pkg import name`: the submodule pkg.name when there is one, else pkg itself
                targets = [f"{source}.{alias.name}" for alias in node.names]
            else:
                continue
            for target in targets:
                found = known(target)
                if found is not None and found != module:
                    graph[module].add(found)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[v] = min(low[v], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycle_among_kvsim_and_ui_modules() -> None:
    graph = import_graph(ROOT)
    assert {"kvsim.engine.trace", "kvsim.engine.records", "ui.app", "ui.shell.window", "ui.startup.launch"} <= set(graph)
    assert "kvsim.engine.records" in graph["kvsim.engine.trace_checks"]  # TYPE_CHECKING imports are read
    assert "ui.app" in graph["kvsim.cli.entry"]  # and lazy ones (kvsim.ui is the app)
    assert cycles(graph) == []


def test_the_graph_finds_cycles_through_type_checking_and_lazy_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n",
        "b.py": "from .a import helper\n",
        "c.py": "def f():\n    from pkg.sub import d\n",
        "sub/__init__.py": "",
        "sub/d.py": "from .. import c\n",
        "e.py": "from . import a\n",  # imports into a cycle, is not part of one
    }
    for name, text in files.items():
        (pkg / name).write_text(textwrap.dedent(text))
    graph = import_graph(tmp_path, ("pkg",))
    assert graph["pkg.c"] == {"pkg.sub.d"} and graph["pkg.sub.d"] == {"pkg.c"}
    assert sorted(cycles(graph)) == [["pkg.a", "pkg.b"], ["pkg.c", "pkg.sub.d"]]


def test_grimp_finds_no_cycle_either() -> None:
    """import-linter's own graph (grimp), built from the checkout: no module reaches back to one it imports."""
    pytest.importorskip("grimp")
    code = textwrap.dedent("""
        import grimp
        graph = grimp.build_graph("kvsim", "ui", cache_dir=None)
        assert "kvsim.engine.trace" in graph.modules and "ui.shell.window" in graph.modules
        found = sorted(
            {tuple(sorted((m, imported)))
             for m in graph.modules
             for imported in graph.find_modules_directly_imported_by(m)
             if graph.find_shortest_chain(importer=imported, imported=m)}
        )
        print(found)
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]"
