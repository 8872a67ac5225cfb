"""What a lane's panel says in words, apart from its widgets: the step's progress during the recompute
animation (one count for the readout and the labels), the readout, the column titles (shortened to
fit) and the plain-language tooltips, in the app's language. Pure functions of the records: tests call
them directly."""

from __future__ import annotations

from dataclasses import dataclass

from kvsim.core.words import QT_TRANSLATE_NOOP  # typed str, found by pyside6-lupdate as Qt's

from .. import theme
from ..i18n import fmt, local, num, translate
from . import latent, layer_kinds

SWEEP_END = 0.7  # the recompute sweep runs over t in [0, 0.7]; the new rows fade in over [0.7, 1]


@dataclass(frozen=True)
class Progress:
    """Where frame ``t`` of a step is: rows [comp_lo, sweep_to) recomputed so far, the new rows'
    fade (1 = not yet shown), and how many of the step's ``total`` rows are done."""

    sweep_to: float
    fade_alpha: float
    done: int
    total: int

    @property
    def finished(self) -> bool:
        return self.done >= self.total


def step_progress(t: float, comp_lo: int, new_lo: int, n: int) -> Progress:
    """Frame ``t`` in [0, 1] of a step whose lane computed rows comp_lo..n-1, new_lo..n-1 being new.
    Old rows are swept top to bottom (recomputed), then the new ones appear: the count of rows done
    is the rows swept so far, plus the new rows once they appear — what the pictures show."""
    t = min(max(t, 0.0), 1.0)
    total = n - comp_lo
    if new_lo > comp_lo:  # a recompute: the sweep first, then the new rows
        f = min(1.0, t / SWEEP_END)
        sweep_to = comp_lo + (new_lo - comp_lo) * f
        fade_alpha = 1.0 - max(0.0, (t - SWEEP_END) / (1.0 - SWEEP_END))
        done = int(sweep_to) - comp_lo + (n - new_lo if t >= SWEEP_END else 0)
        return Progress(sweep_to, fade_alpha if t >= SWEEP_END else 1.0, done, total)
    return Progress(float(new_lo), 1.0 - t, total, total)  # only new rows: they fade in, all computed


READOUT_TIP = QT_TRANSLATE_NOOP(
    "views.lane_text",
    "this step — what this lane's forward pass did to produce one token:\n"
    "• K/V rows computed: rows of K and V computed this step (no cache: every row again; "
    "a KV cache: only the new token's)\n"
    "• FLOP: floating-point operations of this step's forward (counted from the model's shapes: "
    "projections, q·Kᵀ, ·V, MLP, LM head)\n"
    "• ms: measured wall time of this step's forward (the median when timed more than once)\n"
    "• keys read: key positions the new token's query attended to\n"
    "• cache rows, bytes: the K and V this lane holds after the step (all layers)\n"
    "• recomputed vs first |Δ|: how far recomputed rows are from their first computation "
    "(0: the past never changes)\n"
    "• |Δlogit|: the largest difference between this lane's next-token scores and the reference lane's\n"
    "• KL: how far this lane's next-token distribution is from the reference's (Kullback–Leibler; 0 = identical)",
)


def readout_tip() -> str:
    """The readout's tooltip in the app's language."""
    return translate("views.lane_text", READOUT_TIP)


