"""A GGUF file's tokenizer: built from its ``tokenizer.ggml.*`` metadata with the ``tokenizers``
library (byte-level BPE; merges given or derived from the scores), after checking that metadata's
kinds, sizes and ids, so a damaged or hostile file is one clear error, not a panic or a hang."""

from __future__ import annotations

import math
from typing import Any

from ..base import ModelLoadError
from ..tokenizer import TextTokenizer, TokenizerError, guarded

_CONTROL, _USER_DEFINED = 3, 4  # llama.cpp's token types: special (control) and user-defined tokens


def _bpe_merges(tokens: list[str], scores: list[float] | None, merges: list[str] | None) -> list[tuple[str, str]]:
    """The file's merges, or (SentencePiece files usually have none) the ones its vocabulary implies:
    every split of a token into two vocabulary tokens, best score first — the order transformers'
    ``generate_merges`` gives, so both tokenize alike."""
    if merges:
        return [tuple(m.split(" ", 1)) for m in merges]  # type: ignore[misc]
    index = {t: i for i, t in enumerate(tokens)}
    ranked = dict(zip(tokens, scores, strict=True)) if scores else index
    found: list[tuple[str, str, float]] = []
    for tok, score in ranked.items():
        local = [(tok[:cut], tok[cut:], score) for cut in range(1, len(tok)) if tok[:cut] in index and tok[cut:] in index]
        found.extend(sorted(local, key=lambda m: (index[m[0]], index[m[1]])))
    found.sort(key=lambda m: (m[2], len(m[0]), len(m[1])), reverse=bool(scores))
    return [(a, b) for a, b, _ in found]


MAX_TOKEN_CHARS_SQUARED = 50_000_000  # Σ len(token)²: the work of deriving merges from a vocabulary


def _check_tokenizer_meta(meta: dict[str, Any], name: str) -> None:
    """The ``tokenizer.ggml.*`` values must have the kinds and lengths a tokenizer needs, checked
    before the (native) tokenizer is built from them."""
    tokens = meta.get("tokenizer.ggml.tokens")
    if not tokens:
        raise ModelLoadError(f"{name}: the GGUF file has no tokenizer (tokenizer.ggml.tokens)")
    if not isinstance(tokens, list) or not all(isinstance(t, str) and t for t in tokens):
        raise ModelLoadError(f"{name}: GGUF tokenizer.ggml.tokens must be a list of non-empty strings")
    if len(set(tokens)) != len(tokens):
        raise ModelLoadError(f"{name}: GGUF tokenizer.ggml.tokens holds the same token twice")
    if sum(len(t) ** 2 for t in tokens) > MAX_TOKEN_CHARS_SQUARED:
        raise ModelLoadError(f"{name}: GGUF tokenizer tokens are implausibly long (a damaged vocabulary)")
    for key, kinds in (("tokenizer.ggml.token_type", int), ("tokenizer.ggml.scores", int | float)):
        values = meta.get(key)
        if values is None:
            continue
        if not isinstance(values, list) or len(values) != len(tokens):
            raise ModelLoadError(f"{name}: GGUF {key} must be a list of {len(tokens)} values, one per token")
        if not all(isinstance(v, kinds) and not isinstance(v, bool) for v in values):
            raise ModelLoadError(f"{name}: GGUF {key} must hold numbers only")
        if key.endswith("scores") and not all(math.isfinite(v) for v in values):
            raise ModelLoadError(f"{name}: GGUF {key} holds values that are not numbers (NaN or infinity)")
    merges = meta.get("tokenizer.ggml.merges")
    if merges is not None:
        if not isinstance(merges, list) or not all(isinstance(m, str) for m in merges):
            raise ModelLoadError(f"{name}: GGUF tokenizer.ggml.merges must be a list of strings")
        vocab = set(tokens)
        for m in merges:
            parts = m.split(" ")
            if len(parts) != 2 or parts[0] not in vocab or parts[1] not in vocab or parts[0] + parts[1] not in vocab:
                raise ModelLoadError(
                    f"{name}: GGUF merge {m[:40]!r} is not two tokens of the vocabulary "
                    "joined by one space (a damaged merges list)"
                )
    for key in ("tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id"):
        value = meta.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < len(tokens)):
            raise ModelLoadError(f"{name}: GGUF {key} {str(value)[:30]} is not a token of the vocabulary")
    for key in ("tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.chat_template"):
        if meta.get(key) is not None and not isinstance(meta[key], str):
            raise ModelLoadError(f"{name}: GGUF {key} must be a string")


