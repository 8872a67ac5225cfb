"""A GGUF file's own quantized blocks, kept as they are in the file (the ``@gguf`` weights suffix):
each block projection holds the file's bytes and is dequantized for every matmul, where loading a
``.gguf`` otherwise dequantizes everything to float32 once. Block formats (llama.cpp's ``ggml-common.h``):

* ``Q8_0``: 34 bytes per 32 weights — fp16 ``d``, then 32 int8 ``q``; ``w = d · q``.
* ``Q4_0``: 18 bytes per 32 — fp16 ``d``, then 16 bytes of nibbles; ``w = d · (q − 8)``.
* ``Q4_1``: 20 bytes per 32 — fp16 ``d``, fp16 ``m``, then 16 bytes of nibbles; ``w = d · q + m``.

Nibbles: byte ``j`` holds weight ``j`` in its low 4 bits and weight ``j + 16`` in its high 4 bits.
Other types (the K-quants) are dequantized on load as before. ``gguf.quants.dequantize`` is the
reference the tests hold these against.
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
BLOCK_BYTES = {"Q8_0": 34, "Q4_0": 18, "Q4_1": 20}

_TENSORS = {  # GGUF block tensor -> (parent attribute path, child name)
    "attn_q": ("attn", "wq"),
    "attn_k": ("attn", "wk"),
    "attn_v": ("attn", "wv"),
    "attn_output": ("attn", "wo"),
    "ffn_gate": ("mlp", "w_gate"),
    "ffn_up": ("mlp", "w_up"),
    "ffn_down": ("mlp", "w_down"),
}


def dequantize_blocks(raw: torch.Tensor, kind: str, out_features: int, in_features: int) -> torch.Tensor:
    """float32 (out, in) weights of ``raw`` uint8 blocks (out, in/32 · bytes per block)."""
    nb = in_features // BLOCK
    b = raw.view(out_features, nb, BLOCK_BYTES[kind])
    d = b[..., 0:2].contiguous().view(torch.float16).float()  # (out, nb, 1)
    if kind == "Q8_0":
        q = b[..., 2:].contiguous().view(torch.int8).float()
        w = d * q
    else:
        qs = b[..., 4:] if kind == "Q4_1" else b[..., 2:]
        q = torch.cat((qs & 0x0F, qs >> 4), dim=-1).float()  # weights 0..15, then 16..31
        if kind == "Q4_1":
            m = b[..., 2:4].contiguous().view(torch.float16).float()
            w = d * q + m
        else:
            w = d * (q - 8.0)
    return w.reshape(out_features, in_features)


class GGUFBlockLinear(nn.Module):
    """``nn.Linear`` (no bias) over a GGUF tensor's raw blocks, rows in kvsim's order."""

    raw: torch.Tensor

    def __init__(self, raw: np.ndarray, kind: str, out_features: int, in_features: int, dtype: torch.dtype) -> None:
        super().__init__()
        if kind not in BLOCK_BYTES or in_features % BLOCK:
            raise ValueError(f"GGUF {kind} blocks of a {out_features}×{in_features} weight are not kept as is")
        self.kind, self.out_features, self.in_features, self.out_dtype = kind, out_features, in_features, dtype
        self.register_buffer("raw", torch.from_numpy(np.array(raw, dtype=np.uint8, copy=True)))  # off the file map
        self.bias = None

    def dequantized(self) -> torch.Tensor:
        return dequantize_blocks(self.raw, self.kind, self.out_features, self.in_features).to(self.out_dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.dequantized())

    @property
    def stored_bytes(self) -> int:
        return self.raw.numel()


def keep_gguf_blocks(model: M, path: str | Path) -> tuple[M, list[str]]:
    """A copy of ``model`` (loaded from the ``.gguf`` at ``path``) whose block projections hold the file's
    own Q8_0/Q4_0/Q4_1 blocks; every other tensor is shared. Returns the copy and the types kept."""
    import copy

    from .gguf_file import unpermute_qk
    from .gguf_reader import open_gguf

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
