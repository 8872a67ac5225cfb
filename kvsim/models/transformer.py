"""A small, readable decoder-only transformer for the two families kvsim runs.

The model knows nothing about tokenization or sampling. One forward signature serves every lane:

    out = model(ids, positions, cache)        # ids (B, T) new tokens; positions (T,) absolute
    out.logits                                # (B, T or 1, vocab)
    out.q, out.k, out.v                       # (L, B, H|H_kv, T, D) this step's rows, if record=True

The uncached lane passes the whole prefix with a ``NoCache``; the cached lane passes only the new
token(s) with a ``KVCache``. Attention is written out as two matmuls (not fused SDPA) so that every
FLOP is one torch's FLOP counter sees and kvsim's closed-form counts can be checked against.

GPT-2 family: learned positions, LayerNorm, GELU (tanh) MLP, biases everywhere, MHA.
Llama family: RoPE (rotate-half, as Hugging Face), RMSNorm, SwiGLU, GQA/MQA, optional QKV biases
(Qwen2), optional output-projection and MLP biases (Llama's ``attention_bias`` / ``mlp_bias``),
optional sliding-window mask (Mistral), tied or untied embeddings.
Gemma 3 family: the Llama block plus QK-norm (RMSNorm over each head's q and k), a second norm
after attention and after the MLP (four per block), GeGLU (tanh GELU gate), embeddings scaled by
sqrt(dim), Gemma's RMSNorm (scale = 1 + weight), scores scaled by ``query_pre_attn_scalar``**-0.5,
and per-layer windows: local layers see their last W positions and rotate with their own RoPE
base, global layers see everything.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ..caches.base import Cache, PackedBatch, visibility
from ..caches.kv import KVCache
from .attention.cla import SharedKVAttention
from .attention.dsa import SparseLatentAttention
from .attention.hybrid import GatedAttention, GatedDeltaNet
from .attention.mla import MLAAttention
from .config import ModelConfig
from .kernels import huge_pages
from .kernels import kernel_choice as choosing
from .kernels.kernel_choice import KernelChoice
from .kernels.row_matmul import Linear, RowLinear

LayerHook = Callable[[int, int], None]


@dataclass
class ForwardOutput:
    logits: torch.Tensor  # (B, T_out, vocab)
    q: torch.Tensor | None = None  # (L, B, H, T, D)
    k: torch.Tensor | None = None  # (L, B, H_kv, T, D), after RoPE: exactly what the cache holds
    v: torch.Tensor | None = None  # (L, B, H_kv, T, D)
    hidden: torch.Tensor | None = None  # (B, T, dim): the last layer's output of every fed position, if hidden=True
    # deepseek_v32 (sparse attention): (L, B, T, k) the positions each fed query's attention read, in order, -1
    # past the rows it could see (fewer than k); None on every other family, which reads every row it holds
    selected: torch.Tensor | None = None

    def rows(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """q, k, v of a forward with ``record=True``."""
        if self.q is None or self.k is None or self.v is None:
            raise ValueError("this forward did not record its rows (record=True records them)")
        return self.q, self.k, self.v


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # float32 statistics, as the reference implementations do, so fp16/bf16 stay stable; torch's
        # fused kernel computes x * rsqrt(mean(x²) + eps) in one op (the written-out form: rms_norm_reference)
        if x.dtype == torch.float32 and self.weight.dtype == torch.float32:
            return F.rms_norm(x, self.weight.shape, self.weight, self.eps)
        return self.weight * F.rms_norm(x.float(), self.weight.shape, None, self.eps).to(x.dtype)


class GemmaRMSNorm(nn.Module):
    """Gemma's RMSNorm: the weight is stored as an offset from 1 (zeros = identity scale), and the
    product is taken in float32 before the cast back, where Llama casts first (transformers PR 29402)."""

    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.zeros(dim))
        self._scale: tuple[tuple[int, int, torch.dtype], torch.Tensor] | None = None  # 1 + weight, kept between calls

    def scale(self) -> torch.Tensor:
        """``1 + weight`` in float32, computed again only when the weight changed (loaded, converted, edited in
        place: its version counter or storage moves): six norms a Gemma layer save an op each per step."""
        w = self.weight
        key = (w._version, w.data_ptr(), w.dtype)
        if self._scale is None or self._scale[0] != key:
            self._scale = (key, 1.0 + w.detach().float())
        return self._scale[1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # compiled (--compile), 1 + weight is fused into the graph: the kept copy's key (the weight's version and
        # address) would be guarded on by every graph, recompiled past torch.compile's limit and then looked up at
        # ~40 µs a call, which made a compiled Gemma 3 step 1.4× slower than an eager one
        scale = 1.0 + self.weight.float() if torch.compiler.is_compiling() else self.scale()
        return F.rms_norm(x.float(), self.weight.shape, scale, self.eps).to(x.dtype)


def rms_norm_reference(x: torch.Tensor, eps: float) -> torch.Tensor:
    """RMSNorm written out, in float32 (what ``F.rms_norm`` fuses; the tests compare the two)."""
    x32 = x.float()
    return x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)


def make_norm(cfg: ModelConfig, dim: int | None = None) -> nn.Module:
    """The family's normalisation over ``dim`` features (the model width unless given)."""
    dim = cfg.dim if dim is None else dim
    if cfg.family == "gpt2":
        return nn.LayerNorm(dim, eps=cfg.norm_eps)
    # Qwen3-Next's RMSNorm is Gemma's: the weight an offset from 1, the product in float32
    return GemmaRMSNorm(dim, cfg.norm_eps) if cfg.family in ("gemma3", "qwen3_next") else RMSNorm(dim, cfg.norm_eps)


