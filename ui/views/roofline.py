"""Placeholder for the roofline (being built)."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel


class RooflineView(QLabel):
    def __init__(self, host) -> None:
        super().__init__("the roofline: coming")
