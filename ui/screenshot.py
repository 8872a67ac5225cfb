"""``kvsim screenshot --model M --prompt TEXT --steps N --out DIR [--size WxH]``.

Renders the main window offscreen after N steps (animation instant) and writes PNGs: the window
at ``--size`` and the 1280x720 and 1920x1080 variants. Settings are not read or written.
"""

from __future__ import annotations

import os
import re
from pathlib import Path


def _size(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"\s*(\d+)\s*[xX×]\s*(\d+)\s*", text or "")
    if not m or int(m.group(1)) < 320 or int(m.group(2)) < 240:
        raise ValueError(f"--size must look like 1920x1080 (at least 320x240), got {text!r}")
    return int(m.group(1)), int(m.group(2))


def render(window, size: tuple[int, int], path: Path) -> Path:
    from PySide6.QtCore import QCoreApplication

    window.resize(*size)
    QCoreApplication.processEvents()
    window.fit_docks()
    for _ in range(5):
        QCoreApplication.processEvents()
    for p in window.lanes.shown():
        p.redraw()
    window.costs.redraw()
    QCoreApplication.processEvents()
    pix = window.grab()
    path.parent.mkdir(parents=True, exist_ok=True)
    if not pix.save(str(path), "PNG"):
        raise OSError(f"could not write {path}")
    return path


def main(args) -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    import sys

    from .app import make_app
    from .window import MainWindow

    try:
        size = _size(getattr(args, "size", "1920x1080"))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out)
    app = make_app()
    window = MainWindow(model=args.model, prompt=args.prompt, persist=False, fallback=args.model == "tiny")
    window.animator.set_speed("instant")
    window.toolbar.show_speed("instant")
    window.controller.lanes = getattr(args, "lanes", None) or window.controller.lanes
    window.resize(*size)
    window.show()
    try:
        if not window.controller.wait_ready(timeout_s=300):
            print(f"error: {window.controller.last_error or 'the model did not load in time'}", file=sys.stderr)
            return 2
        if not window.controller.run_steps(args.steps, timeout_s=600):
            print(f"error: {window.controller.last_error or 'the steps did not complete'}", file=sys.stderr)
            return 2
        try:
            written = [render(window, size, out / "kvsim.png")]
            for w, h in ((1280, 720), (1920, 1080)):
                written.append(render(window, (w, h), out / f"kvsim-{w}x{h}.png"))
        except OSError as exc:
            print(f"error: cannot write the screenshots into {out}: {exc.strerror or exc}", file=sys.stderr)
            return 2
        for p in written:
            print(p)
        return 0
    finally:
        window.shutdown()
        window.close()
        app.processEvents()
