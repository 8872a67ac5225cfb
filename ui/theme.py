"""Themes: palette, fonts, lane colours and colormaps, dark (the default) or light (high contrast for
washed-out projectors). Qt only.

The colours are module attributes (``theme.BG``, ``theme.lane_color(i)`` …) read when a view draws;
``set_theme`` swaps them, re-styles the application (QPalette, style sheet, pyqtgraph defaults) and
calls every ``on_change`` listener, where views re-colour what they made earlier (plots, images,
legends) without the window being rebuilt. The WCAG contrast helpers are here so that a test can hold
the light theme's promise: the K/V heatmaps, the dimmed rows read from a cache and the masked
hatching keep at least 3:1 against the background.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

import numpy as np
from PySide6.QtGui import QColor, QFont, QPalette
from PySide6.QtWidgets import QApplication

from kvsim.core.units import human_bytes, si  # noqa: F401 - human_bytes re-exported: one formatter for CLI and app

# Okabe–Ito (colour-blind safe), by lane index: orange and sky blue for the default two lanes
# (no cache | KV cache), then yellow, vermillion, reddish purple, a lighter blue, bluish green;
# on white the same hues, darker, so that a lane's text and lines keep ≥ 3:1
PALETTES: dict[str, dict[str, object]] = {
    "dark": {
        "BG": "#121418",
        "PANEL": "#1a1d23",
        "BORDER": "#2c313a",
        "TEXT": "#e8e8e8",
        "MUTED": "#9aa3ad",
        "ACCENT": "#f0c419",
        "ERROR": "#ff6b6b",
        "MASKED": "#737a86",  # the hatch of masked (future) cells: 4.3:1 on BG (it was #3a3f4a, 1.75:1)
        "UNSEEN": "#8a6fa8",  # the cross-hatch of keys outside the window / evicted
        "DIM_TO": "#121418",  # rows read from a cache: half way to this
        "HOVER": "#ffffff",
        "SWEEP": (255, 255, 255, 110),
        "HIGHLIGHT": "#3d6fb5",
        "DISABLED": "#5d646e",
        "HOVER_BG": "#2a2f38",
        "CHECKED_BG": "#33404f",
        "BANNER": ("#4a1f24", "#ffd7d7"),
        "SLIDER_DONE": "#6b5a17",
        "LANE_COLORS": ("#E69F00", "#56B4E9", "#F0E442", "#D55E00", "#CC79A7", "#6FA8DC", "#009E73"),
        # K/V-head groups (all-heads view): greys, greens, purples, pinks — never orange or blue (lanes)
        "GROUP_COLORS": ("#d9d9d9", "#a1d99b", "#c994c7", "#8c8c8c", "#d9f0a3", "#e7c6ef", "#66bd63", "#f4a6c6"),
        "PHASE_COLORS": {"prefill": "#CC79A7", "decode": "#009E73"},
        "KV_CMAP": "CET-D6",  # diverging blue–black–yellow: perceptually uniform, colour-blind safe, dark centre
        "ATTN_CMAP": "inferno",  # sequential, perceptually uniform
    },
    "light": {
        "BG": "#ffffff",
        "PANEL": "#eef0f3",
        "BORDER": "#9aa1ab",
        "TEXT": "#111111",
        "MUTED": "#434a56",
        "ACCENT": "#8a6400",
        "ERROR": "#b3261e",
        "MASKED": "#6e6e6e",  # 5.1:1 on white
        "UNSEEN": "#6a3d9a",  # 7.6:1 on white
        "DIM_TO": "#767676",  # dimmed = greyed, not washed out: every dimmed colour stays ≥ 3:1 on white
        "HOVER": "#000000",
        "SWEEP": (0, 0, 0, 60),
        "HIGHLIGHT": "#1f5fbf",
        "DISABLED": "#8a9099",
        "HOVER_BG": "#dde1e7",
        "CHECKED_BG": "#c9d6ea",
        "BANNER": ("#fde2e2", "#7a1016"),
        "SLIDER_DONE": "#d8b24a",
        "LANE_COLORS": ("#B86E00", "#0072B2", "#8F7F00", "#D55E00", "#A8457F", "#3B6FB6", "#007A5A"),
        "GROUP_COLORS": ("#555555", "#2e7d32", "#6a3d9a", "#ad1457", "#7f7f7f", "#00695c", "#8e44ad", "#c2185b"),
        "PHASE_COLORS": {"prefill": "#CC79A7", "decode": "#2bb48c"},
        "KV_CMAP": "CET-D6",  # its ends (15,148,250) and (179,139,26) are ≥ 3.1:1 on white, its centre black
        "ATTN_CMAP": "inferno:light",  # inferno cut where it would fade into white (≥ 3:1 everywhere)
    },
}
THEMES = tuple(PALETTES)

BG = PANEL = BORDER = TEXT = MUTED = ACCENT = ERROR = MASKED = UNSEEN = DIM_TO = HOVER = ""
HIGHLIGHT = DISABLED = HOVER_BG = CHECKED_BG = SLIDER_DONE = ""
SWEEP: tuple[int, int, int, int] = (0, 0, 0, 0)
BANNER: tuple[str, str] = ("", "")
LANE_COLORS: tuple[str, ...] = ()
GROUP_COLORS: tuple[str, ...] = ()
PHASE_COLORS: dict[str, str] = {}
KV_CMAP = ATTN_CMAP = ""
STYLE = ""

BASE_POINT_SIZE = 12
_current = {"name": "dark"}


def _use(name: str) -> None:
    """Make ``name``'s colours the module's."""
    _current["name"] = name
    globals().update(PALETTES[name])
    globals()["STYLE"] = _style()


def lane_color(index: int) -> str:
    """The colour of lane ``index`` (the palette repeats beyond its seven colours)."""
    return LANE_COLORS[index % len(LANE_COLORS)]


def group_color(kv_head: int) -> str:
    """The colour of K/V head ``kv_head``'s group of query heads (all-heads view)."""
    return GROUP_COLORS[kv_head % len(GROUP_COLORS)]


