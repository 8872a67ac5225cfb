"""The machine's load and read bandwidth beside every benchmark's figures, and no ratio when the load moved under the run.

Every script in benchmarks/'s folders starts a ``LoadWatch`` first thing in ``main()``; it reads ``os.getloadavg()``
then and when the figures are printed, and prints both at exit (``load average 1.02 → 1.10 (1 min)``), with the
host's single-thread read bandwidth measured at start and at exit (``kvsim.costs.hardware.read_bandwidth``: a sum
over 256 MiB in the memory kvsim keeps weights in, best of a few; ~0.3 s each): the same code is 1.5× faster or
slower on hosts of one machine class that read 10 or 35 GB/s, so a figure without it cannot be compared. A
ratio of two timings goes through ``watch.ratio(value)``: when the 1-minute load average moved by more
than ``MAX_LOAD_CHANGE`` between the start and that moment, the ratio is withheld (its text says so and
why): the two timings may have run on different machines, in effect.

    sys.path.append(str(Path(__file__).resolve().parents[1]))  # benchmarks/, where this file is
    from _load import LoadWatch
    watch = LoadWatch()
    ...
    print(f"kvsim / transformers: {watch.ratio(k_ms / h_ms)}")

``python benchmarks/decode/x.py`` puts only benchmarks/decode/ on ``sys.path``: each script appends benchmarks/
itself (appended, not inserted first, so that its folders — decode, weights, serving, quality, frontend — never
shadow a library of the same name), then ``import _load`` finds this file.
"""

from __future__ import annotations

import atexit
import os

#: the 1-minute load average may move by at most this much during a run whose ratios are printed
MAX_LOAD_CHANGE = float(os.environ.get("KVSIM_BENCH_MAX_LOAD_CHANGE", "1.0"))


def read_gb_s() -> float | None:
    """The host's single-thread read bandwidth now, GB/s (None where kvsim's probe cannot run)."""
    try:
        import torch

        from kvsim.costs.hardware import read_bandwidth
    except ImportError:
        return None
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return read_bandwidth(256 << 20, budget_s=0.3) / 1e9
    finally:
        torch.set_num_threads(threads)


def load_average() -> tuple[float, float, float]:
    try:
        return os.getloadavg()
    except OSError:  # not on this platform: nothing to compare, nothing withheld
        return (0.0, 0.0, 0.0)


class LoadWatch:
    """The load at the start of a run; ``ratio`` withholds a ratio when it moved too much since."""

    def __init__(self, max_change: float = MAX_LOAD_CHANGE, *, report_at_exit: bool = True) -> None:
        self.start = load_average()
        self.max_change = max_change
        self.end: tuple[float, float, float] | None = None
        self.read_start = read_gb_s()
        self.read_end: float | None = None
        if report_at_exit:
            atexit.register(lambda: print(self.line()))

    def now(self) -> tuple[float, float, float]:
        """Read the load again (the end of the run, so far)."""
        self.end = load_average()
        return self.end

    @property
    def change(self) -> float:
        end = self.end if self.end is not None else self.now()
        return abs(end[0] - self.start[0])

    @property
    def steady(self) -> bool:
        self.now()
        return self.change <= self.max_change

    def ratio(self, value: float, fmt: str = ".2f", suffix: str = "", *, short: bool = False) -> str:
        """``value`` formatted, or why it is withheld (the load moved by more than ``max_change``); ``short``:
        just "withheld" (a table cell: the load line printed at exit says why)."""
        if self.steady:
            return f"{value:{fmt}}{suffix}"
        if short:
            return "withheld"
        return f"withheld: the load average moved {self.start[0]:.2f} → {self.end[0]:.2f} (> {self.max_change:g}) during the run"  # type: ignore[index]

    def read_line(self) -> str:
        """The host's single-thread read bandwidth at start and at the end (measured when first asked: the exit line
        and ``as_dict`` share one reading)."""
        if self.read_end is None:
            self.read_end = read_gb_s()
        if self.read_start is None or self.read_end is None:
            return "host read bandwidth: not measured (kvsim or torch not importable)"
        return f"host read bandwidth (one thread): {self.read_start:.1f} GB/s at start → {self.read_end:.1f} GB/s at end"

    def line(self) -> str:
        end = self.now()
        verdict = "steady" if self.change <= self.max_change else f"moved more than {self.max_change:g}: ratios withheld"
        return (
            f"machine load average (1 min) {self.start[0]:.2f} at start → {end[0]:.2f} at end ({verdict}); "
            f"5 min {self.start[1]:.2f} → {end[1]:.2f}; {os.cpu_count()} CPUs; {self.read_line()}"
        )

    def as_dict(self) -> dict[str, object]:
        end = self.now()
        self.read_line()
        return {
            "load_start": list(self.start),
            "load_end": list(end),
            "max_change": self.max_change,
            "steady": self.steady,
            "read_gb_s_start": self.read_start,
            "read_gb_s_end": self.read_end,
        }
