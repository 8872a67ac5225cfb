"""The file dialogs the window asks: a model to open, a run to save or open. Each returns a path
(or a model spec), or "" when the user cancels."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QWidget

from ..i18n import translate


def ask_model(parent: QWidget) -> str:
    """A checkpoint directory (picked by its config.json) or a .gguf file."""
    path, _ = QFileDialog.getOpenFileName(
        parent,
        translate("dialogs", "Open a checkpoint (its config.json) or a .gguf file"),
        str(Path.home()),
        translate("dialogs", "Models (config.json *.gguf);;All files (*)"),
    )
    if not path:
        return ""
    return str(Path(path).parent) if Path(path).name == "config.json" else path


def ask_save_run(parent: QWidget) -> str:
    path, _ = QFileDialog.getSaveFileName(
        parent, translate("dialogs", "Save run"), "run.kvsim", translate("dialogs", "kvsim runs (*.kvsim)")
    )
    return "" if not path else path if path.endswith(".kvsim") else path + ".kvsim"


def ask_open_run(parent: QWidget) -> str:
    path, _ = QFileDialog.getOpenFileName(
        parent, translate("dialogs", "Open run"), "", translate("dialogs", "kvsim runs (*.kvsim);;all files (*)")
    )
    return path
