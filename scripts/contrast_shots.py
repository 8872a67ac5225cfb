"""Screenshots of the lesson views (dark and light themes) and the WCAG contrast of what they draw,
measured on the PNGs: pixels of each element against the background pixels next to it.

    QT_QPA_PLATFORM=offscreen python scripts/contrast_shots.py --out docs/screenshots

writes lesson-WxH.png (dark), light-WxH.png (light) at 1920x1080 and 1280x720, and
light-window-1920x1080.png / lesson-window-1920x1080.png (with a window:8 lane), then prints one
table row per (theme, element): min, 5th percentile and median contrast of the element's pixels.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def _screen(width: int, height: int) -> str:
    from kvsim.ui.export.screenshot import offscreen_platform

    return offscreen_platform(width, height, tempfile.mkdtemp())


def _pixels(img, window, widget, item) -> np.ndarray:
    """(N, 3) RGB of the screenshot inside ``item`` (an item of ``widget``'s scene), 2 px kept off every
    edge (outlines, antialiasing)."""
    poly = widget.mapFromScene(item.mapRectToScene(item.boundingRect())).boundingRect()
    tl = widget.viewport().mapTo(window, poly.topLeft())
    return img[tl.y() + 2 : tl.y() + poly.height() - 2, tl.x() + 2 : tl.x() + poly.width() - 2].reshape(-1, 3)


def _rgb(pix) -> np.ndarray:
    image = pix.toImage().convertToFormat(pix.toImage().Format.Format_RGB888)
    w, h = image.width(), image.height()
    raw = np.frombuffer(image.constBits(), np.uint8, count=image.bytesPerLine() * h).reshape(h, image.bytesPerLine())
    return raw[:, : 3 * w].reshape(h, w, 3).copy()  # the QImage owns the buffer


def measure(window, img) -> dict[str, np.ndarray]:
    """Contrast ratios (against the lane's background) of the pixels of each element."""
    from kvsim.ui import theme

    panels = window.lane_panels
    bg = theme.rgb(theme.BG)
    out: dict[str, np.ndarray] = {}
    un, ca = panels[0], panels[1]
    lo, n, comp_lo, _, _ = ca.shown()["geom"]
    out["V heatmap (computed rows)"] = theme.contrast_ratio(_pixels(img, window, un.glw, un.v.image), bg)
    out["dimmed cached rows (K, V)"] = np.concatenate(
        [theme.contrast_ratio(_rows(img, window, ca.glw, plot, lo, comp_lo, n), bg) for plot in (ca.k, ca.v)]
    )
    hatch = _future(img, window, un)
    out["masked hatching (line pixels)"] = theme.contrast_ratio(hatch[np.abs(hatch - bg).sum(axis=1) > 24], bg)
    if len(panels) > 2 or any(p.a.unseen.any() for p in panels):
        win = next(p for p in panels if p.a.unseen.any())
        px = _unseen(img, window, win)
        out["outside the window (line pixels)"] = theme.contrast_ratio(px[np.abs(px - bg).sum(axis=1) > 24], bg)
    return out


def _rows(img, window, glw, plot, lo: int, a: int, n: int) -> np.ndarray:
    """Pixels of the image rows lo..a-1 (of lo..n-1 drawn)."""
    full = plot.image.mapRectToScene(plot.image.boundingRect())
    poly = glw.mapFromScene(full).boundingRect()
    tl = glw.viewport().mapTo(window, poly.topLeft())
    row_h = poly.height() / max(n - lo, 1)
    y1 = tl.y() + int(row_h * (a - lo)) - 2
    return img[tl.y() + 2 : y1, tl.x() + 2 : tl.x() + poly.width() - 2].reshape(-1, 3)


def _cells(img, window, panel, mask: np.ndarray) -> np.ndarray:
    """Screenshot pixels inside the attention cells where ``mask`` is True (cell centres ± a third)."""
    plot = panel.a
    full = plot.image.mapRectToScene(plot.image.boundingRect())
    poly = panel.glw.mapFromScene(full).boundingRect()
    tl = panel.glw.viewport().mapTo(window, poly.topLeft())
    rows, cols = mask.shape
    ch, cw = poly.height() / rows, poly.width() / cols
    out = []
    for r, c in zip(*np.nonzero(mask), strict=True):
        y, x = int(tl.y() + (r + 0.2) * ch), int(tl.x() + (c + 0.2) * cw)
        out.append(img[y : y + max(1, int(ch * 0.6)), x : x + max(1, int(cw * 0.6))].reshape(-1, 3))
    return np.concatenate(out) if out else np.zeros((0, 3))


def _future(img, window, panel) -> np.ndarray:
    rgba = panel.a.image.image
    clear = rgba[..., 3] == 0
    return _cells(img, window, panel, clear & ~panel.a.unseen)


def _unseen(img, window, panel) -> np.ndarray:
    return _cells(img, window, panel, panel.a.unseen)


KEEP: list = []


def shoot(theme_name: str, size: tuple[int, int], lanes: str | None, out: Path, steps: int, app) -> tuple[Path, dict]:
    from PySide6.QtCore import QCoreApplication

    from kvsim.ui import theme
    from kvsim.ui.shell.window import MainWindow

    w = MainWindow(model="tiny", prompt=None, persist=False)
    theme.set_theme(app, theme_name)  # after the window: it applies its own theme setting when built
    w.animator.set_speed("instant")
    w.resize(*size)
    w.show()
    assert w.controller.wait_ready(120), w.controller.last_error
    if lanes:
        w.controller.set_lanes(lanes)
        deadline = time.monotonic() + 60
        while not (w.controller.can_step and [lane.name for lane in w.session.lanes] == lanes.split(",")):
            QCoreApplication.processEvents()
            time.sleep(0.01)
            assert time.monotonic() < deadline, "lanes did not start"
    assert w.controller.run_steps(steps)
    w.fit_docks()
    for _ in range(10):
        QCoreApplication.processEvents()
    for p in w.lanes.shown():
        p.redraw()
    w.costs.redraw()
    QCoreApplication.processEvents()
    pix = w.grab()
    name = f"{'light' if theme_name == 'light' else 'lesson'}{'-window' if lanes else ''}-{size[0]}x{size[1]}.png"
    path = out / name
    pix.save(str(path))
    figures = measure(w, _rgb(pix).astype(np.float64))
    w.shutdown()
    KEEP.append(w)  # not deleted while its worker thread may still wind down
    return path, figures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="docs/screenshots")
    ap.add_argument("--steps", type=int, default=12)
    args = ap.parse_args()
    os.environ["QT_QPA_PLATFORM"] = _screen(2560, 1440)
    from kvsim.ui.app import make_app

    app = make_app()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print("| theme | screenshot | element | pixels | min | 5th pct | median |")
    print("|---|---|---|---|---|---|---|")
    for theme_name, size, lanes in (
        ("dark", (1920, 1080), None),
        ("light", (1920, 1080), None),
        ("dark", (1280, 720), None),
        ("light", (1280, 720), None),
        ("dark", (1920, 1080), "uncached,cached,window:8"),
        ("light", (1920, 1080), "uncached,cached,window:8"),
    ):
        path, figures = shoot(theme_name, size, lanes, out, args.steps, app)
        for element, ratios in figures.items():
            if ratios.size == 0:
                print(f"| {theme_name} | {path.name} | {element} | 0 | – | – | – |")
                continue
            print(
                f"| {theme_name} | {path.name} | {element} | {ratios.size} | {ratios.min():.2f} | "
                f"{np.percentile(ratios, 5):.2f} | {np.median(ratios):.2f} |"
            )
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
