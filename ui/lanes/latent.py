"""A latent-attention (MLA, ``family=mla``) model's lane columns, in words: its K table is the cached
latent [c | k_R] — one narrow row per token and layer, shared by every head, not K and V per head — its
q the head's query moved into the latent's space (W_UKᵀ q^C | q^R), its V the same latent (each head's
value is W_UV · c, rebuilt when read). ``text.title_options`` / ``title_tips`` use these for an mla model."""

from __future__ import annotations

from ..i18n import translate


def is_latent(cfg) -> bool:
    return getattr(cfg, "family", "") in ("mla", "deepseek_v32")


def title_columns(cfg, layer: int, head: int) -> list[list[str]]:
    """Titles of the K, q and V columns (the most words first), for an mla model."""
    r, dr = cfg.kv_lora_rank, cfg.qk_rope_head_dim
    return [
        [
            translate("views.latent", "latent c | RoPE key · {r} + {dr} dims · all heads").format(r=r, dr=dr),
            translate("views.latent", "latent c | k_R · {r}+{dr}").format(r=r, dr=dr),
            translate("views.latent", "latent"),
            "c",
        ],
        [translate("views.latent", "q in latent space · head {head}").format(head=head), "q", ""],
        [
            translate("views.latent", "V = W_UV · c · layer {layer}").format(layer=layer),
            translate("views.latent", "V from c · L{layer}").format(layer=layer),
            "V",
        ],
    ]


def title_tips(cfg, head: int) -> list[str]:
    """Tooltips of the K, q and V columns, for an mla model."""
    r, dr, d, h = cfg.kv_lora_rank, cfg.qk_rope_head_dim, cfg.head_dim, cfg.n_heads
    return [
        translate(
            "views.latent",
            "The cache of latent attention (MLA): one row per token and layer for all {h} heads — a latent c of {r}"
            " values and a RoPE key k_R of {dr}, {w} in all — instead of K and V of d = {d} per head."
            " Each head's key is [W_UK · c | k_R] and its value W_UV · c, rebuilt when read (absorbed into the query here).",
        ).format(h=h, r=r, dr=dr, w=r + dr, d=d),
        translate(
            "views.latent",
            "q: head {head}'s query moved into the latent's space, [W_UKᵀ · q^C | q^R], so that it reads the"
            " cached latents directly. Q is never cached.",
        ).format(head=head),
        translate(
            "views.latent",
            "V: nothing more is cached for the values — each head's value is W_UV · c from the same latent; the"
            " table shows the latent again.",
        ),
    ]
