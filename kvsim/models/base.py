"""The loaders' shared leaf: the loaded-model record, the tokenizer interface, the load error and where models live.

Every loader (checkpoint directories, GGUF files, the catalog of fetchable models) imports this
module and nothing else of the loaders, so ``loading`` can import them all without a circle.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from importlib import resources as importlib_resources
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .transformer import Transformer


class ModelLoadError(ValueError):
    """A model that cannot be loaded; the message says why and what is supported."""


class Tokenizer(Protocol):
    """What a loaded model's tokenizer offers (``tokenizer.TextTokenizer``, ``tokenizer.ByteTokenizer``)."""

    eos_id: int | None
    bos_id: int | None

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: list[int]) -> str: ...

    def token_text(self, token_id: int) -> str: ...

    def format_prompt(self, text: str, chat: bool = True) -> str: ...


@dataclass
class LoadedModel:
    model: Transformer
    tokenizer: Tokenizer
    model_id: str
    info: dict[str, object] = field(default_factory=dict)


def resources_dir() -> Path:
    """The bundled resources, in a checkout (``resources/``) or an installed wheel (``kvsim/resources``)."""
    try:
        installed = Path(str(importlib_resources.files("kvsim") / "resources"))
        if installed.is_dir():
            return installed
    except (ModuleNotFoundError, TypeError):
        pass
    return Path(__file__).resolve().parents[2] / "resources"


def bundled_models_dir() -> Path:
    return resources_dir() / "models"


def user_models_dir() -> Path:
    override = os.environ.get("KVSIM_DATA_DIR")
    if override:
        return Path(override) / "models"
    from platformdirs import user_data_dir

    return Path(user_data_dir("kvsim", appauthor=False)) / "models"