def readout_html(lane, info, color: str, progress: Progress, narrow: bool, compared: bool, own_differs: bool) -> str:
    """The per-step readout of ``lane`` (a LaneStep) at ``progress``; ``compared``: show |Δlogit| and KL
    against the reference; ``narrow``: the same in fewer words."""
    rows = progress.total

    def bold(text: str) -> str:
        return f"<b style='color:{color}'>{text}</b>"

    if narrow:
        count = bold(f"{rows}" if progress.finished else f"{progress.done}/{rows}")
        first = (
            translate("views.lane_text", "{count} row") if rows == 1 else translate("views.lane_text", "{count} rows")
        ).format(count=count)
    elif progress.finished:
        first = (
            translate("views.lane_text", "this step: {count} K/V row computed")
            if rows == 1
            else translate("views.lane_text", "this step: {count} K/V rows computed")
        ).format(count=bold(f"{rows}"))
    else:
        of = translate("views.lane_text", "{done} of {total}").format(done=progress.done, total=rows)
        first = translate("views.lane_text", "this step: {count} K/V rows computed so far").format(count=bold(of))
    diff = ""
    if lane.recompute_diff is not None:
        value = f"<b>{fmt(lane.recompute_diff, '.0e')}</b>"
        said = (
            translate("views.lane_text", "recomputed |Δ| ≤ {diff}")
            if narrow
            else translate("views.lane_text", "recomputed vs first |Δ| ≤ {diff}")
        )
        diff = " · " + said.format(diff=value)
    elif compared:
        logit, kl = f"<b>{fmt(lane.logit_diff, '.2g')}</b>", f"<b>{fmt(lane.kl_div, '.2g')}</b>"
        said = (
            "|Δlogit| {logit} · KL {kl}" if narrow else translate("views.lane_text", "vs reference: |Δlogit| {logit} · KL {kl}")
        )
        diff = "<br>" + said.format(logit=logit, kl=kl)
        if own_differs:
            differs = translate("views.lane_text", "own choice differs")
            diff += f" · <b style='color:{theme.ERROR}'>{differs}</b>"
    if not lane.cache_tokens:
        cache = translate("views.lane_text", "nothing cached")
    else:  # narrow: the shorter form a translation may abbreviate
        said = (
            translate("views.lane_text", "cache {rows} rows · {bytes}")
            if narrow
            else translate("views.lane_text", "cache {rows} rows, {bytes}")
        )
        size = nowrap(local(theme.human_bytes(lane.cache_bytes)))
        cache = said.format(rows=f"<b>{lane.cache_tokens}</b>", bytes=f"<b>{size}</b>")
    keys = (translate("views.lane_text", "{n} keys") if narrow else translate("views.lane_text", "{n} keys read")).format(
        n=lane.context
    )
    second = f"{keys} · {cache}{diff}"
    if narrow and lane.recompute_diff is not None:
        second = f"{cache}{diff}"  # it read every key it computed (the first line's count): room for |Δ|
    return (
        f"{first} · {bold(nowrap(local(theme.human_count(lane.flops)) + 'FLOP'))} · {bold(nowrap(num(lane.wall_ms, 2) + ' ms'))}"
        f"<br><span style='color:{theme.MUTED}'>{second}</span>"
    )


def weights_line(meta: dict, index: int) -> str:
    """A weights lane's bytes held, beside the full-precision weights of the run ("weights 2.23 MB ·
    0.26× fp32"): the comparison the lane exists to show; "" for a lane with the weights as loaded."""
    lanes = meta.get("lanes") or []
    if not 0 <= index < len(lanes) or not lanes[index].get("weights"):
        return ""
    held = lanes[index].get("weight_bytes")
    if not isinstance(held, int) or held <= 0:
        return ""
    size = nowrap(local(theme.human_bytes(held)))
    full = [lane.get("weight_bytes") for lane in lanes if not lane.get("weights")]
    full = [b for b in full if isinstance(b, int) and b > 0]
    if not full:
        return translate("views.lane_text", "weights {bytes}").format(bytes=f"<b>{size}</b>")
    dtype = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}.get(str(meta.get("dtype", "")), "")
    ratio = f"<b>{fmt(held / max(full), '.2f')}×</b>"
    said = (
        translate("views.lane_text", "weights {bytes} · {ratio} {dtype}")
        if dtype
        else translate("views.lane_text", "weights {bytes} · {ratio} of the full weights")
    )
    return said.format(bytes=f"<b>{size}</b>", ratio=ratio, dtype=dtype)


def nowrap(quantity: str) -> str:
    """A number and its unit kept on one line of rich text (a narrow readout wrapped "1,320.29 / ms")."""
    return quantity.replace(" ", "&nbsp;")


def recompute_label(progress: Progress) -> str:
    """The words over the swept rows: the same count as the readout's."""
    return recompute_forms(progress)[0]


def recompute_forms(progress: Progress) -> list[str]:
    """The words over the swept rows and their shorter forms (the same count), longest first."""
    n = progress.total
    if progress.finished:
        return [
            translate("views.lane_text", "all {total} rows recomputed").format(total=n),
            translate("views.lane_text", "all {total} recomputed").format(total=n),
            translate("views.lane_text", "all {total}").format(total=n),
        ]
    return [
        translate("views.lane_text", "{done} of {total} rows recomputed").format(done=progress.done, total=n),
        translate("views.lane_text", "{done} of {total} recomputed").format(done=progress.done, total=n),
        f"{progress.done}/{n}",
    ]


def cached_forms() -> list[str]:
    """The words over K/V rows read from the cache, longest first."""
    return [translate("views.lane_text", "read from cache"), translate("views.lane_text", "cached")]


def not_recomputed_forms() -> list[str]:
    """The words over attention rows a cached lane did not compute again, longest first."""
    return [translate("views.lane_text", "earlier rows not recomputed"), translate("views.lane_text", "not recomputed")]


def q_not_cached_forms() -> list[str]:
    """The words said vertically over the empty q rows, longest first."""
    return [translate("views.lane_text", "Q is not cached"), translate("views.lane_text", "not cached")]


def uses_rope(cfg) -> bool:
    """True when keys are rotated by position (every family but GPT-2's learned positions)."""
    return cfg.family != "gpt2"


