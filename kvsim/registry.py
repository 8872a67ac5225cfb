"""What models exist: bundled with kvsim, fetched into the user data dir, or fetchable.

``kvsim models list`` prints this; ``kvsim models get NAME`` is the one command that may use the
network (see ``fetch_model``).
"""

from __future__ import annotations

from pathlib import Path

from .loading import ModelLoadError, bundled_models_dir, user_models_dir


def _dir_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.exists() else 0


def list_models() -> list[dict[str, object]]:
    """Every model by name: kind (bundled / fetched / fetchable), size in bytes, path."""
    rows: list[dict[str, object]] = []
    for kind, root in (("bundled", bundled_models_dir()), ("fetched", user_models_dir())):
        if root.is_dir():
            for d in sorted(p for p in root.iterdir() if p.is_dir()):
                rows.append({"name": d.name, "kind": kind, "size_bytes": _dir_size(d), "path": str(d)})
    return rows


def fetch_model(name: str) -> Path:
    raise ModelLoadError(f"unknown fetchable model {name!r}")
