"""An EAGLE-style draft head: one decoder layer that reads the target's last hidden state of token t and the
embedding of token t+1, and predicts the target's hidden state of token t+1; the target's own final norm
and LM head turn that into the next token (Li et al., "EAGLE", 2024). It runs autoregressively on its own
predictions to draft several tokens, over its own small KV cache (one layer).

The head is trained for one target (``scripts/train_draft_head.py`` trains tiny's); its file carries a probe
of the target's embedding table, so a head is never run over a model it was not trained on. Row t of the
head (input: h_t and token t+1) sits at position t, in training and here alike.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import nn

from ..caches.base import Cache
from .base import ModelLoadError, resources_dir
from .config import ModelConfig
from .transformer import Block, RopeTables, Transformer

PROBE_ROWS = 8  # embedding rows the head's file keeps to recognise its target
HEAD_FILE = "head.safetensors"


def bundled_heads_dir() -> Path:
    return resources_dir() / "draft_heads"


def head_config(target: ModelConfig) -> ModelConfig:
    """The head's one layer: the target's own layer shape (dim, heads, MLP), one of it."""
    return target.with_(n_layers=1, layer_windows=None) if target.layer_windows else target.with_(n_layers=1)


class DraftHead(nn.Module):
    """``fc`` fuses [embedding(t+1), h_t] into one row; ``block`` is one decoder layer of the target's shape."""

    def __init__(self, target: ModelConfig) -> None:
        super().__init__()
        self.cfg = head_config(target)
        self.fc = nn.Linear(2 * self.cfg.dim, self.cfg.dim, bias=True)
        self.block = Block(self.cfg, 0)
        self.rope_tables = RopeTables()

    def forward(self, hidden: torch.Tensor, next_embedding: torch.Tensor, positions: torch.Tensor, cache: Cache) -> torch.Tensor:
        """hidden (B, T, dim): the target's last hidden states h_t (before its final norm); next_embedding
        (B, T, dim): the target's embeddings of tokens t+1; positions (T,): t. Returns the predicted
        h_{t+1} (B, T, dim); ``cache`` keeps the layer's rows for the next call."""
        x = self.fc(torch.cat([next_embedding, hidden], dim=-1))
        rope = self.rope_tables(positions, self.cfg.rope_head_dim, self.cfg.rope_theta_of(0), x.dtype)
        out, _, _, _ = self.block(x, positions, cache, 0, rope)
        return out


def target_probe(target: Transformer) -> torch.Tensor:
    """The rows of the target's embedding table a head's file keeps to recognise it."""
    return target.tok_embeddings.weight[:PROBE_ROWS].detach().float().contiguous().cpu()


def save_head(head: DraftHead, target: Transformer, path: Path, info: dict[str, str]) -> None:
    """The head's weights (fp32) and the target's probe, one safetensors file; ``info`` goes in its metadata."""
    from safetensors.torch import save_file

    tensors = {name: p.detach().float().contiguous().cpu() for name, p in head.state_dict().items()}
    tensors["target_probe"] = target_probe(target)
    meta = {"config": json.dumps(head.cfg.to_dict()), **info}
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(path), metadata=meta)


def fits(path: Path, target: Transformer) -> bool:
    """Whether the head in ``path`` was trained over ``target`` (same shape, same embedding rows)."""
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        cfg = ModelConfig.from_dict(json.loads(f.metadata()["config"]))
        if (cfg.dim, cfg.vocab_size) != (target.cfg.dim, target.cfg.vocab_size):
            return False
        probe = f.get_tensor("target_probe")
    mine = target_probe(target)
    return probe.shape == mine.shape and bool(torch.allclose(probe, mine, rtol=1e-2, atol=1e-2))


def load_head(path: Path, target: Transformer) -> DraftHead:
    """The head in ``path``, in the target's dtype and on its device."""
    from safetensors.torch import load_file

    tensors = load_file(str(path))
    tensors.pop("target_probe", None)
    head = DraftHead(target.cfg)
    missing, unexpected = head.load_state_dict(tensors, strict=False)
    if missing or unexpected:
        raise ModelLoadError(f"{path}: not a draft head for this model (missing {missing}, unexpected {unexpected})")
    return head.to(device=target.device, dtype=target.dtype).eval()


def find_head(target: Transformer) -> DraftHead:
    """The bundled head trained over ``target``; ``ModelLoadError`` when kvsim ships none for it."""
    root = bundled_heads_dir()
    for path in sorted(root.glob(f"*/{HEAD_FILE}")) if root.is_dir() else []:
        if fits(path, target):
            return load_head(path, target)
    raise ModelLoadError(
        "kvsim ships a trained draft head for the bundled model tiny only "
        "(scripts/train_draft_head.py trains one); use spec:K:lookup or spec:K:early:N here"
    )
