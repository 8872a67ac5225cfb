"""Qwen3-Next's hybrid layers (``family=qwen3_next``): Gated DeltaNet linear attention and gated full attention.

Three layers in four (``attention_every``) replace attention by a **Gated DeltaNet** (Yang, Kautz & Hatamizadeh
2024): a recurrence whose state is one dk × dv matrix ``S`` per value head, updated once per token::

    q, k, v = SiLU(causal depthwise conv₄([W_q x; W_k x; W_v x]))       q, k L2-normalised, q also / sqrt(dk)
    g_t = -exp(A) · softplus(W_a x + dt_bias),   β_t = sigmoid(W_b x)    a decay and a write strength per head
    S_t = exp(g_t) S_{t-1} + k_t (β_t (v_t - S_{t-1}ᵀ k_t))ᵀ                 (the delta rule, gated)
    o_t = S_tᵀ q_t,   out = W_o · RMSNorm(o_t) ⊙ SiLU(W_z x)

so a decode step reads a state of fixed size, however long the text: per layer the convolution's last
``conv_kernel - 1`` inputs and the matrices ``S`` (``kvsim.caches.state``). The fourth layer is ordinary
attention with Qwen3-Next's changes: an output gate (``q_proj`` gives each head a query and a gate,
out = attention ⊙ sigmoid(gate)), QK-norm, and RoPE on the first quarter of each head (``partial_rotary_factor``
0.25); its K/V rows grow by one a token as in any transformer.

Names and layouts follow transformers' ``Qwen3NextGatedDeltaNet`` / ``Qwen3NextAttention`` (``in_proj_qkvz``
grouped by key head, ``in_proj_ba``, ``conv1d``, ``A_log``, ``dt_bias``), so its weights load one to one;
``tests/reference/test_qwen3_next.py`` holds the logits equal at every step. The recurrence is written out one
token at a time (transformers' ``torch_recurrent_gated_delta_rule``; its prefill uses the chunked form, the same
numbers up to rounding). Qwen3-Next's mixture of experts is left out: every layer has a dense SwiGLU MLP
(transformers' ``mlp_only_layers``), which changes nothing about what is cached.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from ...caches.base import Cache, PackedBatch, visibility
from ..config import ModelConfig

Rope = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


def l2norm(x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """x / ||x|| as FLA and transformers compute it (eps inside the root)."""
    return x * torch.rsqrt((x * x).sum(dim=-1, keepdim=True) + eps)


class GatedRMSNorm(nn.Module):
    """RMSNorm of the recurrence's output, then gated by SiLU(z) (``Qwen3NextRMSNormGated``; weight at 1)."""

    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        x32 = x.float()
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        out = self.weight * x32.to(dtype)
        return (out * F.silu(gate.float())).to(dtype)


