"""``kvsim screenshot --model M --prompt TEXT --steps N --out DIR [--size WxH] [--scale F] [--lanes-only]
[--step K] [--show DOCK]… [--theme dark|light] [--variants]``.

Renders the main window offscreen after N steps (animation instant) and writes the PNG asked for: the
window at ``--size`` (``kvsim.png``), and nothing else — with ``--variants`` also the 1280x720 and 1920x1080
ones (``kvsim-1280x720.png``, ``kvsim-1920x1080.png``). Settings are not read or written.

``--size`` is in pixels of the PNG; ``--scale`` is the app's size factor (as ``kvsim --scale``, e.g.
1.5 for a projector): the window is laid out at size / scale and drawn at scale, so a 1280x720 PNG at
scale 1.5 is what a 1280x720 projector shows. ``--step K`` shows step K of the run (0 = the prefill)
instead of the last; ``--show`` opens extra docks by name; ``--lanes-only`` is the F layout.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path


def _size(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"\s*(\d+)\s*[xX×]\s*(\d+)\s*", text or "")
    if not m or int(m.group(1)) < 320 or int(m.group(2)) < 240:
        raise ValueError(f"--size must look like 1920x1080 (at least 320x240), got {text!r}")
    if int(m.group(1)) > 7680 or int(m.group(2)) > 4320:
        raise ValueError(f"--size must be at most 7680x4320, got {text!r}")
    return int(m.group(1)), int(m.group(2))


def check_scale(scale: float | None) -> float:
    """The size factor to use (1 when not given); ValueError outside 0.5..4."""
    if scale is None:
        env = os.environ.get("QT_SCALE_FACTOR")  # `kvsim --scale F screenshot …` sets it before we run
        try:
            scale = float(env) if env else 1.0
        except ValueError:
            scale = 1.0
    if not (0.5 <= scale <= 4):  # NaN fails too
        raise ValueError(f"--scale must be between 0.5 and 4, got {scale}")
    return float(scale)


def offscreen_platform(width: int, height: int, folder: str | os.PathLike[str]) -> str:
    """A ``QT_QPA_PLATFORM`` value for an offscreen screen of ``width``×``height`` (its config written into
    ``folder``): the offscreen default is 800×800, and the window never opens larger than its screen."""
    import json

    config = Path(folder) / f"screen-{width}x{height}.json"
    screen = {"name": "offscreen", "x": 0, "y": 0, "width": width, "height": height, "dpr": 1}
    config.write_text(json.dumps({"screens": [screen]}))
    return f"offscreen:configfile={config}"


def check_lang(lang: str | None) -> str:
    """The pictures' language ("en" when not given: a picture never depends on the machine's settings);
    ValueError for one kvsim has no translation for."""
    from .. import i18n

    try:
        return i18n.normalize(lang) or "en"
    except i18n.LanguageError as exc:
        raise ValueError(f"--lang: {exc}") from None


def start_app(scale: float, theme_name: str | None, lang: str = "en", screen: tuple[int, int] = (1920, 1080)):
    """The offscreen QApplication at ``scale``, in theme ``theme_name`` (None: the default), in ``lang``,
    on an offscreen screen of at least ``screen`` pixels (the window never opens larger than its screen:
    the default offscreen screen, 800×800, would cut a 1280×720 frame)."""
    from PySide6.QtWidgets import QApplication

    if QApplication.instance() is None and os.environ.get("QT_QPA_PLATFORM", "offscreen") == "offscreen":
        import atexit
        import shutil
        import tempfile

        from kvsim.core.atomic import remove_stale, temporary_prefix

        remove_stale(tempfile.gettempdir())  # the folders of runs a kill stopped
        folder = tempfile.mkdtemp(prefix=temporary_prefix("screen"))
        atexit.register(shutil.rmtree, folder, True)
        width, height = max(screen[0], 1920), max(screen[1], 1080)
        os.environ["QT_QPA_PLATFORM"] = offscreen_platform(width, height, folder)

    if QApplication.instance() is None:  # (an app made earlier, e.g. a test's, keeps its own factor)
        os.environ["QT_SCALE_FACTOR"] = f"{scale:g}"  # read when the QApplication starts
    from .. import theme
    from ..app import make_app

    app = make_app(lang=lang)
    if theme_name and theme_name != theme.current():
        theme.set_theme(app, theme_name)
    return app


def logical(size: tuple[int, int], scale: float) -> tuple[int, int]:
    return round(size[0] / scale), round(size[1] / scale)


def settle(window, rounds: int = 5) -> None:
    """Let layouts, lazily built lanes and the extra docks' jobs finish, then redraw everything."""
    import time

    from PySide6.QtCore import QCoreApplication

    deadline = time.monotonic() + 10
    for _ in range(rounds):
        QCoreApplication.processEvents()
    window.lanes.settle()
    while window.jobs._waiting and time.monotonic() < deadline:
        QCoreApplication.processEvents()
        time.sleep(0.005)
    for p in window.lanes.shown():
        p.redraw()
    window.costs.redraw()
    QCoreApplication.processEvents()