# ---------------------------------------------------------------------------------- colormaps
_luts: dict[str, np.ndarray] = {}


def lut(name: str) -> np.ndarray:
    """(256, 3) uint8 lookup table of a pyqtgraph colormap; ``NAME:light`` is NAME cut where its
    colours would have less than 3:1 contrast with white (the light theme's version)."""
    if name not in _luts:
        import pyqtgraph as pg  # here, not at the top: the splash is painted before pyqtgraph loads

        base, _, variant = name.partition(":")
        table = pg.colormap.get(base).getLookupTable(nPts=256, alpha=False)[:, :3]
        if variant == "light":
            ok = contrast_ratio(table, (255, 255, 255)) >= 3.05
            end = int(np.argmin(ok)) if not ok.all() else 256  # first entry too light (the map only brightens)
            table = pg.colormap.get(base).getLookupTable(start=0.0, stop=(end - 1) / 255, nPts=256, alpha=False)[:, :3]
        _luts[name] = np.ascontiguousarray(table, dtype=np.uint8)
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


# ---------------------------------------------------------------------------------- contrast (WCAG 2)
def rgb(color) -> np.ndarray:
    """An "#rrggbb" string, a QColor or an (r, g, b[, a]) sequence/array as float RGB 0..255 (..., 3)."""
    if isinstance(color, str):
        c = QColor(color)
        return np.array([c.red(), c.green(), c.blue()], dtype=np.float64)
    if isinstance(color, QColor):
        return np.array([color.red(), color.green(), color.blue()], dtype=np.float64)
    return np.asarray(color, dtype=np.float64)[..., :3]


def relative_luminance(color) -> np.ndarray:
    """WCAG relative luminance of sRGB colours (0 black … 1 white)."""
    c = rgb(color) / 255.0
    lin = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return lin @ np.array([0.2126, 0.7152, 0.0722])


def contrast_ratio(a, b) -> np.ndarray:
    """WCAG contrast ratio (L_light + 0.05) / (L_dark + 0.05): 1 (same) … 21 (black on white)."""
    la, lb = relative_luminance(a), relative_luminance(b)
    return (np.maximum(la, lb) + 0.05) / (np.minimum(la, lb) + 0.05)


def lab(color) -> np.ndarray:
    """CIE L*a*b* (D65) of sRGB colours, to tell colours apart (ΔE76 = Euclidean distance)."""
    c = rgb(color) / 255.0
    lin = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    m = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
    xyz = lin @ m.T / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]), 200 * (f[..., 1] - f[..., 2])], axis=-1)


def dimmed(color) -> np.ndarray:
    """What a row read from a cache shows of ``color``: half way to DIM_TO, as ``dim_rows`` draws it."""
    c = rgb(color).astype(np.int64)
    return ((c >> 1) + (rgb(DIM_TO).astype(np.int64) >> 1)).astype(np.float64)


# ---------------------------------------------------------------------------------- switching
_listeners: list = []  # weak references to bound methods, or plain callables


def current() -> str:
    """The theme now in use: "dark" or "light"."""
    return _current["name"]


def on_change(callback: Callable[[str], object]) -> None:
    """``callback(name)`` after every ``set_theme`` (views re-read their colours there). A bound method
    is held weakly: a view that is gone stops being called (no need to unsubscribe)."""
    ref = weakref.WeakMethod(callback) if hasattr(callback, "__self__") else (lambda cb=callback: cb)
    _listeners.append(ref)


def application() -> QApplication:
    """The running application: kvsim's processes make a QApplication (widgets), never a bare QCoreApplication."""
    app = QApplication.instance()
    if not isinstance(app, QApplication):
        raise RuntimeError("no QApplication is running")
    return app


