"""Tokenizers: text ↔ ids, and a readable label for every token (what K/V rows are labelled with).

``TextTokenizer`` wraps a Hugging Face ``tokenizers`` file (tokenizer.json, or one built from GGUF
metadata). ``ByteTokenizer`` serves ``random:`` models: one id per UTF-8 byte, so any prompt works
whatever the vocabulary size.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .base import ModelLoadError, Tokenizer  # Tokenizer: the interface, re-exported
from .chat_template import ChatTemplateError, render_chat_template

if TYPE_CHECKING:
    from tokenizers import Tokenizer as HFTokenizer

__all__ = ["ChatTemplateError", "TokenizerError", "TextTokenizer", "ByteTokenizer", "Tokenizer", "check_vocabulary"]

T = TypeVar("T")

MAX_PROMPT_CHARS = 200_000  # a prompt longer than this is longer than any context kvsim shows
MAX_NORMALIZED_CHARS = 2_000_000  # prompt length × the tokenizer's worst-case growth, the bound on its work
MAX_GROWTH = 1024  # a normalizer that can grow text more than this is hostile, not a tokenizer
MAX_TOKENIZER_BYTES = 200_000_000
# how much each normalizer/pre-tokenizer can grow a text, at most (Unicode NFKD's worst is 18 chars for 1)
_GROWTH = {
    "NFC": 3,
    "NFD": 3,
    "NFKC": 18,
    "NFKD": 18,
    "Lowercase": 3,
    "Strip": 1,
    "StripAccents": 1,
    "Nmt": 1,
    "BertNormalizer": 9,
    "Precompiled": 18,
    "ByteLevel": 4,
    "Whitespace": 1,
    "WhitespaceSplit": 1,
    "Punctuation": 1,
    "Digits": 1,
    "UnicodeScripts": 1,
    "CharDelimiterSplit": 1,
    "Split": 1,
    "BertPreTokenizer": 1,
    "FixedLength": 1,
}


class TokenizerError(ModelLoadError):
    """A tokenizer that cannot be used (hostile or broken file) or fails on a text."""


_stderr_lock = threading.Lock()


@contextlib.contextmanager
def _rust_stderr_held() -> Iterator[list[bytes]]:
    """Hold what native code writes to file descriptor 2 while a ``tokenizers`` call runs: a Rust
    panic prints its message (and, with RUST_BACKTRACE, a backtrace) there before Python sees the
    exception, which would break the one-line error contract. What was written goes back to stderr
    unless the call panicked."""
    held: list[bytes] = []
    try:
        fd = sys.stderr.fileno() if sys.stderr is not None else 2
    except (AttributeError, OSError, ValueError):  # stderr replaced by an object without a descriptor
        fd = 2
    with _stderr_lock, tempfile.TemporaryFile() as sink:
        with contextlib.suppress(AttributeError, OSError, ValueError):
            sys.stderr.flush()
        try:
            saved = os.dup(fd)
        except OSError:
            yield held
            return
        os.dup2(sink.fileno(), fd)
        try:
            yield held
        finally:
            os.dup2(saved, fd)
            os.close(saved)
            sink.seek(0)
            written = sink.read(1 << 20)
            if written and not held:
                os.write(fd, written)


def guarded(what: str, call: Callable[[], T], hold_stderr: bool = True) -> T:
    """Run a ``tokenizers`` call; its failures — exceptions and Rust panics (``PanicException``
    derives from ``BaseException``, not ``Exception``) — become one ``TokenizerError`` line.
    ``hold_stderr=False`` skips holding fd 2 (~60 µs a call) for the per-token decodes, which the
    load-time probe has already run once under the full guard."""
    holder: contextlib.AbstractContextManager[list[bytes]] = _rust_stderr_held() if hold_stderr else contextlib.nullcontext([])
    with holder as held:
        try:
            return call()
        except (KeyboardInterrupt, SystemExit, GeneratorExit):
            raise
        except BaseException as exc:  # noqa: BLE001 - PanicException is a BaseException
            if isinstance(exc, TokenizerError):
                raise
            held.append(b"panic")  # drop the native message: this line says it
            detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise TokenizerError(f"{what} ({type(exc).__name__}: {detail[:200]})") from None


def _growth(spec: Any, depth: int = 0) -> int:
    """The most a normalizer or pre-tokenizer described by ``spec`` (tokenizer.json) can grow a text."""
    if spec is None:
        return 1
    if depth > 16 or not isinstance(spec, dict):
        raise TokenizerError("tokenizer.json's normalizer is malformed")
    kind = spec.get("type")
    if kind == "Sequence":
        total = 1
        for part in spec.get("normalizers") or spec.get("pretokenizers") or []:
            total *= _growth(part, depth + 1)
            total = min(total, MAX_GROWTH + 1)
        return total
    if kind == "Replace":
        content = spec.get("content")
        pattern = spec.get("pattern") or {}
        if not isinstance(content, str) or not isinstance(pattern, dict):
            raise TokenizerError("tokenizer.json has a malformed Replace normalizer")
        text = pattern.get("String")
        if isinstance(text, str) and text:
            return max(1, -(-len(content) // len(text)))
        return 1 + len(content)  # a regex may match the empty string: content between every character
    if kind == "Prepend":
        prepend = spec.get("prepend")
        return 1 + (len(prepend) if isinstance(prepend, str) else 0)
    if kind == "Metaspace":
        return 2
    if kind in _GROWTH:
        return _GROWTH[kind]
    return MAX_GROWTH + 1 if kind is not None else 1


class TextTokenizer:
    def __init__(
        self,
        tokenizer: HFTokenizer,
        eos_id: int | None = None,
        bos_id: int | None = None,
        add_bos: bool = False,
        chat_template: str | None = None,
        add_special_tokens: bool = True,
        growth: int = 4,
    ) -> None:
        self._tok = tokenizer
        self.add_special_tokens = add_special_tokens
        self.eos_id = eos_id
        self.bos_id = bos_id
        self.add_bos = add_bos
        self.chat_template = chat_template
        self.growth = max(1, growth)  # bounds how long a prompt may be (see encode)

    @classmethod
    def from_file(cls, path: str | Path, **kwargs: Any) -> TextTokenizer:
        """A tokenizer.json, checked before use: a regular file of sane size, a normalizer that cannot
        blow a text up, and one that tokenizes ordinary text without failing."""
        from tokenizers import Tokenizer as HFTokenizer

        path = Path(path)
        if not path.is_file():
            raise TokenizerError(f"{path}: not a regular file")
        if path.stat().st_size > MAX_TOKENIZER_BYTES:
            raise TokenizerError(f"{path} is {path.stat().st_size:,} bytes: too large for a tokenizer.json")
        try:
            text = path.read_text(encoding="utf-8")
            spec = json.loads(text)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            raise TokenizerError(
                f"{path} cannot be read ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
            ) from None
        if not isinstance(spec, dict):
            raise TokenizerError(f"{path} is not a tokenizer.json (not a JSON object)")
        try:
            growth = _growth(spec.get("normalizer")) * _growth(spec.get("pre_tokenizer")) * 4
        except TokenizerError as exc:
            raise TokenizerError(f"{path}: {exc}") from None
        if growth > MAX_GROWTH * 4:
            raise TokenizerError(
                f"{path}: its normalizer can grow a text more than {MAX_GROWTH}-fold (a hostile or broken tokenizer.json)"
            )
        tok = guarded(f"{path} cannot be read", lambda: HFTokenizer.from_str(text))
        out = cls(tok, growth=growth, **kwargs)
        out.probe(str(path))
        return out

    def probe(self, source: str) -> None:
        """Tokenize a few ordinary texts once, so a tokenizer that fails on them fails at load time."""
        for text in ("Hello, world! 123", "  héllo\n\twörld 中文 🙂 ", "a" * 64 + "!"):
            ids = guarded(f"{source}: the tokenizer fails on ordinary text", partial(self._encode, text))
            if len(ids) > self.growth * len(text) + 64:
                raise TokenizerError(f"{source}: the tokenizer makes {len(ids)} tokens of {len(text)} characters")
            guarded(f"{source}: the tokenizer fails to decode ordinary text", partial(self._decode_each, ids))

    def _decode_each(self, ids: list[int]) -> list[str]:
        """The ids decoded whole, then one by one."""
        return [self._tok.decode(ids, skip_special_tokens=False)] + [
            self._tok.decode([t], skip_special_tokens=False) for t in ids
        ]

    @property
    def vocab_size(self) -> int:
        return self._tok.get_vocab_size(with_added_tokens=True)

    def max_id(self) -> int:
        vocab = self._tok.get_vocab(with_added_tokens=True)
        return max(vocab.values(), default=-1)

    def _encode(self, text: str) -> list[int]:
        return self._tok.encode(text, add_special_tokens=self.add_special_tokens).ids

    def encode(self, text: str) -> list[int]:
        check_prompt_text(text, max(1, MAX_NORMALIZED_CHARS // self.growth))
        ids = guarded("the model's tokenizer failed on this text", lambda: self._encode(text))
        if self.add_bos and self.bos_id is not None and ids[:1] != [self.bos_id]:
            ids = [self.bos_id, *ids]
        return ids

    def decode(self, ids: list[int]) -> str:
        ids = [int(i) for i in ids]
        if any(not 0 <= i < 2**32 for i in ids):
            raise TokenizerError("token ids must be from 0 to 2^32-1")
        return guarded(
            "the model's tokenizer failed to decode", lambda: self._tok.decode(ids, skip_special_tokens=False), hold_stderr=False
        )

    def token_text(self, token_id: int) -> str:
        token_id = int(token_id)
        if not 0 <= token_id < 2**32:
            return f"<{token_id}>"
        return guarded(
            "the model's tokenizer failed to decode",
            lambda: self._tok.decode([token_id], skip_special_tokens=False),
            hold_stderr=False,
        )

    def format_prompt(self, text: str, chat: bool = True) -> str:
        """Wrap ``text`` as one user turn with the model's chat template (if it has one)."""
        if not chat or not self.chat_template:
            return text
        check_prompt_text(text, MAX_PROMPT_CHARS)
        special = {
            "bos_token": self.token_text(self.bos_id) if self.bos_id is not None else "",
            "eos_token": self.token_text(self.eos_id) if self.eos_id is not None else "",
        }
        # the template comes from the model file: rendered sandboxed and bounded (chat_template.py)
        return render_chat_template(
            self.chat_template, messages=[{"role": "user", "content": text}], add_generation_prompt=True, **special
        )


