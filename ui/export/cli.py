"""``kvsim export --model M (--prompt TEXT | --prompt-ids …) --steps N --out FILE.gif|FILE.mp4
[--size WxH] [--fps F] [--speed S] [--lanes-only] [--lanes …] [--theme dark|light] [--scale F]``.

Renders a run headless (offscreen) to an animation for slides. The run is computed first by the
engine exactly as ``kvsim run`` computes it (same prompt handling, all N steps, the end-of-sequence
token does not stop it), then shown in the main window as an opened run and filmed by
``MovieExport``: for each step, its animation at ``--speed`` sampled at ``--fps`` (at least one frame
per step; ``--speed instant`` gives exactly one). Frames are ``--size`` pixels (the window is laid
out at size / scale). Every bad request (extension, size, frame rate, path) is one ``error:`` line
before anything is loaded.
"""

from __future__ import annotations

import re
import sys
import tempfile
import time
from pathlib import Path

from ..shell.animation import SPEEDS as SPEED_MS
from .movie import ExportError, MovieSpec, check_length, check_output, frames_per_step


def parse_size(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"\s*(\d{1,5})\s*[xX×]\s*(\d{1,5})\s*", text or "")
    if not m:
        raise ExportError(f"--size must look like 1280x720, got {text!r}")
    return int(m.group(1)), int(m.group(2))


def layout_size(size: tuple[int, int], scale: float) -> tuple[int, int]:
    """The window's size for frames of ``size`` pixels: size / scale (a 1280×720 frame at 1.5 is the
    853×480 stage a projector shows), at least the window's minimum (its frames are then scaled down)."""
    w, h = size[0] / scale, size[1] / scale
    f = max(1.0, 560 / w, 400 / h)
    return round(w * f), round(h * f)


STALL_S = 120  # a frame takes well under a second; two minutes without one is a hang, not a slow machine


def _fail(message: str, code: int = 2) -> int:
    print(f"error: {message.splitlines()[0] if message else 'export failed'}", file=sys.stderr)
    return code


def main(args) -> int:
    from .screenshot import check_docks, check_lang, check_scale, prepare, settle, start_app

    try:
        size = parse_size(args.size)
        check_output(args.out, size, args.fps)
        check_length(args.steps * frames_per_step(SPEED_MS[getattr(args, "speed", "normal")], args.fps), size)
        scale = check_scale(getattr(args, "scale", None))
        docks = check_docks(getattr(args, "show", None))
        lang = check_lang(getattr(args, "lang", None))
    except ValueError as exc:
        return _fail(str(exc))
    speed = getattr(args, "speed", "normal")
    spec_ms = SPEED_MS[speed]
    records, meta = compute_run(args)  # engine errors propagate to the CLI's one-line handler
    out = Path(args.out)
    app = start_app(scale, getattr(args, "theme", None), lang, size)
    from kvsim.engine.trace import Trace

    from ..shell.window import MainWindow

    window = MainWindow(model=args.model, prompt=args.prompt, persist=False, fallback=False)

    if theme := getattr(args, "theme", None):  # the window applies its own theme setting when built: choose after it
        window.theme_setting.choose(theme)
    window.animator.set_speed("instant")
    window.resize(*layout_size(size, scale))
    window.show()
    try:
        ready = window.controller.wait_ready(timeout_s=300)
        if not ready and not window.controller.run_failed:  # the window's own run failing does not matter:
            return _fail(window.controller.last_error or "the model did not load in time")  # the computed run is opened
        from kvsim.core.atomic import WriteError, remove_stale, temporary_prefix

        remove_stale(tempfile.gettempdir())  # the run files of exports a kill stopped
        with tempfile.TemporaryDirectory(prefix=temporary_prefix("export")) as tmp:
            trace_path = Path(tmp) / "run.kvsim"
            try:  # (a file-size limit or a full temporary folder: one line, not an unexpected failure)
                Trace(meta=meta, records=records).save(trace_path)
            except WriteError as exc:
                return _fail(f"the run to film could not be kept in the temporary folder: {exc}")
            if not window.controller.open_run(str(trace_path)):
                return _fail(window.controller.last_error or "the run could not be shown")
        window.setWindowTitle(f"kvsim — {meta.get('model_id', args.model)}")
        window.toolbar.show_speed(speed)
        window.statusBar().clearMessage()
        prepare(window, lanes_only=bool(args.lanes_only), show=docks)
        window.resize(*layout_size(size, scale))  # again: a shown window is first fitted to the (offscreen) screen
        app.processEvents()
        window.fit_docks()
        settle(window)
        spec = MovieSpec(path=out, first=0, last=len(records) - 1, size=size, fps=float(args.fps), step_ms=spec_ms)
        return film(window, spec, app)
    finally:
        window.shutdown()
        window.close()
        app.processEvents()


def film(window, spec: MovieSpec, app) -> int:
    """Run one MovieExport to its end (the event loop turning), then report it in one line."""
    from .movie import MovieExport

    export = MovieExport(window, spec)
    t0 = time.perf_counter()
    export.start()
    last, last_change = -1, time.monotonic()
    while not export.result:  # never waits on a person: a film that stops moving for STALL_S is given up
        app.processEvents()
        time.sleep(0.001)
        if export.done != last or export._closing:
            last, last_change = export.done, time.monotonic()
        elif time.monotonic() - last_change > STALL_S:
            export.cancel()
            return _fail(f"cannot write {spec.path}: no frame was drawn for {STALL_S} s")
    export.encoder.join(timeout=600)
    if export.result.startswith("error: "):
        error = export.result[7:]
        return _fail(error if error.startswith("cannot write") else f"cannot write {spec.path}: {error}")
    mb = spec.path.stat().st_size / 1e6
    print(
        f"{spec.path}: {spec.format.upper()}, {spec.n_frames} frames ({spec.last - spec.first + 1} steps × "
        f"{spec.frames_per_step}), {spec.size[0]}x{spec.size[1]}, {spec.fps:g} fps, "
        f"{spec.n_frames / spec.fps:.1f} s, {mb:.2f} MB, made in {time.perf_counter() - t0:.1f} s"
    )
    return 0


def compute_run(args) -> tuple[list, dict]:
    """The run's records and metadata, computed as ``kvsim run`` does (every step, EOS or not): the engine's,
    which ``kvsim export --html`` computes its page from too."""
    from kvsim.cli.run import compute_run as engine_compute_run

    return engine_compute_run(args)
