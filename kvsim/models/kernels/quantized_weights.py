"""Weight-only quantization with the codes really stored: a lane runs the same model with its
projection weights held as INT8 or INT4 codes plus scales.

Formats:

* **INT8 as llama.cpp's Q8_0** (``w8``, the default): blocks of 32 consecutive inputs of a row, each an fp16 scale
  ``d = max|x| / 127`` and 32 int8 codes ``roundf(x / d)`` (computed with the float32 ``d``, ties away from zero), 34
  bytes per 32 weights (8.5 bits), as ``quantize_row_q8_0_ref`` writes them (``quantize_q8_0``); held as the blocks
  themselves (``GGUFBlockLinear``), the same bytes a ``.gguf`` file's Q8_0 tensor holds.
* **INT8 per row** (``w8:row``): symmetric, round to nearest (ties to even as ``torch.round``) — row ``r`` of ``W``
  (out × in) has ``s_r = max|W_r| / 127`` (1 where the row is all zeros), codes ``q = clamp(round(W / s_r), -127,
  127)``, one int8 each, one float32 scale per row (8 bits and a little); ``w8:gG`` takes one float32 scale per ``G``
  consecutive inputs of a row instead (``w8:g32``: 9 bits a weight).
* **INT4** (``w4:gG``): one float32 scale per ``G`` consecutive inputs of a row, ``s = max|W_group| / 7`` (1 for an
  all-zero group), codes ``q = clamp(round(W / s), -8, 7)``, stored as ``q + 8`` in 4 bits, two per byte: the even
  input in the low nibble, the odd one in the high nibble.

Dequantized ``W' = q · s``. Every ``nn.Linear`` of the transformer blocks (Q, K, V, output projection, MLP) is
quantized. The LM head — on a tied model the embedding table too, one matrix — is quantized as ``llama-quantize``
types it (``head_kind``; ``llama_tensor_get_type_impl`` and ``tensor_type_fallback`` in llama.cpp's
src/llama-quant.cpp): Q8_0 for an 8-bit lane; Q6_K (``kvsim.models.kernels.q6_k``: 210 bytes per 256 weights,
6.5625 bits) for a 4-bit lane when the head's rows split into Q6_K's super-blocks of 256, else Q8_0, llama.cpp's
fallback for Q6_K (tiny's 192, SmolLM2's 576 and Gemma 3 270M's 640 inputs do not split: their 4-bit lanes' heads are
Q8_0, as llama-quantize would make them). On a small model it is the largest matrix (tiny: 27 % of the weights,
Gemma 3 270M: 62 %), so leaving it in fp32 would leave half the bytes where they were. ``head=False`` (the
``:fphead`` suffix) keeps it as loaded, as weight-only schemes such as GPTQ/AWQ do; an untied model's input embedding
(one row read per token) stays as loaded either way, and so does a head whose width is not a multiple of 32.

The matmul: a one-row float32 CPU product over INT8 codes (any of the three INT8 layouts, and every Q8_0 head)
multiplies the codes where they are stored (``kvsim.models.kernels.int8_matmul``, numba); everything else
dequantizes then multiplies (``F.linear``). ``torch._weight_int8pack_mm`` was measured slower than both on the build
CPU (``benchmarks/weights/weight_kernels.py``; see ``INT8_KERNEL``).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, TypeVar

import torch
import torch.nn.functional as F
from torch import nn

from ..gguf.blocks import BLOCK_BYTES
from . import int8_matmul

if TYPE_CHECKING:
    from ..gguf.blocks import GGUFBlockLinear

M = TypeVar("M", bound=nn.Module)

Q8_0_BLOCK = 32  # weights per Q8_0 block: an fp16 scale, then 32 int8 codes (34 bytes)

Q6_K_BLOCK = 256  # weights per Q6_K super-block (210 bytes)

#: which INT8 per-row matmul a lane uses where the codes kernel (``int8_matmul``) does not serve — prefill, batches,
#: no numba —, by device type: "dequant" (dequantize, then F.linear) or "int8pack" (torch._weight_int8pack_mm).
#: Measured by benchmarks/weights/weight_kernels.py and benchmarks/decode/model_side.py
#: (docs/weights-and-speculation.md): on the 2-core build CPU a SmolLM2-135M decode step took 599 ms with
#: int8pack vs 371 ms dequantizing (fp32: 292 ms), so dequantize-then-matmul; other devices: not measured.
INT8_KERNEL = {"cpu": "dequant"}


def head_kind(bits: int, in_features: int) -> str:
    """The block type ``llama-quantize`` gives the output matrix (a tied embedding with it) of a model whose other
    projections it quantizes to ``bits``: Q8_0 for 8 bits; for 4 bits Q6_K, or Q8_0 when the rows do not split
    into Q6_K's super-blocks of 256 (llama.cpp's ``tensor_type_fallback``: Q6_K → Q8_0)."""
    return "Q6_K" if bits < 8 and in_features % Q6_K_BLOCK == 0 else "Q8_0"


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
        if self.bits == 8 and int8_matmul.usable(x, self.codes):  # the codes multiplied where they are
            scales = self.scales if self.scales.dim() == 2 else self.scales[:, None]
            g = self.in_features // scales.shape[1]
            y = int8_matmul.int8_linear(x, self.codes, scales, self.out_features, g, g)
            return y if self.bias is None else y + self.bias
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


def quantize_model(model: M, bits: int, group: int | None = None, head: bool = True, blocks: str | None = None) -> M:
    """A copy of ``model`` whose block projections hold ``bits``-bit codes — llama.cpp's Q8_0 blocks with
    ``blocks="Q8_0"`` (``w8``), else kvsim's codes and float32 scales per row (``group`` None) or per ``group`` — and,
    with ``head``, whose LM head (a tied embedding with it) holds ``head_kind``'s blocks; every other tensor (norms, an
    untied input embedding) is shared with ``model``, not copied."""
    from ..gguf.blocks import GGUFBlockLinear

    if blocks not in (None, "Q8_0") or (blocks and bits != 8):
        raise ValueError(f"{bits}-bit weights in {blocks} blocks are not a format kvsim stores")
    memo: dict[int, Any] = {id(t): t for t in list(model.parameters()) + list(model.buffers())}
    qmodel = copy.deepcopy(model, memo)
    layers: Any = qmodel.layers  # a Transformer's blocks
    for block in layers:
        block.attn.fused_qkv = None  # the fused full-precision Q/K/V weight is not the quantized one
        for parent in (block.attn, block.mlp):
            for name, child in list(parent.named_children()):
                if isinstance(child, nn.Linear):
                    if blocks == "Q8_0":
                        if child.in_features % Q8_0_BLOCK:
                            raise ValueError(
                                f"{child.in_features} inputs do not split into Q8_0 blocks of {Q8_0_BLOCK} "
                                "(w8:row quantizes them)"
                            )
                        raw = quantize_q8_0(child.weight).cpu().numpy()
                        q8 = GGUFBlockLinear(raw, "Q8_0", child.out_features, child.in_features, child.weight.dtype, child.bias)
                        setattr(parent, name, q8.to(child.weight.device))
                    else:
                        setattr(parent, name, QuantizedLinear(child, bits, group))
    if head:
        lm_head: Any = qmodel.lm_head
        _quantize_head(qmodel, head_kind(bits, int(lm_head.in_features)))
    return qmodel.eval()


def quantized_bytes(model: nn.Module, bits: int, group: int | None = None, head: bool = True, blocks: str | None = None) -> int:
    """The bytes ``quantize_model(model, bits, group, head, blocks)`` adds, by arithmetic on the shapes (nothing is
    quantized): each block projection's codes, scales and copied bias (or its Q8_0 blocks: 34 bytes per 32), and the
    LM head's blocks (``head_kind``: Q8_0's 34 bytes per 32 or Q6_K's 210 per 256)."""
    total = 0
    layers: Any = getattr(model, "layers", ())
    for block in layers:
        for parent in (block.attn, block.mlp):
            for child in parent.children():
                if isinstance(child, nn.Linear):
                    out, inp = child.out_features, child.in_features
                    bias = 0 if child.bias is None else child.bias.numel() * child.bias.element_size()
                    if blocks == "Q8_0":
                        total += out * (inp // Q8_0_BLOCK) * (Q8_0_BLOCK + 2) + bias
                        continue
                    codes = out * inp if bits == 8 else out * -(-inp // 2)
                    scales = out * (1 if group is None else max(1, inp // group)) * 4
                    total += codes + scales + bias
    lm_head: Any = getattr(model, "lm_head", None)
    if head and isinstance(lm_head, nn.Linear) and lm_head.bias is None and not lm_head.in_features % Q8_0_BLOCK:
        kind = head_kind(bits, lm_head.in_features)
        per = Q6_K_BLOCK if kind == "Q6_K" else Q8_0_BLOCK
        total += lm_head.out_features * (lm_head.in_features // per) * BLOCK_BYTES[kind]
    return total


def quantize_q8_0(w: torch.Tensor) -> torch.Tensor:
    """llama.cpp's Q8_0 blocks of a (out, in) matrix, uint8 (out, in / 32 · 34), as ``quantize_row_q8_0_ref``
    writes them: per 32 consecutive inputs ``d = max|x| / 127``, codes ``roundf(x / d)`` (computed with the
    float32 ``d``, ties away from zero), then ``d`` stored as fp16 before its 32 codes."""
    x = w.detach().float().contiguous()
    out, inp = x.shape
    if inp % Q8_0_BLOCK:
        raise ValueError(f"{inp} inputs do not split into Q8_0 blocks of {Q8_0_BLOCK}")
    blocks = x.reshape(out, inp // Q8_0_BLOCK, Q8_0_BLOCK)
    d = blocks.abs().amax(-1, keepdim=True) / 127.0
    inv = torch.where(d > 0, 1.0 / d, torch.zeros_like(d))
    scaled = blocks * inv
    codes = (torch.sign(scaled) * torch.floor(scaled.abs() + 0.5)).to(torch.int8)  # C's roundf
    scale_bytes = d.to(torch.float16).view(torch.uint8)  # (out, nb, 2), little-endian as the file's
    return torch.cat((scale_bytes, codes.view(torch.uint8)), dim=-1).reshape(out, -1).contiguous()


class BlockEmbedding(nn.Module):
    """A tied model's token embeddings read from the LM head's blocks (Q8_0 or Q6_K: one table in memory, as
    llama.cpp's ``token_embd``): a lookup dequantizes only the rows of the tokens asked for."""

    _probe: torch.Tensor

    def __init__(self, head: GGUFBlockLinear, dtype: torch.dtype) -> None:
        super().__init__()
        self.head: GGUFBlockLinear = head  # the GGUFBlockLinear that holds the blocks (counted once: modules() are unique)
        self.embedding_dim = head.in_features
        # what Transformer.device / .dtype read of ``tok_embeddings.weight``: an empty tensor of the table's
        # device and dtype (the table itself is the head's blocks)
        self.register_buffer("_probe", torch.empty(0, dtype=dtype, device=head.raw.device), persistent=False)

    @property
    def weight(self) -> torch.Tensor:
        return self._probe

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        from ..gguf.blocks import dequantize_blocks

        rows = self.head.raw[ids.reshape(-1)]
        table = dequantize_blocks(rows, self.head.kind, rows.shape[0], self.embedding_dim)
        return table.view(*ids.shape, self.embedding_dim).to(self._probe.dtype)


def _quantize_head(qmodel: Any, kind: str) -> None:
    """The LM head as ``kind`` blocks, "Q8_0" or "Q6_K" (and a tied embedding read from them), in place on ``qmodel``."""
    from ..gguf.blocks import GGUFBlockLinear
    from .q6_k import quantize_q6_k

    head = qmodel.lm_head
    if head.bias is not None or head.in_features % Q8_0_BLOCK:
        return  # kept as loaded (the bill says which: weight_bytes' "head")
    tied = head.weight is qmodel.tok_embeddings.weight
    dtype = head.weight.dtype
    if kind == "Q6_K":
        raw = quantize_q6_k(head.weight.detach().float().cpu().numpy())
    else:
        raw = quantize_q8_0(head.weight).cpu().numpy()
    blocks = GGUFBlockLinear(raw, kind, head.out_features, head.in_features, dtype).to(head.weight.device)
    qmodel.lm_head = blocks
    if tied:
        qmodel.tok_embeddings = BlockEmbedding(blocks, dtype)


def head_format(model: nn.Module) -> str:
    """How a model holds its LM head: its blocks' type ("Q8_0", "Q6_K": ``head_kind``) or "as loaded"."""
    head = getattr(model, "lm_head", None)
    return str(head.kind) if head is not None and hasattr(head, "raw") else "as loaded"


def weight_bytes(model: nn.Module) -> dict[str, int]:
    """The bytes a model's weights really occupy: ``quantized`` (codes + scales + their biases),
    ``full`` (every other parameter, tied ones once) and their ``total``."""
    # QuantizedLinear or GGUF blocks (GGUFBlockLinear): both say their own stored_bytes (an int)
    stored: list[Any] = [m for m in model.modules() if isinstance(m, QuantizedLinear) or hasattr(m, "raw")]
    quantized = sum(m.stored_bytes for m in stored)
    inside = {id(p) for m in stored for p in m.parameters()}
    full = sum(p.numel() * p.element_size() for p in model.parameters() if id(p) not in inside)
    return {"quantized": quantized, "full": full, "total": quantized + full}
