"""Tokenizers: text ↔ ids, and a readable label for every token (what K/V rows are labelled with).

``TextTokenizer`` wraps a Hugging Face ``tokenizers`` file (tokenizer.json, or one built from GGUF
metadata). ``ByteTokenizer`` serves ``random:`` models: one id per UTF-8 byte, so any prompt works
whatever the vocabulary size.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol


class ChatTemplateError(ValueError):
    """The model's chat template cannot be rendered (broken or unsafe)."""


class Tokenizer(Protocol):
    eos_id: int | None
    bos_id: int | None

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: list[int]) -> str: ...

    def token_text(self, token_id: int) -> str: ...

    def format_prompt(self, text: str, chat: bool = True) -> str: ...


class TextTokenizer:
    def __init__(self, tokenizer: object, eos_id: int | None = None, bos_id: int | None = None,
                 add_bos: bool = False, chat_template: str | None = None,
                 add_special_tokens: bool = True) -> None:
        self._tok = tokenizer
        self.add_special_tokens = add_special_tokens
        self.eos_id = eos_id
        self.bos_id = bos_id
        self.add_bos = add_bos
        self.chat_template = chat_template

    @classmethod
    def from_file(cls, path: str | Path, **kwargs: object) -> TextTokenizer:
        from tokenizers import Tokenizer as HFTokenizer

        return cls(HFTokenizer.from_file(str(path)), **kwargs)

    @property
    def vocab_size(self) -> int:
        return self._tok.get_vocab_size(with_added_tokens=True)

    def encode(self, text: str) -> list[int]:
        ids = self._tok.encode(text, add_special_tokens=self.add_special_tokens).ids
        if self.add_bos and self.bos_id is not None and ids[:1] != [self.bos_id]:
            ids = [self.bos_id, *ids]
        return ids

    def decode(self, ids: list[int]) -> str:
        return self._tok.decode(list(ids), skip_special_tokens=False)

    def token_text(self, token_id: int) -> str:
        return self._tok.decode([int(token_id)], skip_special_tokens=False)

    def format_prompt(self, text: str, chat: bool = True) -> str:
        """Wrap ``text`` as one user turn with the model's chat template (if it has one)."""
        if not chat or not self.chat_template:
            return text
        import jinja2
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        def raise_exception(message: str) -> None:
            raise jinja2.TemplateError(message)

        # the template comes from the model file: render it sandboxed, as transformers does
        env = ImmutableSandboxedEnvironment(keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True,
                                          extensions=["jinja2.ext.loopcontrols"])
        env.globals["raise_exception"] = raise_exception
        special = {"bos_token": self.token_text(self.bos_id) if self.bos_id is not None else "",
                   "eos_token": self.token_text(self.eos_id) if self.eos_id is not None else ""}
        try:
            return env.from_string(self.chat_template).render(
                messages=[{"role": "user", "content": text}], add_generation_prompt=True, **special)
        except jinja2.TemplateError as exc:
            raise ChatTemplateError(f"the model's chat template failed ({exc}); use --no-chat-template") from exc


class ByteTokenizer:
    """UTF-8 bytes as ids 0..255; ids above 255 (random models have them) print as ``<id>``."""

    eos_id: int | None = None
    bos_id: int | None = None

    def __init__(self, vocab_size: int) -> None:
        if vocab_size < 256:
            raise ValueError(f"a byte tokenizer needs vocab ≥ 256, got {vocab_size}")
        self.vocab_size = vocab_size

    def encode(self, text: str) -> list[int]:
        return list(text.encode("utf-8"))

    def decode(self, ids: list[int]) -> str:
        out, pending = [], bytearray()
        for i in ids:
            if i < 256:
                pending.append(i)
                continue
            out.append(pending.decode("utf-8", errors="replace"))
            pending.clear()
            out.append(f"<{i}>")
        out.append(pending.decode("utf-8", errors="replace"))
        return "".join(out)

    def format_prompt(self, text: str, chat: bool = True) -> str:
        return text

    def token_text(self, token_id: int) -> str:
        if token_id < 256:
            b = bytes([token_id])
            return b.decode("utf-8", errors="replace") if token_id >= 32 or token_id in (9, 10) \
                else f"<0x{token_id:02X}>"
        return f"<{token_id}>"