def set_theme(app: QApplication, name: str) -> None:
    """Switch the whole app to theme ``name`` (palette, style sheet, then every listener)."""
    if name not in THEMES:
        raise ValueError(f"unknown theme {name!r} (known: {', '.join(THEMES)})")
    _use(name)
    apply(app)
    for ref in list(_listeners):
        callback = ref()
        if callback is None:
            _listeners.remove(ref)
            continue
        try:
            callback(name)
        except RuntimeError as exc:  # a view whose widget Qt already deleted
            if "already deleted" not in str(exc):
                raise
            _listeners.remove(ref)


def setup_pyqtgraph() -> None:
    import pyqtgraph as pg

    pg.setConfigOptions(imageAxisOrder="row-major", antialias=True, background=BG, foreground=TEXT)


def apply(app: QApplication) -> None:
    """Style ``app`` with the current theme (palette, font, style sheet, pyqtgraph's defaults)."""
    setup_pyqtgraph()
    if app.property("kvsim_fusion") is not True:  # once: again on every theme switch cost ~0.3–0.5 s of re-polish
        app.setStyle("Fusion")
        app.setProperty("kvsim_fusion", True)
    pal = QPalette()
    for role, color in (
        (QPalette.ColorRole.Window, BG),
        (QPalette.ColorRole.WindowText, TEXT),
        (QPalette.ColorRole.Base, PANEL),
        (QPalette.ColorRole.AlternateBase, BG),
        (QPalette.ColorRole.Text, TEXT),
        (QPalette.ColorRole.Button, PANEL),
        (QPalette.ColorRole.ButtonText, TEXT),
        (QPalette.ColorRole.ToolTipBase, PANEL),
        (QPalette.ColorRole.ToolTipText, TEXT),
        (QPalette.ColorRole.Highlight, HIGHLIGHT),
        (QPalette.ColorRole.HighlightedText, "#ffffff"),
        (QPalette.ColorRole.PlaceholderText, MUTED),
        (QPalette.ColorRole.BrightText, ACCENT),
        (QPalette.ColorRole.Light, PANEL),
        (QPalette.ColorRole.Midlight, PANEL),
        (QPalette.ColorRole.Mid, BORDER),
        (QPalette.ColorRole.Dark, BORDER),
        (QPalette.ColorRole.Shadow, BORDER),
    ):
        pal.setColor(role, QColor(color))
    for role in (QPalette.ColorRole.ButtonText, QPalette.ColorRole.Text, QPalette.ColorRole.WindowText):
        pal.setColor(QPalette.ColorGroup.Disabled, role, QColor(DISABLED))
    app.setPalette(pal)
    font = QFont(app.font())
    font.setPointSize(BASE_POINT_SIZE)
    app.setFont(font)
    app.setStyleSheet(STYLE)


def _style() -> str:
    return f"""
QMainWindow, QDockWidget {{ background: {BG}; }}
QDockWidget::title {{ background: {PANEL}; padding: 2px 8px; color: {MUTED}; }}
QToolBar {{ background: {PANEL}; border: none; border-bottom: 1px solid {BORDER}; spacing: 4px; padding: 3px; }}
QToolButton {{ padding: 3px 5px; border-radius: 4px; }}
QToolButton:hover {{ background: {HOVER_BG}; }}
QToolButton:checked {{ background: {CHECKED_BG}; }}
QComboBox, QSpinBox, QLineEdit {{ background: {BG}; border: 1px solid {BORDER}; border-radius: 4px; padding: 3px 4px; }}
QStatusBar {{ background: {PANEL}; color: {MUTED}; }}
QToolTip {{ background: {PANEL}; color: {TEXT}; border: 1px solid {BORDER}; }}
QLabel#banner {{ background: {BANNER[0]}; color: {BANNER[1]}; padding: 6px 10px; border-radius: 4px; }}
QLabel#phase {{ font-weight: 700; padding: 2px 12px; border-radius: 4px; color: #111; }}
QSlider::groove:horizontal {{ height: 6px; background: {BORDER}; border-radius: 3px; }}
QSlider::handle:horizontal {{ width: 16px; margin: -6px 0; background: {ACCENT}; border-radius: 8px; }}
QSlider::sub-page:horizontal {{ background: {SLIDER_DONE}; border-radius: 3px; }}
QProgressBar {{ border: 1px solid {BORDER}; border-radius: 4px; text-align: center; background: {BG}; }}
QProgressBar::chunk {{ background: {ACCENT}; }}
QScrollArea {{ border: none; }}
"""


_use("dark")


def human_count(n: float) -> str:
    return si(n)  # "1.23 M", as `kvsim run` prints it (without the space there)


def show_token(text: str) -> str:
    """A token as a one-line label: whitespace made visible."""
    return (
        text.replace("\n", "↵").replace("\t", "⇥").replace(" ", "␣")
        if text.strip() == "" or "\n" in text
        else text.replace("\n", "↵")
    )
