"""Export for slides: ☰ → Export. A view or the whole window as PNG (1× or 2× pixels) or SVG (the
pyqtgraph plots), the run as GIF or MP4 (with a progress bar and Cancel; the window never freezes),
the per-step figures as CSV, and the run as one web page that replays it in any browser (HTML).

``install(window)`` adds the menu and its keys once (calling it again does nothing):
Ctrl+E the window as PNG, Ctrl+Shift+E a picture of a chosen view, Ctrl+Shift+M the run as a movie,
Ctrl+Shift+C the figures as CSV, Ctrl+Shift+H the web page. The functions below the menu (``save_view``,
``save_csv``, ``save_web_page``, ``start_movie``) take paths, not dialogs: tests and scripts call them directly.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu, QProgressDialog, QWidget

from ..i18n import num, translate
from ..shell.animation import SPEEDS
from .dialogs import MovieChoice, MovieDialog, PictureDialog, ask_save
from .images import save_png, save_svg
from .movie import ExportError, MovieExport, MovieSpec, check_length, check_output
from .table import write_csv

KEYS = {"window": "Ctrl+E", "picture": "Ctrl+Shift+E", "movie": "Ctrl+Shift+M", "csv": "Ctrl+Shift+C", "web": "Ctrl+Shift+H"}


def install(window) -> QMenu:
    """Add ☰ → Export (and its keys, which work with the menu closed) to ``window``; idempotent."""
    menu = getattr(window, "export_menu", None)
    if menu is not None:
        return menu
    menu = QMenu(translate("export", "Export for slides"), window)
    menu.setObjectName("export-menu")

    def action(text: str, key: str, slot) -> QAction:
        a = QAction(text, window)
        a.setShortcut(QKeySequence(KEYS[key]))
        a.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        a.triggered.connect(slot)
        window.addAction(a)
        menu.addAction(a)
        return a

    action(translate("export", "Window as PNG…"), "window", lambda: _ask_picture(window, "window", "png"))
    action(translate("export", "Picture of a view (PNG 1×/2×, SVG)…"), "picture", lambda: _ask_picture(window))
    action(translate("export", "Run as GIF or MP4…"), "movie", lambda: _ask_movie(window))
    action(translate("export", "Figures per step as CSV…"), "csv", lambda: _ask_csv(window))
    action(translate("export", "Web page (the run, for any browser)…"), "web", lambda: _ask_web_page(window))
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


def view_label(window, name: str) -> str:
    """A view's name as the picture dialog shows it (the keys of ``views`` stay English)."""
    if name == "window":
        return translate("export", "the whole window")
    if name == "lanes":
        return translate("export", "the lanes")
    if name.startswith("lane "):
        return translate("export", "lane {name}").format(name=name[5:])
    dock = window.costs_dock if name == "costs" else getattr(window, "extra_docks", {}).get(name)
    return dock.windowTitle() if dock is not None else name


def save_view(window, name: str, path: str | Path, kind: str = "png") -> Path:
    """Write view ``name`` (a key of ``views``) as ``kind``: "png", "png2" (2× pixels) or "svg"."""
    found = views(window).get(name)
    if found is None:
        there = ", ".join(views(window))
        raise ExportError(translate("export", "no view named {name} (there are: {there})").format(name=repr(name), there=there))
    widget, plot = found
    window.flush_views()
    if kind == "svg":
        if plot is None:
            raise ExportError(translate("export", "{name} has no vector form: export it as PNG").format(name=name))
        return save_svg(plot, path)
    if kind not in ("png", "png2"):
        raise ExportError(translate("export", "unknown picture kind {kind}").format(kind=repr(kind)))
    return save_png(widget, path, 2.0 if kind == "png2" else 1.0)


def save_csv(window, path: str | Path) -> Path:
    """The figures of every step of the run shown (all lanes) as CSV."""
    records = window.session.records
    if not records:
        raise ExportError(_nothing_yet())
    return write_csv(records, path)


def save_web_page(window, path: str | Path):
    """The run shown (every step, whatever the cursor) as one self-contained web page, in the app's language;
    returns the writer's ``PageReport`` (its ``dropped``: what the size budget left out, which the page says too)."""
    from kvsim.engine.html_page import write_page
    from kvsim.engine.trace import Trace

    from ..i18n import language

    run, records = window.session.run, window.session.records
    if run is None or not records:
        raise ExportError(_nothing_yet())
    if window.controller.busy:
        raise ExportError(translate("export", "a step is being computed: export when it is done"))
    return write_page(Trace(meta=dict(run.meta), records=list(records)), path, lang=language())


