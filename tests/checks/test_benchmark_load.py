"""benchmarks/_load.py: every benchmark writes the machine's load beside its figures and withholds its
ratios when the load moved during the run (a fake ``os.getloadavg``: no real load is asserted)."""

from __future__ import annotations

import ast
import importlib.util

from helpers import ROOT

BENCHMARKS = ROOT / "benchmarks"


def _load_module():
    spec = importlib.util.spec_from_file_location("bench_load", BENCHMARKS / "_load.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_ratio_is_printed_while_the_load_holds_and_withheld_once_it_moves(monkeypatch):
    load = _load_module()
    readings = iter([(1.0, 1.0, 1.0), (1.4, 1.1, 1.0), (1.4, 1.1, 1.0), (3.5, 1.8, 1.2), (3.5, 1.8, 1.2), (3.5, 1.8, 1.2)])
    monkeypatch.setattr(load.os, "getloadavg", lambda: next(readings))
    rates = iter([21.04, 11.62])  # GB/s: the host's read bandwidth at start and at the end (a fake probe)
    monkeypatch.setattr(load, "read_gb_s", lambda: next(rates))
    watch = load.LoadWatch(max_change=1.0, report_at_exit=False)
    assert watch.ratio(0.8734) == "0.87" and watch.steady is True  # moved 0.4 ≤ 1
    said = watch.ratio(0.8734)  # now 3.5: moved 2.5 > 1
    assert said.startswith("withheld") and "1.00 → 3.50" in said and "0.87" not in said
    line = watch.line()
    assert "1.00 at start → 3.50 at end" in line and "ratios withheld" in line
    # the host said beside the load: a decode figure read 10 or 35 GB/s is not the same figure
    assert "host read bandwidth (one thread): 21.0 GB/s at start → 11.6 GB/s at end" in line


def test_the_host_read_bandwidth_is_measured_or_said_missing(monkeypatch):
    """The probe answers a positive rate here (kvsim and torch are importable), and the line says so when it cannot."""
    load = _load_module()
    rate = load.read_gb_s()
    assert rate is not None and 0.1 < rate < 10_000
    monkeypatch.setattr(load, "read_gb_s", lambda: None)
    watch = load.LoadWatch(report_at_exit=False)
    assert "host read bandwidth: not measured" in watch.line()


def test_the_benchmarks_are_grouped_in_folders():
    """benchmarks/ holds only the shared helper and the GPU check; each script lives in the folder of what it measures."""
    assert sorted(p.name for p in BENCHMARKS.iterdir() if p.is_file()) == ["_load.py", "gpu_check.sh"]
    scripts = sorted(BENCHMARKS.glob("*/*.py"))
    assert len(scripts) >= 20 and {p.parent.name for p in scripts} == {"decode", "weights", "serving", "quality", "frontend"}


def test_every_benchmark_finds_the_shared_load_module():
    """``python benchmarks/<folder>/x.py`` puts only its own folder on sys.path: each script appends benchmarks/."""
    for path in sorted(BENCHMARKS.glob("*/*.py")):
        text = path.read_text(encoding="utf-8")
        setup = "sys.path.append(str(Path(__file__).resolve().parents[1]))"
        assert setup in text and text.index(setup) < text.index("from _load import LoadWatch"), path


def test_every_benchmark_starts_a_load_watch_in_main():
    scripts = sorted(BENCHMARKS.glob("*/*.py"))
    assert scripts  # the scripts live in benchmarks/<what they measure>/
    for path in scripts:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        main = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main")
        calls = [n for n in ast.walk(main) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "LoadWatch"]
        assert calls, f"{path.name}: main() starts no LoadWatch"
