"""Export for slides (being built): PNG/SVG of a view or the window, GIF/MP4 of the run, CSV of the figures."""

from __future__ import annotations


def install(window) -> None:
    """Add the export actions to the window's ☰ menu and their keys (nothing yet)."""
