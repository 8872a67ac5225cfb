"""Fresh screenshots of every scene a talk uses, taken by tests/stage_probe.py — the same process that the
layout tests run, so each picture is one the audit passed or reported on (its problems are printed):

    python scripts/stage_shots.py [FOLDER] [--only SCREEN,…]

FOLDER defaults to out/stage-shots (git-ignored); ``scripts/screenshots.sh`` writes docs/screenshots with
``--only projector,desktop,presenter,lesson``. One process per screen and language (the screen size and the scale
are fixed when Qt starts). The screens:

* ``projector``: stage-853x480/<view>-<lang>.png, every stage view and the bundled demos (demo-<name>-<lang>.png)
  on a 1280×720 projector at ×1.5;
* ``desktop``: stage-1920x1080/desktop-<lang>.png, the docks' layout at 1920×1080;
* ``presenter``: stage-presenter/<view>-en.png, presenter mode at 853×480;
* ``lesson`` / ``lesson-1920``: stage-lesson/ and stage-lesson-1920x1080/lesson-<step>-<lang>.png, every lesson step;
* ``scenes`` / ``scenes-1920``: stage-scenes-853x480/ and stage-scenes-1920x1080/scene-<scene>-<view>-<lang>.png:
  1, 3 and 4 lanes, the all-heads view of a Gemma-like (MQA) and an MLA model, every lane preset (eviction,
  speculation, weights, …) and the hybrid and CLA models (tests/stage_probe.py's ``scenes()``).

English and Portuguese everywhere but presenter mode. Exit status 1 when the audit reported a problem.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from kvsim.ui.export.screenshot import offscreen_platform

ROOT = Path(__file__).resolve().parents[1]
SCREENS = {  # name: folder, width, height, QT_SCALE_FACTOR, probe mode, languages
    "projector": ("stage-853x480", 1280, 720, 1.5, "normal", "en,pt_BR"),
    "desktop": ("stage-1920x1080", 1920, 1080, 1.0, "normal", "en,pt_BR"),
    "presenter": ("stage-presenter", 1280, 720, 1.5, "presenter", "en"),
    "lesson": ("stage-lesson", 1280, 720, 1.5, "lesson", "en,pt_BR"),
    "lesson-1920": ("stage-lesson-1920x1080", 1920, 1080, 1.0, "lesson", "en,pt_BR"),
    "scenes": ("stage-scenes-853x480", 1280, 720, 1.5, "scenes", "en,pt_BR"),
    "scenes-1920": ("stage-scenes-1920x1080", 1920, 1080, 1.0, "scenes", "en,pt_BR"),
}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="the stage's screenshots (and what the layout audit says about them)")
    p.add_argument("folder", nargs="?", default=None, help="where the pictures go (default: out/stage-shots)")
    p.add_argument("--out", default=None, help="the same as FOLDER")
    p.add_argument("--only", default=",".join(SCREENS), help="screens to take: " + ", ".join(SCREENS))
    args = p.parse_args(argv)
    root = Path(args.folder or args.out or ROOT / "out" / "stage-shots")
    names = [n for n in args.only.split(",") if n]
    unknown = [n for n in names if n not in SCREENS]
    if unknown:
        print(f"error: no screen {unknown[0]!r} (known: {', '.join(SCREENS)})", file=sys.stderr)
        return 2
    wrong = 0
    for name in names:
        folder, width, height, scale, mode, langs = SCREENS[name]
        out = root / folder
        for lang in langs.split(","):  # a process per language: a fresh start each, as the layout tests take them
            result = _probe(width, height, scale, mode, lang, out)
            if isinstance(result, str):
                print(f"error: {name} {lang}: {result}", file=sys.stderr)
                return 2
            for view, problems in result[lang].items():
                wrong += len(problems)
                for problem in problems:
                    print(f"{name} {lang} {view}: {problem}")
        if name == "desktop":  # the large screen's picture is its desktop; its stage views repeat the projector's
            for extra in [*out.glob("stage-*.png"), *out.glob("demo-*.png")]:
                extra.unlink()
        print(f"{out}: {len(list(out.glob('*.png')))} pictures")
    return 1 if wrong else 0


def _probe(width: int, height: int, scale: float, mode: str, lang: str, out: Path) -> dict | str:
    """tests/stage_probe.py on an offscreen screen of ``width``×``height`` at ``scale``: its result, or what failed."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, QT_QPA_PLATFORM=offscreen_platform(width, height, tmp), QT_SCALE_FACTOR=f"{scale:g}")
        env.update({"XDG_CONFIG_HOME": tmp, "XDG_DATA_HOME": tmp})  # never the user's settings or data
        cmd = [sys.executable, str(ROOT / "tests" / "stage_probe.py"), mode, lang, str(out)]
        proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        return (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
    return json.loads(lines[-1][len("RESULT ") :])


if __name__ == "__main__":
    sys.exit(main())
