"""The words of the model families and options whose cache is not one K/V row per layer and token: their name and
what their cache holds, as templates marked ``QT_TRANSLATE_NOOP("families", …)`` (the app translates them, then fills
them; ``family_words`` fills them in English). Torch-free, so the app's toolbar can read them without the engine."""

from __future__ import annotations

from typing import Any

from ..core.words import QT_TRANSLATE_NOOP

#: qwen3_next (``kvsim.models.attention.hybrid``)
HYBRID = (
    QT_TRANSLATE_NOOP("families", "hybrid linear attention (Qwen3-Next)"),
    QT_TRANSLATE_NOOP(
        "families",
        "{linear} of {layers} layers are Gated DeltaNet, each holding a fixed-size recurrent state; "
        "the rest are attention, with a growing K/V cache",
    ),
)
#: kv_share > 1 (``kvsim.models.attention.cla``)
SHARED = (
    QT_TRANSLATE_NOOP("families", "cross-layer KV sharing (CLA)"),
    QT_TRANSLATE_NOOP(
        "families",
        "groups of {share} layers read the K/V of the group's first layer: only {owners} of {layers} layers cache rows",
    ),
)

#: deepseek_v32 (``kvsim.models.attention.dsa``)
SPARSE = (
    QT_TRANSLATE_NOOP("families", "DeepSeek Sparse Attention (DeepSeek-V3.2)"),
    QT_TRANSLATE_NOOP(
        "families",
        "latent attention whose lightning indexer scores every cached row with its own small keys ({index} values a "
        "token and layer); each query reads only its top {topk} rows: the cache holds every row, a step reads {topk}",
    ),
)


def family_words(config: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(title, explanation, values) templates for a model's config (``ModelConfig.to_dict``); empty for a plain one."""
    out = []
    layers = int(config.get("n_layers", 0))
    if config.get("family") == "qwen3_next":
        every = int(config.get("attention_every") or 1)
        attention = sum(1 for i in range(layers) if (i + 1) % every == 0)
        out.append((*HYBRID, {"linear": layers - attention, "layers": layers}))
    if config.get("family") == "deepseek_v32":
        out.append((*SPARSE, {"index": int(config.get("index_head_dim", 0)), "topk": int(config.get("index_topk", 0))}))
    share = int(config.get("kv_share") or 1)
    if share > 1:
        out.append((*SHARED, {"share": share, "owners": len(range(0, layers, share)), "layers": layers}))
    return out


def described(config: dict[str, Any]) -> list[str]:
    """``family_words`` filled in English: "title: explanation"."""
    return [f"{title}: {text.format(**values)}" for title, text, values in family_words(config)]