def rope_cos_sin(positions: torch.Tensor, head_dim: int, theta: float, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=positions.device, dtype=torch.int64).float() / head_dim))
    freqs = positions.float()[:, None] * inv_freq[None, :]  # (T, D/2)
    emb = torch.cat((freqs, freqs), dim=-1)  # (T, D)
    return emb.cos().to(dtype), emb.sin().to(dtype)


class RopeRows(tuple):
    """(cos, sin) of some positions, as ``apply_rope`` takes them, and ``signed``: sin with its first half
    negated, for ``apply_rope_signed`` (a decode step's rotation in 4 ops instead of 7, the same values)."""

    signed: torch.Tensor

    def __new__(cls, cos: torch.Tensor, sin: torch.Tensor, signed: torch.Tensor) -> RopeRows:
        rows = super().__new__(cls, (cos, sin))
        rows.signed = signed
        return rows


class RopeTables:
    """cos/sin of every position up to a capacity that doubles when a step needs more, one table per
    (base, dtype): a step indexes its rows instead of recomputing them. The rows are computed by
    ``rope_cos_sin`` itself, so they are the same values as computing each step's positions afresh."""

    def __init__(self) -> None:
        self._tables: dict[tuple[float, int, torch.dtype, torch.device], tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}

    def __call__(self, positions: torch.Tensor, head_dim: int, theta: float, dtype: torch.dtype) -> RopeRows:
        key = (theta, head_dim, dtype, positions.device)
        table = self._tables.get(key)
        one = int(positions[0]) if positions.dim() == 1 and positions.numel() == 1 else None  # a decode step
        needed = one + 1 if one is not None else int(positions.max()) + 1 if positions.numel() else 0
        if table is None or table[0].shape[0] < needed:
            size = max(64, needed, 2 * (table[0].shape[0] if table is not None else 0))
            cos, sin = rope_cos_sin(torch.arange(size, device=positions.device), head_dim, theta, dtype)
            half = head_dim // 2
            table = (cos, sin, torch.cat((-sin[:, :half], sin[:, half:]), dim=-1))
            self._tables[key] = table
        if one is not None:  # a view of one row, no gather
            return RopeRows(*(part[one : one + 1] for part in table))
        return RopeRows(*(part[positions] for part in table))


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin  # cos/sin (T, D) broadcast over (B, H, T, D)


