"""Cross-layer attention (CLA, Brandon et al. 2024, "Reducing Transformer Key-Value Cache Size with Cross-Layer
Attention"): ``random:family=llama,cla=S`` groups S consecutive layers; the group's first layer (the *owner*)
projects and caches K and V as any layer does, the other S - 1 (the *borrowers*) have only a query and an output
projection and attend over the owner's K/V of the same step. The cache then holds ceil(L / S) layers' rows
instead of L: the bill drops by the share factor, and the borrowers' missing K/V projections are weights the
model no longer has. (Gemma 3n shares K/V the other way, its last layers reading earlier ones; transformers'
Gemma 3n is a whole different block — AltUp, per-layer embeddings — so CLA is checked against its definition,
written out in ``tests/reference/test_cla.py``.)

A borrower reads the rows its owner's ``cache.update`` returned this step (``Attention.lent``), so whatever the
lane's policy kept of the owner's layer (a window, evicted rows) is what the borrower sees too; it stores nothing
and scores nothing for a policy that evicts by attention (the owner's scores decide what its rows keep).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Protocol

import torch
from torch import nn

from ...caches.base import Cache, PackedBatch, visibility
from ..config import ModelConfig


def ownership(cfg: ModelConfig) -> list[int]:
    """Each layer's K/V owner (itself for an owner): what the lanes view and the records say of the layers."""
    return [cfg.kv_owner(i) for i in range(cfg.n_layers)]


class Lender(Protocol):
    """What a borrower asks of its owner (``kvsim.models.transformer.Attention``)."""

    #: (k_all, v_all, key positions, k_new, v_new) its cache returned this forward; None before it ran
    lent: tuple[torch.Tensor, ...] | None

    def rotate(self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor: ...


class SharedKVAttention(nn.Module):
    """A borrower layer's attention: its own queries (and QK-norm, RoPE) over its owner's rows of this step."""

    owner: Lender

    def __init__(self, cfg: ModelConfig, layer: int, owner: Lender, norm: Callable[[ModelConfig, int], nn.Module]) -> None:
        """``owner``: the group's first layer's ``Attention`` (held, not registered: its weights are its own
        layer's); ``norm``: the family's norm maker (handed in: no import back)."""
        super().__init__()
        self.cfg = cfg
        self.window = cfg.window_of(layer)
        self.owner_layer = cfg.kv_owner(layer)
        self.__dict__["owner"] = owner  # not a child module: a borrower owns no K/V weights
        self.scale = 1.0 / math.sqrt(cfg.query_pre_attn_scalar or cfg.head_dim)
        h, d = cfg.n_heads, cfg.head_dim
        bias = cfg.family == "gpt2" or cfg.qkv_bias
        self.wq = nn.Linear(cfg.dim, h * d, bias=bias)
        self.wo = nn.Linear(h * d, cfg.dim, bias=cfg.family == "gpt2" or cfg.out_bias)
        self.q_norm = norm(cfg, d) if cfg.qk_norm else None

    def fuse_qkv(self, rows: bool = False) -> None:
        """Nothing to fuse: a borrower projects only its queries."""

    def forward(
        self,
        x: torch.Tensor,
        positions: torch.Tensor,
        cache: Cache | PackedBatch,
        layer: int,
        rope: Any,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        cfg = self.cfg
        if isinstance(cache, PackedBatch):
            raise RuntimeError("a packed batch attends per request (attend_packed); a CLA borrower layer does not pack")
        lent = self.owner.lent
        if lent is None:
            raise RuntimeError(f"layer {layer} reads layer {self.owner_layer}'s K/V, which has not run this forward")
        k_all, v_all, key_pos, k_new, v_new = lent
        b, t, _ = x.shape
        h, hkv, d, g = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim, cfg.group_size
        q = self.wq(x).view(b, t, h, d).transpose(1, 2)
        if self.q_norm is not None:
            q = self.q_norm(q)
        at_read = rope is not None and cache.rope_at_read
        if rope is not None and not at_read:
            q = self.owner.rotate(q, rope)
        s = k_all.shape[2]
        if at_read:  # the cache rotates by slot (StreamingLLM): the owner's rows, read as the owner reads them
            scores = cache.read_scores(self.owner_layer, q, k_all, positions, cfg.rope_theta_of(layer)) * self.scale
            q = self.owner.rotate(q, rope)
        else:
            scores = (q.reshape(b, hkv, g * t, d) @ k_all.transpose(-1, -2)).view(b, hkv, g, t, s) * self.scale
        if key_pos.dim() == 1:
            visible = visibility(positions, key_pos, self.window, cache.mask_window, cache.mask_sinks)
        else:
            visible = torch.stack([visibility(positions, p, self.window, cache.mask_window, cache.mask_sinks) for p in key_pos])
            visible = visible[:, None]
        if not bool(visible.all()):
            scores = scores.masked_fill(~visible, float("-inf"))
        probs = torch.softmax(scores.float(), dim=-1).to(q.dtype).view(b, hkv, g * t, s)
        y = (probs @ v_all).view(b, h, t, d).transpose(1, 2).reshape(b, t, h * d)
        return self.wo(y), q, k_new, v_new
