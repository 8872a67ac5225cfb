"""``python -m kvsim``: the ``kvsim`` command.

Run inside a checkout, ``python -m kvsim`` imports the checkout's ``kvsim/`` (the current folder comes first on
sys.path), which has no ``ui/``: the app is the checkout's top-level ``ui/`` folder, installed as ``kvsim.ui``.
An editable install (``pip install -e .``, the README's command) maps it; after a plain ``pip install .`` nothing
does, so it is mapped here, from the same checkout, as the editable install maps it."""

import importlib.util
import sys
from pathlib import Path


def _map_the_checkouts_app() -> None:
    """``kvsim.ui`` from the checkout's ``ui/`` when nothing else provides it (a checkout, after a plain install)."""
    name = f"{__package__}.ui"
    app_folder = Path(__file__).resolve().parent.parent / "ui"
    if importlib.util.find_spec(name) is not None or not (app_folder / "__init__.py").is_file():
        return
    spec = importlib.util.spec_from_file_location(name, app_folder / "__init__.py", submodule_search_locations=[str(app_folder)])
    if spec is None or spec.loader is None:  # pragma: no cover - a file that exists always has a spec
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)


if __name__ == "__main__":
    _map_the_checkouts_app()

    from .cli.entry import main

    sys.exit(main())
