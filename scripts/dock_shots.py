"""Screenshots of the docks (memory, roofline, requests), the guided lesson and the Portuguese app,
rendered offscreen into docs/screenshots/ (scripts/screenshots.sh calls this).

    QT_QPA_PLATFORM=offscreen python scripts/dock_shots.py [--out docs/screenshots] [--model tiny]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path


def wait(app, until, timeout_s: float = 300.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        app.processEvents()
        if until():
            return True
        time.sleep(0.01)
    return False


def window(app, model: str, prompt: str, lanes: str, steps: int):
    from kvsim.ui.shell.window import MainWindow

    w = MainWindow(model=model, prompt=prompt, persist=False, fallback=model == "tiny")
    w.animator.set_speed("instant")
    w.controller.lanes = lanes
    w.resize(1920, 1080)
    w.show()
    if not (w.controller.wait_ready(timeout_s=300) and w.controller.run_steps(steps, timeout_s=600)):
        sys.exit(f"error: {w.controller.last_error or 'the run did not complete'}")
    return w


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="docs/screenshots")
    ap.add_argument("--model", default="tiny")
    args = ap.parse_args()
    from kvsim.ui.export.screenshot import offscreen_platform

    os.environ["QT_QPA_PLATFORM"] = offscreen_platform(2560, 1440, tempfile.mkdtemp())  # room for 1920×1080
    out = Path(args.out)
    from kvsim.ui import i18n
    from kvsim.ui.export.screenshot import prepare, render, start_app

    app = start_app(1.0, None)
    i18n.install(app, "en")
    sizes = ((1920, 1080), (1280, 720))

    w = window(app, args.model, "It is a truth universally acknowledged", "uncached,cached,window:8,int8:g4:r4", 12)
    prepare(w, show=["memory"])
    memory = w.extra_docks["memory"].view
    for size in sizes:
        for tab, name in ((0, "memory"), (1, "memory-plot")):
            memory.tabs.setCurrentIndex(tab)
            render(w, size, out / f"{name}-{size[0]}x{size[1]}.png")
    w.shutdown()
    w.close()

    w = window(app, args.model, "Once upon a time there was a little", "uncached,cached", 20)
    prepare(w, show=["roofline"])
    roofline = w.extra_docks["roofline"].view
    wait(app, lambda: not w.jobs._waiting, 60)
    for size in sizes:
        render(w, size, out / f"roofline-{size[0]}x{size[1]}.png")
    roofline.tabs.setCurrentIndex(1)
    render(w, (1920, 1080), out / "roofline-gpu-1920x1080.png")
    w.shutdown()
    w.close()

    w = window(app, args.model, "Once upon a time", "uncached,cached", 1)
    prepare(w, show=["requests"])
    requests = w.extra_docks["requests"].view
    wait(app, lambda: getattr(requests, "result", None) is not None and not w.jobs._waiting, 300)
    requests.show_step(requests.prefill_step(1))  # request 2's prefill: it hits request 1's blocks
    for size in sizes:
        render(w, size, out / f"requests-{size[0]}x{size[1]}.png")
    w.shutdown()
    w.close()

    prompts = {"en": "The cache remembers what the model has already read, so", "pt_BR": "O cache de chaves e valores"}
    for lang, prompt in prompts.items():
        i18n.install(app, lang)
        w = window(app, args.model, prompt, "uncached,cached", 12)
        suffix = "" if lang == "en" else "-pt_BR"
        if lang != "en":
            render(w, (1920, 1080), out / f"main{suffix}-1920x1080.png")
            prepare(w, show=["requests"])
            view = w.extra_docks["requests"].view
            wait(app, lambda view=view, w=w: getattr(view, "result", None) is not None and not w.jobs._waiting, 300)
            view.show_step(view.prefill_step(1))
            render(w, (1920, 1080), out / f"requests{suffix}-1920x1080.png")
            w.extra_docks["requests"].setVisible(False)
        w.lesson_dock.setVisible(True)
        for index in (4, 8):  # Σt = n(n+1)/2 vs n; the 70B model at 128k on the memory dock
            lesson = w.lesson
            lesson.go(index)
            wait(app, lambda lesson=lesson: lesson.done or bool(lesson.problem), 300)
            render(w, (1920, 1080), out / f"lesson-{w.lesson.steps[index].id}{suffix}-1920x1080.png")
        w.shutdown()
        w.close()
    i18n.install(app, "en")
    print("\n".join(sorted(str(p) for p in out.glob("*.png"))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
