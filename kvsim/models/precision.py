"""``@bf16``: a lane runs the same model with its weights rounded to bfloat16 (the activations, the
K/V rows it caches and its logits follow in bfloat16; norms and softmax keep float32 statistics).

Never a silent change: it is a lane of its own, so the run reports its divergence from the reference
lane (fp32) every step — max |Δlogit|, KL, and the first step whose greedy choice differs.
Offered where the CPU has bfloat16 instructions (AVX512_BF16 or AMX, as oneDNN reports them);
elsewhere torch would emulate them, slower than fp32, so it is refused with a clear message.
"""

from __future__ import annotations

import copy

import torch

from .transformer import Attention, Transformer


def bf16_supported(device: torch.device) -> bool:
    """Whether bfloat16 matmuls run natively here (a GPU, or a CPU oneDNN says has the instructions)."""
    if device.type != "cpu":
        return True
    check = getattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", None)
    return bool(check()) if check is not None else False


def bf16_model(model: Transformer) -> Transformer:
    """A bfloat16 copy of ``model`` (the model itself is untouched), in the same decode-friendly layout."""
    if not bf16_supported(model.device):
        raise ValueError("@bf16 needs a CPU with bfloat16 instructions (AVX512_BF16 or AMX), which this one lacks")
    copied = copy.deepcopy(model)
    attns = [m for m in copied.modules() if isinstance(m, Attention)]
    fused = any(a.fused_qkv is not None for a in attns)
    for attn in attns:
        attn.fused_qkv = None  # rebuilt below from the converted weights
    copied = copied.to(dtype=torch.bfloat16)
    if fused:
        copied.use_decode_friendly_layout()
    return copied
