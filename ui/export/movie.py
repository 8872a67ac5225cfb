"""The run as a GIF or an MP4, made without freezing the window.

Frames are drawn on the GUI thread (only there may widgets paint) in small pieces driven by a
QTimer: one tick moves the cursor / the animation's ``t`` (the window's views redraw, the event
loop lays out what changed), the next ticks paint the picture in horizontal bands (a band's
views paint only what lies in it) — so the event loop runs between every piece and the window
keeps answering. The grabbed RGB arrays go through a bounded queue to
an encoder on a Python thread, which streams them into the file (``gif.GifStream`` over Pillow's LZW
for GIF; imageio with the ffmpeg binary that the imageio-ffmpeg wheel bundles for MP4 — the ``video`` extra;
nothing is downloaded): memory stays flat whatever the length (up to ``MAX_FRAMES``). The file is written through
``kvsim.core.atomic`` — a temporary file, read back (the GIF decoded, the MP4's frames counted), then
renamed — so a cancelled or failed export leaves the file it would replace as it was, and nothing else.

The animation is driven by a manual clock instead of the Animator's wall-clock timer: for each step
of the range, ``frames_per_step`` frames at t = 1/k, 2/k, …, 1 (k = the step's animation duration ×
fps, at least 1): the frame rate of the file, not of the screen, decides what is shown.
"""

from __future__ import annotations

import importlib.util
import os
import queue
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PySide6.QtCore import QObject, QPoint, QRect, QTimer, Signal
from PySide6.QtGui import QColor, QPixmap, QRegion
from PySide6.QtWidgets import QWidget

from kvsim.core.atomic import WriteError, atomic_target, check_target

from .. import theme
from ..i18n import local, translate
from .images import fit, to_array

FORMATS = {".gif": "gif", ".mp4": "mp4"}
VIDEO_EXTRA = 'pip install "kvsim[video]"'  # MP4's ffmpeg is optional (imageio-ffmpeg, ~165 MB); GIF needs nothing more
MAX_FPS = {"gif": 50, "mp4": 60}  # a GIF's frame delay is counted in 1/100 s: beyond 50 fps it lies
BANDS = 4  # pieces a frame is painted in (each one event-loop turn)
MIN_SIZE, MAX_SIZE = (64, 64), (3840, 2160)
MAX_FRAMES = 20_000  # frames in one export (about 22 min at 15 fps); see docs/export.md


class ExportError(ValueError):
    """An export that cannot be made as asked (a bad extension, size, frame rate or path): one line."""


@dataclass(frozen=True)
class MovieSpec:
    path: Path
    first: int  # the steps shown, first..last inclusive (0 = the prefill)
    last: int
    size: tuple[int, int]  # (w, h) pixels of every frame
    fps: float
    step_ms: int  # the animation of one step (0: "instant", one frame per step)

    @property
    def format(self) -> str:
        return FORMATS[self.path.suffix.lower()]

    @property
    def frames_per_step(self) -> int:
        return frames_per_step(self.step_ms, self.fps)

    @property
    def n_frames(self) -> int:
        return (self.last - self.first + 1) * self.frames_per_step

    def plan(self) -> list[tuple[int, float]]:
        return frame_plan(self.first, self.last, self.step_ms, self.fps)


def frames_per_step(step_ms: int, fps: float) -> int:
    """Frames that show one step's animation at ``fps`` (at least one: the settled step)."""
    return max(1, round(step_ms * fps / 1000.0))


def frame_plan(first: int, last: int, step_ms: int, fps: float) -> list[tuple[int, float]]:
    """(step, t) of every frame: each step's animation sampled at t = 1/k … 1."""
    k = frames_per_step(step_ms, fps)
    return [(s, (j + 1) / k) for s in range(first, last + 1) for j in range(k)]


