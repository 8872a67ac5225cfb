"""Dark, projector-friendly theme: palette, fonts, lane colours and the colormaps. Qt only."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QColor, QFont, QPalette
from PySide6.QtWidgets import QApplication

from kvsim.units import human_bytes, si  # noqa: F401 - human_bytes re-exported: one formatter for CLI and app

BG = "#121418"
PANEL = "#1a1d23"
BORDER = "#2c313a"
TEXT = "#e8e8e8"
MUTED = "#9aa3ad"
ACCENT = "#f0c419"
ERROR = "#ff6b6b"
MASKED = "#3a3f4a"
# Okabe–Ito (colour-blind safe), by lane index: orange and sky blue for the default two lanes
# (no cache | KV cache), then yellow, vermillion, reddish purple, a lighter blue, bluish green
LANE_COLORS = ("#E69F00", "#56B4E9", "#F0E442", "#D55E00", "#CC79A7", "#6FA8DC", "#009E73")
PHASE_COLORS = {"prefill": "#CC79A7", "decode": "#009E73"}
KV_CMAP = "CET-D6"  # diverging blue–black–yellow: perceptually uniform, colour-blind safe, dark centre
ATTN_CMAP = "inferno"  # sequential, perceptually uniform

BASE_POINT_SIZE = 12


def lane_color(index: int) -> str:
    """The colour of lane ``index`` (the palette repeats beyond its seven colours)."""
    return LANE_COLORS[index % len(LANE_COLORS)]


_luts: dict[str, np.ndarray] = {}


def lut(name: str) -> np.ndarray:
    """(256, 3) uint8 lookup table of a pyqtgraph colormap."""
    if name not in _luts:
        _luts[name] = np.ascontiguousarray(pg.colormap.get(name).getLookupTable(nPts=256, alpha=False)[:, :3], dtype=np.uint8)
    return _luts[name]


def colorize(values: np.ndarray, lo: float, hi: float, name: str, masked_alpha: int = 0) -> np.ndarray:
    """Map values to RGBA uint8 with explicit levels; NaN becomes transparent (``masked_alpha``)."""
    table = lut(name)
    span = (hi - lo) or 1.0
    scaled = (values - lo) * (255.0 / span)
    nan = np.isnan(scaled)
    idx = np.clip(np.nan_to_num(scaled, nan=0.0), 0, 255).astype(np.uint8)
    out = np.empty(values.shape + (4,), dtype=np.uint8)
    out[..., :3] = table[idx]
    out[..., 3] = 255
    if nan.any():
        out[nan, 3] = masked_alpha
        out[nan, :3] = 0
    return out


THEMES = ("dark", "light")  # light: high contrast for washed-out projectors
_current = {"name": "dark"}
_listeners: list = []


def current() -> str:
    """The theme now in use: "dark" or "light"."""
    return _current["name"]


def on_change(callback) -> None:
    """``callback(name)`` after every ``set_theme`` (views re-read their colours there)."""
    _listeners.append(callback)


def set_theme(app: QApplication, name: str) -> None:
    """Switch the whole app to theme ``name`` (palette, style sheet, then every listener)."""
    if name not in THEMES:
        raise ValueError(f"unknown theme {name!r} (known: {', '.join(THEMES)})")
    _current["name"] = name
    apply(app)
    for callback in list(_listeners):
        callback(name)


def setup_pyqtgraph() -> None:
    pg.setConfigOptions(imageAxisOrder="row-major", antialias=True, background=BG, foreground=TEXT)


def apply(app: QApplication) -> None:
    setup_pyqtgraph()
    app.setStyle("Fusion")
    pal = QPalette()
    for role, color in (
        (QPalette.Window, BG),
        (QPalette.WindowText, TEXT),
        (QPalette.Base, PANEL),
        (QPalette.AlternateBase, BG),
        (QPalette.Text, TEXT),
        (QPalette.Button, PANEL),
        (QPalette.ButtonText, TEXT),
        (QPalette.ToolTipBase, PANEL),
        (QPalette.ToolTipText, TEXT),
        (QPalette.Highlight, "#3d6fb5"),
        (QPalette.HighlightedText, "#ffffff"),
        (QPalette.PlaceholderText, MUTED),
        (QPalette.BrightText, ACCENT),
    ):
        pal.setColor(role, QColor(color))
    pal.setColor(QPalette.Disabled, QPalette.ButtonText, QColor("#5d646e"))
    pal.setColor(QPalette.Disabled, QPalette.Text, QColor("#5d646e"))
    pal.setColor(QPalette.Disabled, QPalette.WindowText, QColor("#5d646e"))
    app.setPalette(pal)
    font = QFont(app.font())
    font.setPointSize(BASE_POINT_SIZE)
    app.setFont(font)
    app.setStyleSheet(STYLE)


STYLE = f"""
QMainWindow, QDockWidget {{ background: {BG}; }}
QDockWidget::title {{ background: {PANEL}; padding: 2px 8px; color: {MUTED}; }}
QToolBar {{ background: {PANEL}; border: none; border-bottom: 1px solid {BORDER}; spacing: 4px; padding: 3px; }}
QToolButton {{ padding: 3px 5px; border-radius: 4px; }}
QToolButton:hover {{ background: #2a2f38; }}
QToolButton:checked {{ background: #33404f; }}
QComboBox, QSpinBox, QLineEdit {{ background: {BG}; border: 1px solid {BORDER}; border-radius: 4px; padding: 3px 4px; }}
QStatusBar {{ background: {PANEL}; color: {MUTED}; }}
QLabel#banner {{ background: #4a1f24; color: #ffd7d7; padding: 6px 10px; border-radius: 4px; }}
QLabel#phase {{ font-weight: 700; padding: 2px 12px; border-radius: 4px; color: #111; }}
QLabel#readout {{ padding: 2px 6px; }}
QSlider::groove:horizontal {{ height: 6px; background: {BORDER}; border-radius: 3px; }}
QSlider::handle:horizontal {{ width: 16px; margin: -6px 0; background: {ACCENT}; border-radius: 8px; }}
QSlider::sub-page:horizontal {{ background: #6b5a17; border-radius: 3px; }}
QProgressBar {{ border: 1px solid {BORDER}; border-radius: 4px; text-align: center; background: {BG}; }}
QProgressBar::chunk {{ background: {ACCENT}; }}
QScrollArea {{ border: none; }}
"""


def human_count(n: float) -> str:
    return si(n)  # "1.23 M", as `kvsim run` prints it (without the space there)


def show_token(text: str) -> str:
    """A token as a one-line label: whitespace made visible."""
    return (
        text.replace("\n", "↵").replace("\t", "⇥").replace(" ", "␣")
        if text.strip() == "" or "\n" in text
        else text.replace("\n", "↵")
    )
