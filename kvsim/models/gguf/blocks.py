"""A GGUF file's own quantized blocks, kept as they are in the file (the ``@gguf`` weights suffix):
each block projection holds the file's bytes and is dequantized for every matmul, where loading a
``.gguf`` otherwise dequantizes everything to float32 once. Block formats (llama.cpp's ``ggml-common.h``):

* ``Q8_0``: 34 bytes per 32 weights — fp16 ``d``, then 32 int8 ``q``; ``w = d · q``.
* ``Q4_0``: 18 bytes per 32 — fp16 ``d``, then 16 bytes of nibbles; ``w = d · (q − 8)``.
* ``Q4_1``: 20 bytes per 32 — fp16 ``d``, fp16 ``m``, then 16 bytes of nibbles; ``w = d · q + m``.
* ``Q5_0``: 22 bytes per 32 — fp16 ``d``, 4 bytes ``qh`` (bit ``j`` = the 5th bit of weight ``j``), 16 bytes
  of nibbles; ``w = d · (q − 16)``. ``Q5_1``: 24 bytes — ``d``, ``m``, ``qh``, nibbles; ``w = d · q + m``.

Nibbles: byte ``j`` holds weight ``j`` in its low 4 bits and weight ``j + 16`` in its high 4 bits.

K-quants: super-blocks of 256 weights in sub-blocks, each sub-block with its own 6- or 8-bit scale:

* ``Q4_K``: 144 bytes per 256 — fp16 ``d``, fp16 ``dmin``, 12 bytes packing 8 six-bit scales ``sc`` and 8
  six-bit mins ``m``, 128 bytes of nibbles (per 64 weights, 32 bytes: low nibbles = the first 32, high
  nibbles = the next 32); weight ``i`` of sub-block ``j``: ``w = (d · sc_j) · q − (dmin · m_j)``.
* ``Q5_K``: 176 bytes — as Q4_K, plus 32 bytes ``qh`` before the nibbles (bit ``j`` of ``qh[l]`` = the 5th
  bit of weight ``l`` of sub-block ``j``).
* ``Q6_K``: 210 bytes per 256 — 128 bytes of low nibbles ``ql``, 64 bytes of high 2-bit pairs ``qh``, 16 int8
  scales, fp16 ``d``; ``w = (d · scale_s) · (q − 32)`` for sub-blocks of 16.

The order of the float operations is ggml's (and ``gguf``'s), so the weights are the same bit for bit;
``gguf.quants.dequantize`` is the reference the tests hold every type against. Types not listed here
are dequantized on load as before. The matmul dequantizes the kept blocks to float and multiplies in
torch (no quantized kernel): the bytes held are the file's, the arithmetic is float's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

M = TypeVar("M", bound=nn.Module)

BLOCK = 32
BLOCK_BYTES = {"Q8_0": 34, "Q4_0": 18, "Q4_1": 20, "Q5_0": 22, "Q5_1": 24, "Q4_K": 144, "Q5_K": 176, "Q6_K": 210}
QK_K = 256  # weights per K-quant super-block
BLOCK_WEIGHTS = {kind: (QK_K if kind.endswith("_K") else BLOCK) for kind in BLOCK_BYTES}

_TENSORS = {  # GGUF block tensor -> (parent attribute path, child name)
    "attn_q": ("attn", "wq"),
    "attn_k": ("attn", "wk"),
    "attn_v": ("attn", "wv"),
    "attn_output": ("attn", "wo"),
    "ffn_gate": ("mlp", "w_gate"),
    "ffn_up": ("mlp", "w_up"),
    "ffn_down": ("mlp", "w_down"),
}


def _f16(b: torch.Tensor) -> torch.Tensor:
    """float32 of little-endian fp16 bytes (..., 2) -> (..., 1)."""
    return b.contiguous().view(torch.float16).float()


def _k_scales(b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Q4_K/Q5_K's 8 six-bit scales and mins from their 12 bytes (..., 12) -> two (..., 8) uint8."""
    s = b.unflatten(-1, (3, 4))
    d, m, md = s[..., 0, :], s[..., 1, :], s[..., 2, :]
    sc = torch.cat((d & 0x3F, (md & 0x0F) | ((d >> 2) & 0x30)), dim=-1)
    mn = torch.cat((m & 0x3F, (md >> 4) | ((m >> 2) & 0x30)), dim=-1)
    return sc, mn