def check_output(path: str | os.PathLike[str], size: tuple[int, int], fps: float) -> str:
    """The format of ``path`` ("gif" / "mp4"), or ExportError saying what is wrong with the request."""
    p = Path(path)
    fmt = FORMATS.get(p.suffix.lower())
    if fmt is None:
        raise ExportError(translate("export_movie", "the file must end in .gif or .mp4, got {name}").format(name=repr(p.name)))
    w, h = size
    if not (MIN_SIZE[0] <= w <= MAX_SIZE[0] and MIN_SIZE[1] <= h <= MAX_SIZE[1]):
        raise ExportError(
            translate("export_movie", "the size must be between {smallest} and {largest}, got {size}").format(
                smallest=f"{MIN_SIZE[0]}x{MIN_SIZE[1]}", largest=f"{MAX_SIZE[0]}x{MAX_SIZE[1]}", size=f"{w}x{h}"
            )
        )
    if fmt == "mp4" and importlib.util.find_spec("imageio_ffmpeg") is None:  # the `video` extra brings ffmpeg
        raise ExportError(
            translate("export_movie", "an MP4 needs ffmpeg, which kvsim's video extra brings: {command}").format(
                command=VIDEO_EXTRA
            )
        )
    if fmt == "mp4" and (w % 2 or h % 2):
        even = translate("export_movie", "an MP4's width and height must be even (H.264, yuv420p), got {size}")
        raise ExportError(even.format(size=f"{w}x{h}"))
    if not (np.isfinite(fps) and 1 <= fps <= MAX_FPS[fmt]):
        raise ExportError(
            translate("export_movie", "the frame rate of a {format} must be between 1 and {most} fps, got {fps}").format(
                format=fmt.upper(), most=MAX_FPS[fmt], fps=local(f"{fps:g}")
            )
        )
    folder = p.parent if str(p.parent) else Path(".")
    if not folder.is_dir():
        raise ExportError(translate("export_movie", "cannot write {path}: no such folder {folder}").format(path=p, folder=folder))
    if not os.access(folder, os.W_OK) or (p.exists() and (p.is_dir() or not os.access(p, os.W_OK))):
        raise ExportError(translate("export_movie", "cannot write {path}: permission denied or not a file").format(path=p))
    try:
        check_target(p)  # a FIFO or a device is never replaced
    except WriteError as exc:
        raise ExportError(str(exc)) from None
    return fmt


def check_length(n_frames: int, size: tuple[int, int]) -> None:
    """ExportError when a movie of ``n_frames`` frames of ``size`` is past the documented limit
    (``MAX_FRAMES``; docs/export.md): memory does not grow with the length (frames stream to the
    encoder), but such a file takes hours to make and gigabytes to hold."""
    if n_frames > MAX_FRAMES:
        raise ExportError(
            translate(
                "export_movie",
                "{n} frames is more than an export makes ({most}): fewer steps, a faster speed or a lower frame rate",
            ).format(n=n_frames, most=MAX_FRAMES)
        )


def theme_colors() -> list[tuple[int, int, int]]:
    """The colours a GIF's palette always holds: the theme's named ones and samples of its colormaps."""
    names = [theme.BG, theme.PANEL, theme.BORDER, theme.TEXT, theme.MUTED, theme.ACCENT, theme.ERROR, theme.MASKED]
    colors = [tuple(int(c[i : i + 2], 16) for i in (1, 3, 5)) for c in (*names, *theme.LANE_COLORS, *theme.PHASE_COLORS.values())]
    for cmap in (theme.KV_CMAP, theme.ATTN_CMAP):
        colors += [tuple(int(v) for v in rgb) for rgb in theme.lut(cmap)[::11]]
    return list(dict.fromkeys(colors))[:96]


class _Cancelled(Exception):
    """The export was cancelled: the temporary file goes, the target stays as it was."""


