"""What the costs panel says in words, in the app's language: the plots' titles and tooltips, the
sum formulas with their live values, and the table of the figures a lecture quotes (TTFT, ITL, K/V
rows, cache bytes). Pure functions of the session: the panel (``charts.py``) only places them."""

from __future__ import annotations

import textwrap
from html import escape

from PySide6.QtGui import QFont, QFontMetrics

from kvsim.core.units import si
from kvsim.core.words import QT_TRANSLATE_NOOP  # typed str, found by pyside6-lupdate as Qt's

from .. import theme
from ..i18n import local, num, translate
from ..lanes import policy_text

CONTEXT = "views.chart_text"


def si_text(v: float) -> str:
    """An axis figure with k / M / G / T, in the locale's decimals."""
    return local(si(v, ".3g"))


def grouped(n: int) -> str:
    """A whole number grouped by thousands in the locale's separators (12,345 / 12.345)."""
    return local(f"{n:,}")


SHORT_CHARS = 18  # a table column's name at most (the column is as wide as its widest cell)


def short_label(session, lane) -> str:
    """A lane's name in a narrow column, in words where they are short: its label, its title ("sliding
    window"), a weights lane's format ("weights INT8"), its short words ("H2O 8+8", as its header), else its
    spec; never cut. Two lanes that would read
    alike are told apart by their specs."""

    def forms(info) -> list[str]:
        title = policy_text.title(info) if info.title else ""
        short = [policy_text.short_title(info), policy_text.short_words(info)]  # "weights INT8", "H2O 8+8"
        out = [policy_text.lane_label(session, info.index), title, *short, info.name]
        return [f for f in out if f]

    def pick(info) -> str:
        options = forms(info)
        return next((f for f in options if len(f) <= SHORT_CHARS), min(options, key=len))

    chosen = pick(lane)
    if any(pick(other) == chosen for other in session.lanes if other.index != lane.index):
        return lane.name  # twins in words (two windows): their specs differ
    return chosen


def plot_titles() -> tuple[str, ...]:
    """The four plots' titles, short: a title's width is its column's minimum, and four columns share the dock."""
    return (
        translate("views.chart_text", "K/V rows computed, Σ"),
        "FLOPs, Σ",
        translate("views.chart_text", "time per step (ms)"),
        translate("views.chart_text", "cache held (bytes)"),
    )


PLOT_TIPS = (
    QT_TRANSLATE_NOOP(
        "views.chart_text",
        "K/V rows computed so far, summed over the steps. Without a cache step t recomputes all t rows, so\n"
        "the sum grows as Σt = n(n+1)/2 (less the prompt's P(P−1)/2, which the prefill does at once);\n"
        "with a cache each step computes one new row: n rows in all.",
    ),
    QT_TRANSLATE_NOOP(
        "views.chart_text", "floating-point operations so far, summed over the steps (counted from the model's shapes)"
    ),
    QT_TRANSLATE_NOOP(
        "views.chart_text", "measured wall time of each step's forward pass; bars: the fastest and slowest of its repeats"
    ),
    QT_TRANSLATE_NOOP(
        "views.chart_text", "bytes of K and V each lane holds after each step (all layers): a window lane's curve flattens"
    ),
)
STATS_TIP = QT_TRANSLATE_NOOP(
    "views.chart_text",
    "TTFT: time to first token — the measured time of the prefill step (prompt → first token)\n"
    "ITL: inter-token latency — the time per generated token after the first (mean of the decode steps so far)\n"
    "K/V rows: rows of K and V computed so far, summed over the steps\n"
    "cache: bytes of K and V the lane holds now (all layers)\n"
    "× the K/V rows: how many times more rows one lane computed than the other\n"
    "≈ before a lane's ITL: within noise of the first lane's (the 95% interval of their paired per-step ratio includes 1)\n"
    "≈ before a lane's TTFT: within noise of the first lane's (one timing each has no spread; two lanes whose\n"
    "prefill is the same computation differ only by the machine's noise)\n"
    "faster / slower only when the whole interval is below / above 1; otherwise: within noise",
)
#: when an uncached lane's time per token is within noise of a cached one's
FIXED_COST_CAPTION = QT_TRANSLATE_NOOP(
    "views.chart_text",
    "Within noise: at this length a step's fixed cost (reading every weight once) can outweigh the rows the "
    "cache saves, and the machine's noise hides the rest; the saving shows as the text grows.",
)
VERDICT_WORDS = {
    "faster": QT_TRANSLATE_NOOP("views.chart_text", "faster"),
    "slower": QT_TRANSLATE_NOOP("views.chart_text", "slower"),
    "within noise": QT_TRANSLATE_NOOP("views.chart_text", "within noise"),
}


