"""Screenshots of the layouts (called by scripts/screenshots.sh; each in its own process, because the
screen size and the scale are fixed when Qt starts):

    python scripts/layout_shots.py [--out docs/screenshots]

writes layout-1920x1080.png, layout-1280x720-scale1.5.png, layout-1024x768.png,
layout-lanes-only-1280x720-scale1.5.png, presenter-1280x720-scale1.5.png and presenter-1920x1080.png,
rendered offscreen on a screen of that size after 12 steps of the bundled model.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from kvsim.ui.export.screenshot import offscreen_platform

ROOT = Path(__file__).resolve().parents[1]
SHOTS = [  # name, screen width, height, QT_SCALE_FACTOR, mode
    ("layout-1920x1080", 1920, 1080, 1.0, "normal"),
    ("layout-1280x720-scale1.5", 1280, 720, 1.5, "normal"),
    ("layout-1024x768", 1024, 768, 1.0, "normal"),
    ("layout-lanes-only-1280x720-scale1.5", 1280, 720, 1.5, "lanes-only"),
    ("presenter-1280x720-scale1.5", 1280, 720, 1.5, "presenter"),
    ("presenter-1920x1080", 1920, 1080, 1.0, "presenter"),
]
RENDER = """
import sys
from kvsim.ui.app import make_app
app = make_app()
from kvsim.ui.shell.window import MainWindow
mode, out = sys.argv[1], sys.argv[2]
w = MainWindow(persist=False, prompt="It is a truth universally acknowledged, that a single man in possession of a good fortune")
w.animator.set_speed("instant")
w.show()
if not w.controller.wait_ready(300) or not w.controller.run_steps(12, timeout_s=600):
    sys.exit("the run did not complete: " + w.controller.last_error)
if mode == "lanes-only":
    w.toggle_lanes_only()
if mode == "presenter":
    w.presenter.enter()
for _ in range(30):
    app.processEvents()
w.lanes.settle()
for p in w.lanes.shown():
    p.redraw()
w.costs.redraw()
app.processEvents()
if not w.grab().save(out, "PNG"):
    sys.exit("could not write " + out)
w.shutdown()
"""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="layout and presenter-mode screenshots")
    p.add_argument("--out", default=str(ROOT / "docs" / "screenshots"))
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, w, h, scale, mode in SHOTS:
            env = dict(os.environ, QT_QPA_PLATFORM=offscreen_platform(w, h, tmp), QT_SCALE_FACTOR=f"{scale:g}")
            env.update({"XDG_CONFIG_HOME": tmp})  # never the user's settings
            path = out / f"{name}.png"
            cmd = [sys.executable, "-c", RENDER, mode, str(path)]
            proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
            if proc.returncode != 0 or not path.is_file():
                print(f"error: {name}: {proc.stderr.strip().splitlines()[-1:] or proc.returncode}", file=sys.stderr)
                return 2
            print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
