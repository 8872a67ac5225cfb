"""A layer whose lane columns are not its own K/V rows, in words: a hybrid model's Gated DeltaNet layer (``family=
qwen3_next``: no K/V rows at all, a fixed-size recurrent state instead; its K, q and V tables stay empty) and a CLA
borrower (``cla=S``: it reads its group's first layer's K and V; the tables show those). ``text.title_options`` /
``title_tips`` use these for such a layer."""

from __future__ import annotations

from kvsim.models.config import ModelConfig

from ..i18n import integer, translate


def is_recurrent(cfg: ModelConfig, layer: int) -> bool:
    return layer in getattr(cfg, "linear_layers", ())


def owner_of(cfg: ModelConfig, layer: int) -> int:
    """The layer whose K/V ``layer`` reads (itself unless it borrows)."""
    share = int(getattr(cfg, "kv_share", 1) or 1)
    return layer - layer % share


def state_bytes(cfg: ModelConfig) -> int:
    """One Gated DeltaNet layer's state in bytes (fp32 runs: conv inputs and recurrent matrices at 4 bytes)."""
    conv, rec = cfg.recurrent_state_values()
    return 4 * (conv + rec)


def recurrent_columns(cfg: ModelConfig, layer: int) -> list[list[str]]:
    """Titles of the K, q and V columns of a Gated DeltaNet layer (the most words first)."""
    size = integer(state_bytes(cfg))
    return [
        [
            translate("views.layer_kinds", "layer {layer}: no K/V rows · a fixed state of {size} B").format(
                layer=layer, size=size
            ),
            translate("views.layer_kinds", "fixed state · {size} B").format(size=size),
            translate("views.layer_kinds", "state"),
            "S",
        ],
        [translate("views.layer_kinds", "Gated DeltaNet"), "—", ""],
        [translate("views.layer_kinds", "no V rows"), "—", ""],
    ]


def borrower_columns(cfg: ModelConfig, layer: int, head: int) -> list[list[str]]:
    """Titles of the K, q and V columns of a CLA layer that reads another layer's K/V."""
    owner = owner_of(cfg, layer)
    return [
        [
            translate("views.layer_kinds", "K of layer {owner} (shared, CLA)").format(owner=owner),
            translate("views.layer_kinds", "K of L{owner}").format(owner=owner),
            "K",
        ],
        [translate("views.layer_kinds", "q · head {head}").format(head=head), "q", ""],
        [
            translate("views.layer_kinds", "V of layer {owner} (shared, CLA)").format(owner=owner),
            translate("views.layer_kinds", "V of L{owner}").format(owner=owner),
            "V",
        ],
    ]


def recurrent_tips(cfg: ModelConfig) -> list[str]:
    conv, rec = cfg.recurrent_state_values()
    tip = translate(
        "views.layer_kinds",
        "A Gated DeltaNet layer (linear attention) keeps no K/V rows in the cache: it carries a state of fixed size from token to"
        " token — the short convolution's last inputs ({conv} values) and one dk × dv matrix per value head ({rec}"
        " values) — however long the text grows. Only the attention layers' tables grow.",
    ).format(conv=integer(conv), rec=integer(rec))
    return [tip, tip, tip]


def borrower_tips(cfg: ModelConfig, layer: int) -> list[str]:
    owner = owner_of(cfg, layer)
    tip = translate(
        "views.layer_kinds",
        "Cross-layer KV sharing (CLA): layer {layer} computes no K or V; it reads layer {owner}'s, which alone are"
        " cached. Its own queries meet them.",
    ).format(layer=layer, owner=owner)
    return [tip, tip, tip]
