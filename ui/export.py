"""Export for slides: ☰ → Export. A view or the whole window as PNG (1× or 2× pixels) or SVG (the
pyqtgraph plots), the run as GIF or MP4 (with a progress bar and Cancel; the window never freezes),
and the per-step figures as CSV.

``install(window)`` adds the menu and its keys once (calling it again does nothing):
Ctrl+E the window as PNG, Ctrl+Shift+E a picture of a chosen view, Ctrl+Shift+M the run as a movie,
Ctrl+Shift+C the figures as CSV. The functions below the menu (``save_view``, ``save_csv``,
``start_movie``) take paths, not dialogs: tests and scripts call them directly.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu, QProgressDialog, QWidget

from .animation import SPEEDS
from .export_csv import write_csv
from .export_dialogs import MovieChoice, MovieDialog, PictureDialog, ask_save
from .export_images import save_png, save_svg
from .export_movie import ExportError, MovieExport, MovieSpec, check_output

KEYS = {"window": "Ctrl+E", "picture": "Ctrl+Shift+E", "movie": "Ctrl+Shift+M", "csv": "Ctrl+Shift+C"}


def install(window) -> QMenu:
    """Add ☰ → Export (and its keys, which work with the menu closed) to ``window``; idempotent."""
    menu = getattr(window, "export_menu", None)
    if menu is not None:
        return menu
    menu = QMenu("Export for slides", window)
    menu.setObjectName("export-menu")

    def action(text: str, key: str, slot) -> QAction:
        a = QAction(text, window)
        a.setShortcut(QKeySequence(KEYS[key]))
        a.setShortcutContext(Qt.WindowShortcut)
        a.triggered.connect(slot)
        window.addAction(a)
        menu.addAction(a)
        return a

    action("Window as PNG…", "window", lambda: _ask_picture(window, "window", "png"))
    action("Picture of a view (PNG 1×/2×, SVG)…", "picture", lambda: _ask_picture(window))
    action("Run as GIF or MP4…", "movie", lambda: _ask_movie(window))
    action("Figures per step as CSV…", "csv", lambda: _ask_csv(window))
    window.toolbar.menu.addSeparator()
    window.toolbar.menu.addMenu(menu)
    window.export_menu = menu
    return menu


# ====================================================================== what can be exported
def views(window) -> dict[str, tuple[QWidget, object | None]]:
    """Exportable views by name: (the widget for PNG, the pyqtgraph view for SVG or None)."""
    out: dict[str, tuple[QWidget, object | None]] = {"window": (window, None), "lanes": (window.lanes, None)}
    for p in window.lanes.shown():
        out[f"lane {p.name}"] = (p, p.glw)
    out["costs"] = (window.costs, window.costs.glw)
    for name, dock in getattr(window, "extra_docks", {}).items():
        if dock.isVisible() and dock.view is not None:
            glw = getattr(dock.view, "glw", None) or getattr(dock.view, "plot", None)
            out[name] = (dock.view, glw if hasattr(glw, "scene") else None)
    return out


def save_view(window, name: str, path: str | Path, kind: str = "png") -> Path:
    """Write view ``name`` (a key of ``views``) as ``kind``: "png", "png2" (2× pixels) or "svg"."""
    found = views(window).get(name)
    if found is None:
        raise ExportError(f"no view named {name!r} (there are: {', '.join(views(window))})")
    widget, plot = found
    window.flush_views()
    if kind == "svg":
        if plot is None:
            raise ExportError(f"{name} has no vector form: export it as PNG")
        return save_svg(plot, path)
    if kind not in ("png", "png2"):
        raise ExportError(f"unknown picture kind {kind!r}")
    return save_png(widget, path, 2.0 if kind == "png2" else 1.0)


def save_csv(window, path: str | Path) -> Path:
    """The figures of every step of the run shown (all lanes) as CSV."""
    records = window.session.records
    if not records:
        raise ExportError("nothing to export yet: run a step first")
    return write_csv(records, path)


def start_movie(window, choice: MovieChoice, path: str | Path, progress: bool = True) -> MovieExport:
    """Start filming ``choice`` into ``path``; with ``progress``, a window-modal bar with Cancel."""
    s, c = window.session, window.controller
    if not s.records:
        raise ExportError("nothing to export yet: run a step first")
    if c.busy:
        raise ExportError("a step is being computed: export when it is done")
    if not 0 <= choice.first <= choice.last < s.n_steps:
        raise ExportError(f"the steps must lie in 0..{s.n_steps - 1}, got {choice.first}..{choice.last}")
    check_output(path, choice.size, choice.fps)
    spec = MovieSpec(Path(path), choice.first, choice.last, choice.size, choice.fps, SPEEDS[choice.speed])
    target = window.lanes if choice.target == "lanes" else window
    export = MovieExport(window, spec, target)
    if progress:
        bar = QProgressDialog(f"Writing {spec.n_frames} frames to {spec.path.name} …", "Cancel", 0, spec.n_frames, window)
        bar.setWindowTitle("Export")
        bar.setWindowModality(Qt.WindowModal)  # nothing moves the cursor while frames are drawn
        bar.setMinimumDuration(0)
        bar.setAutoClose(False)
        bar.setAutoReset(False)
        bar.canceled.connect(export.cancel)
        export.progress.connect(bar.setValue)
        export.finished.connect(bar.close)
        export.failed.connect(bar.close)
        bar.show()
        export.bar = bar
    export.finished.connect(lambda p: window.show_message(f"wrote {p}: {spec.n_frames} frames, {spec.n_frames / spec.fps:.1f} s"))
    export.failed.connect(
        lambda e: window.show_message("export cancelled" if e == "cancelled" else f"export failed: {e}", error=e != "cancelled")
    )
    window.active_export = export  # kept alive until the next one
    export.start()
    return export


# ====================================================================== the menu's dialogs
def _default_name(window, ext: str) -> str:
    step = max(0, window.session.cursor)
    return str(Path.home() / f"kvsim-step{step}.{ext}")


def _ask_picture(window, view: str | None = None, kind: str | None = None) -> None:
    if view is None:
        dialog = PictureDialog({name: plot is not None for name, (_, plot) in views(window).items()}, window)
        if dialog.exec() != PictureDialog.Accepted:
            return
        view, kind = dialog.choice()
    ext = "svg" if kind == "svg" else "png"
    path = ask_save(window, f"Save {view} as {ext.upper()}", _default_name(window, ext), f"{ext.upper()} (*.{ext})")
    if path:
        _report(window, lambda: save_view(window, view, path, kind))


def _ask_csv(window) -> None:
    path = ask_save(window, "Save the figures per step", _default_name(window, "csv").replace("-step", "-run"), "CSV (*.csv)")
    if path:
        _report(window, lambda: save_csv(window, path))


def _ask_movie(window) -> None:
    if not window.session.records:
        window.show_message("nothing to export yet: run a step first", error=True)
        return
    speed = next((k for k, v in SPEEDS.items() if v == window.animator.duration_ms), "normal")
    dialog = MovieDialog(window.session.n_steps, (window.width(), window.height()), speed, window)
    if dialog.exec() != MovieDialog.Accepted:
        return
    choice = dialog.choice()
    path = ask_save(window, f"Save the run as {choice.fmt.upper()}", _default_name(window, choice.fmt), f"*.{choice.fmt}")
    if path:
        try:
            start_movie(window, choice, path)
        except ExportError as exc:
            window.show_message(str(exc), error=True)


def _report(window, write) -> None:
    try:
        path = write()
    except (ExportError, OSError) as exc:
        window.show_message(f"export failed: {exc}", error=True)
        return
    window.show_message(f"wrote {path}")
