"""Peak memory of `kvsim export` against the number of frames (GIF and MP4 stream to the encoder).

    python benchmarks/frontend/export_memory.py [--frames 160,800,3000] [--formats gif,mp4] [--size 1280x720]

Each export runs as its own process (``python -m kvsim export … --speed slow --fps 50``: 80 frames a
step, so F frames are F/80 steps of a small random model); its resident memory, summed over the
process and its children (the MP4's ffmpeg), is sampled every 0.1 s with psutil and the peak kept.
Printed per run: format, frames, peak RSS, wall time, file size, and the machine's load (``uptime``).
Flat memory means the peak does not grow with the frame count (before the streaming writer, a GIF
kept every frame: ~0.9 MB each at 1280x720). Figures are in docs/export.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.append(str(Path(__file__).resolve().parents[1]))  # benchmarks/, where the shared _load.py is
from _load import LoadWatch  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MODEL = "random:family=llama,layers=1,heads=2,kv_heads=1,dim=32,ctx=512,seed=1"
FRAMES_PER_STEP = 80  # --speed slow (1.6 s) at 50 fps


def tree_rss(proc: psutil.Process) -> tuple[int, int]:
    """(the process's RSS, its children's summed)."""
    own = children = 0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            rss = p.memory_info().rss
        except psutil.Error:
            continue
        if p.pid == proc.pid:
            own = rss
        else:
            children += rss
    return own, children


def measure(fmt: str, frames: int, size: str, folder: Path) -> dict:
    steps = max(1, -(-frames // FRAMES_PER_STEP))  # at least the frames asked
    out = folder / f"bench-{frames}.{fmt}"
    cmd = [sys.executable, "-m", "kvsim", "export", "--model", MODEL, "--prompt-ids", "1,2", "--steps", str(steps)]
    cmd += ["--size", size, "--fps", "50", "--speed", "slow", "--out", str(out)]
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ps, peak, peak_own, peak_children = psutil.Process(proc.pid), 0, 0, 0
    while proc.poll() is None:
        own, children = tree_rss(ps)
        peak, peak_own, peak_children = max(peak, own + children), max(peak_own, own), max(peak_children, children)
        time.sleep(0.1)
    stdout, stderr = proc.communicate()
    if proc.returncode:
        raise SystemExit(f"export failed ({proc.returncode}): {stderr.strip()}")
    return {
        "format": fmt,
        "frames": steps * FRAMES_PER_STEP,
        "peak_rss_mb": peak / 2**20,
        "own_mb": peak_own / 2**20,
        "children_mb": peak_children / 2**20,
        "seconds": time.perf_counter() - t0,
        "file_mb": out.stat().st_size / 1e6,
        "load": os.getloadavg(),
        "line": stdout.strip(),
    }


def main() -> int:
    LoadWatch()  # the machine's load at start and end, printed beside the figures (benchmarks/_load.py)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", default="160,800,3000")
    ap.add_argument("--formats", default="gif,mp4")
    ap.add_argument("--size", default="1280x720")
    args = ap.parse_args()
    print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    with tempfile.TemporaryDirectory(prefix="kvsim-bench-") as tmp:
        for fmt in args.formats.split(","):
            for n in (int(x) for x in args.frames.split(",")):
                r = measure(fmt, n, args.size, Path(tmp))
                load = " ".join(f"{x:.1f}" for x in r["load"])
                print(
                    f"{r['format']:>4} {r['frames']:>6} frames {args.size}: peak RSS {r['peak_rss_mb']:7.1f} MB "
                    f"(kvsim {r['own_mb']:.1f}, encoder processes {r['children_mb']:.1f}), "
                    f"{r['seconds']:7.1f} s, {r['file_mb']:7.2f} MB file, load {load}",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
