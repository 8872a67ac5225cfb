"""Weight-only quantization with the codes really stored: a lane runs the same model with its
projection weights held as INT8 or INT4 codes plus scales, dequantized for each matmul.

Formats (symmetric, round to nearest, ties to even as ``torch.round``):

* **INT8** (``w8``): per output channel — row ``r`` of ``W`` (out × in) has ``s_r = max|W_r| / 127``
  (1 where the row is all zeros) and codes ``q = clamp(round(W / s_r), -127, 127)``, one int8 each;
  ``w8:gG`` takes one scale per ``G`` consecutive inputs of a row instead.
* **INT4** (``w4:gG``): one scale per ``G`` consecutive inputs of a row, ``s = max|W_group| / 7``
  (1 for an all-zero group), codes ``q = clamp(round(W / s), -8, 7)``, stored as ``q + 8`` in
  4 bits, two per byte: the even input in the low nibble, the odd one in the high nibble.

Dequantized ``W' = q · s`` (float32 scales). Every ``nn.Linear`` of the transformer blocks (Q, K, V,
output projection, MLP) is quantized; the token embeddings, the final norm and the LM head stay as
loaded (weight-only schemes such as GPTQ/AWQ keep them), which the lane's byte count shows.

The matmul: INT8 per-channel uses ``torch._weight_int8pack_mm`` where that kernel is faster than
dequantize-then-matmul (``benchmarks/weights/weight_kernels.py`` measures both; see ``INT8_KERNEL``), every
other format dequantizes then multiplies.
"""

from __future__ import annotations

import copy
from typing import Any, TypeVar

import torch
import torch.nn.functional as F
from torch import nn

M = TypeVar("M", bound=nn.Module)

#: which INT8 per-channel matmul a lane uses, by device type: "dequant" (dequantize, then F.linear) or
#: "int8pack" (torch._weight_int8pack_mm). Measured by benchmarks/weights/weight_kernels.py and benchmarks/decode/model_side.py
#: (docs/weights-and-speculation.md): on the 2-core build CPU a SmolLM2-135M decode step took 599 ms with
#: int8pack vs 371 ms dequantizing (fp32: 292 ms), so dequantize-then-matmul; other devices: not measured.
INT8_KERNEL = {"cpu": "dequant"}


