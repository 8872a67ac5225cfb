"""Screenshots of the Requests dock's offload and disaggregation views (docs/serving_tiers.md), rendered
offscreen into docs/screenshots/ from runs of the bundled tiny model made here: four requests behind two
alternating openings through a 9-block pool with a host tier of 2 blocks and a disk tier (the blocks view
at a step that loads from both tiers, the timeline, the off-vs-on table), then the same list colocated and
disaggregated (the decode instance a second process).

    QT_QPA_PLATFORM=offscreen python scripts/tier_shots.py [--out docs/screenshots]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

A = "It is a truth universally acknowledged, that a single man in possession"
B = "The family of Dashwood had long been settled in Sussex. Their estate was large"
PROMPTS = (A + " said", B + " and", A + " was", B + " then")
OFFLOAD = "host:16KiB,disk:1MB"  # tiny's blocks of 4 are 8 KiB: the host tier holds 2, the rest goes down to disk


def settle(app, rounds: int = 8) -> None:
    for _ in range(rounds):
        app.processEvents()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="docs/screenshots")
    args = ap.parse_args()
    from kvsim.ui.export.screenshot import offscreen_platform

    os.environ["QT_QPA_PLATFORM"] = offscreen_platform(2560, 1440, tempfile.mkdtemp())
    out = Path(args.out)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from helpers import SyncHost

    from kvsim.models.loading import load_model
    from kvsim.ui import i18n, theme
    from kvsim.ui.docks.requests.dock import RequestsView
    from kvsim.ui.docks.requests.job import RequestsInput, RequestsSettings, compute
    from kvsim.ui.docks.requests.split import compute_split
    from kvsim.ui.export.images import write_png
    from kvsim.ui.export.screenshot import start_app

    app = start_app(1.0, None)
    tiny = load_model("tiny")
    settings = RequestsSettings(block_size=4, pool_blocks=9, steps=3, schedule="sequential", repeats=3, offload=OFFLOAD)
    tiers = compute(tiny, RequestsInput(PROMPTS), settings)
    split = compute_split(tiny, PROMPTS, None, block_size=4, steps=6)
    run = tiers.both.on
    loads = [
        s
        for s in range(len(run.snapshots))
        if {m["tier"] for m in run.moves_at(s) if m["direction"] == "load"} == {"host", "disk"}
    ]
    shots = []
    for lang in ("en", "pt_BR"):
        i18n.install(app, lang)
        theme.apply(app)
        view = RequestsView(SyncHost(tiny))
        view.show()
        view.show_result(tiers)
        view.split.show_result(split)
        view.show_step(loads[0] if loads else 0)
        suffix = "" if lang == "en" else "-pt_BR"
        sizes = ((1920, 1080), (853, 480)) if lang == "en" else ((1920, 1080),)
        for width, height in sizes:
            view.resize(width, height)
            for tab, name in ((0, "tiers-blocks"), (1, "tiers-offon"), (3, "tiers-timeline"), (5, "disaggregated")):
                view.tabs.setCurrentIndex(tab)
                if tab == 5:
                    view.split.slider.setValue(view.split.slider.maximum())
                settle(app)
                path = out / f"{name}{suffix}-{width}x{height}.png"
                write_png(view.grab().toImage(), path)
                shots.append(path)
        view.close()
    i18n.install(app, "en")
    print("\n".join(str(p) for p in shots))
    return 0


if __name__ == "__main__":
    sys.exit(main())
