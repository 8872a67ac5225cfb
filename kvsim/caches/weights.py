"""The weights suffix of a lane spec: ``kv@w8``, ``kv@w4:g64``, ``int4@w8`` — the same model with
weight-only INT8 or INT4 codes (``kvsim.models.kernels.quantized_weights`` builds it). Only the grammar
lives here, so any cache policy can carry a weight format.

    w8          INT8 as llama.cpp's Q8_0: blocks of 32 inputs, an fp16 scale each (34 bytes per 32, 8.5 bits)
    w8:row      INT8, one float32 scale per output channel (per row of each weight matrix)
    w8:gG       INT8, one float32 scale per G consecutive inputs of each row
    w4[:gG]     INT4, one float32 scale per G consecutive inputs of each row (G = 32 unless given)
                each also stores the LM head (a tied embedding with it) as llama-quantize types it: Q8_0 for
                w8; Q6_K for w4 where its rows split into 256s, else Q8_0 (quantized_weights.head_kind);
    …:fphead    keeps the LM head as loaded instead (kv@w8:fphead), as GPTQ/AWQ do
    gguf        the .gguf file's own Q8_0 / Q4_0 / Q4_1 blocks, kept as they are (kvsim.models.gguf.blocks)
    bf16        every weight rounded to bfloat16, the lane computing in it (kvsim.models.precision)
"""

from __future__ import annotations

from typing import Any

from .base import SpecError

WEIGHT_BITS = (8, 4)
DEFAULT_W4_GROUP = 32
Q8_0_GROUP = 32  # plain w8: llama.cpp's Q8_0 blocks of 32


def parse_weights(text: str) -> dict[str, Any]:
    """``{"bits": 8|4, "group": G or None}`` of a suffix (without the ``@``) — plain ``w8`` adds ``"blocks": "Q8_0"``
    (group 32, fp16 scales), ``w8:row`` is group None (one scale per row) — with ``"fphead": True`` when the LM head
    stays as loaded; ``SpecError`` when bad."""
    parts = [p.strip().lower() for p in text.split(":")]
    head = parts[0]
    if parts == ["gguf"]:
        return {"format": "gguf"}
    if parts == ["bf16"]:
        return {"format": "bf16"}
    if head not in ("w8", "w4"):
        raise SpecError(f"weights suffix @{text} is not w8, w4, gguf or bf16 (e.g. kv@w8, kv@w4:g64, kv@gguf, kv@bf16)")
    bits = int(head[1:])
    group: int | None = DEFAULT_W4_GROUP if bits == 4 else None
    if sum(p.startswith("g") or p == "row" for p in parts[1:]) > 1:  # one grouping at most (kv@w8:g64:g32)
        raise SpecError(f"weights suffix @{text}: one grouping at most (w8:row, w8:gG or w4:gG)")
    fphead = row = False
    for part in parts[1:]:
        if part == "fphead" and not fphead:
            fphead = True
        elif part == "row" and bits == 8:
            row = True
        elif part.startswith("g") and part[1:].isdigit():
            group = int(part[1:])
            if not 2 <= group <= 65536 or group % 2:
                raise SpecError(f"weights suffix @{text}: the group must be an even number from 2 to 65536")
        else:
            raise SpecError(f"weights suffix @{text}: unknown part {part!r} (expected gG, e.g. g64, row (w8 only) or fphead)")
    blocks = {"blocks": "Q8_0", "group": Q8_0_GROUP} if bits == 8 and group is None and not row else {}
    return {"bits": bits, "group": group, **blocks, **({"fphead": True} if fphead else {})}


def weights_label(weights: dict[str, Any] | None) -> str:
    """``w8``, ``w4:g32``: the canonical suffix (empty for full precision)."""
    if not weights:
        return ""
    if weights.get("format") in ("gguf", "bf16"):
        return str(weights["format"])
    if weights.get("blocks") == "Q8_0":
        label = "w8"
    elif weights["bits"] == 8 and not weights.get("group"):
        label = "w8:row"
    else:
        label = f"w{weights['bits']}" + (f":g{weights['group']}" if weights.get("group") else "")
    return label + (":fphead" if weights.get("fphead") else "")