def plot_tip(i: int) -> str:
    return translate(CONTEXT, PLOT_TIPS[i])


def stats_tip() -> str:
    return translate(CONTEXT, STATS_TIP)


def log_scale() -> str:
    return translate("views.chart_text", "log scale")


def formulas(n: int, prompt: int) -> tuple[int, str, str]:
    """Σ over the steps of the rows each step computes without a cache (t = P … n), and its two lines:
    the formula, and the formula with the live values."""
    total = n * (n + 1) // 2 - prompt * (prompt - 1) // 2
    if prompt <= 1:
        return total, "Σt = n(n+1)/2", f"= {n}·{n + 1}/2 = {grouped(total)}"
    return (
        total,
        "Σt = n(n+1)/2 − P(P−1)/2",
        f"= {grouped(n * (n + 1) // 2)} − {grouped(prompt * (prompt - 1) // 2)} = {grouped(total)}",
    )


def rows_label() -> str:
    """The table's K/V rows line (its width sizes the table's first column)."""
    return translate("views.chart_text", "K/V rows")


def stats_width(session, font: QFont) -> int:
    """A table width that fits its widest cells: a label, then per lane the wider of its (bold) header and a value."""
    fm = QFontMetrics(font)
    bold = QFont(font)
    bold.setBold(True)
    # the widest value a cell usually shows: bytes, or a time marked within noise (a time of seconds, "≈1.071,5 ms",
    # widens the table when it comes: CostsPanel._stats)
    value = max(fm.horizontalAdvance("\u00a0888.88 KB"), fm.horizontalAdvance("\u00a0≈888.8 ms"))
    columns = sum(
        max(value, QFontMetrics(bold).horizontalAdvance("\u00a0" + short_label(session, lane))) + 4 for lane in session.lanes
    )
    width = fm.horizontalAdvance(rows_label() + "\u00a0") + columns + 16
    return min(width, 60 * fm.horizontalAdvance("M"))


def ms_or_dash(v: float | None) -> str:
    """A time with its unit, one or two decimals by size; a dash when there is none yet."""
    return "–" if v is None else (f"{num(v, 1)} ms" if v >= 10 else f"{num(v, 2)} ms")


def stats_html(session) -> str:
    """The table of TTFT, ITL, K/V rows and cache bytes per lane at the cursor (and the rows' ratio of two lanes)."""
    s = session
    r = s.record()
    if r is None:
        none = translate("views.chart_text", "no steps yet")
        return f"<span style='color:{theme.MUTED}'>{none}</span>"
    names = [lane.index for lane in s.lanes]
    head = "".join(
        f"<th align=right style='color:{theme.lane_color(lane.index)}'>&nbsp;{escape(short_label(s, lane))}</th>"
        for lane in s.lanes
    )
    rows = {n: s.cumulative(n)[0] for n in names}
    ttft_itl = {n: s.ttft_itl(n) for n in names}
    lines = [
        ("TTFT", [ttft_cell(s, lane, ms_or_dash(ttft_itl[lane.index][0])) for lane in s.lanes]),
        ("ITL", [itl_cell(s, lane, ms_or_dash(ttft_itl[lane.index][1])) for lane in s.lanes]),
        (rows_label(), [grouped(rows[n]) for n in names]),
        ("cache", [local(theme.human_bytes(r.lanes[n].cache_bytes)) for n in names]),
    ]
    body = "".join(
        f"<tr><td style='color:{theme.MUTED}'>{label}</td>" + "".join(f"<td align=right>&nbsp;{v}</td>" for v in values) + "</tr>"
        for label, values in lines
    )
    ratio = ""
    if len(rows) == 2 and min(rows.values()) > 0:
        times = num(max(rows.values()) / min(rows.values()), 1)
        said = translate("views.chart_text", "{ratio}× the K/V rows").format(ratio=times)
        ratio = f"<div style='color:{theme.ACCENT}'>{said}</div>"
    return f"<table cellspacing=0 cellpadding=1><tr><th></th>{head}</tr>{body}</table>{ratio}"


def verdict_words(c) -> str:
    """A comparison's verdict in the app's language: "within noise", or "0.54× faster" / "1.8× slower"
    (faster or slower only when the whole interval lies below or above 1: ``Comparison.verdict``)."""
    said = translate(CONTEXT, VERDICT_WORDS[c.verdict])
    return said if c.verdict == "within noise" else f"{num(c.ratio, 2)}× {said}"