def _nibbles(b: torch.Tensor, run: int) -> torch.Tensor:
    """uint8 nibbles of bytes b (..., n) in runs of ``run`` bytes: each run's low nibbles, then its high
    ones -> (..., n // run * 2, run)."""
    x = b.unflatten(-1, (-1, run))
    return torch.stack((x & 0x0F, x >> 4), dim=-2).flatten(-3, -2)


# uint8 throughout (shifting int32/int64 tensors by a broadcast tensor of shifts measured ~15x slower), and
# codes multiplied by the float scale as they are (one pass: the cast happens inside the multiply)
def _k_quant(b: torch.Tensor, kind: str) -> torch.Tensor:
    """float32 weights of K-quant super-blocks b (out, nb, bytes) -> (out, nb, 256)."""
    o, nb = b.shape[:2]
    if kind == "Q6_K":
        low = _nibbles(b[..., 0:128], 64).reshape(o, nb, 8, 32)
        qh = b[..., 128:192].unflatten(-1, (2, 32))
        high = torch.stack([(qh >> s) & 0x03 for s in (0, 2, 4, 6)], dim=-2).reshape(o, nb, 8, 32)
        q = ((low | (high << 4)).view(torch.int8) - 32).reshape(o, nb, 16, 16)
        sc = b[..., 192:208].contiguous().view(torch.int8).float()  # (o, nb, 16)
        d = (_f16(b[..., 208:210]) * sc).unsqueeze(-1)  # (o, nb, 16, 1)
        return (d * q).reshape(o, nb, QK_K)
    sc, mn = _k_scales(b[..., 4:16])
    d = (_f16(b[..., 0:2]) * sc.float()).unsqueeze(-1)  # (o, nb, 8, 1)
    dm = (_f16(b[..., 2:4]) * mn.float()).unsqueeze(-1)
    if kind == "Q4_K":
        q = _nibbles(b[..., 16:144], 32)
    else:  # Q5_K
        qh = b[..., 16:48]
        high = torch.stack([(qh >> j) & 0x01 for j in range(8)], dim=-2)  # (o, nb, 8, 32): bit j, sub-block j
        q = _nibbles(b[..., 48:176], 32) | (high << 4)
    return (d * q - dm).reshape(o, nb, QK_K)


def _q5(b: torch.Tensor, kind: str) -> torch.Tensor:
    """float32 weights of Q5_0/Q5_1 blocks b (out, nb, bytes) -> (out, nb, 32)."""
    at = 4 if kind == "Q5_1" else 2
    qh = b[..., at : at + 4]  # a little-endian uint32: bit j = weight j's 5th bit
    high = torch.stack([(qh >> j) & 0x01 for j in range(8)], dim=-1).flatten(-2)  # (o, nb, 32)
    qs = b[..., at + 4 :]
    q = torch.cat((qs & 0x0F, qs >> 4), dim=-1) | (high << 4)
    d = _f16(b[..., 0:2])
    if kind == "Q5_1":
        return d * q + _f16(b[..., 2:4])
    return d * (q.view(torch.int8) - 16)


def dequantize_blocks(raw: torch.Tensor, kind: str, out_features: int, in_features: int) -> torch.Tensor:
    """float32 (out, in) weights of ``raw`` uint8 blocks (out, in/block · bytes per block)."""
    nb = in_features // BLOCK_WEIGHTS[kind]
    b = raw.view(out_features, nb, BLOCK_BYTES[kind])
    if kind.endswith("_K"):
        return _k_quant(b, kind).reshape(out_features, in_features)
    if kind in ("Q5_0", "Q5_1"):
        return _q5(b, kind).reshape(out_features, in_features)
    d = _f16(b[..., 0:2])  # (out, nb, 1)
    if kind == "Q8_0":
        w = d * b[..., 2:].contiguous().view(torch.int8)
    else:
        qs = b[..., 4:] if kind == "Q4_1" else b[..., 2:]
        q = torch.cat((qs & 0x0F, qs >> 4), dim=-1)  # weights 0..15, then 16..31
        if kind == "Q4_1":
            m = _f16(b[..., 2:4])
            w = d * q + m
        else:
            w = d * (q.view(torch.int8) - 8)
    return w.reshape(out_features, in_features)