class Encoder(threading.Thread):
    """Writes the frames it is handed (``put``; ``None`` ends) to ``spec.path``, on its own thread."""

    def __init__(self, spec: MovieSpec) -> None:
        super().__init__(name="kvsim-export-encoder", daemon=True)
        self.spec = spec
        self.frames: queue.Queue[np.ndarray | None] = queue.Queue(maxsize=6)
        self.cancelled = threading.Event()
        self.error = ""
        self.written = 0
        self.tmp: Path | None = None  # the temporary file while it is written (kvsim.core.atomic)
        self.fixed = theme_colors() if spec.format == "gif" else []  # read here, on the GUI thread
        self._gif_frames = 0

    def _writer(self, tmp: Path):
        if self.spec.format == "gif":
            return self._gif_writer(tmp)
        import imageio.v2 as iio2

        writer = iio2.get_writer(
            tmp,
            format="FFMPEG",
            mode="I",
            fps=self.spec.fps,
            codec="libx264",
            pixelformat="yuv420p",
            quality=8,
            macro_block_size=2,
            ffmpeg_log_level="quiet",  # its lines would go to the terminal beside ours ("Broken pipe" ×7): said in one, below
            # one core (the window keeps the other); ultrafast: no look-ahead or B-frames to buffer, so the
            # encoder holds ~110 MB at 1280x720 instead of ~250 MB (files are larger: docs/export.md)
            output_params=["-threads", "1", "-preset", "ultrafast"],
        )
        return writer.append_data, writer.close

    def _gif_writer(self, tmp: Path):
        """Frames streamed into the file as they arrive (``gif.GifStream``: a palette from the first frame
        and the theme's colours, only each frame's changed rectangle, identical neighbours merged)."""
        from .gif import GifStream

        stream = GifStream(tmp, self.spec.size, self.spec.fps, self.fixed)

        def close() -> None:
            stream.close()
            self._gif_frames = stream.frames_written

        return stream.append, close

    def check(self, tmp: Path) -> None:
        """The written file read back: a GIF decodes to its last frame with every frame there; an MP4
        holds as many frames as were handed over (ffmpeg counts them)."""
        w, h = self.spec.size
        if self.spec.format == "gif":
            from PIL import Image

            with Image.open(tmp) as im:
                if im.format != "GIF" or im.size != (w, h) or im.n_frames != self._gif_frames:
                    raise ValueError(f"the GIF holds {getattr(im, 'n_frames', 0)} frames, {self._gif_frames} were written")
                im.seek(im.n_frames - 1)
                im.load()
            return
        import imageio_ffmpeg

        n, _ = imageio_ffmpeg.count_frames_and_secs(str(tmp))
        if n != self.written:
            raise ValueError(f"the MP4 holds {n} frames, {self.written} were encoded")

    def run(self) -> None:
        try:
            with atomic_target(self.spec.path, self.check) as tmp:
                self.tmp = tmp
                append, close = self._writer(tmp)
                try:
                    while True:
                        f = self.frames.get()
                        if f is None or self.cancelled.is_set():
                            break
                        append(f)
                        self.written += 1
                finally:
                    close()
                if self.cancelled.is_set():
                    raise _Cancelled
        except _Cancelled:
            return
        except Exception as exc:  # noqa: BLE001 - reported to the GUI as one line
            self.error = encoder_failure(exc, self.spec.path, self.spec.format)

    def cancel(self) -> None:
        self.cancelled.set()
        try:  # wake it if it waits for a frame
            self.frames.put_nowait(None)
        except queue.Full:
            pass


