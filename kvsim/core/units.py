"""Number formatting shared by the command line and the app, so one figure reads the same in both.

Decimal units throughout, as the seeds and vendors quote them (70B parameters · 4 bytes = 280 GB).
"""

from __future__ import annotations

SI_PREFIXES = (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3))


def si(value: float, spec: str = ".2f", sep: str = " ") -> str:
    """``1234567`` → ``"1.23 M"``: a count with a k / M / G / T prefix (FLOPs, tokens)."""
    for unit, scale in SI_PREFIXES:
        if abs(value) >= scale:
            return f"{value / scale:{spec}}{sep}{unit}"
    return f"{value:{spec if 'g' in spec else '.0f'}}{sep}"


def human_bytes(n: float) -> str:
    """``56_000`` → ``"56 KB"``; ``2_113_929_216`` → ``"2.11 GB"``."""
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}".replace(".00 ", " ")
        n /= 1000
    return f"{n} TB"