class GGUFBlockLinear(nn.Module):
    """``nn.Linear`` over a GGUF tensor's raw blocks, rows in kvsim's order (a bias, when given, kept as is beside
    them, as llama.cpp keeps a projection's 1-D bias in float32)."""

    raw: torch.Tensor

    def __init__(
        self,
        raw: np.ndarray,
        kind: str,
        out_features: int,
        in_features: int,
        dtype: torch.dtype,
        bias: torch.Tensor | None = None,
    ) -> None:
        super().__init__()
        if kind not in BLOCK_BYTES or in_features % BLOCK_WEIGHTS[kind]:
            raise ValueError(f"GGUF {kind} blocks of a {out_features}×{in_features} weight are not kept as is")
        self.kind, self.out_features, self.in_features, self.out_dtype = kind, out_features, in_features, dtype
        self.register_buffer("raw", torch.from_numpy(np.array(raw, dtype=np.uint8, copy=True)))  # off the file map
        self.bias = None if bias is None else nn.Parameter(bias.detach().clone(), requires_grad=False)

    def dequantized(self) -> torch.Tensor:
        return dequantize_blocks(self.raw, self.kind, self.out_features, self.in_features).to(self.out_dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        from ..kernels import int8_matmul

        if self.kind == "Q8_0" and int8_matmul.usable(x, self.raw):  # one row: the codes multiplied in place
            b = self.raw.view(self.out_features, -1, BLOCK_BYTES["Q8_0"])
            scales = _f16(b[..., 0:2]).squeeze(-1)  # (out, blocks) float32: one per 32 weights, widened per call
            y = int8_matmul.int8_linear(x, self.raw.view(torch.int8), scales, self.out_features, BLOCK, 34, 2)
            return y if self.bias is None else y + self.bias
        return F.linear(x, self.dequantized(), self.bias)

    @property
    def stored_bytes(self) -> int:
        """The blocks' bytes (+ the bias's)."""
        return self.raw.numel() + (0 if self.bias is None else self.bias.numel() * self.bias.element_size())


def keep_gguf_blocks(model: M, path: str | Path) -> tuple[M, list[str]]:
    """A copy of ``model`` (loaded from the ``.gguf`` at ``path``) whose block projections hold the file's
    own blocks (the types of ``BLOCK_BYTES``); every other tensor is shared. Returns the copy and the types kept."""
    import copy

    from .file import unpermute_qk
    from .reader import open_gguf

    memo: dict[int, Any] = {id(t): t for t in list(model.parameters()) + list(model.buffers())}
    qmodel = copy.deepcopy(model, memo)
    cfg: Any = model.cfg
    blocks: Any = qmodel.layers
    reader = open_gguf(Path(path))
    kept: set[str] = set()
    for tensor in reader.tensors:
        parts = tensor.name.split(".")
        if len(parts) != 4 or parts[0] != "blk" or parts[2] not in _TENSORS or tensor.tensor_type.name not in BLOCK_BYTES:
            continue
        out_f, in_f = (int(n) for n in reversed(tensor.shape))
        raw = np.asarray(tensor.data, dtype=np.uint8).reshape(out_f, -1)
        if parts[2] in ("attn_q", "attn_k") and cfg.family != "gemma3":  # llama.cpp permutes Q/K rows
            heads = cfg.n_heads if parts[2] == "attn_q" else cfg.n_kv_heads
            raw = raw[unpermute_qk(np.arange(out_f), heads)]
        block = blocks[int(parts[1])]
        parent_name, child = _TENSORS[parts[2]]
        parent = getattr(block, parent_name)
        old = getattr(parent, child)
        if old.bias is not None:
            continue  # a projection with a bias stays as loaded
        setattr(parent, child, GGUFBlockLinear(raw, tensor.tensor_type.name, out_f, in_f, old.weight.dtype))
        block.attn.fused_qkv = None
        kept.add(tensor.tensor_type.name)
    return qmodel.eval(), sorted(kept)