def verdict_lines(session) -> list[tuple[int, str]]:
    """(lane, words) for each lane after the first: its ITL against the first lane's, in words; then the
    caption on the fixed per-step cost when a lane with a cache and one without are within noise (-1). The
    panel says them in full in its tooltip; on screen, beside the check box, the short form ``verdict_html``."""
    lines, caption = [], False
    first = session.lanes[0] if session.lanes else None
    for lane in session.lanes[1:]:
        c = session.itl_compared(lane.index)
        if c is None or not c.pairs:
            continue
        lines.append((lane.index, f"{policy_text.title(lane)} · ITL: {verdict_words(c)}"))
        if c.verdict == "within noise" and not c.same_work and first is not None and first.reuses_past != lane.reuses_past:
            caption = True
    if caption:
        lines.append((-1, translate(CONTEXT, FIXED_COST_CAPTION)))
    return lines


def verdicts_tip(session) -> str:
    """The table's tooltip: what its marks mean, then each lane's verdict in full and the caption (wrapped)."""
    said = [textwrap.fill(words, 100) for _lane, words in verdict_lines(session)]
    return "\n\n".join([stats_tip(), *(["\n".join(said)] if said else [])])


def _noise_marked(session) -> bool:
    """Whether a cell of the table carries "≈" (an ITL or a TTFT within noise of the first lane's)."""
    for lane in session.lanes[1:]:
        for c in (session.itl_compared(lane.index), session.ttft_compared(lane.index)):
            if c is not None and c.pairs and c.verdict == "within noise":
                return True
    return False


def verdict_forms(session) -> list[list[tuple[str, str]]]:
    """What the line beside the check box may say, longest first, as (colour, words) pieces: each lane's ITL
    verdict in its colour ("≈ within noise", "ITL 0.53× faster") with the legend of the table's "≈" when no
    piece says it; then the verdicts without "ITL"; then the legend alone. Empty before a comparison."""
    noise = translate(CONTEXT, VERDICT_WORDS["within noise"])
    legend = (theme.MUTED, f"≈\u00a0{noise}") if _noise_marked(session) else None
    full, short = [], []
    for lane in session.lanes[1:]:
        c = session.itl_compared(lane.index)
        if c is None or not c.pairs:
            continue
        color = theme.lane_color(lane.index)
        if c.verdict == "within noise":
            full.append((color, f"≈\u00a0{noise}"))
            short.append((color, f"≈\u00a0{noise}"))
        else:
            full.append((color, f"ITL {verdict_words(c)}"))
            short.append((color, verdict_words(c)))
    forms = []
    for pieces in (full, short):
        if pieces:
            said = any(words == f"≈\u00a0{noise}" for _color, words in pieces)
            forms.append(pieces + ([legend] if legend is not None and not said else []))
    if legend is not None:
        forms.append([legend])
    return forms


def verdict_html(session, room: float, fm: QFontMetrics) -> str:
    """The longest of ``verdict_forms`` whose words fit ``room`` pixels on one line (nothing when none does:
    the line never wraps, so the table above keeps its height and the dock does not scroll)."""
    for pieces in verdict_forms(session):
        if fm.horizontalAdvance(" · ".join(words for _color, words in pieces)) <= room:
            return " · ".join(f"<span style='color:{color}'>{escape(words)}</span>" for color, words in pieces)
    return ""


def itl_cell(session, lane, shown: str) -> str:
    """A lane's ITL, marked by the engine's paired comparison with the first lane's up to the cursor
    (``Session.itl_compared``): "≈" and muted when within noise of it (the 95% interval of the paired ratio
    includes 1), the accent colour when the interval excludes 1; as it is for the first lane and before a
    decode step. (No extra row or line: the costs dock has no height to spare at 1920×1080.)"""
    c = session.itl_compared(lane.index)
    if c is None or not c.pairs:
        return shown
    if c.verdict == "within noise":
        return f"<span style='color:{theme.MUTED}'>≈{shown}</span>"
    return f"<span style='color:{theme.ACCENT}'>{shown}</span>"


def ttft_cell(session, lane, shown: str) -> str:
    """A lane's TTFT, "≈" and muted when within noise of the first lane's (``Session.ttft_compared``: one
    timing each has no spread, and two prefills of the same work differ only by noise); as it is otherwise."""
    c = session.ttft_compared(lane.index)
    if c is None or not c.pairs or c.verdict != "within noise":
        return shown
    return f"<span style='color:{theme.MUTED}'>≈{shown}</span>"
