"""A GIF written frame by frame as the frames arrive: memory stays flat whatever the length.

Pillow's own multi-frame GIF writer keeps every frame until it saves (about 0.9 MB a 1280×720
frame); here each frame is written as it comes. The palette comes from a sample: the first frame's
colours plus the theme's fixed ones (``fixed``: a later DECODE badge keeps its green), and every
frame is reduced to it without dithering — so what did not change between two frames keeps the
same pixels: only the changed rectangle of each frame is stored (disposal "leave in place"), and a
frame identical to the one before is merged into it, its delay added. Delays are cumulative: a
frame ending at time t gets round(t / 10 ms) − (what was written before), so the file's timing
stays exact although a GIF counts in 1/100 s. Pillow's ``GifImagePlugin.getdata`` compresses each
rectangle (LZW); the header and the trailer are written here.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import BinaryIO

import numpy as np
from PIL import GifImagePlugin, Image


class GifStream:
    """``append(rgb)`` each (h, w, 3) uint8 frame, then ``close()``; ``frames_written`` GIF frames result."""

    def __init__(self, path: str | Path, size: tuple[int, int], fps: float, fixed: list[tuple[int, int, int]]) -> None:
        self.size, self.fps, self.fixed = size, fps, fixed[:255]
        self.fh: BinaryIO = open(path, "wb")  # noqa: SIM115 - closed by close()
        self.palette: Image.Image | None = None
        self.shown: np.ndarray | None = None  # the picture a viewer shows after the frames written
        self.pending: np.ndarray | None = None  # the last frame, not yet written (the next may repeat it)
        self.pending_n = 0
        self.pending_start = 0  # the index of the pending frame's first appended frame
        self.frames_in = 0  # frames appended
        self.frames_written = 0  # GIF frames written (identical neighbours merged)
        self.cs_written = 0  # hundredths of a second written

    def append(self, rgb: np.ndarray) -> None:
        image = Image.fromarray(np.ascontiguousarray(rgb), "RGB")
        if self.palette is None:
            first = image.quantize(256 - len(self.fixed), method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
            colours = (first.getpalette() or [])[: 3 * (256 - len(self.fixed))]
            colours += [0, 0, 0] * (256 - len(self.fixed) - len(colours) // 3)
            colours += [v for c in self.fixed for v in c]
            colours += [0, 0, 0] * (256 - len(colours) // 3)
            first.putpalette(colours)
            self.palette = first
            self._header(bytes(colours[:768]))
            indices = np.asarray(first)
        else:
            indices = np.asarray(image.quantize(palette=self.palette, dither=Image.Dither.NONE))
        self.frames_in += 1
        if self.pending is not None and np.array_equal(indices, self.pending):
            self.pending_n += 1
            return
        self._flush()
        self.pending, self.pending_n, self.pending_start = indices, 1, self.frames_in - 1

    def close(self) -> None:
        try:
            self._flush()
            if self.palette is not None:
                self.fh.write(b";")
        finally:
            self.fh.close()

    def abort(self) -> None:
        self.fh.close()

    # ------------------------------------------------------------------
    def _header(self, palette: bytes) -> None:
        w, h = self.size
        self.fh.write(b"GIF89a" + struct.pack("<HHBBB", w, h, 0xF7, 0, 0) + palette)
        self.fh.write(b"!\xff\x0bNETSCAPE2.0\x03\x01\x00\x00\x00")  # loop for ever

    def _flush(self) -> None:
        if self.pending is None:
            return
        frame, n = self.pending, self.pending_n
        end = round((self.pending_start + n) * 100.0 / self.fps)  # when this frame's time ends, in 1/100 s
        delay = max(1, end - self.cs_written)
        if self.shown is None:
            top, left, bottom, right = 0, 0, frame.shape[0], frame.shape[1]
        else:
            diff = frame != self.shown
            rows, cols = np.flatnonzero(diff.any(axis=1)), np.flatnonzero(diff.any(axis=0))
            top, bottom, left, right = int(rows[0]), int(rows[-1]) + 1, int(cols[0]), int(cols[-1]) + 1
        crop = np.ascontiguousarray(frame[top:bottom, left:right])
        part = Image.frombytes("P", (right - left, bottom - top), crop.tobytes())
        for chunk in GifImagePlugin.getdata(part, offset=(left, top), duration=delay * 10, disposal=1):
            self.fh.write(chunk)
        self.cs_written += delay
        self.frames_written += 1
        self.shown, self.pending, self.pending_n = frame, None, 0
