"""Start-up: the launch clock (``launch``), the splash painted before the engine loads (``splash``) and
the engine's import on a thread after the first paint (``engine_import``)."""