def encoder_failure(exc: BaseException, path: str | os.PathLike[str], fmt: str) -> str:
    """One line for a failed export: a write refused by kvsim as it is; an MP4 whose encoder (ffmpeg, a
    separate process) stopped — imageio says "Broken pipe", then its command and its log — by the likely
    cause: the disk full, else the first line of what it said."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if isinstance(exc, OSError) and text.startswith("cannot write"):
        return text
    if fmt == "mp4" and isinstance(exc, OSError):
        import shutil

        try:
            full = shutil.disk_usage(Path(path).absolute().parent).free < 16 * 1024 * 1024
        except OSError:
            full = False
        why = "no space left on the disk" if full else (text or type(exc).__name__)
        return f"cannot write {path}: the MP4 encoder (ffmpeg) stopped: {why}"
    return f"{type(exc).__name__}: {text}"


class MovieExport(QObject):
    """One export of the window's run: ``start()``, then ``progress`` / ``finished`` / ``failed``."""

    progress = Signal(int, int)  # frames grabbed, frames in all
    finished = Signal(str)  # the written path
    failed = Signal(str)  # one line (a cancel says "cancelled")

    def __init__(self, window, spec: MovieSpec, target: QWidget | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent or window)
        self.window, self.spec = window, spec
        self.target = target or window
        self.plan = spec.plan()
        self.done = 0
        self.encoder = Encoder(spec)
        self.timer = QTimer(self)
        self.timer.setInterval(0)
        self.timer.timeout.connect(self._tick)
        self._band = 0  # the next band of the frame to paint
        self._canvas: QPixmap | None = None
        self._prepared = -1  # index of the frame whose picture is set up (grabbed on the next tick)
        self._cursor = window.session.cursor
        self._closing = False
        self._in_tick = False
        self.result = ""  # "" while running; then the path, or "error: …"
        self.tick_ms: list[float] = []  # what each tick cost the GUI thread (benchmarks)

    def start(self) -> None:
        self.window.controller.stop_play()
        self.window.animator.stop()
        self._no_hover()
        self.encoder.start()
        self.timer.start()

    def _no_hover(self) -> None:
        """No hovered token or row in the frames (unless the film is of a hover): cleared everywhere."""
        w = self.window
        if getattr(w.tokens, "hover", -1) != -1 or getattr(w.lanes, "_hover", -1) != -1:
            w.lanes.set_hovered(-1)
            w.tokens.set_hover(-1)

    def cancel(self) -> None:
        if not self.result:
            self._stop("cancelled")

    # ------------------------------------------------------------------ the GUI-thread pieces
    def _tick(self) -> None:
        if self._in_tick or self.result:
            return
        self._in_tick = True
        import time

        t0 = time.perf_counter()
        try:
            self._piece()
        except Exception as exc:  # noqa: BLE001 - a failing export is a message, never a broken window
            self._stop(f"{type(exc).__name__}: {exc}")
        finally:
            self._in_tick = False
            self.tick_ms.append((time.perf_counter() - t0) * 1000.0)

    def _piece(self) -> None:
        if self.encoder.error:
            self._stop(self.encoder.error)
            return
        if self._closing:  # every frame handed over: wait (without blocking) for the encoder to finish
            if not self.encoder.is_alive():
                self._stop("" if not self.encoder.error else self.encoder.error)
            return
        if self._prepared < self.done:  # set up frame `done`: its step and its point in the animation
            step, t = self.plan[self.done]
            self._no_hover()  # a pointer resting on the window is not filmed
            show_frame(self.window, step, t)
            self._prepared = self.done
            return
        if self._band == 0 and self.encoder.frames.full():
            self.timer.setInterval(5)  # the encoder is behind: let it catch up, the window stays free
            return
        self.timer.setInterval(0)
        if not self._paint_band():
            return
        assert self._canvas is not None  # _paint_band made it at the frame's first band
        self.encoder.frames.put_nowait(to_array(fit(self._canvas.toImage(), self.spec.size)))
        self.done += 1
        self.progress.emit(self.done, len(self.plan))
        if self.done == len(self.plan):
            self._closing = True
            self.encoder.frames.put(None)
            self.timer.setInterval(5)

    def _paint_band(self) -> bool:
        """Paint the next band of the frame into the canvas; True when the frame is whole."""
        w = self.target
        if self._band == 0:
            dpr = w.devicePixelRatioF()
            self._canvas = QPixmap(round(w.width() * dpr), round(w.height() * dpr))
            self._canvas.setDevicePixelRatio(dpr)
            self._canvas.fill(QColor(theme.BG))
        n = max(1, min(BANDS, w.height() // 100))
        top, bottom = w.height() * self._band // n, w.height() * (self._band + 1) // n
        assert self._canvas is not None  # made at the frame's first band, kept for the others
        w.render(self._canvas, QPoint(0, top), QRegion(QRect(0, top, w.width(), bottom - top)))
        self._band = (self._band + 1) % n
        return self._band == 0

    def _stop(self, error: str) -> None:
        self.timer.stop()
        if error:
            self.encoder.cancel()
        self.result = str(self.spec.path) if not error else f"error: {error}"
        s = self.window.session
        if s.cursor != self._cursor:
            s.set_cursor(self._cursor)
        self.window.flush_views()
        show_frame(self.window, s.cursor, 1.0)
        if error:
            self.failed.emit(error)
        else:
            self.finished.emit(str(self.spec.path))


def show_frame(window, step: int, t: float) -> None:
    """Show ``step`` of the run at point ``t`` of its animation, every view at once (no staggering)."""
    s = window.session
    if s.cursor != step:
        s.set_cursor(step)
    window.flush_views()
    window.animator.frame.emit(t)  # the manual clock: whatever follows the animation gets this t
    for p in window.lanes.shown():
        p.flush()
        p.set_progress(t)