class GatedDeltaNet(nn.Module):
    """One linear-attention layer: a short causal convolution, then the gated delta rule over a (dk × dv) state
    per value head. Its cache is the state, handed to and taken from the lane's cache (``Cache.layer_state`` /
    ``keep_state``); a lane that recomputes the prefix (``none``) starts from zeros every step."""

    def __init__(self, cfg: ModelConfig, layer: int) -> None:
        super().__init__()
        self.cfg = cfg
        self.window = None
        hk, hv, dk = cfg.linear_heads, cfg.linear_value_heads, cfg.linear_head_dim
        self.key_dim, self.value_dim = hk * dk, hv * dk
        self.conv_dim = 2 * self.key_dim + self.value_dim
        self.in_proj_qkvz = nn.Linear(cfg.dim, 2 * self.key_dim + 2 * self.value_dim, bias=False)
        self.in_proj_ba = nn.Linear(cfg.dim, 2 * hv, bias=False)
        self.conv1d = nn.Conv1d(self.conv_dim, self.conv_dim, cfg.conv_kernel, groups=self.conv_dim, bias=False)
        self.dt_bias = nn.Parameter(torch.ones(hv))
        self.A_log = nn.Parameter(torch.zeros(hv))
        self.norm = GatedRMSNorm(dk, cfg.norm_eps)
        self.out_proj = nn.Linear(self.value_dim, cfg.dim, bias=False)

    def fuse_qkv(self, rows: bool = False) -> None:
        """Nothing to fuse: the layer has one input projection already."""

    def _split(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """q, k (B, T, Hk·dk), v, z (B, T, Hv, dk), b, a (B, T, Hv): transformers' ``fix_query_key_value_ordering``
        (the projections are grouped by key head: each group holds its q, k, then its value heads' v and z)."""
        cfg = self.cfg
        b, t, _ = x.shape
        hk, hv, dk = cfg.linear_heads, cfg.linear_value_heads, cfg.linear_head_dim
        per = hv // hk
        qkvz = self.in_proj_qkvz(x).view(b, t, hk, 2 * dk + 2 * per * dk)
        ba = self.in_proj_ba(x).view(b, t, hk, 2 * per)
        q, k, v, z = torch.split(qkvz, [dk, dk, per * dk, per * dk], dim=3)
        beta, a = torch.split(ba, [per, per], dim=3)
        return (
            q.reshape(b, t, -1),
            k.reshape(b, t, -1),
            v.reshape(b, t, hv, dk),
            z.reshape(b, t, hv, dk),
            beta.reshape(b, t, hv),
            a.reshape(b, t, hv),
        )

    def forward(
        self,
        x: torch.Tensor,
        positions: torch.Tensor,
        cache: Cache | PackedBatch,
        layer: int,
        rope: tuple[torch.Tensor, torch.Tensor] | None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        cfg = self.cfg
        if isinstance(cache, PackedBatch):
            raise RuntimeError("a packed batch attends per request (attend_packed); a Gated DeltaNet layer does not pack")
        b, t, _ = x.shape
        hk, hv, dk, width = cfg.linear_heads, cfg.linear_value_heads, cfg.linear_head_dim, cfg.conv_kernel - 1
        q, k, v, z, beta_in, a = self._split(x)
        mixed = torch.cat([q, k, v.reshape(b, t, -1)], -1).transpose(1, 2)  # (B, C, T)
        start = int(positions[0])
        held = cache.layer_state(layer, start) if start > 0 else None
        if start > 0 and held is None:
            raise RuntimeError(
                f"layer {layer} is a Gated DeltaNet layer: continuing at position {start} needs its recurrent state "
                "there, which this lane's cache does not hold (only none and kv run on a hybrid model)"
            )
        conv_prev = held[0] if held is not None else mixed.new_zeros(b, self.conv_dim, width)
        state = held[1] if held is not None else torch.zeros(b, hv, dk, dk, dtype=torch.float32, device=x.device)
        stream = torch.cat([conv_prev.to(mixed.dtype), mixed], -1)  # (B, C, width + T): the inputs the kernel sees
        conv = F.silu(F.conv1d(stream, self.conv1d.weight, None, groups=self.conv_dim))  # (B, C, T)
        qc, kc, vc = torch.split(conv.transpose(1, 2), [self.key_dim, self.key_dim, self.value_dim], -1)
        per = hv // hk  # each query/key head serves `per` consecutive value heads
        qh = l2norm(qc.reshape(b, t, hk, dk).float()).repeat_interleave(per, 2) / math.sqrt(dk)  # (B, T, Hv, dk)
        kh = l2norm(kc.reshape(b, t, hk, dk).float()).repeat_interleave(per, 2)
        vh = vc.reshape(b, t, hv, dk).float()
        beta = beta_in.sigmoid().float()
        g = -self.A_log.float().exp() * F.softplus(a.float() + self.dt_bias)  # (B, T, Hv): log of the decay
        outs = []
        before_last = state
        wanted = set(cache.state_checkpoints(start, start + t))
        kept: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        # the gated delta rule, one token at a time; its three products are matmuls (torch's FLOP counter counts
        # them: 2·dk·dv each per value head, kvsim.engine.counting's "recurrence"), the decay and δ element-wise
        for i in range(t):
            before_last = state
            state = state * g[:, i].exp()[..., None, None]
            k_row = kh[:, i, :, None, :]  # (B, Hv, 1, dk)
            remembered = (k_row @ state)[:, :, 0]  # S ᵀ k: what the state returns for this key (B, Hv, dv)
            delta = (vh[:, i] - remembered) * beta[:, i, :, None]
            state = state + k_row.transpose(-1, -2) @ delta[:, :, None, :]  # + k δᵀ: the rank-one write
            if start + i + 1 in wanted:  # a boundary the cache keeps a checkpoint at (a paged pool's full block)
                kept[start + i + 1] = (stream[:, :, i + 1 : i + 1 + width], state)
            outs.append((qh[:, i, :, None, :] @ state)[:, :, 0])  # S ᵀ q
        o = torch.stack(outs, 1).to(x.dtype)  # (B, T, Hv, dk)
        # the state after the step, and the one a token before it (so the step can be undone, kvsim.caches.state)
        new_conv = stream[:, :, -width:] if width else stream[:, :, :0]
        prev_conv = stream[:, :, -width - 1 : -1] if width else stream[:, :, :0]
        cache.keep_state(layer, {**kept, start + t: (new_conv, state), start + t - 1: (prev_conv, before_last)})
        y = self.norm(o, z).reshape(b, t, self.value_dim)
        # the record's rows: a recurrent layer computes no K/V rows; zeros of the attention layers' shape
        hq, hkv, d = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
        blank_q = x.new_zeros(b, hq, t, d)
        blank_kv = x.new_zeros(b, hkv, t, d)
        return self.out_proj(y), blank_q, blank_kv, blank_kv


class GatedAttention(nn.Module):
    """Qwen3-Next's full-attention layer: QK-norm, RoPE on the first quarter of each head, and an output gate
    (each head's value sum times sigmoid of its own gate). Its rows go to the lane's cache as any layer's."""

    def __init__(self, cfg: ModelConfig, layer: int, norm: Callable[[int, float], nn.Module], rope: Rope) -> None:
        """``norm`` and ``rope``: the transformer's own (Gemma-style) RMSNorm and apply_rope (handed in: no import back)."""
        super().__init__()
        self.cfg = cfg
        self._rope = rope
        self.window = None
        h, hkv, d = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
        self.scale = 1.0 / math.sqrt(d)
        self.q_proj = nn.Linear(cfg.dim, h * d * 2, bias=False)
        self.k_proj = nn.Linear(cfg.dim, hkv * d, bias=False)
        self.v_proj = nn.Linear(cfg.dim, hkv * d, bias=False)
        self.o_proj = nn.Linear(h * d, cfg.dim, bias=False)
        self.q_norm = norm(d, cfg.norm_eps)
        self.k_norm = norm(d, cfg.norm_eps)

    def fuse_qkv(self, rows: bool = False) -> None:
        """Left unfused: the query projection carries the gate too."""

    def _rotate(self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        r = self.cfg.rope_head_dim  # the rotated part; the rest passes unrotated
        return torch.cat([self._rope(x[..., :r], rope[0], rope[1]), x[..., r:]], -1)

    def forward(
        self,
        x: torch.Tensor,
        positions: torch.Tensor,
        cache: Cache | PackedBatch,
        layer: int,
        rope: tuple[torch.Tensor, torch.Tensor] | None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        cfg = self.cfg
        if rope is None:
            raise ValueError("an attention layer of qwen3_next needs RoPE's tables")
        if isinstance(cache, PackedBatch):
            raise RuntimeError("a packed batch attends per request (attend_packed); a qwen3_next model does not pack")
        b, t, _ = x.shape
        h, hkv, d, g = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim, cfg.group_size
        q, gate = torch.chunk(self.q_proj(x).view(b, t, h, 2 * d), 2, dim=-1)
        gate = gate.reshape(b, t, h * d)
        q = self._rotate(self.q_norm(q).transpose(1, 2), rope)  # (B, H, T, D)
        k = self._rotate(self.k_norm(self.k_proj(x).view(b, t, hkv, d)).transpose(1, 2), rope)
        v = self.v_proj(x).view(b, t, hkv, d).transpose(1, 2)
        k_all, v_all = cache.update(layer, k, v, positions)
        key_pos = cache.key_positions(layer)
        s = k_all.shape[2]
        scores = (q.reshape(b, hkv, g * t, d) @ k_all.transpose(-1, -2)).view(b, hkv, g, t, s) * self.scale
        visible = visibility(positions, key_pos, None, cache.mask_window, cache.mask_sinks)
        if not bool(visible.all()):
            scores = scores.masked_fill(~visible, float("-inf"))
        weights = torch.softmax(scores.float(), dim=-1)
        cache.observe_attention(layer, weights)
        y = (weights.to(q.dtype).view(b, hkv, g * t, s) @ v_all).view(b, h, t, d).transpose(1, 2).reshape(b, t, h * d)
        return self.o_proj(y * torch.sigmoid(gate)), q, k, v