def render(window, size: tuple[int, int], path: Path, scale: float = 1.0) -> Path:
    window.resize(*logical(size, scale))
    from PySide6.QtCore import QCoreApplication

    QCoreApplication.processEvents()
    window.fit_docks()
    settle(window)
    pix = window.grab()
    path.parent.mkdir(parents=True, exist_ok=True)
    from .images import write_png

    write_png(pix.toImage(), path)  # atomic: a failure keeps the file it would replace
    return path


def check_docks(names: list[str] | None) -> list[str]:
    from ..docks.registry import EXTRA_DOCKS

    known = [d.name for d in EXTRA_DOCKS]
    for name in names or []:
        if name not in known:
            raise ValueError(f"--show {name!r}: no such dock (known: {', '.join(known)})")
    return list(names or [])


def prepare(window, *, lanes_only: bool = False, show: list[str] | None = None) -> None:
    """The layout asked for: the F layout (lanes only) and the extra docks shown. Lanes only with docks
    (``--lanes-only --show memory``) films both: the lanes and the docks side by side, never the stage's one
    view at a time (it would show the dock instead of the lanes). A lanes-only frame has no toolbars."""
    from ..shell.stage import wanted

    stage = window.stage
    if lanes_only:
        # pinned, so that the later resizes to the frame's size never move the window between the stage
        # and the docks (each move would show the toolbars again)
        stage.forced = False if show else (stage.active or wanted(window.size()))
        stage.update()
    for name in show or []:
        dock = window.extra_docks[name]
        dock.setVisible(True)
        dock.raise_()
    if lanes_only and window.costs_dock.isVisible():
        window.toggle_lanes_only()
    if lanes_only:
        if stage.active:
            stage.show("lanes")
        for bar in (window.toolbar, window.toolbar.more):
            bar.setVisible(False)  # a slide of the lanes: no controls in the frame


def main(args) -> int:
    try:
        size = _size(getattr(args, "size", "1920x1080"))
        scale = check_scale(getattr(args, "scale", None))
        theme_name = getattr(args, "theme", None)
        if theme_name not in (None, "dark", "light"):
            raise ValueError(f"--theme must be dark or light, got {theme_name!r}")
        step = getattr(args, "step", None)
        if step is not None and not 0 <= step < args.steps:
            raise ValueError(f"--step must be between 0 (the prefill) and --steps - 1 = {args.steps - 1}, got {step}")
        docks = check_docks(getattr(args, "show", None))
        lang = check_lang(getattr(args, "lang", None))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out)
    app = start_app(scale, theme_name, lang, size)
    from ..shell.window import MainWindow

    window = MainWindow(model=args.model, prompt=args.prompt, persist=False, fallback=args.model == "tiny")

    if theme_name:  # the window applies its own theme setting when built: choose after it
        window.theme_setting.choose(theme_name)
    window.animator.set_speed("instant")
    window.toolbar.show_speed("instant")
    window.controller.lanes = getattr(args, "lanes", None) or window.controller.lanes
    window.resize(*logical(size, scale))
    window.show()
    try:
        if not window.controller.wait_ready(timeout_s=300):
            print(f"error: {window.controller.last_error or 'the model did not load in time'}", file=sys.stderr)
            return 2
        if not window.controller.run_steps(args.steps, timeout_s=600):
            print(f"error: {window.controller.last_error or 'the steps did not complete'}", file=sys.stderr)
            return 2
        if step is not None:
            window.controller.scrub_to(step)
        prepare(window, lanes_only=bool(getattr(args, "lanes_only", False)), show=docks)
        try:
            written = [render(window, size, out / "kvsim.png", scale)]
            for w, h in ((1280, 720), (1920, 1080)) if getattr(args, "variants", False) else ():
                written.append(render(window, (w, h), out / f"kvsim-{w}x{h}.png", scale))
        except OSError as exc:
            detail = f"cannot write the screenshots into {out}: {exc.strerror}" if exc.strerror else str(exc).splitlines()[0]
            print(f"error: {detail}", file=sys.stderr)  # a WriteError names the file; the one it would replace is kept
            return 2
        for p in written:
            print(p)
        return 0
    finally:
        window.shutdown()
        window.close()
        app.processEvents()