def tokenizer_from_gguf(meta: dict[str, Any], name: str) -> TextTokenizer:
    """A ``TextTokenizer`` from ``tokenizer.ggml.*`` metadata (gpt2 byte-level BPE or llama SentencePiece
    BPE), checked first; failures of the native library are one ``ModelLoadError`` line."""
    _check_tokenizer_meta(meta, name)
    try:
        tok = guarded(f"{name}: the GGUF tokenizer cannot be built", lambda: _build_tokenizer(meta, name))
    except TokenizerError as exc:
        raise ModelLoadError(str(exc)) from None
    tok.probe(name)
    return tok


def _build_tokenizer(meta: dict[str, Any], name: str) -> TextTokenizer:
    from tokenizers import AddedToken, Regex, decoders, pre_tokenizers
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers.models import BPE

    kind = meta.get("tokenizer.ggml.model")
    tokens = meta["tokenizer.ggml.tokens"]
    types = meta.get("tokenizer.ggml.token_type") or [1] * len(tokens)
    vocab = {tok: i for i, tok in enumerate(tokens)}
    merges = _bpe_merges(tokens, meta.get("tokenizer.ggml.scores"), meta.get("tokenizer.ggml.merges"))
    if kind == "gpt2":
        tok = HFTokenizer(BPE(vocab, merges, fuse_unk=False))
        pre = meta.get("tokenizer.ggml.pre")
        if pre in ("llama3", "llama-v3", "llama-bpe", "smaug-bpe", "dbrx"):
            split = (
                r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
            )
            tok.pre_tokenizer = pre_tokenizers.Sequence(
                [
                    pre_tokenizers.Split(Regex(split), behavior="isolated"),
                    pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
                ]
            )
        else:  # gpt2's own split (SmolLM's "smollm" is this one)
            tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        tok.decoder = decoders.ByteLevel()
        add_bos_default = False
    elif kind == "llama":
        unk = meta.get("tokenizer.ggml.unknown_token_id")
        tok = HFTokenizer(
            BPE(vocab, merges, unk_token=tokens[unk] if unk is not None else None, fuse_unk=True, byte_fallback=True)
        )
        prefix = bool(meta.get("tokenizer.ggml.add_space_prefix", True))
        # as transformers' LlamaTokenizer: spaces → "▁", one "▁" before the first word only
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first" if prefix else "never", split=False)
        tok.decoder = decoders.Sequence(
            [
                decoders.Replace("▁", " "),
                decoders.ByteFallback(),
                decoders.Fuse(),
                *([decoders.Strip(" ", 1, 0)] if prefix else []),
            ]
        )
        add_bos_default = True
    else:
        raise ModelLoadError(
            f"{name}: GGUF tokenizer {kind!r} is not supported (supported: gpt2 byte-level BPE, llama SentencePiece)"
        )
    specials = [AddedToken(t, special=True, normalized=False) for t, k in zip(tokens, types, strict=True) if k == _CONTROL]
    added = [AddedToken(t, special=False, normalized=False) for t, k in zip(tokens, types, strict=True) if k == _USER_DEFINED]
    if specials:
        tok.add_special_tokens(specials)
    if added:
        tok.add_tokens(added)
    return TextTokenizer(
        tok,
        eos_id=meta.get("tokenizer.ggml.eos_token_id"),
        bos_id=meta.get("tokenizer.ggml.bos_token_id"),
        add_bos=bool(meta.get("tokenizer.ggml.add_bos_token", add_bos_default)),
        chat_template=meta.get("tokenizer.chat_template"),
    )
