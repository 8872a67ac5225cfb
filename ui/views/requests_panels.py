"""Words and panels of the Requests dock: the step's one-line story, a hovered block's details, the
legend, and the "off vs on" tab (the side-by-side table, the waste bars, the block-size trade-off)."""

from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QScrollArea, QVBoxLayout, QWidget

from .. import theme
from .blocks import EVENT_MEANING, request_color
from .requests_numbers import SideBySideTable, WasteBars

MAX_HOVER_CHARS = 240


def _ms(value: float) -> str:
    return f"{value:.2f} ms" if value < 100 else f"{value:.0f} ms"


def tokens_text(ids, token_text: dict[int, str]) -> str:
    """The text of ``ids`` as one line (newlines and tabs made visible)."""
    text = "".join(token_text.get(int(t), f"<{int(t)}>") for t in ids)
    text = text.replace("\n", "↵").replace("\t", "⇥")
    return text if len(text) <= MAX_HOVER_CHARS else text[: MAX_HOVER_CHARS - 1] + "…"


def block_text(snap, block: int, token_text: dict[int, str]) -> str:
    """What hovering physical block ``block`` says."""
    refs = int(snap.ref_counts[block])
    holders = ", ".join(str(o + 1) for o in snap.owners[block]) or "none"
    h = snap.hashes[block]
    how = f"hash {h}" if h is not None else "no hash (not full, or not registered for reuse)"
    state = "free, rows kept for reuse" if refs == 0 and h is not None else "free" if refs == 0 else f"{refs} reference(s)"
    filled = int(snap.filled[block])
    words = f"#{block}: {state} · held by request(s) {holders} · {filled}/{snap.block_size} slots · {how}"
    ids = snap.token_ids[block]
    if ids:
        words += f" · tokens: “{tokens_text(ids, token_text)}”"
    return words


def legend_tooltip() -> str:
    """The event words of the grid, explained."""
    lines = [
        "each cell is one physical block of the pool: its B slots (filled in its holder's colour), its id #b",
        "×N: N requests hold it (shared by prefix caching); the stripes on its left edge are its holders",
        "dashed and dimmed: free, but its rows are kept and can still be found by hash (cached)",
        "L j: the block is logical block j of the request chosen above",
        "",
    ]
    return "\n".join(lines + [f"{word}: {meaning}" for word, meaning in EVENT_MEANING.items()])


def legend_html(colors: list[str]) -> str:
    """One short line (the event words are explained in its tooltip)."""
    swatches = " ".join(f"<span style='color:{c}'>■</span>{i + 1}" for i, c in enumerate(colors))
    parts = [swatches] if colors else []
    parts.append(
        f"<b style='color:{theme.ACCENT}'>×N</b> shared · <span style='color:{theme.ACCENT}'>gold: hit</span> · "
        f"bold: new/written · dashed: cached · <span style='color:{theme.ERROR}'>evict(ed)</span> · L j: logical block"
    )
    return f"<span style='color:{theme.MUTED}'>" + " · ".join(parts) + "</span>"


