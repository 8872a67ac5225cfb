"""DeepSeek Sparse Attention (DSA, DeepSeek-AI 2025, "DeepSeek-V3.2-Exp"), for ``family=deepseek_v32``.

DeepSeek-V3.2 is DeepSeek-V3's latent attention (``kvsim.models.attention.mla``) with two changes:

* the query is compressed first, as in V2/V3: ``q = W_QB · RMSNorm(W_QA · x)`` (``q_lora_rank`` values between);
* a **lightning indexer** chooses, for each query, the ``k = index_topk`` cached rows its attention reads. The
  indexer has its own small projections: one key per token (``k_I = RoPE(LayerNorm(W_K^I x))``, ``index_head_dim``
  values, shared by its heads), ``H_I = index_heads`` query heads read from the compressed query
  (``q_I,h = RoPE(W_QB^I · c_Q)``) and a weight per head from ``x`` (``w_h = W_w^I x / sqrt(H_I)``)::

      I(t, s) = Σ_h w_h(t) · ReLU(q_I,h(t) · k_I(s) / sqrt(index_head_dim))        (every cached row s)
      S_t     = top-k_s I(t, s)                                                    (its k best visible rows)
      out_t   = MLA attention of q_t over the latents of S_t only

The cache holds every token's latent ``[c | k_R]`` (``r + d_R`` values a layer) **and** its indexer key
(``index_head_dim`` values a layer): what it holds grows with n as MLA's does, a little more. A step reads all
the indexer keys (small) and only ``k`` latents: the attention's reads stop growing once n passes k.

The cache sees one row per token: ``update(layer, [c | k_R], k_I, positions)`` — the latent as the "keys" and the
indexer key as the "values" (an MLA layer's values are 0 wide; transformers' ``DynamicIndexedLayer`` keeps the
indexer keys beside the latent the same way), so the cache's bytes are exactly L · (r + d_R + d_I) · n · element
size, and a policy that truncates or resets the rows does the same to the indexer keys.

Names follow transformers' ``DeepseekV32Attention`` / ``DeepseekV32Indexer`` (``q_a_proj`` = ``wq_a``,
``q_a_layernorm`` = ``q_norm``, ``q_b_proj`` = ``wq_b``, ``indexer.wq_b``/``wk``/``k_norm``/``weights_proj``), so
its weights load one to one; DeepSeek rotates the main attention's RoPE part in interleaved pairs, kvsim in halves
(rotate-half), which is the same rotation of the weights' rows put in another order (the loader permutes them:
``tests/reference/test_deepseek_v32.py``). The indexer rotates its first ``d_R`` dims in halves, as transformers
does. The reference kernel's Hadamard rotation (it keeps every dot product) and FP8 scores (a precision choice) are
left out, as transformers leaves them. Rows whose scores tie exactly (the ReLU makes whole rows score 0 when
every head's dot product is negative) are taken in position order, the earliest first: ``topk`` leaves that order
to the kernel and the tensor's shape, so a lane that recomputes the prefix (``none``) read other rows than ``kv``
(logits 3e-2 apart on the app's preset) where transformers' own eager path would differ the same way. Each
forward leaves, on the layer, the positions every query read (``selected``): the transformer returns them
(``ForwardOutput.selected``), the simulator records them.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from ...caches.base import Cache, PackedBatch, visibility
from ..config import ModelConfig
from .mla import MLAAttention

Rope = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


class LightningIndexer(nn.Module):
    """DSA's indexer: its own key per token (cached), and per query a score for every cached row."""

    def __init__(self, cfg: ModelConfig, rope: Rope) -> None:
        super().__init__()
        self.cfg = cfg
        self._rope = rope
        self.heads, self.width = cfg.index_heads, cfg.index_head_dim
        self.wq_b = nn.Linear(cfg.q_lora_rank, self.heads * self.width, bias=False)
        self.wk = nn.Linear(cfg.dim, self.width, bias=False)
        self.k_norm = nn.LayerNorm(self.width, eps=1e-6)
        self.weights_proj = nn.Linear(cfg.dim, self.heads, bias=False)

    def _rotate(self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        dr = self.cfg.qk_rope_head_dim  # the first d_R dims rotate (in halves), the rest pass
        return torch.cat([self._rope(x[..., :dr], rope[0], rope[1]), x[..., dr:]], -1)

    def keys(self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        """This step's indexer keys (B, 1, T, d_I): what the cache holds beside each latent."""
        return self._rotate(self.k_norm(self.wk(x))[:, None], rope)

    def scores(
        self, x: torch.Tensor, q_resid: torch.Tensor, keys: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor]
    ) -> torch.Tensor:
        """I(t, s) (B, T, S), float32, of this step's queries against every cached indexer key ``keys`` (B, 1, S, d_I)."""
        b, t, _ = x.shape
        q = self.wq_b(q_resid).view(b, t, self.heads, self.width).transpose(1, 2)  # (B, H_I, T, d_I)
        q = self._rotate(q, rope)
        dots = F.relu((q.float() @ keys.float().transpose(-1, -2)) / math.sqrt(self.width))  # (B, H_I, T, S)
        w = self.weights_proj(x).float() / math.sqrt(self.heads)  # (B, T, H_I)
        return torch.einsum("bth,bhts->bts", w, dots)


class SparseLatentAttention(MLAAttention):
    """MLA whose query goes through ``q_lora_rank`` and whose every query reads only the ``index_topk`` rows the
    lightning indexer ranks highest among those it may see."""

    what = "sparse attention (deepseek_v32)"

    def __init__(
        self,
        cfg: ModelConfig,
        layer: int,
        norm: Callable[[int, float], nn.Module],
        rope: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor],
    ) -> None:
        super().__init__(cfg, layer, norm, rope)
        h, d, dr = cfg.n_heads, cfg.head_dim, cfg.qk_rope_head_dim
        del self.wq  # the query is compressed first (q_lora_rank), as DeepSeek-V2/V3/V3.2 do
        self.wq_a = nn.Linear(cfg.dim, cfg.q_lora_rank, bias=False)
        self.q_norm = norm(cfg.q_lora_rank, cfg.norm_eps)
        self.wq_b = nn.Linear(cfg.q_lora_rank, h * (d + dr), bias=False)
        self.indexer = LightningIndexer(cfg, rope)
        #: (B, T, k) the positions each of the last forward's queries read, sorted, -1 past its visible rows
        self.selected: torch.Tensor | None = None

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
        q_resid = self.q_norm(self.wq_a(x))  # (B, T, q_lora_rank): the compressed query, the indexer's too
        q = self.wq_b(q_resid).view(b, t, h, d + dr).transpose(1, 2)  # (B, H, T, d + d_R)
        q_c, q_r = q[..., :d], apply_rope(q[..., d:], *rope)
        latent = self.latent(x, rope)  # (B, 1, T, r + d_R)
        index_keys = self.indexer.keys(x, rope)  # (B, 1, T, d_I)
        k_all, index_all = cache.update(layer, latent, index_keys, positions)  # every row held: (B, 1, S, ·)
        key_pos = cache.key_positions(layer)
        if key_pos.dim() != 1:
            raise RuntimeError("sparse attention (deepseek_v32) reads one set of rows a layer, not one per head")
        s = k_all.shape[2]
        # 1. the indexer scores every held row; each query keeps its top k among those it may see
        visible = visibility(positions, key_pos, None, cache.mask_window, cache.mask_sinks)  # (T, S)
        index = self.indexer.scores(x, q_resid, index_all, rope).masked_fill(~visible, float("-inf"))
        # the k best by a stable sort: rows of equal score (the ReLU makes exact zeros common) go in position order,
        # so a query reads the same rows whether its step fed one position or the whole prefix
        ranked = index.sort(dim=-1, descending=True, stable=True)
        k = min(cfg.index_topk, s)
        values, chosen = ranked.values[..., :k], ranked.indices[..., :k]  # (B, T, k)
        read = torch.isfinite(values)  # fewer visible rows than k: the rest are not read
        picked = torch.where(read, key_pos[chosen], torch.full_like(chosen, torch.iinfo(torch.int64).max))
        self.selected = torch.where(read.sort(-1, descending=True).values, picked.sort(-1).values, -1)
        # 2. MLA attention over the chosen latents only: each query gathers its k rows (B, T, k, r + d_R)
        rows = k_all[:, 0][torch.arange(b, device=x.device)[:, None, None], chosen]
        w_uk, w_uv = self.up()
        q_lat = torch.einsum("bhtd,hdr->bhtr", q_c, w_uk)
        q_abs = torch.cat([q_lat, q_r], -1)  # (B, H, T, r + d_R)
        if self.absorbed:
            scores = torch.einsum("bhtc,btkc->bhtk", q_abs, rows)
        else:  # every head's key rebuilt from the chosen latents
            k_c = torch.einsum("btkr,hdr->bhtkd", rows[..., :r], w_uk)
            k_full = torch.cat([k_c, rows[:, None, :, :, r:].expand(b, h, t, -1, dr)], -1)
            scores = torch.einsum("bhtd,bhtkd->bhtk", torch.cat([q_c, q_r], -1), k_full)
        scores = (scores * self.scale).masked_fill(~read[:, None], float("-inf"))
        weights = torch.softmax(scores.float(), dim=-1)  # (B, H, T, k)
        full = weights.new_zeros(b, h, t, s).scatter_add_(-1, chosen[:, None].expand(b, h, t, -1), weights)
        cache.observe_attention(layer, full[:, None])  # (B, 1, H, T, S): zero on every row not read
        probs = weights.to(q.dtype)
        if self.absorbed:
            y = torch.einsum("bhtr,hdr->bhtd", torch.einsum("bhtk,btkr->bhtr", probs, rows[..., :r]), w_uv)
        else:
            y = torch.einsum("bhtk,bhtkd->bhtd", probs, torch.einsum("btkr,hdr->bhtkd", rows[..., :r], w_uv))
        y = y.transpose(1, 2).reshape(b, t, h * d)
        return self.wo(y), q_abs, latent, latent
