"""The engine never imports Qt; sampling draws behave as specified."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import torch

from kvsim.sampling import Sampling, draw, probabilities


def test_engine_imports_without_qt() -> None:
    code = textwrap.dedent("""
        import importlib, pkgutil, sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split('.')[0] in ('PySide6', 'PyQt5', 'PyQt6', 'pyqtgraph', 'shiboken6', 'ui'):
                    raise ImportError('blocked: ' + name)
        sys.meta_path.insert(0, Block())
        import kvsim
        for m in pkgutil.iter_modules(kvsim.__path__):
            if m.name != '__main__':
                importlib.import_module('kvsim.' + m.name)
        leaked = [n for n in sys.modules if n.split('.')[0] in ('PySide6', 'pyqtgraph', 'ui')]
        assert not leaked, leaked
        print('ok')
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


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