def step_summary(computed, caching: bool, step: int) -> str:
    """One or two lines of plain words on snapshot ``step`` of the shown run."""
    run = computed.run(caching)
    snap = run.snapshots[step]
    r = run.requests[snap.request]
    color = request_color(snap.request)
    who = f"<b style='color:{color}'>Request {snap.request + 1}</b>"
    size = run.block_size
    if snap.phase == "prefill":
        other = computed.run(not caching).requests[snap.request]
        off, on = (other, r) if caching else (r, other)
        ratio = f" ({on.ttft_ms / off.ttft_ms:.2f}×)" if off.ttft_ms > 0 else ""
        if caching and r.hit_blocks:
            found = (
                f"<span style='color:{theme.ACCENT}'>{r.hit_blocks} block(s) found by hash</span> "
                f"({r.reused_rows} rows reused), {r.prefill_rows} rows computed"
            )
        elif caching:
            found = f"no block found by hash: all {r.prefill_rows} prompt rows computed"
        else:
            found = f"all {r.prefill_rows} prompt rows computed (caching off)"
        text = f"{who} prefill: {found}. TTFT {_ms(on.ttft_ms)} with caching, {_ms(off.ttft_ms)} without{ratio}."
    elif snap.phase == "decode":
        table = snap.table(snap.request)
        pos = table.n_tokens - 1
        j = pos // size
        text = (
            f"{who} decode: the row of token {pos + 1} goes into slot {pos % size + 1} of its logical block {j} "
            f"(physical #{table.blocks[j]})."
        )
    else:
        cached = sum(1 for e in snap.events if e == "cached")
        text = f"{who} finished: its {r.blocks_held} block(s) go back to the free list" + (
            f", {cached} keep their rows for reuse (cached)." if cached else "."
        )
    held = sum(1 for refs in snap.ref_counts if refs > 0)
    pool = (
        f"pool: {held} of {snap.n_blocks} blocks held · {snap.free_blocks} free"
        + (f" ({snap.cached_free_blocks} cached)" if snap.cached_free_blocks else "")
        + (f" · evictions so far {snap.evictions}" if snap.evictions else "")
    )
    events = sorted({e for e in snap.events if e})
    if events:
        pool += " · this step: " + ", ".join(events)
    return f"{text}<br><span style='color:{theme.MUTED}'>{html.escape(pool)}</span>"


class NumbersPanel(QScrollArea):
    """The "off vs on" tab."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWidgetResizable(True)
        body = QWidget()
        lay = QVBoxLayout(body)
        lay.setContentsMargins(4, 4, 4, 4)
        self.caption = QLabel("press Run: each request's numbers, prefix caching off and on, appear here")
        self.caption.setWordWrap(True)
        lay.addWidget(self.caption)
        self.table = SideBySideTable()
        lay.addWidget(self.table)
        self.waste_caption = QLabel()
        self.waste_caption.setWordWrap(True)
        lay.addWidget(self.waste_caption)
        self.bars = WasteBars()
        lay.addWidget(self.bars)
        self.trade_off = QLabel()
        self.trade_off.setWordWrap(True)
        self.trade_off.setTextFormat(Qt.RichText)
        self.trade_off.setToolTip(
            "the paged figure recomputed for the same rows with other block sizes: small blocks waste less of the "
            "last block, but a block is only shared once it is full, and the table has more entries"
        )
        lay.addWidget(self.trade_off)
        self.outputs = QLabel()
        self.outputs.setWordWrap(True)
        self.outputs.setTextFormat(Qt.PlainText)
        lay.addWidget(self.outputs)
        lay.addStretch(1)
        self.setWidget(body)
        self._computed = None
        theme.on_change(self._on_theme)

    def _on_theme(self, _name: str) -> None:
        if self._computed is not None:
            self.set_computed(self._computed)

    def set_computed(self, computed) -> None:
        self._computed = computed
        both = computed.both
        self.caption.setText(
            f"The same {len(both.on.requests)} requests, blocks of {both.on.block_size}, run with prefix caching off and on "
            f"({both.on.schedule}); TTFT is the median of {both.on.repeats} timed prefills, measured on this machine."
        )
        self.table.set_runs(both)
        w = both.on.waste
        self.waste_caption.setText(
            f"Memory for these requests' {w.exact_slots:,} rows held at once (one slot = one token's K and V in every "
            f"layer, {theme.human_bytes(w.bytes_per_slot)}):"
        )
        self.bars.set_waste(w, both.on.prefix_caching)
        chosen = both.on.block_size
        sizes = " · ".join(
            (f"<b>B={b}: {100 * waste:.1f}%</b>" if b == chosen else f"B={b}: {100 * waste:.1f}%")
            for b, waste in computed.paged_waste_by_size
        )
        self.trade_off.setText(f"paged waste of these rows with other block sizes: {sizes}")
        self.outputs.setText(
            "answers (with caching on): " + " | ".join(f"{r.index + 1}: {r.output_text.strip()[:60]}" for r in both.on.requests)
        )