def apply_rope_signed(x: torch.Tensor, cos: torch.Tensor, signed_sin: torch.Tensor) -> torch.Tensor:
    """``apply_rope`` with the sign folded into the table (``RopeRows.signed``): the halves swapped by one
    roll, and (-x₂)·s = x₂·(-s) exactly, so the result is ``apply_rope``'s bit for bit."""
    return x * cos + x.roll(x.shape[-1] // 2, -1) * signed_sin


def fuse_columns(parts: tuple[Linear, ...], rows: bool = False) -> RowLinear:
    """One (Σ out, in) projection for ``parts``, whose weights and biases become views into its weight and bias:
    state dicts, counts and values are unchanged while a one-row product streams one larger matrix. Stored
    column-major, or row-major when ``rows`` (the layout of the model's one-row kernel, ``kvsim.models.kernels.row_matmul``)."""
    stacked = torch.cat([p.weight.detach() for p in parts], 0)
    weight = huge_pages.row_major(stacked) if rows else huge_pages.column_major(stacked)
    bias = torch.cat([p.bias.detach() for p in parts]) if parts[0].bias is not None else None
    start = 0
    for p in parts:
        end = start + p.out_features
        p.weight = nn.Parameter(weight[start:end], requires_grad=False)
        p.rows = rows
        if bias is not None:
            p.bias = nn.Parameter(bias[start:end], requires_grad=False)
        start = end
    return RowLinear(weight, bias, rows)


def hold_fused(module: nn.Module, name: str, fused: RowLinear) -> None:
    """Keep ``fused`` as ``module.<name>`` without registering it as a child module, as the (weight, bias) pair it
    replaces was kept: its tensors are the projections' Parameters seen whole, so the model's modules, state dict
    and parameters stay those of its projections (walks that pair a model's modules with a copy's still pair)."""
    module.__dict__[name] = fused


class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig, layer: int = 0) -> None:
        super().__init__()
        self.cfg = cfg
        self.window = cfg.window_of(layer)  # this layer's own attention window (None: global)
        # 1/sqrt(d) as before for every family; Gemma 3 names its own scalar (256 for the 270M)
        self.scale = 1.0 / math.sqrt(cfg.query_pre_attn_scalar or cfg.head_dim)
        h, hkv, d = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
        bias = cfg.family == "gpt2" or cfg.qkv_bias
        self.wq = Linear(cfg.dim, h * d, bias=bias)
        self.wk = Linear(cfg.dim, hkv * d, bias=bias)
        self.wv = Linear(cfg.dim, hkv * d, bias=bias)
        self.wo = Linear(h * d, cfg.dim, bias=cfg.family == "gpt2" or cfg.out_bias)
        # QK-norm: one weight over the head dimension, shared by every head (Gemma 3)
        self.q_norm = make_norm(cfg, d) if cfg.qk_norm else None
        self.k_norm = make_norm(cfg, d) if cfg.qk_norm else None
        self.fused_qkv: RowLinear | None = None  # see fuse_qkv
        # cross-layer attention: the first layer of a group lends the rows its cache returned this step to the
        # group's other layers (kvsim.models.attention.cla.SharedKVAttention)
        self.lends = cfg.kv_share > 1 and cfg.kv_owner(layer) == layer
        self.lent: tuple[torch.Tensor, ...] | None = None

    def rotate(self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        """``x`` rotated to ``rope``'s positions (a CLA borrower rotates its queries as its owner does)."""
        return apply_rope(x, rope[0], rope[1])

    def fuse_qkv(self, rows: bool = False) -> None:
        """One matmul for Q, K and V (``fuse_columns``): a decode step saves two GEMV calls."""
        hold_fused(self, "fused_qkv", fuse_columns((self.wq, self.wk, self.wv), rows))

    def forward(
        self,
        x: torch.Tensor,
        positions: torch.Tensor,
        cache: Cache | PackedBatch,
        layer: int,
        rope: tuple[torch.Tensor, torch.Tensor] | None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        # StreamingLLM, latent:R: q and k stay unrotated, the cache rotates them when read (by slot)
        at_read = rope is not None and isinstance(cache, Cache) and cache.rope_at_read
        q, k, v = self.project(x, None if at_read else rope)
        if isinstance(cache, PackedBatch):  # several sequences in one row (kvsim.serving.batching)
            y = cache.attend_packed(self, layer, q, k, v, positions)
        else:
            y = self.attend(q, k, v, positions, cache, layer, at_read)
        if at_read and rope is not None:  # the record gets the rows rotated at their positions, as every lane's
            q, k = apply_rope(q, *rope), apply_rope(k, *rope)
        return self.wo(y), q, k, v

    def project(
        self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor] | None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """This step's q (B, H, T, D), k and v (B, H_kv, T, D), rotated when ``rope`` is given. No cache is
        touched: ``--compile`` compiles this part (``Transformer.compile_decode``)."""
        cfg = self.cfg
        b, t, _ = x.shape
        h, hkv, d = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
        if self.fused_qkv is not None:
            qkv = self.fused_qkv(x)
            if isinstance(rope, RopeRows) and self.q_norm is None:  # q and k rotated together, in one pass
                qk, v = qkv.split(((h + hkv) * d, hkv * d), dim=-1)
                qk = apply_rope_signed(qk.view(b, t, h + hkv, d), rope[0][:, None], rope.signed[:, None])  # (T, 1, D) tables
                q, k = qk.split((h, hkv), dim=2)
                return q.transpose(1, 2), k.transpose(1, 2), v.view(b, t, hkv, d).transpose(1, 2)
            q, k, v = qkv.split((h * d, hkv * d, hkv * d), dim=-1)
        else:
            q, k, v = self.wq(x), self.wk(x), self.wv(x)
        q = q.view(b, t, h, d).transpose(1, 2)  # (B, H, T, D)
        k = k.view(b, t, hkv, d).transpose(1, 2)  # (B, H_kv, T, D)
        v = v.view(b, t, hkv, d).transpose(1, 2)  # (B, H_kv, T, D)
        if self.q_norm is not None and self.k_norm is not None:  # before RoPE, as Gemma 3 does
            q, k = self.q_norm(q), self.k_norm(k)
        if isinstance(rope, RopeRows):
            q, k = apply_rope_signed(q, rope[0], rope.signed), apply_rope_signed(k, rope[0], rope.signed)
        elif rope is not None:
            q, k = apply_rope(q, *rope), apply_rope(k, *rope)
        return q, k, v

    def attend(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        positions: torch.Tensor,
        cache: Cache,
        layer: int,
        rope_at_read: bool = False,
    ) -> torch.Tensor:
        """One sequence's attention: store this step's (B, H_kv, T, D) rows in ``cache``, read every row it
        holds, and return the heads' outputs (B, T, H*D) before the output projection. ``rope_at_read``: q and
        k come unrotated and the cache's ``read_scores`` rotates them by slot (StreamingLLM's positions)."""
        k_all, v_all, visible = self.store(k, v, positions, cache, layer)
        scores = None
        if rope_at_read:  # StreamingLLM: (B, H_kv, g, T, S) from the unrotated rows, rotated by slot
            scores = cache.read_scores(layer, q, k_all, positions, self.cfg.rope_theta_of(layer)) * self.scale
        y, weights = self.weigh(q, k_all, v_all, visible, scores)
        cache.observe_attention(layer, weights)  # (B, H_kv, g, T, S), float32: a policy that evicts by attention scores
        return y

    def store(
        self, k: torch.Tensor, v: torch.Tensor, positions: torch.Tensor, cache: Cache, layer: int
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """The cache's part of ``attend``: store this step's rows, return every row the cache holds (B, H_kv, S, D)
        and which of them each query may see, None when every query sees every row."""
        k_all, v_all = cache.update(layer, k, v, positions)  # (B, H_kv, S, D)
        key_pos = cache.key_positions(layer)  # (S,), or (H_kv, S) when heads hold different rows (eviction by attention)
        if self.lends:
            self.lent = (k_all, v_all, key_pos, k, v)
        # the layer's own window (Gemma 3: local layers 512, global none) and the lane's
        if key_pos.dim() == 1:
            visible = visibility(positions, key_pos, self.window, cache.mask_window, cache.mask_sinks)  # (T, S)
        else:  # (H_kv, 1, T, S): each KV head's own rows
            visible = torch.stack([visibility(positions, p, self.window, cache.mask_window, cache.mask_sinks) for p in key_pos])
            visible = visible[:, None]
        return k_all, v_all, None if bool(visible.all()) else visible

    def weigh(
        self,
        q: torch.Tensor,
        k_all: torch.Tensor,
        v_all: torch.Tensor,
        visible: torch.Tensor | None,
        scores: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The cache-free part of ``attend``: the heads' outputs (B, T, H*D) over the rows held, and the attention
        weights (B, H_kv, g, T, S), float32. ``scores``: already computed (rows rotated when read)."""
        cfg = self.cfg
        b, _, t, d = q.shape
        h, hkv, g = cfg.n_heads, cfg.n_kv_heads, cfg.group_size
        s = k_all.shape[2]
        if scores is None:  # query heads that share a K/V head are stacked along the row axis: no K/V copies
            qg = q.reshape(b, hkv, g * t, d)  # (B, H_kv, g*T, D); head h reads kv head h // g
            scores = (qg @ k_all.transpose(-1, -2)) * self.scale  # (B, H_kv, g*T, S)
            scores = scores.view(b, hkv, g, t, s)
        if visible is not None:
            scores = scores.masked_fill(~visible, float("-inf"))
        weights = torch.softmax(scores.float(), dim=-1)
        probs = weights.to(q.dtype).view(b, hkv, g * t, s)
        y = (probs @ v_all).view(b, h, t, d)  # (B, H, T, D)
        return y.transpose(1, 2).reshape(b, t, h * d), weights  # (B, T, H*D)

    def weigh_appended(
        self,
        q: torch.Tensor,
        k_held: torch.Tensor,
        v_held: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        visible: torch.Tensor,
    ) -> torch.Tensor:
        """``weigh`` for one sequence (B = 1) over the rows a cache held before this step (``k_held``, ``v_held``:
        (1, H_kv, S, D)) followed by this step's own (``k``, ``v``: (1, H_kv, T, D)), as ``weigh`` reads them once a
        cache appended them, without copying the held rows into one tensor: the scores of both parts side by side, one
        softmax, the weighted sums of both parts added. ``visible``: (T, S + T). The heads' outputs (1, T, H*D); the
        same values as ``weigh`` within float rounding (the last T rows' products are summed apart)."""
        cfg = self.cfg
        _, _, t, d = q.shape
        h, hkv, g = cfg.n_heads, cfg.n_kv_heads, cfg.group_size
        s = k_held.shape[2]
        # one sequence (B = 1), its heads the batch of torch.bmm: the held rows taken as they lie (k_held[0]), where
        # matmul or a reshape would branch on whether they lie contiguous (a buffer just full: one graph more)
        qg = q[0].reshape(hkv, g * t, d)
        scores = torch.cat([torch.bmm(qg, part[0].transpose(1, 2)) for part in (k_held, k)], dim=-1) * self.scale
        scores = scores.view(1, hkv, g, t, s + t).masked_fill(~visible, float("-inf"))
        probs = torch.softmax(scores.float(), dim=-1).to(q.dtype).view(hkv, g * t, s + t)
        y = torch.bmm(probs[..., :s], v_held[0]) + torch.bmm(probs[..., s:], v[0])
        return y.view(1, h, t, d).transpose(1, 2).reshape(1, t, h * d)


class MLP(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.gpt2 = cfg.family == "gpt2"
        self.gelu_gate = cfg.family == "gemma3"  # GeGLU: Gemma gates with tanh GELU where Llama uses SiLU
        if self.gpt2:
            self.fc = Linear(cfg.dim, cfg.hidden_dim)
            self.proj = Linear(cfg.hidden_dim, cfg.dim)
        else:
            self.w_gate = Linear(cfg.dim, cfg.hidden_dim, bias=cfg.mlp_bias)
            self.w_up = Linear(cfg.dim, cfg.hidden_dim, bias=cfg.mlp_bias)
            self.w_down = Linear(cfg.hidden_dim, cfg.dim, bias=cfg.mlp_bias)
        self.fused_gate_up: RowLinear | None = None  # see fuse_gate_up
        self.fused_from: tuple[torch.Tensor, torch.Tensor] | None = None  # the gate's and the up's Parameters it fused

    def fuse_gate_up(self, rows: bool = False) -> None:
        """One matmul for the gate and up projections (``fuse_columns``, as Q/K/V): measured on SmolLM2's
        shapes, 30 layers 24.4 → 23.0 ms."""
        if self.gpt2:
            return
        hold_fused(self, "fused_gate_up", fuse_columns((self.w_gate, self.w_up), rows))
        self.fused_from = (self.w_gate.weight, self.w_up.weight)

    def _gate_up(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        fused, parts = self.fused_gate_up, self.fused_from
        # the fused weight holds only while both projections still are those views: a lane that quantizes its
        # weights replaces the modules, a dtype or device change converts the Parameters in place
        if (
            fused is not None
            and parts is not None
            and getattr(self.w_gate, "weight", None) is parts[0]
            and getattr(self.w_up, "weight", None) is parts[1]
            and parts[0].dtype == fused.weight.dtype
            and parts[0].device == fused.weight.device
        ):
            gate, up = fused(x).split(parts[0].shape[0], dim=-1)
            return gate, up
        return self.w_gate(x), self.w_up(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.gpt2:
            return self.proj(F.gelu(self.fc(x), approximate="tanh"))
        gate, up = self._gate_up(x)
        gate = F.gelu(gate, approximate="tanh") if self.gelu_gate else F.silu(gate)
        return self.w_down(gate * up)


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig, layer: int = 0) -> None:
        super().__init__()
        self.attn_norm = make_norm(cfg)
        mla = cfg.family == "mla"  # DeepSeek-V2/V3's latent attention
        self.attn: Attention | MLAAttention | GatedAttention | GatedDeltaNet | SharedKVAttention
        if cfg.family == "deepseek_v32":  # DeepSeek-V3.2: MLA that reads only the indexer's top-k rows
            self.attn = SparseLatentAttention(cfg, layer, RMSNorm, apply_rope)
        elif cfg.family == "qwen3_next":  # Qwen3-Next: Gated DeltaNet layers, every attention_every-th one attention
            linear = layer in cfg.linear_layers
            self.attn = GatedDeltaNet(cfg, layer) if linear else GatedAttention(cfg, layer, GemmaRMSNorm, apply_rope)
        else:
            self.attn = MLAAttention(cfg, layer, RMSNorm, apply_rope) if mla else Attention(cfg, layer)
        self.mlp_norm = make_norm(cfg)
        self.mlp = MLP(cfg)
        # Gemma 3 normalises each sub-layer's output too, before it joins the residual stream
        sandwich = cfg.family == "gemma3"
        self.post_attn_norm = make_norm(cfg) if sandwich else None
        self.post_mlp_norm = make_norm(cfg) if sandwich else None

    def forward(
        self,
        x: torch.Tensor,
        positions: torch.Tensor,
        cache: Cache | PackedBatch,
        layer: int,
        rope: tuple[torch.Tensor, torch.Tensor] | None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        attn = self.attn
        if type(attn) is Attention and isinstance(cache, Cache) and not (rope is not None and cache.rope_at_read):
            # the common path (one sequence, rows rotated before they are stored): every cache-free op of the layer
            # in two calls around the cache's part (storing the rows, which rows each query sees); a compiled model
            # runs them as one graph between two layers' caches (Transformer.forward, Block.chain)
            q, k, v = self.enter(x, rope)
            k_all, v_all, visible = attn.store(k, v, positions, cache, layer)
            x, weights = self.leave(x, q, k_all, v_all, visible)
            cache.observe_attention(layer, weights)  # a policy that evicts by attention scores
            return x, q, k, v
        a, q, k, v = attn(self.attn_norm(x), positions, cache, layer, rope)
        return self.finish(x, a), q, k, v

    def enter(
        self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor] | None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The attention's input norm and ``Attention.project``: this step's q, k, v (no cache: compilable). The
        class's own ``project`` is called, not an instance's compiled wrapper: compiled, this whole call is one graph."""
        assert isinstance(self.attn, Attention)
        return Attention.project(self.attn, self.attn_norm(x), rope)

    def leave(
        self, x: torch.Tensor, q: torch.Tensor, k_all: torch.Tensor, v_all: torch.Tensor, visible: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The attention over the rows the cache holds (``Attention.weigh``), its output projection, then ``finish``
        (no cache: compilable); returns the layer's output and the attention weights."""
        assert isinstance(self.attn, Attention)
        y, weights = Attention.weigh(self.attn, q, k_all, v_all, visible)
        return Block.finish(self, x, self.attn.wo(y)), weights

    def chain(
        self,
        x: torch.Tensor,
        q: torch.Tensor,
        k_all: torch.Tensor,
        v_all: torch.Tensor,
        visible: torch.Tensor | None,
        following: Block,
        rope: tuple[torch.Tensor, torch.Tensor] | None,
    ) -> tuple[torch.Tensor, torch.Tensor, tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
        """``leave``, then the ``following`` layer's ``enter`` (its q, k, v at ``rope``): what lies between two layers'
        caches, one graph when compiled (``Transformer.forward`` of a compiled model)."""
        x, weights = Block.leave(self, x, q, k_all, v_all, visible)
        return x, weights, Block.enter(following, x, rope)

    def finish(self, x: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        """The residual stream after the attention's output ``a``, then the MLP sub-layer (no cache: compilable)."""
        x = x + (self.post_attn_norm(a) if self.post_attn_norm is not None else a)
        m = self.mlp(self.mlp_norm(x))
        return x + (self.post_mlp_norm(m) if self.post_mlp_norm is not None else m)


class Transformer(nn.Module):
    gguf_path: str | None = None  # the .gguf file it was loaded from (set by kvsim.models.gguf.file), else None
    compiled: bool = False  # its cache-free parts wrapped by torch.compile (kvsim.models.kernels.compiled, --compile)
    one_graph_steps: bool = True  # compiled, a decode step into a plain kv cache runs as one graph (one_graph_fits)
    huge_page_weights: bool = False  # its weight copies of ≥ 2 MiB asked for 2 MiB pages (use_decode_friendly_layout)
    one_row_kernel: str = "torch"  # the kernel its weights are laid out for (use_decode_friendly_layout, row_matmul)
    kernel_choice: KernelChoice | None = None  # how that kernel and page kind were chosen, and why

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.tok_embeddings = nn.Embedding(cfg.vocab_size, cfg.dim)
        self.pos_embeddings = nn.Embedding(cfg.max_seq_len, cfg.dim) if cfg.family == "gpt2" else None
        self.layers = nn.ModuleList(Block(cfg, i) for i in range(cfg.n_layers))
        for i in range(cfg.n_layers):  # cross-layer attention: a borrower reads its group's first layer's K/V
            if cfg.kv_owner(i) != i:
                block, owner = self.layers[i], self.layers[cfg.kv_owner(i)]
                assert isinstance(block, Block) and isinstance(owner, Block) and isinstance(owner.attn, Attention)
                block.attn = SharedKVAttention(cfg, i, owner.attn, make_norm)
        self.norm = make_norm(cfg)
        self.lm_head = Linear(cfg.dim, cfg.vocab_size, bias=False)
        if cfg.tie_embeddings:
            self.lm_head.weight = self.tok_embeddings.weight
        self.rope_tables = RopeTables()  # cos/sin rows by position, computed once

    @property
    def device(self) -> torch.device:
        return self.tok_embeddings.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.tok_embeddings.weight.dtype

    def use_decode_friendly_layout(self) -> Transformer:
        """Fuse each layer's Q/K/V projections into one matmul (and the MLP's gate and up), and store every
        projection in the layout its one-row decode product streams fastest: the model's ``one_row_kernel``
        (``kvsim.models.kernels.kernel_choice``, measured here once) — row-major for numba's kernel, else
        column-major, (in, out) in memory, for numpy's OpenBLAS and torch's MKL (~5-9 % faster than row-major
        there, measured on 2 cores: 1×768 · 768×2304 in 122 µs vs 130 µs; what GPT-2's Conv1D layout gets for
        free). A tied embedding takes the same layout: as the LM head it is the largest matrix of a step (Gemma 3
        270M: 671 of 1,074 MB); MKL streams it at ~21 GB/s column-major against ~12 GB/s row-major (640 × 262,144
        in 31 vs 56 ms); column-major, a lookup reads one strided column per token (7.6 ms for a 512-token
        prompt, 10 µs for a decode step). The kernel (numba's, numpy's BLAS, torch's) and whether the copies go to
        huge pages are measured on the model's own matrices (``kvsim.models.kernels.kernel_choice``: fp32 on the CPU;
        elsewhere torch, and huge pages where the system gives them). Values are unchanged."""
        fp32_cpu = self.device.type == "cpu" and self.dtype == torch.float32
        self.kernel_choice = self._measure_kernel() if fp32_cpu else None
        self.one_row_kernel = self.kernel_choice.kernel if self.kernel_choice is not None else "torch"
        rows = self.one_row_kernel == "numba"
        huge = self.kernel_choice.huge_pages if self.kernel_choice is not None else huge_pages.ENABLED
        self.huge_page_weights = huge and huge_pages.ENABLED and self.device.type == "cpu"
        with huge_pages.using(self.huge_page_weights):
            self._lay_out(rows)
        column = self.one_row_kernel if self.one_row_kernel in ("numpy", "torch") and fp32_cpu else None
        for module in self.modules():  # every product module holds the column-major kernel measured fastest
            if isinstance(module, Linear):
                module.column = column
            for held in vars(module).values():  # the fused Q/K/V and gate+up (hold_fused: not child modules)
                if isinstance(held, RowLinear):
                    held.column = column
        return self

    def _measure_kernel(self) -> KernelChoice:
        head = self.lm_head.weight
        layers = [m.weight for m in self.modules() if isinstance(m, nn.Linear) and m.weight is not head]
        return choosing.choice_for(head, layers, self.weight_bytes())

    def _lay_out(self, rows: bool) -> None:
        fused: set[int] = set()  # the fused matrices' views: already laid out
        for block in self.layers:
            assert isinstance(block, Block)
            block.attn.fuse_qkv(rows)
            block.mlp.fuse_gate_up(rows)
            if isinstance(block.attn, Attention):
                fused |= {id(block.attn.wq.weight), id(block.attn.wk.weight), id(block.attn.wv.weight)}
            if block.mlp.fused_gate_up is not None:
                fused |= {id(block.mlp.w_gate.weight), id(block.mlp.w_up.weight)}
        tied = self.lm_head.weight is self.tok_embeddings.weight
        # bf16 is the other way round for the head: torch's one-row bf16 product reads 640 × 262,144 row-major at
        # 8.0 GB/s, column-major at 5.6 (measured, one thread); so a tied bf16 table stays row-major
        keep_row_major = self.tok_embeddings.weight if tied and self.lm_head.weight.dtype != torch.float32 else None
        if keep_row_major is not None and not keep_row_major.is_contiguous():  # converted from a column-major fp32 table
            self.lm_head.weight = keep_row_major = nn.Parameter(keep_row_major.detach().contiguous(), requires_grad=False)
        for module in self.modules():
            if not isinstance(module, nn.Linear) or module.weight is keep_row_major or id(module.weight) in fused:
                continue
            w = module.weight.detach()
            if rows and (w.is_contiguous() or w.stride(0) == 1):
                module.weight = nn.Parameter(huge_pages.row_major(w), requires_grad=False)
            elif not rows and w.is_contiguous():
                module.weight = nn.Parameter(huge_pages.column_major(w), requires_grad=False)
            if isinstance(module, Linear):  # the module holds the kernel its weight is laid out for
                module.rows = rows
        if tied:
            self.tok_embeddings.weight = self.lm_head.weight

    def one_graph_fits(
        self,
        cache: Cache | PackedBatch,
        ids: torch.Tensor,
        ropes: dict[float, tuple[torch.Tensor, torch.Tensor]],
        last_only: bool | int,
        rows: torch.Tensor | None,
        hidden: bool,
    ) -> bool:
        """Whether a compiled model runs this forward as one graph (``decode_graph``): a one-token decode step of one
        sequence into a plain ``kv`` cache (exactly ``KVCache``: it appends, holds every row on every layer, evicts
        nothing, observes no attention, rotates nothing when read) that already holds rows on every layer, on a model
        whose every layer is the common attention block (``layers_fit_one_graph``, asked when compiled: it sets
        ``one_graph_steps``) with one RoPE base (or none), its last logits asked for.
        Every other forward (a prefill, another lane's cache, a windowed or hybrid model) keeps one graph from each
        layer's cache to the next's."""
        if not self.one_graph_steps or type(cache) is not KVCache or ids.shape != (1, 1):
            return False
        plain: KVCache = cache  # exactly a KVCache (checked above): its own attributes, not the Cache interface's
        if plain.layer_windows is not None:
            return False
        if not last_only or int(last_only) != 1 or rows is not None or hidden or len(ropes) > 1:
            return False
        return plain.fewest_rows > 0

    def layers_fit_one_graph(self) -> bool:
        """Whether every layer is the common attention block, none reading another's K/V (CLA): the model whose
        decode steps ``one_graph_fits`` may take as one graph (``compile_decode`` asks once: the layers do not change)."""
        return self.cfg.kv_share <= 1 and all(isinstance(b, Block) and type(b.attn) is Attention for b in self.layers)

    def _step_in_one_graph(
        self,
        ids: torch.Tensor,
        positions: torch.Tensor,
        cache: Cache,
        ropes: dict[float, tuple[torch.Tensor, torch.Tensor]],
        record: bool,
        layer_hook: LayerHook | None,
    ) -> ForwardOutput:
        """``forward`` of a step ``one_graph_fits``: ``decode_graph`` over the rows the cache holds, then the cache's own
        ``update`` with each layer's new rows (its bookkeeping, counts and bytes as on every other path)."""
        n = self.cfg.n_layers
        held = [cache.held_rows(i) for i in range(n)]
        rope = next(iter(ropes.values())) if ropes else None
        # the token as a (1,) tensor: a (1, 1) slice of a longer sequence has a stride a compiled graph would guard on
        logits, q, k, v = self.decode_graph(
            ids.reshape(1), positions, [h[0] for h in held], [h[1] for h in held], [h[2] for h in held], rope
        )
        for i in range(n):
            cache.update(i, k[i], v[i], positions)
            if layer_hook is not None:
                layer_hook(i + 1, n)
        return ForwardOutput(logits, q, k, v) if record else ForwardOutput(logits)

    def decode_graph(
        self,
        token: torch.Tensor,
        positions: torch.Tensor,
        k_held: list[torch.Tensor],
        v_held: list[torch.Tensor],
        key_held: list[torch.Tensor],
        rope: tuple[torch.Tensor, torch.Tensor] | None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """A whole decode step without touching a cache (``--compile`` compiles it into one graph): the ``token``'s (1,)
        embedding, every layer (``Block.enter``, attention over the layer's held rows ``k_held[i]``, ``v_held[i]`` at
        positions ``key_held[i]`` followed by its own new row, ``Attention.weigh_appended``, then ``Block.finish``) and
        the head. Returns the logits (B, 1, vocab) and the step's q, k, v stacked by layer, as ``forward`` records them
        (the caller appends k and v to the cache). The same ops as the layer-by-layer path, in the same order, but
        the new row's attention product summed apart from the held rows' (``weigh_appended``)."""
        cfg = self.cfg
        x = self.tok_embeddings(token)[None]  # (1, 1, dim)
        if cfg.family == "gemma3":
            x = x * torch.tensor(math.sqrt(cfg.dim), dtype=x.dtype, device=x.device)
        if self.pos_embeddings is not None:
            x = x + self.pos_embeddings(positions)
        qs, ks, vs = [], [], []
        for i, block in enumerate(self.layers):
            assert isinstance(block, Block)
            x, q, k, v = _decode_layer(block, x, k_held[i], v_held[i], key_held[i], positions, rope)
            qs.append(q)
            ks.append(k)
            vs.append(v)
        return Transformer.head(self, x), torch.stack(qs), torch.stack(ks), torch.stack(vs)

    def head(self, x: torch.Tensor) -> torch.Tensor:
        """The final norm and the LM head: (B, T, dim) -> (B, T, vocab) logits."""
        logits = self.lm_head(self.norm(x))
        if self.cfg.final_logit_softcap is not None:  # squashes logits into (-c, c)
            logits = torch.tanh(logits / self.cfg.final_logit_softcap) * self.cfg.final_logit_softcap
        return logits

    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())  # tied weights counted once

    def weight_bytes(self) -> int:
        return sum(p.numel() * p.element_size() for p in self.parameters())

    @torch.no_grad()
    def forward(
        self,
        ids: torch.Tensor,
        positions: torch.Tensor,
        cache: Cache | PackedBatch,
        *,
        record: bool = False,
        last_only: bool | int = False,
        layer_hook: LayerHook | None = None,
        rows: torch.Tensor | None = None,
        hidden: bool = False,
    ) -> ForwardOutput:
        """``hidden``: also return the last layer's output (before the final norm) of every fed position,
        what a learned draft head reads (``kvsim.models.draft_head``)."""
        cfg = self.cfg
        if isinstance(cache, Cache):
            cache.bind_model(self)  # a cache built from the model's own weights (latent:R) factors them
        x = self.tok_embeddings(ids)  # (B, T, dim)
        if cfg.family == "gemma3":  # sqrt(dim), rounded to the weights' dtype first as Gemma does
            x = x * torch.tensor(math.sqrt(cfg.dim), dtype=x.dtype, device=x.device)
        ropes: dict[float, tuple[torch.Tensor, torch.Tensor]] = {}  # one cos/sin table per RoPE base in use
        if self.pos_embeddings is not None:  # GPT-2's learned positions
            x = x + self.pos_embeddings(positions)
        else:
            for theta in {cfg.rope_theta_of(i) for i in range(cfg.n_layers)}:
                ropes[theta] = self.rope_tables(positions, cfg.rope_head_dim, theta, x.dtype)
        if self.compiled and self.one_graph_fits(cache, ids, ropes, last_only, rows, hidden):
            assert isinstance(cache, Cache)
            return self._step_in_one_graph(ids, positions, cache, ropes, record, layer_hook)
        qs, ks, vs = [], [], []
        # compiled, on the common path of every layer: one graph from each layer's cache to the next's (Block.chain)
        chained = self.compiled and isinstance(cache, Cache) and not (ropes and cache.rope_at_read)
        chained = chained and all(isinstance(b, Block) and type(b.attn) is Attention for b in self.layers)
        qkv = None
        for i, block in enumerate(self.layers):
            rope = ropes.get(cfg.rope_theta_of(i)) if ropes else None
            if chained:
                assert isinstance(cache, Cache) and isinstance(block, Block) and isinstance(block.attn, Attention)
                q, k, v = block.enter(x, rope) if qkv is None else qkv
                k_all, v_all, visible = block.attn.store(k, v, positions, cache, i)
                if i + 1 < cfg.n_layers:
                    following = self.layers[i + 1]
                    assert isinstance(following, Block)
                    next_rope = ropes.get(cfg.rope_theta_of(i + 1)) if ropes else None
                    x, weights, qkv = block.chain(x, q, k_all, v_all, visible, following, next_rope)
                else:
                    x, weights = block.leave(x, q, k_all, v_all, visible)
                cache.observe_attention(i, weights)
            else:
                x, q, k, v = block(x, positions, cache, i, rope)
            if record:
                qs.append(q)
                ks.append(k)
                vs.append(v)
            if layer_hook is not None:
                layer_hook(i + 1, cfg.n_layers)
        last_hidden = x if hidden else None
        if last_only:  # True: the last position's logits; an int k: the last k positions' (a speculative check)
            x = x[:, -int(last_only) :, :]
        elif rows is not None:  # the logits of these positions only (the last row of each packed sequence)
            x = x[:, rows, :]
        logits = self.head(x)
        selected = None
        if cfg.family == "deepseek_v32":  # the rows each query read, per layer (the layers keep their last forward's)
            chosen = [block.attn.selected for block in self.layers if isinstance(block.attn, SparseLatentAttention)]
            selected = torch.stack([c for c in chosen if c is not None]) if len(chosen) == cfg.n_layers else None
        if not record:
            return ForwardOutput(logits, hidden=last_hidden, selected=selected)
        return ForwardOutput(logits, torch.stack(qs), torch.stack(ks), torch.stack(vs), last_hidden, selected)


def _same_region(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``torch.compiler.nested_compile_region`` where torch has it (2.8 and later): compiled, each call of ``fn`` is one
    region traced once and reused; eager, ``fn`` itself."""
    mark = getattr(torch.compiler, "nested_compile_region", None)
    return fn if mark is None else mark(fn)


@_same_region
def _decode_layer(
    block: Block,
    x: torch.Tensor,
    k_held: torch.Tensor,
    v_held: torch.Tensor,
    key_held: torch.Tensor,
    positions: torch.Tensor,
    rope: tuple[torch.Tensor, torch.Tensor] | None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """One layer of ``Transformer.decode_graph``: its q, k, v (``Block.enter``), the attention over the held rows and
    its own (``Attention.weigh_appended``), then ``Block.finish``. Returns the layer's output and q, k, v. Compiled, a
    region traced once and reused by every layer of the same shapes (compile time of one layer, not of all)."""
    assert isinstance(block.attn, Attention)
    q, k, v = Block.enter(block, x, rope)
    seen = visibility(positions, torch.cat((key_held, positions)), block.attn.window)  # (T, S + T)
    y = Attention.weigh_appended(block.attn, q, k_held, v_held, k, v, seen)
    # q, k and v are views of one projection: a compiled region returns tensors of their own (a few hundred floats)
    return Block.finish(block, x, block.attn.wo(y)), q.clone(), k.clone(), v.clone()


def init_random(model: Transformer, seed: int) -> Transformer:
    """Seeded random weights. Linear weights ~ N(0, 1/fan_in) so attention is visibly peaked
    (not the near-uniform rows a 0.02 init gives), embeddings ~ N(0, 1), norms at scale 1 (Gemma's
    norms store the offset from 1, so theirs are zeros)."""
    gemma_norms = {id(m.weight) for m in model.modules() if isinstance(m, GemmaRMSNorm)}
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias"):
                p.copy_(torch.randn(p.shape, generator=gen) * 0.02)
            elif "norm" in name:
                p.fill_(0.0 if id(p) in gemma_norms else 1.0)
            elif p.dim() == 2 and "embeddings" not in name:
                p.copy_(torch.randn(p.shape, generator=gen) / math.sqrt(p.shape[1]))
            else:
                p.copy_(torch.randn(p.shape, generator=gen))
    return model