def check_prompt_text(text: str, limit: int = MAX_PROMPT_CHARS) -> None:
    """A prompt must be text (valid Unicode: a command line can carry bytes that are not UTF-8)
    and of a length a tokenizer can handle in bounded memory."""
    if not isinstance(text, str):
        raise TokenizerError(f"the prompt must be text, got {type(text).__name__}")
    if len(text) > min(limit, MAX_PROMPT_CHARS):
        raise TokenizerError(
            f"the prompt is {len(text):,} characters long; this tokenizer takes at most {min(limit, MAX_PROMPT_CHARS):,}"
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise TokenizerError("the prompt is not valid text: it holds bytes that are not UTF-8") from None


def check_vocabulary(tokenizer: TextTokenizer, vocab_size: int, source: str) -> None:
    """Every id the tokenizer can produce must be a row of the model's embedding."""
    top = guarded(f"{source}: the tokenizer's vocabulary cannot be read", tokenizer.max_id)
    if top >= vocab_size:
        raise TokenizerError(
            f"{source}: the tokenizer has token id {top}, beyond the model's vocabulary of {vocab_size} (a mismatched tokenizer)"
        )
    for name, value in (("bos", tokenizer.bos_id), ("eos", tokenizer.eos_id)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < vocab_size):
            raise TokenizerError(f"{source}: the {name} token id {value!r} is not in the vocabulary (0 to {vocab_size - 1})")


class ByteTokenizer:
    """UTF-8 bytes as ids 0..255; ids above 255 (random models have them) print as ``<id>``."""

    eos_id: int | None = None
    bos_id: int | None = None

    def __init__(self, vocab_size: int) -> None:
        if vocab_size < 256:
            raise ValueError(f"a byte tokenizer needs vocab ≥ 256, got {vocab_size}")
        self.vocab_size = vocab_size

    def encode(self, text: str) -> list[int]:
        check_prompt_text(text)
        return list(text.encode("utf-8"))

    def decode(self, ids: list[int]) -> str:
        out, pending = [], bytearray()
        for i in ids:
            if 0 <= i < 256:
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
        if 0 <= token_id < 256:
            b = bytes([token_id])
            return b.decode("utf-8", errors="replace") if token_id >= 32 or token_id in (9, 10) else f"<0x{token_id:02X}>"
        return f"<{token_id}>"
