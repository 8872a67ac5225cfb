"""The engine never imports Qt; sampling draws behave as specified."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import torch
from helpers import ROOT

from kvsim.core.sampling import Sampling, draw, probabilities


def test_engine_imports_without_qt() -> None:
    code = textwrap.dedent("""
        import importlib, pkgutil, sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split('.')[0] in ('PySide6', 'PyQt5', 'PyQt6', 'pyqtgraph', 'shiboken6', 'ui') \
                        or name.startswith('kvsim.ui'):
                    raise ImportError('blocked: ' + name)
        sys.meta_path.insert(0, Block())
        import kvsim
        names = [m.name for m in pkgutil.walk_packages(kvsim.__path__, 'kvsim.')
                 if not m.name.startswith(('kvsim.ui', 'kvsim.resources')) and m.name != 'kvsim.__main__']
        assert {'kvsim.caches.kv', 'kvsim.models.loading', 'kvsim.engine.simulate'} <= set(names), names
        for name in names:
            importlib.import_module(name)
        leaked = [n for n in sys.modules if n.split('.')[0] in ('PySide6', 'pyqtgraph', 'ui') or n.startswith('kvsim.ui')]
        assert not leaked, leaked
        print('ok')
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


# import-linter's contracts (pyproject.toml: the engine never imports Qt or the app, views never import the
# worker, controller, toolbar or window) are checked by `lint-imports`, which .ci/run runs beside pytest (one
# whole-project import graph, half a minute of a busy core, is a tool's job, not a test's)


def test_only_the_cli_names_the_app() -> None:
    """The one exception to the engine's layering is the CLI's lazy launch of the app, and of its offscreen
    renderers for `kvsim screenshot` and `kvsim export` (which grimp cannot see in a checkout, where kvsim.ui
    is the top-level folder ui/)."""
    root = ROOT / "kvsim"
    # (and `python -m kvsim`, which in a checkout after a plain install maps the checkout's ui/ as kvsim.ui)
    launchers = {"cli/entry.py", "cli/screenshot.py", "cli/export.py", "__main__.py"}
    offenders = [
        str(p.relative_to(root))
        for p in root.rglob("*.py")
        if p.relative_to(root).as_posix() not in launchers
        and re.search(r"(from \.+ui\b|kvsim\.ui\b|import ui\b|from ui\b)", p.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_greedy_is_argmax() -> None:
    logits = torch.tensor([0.1, 3.0, 2.9, -1.0])
    probs = probabilities(logits, Sampling())
    assert draw(probs, 0.0) == draw(probs, 0.99) == 1


def test_top_k_and_top_p_restrict_support() -> None:
    logits = torch.tensor([4.0, 3.0, 2.0, 1.0, 0.0])
    p = probabilities(logits, Sampling(temperature=1.0, top_k=2))
    assert (p[2:] == 0).all() and abs(float(p.sum()) - 1) < 1e-6
    p = probabilities(logits, Sampling(temperature=1.0, top_p=0.5))
    assert p[0] == 1.0  # the top token alone already holds > 50 %
    p = probabilities(logits, Sampling(temperature=1.0, top_p=0.9))
    assert (p[:3] > 0).all() and (p[3:] == 0).all()
    draws = {draw(p, u / 100) for u in range(100)}
    assert draws == {0, 1, 2}


def test_temperature_flattens() -> None:
    logits = torch.tensor([2.0, 1.0, 0.0])
    cold = probabilities(logits, Sampling(temperature=0.5))
    hot = probabilities(logits, Sampling(temperature=2.0))
    assert cold[0] > hot[0]


def test_the_window_paints_before_torch_is_imported() -> None:
    """Building the main window imports no torch (it is imported after the first paint, so the window
    appears at once): views reach the engine only through torch-free modules."""
    code = "import sys, kvsim.ui.shell.window; print('torch' in sys.modules)"
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


def test_folders_name_the_parts() -> None:
    """``ls kvsim ui`` shows the architecture: the engine's top level holds only its parts (no flat
    module), the app's top level only what every part shares (the app, the session, the theme, the
    languages), every part says in its ``__init__`` what it is (one job per module, one part per folder;
    no line cap), and no folder but kvsim/caches holds more than 15 modules (a folder with more holds more than one part)."""
    root = ROOT
    engine_flat = sorted(p.name for p in (root / "kvsim").glob("*.py"))
    assert engine_flat == ["__init__.py", "__main__.py"], engine_flat
    engine_parts = sorted(p.name for p in (root / "kvsim").iterdir() if (p / "__init__.py").is_file())
    assert engine_parts == ["caches", "cli", "core", "costs", "engine", "models", "serving"], engine_parts
    app_parts = sorted(p.name for p in (root / "ui").iterdir() if (p / "__init__.py").is_file())
    assert app_parts == ["docks", "export", "lanes", "lesson", "menu", "panels", "shell", "startup"], app_parts
    app_flat = sorted(p.name for p in (root / "ui").glob("*.py"))
    assert app_flat == ["__init__.py", "app.py", "i18n.py", "session.py", "theme.py"], app_flat
    # every folder of the project but kvsim/caches (one file per policy is its rule); a worktree's links are not folders
    parts = ("kvsim", "ui", "tests", "benchmarks", "scripts")
    folders = [root / p for p in parts] + [
        d for p in parts for d in (root / p).rglob("*") if d.is_dir() and d.name != "__pycache__" and not d.is_symlink()
    ]
    crowded = {
        str(f.relative_to(root)): n
        for f in folders
        if f != root / "kvsim" / "caches"
        and not any(q.is_symlink() for q in f.relative_to(root).parents if q.parts)
        and (n := len(list(f.glob("*.py")))) > 15
    }
    assert not crowded, crowded
    for init in [*(root / "kvsim").glob("*/__init__.py"), *(root / "ui").rglob("*/__init__.py")]:
        text = init.read_text(encoding="utf-8").lstrip()
        assert text.startswith('"""') and len(text.split('"""')[1].strip()) > 40, f"{init} does not say what the part is"
