"""``latent:R``: a model's own K/V projections converted to a latent of rank R by SVD — MLA's idea
(DeepSeek-V2 caches one latent per token instead of K and V per head) applied to a model trained
without it, with **no fine-tuning**: what a low rank costs here is an upper bound on what a model
trained for it would lose.

For each layer, ``W = [W_K; W_V]`` (2·H_kv·d rows, one per K and V output, by ``dim`` inputs) is
factored once, ``W = U Σ Vᵀ``; ``U_R`` holds its first R left singular vectors. A token's K and V
(before RoPE, biases taken off) are ``[k; v] = W x``; the cache holds ``c = U_Rᵀ [k; v]`` — R values a
token and layer instead of 2·H_kv·d — and attention reads ``[k̂; v̂] = U_R c`` (+ biases), the keys then
rotated to their positions (RoPE is applied when read, as MLA must: a rotation does not commute with
the projection). At full rank (R = min(2·H_kv·d, dim)) ``U_R U_Rᵀ`` is the identity on W's column space,
so the lane reproduces the model's logits (to rounding); below it, K and V lose the directions of W's
smallest singular values. (On a model with QK-norm — Gemma 3 — the normalised keys are what is
projected; they need not lie in W's column space unless U is square, 2·H_kv·d ≤ dim.)

Bytes: R values a token and layer, at the model's element size (``U_R`` is part of the weights, as
MLA's up-projections are: not counted). The simulator also keeps the K and V rebuilt from each latent
(once, when the token arrives: what a fused kernel would rebuild on the fly while reading), not counted.
The latents are kept for every layer, local ones too (the model's mask hides what they cannot see).
"""

from __future__ import annotations

from typing import Any

import torch

from ..core.formulas import KVShape, LaneBill
from ..core.words import QT_TRANSLATE_NOOP
from .base import Cache, PolicyInfo, PolicyWords, SpecError
from .kv import KVCache
from .registry import register_policy
from .stream import _rotate
from .window import _parse_int


def _dense(linear: Any) -> torch.Tensor:
    """A projection's weight as the model multiplies by it: an ``nn.Linear``'s ``weight``, or a
    weight-quantized projection's codes dequantized (``@w8``, ``@w4``, ``@gguf`` lanes: ``dequantized()``)."""
    dequantized = getattr(linear, "dequantized", None)
    return dequantized() if dequantized is not None else linear.weight