def quantize_int8(w: torch.Tensor, group: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(codes int8 (out, in), scales float32 (out,) or (out, in/G)) of a weight matrix."""
    w = w.detach().float().contiguous()
    out, inp = w.shape
    g = inp if group is None else group
    if inp % g:
        raise ValueError(f"{inp} inputs do not split into groups of {g}")
    wg = w.reshape(out, inp // g, g)
    amax = wg.abs().amax(-1, keepdim=True)
    scale = torch.where(amax > 0, amax / 127.0, torch.ones_like(amax))
    codes = torch.clamp(torch.round(wg / scale), -127, 127).to(torch.int8).reshape(out, inp)
    scale = scale.squeeze(-1)
    return codes, (scale.squeeze(-1) if group is None else scale)


def quantize_int4(w: torch.Tensor, group: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(packed uint8 (out, in/2), scales float32 (out, in/G)) of a weight matrix."""
    w = w.detach().float().contiguous()
    out, inp = w.shape
    if inp % group or group % 2:
        raise ValueError(f"{inp} inputs do not split into even groups of {group}")
    wg = w.reshape(out, inp // group, group)
    amax = wg.abs().amax(-1, keepdim=True)
    scale = torch.where(amax > 0, amax / 7.0, torch.ones_like(amax))
    q = torch.clamp(torch.round(wg / scale), -8, 7).to(torch.int16).reshape(out, inp) + 8  # 0..15
    packed = (q[:, 0::2] | (q[:, 1::2] << 4)).to(torch.uint8)
    return packed, scale.squeeze(-1)


def unpack_int4(packed: torch.Tensor) -> torch.Tensor:
    """The signed codes (-8..7, int8, (out, in)) of packed nibbles."""
    lo = (packed & 0x0F).to(torch.int8) - 8
    hi = (packed >> 4).to(torch.int8) - 8
    return torch.stack((lo, hi), -1).reshape(packed.shape[0], -1)


class QuantizedLinear(nn.Module):
    """``nn.Linear`` with its weight held as codes + scales (buffers: the bytes really stored)."""

    codes: torch.Tensor
    scales: torch.Tensor

    def __init__(self, linear: nn.Linear, bits: int, group: int | None) -> None:
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.bits, self.group = bits, group
        self.out_dtype = linear.weight.dtype
        if bits == 8:
            codes, scales = quantize_int8(linear.weight, group)
        elif bits == 4:
            if group is None:
                raise ValueError("INT4 weights need a group size")
            codes, scales = quantize_int4(linear.weight, group)
        else:
            raise ValueError(f"{bits}-bit weights are not a format kvsim stores (8 or 4)")
        self.register_buffer("codes", codes)
        self.register_buffer("scales", scales)
        self.bias = None if linear.bias is None else nn.Parameter(linear.bias.detach().clone(), requires_grad=False)
        device = linear.weight.device.type
        self.kernel = "int8pack" if bits == 8 and group is None and INT8_KERNEL.get(device) == "int8pack" else "dequant"

    def dequantized(self) -> torch.Tensor:
        """W' = q · s, (out, in), in the layer's dtype."""
        q = self.codes if self.bits == 8 else unpack_int4(self.codes)
        if self.scales.dim() == 1:
            w = q.float() * self.scales[:, None]
        else:
            g = self.in_features // self.scales.shape[1]
            w = (q.float().view(self.out_features, -1, g) * self.scales[:, :, None]).view(self.out_features, self.in_features)
        return w.to(self.out_dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.kernel == "int8pack":
            shape = x.shape
            y = torch._weight_int8pack_mm(x.reshape(-1, shape[-1]).contiguous(), self.codes, self.scales.to(x.dtype))
            y = y.view(*shape[:-1], self.out_features)
            return y if self.bias is None else y + self.bias
        return F.linear(x, self.dequantized(), self.bias)

    @property
    def stored_bytes(self) -> int:
        """Codes + scales (+ bias): what this layer holds."""
        tensors = [self.codes, self.scales] + ([self.bias] if self.bias is not None else [])
        return sum(t.numel() * t.element_size() for t in tensors)


def quantize_model(model: M, bits: int, group: int | None = None) -> M:
    """A copy of ``model`` whose block projections hold ``bits``-bit codes; every other tensor
    (embeddings, norms, LM head) is shared with ``model``, not copied."""
    memo: dict[int, Any] = {id(t): t for t in list(model.parameters()) + list(model.buffers())}
    qmodel = copy.deepcopy(model, memo)
    blocks: Any = qmodel.layers  # a Transformer's blocks
    for block in blocks:
        block.attn.fused_qkv = None  # the fused full-precision Q/K/V weight is not the quantized one
        for parent in (block.attn, block.mlp):
            for name, child in list(parent.named_children()):
                if isinstance(child, nn.Linear):
                    setattr(parent, name, QuantizedLinear(child, bits, group))
    return qmodel.eval()


def weight_bytes(model: nn.Module) -> dict[str, int]:
    """The bytes a model's weights really occupy: ``quantized`` (codes + scales + their biases),
    ``full`` (every other parameter, tied ones once) and their ``total``."""
    # QuantizedLinear or GGUF blocks (GGUFBlockLinear): both say their own stored_bytes (an int)
    stored: list[Any] = [m for m in model.modules() if isinstance(m, QuantizedLinear) or hasattr(m, "raw")]
    quantized = sum(m.stored_bytes for m in stored)
    inside = {id(p) for m in stored for p in m.parameters()}
    full = sum(p.numel() * p.element_size() for p in model.parameters() if id(p) not in inside)
    return {"quantized": quantized, "full": full, "total": quantized + full}
