"""Placeholder for the memory bill (being built)."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel


class MemoryDock(QLabel):
    def __init__(self, host) -> None:
        super().__init__("the memory bill: coming")
