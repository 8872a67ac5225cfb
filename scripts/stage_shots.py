"""Screenshots of the stage (called by scripts/screenshots.sh; one process per screen, because the screen
size and the scale are fixed when Qt starts), taken by tests/stage_probe.py — the same process that the
layout tests run, so each picture is one the audit passed or reported on:

    python scripts/stage_shots.py [--out docs/screenshots] [--only projector,desktop,presenter,lesson]

writes stage-853x480/<view>-<lang>.png (a 1280×720 projector at ×1.5, English and Portuguese; the
bundled demos as demo-<name>-<lang>.png), stage-presenter/<view>-en.png, stage-1920x1080/desktop-en.png
(the docks) and stage-lesson/lesson-<step>-<lang>.png, and prints each screen's problems (none expected).
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
    "desktop": ("stage-1920x1080", 1920, 1080, 1.0, "normal", "en"),
    "presenter": ("stage-presenter", 1280, 720, 1.5, "presenter", "en"),
    "lesson": ("stage-lesson", 1280, 720, 1.5, "lesson", "en,pt_BR"),
}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="the stage's screenshots (and what the layout audit says about them)")
    p.add_argument("--out", default=str(ROOT / "docs" / "screenshots"))
    p.add_argument("--only", default=",".join(SCREENS), help="screens to take: " + ", ".join(SCREENS))
    args = p.parse_args(argv)
    wrong = 0
    for name in args.only.split(","):
        if name not in SCREENS:
            print(f"error: no screen {name!r} (known: {', '.join(SCREENS)})", file=sys.stderr)
            return 2
        folder, width, height, scale, mode, langs = SCREENS[name]
        out = Path(args.out) / folder
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, QT_QPA_PLATFORM=offscreen_platform(width, height, tmp), QT_SCALE_FACTOR=f"{scale:g}")
            env.update({"XDG_CONFIG_HOME": tmp})  # never the user's settings
            cmd = [sys.executable, str(ROOT / "tests" / "stage_probe.py"), mode, langs, str(out)]
            proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
        lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
        if proc.returncode != 0 or not lines:
            print(f"error: {name}: {(proc.stderr.strip().splitlines() or [str(proc.returncode)])[-1]}", file=sys.stderr)
            return 2
        result = json.loads(lines[-1][len("RESULT ") :])
        for lang in langs.split(","):
            for view, problems in result[lang].items():
                wrong += len(problems)
                for problem in problems:
                    print(f"{name} {lang} {view}: {problem}")
        if name == "desktop":  # the large screen's picture is its desktop; its stage views repeat the projector's
            for extra in [*out.glob("stage-*.png"), *out.glob("demo-*.png")]:
                extra.unlink()
        print(f"{out}: {len(list(out.glob('*.png')))} pictures")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