def start_movie(window, choice: MovieChoice, path: str | Path, progress: bool = True) -> MovieExport:
    """Start filming ``choice`` into ``path``; with ``progress``, a window-modal bar with Cancel."""
    s, c = window.session, window.controller
    if not s.records:
        raise ExportError(_nothing_yet())
    if c.busy:
        raise ExportError(translate("export", "a step is being computed: export when it is done"))
    if not 0 <= choice.first <= choice.last < s.n_steps:
        raise ExportError(
            translate("export", "the steps must lie in 0..{last}, got {first_asked}..{last_asked}").format(
                last=s.n_steps - 1, first_asked=choice.first, last_asked=choice.last
            )
        )
    check_output(path, choice.size, choice.fps)
    spec = MovieSpec(Path(path), choice.first, choice.last, choice.size, choice.fps, SPEEDS[choice.speed])
    check_length(spec.n_frames, spec.size)
    target = window.lanes if choice.target == "lanes" else window
    export = MovieExport(window, spec, target)
    if progress:
        writing = translate("export", "Writing {n} frames to {file} …").format(n=spec.n_frames, file=spec.path.name)
        bar = QProgressDialog(writing, translate("export", "Cancel"), 0, spec.n_frames, window)
        bar.setWindowTitle(translate("export", "Export"))
        bar.setWindowModality(Qt.WindowModality.WindowModal)  # nothing moves the cursor while frames are drawn
        bar.setMinimumDuration(0)
        bar.setAutoClose(False)
        bar.setAutoReset(False)
        bar.canceled.connect(export.cancel)
        export.progress.connect(bar.setValue)
        export.finished.connect(bar.close)
        export.failed.connect(bar.close)
        bar.show()
        export.bar = bar
    seconds = num(spec.n_frames / spec.fps, 1)
    wrote = translate("export", "wrote {path}: {n} frames, {seconds} s")
    export.finished.connect(lambda p: window.show_message(wrote.format(path=p, n=spec.n_frames, seconds=seconds)))
    export.failed.connect(lambda e: _movie_failed(window, e))
    window.active_export = export  # kept alive until the next one
    export.start()
    return export


def _nothing_yet() -> str:
    return translate("export", "nothing to export yet: run a step first")


def _movie_failed(window, error: str) -> None:
    if error == "cancelled":
        window.show_message(translate("export", "export cancelled"))
    else:
        window.show_message(translate("export", "export failed: {error}").format(error=error), error=True)


# ====================================================================== the menu's dialogs
def _default_name(window, ext: str) -> str:
    step = max(0, window.session.cursor)
    return str(Path.home() / f"kvsim-step{step}.{ext}")


def _ask_picture(window, view: str | None = None, kind: str | None = None) -> None:
    if view is None:
        found = views(window)
        labels = {name: view_label(window, name) for name in found}
        dialog = PictureDialog({name: plot is not None for name, (_, plot) in found.items()}, window, labels)
        if dialog.exec() != PictureDialog.DialogCode.Accepted:
            return
        view, kind = dialog.choice()
    ext = "svg" if kind == "svg" else "png"
    title = translate("export", "Save {view} as {format}").format(view=view_label(window, view), format=ext.upper())
    path = ask_save(window, title, _default_name(window, ext), f"{ext.upper()} (*.{ext})")
    if path:
        _report(window, lambda: save_view(window, view, path, kind))


def _ask_csv(window) -> None:
    title = translate("export", "Save the figures per step")
    path = ask_save(window, title, _default_name(window, "csv").replace("-step", "-run"), "CSV (*.csv)")
    if path:
        _report(window, lambda: save_csv(window, path))


def _ask_web_page(window) -> None:
    if not window.session.records:
        window.show_message(_nothing_yet(), error=True)
        return
    title = translate("export", "Save the run as a web page")
    path = ask_save(window, title, _default_name(window, "html").replace("-step", "-run"), "HTML (*.html)")
    if not path:
        return
    try:
        report = save_web_page(window, path)
    except (ExportError, OSError) as exc:
        window.show_message(translate("export", "export failed: {error}").format(error=exc), error=True)
        return
    if report.dropped:  # the page says what it left out too
        left_out = translate("export", "wrote {path}; left out to stay under {mb} MB: {what}")
        window.show_message(
            left_out.format(path=report.path, mb=num(report.budget_bytes / 1e6, 0), what="; ".join(report.dropped))
        )
    else:
        window.show_message(translate("export", "wrote {path}").format(path=report.path))


def _ask_movie(window) -> None:
    if not window.session.records:
        window.show_message(_nothing_yet(), error=True)
        return
    speed = next((k for k, v in SPEEDS.items() if v == window.animator.duration_ms), "normal")
    dialog = MovieDialog(window.session.n_steps, (window.width(), window.height()), speed, window)
    if dialog.exec() != MovieDialog.DialogCode.Accepted:
        return
    choice = dialog.choice()
    title = translate("export", "Save the run as {format}").format(format=choice.fmt.upper())
    path = ask_save(window, title, _default_name(window, choice.fmt), f"*.{choice.fmt}")
    if path:
        try:
            start_movie(window, choice, path)
        except ExportError as exc:
            window.show_message(str(exc), error=True)


def _report(window, write) -> None:
    try:
        path = write()
    except (ExportError, OSError) as exc:
        window.show_message(translate("export", "export failed: {error}").format(error=exc), error=True)
        return
    window.show_message(translate("export", "wrote {path}").format(path=path))
