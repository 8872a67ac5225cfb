"""Still pictures for slides: a widget as PNG at 1× or 2× its pixels, a pyqtgraph view as SVG, and a
widget as an RGB array of a fixed size (the frames of a GIF/MP4). GUI thread only.

A 2× PNG is *rendered* at twice the resolution (the widget paints into a pixmap whose device pixel
ratio is 2: text and lines are drawn sharp, not scaled up), so it stays crisp on a 4K projector.
SVG comes from ``pyqtgraph.exporters.SVGExporter`` on a ``GraphicsLayoutWidget``'s scene: the
curves, axes and text are vectors and the heatmaps are embedded images; Qt labels outside the
scene (a lane's header and readout) are not part of it — the PNG has them.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from PySide6.QtCore import QPoint, QSize, Qt
from PySide6.QtGui import QColor, QImage, QPainter, QPixmap
from PySide6.QtWidgets import QWidget

from kvsim.core.atomic import atomic_target, write_bytes

from .. import theme
from ..i18n import translate


def render(widget: QWidget, scale: float = 1.0) -> QImage:
    """The widget painted at ``scale`` × its logical size (its own device pixel ratio ignored)."""
    if not 0.25 <= scale <= 8:
        raise ValueError(f"scale must be between 0.25 and 8, got {scale}")
    size = widget.size()
    pix = QPixmap(QSize(max(1, round(size.width() * scale)), max(1, round(size.height() * scale))))
    pix.setDevicePixelRatio(scale)
    pix.fill(QColor(widget.palette().window().color() if widget.autoFillBackground() else QColor(theme.BG)))
    widget.render(pix, QPoint(0, 0))
    image = pix.toImage()
    image.setDevicePixelRatio(1.0)  # a file has pixels, not logical points
    return image


def save_png(widget: QWidget, path: str | os.PathLike[str], scale: float = 1.0) -> Path:
    """Write the widget as PNG at ``scale`` (1 or 2 for slides), atomically (``kvsim.core.atomic``: the file
    it replaces stays whole on any failure); OSError with one line when the file cannot be written."""
    path = Path(path)
    image = render(widget, scale)
    _check_folder(path)
    write_png(image, path)
    return path


def write_png(image: QImage | QPixmap, path: Path) -> None:
    """``image`` as a PNG at ``path``: encoded in memory (libpng never meets a failing disk), then written
    through ``kvsim.core.atomic`` (a temporary file, read back and its size checked, then renamed)."""
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice

    size = (image.width(), image.height())
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    if not image.save(buffer, "PNG"):
        raise OSError(_could_not_write(path))
    buffer.close()

    def check(tmp: Path) -> None:
        back = QImage(str(tmp), "PNG")
        if back.isNull() or (back.width(), back.height()) != size:
            raise ValueError("not a whole PNG")

    write_bytes(path, bytes(data.data()), check)


def _could_not_write(path: Path) -> str:
    return translate("export_images", "could not write {path}").format(path=path)


def save_svg(view, path: str | os.PathLike[str]) -> Path:
    """Write a pyqtgraph ``GraphicsLayoutWidget`` (or any GraphicsView) as SVG through pyqtgraph's
    exporter. pyqtgraph 0.14 cannot read back the closed paths ("… Z") that Qt 6's SVG generator
    writes for rectangles (pyqtgraph issue #3495); while it exports, each "Z" is spelled as a line
    back to the path's start, which draws the same shape."""
    import importlib

    svg_module = importlib.import_module("pyqtgraph.exporters.SVGExporter")  # the module (the package exports the class)
    path = Path(path)
    _check_folder(path)
    original = svg_module.correctCoordinates

    def correct(node, defs, item, options):
        for element in node.getElementsByTagName("path"):
            element.setAttribute("d", _unclose(element.getAttribute("d")))
        return original(node, defs, item, options)

    svg_module.correctCoordinates = correct
    try:
        with atomic_target(path, _check_svg) as tmp:
            exporter = svg_module.SVGExporter(view.scene())
            exporter.params["background"] = QColor(theme.BG)  # the theme's ground: grey labels stay readable on any page
            exporter.export(fileName=str(tmp))
    except OSError:
        raise
    except Exception as exc:  # noqa: BLE001 - the exporter failing on an item is one message
        error = f"{type(exc).__name__}: {exc}"
        raise OSError(translate("export_images", "the SVG exporter failed: {error}").format(error=error)) from None
    finally:
        svg_module.correctCoordinates = original
    return path


def _check_svg(tmp: Path) -> None:
    from xml.etree import ElementTree

    root = ElementTree.parse(tmp).getroot()  # a cut file is not well-formed XML
    if not root.tag.endswith("svg"):
        raise ValueError("not an SVG document")


def _unclose(d: str) -> str:
    """``M x,y L … Z`` → ``M x,y L … Lx,y`` (every subpath closed by a line to its own start)."""
    out, start = [], ""
    for token in d.split():
        if token.upper() == "Z":
            if start:
                out.append("L" + start)
            continue
        if token.startswith("M"):
            start = token[1:]
        out.append(token)
    return " ".join(out)


def frame(widget: QWidget, size: tuple[int, int]) -> np.ndarray:
    """The widget as an (h, w, 3) uint8 RGB array of exactly ``size`` = (w, h) (see ``fit``)."""
    return to_array(fit(widget.grab().toImage(), size))


def fit(image: QImage, size: tuple[int, int]) -> QImage:
    """``image`` as exactly ``size`` = (w, h) pixels: scaled to fit (aspect kept, smooth) and centred on
    the theme's background."""
    w, h = size
    image = image.convertToFormat(QImage.Format.Format_RGB888)
    if (image.width(), image.height()) != (w, h):
        scaled = image.scaled(w, h, Qt.AspectRatioMode.KeepAspectRatio, Qt.TransformationMode.SmoothTransformation)
        canvas = QImage(w, h, QImage.Format.Format_RGB888)
        canvas.fill(QColor(theme.BG))
        painter = QPainter(canvas)
        painter.drawImage((w - scaled.width()) // 2, (h - scaled.height()) // 2, scaled)
        painter.end()
        image = canvas
    return image


def to_array(image: QImage) -> np.ndarray:
    """(h, w, 3) uint8 copy of an RGB888 QImage (rows may be padded to 4 bytes in Qt's buffer)."""
    image = image.convertToFormat(QImage.Format.Format_RGB888)
    w, h, stride = image.width(), image.height(), image.bytesPerLine()
    buf = np.frombuffer(image.constBits(), dtype=np.uint8, count=stride * h).reshape(h, stride)
    return buf[:, : w * 3].reshape(h, w, 3).copy()


def _check_folder(path: Path) -> None:
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise OSError(translate("export_images", "no such folder: {folder}").format(folder=folder))
    if not os.access(folder, os.W_OK):
        raise OSError(translate("export_images", "cannot write into {folder} (permission denied)").format(folder=folder))
