"""Multi-head latent attention (MLA), as DeepSeek-V2 defines it (DeepSeek-AI 2024, §2.1), for ``family=mla``.

Per token and layer the cache holds one **latent** ``c`` of ``r = kv_lora_rank`` values and one RoPE key
``k_R`` of ``d_R = qk_rope_head_dim`` values shared by every head — not K and V per head::

    c   = RMSNorm(W_DKV · x)                       (r)        ┐ cached: r + d_R values a token and layer
    k_R = RoPE(W_KR · x)                           (d_R)      ┘
    q_h = W_Q,h · x  = [q_h^C (d) | RoPE(q_h^R) (d_R)]
    k_h = [W_UK,h · c | k_R],   v_h = W_UV,h · c   (each head's key and value, rebuilt from c)
    score_h = (q_h^C · W_UK,h c + q_h^R · k_R) / sqrt(d + d_R),   out = W_O [Σ softmax · v_h]_h

Two ways to compute it, the same numbers up to rounding:

* **expanded**: rebuild every head's K and V from the cached latents, then ordinary attention;
* **absorbed**: fold W_UK,h into the query (``q_h^C · W_UK,h c = (W_UK,hᵀ q_h^C) · c``) and W_UV,h after
  the weighted sum (``Σ p v_h = W_UV,h Σ p c``): attention then reads the latents directly, like MQA with
  one K/V head of width r + d_R. This is how inference engines run MLA; it is kvsim's default.

The cache sees one KV head: ``update(layer, [c | k_R], empty, positions)`` — keys (B, 1, T, r + d_R) and
values of width 0 (the values are the latent's first r columns of the keys), so the cache's bytes are
exactly L · (r + d_R) · n · element size. Layer names follow DeepSeek's ``kv_a_proj_with_mqa`` (``wkv_a``,
r + d_R outputs), ``kv_a_layernorm`` (``kv_norm``) and ``kv_b_proj`` (``wkv_b``: per head d rows of W_UK
then d rows of W_UV). DeepSeek-V2's query compression (``q_lora_rank``) is left out (V2-Lite has none);
kvsim's MLA uses the same width d for the no-RoPE query/key part and the value.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from ...caches.base import Cache, PackedBatch, visibility
from ..config import ModelConfig


class MLAAttention(nn.Module):
    #: absorbed (True, the default) or expanded computation; tests flip it to hold the two equal
    absorbed = True
    #: how this layer's errors name it (a subclass that changes the attention names its own)
    what = "latent attention (mla)"

    def __init__(
        self,
        cfg: ModelConfig,
        layer: int,
        norm: Callable[[int, float], nn.Module],
        rope: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor],
    ) -> None:
        """``norm`` and ``rope``: the transformer's own RMSNorm and apply_rope (handed in: no import back)."""
        super().__init__()
        self.cfg = cfg
        self._rope = rope
        self.window = None
        h, d, r, dr = cfg.n_heads, cfg.head_dim, cfg.kv_lora_rank, cfg.qk_rope_head_dim
        self.scale = 1.0 / math.sqrt(cfg.query_pre_attn_scalar or (d + dr))
        self.wq = nn.Linear(cfg.dim, h * (d + dr), bias=False)
        self.wkv_a = nn.Linear(cfg.dim, r + dr, bias=False)
        self.kv_norm = norm(r, cfg.norm_eps)
        self.wkv_b = nn.Linear(r, h * 2 * d, bias=False)
        self.wo = nn.Linear(h * d, cfg.dim, bias=False)

    def fuse_qkv(self, rows: bool = False) -> None:
        """Nothing to fuse: the query and the latent come from different projections."""

    def up(self) -> tuple[torch.Tensor, torch.Tensor]:
        """W_UK (H, d, r) and W_UV (H, d, r): ``wkv_b``'s rows, per head d of each."""
        cfg = self.cfg
        w = self.wkv_b.weight.view(cfg.n_heads, 2 * cfg.head_dim, cfg.kv_lora_rank)
        return w[:, : cfg.head_dim], w[:, cfg.head_dim :]

    def checked(
        self, cache: Cache | PackedBatch, rope: tuple[torch.Tensor, torch.Tensor] | None
    ) -> tuple[Cache, tuple[torch.Tensor, torch.Tensor]]:
        """The cache and RoPE's tables, once they are known to suit a latent layer (its own and its subclasses')."""
        if rope is None:
            raise ValueError(f"{self.what} needs RoPE's tables (its decoupled keys are rotated)")
        if isinstance(cache, PackedBatch):
            raise RuntimeError(f"a packed batch attends per request (attend_packed); {self.what} does not pack")
        return cache, rope

    def latent(self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        """This step's latents ``[c | k_R]`` (B, 1, T, r + d_R): what the cache holds."""
        r = self.cfg.kv_lora_rank
        kv = self.wkv_a(x)  # (B, T, r + d_R)
        c = self.kv_norm(kv[..., :r])
        k_r = self._rope(kv[..., None, r:].transpose(1, 2), *rope)  # (B, 1, T, d_R): one RoPE key for all heads
        return torch.cat([c[:, None], k_r], -1)

    def forward(
        self,
        x: torch.Tensor,
        positions: torch.Tensor,
        cache: Cache | PackedBatch,
        layer: int,
        rope: tuple[torch.Tensor, torch.Tensor] | None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        apply_rope = self._rope
        cfg = self.cfg
        b, t, _ = x.shape
        h, d, r, dr = cfg.n_heads, cfg.head_dim, cfg.kv_lora_rank, cfg.qk_rope_head_dim
        cache, rope = self.checked(cache, rope)
        q = self.wq(x).view(b, t, h, d + dr).transpose(1, 2)  # (B, H, T, d + d_R)
        q_c, q_r = q[..., :d], apply_rope(q[..., d:], *rope)
        latent = self.latent(x, rope)  # (B, 1, T, r + d_R): what the cache holds
        k_all, _ = cache.update(layer, latent, latent[..., :0], positions)  # (B, 1, S, r + d_R)
        key_pos = cache.key_positions(layer)
        s = k_all.shape[2]
        w_uk, w_uv = self.up()
        q_lat = torch.einsum("bhtd,hdr->bhtr", q_c, w_uk)  # W_UKᵀ q^C: the query in the latent's space
        q_abs = torch.cat([q_lat, q_r], -1)  # (B, H, T, r + d_R)
        if self.absorbed:
            scores = (q_abs.reshape(b, 1, h * t, r + dr) @ k_all.transpose(-1, -2)).view(b, 1, h, t, s)
        else:  # every head's K and V rebuilt from the latents
            k_c = torch.einsum("bsr,hdr->bhsd", k_all[:, 0, :, :r], w_uk)
            k_full = torch.cat([k_c, k_all[:, :, :, r:].expand(b, h, s, dr)], -1)  # (B, H, S, d + d_R)
            scores = (torch.cat([q_c, q_r], -1) @ k_full.transpose(-1, -2)).view(b, 1, h, t, s)
        scores = scores * self.scale
        if key_pos.dim() == 1:
            visible = visibility(positions, key_pos, None, cache.mask_window, cache.mask_sinks)
        else:
            visible = torch.stack([visibility(positions, p, None, cache.mask_window, cache.mask_sinks) for p in key_pos])[:, None]
        if not bool(visible.all()):
            scores = scores.masked_fill(~visible, float("-inf"))
        weights = torch.softmax(scores.float(), dim=-1)
        cache.observe_attention(layer, weights)  # a policy that evicts by attention scores its rows
        probs = weights.to(q.dtype).view(b, h, t, s)
        if self.absorbed:
            o_lat = probs @ k_all[:, 0, None, :, :r]  # (B, H, T, r): Σ p · c
            y = torch.einsum("bhtr,hdr->bhtd", o_lat, w_uv)
        else:
            v = torch.einsum("bsr,hdr->bhsd", k_all[:, 0, :, :r], w_uv)  # (B, H, S, d)
            y = probs @ v
        y = y.transpose(1, 2).reshape(b, t, h * d)
        return self.wo(y), q_abs, latent, latent
