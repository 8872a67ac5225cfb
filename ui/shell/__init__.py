"""The window's shell: the main window (``window``) and how it fits a screen (``layout``), the toolbar,
the controller and the worker thread behind it, the animation clock, the stage and presenter mode, and
the file dialogs. The views (lanes, panels, docks, lesson) never import from here (pyproject.toml)."""