def title_options(cfg, layer: int, head: int, kv_head: int, error: float | None = None) -> list[list[str]]:
    """Per column (K, q, V, attention): titles from the most to the least words (the first that fits)."""
    d = cfg.head_dim
    k = translate("views.lane_text", "K after RoPE") if uses_rope(cfg) else "K"
    columns = [
        [
            translate("views.lane_text", "{k} · kv head {kv_head} · {d} dims").format(k=k, kv_head=kv_head, d=d),
            translate("views.lane_text", "{k} · kv head {kv_head}").format(k=k, kv_head=kv_head),
            f"{k} · kv {kv_head}",
            k,
            "K·RoPE" if k != "K" else k,
        ],
        [translate("views.lane_text", "q · head {head}").format(head=head), "q", ""],
        [
            translate("views.lane_text", "V · layer {layer}").format(layer=layer),
            translate("views.lane_text", "V · L{layer}").format(layer=layer),
            "V",
        ],
        [
            translate("views.lane_text", "attention of head {head} over keys").format(head=head),
            translate("views.lane_text", "attention · head {head}").format(head=head),
            translate("views.lane_text", "attention"),
            "p",  # the shortest: the attention weights p (the legend's "p 0 … 1")
        ],
    ]
    if error is not None:
        e = fmt(error, ".1g")
        columns[0] = [
            translate("views.lane_text", "K − exact · kv head {kv_head} · ±{error}").format(kv_head=kv_head, error=e),
            translate("views.lane_text", "K − exact · ±{error}").format(error=e),
            translate("views.lane_text", "K − exact"),
            "K",
        ]
        columns[2] = [
            translate("views.lane_text", "V − exact · layer {layer}").format(layer=layer),
            translate("views.lane_text", "V − exact"),
            "V",
        ]
    if latent.is_latent(cfg):  # MLA: the cache is one latent a token and layer, not K and V per head
        columns[:3] = latent.title_columns(cfg, layer, head)
    if layer_kinds.is_recurrent(cfg, layer):  # a hybrid's Gated DeltaNet layer: a fixed state, no rows
        columns[:] = layer_kinds.recurrent_columns(cfg, layer)
    elif layer_kinds.owner_of(cfg, layer) != layer:  # CLA: it reads its group's first layer's K/V
        columns[:3] = layer_kinds.borrower_columns(cfg, layer, head)
    return columns


def title_tips(cfg, head: int, kv_head: int, layer: int = 0) -> list[str]:
    """Plain-language tooltips of the four columns (of ``layer``: a hybrid's or a CLA model's layers differ)."""
    d = cfg.head_dim
    if uses_rope(cfg):
        k = translate(
            "views.lane_text",
            "K: the keys this lane holds, one row per token, the {d} dimensions of kv head {kv_head}."
            " Stored after RoPE: each key is already rotated by its position, so a cached key is used as it is."
            " Dim rows were read from the cache, bright rows computed this step.",
        )
        q = translate(
            "views.lane_text",
            "q: the query rows of head {head} this lane computed this step. Q is never cached: the new token's"
            " query (bright) is what reads the cache — it meets every stored key in q·Kᵀ. Also after RoPE.",
        )
    else:
        k = translate(
            "views.lane_text",
            "K: the keys this lane holds, one row per token, the {d} dimensions of kv head {kv_head}."
            " GPT-2 has no RoPE: positions were added to the input as learned embeddings."
            " Dim rows were read from the cache, bright rows computed this step.",
        )
        q = translate(
            "views.lane_text",
            "q: the query rows of head {head} this lane computed this step. Q is never cached: the new token's"
            " query (bright) is what reads the cache — it meets every stored key in q·Kᵀ.",
        )
    if latent.is_latent(cfg):  # MLA: the cache is one latent a token and layer, not K and V per head
        return [*latent.title_tips(cfg, head), _attention_tip()]
    if layer_kinds.is_recurrent(cfg, layer):
        return [*layer_kinds.recurrent_tips(cfg), layer_kinds.recurrent_tips(cfg)[0]]
    if layer_kinds.owner_of(cfg, layer) != layer:
        return [*layer_kinds.borrower_tips(cfg, layer), _attention_tip()]
    return [
        k.format(d=d, kv_head=kv_head),
        q.format(head=head),
        translate(
            "views.lane_text",
            "V: the values of kv head {kv_head}; the attention row weights them and the sum is this head's output.",
        ).format(kv_head=kv_head),
        _attention_tip(),
    ]


def _attention_tip() -> str:
    return translate(
        "views.lane_text",
        "attention: softmax(q·Kᵀ/√d) of each query row over the keys it could see (colour ∝ √p)."
        " Hatched: masked, a future position. Cross-hatched: not seen by this lane (outside its window, or evicted).",
    )
