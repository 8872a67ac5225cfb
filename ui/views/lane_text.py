"""What a lane's panel says in words, apart from its widgets: the step's progress during the recompute
animation (one count for the readout and the labels), the readout, the column titles (shortened to
fit) and the plain-language tooltips. Pure functions of the records: tests call them directly."""

from __future__ import annotations

from dataclasses import dataclass

from .. import theme

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


READOUT_TIP = (
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
    "• KL: how far this lane's next-token distribution is from the reference's (Kullback–Leibler; 0 = identical)"
)


def readout_html(lane, info, color: str, progress: Progress, narrow: bool, compared: bool, own_differs: bool) -> str:
    """The per-step readout of ``lane`` (a LaneStep) at ``progress``; ``compared``: show |Δlogit| and KL
    against the reference; ``narrow``: the same in fewer words."""
    rows = progress.total
    count = f"{rows}" if progress.finished else f"{progress.done} of {rows}"
    if narrow:
        what = "row" if rows == 1 else "rows"
        count = f"{rows}" if progress.finished else f"{progress.done}/{rows}"
    else:
        what = "K/V rows computed" if progress.finished else "K/V rows computed so far"
    diff = ""
    if lane.recompute_diff is not None:
        diff = f" · {'recomputed' if narrow else 'recomputed vs first'} |Δ| ≤ <b>{lane.recompute_diff:.0e}</b>"
    elif compared:
        diff = f"<br>{'' if narrow else 'vs reference: '}|Δlogit| <b>{lane.logit_diff:.2g}</b> · KL <b>{lane.kl_div:.2g}</b>"
        if own_differs:
            diff += f" · <b style='color:{theme.ERROR}'>own choice differs</b>"
    cache = (
        f"cache <b>{lane.cache_tokens}</b> rows, <b>{theme.human_bytes(lane.cache_bytes)}</b>"
        if lane.cache_tokens
        else "nothing cached"
    )
    return (
        f"{'' if narrow else 'this step: '}<b style='color:{color}'>{count}</b> {what} · "
        f"<b style='color:{color}'>{theme.human_count(lane.flops)}FLOP</b> · <b style='color:{color}'>{lane.wall_ms:.2f} ms</b>"
        f"<br><span style='color:{theme.MUTED}'>{lane.context} keys{'' if narrow else ' read'} · {cache}{diff}</span>"
    )


def recompute_label(progress: Progress) -> str:
    """The words over the swept rows: the same count as the readout's."""
    if progress.finished:
        return f"all {progress.total} rows recomputed"
    return f"{progress.done} of {progress.total} rows recomputed"


def short_forms(text: str) -> list[str]:
    """``text`` and its shorter forms, saying the same (counts kept), longest first."""
    fixed = {"read from cache": ["cached"], "earlier rows not recomputed": ["not recomputed"]}
    if text in fixed:
        return [text, *fixed[text]]
    words = text.split()
    if text.endswith("rows recomputed") and len(words) >= 4:  # "12 of 60 rows recomputed" / "all 60 rows recomputed"
        count = " ".join(words[:-2])
        return [text, f"{count} recomputed", count.replace(" of ", "/")]
    return [text]


def uses_rope(cfg) -> bool:
    """True when keys are rotated by position (every family but GPT-2's learned positions)."""
    return cfg.family != "gpt2"


def title_options(cfg, layer: int, head: int, kv_head: int, error: float | None = None) -> list[list[str]]:
    """Per column (K, q, V, attention): titles from the most to the least words (the first that fits)."""
    d = cfg.head_dim
    k = "K after RoPE" if uses_rope(cfg) else "K"
    columns = [
        [
            f"{k} · kv head {kv_head} · {d} dims",
            f"{k} · kv head {kv_head}",
            f"{k} · kv {kv_head}",
            k,
            "K·RoPE" if k != "K" else k,
        ],
        [f"q · head {head}", "q", ""],
        [f"V · layer {layer}", f"V · L{layer}", "V"],
        [f"attention of head {head} over keys", f"attention · head {head}", "attention"],
    ]
    if error is not None:
        columns[0] = [f"K − exact · kv head {kv_head} · ±{error:.1g}", f"K − exact · ±{error:.1g}", "K − exact", "K"]
        columns[2] = [f"V − exact · layer {layer}", "V − exact", "V"]
    return columns


def title_tips(cfg, head: int, kv_head: int) -> list[str]:
    """Plain-language tooltips of the four columns."""
    rope = (
        " Stored after RoPE: each key is already rotated by its position, so a cached key is used as it is."
        if uses_rope(cfg)
        else " GPT-2 has no RoPE: positions were added to the input as learned embeddings."
    )
    return [
        f"K: the keys this lane holds, one row per token, the {cfg.head_dim} dimensions of kv head {kv_head}.{rope}"
        " Dim rows were read from the cache, bright rows computed this step.",
        f"q: the query rows of head {head} this lane computed this step. Q is never cached: the new token's"
        " query (bright) is what reads the cache — it meets every stored key in q·Kᵀ."
        + (" Also after RoPE." if uses_rope(cfg) else ""),
        f"V: the values of kv head {kv_head}; the attention row weights them and the sum is this head's output.",
        "attention: softmax(q·Kᵀ/√d) of each query row over the keys it could see (colour ∝ √p)."
        " Hatched: masked, a future position. Cross-hatched: not seen by this lane (outside its window, or evicted).",
    ]