@register_policy
class LatentSVDCache(Cache):
    terms = ("latent",)
    grammar = "latent:R"
    example = "latent:64"
    #: the model leaves RoPE to this cache (keys are stored as latents, rotated when read)
    rope_at_read = True

    @classmethod
    def parse_options(cls, args: list[list[str]]) -> dict[str, Any]:
        return {"rank": _parse_int("latent", args[0], "R", "the latent's rank, values a token and layer", 1)}

    def __init__(self, n_layers: int, rank: int) -> None:
        self.n_layers = n_layers
        self.rank = rank
        self._bases: list[tuple[torch.Tensor, torch.Tensor]] | None = None  # per layer (U_R (2·H_kv·d, R), bias)
        self._model_id: int | None = None
        self.full_rank: int | None = None
        self._theta: list[float | None] = [None] * n_layers
        self._latents = KVCache(n_layers)  # (B, 1, S, R) latents: what is held and counted
        self._rebuilt = KVCache(n_layers)  # (B, H_kv, S, d) K and V rebuilt from them: a working copy, not counted

    @classmethod
    def words(cls, options: dict[str, Any]) -> PolicyWords:
        return PolicyWords(
            QT_TRANSLATE_NOOP("policies", "latent K/V by SVD"),
            QT_TRANSLATE_NOOP(
                "policies",
                "holds K and V as {rank} values a token and layer (their top {rank} singular directions); no fine-tuning",
            ),
            {"rank": int(options["rank"])},
            {"R": QT_TRANSLATE_NOOP("policies", "the latent's rank, values a token and layer")},
            short=QT_TRANSLATE_NOOP("policies", "latent r{rank}"),
        )

    @classmethod
    def bill(cls, options: dict[str, Any], shape: KVShape, tokens: int, new_tokens: int, elem_bits: int) -> LaneBill:
        """A rank-R latent per token and layer, no K/V heads: L·R·n·b."""
        b = shape.layers * int(options["rank"]) * tokens * elem_bits // 8
        return LaneBill(b, b, elem_bits, None, "")

    def describe(self) -> PolicyInfo:
        words = self.words({"rank": self.rank})
        return PolicyInfo.from_words(f"latent:{self.rank}", words, reuses_past=True, lossy=True, evicts=False)

    def bind_model(self, model: Any) -> None:  # a kvsim Transformer (models/ sits above caches/)
        """Factor each layer's [W_K; W_V] once (the model calls this before its layers run)."""
        if self._model_id == id(model):
            return
        bases, full = [], None
        for block in model.layers:
            attn = block.attn
            if not hasattr(attn, "wk"):
                raise SpecError("latent:R converts K/V projections; this model has none (it is latent already)")
            wk, wv = _dense(attn.wk), _dense(attn.wv)
            w = torch.cat([wk, wv]).detach().double()
            u = torch.linalg.svd(w, full_matrices=False).U  # (2·H_kv·d, min(2·H_kv·d, dim))
            full = u.shape[1]
            if attn.wk.bias is not None:
                bias = torch.cat([attn.wk.bias, attn.wv.bias]).detach()
            else:
                bias = torch.zeros(w.shape[0], dtype=wk.dtype, device=w.device)
            bases.append((u[:, : self.rank].to(wk.dtype).contiguous(), bias))
        if full is not None and self.rank > full:
            raise SpecError(f"latent:{self.rank} is more than this model's full rank, {full} (2·H_kv·d or dim)")
        self._bases, self._model_id, self.full_rank = bases, id(model), full

    # ---------------------------------------------------------------- the interface
    def reset(self) -> None:
        self._latents.reset()
        self._rebuilt.reset()

    def _expand(self, layer: int, c: torch.Tensor, h: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Latents (B, 1, S, R) → unrotated keys and values (B, H_kv, S, d) each."""
        if self._bases is None:
            raise RuntimeError("latent:R needs the model's weights: the model binds them before its first update")
        u, bias = self._bases[layer]
        b, _, s, _ = c.shape
        kv = c[:, 0] @ u.T + bias  # (B, S, 2·H_kv·d)
        k, v = kv.view(b, s, 2, h, -1).unbind(2)
        return k.transpose(1, 2), v.transpose(1, 2)

    def update(
        self, layer: int, k_new: torch.Tensor, v_new: torch.Tensor, positions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if self._bases is None:
            raise RuntimeError("latent:R needs the model's weights: the model binds them before its first update")
        b, h, t, d = k_new.shape
        u, bias = self._bases[layer]
        flat = torch.cat([k_new.transpose(1, 2).reshape(b, t, h * d), v_new.transpose(1, 2).reshape(b, t, h * d)], -1)
        c = ((flat - bias) @ u)[:, None]  # (B, 1, T, R): what the cache holds
        self._latents.update(layer, c, c[..., :0], positions)
        # the rows attention reads, rebuilt once per token (a fused kernel would rebuild them on the fly)
        return self._rebuilt.update(layer, *self._expand(layer, c, h), positions)

    def read_scores(
        self, layer: int, q: torch.Tensor, k_all: torch.Tensor, positions: torch.Tensor, theta: float
    ) -> torch.Tensor:
        """The ordinary scores: keys rotated to their positions once rebuilt from the latents."""
        self._theta[layer] = theta
        b, h, t, d = q.shape
        hkv, s = k_all.shape[1], k_all.shape[2]
        k_rot = _rotate(k_all, self.key_positions(layer), theta)
        q_rot = _rotate(q, positions, theta).reshape(b, hkv, (h // hkv) * t, d)
        return (q_rot @ k_rot.transpose(-1, -2)).view(b, hkv, h // hkv, t, s)

    def key_positions(self, layer: int) -> torch.Tensor:
        return self._latents.key_positions(layer)

    def truncate(self, n_tokens: int) -> None:
        self._latents.truncate(n_tokens)
        self._rebuilt.truncate(n_tokens)

    @property
    def n_tokens(self) -> int:
        return self._latents.n_tokens

    def bytes_split(self) -> tuple[int, int]:
        return self._latents.bytes_split()

    def held_rows(self, layer: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(k, v, positions) as attention reads them: rebuilt from the latents, keys rotated."""
        k, v = self._rebuilt.stored(layer)
        pos = self.key_positions(layer)
        theta = self._theta[layer]
        return (k if theta is None else _rotate(k, pos, theta)), v, pos
