"""Placeholder for several requests through a paged pool (being built)."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel


class RequestsView(QLabel):
    def __init__(self, host) -> None:
        super().__init__("several requests through a paged pool: coming")
