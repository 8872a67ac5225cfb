"""The Requests dock's wording: the step's one-line story, a hovered block's details, the legend, a
run's summary, and the "off vs on" tab that shows them (the side-by-side table, the waste bars, the
block-size trade-off). Its strings keep the translation context ``views.requests_panels``."""

from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QScrollArea, QVBoxLayout, QWidget

from kvsim.core.words import QT_TRANSLATE_NOOP  # typed str, found by pyside6-lupdate as Qt's

from ... import theme
from ...i18n import integer, local, num, translate
from .blocks import EVENT_MEANING, EVENT_WORDS, TIERS, event_label, event_meaning, request_color, tier_color, tier_name
from .job import schedule_label
from .numbers import ROW_KEYS, SideBySideTable, WasteBars

MAX_HOVER_CHARS = 240


def ms_text(value: float) -> str:
    """A time with its unit, as a hover line says it."""
    return (num(value, 2) if value < 100 else num(value, 0)) + " ms"


def tokens_text(ids, token_text: dict[int, str]) -> str:
    """The text of ``ids`` as one line (newlines and tabs made visible)."""
    text = "".join(token_text.get(int(t), f"<{int(t)}>") for t in ids)
    text = text.replace("\n", "↵").replace("\t", "⇥")
    return text if len(text) <= MAX_HOVER_CHARS else text[: MAX_HOVER_CHARS - 1] + "…"


def block_text(snap, block: int, token_text: dict[int, str]) -> str:
    """What hovering physical block ``block`` says."""
    refs = int(snap.ref_counts[block])
    holders = ", ".join(str(o + 1) for o in snap.owners[block]) or translate("views.requests_panels", "none")
    h = snap.hashes[block]
    if h is not None:
        how = translate("views.requests_panels", "hash {hash}").format(hash=h)
    else:
        how = translate("views.requests_panels", "no hash (not full, or not registered for reuse)")
    if refs == 0:
        state = (
            translate("views.requests_panels", "free, rows kept for reuse")
            if h is not None
            else translate("views.requests_panels", "free")
        )
    else:
        state = translate("views.requests_panels", "{n} reference(s)").format(n=refs)
    if block == snap.null_block:
        return translate("views.requests_panels", "#{block}: vLLM's null block (reserved, never handed out)").format(block=block)
    queue = snap.free_queue or ()
    if block in queue:
        state += translate("views.requests_panels", ", place {k} of {n} in the free queue").format(
            k=queue.index(block) + 1, n=len(queue)
        )
    words = translate(
        "views.requests_panels", "#{block}: {state} · held by request(s) {holders} · {filled}/{size} slots · {hash}"
    )
    words = words.format(
        block=block, state=state, holders=holders, filled=int(snap.filled[block]), size=snap.block_size, hash=how
    )
    ids = snap.token_ids[block]
    if ids:
        words += translate("views.requests_panels", " · tokens: “{text}”").format(text=tokens_text(ids, token_text))
    return words


def tier_block_text(snap, tier: str, place: int, token_text: dict[int, str]) -> str:
    """What hovering a block an offload tier holds says (``place``: 0 is the next out)."""
    state = snap.tier(tier)
    if state is None or not 0 <= place < len(state.hashes):
        return ""
    words = translate(
        "views.requests_panels",
        "{tier} tier, place {k} of {n} (the next out first) · hash {hash} · its rows were evicted from the device and kept here",
    ).format(tier=tier_name(tier), k=place + 1, n=len(state.hashes), hash=state.hashes[place])
    ids = state.token_ids[place]
    if ids:
        words += translate("views.requests_panels", " · tokens: “{text}”").format(text=tokens_text(ids, token_text))
    return words


def tiers_legend_html() -> str:
    """The tiers' colours in words (a run with offload tiers)."""
    swatches = " ".join(f"<span style='color:{tier_color(t)}'>▬</span> {html.escape(tier_name(t))}" for t in TIERS)
    return translate("views.requests_panels", "{swatches}: where a block's rows are (the band on its top edge)").format(
        swatches=swatches
    )


FREE_QUEUE_SHOWN = 12  # blocks of the free queue a line names (then "… N more")


def free_queue_text(snap) -> str:
    """The free queue in its order, the next block first (empty when the run did not record it)."""
    queue = snap.free_queue
    if queue is None:
        return ""
    if not queue:
        return translate("views.requests_panels", "free queue: empty (the next block must come from a finished request)")
    names = " ".join(f"#{b}" for b in queue[:FREE_QUEUE_SHOWN])
    if len(queue) > FREE_QUEUE_SHOWN:
        names += " " + translate("views.requests_panels", "… {n} more").format(n=len(queue) - FREE_QUEUE_SHOWN)
    return translate("views.requests_panels", "free queue, next first: {blocks} · next block handed out: #{next}").format(
        blocks=names, next=queue[0]
    )


def legend_tooltip() -> str:
    """The event words of the grid, explained."""
    lines = [
        translate(
            "views.requests_panels",
            "each cell is one physical block of the pool: its B slots (filled in its holder's colour), its id #b",
        ),
        translate(
            "views.requests_panels",
            "×N: N requests hold it (shared by prefix caching); the stripes on its left edge are its holders",
        ),
        translate(
            "views.requests_panels", "dashed and dimmed: free, but its rows are kept and can still be found by hash (cached)"
        ),
        translate("views.requests_panels", "L j: the block is logical block j of the request chosen above"),
        translate(
            "views.requests_panels",
            "q k: a free block's place in the free queue, q1 (next) handed out first; the queue's order is the pool's "
            "(vLLM: freed blocks with no hash at the front, cached ones at the back, tail first)",
        ),
        "",
    ]
    return "\n".join(lines + [f"{event_label(word)}: {event_meaning(word)}" for word in EVENT_MEANING])


def legend_html(colors: list[str], tiers: bool = False) -> str:
    """One short line (the event words are explained in its tooltip); with ``tiers``, the tiers' colours too."""
    swatches = " ".join(f"<span style='color:{c}'>■</span>{i + 1}" for i, c in enumerate(colors))
    parts = [swatches] if colors else []
    if tiers:
        parts.append(tiers_legend_html())
    parts.append(
        translate(
            "views.requests_panels",
            "<b style='color:{accent}'>×N</b> shared · <span style='color:{accent}'>gold: hit</span> · "
            "bold: new/written · dashed: cached · <span style='color:{error}'>evict(ed)</span> · L j: logical block",
        ).format(accent=theme.ACCENT, error=theme.ERROR)
    )
    return f"<span style='color:{theme.MUTED}'>" + " · ".join(parts) + "</span>"


def run_summary(computed) -> str:
    """The status line after a run: the model, the requests, the pool and what prefix caching reused."""
    on = computed.both.on
    return translate(
        "views.requests_panels",
        "{model}: {n} requests · B = {b} · pool {pool} blocks · {schedule} · {reused} prompt rows reused "
        "({hits} block hits) · TTFT: median of {repeats}",
    ).format(
        model=computed.model_id,
        n=len(on.requests),
        b=on.block_size,
        pool=integer(on.usable_blocks),
        schedule=schedule_label(on.schedule),
        reused=integer(sum(r.reused_rows for r in on.requests)),
        hits=integer(sum(r.hit_blocks for r in on.requests)),
        repeats=on.repeats,
    )


def step_summary(computed, caching: bool, step: int) -> str:
    """One or two lines of plain words on snapshot ``step`` of the shown run."""
    run = computed.run(caching)
    snap = run.snapshots[step]
    r = run.requests[snap.request]
    color = request_color(snap.request)
    who = translate("views.requests_panels", "<b style='color:{color}'>Request {n}</b>").format(color=color, n=snap.request + 1)
    size = run.block_size
    if snap.phase == "prefill" and getattr(computed, "single", False):  # a saved file of one run: nothing to compare
        text = translate(
            "views.requests_panels", "{who} prefill: {computed} rows computed, {reused} reused ({hits} block hits). TTFT {ttft}."
        ).format(
            who=who, computed=integer(r.prefill_rows), reused=integer(r.reused_rows), hits=r.hit_blocks, ttft=ms_text(r.ttft_ms)
        )
    elif snap.phase == "prefill":
        other = computed.run(not caching).requests[snap.request]
        off, on = (other, r) if caching else (r, other)
        ratio = f" ({num(on.ttft_ms / off.ttft_ms, 2)}×)" if off.ttft_ms > 0 else ""
        if caching and r.hit_blocks:
            found = translate(
                "views.requests_panels",
                "<span style='color:{accent}'>{hits} block(s) found by hash</span> ({reused} rows reused), "
                "{computed} rows computed",
            ).format(accent=theme.ACCENT, hits=r.hit_blocks, reused=integer(r.reused_rows), computed=integer(r.prefill_rows))
        elif caching:
            found = translate("views.requests_panels", "no block found by hash: all {n} prompt rows computed")
            found = found.format(n=integer(r.prefill_rows))
        else:
            found = translate("views.requests_panels", "all {n} prompt rows computed (caching off)")
            found = found.format(n=integer(r.prefill_rows))
        text = translate("views.requests_panels", "{who} prefill: {found}. TTFT {on} with caching, {off} without{ratio}.").format(
            who=who, found=found, on=ms_text(on.ttft_ms), off=ms_text(off.ttft_ms), ratio=ratio
        )
    elif snap.phase == "batch" and step < len(run.batches):
        text = batch_words(run.batches[step])
    elif snap.phase == "decode":
        table = snap.table(snap.request)
        pos = table.n_tokens - 1
        j = pos // size
        text = translate(
            "views.requests_panels",
            "{who} decode: the row of token {token} goes into slot {slot} of its logical block {j} (physical #{b}).",
        ).format(who=who, token=pos + 1, slot=pos % size + 1, j=j, b=table.blocks[j])
    else:
        cached = sum(1 for e in snap.events if e == "cached")
        if cached:
            text = translate(
                "views.requests_panels",
                "{who} finished: its {n} block(s) go back to the free list, {cached} keep their rows for reuse (cached).",
            ).format(who=who, n=r.blocks_held, cached=cached)
        else:
            text = translate("views.requests_panels", "{who} finished: its {n} block(s) go back to the free list.")
            text = text.format(who=who, n=r.blocks_held)
    held = sum(1 for refs in snap.ref_counts if refs > 0)
    usable = snap.usable_blocks  # vLLM's null block is no pool block
    pool = translate("views.requests_panels", "pool: {held} of {n} blocks held · {free} free").format(
        held=held, n=usable, free=snap.free_blocks
    )
    if snap.cached_free_blocks:
        pool += translate("views.requests_panels", " ({n} cached)").format(n=snap.cached_free_blocks)
    if snap.evictions:
        pool += translate("views.requests_panels", " · evictions so far {n}").format(n=snap.evictions)
    events = sorted({e for e in snap.events if e})
    if events:
        words = ", ".join(event_label(EVENT_WORDS.get(e, e)) for e in events)
        pool += translate("views.requests_panels", " · this step: {events}").format(events=words)
    # the free queue in order is the summary's tooltip (dock.py): a third line scrolled the lesson's stage at 853×480;
    # the grid marks each free block's place and the next one
    return f"{text}<br><span style='color:{theme.MUTED}'>{html.escape(pool)}</span>"


BATCH_KIND_WORDS = {
    "prefill": QT_TRANSLATE_NOOP("views.requests_panels", "prefill chunk of {n}"),
    "decode": QT_TRANSLATE_NOOP("views.requests_panels", "decode"),
    "recompute": QT_TRANSLATE_NOOP("views.requests_panels", "recompute of {n}"),
}


def batch_words(batch) -> str:
    """One continuous-batching step in words: who ran in the one forward, as what; who was preempted."""
    parts = []
    for e in batch.entries:
        who = translate("views.requests_panels", "<b style='color:{color}'>request {n}</b>").format(
            color=request_color(e.request), n=e.request + 1
        )
        parts.append(f"{who} {translate('views.requests_panels', BATCH_KIND_WORDS[e.kind]).format(n=e.tokens)}")
    text = translate("views.requests_panels", "Step {s}: one forward over {k} request(s), {t} positions ({ms}): {parts}.").format(
        s=batch.step, k=len(batch.entries), t=batch.tokens, ms=ms_text(batch.ms), parts=", ".join(parts)
    )
    if batch.preempted:
        names = ", ".join(str(r + 1) for r in batch.preempted)
        text += " " + translate(
            "views.requests_panels",
            "<span style='color:{error}'>Preempted: request {names}</span> (its blocks freed; recomputed later).",
        ).format(error=theme.ERROR, names=names)
    if batch.finished:
        names = ", ".join(str(r + 1) for r in batch.finished)
        text += " " + translate("views.requests_panels", "Finished: request {names}.").format(names=names)
    return text


class NumbersPanel(QScrollArea):
    """The "off vs on" tab."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWidgetResizable(True)
        body = QWidget()
        lay = QVBoxLayout(body)
        lay.setContentsMargins(4, 4, 4, 4)
        self.caption = QLabel(
            translate("views.requests_panels", "press Run: each request's numbers, prefix caching off and on, appear here")
        )
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
        self.trade_off.setTextFormat(Qt.TextFormat.RichText)
        self.trade_off.setToolTip(
            translate(
                "views.requests_panels",
                "the paged figure recomputed for the same rows with other block sizes: small blocks waste less of the "
                "last block, but a block is only shared once it is full, and the table has more entries",
            )
        )
        lay.addWidget(self.trade_off)
        self.outputs = QLabel()
        self.outputs.setWordWrap(True)
        self.outputs.setTextFormat(Qt.TextFormat.PlainText)
        lay.addWidget(self.outputs)
        lay.addStretch(1)
        self.setWidget(body)
        self._computed = None
        self._caption = ""  # the caption's sentence (the compact table's ≈ is said after it)
        self.extras = (self.waste_caption, self.bars, self.trade_off, self.outputs)

    def set_staged(self, on: bool) -> None:
        """On the stage: the side-by-side table alone (no spread rows, no allocation schemes; not the rows
        computed with caching off either: always the prompt's length, the row above)."""
        for w in self.extras:
            w.setVisible(not on)
        for key in ("computed_off", "spread_off", "spread_on"):
            self.table.setRowHidden(ROW_KEYS.index(key), on)
        self.table.updateGeometry()
        theme.on_change(self._on_theme)

    def _on_theme(self, _name: str) -> None:
        if self._computed is not None:
            self.set_computed(self._computed)

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        self._fit_table()

    def _fit_table(self) -> None:
        body = self.widget()
        lay = body.layout() if body is not None else None
        margins = lay.contentsMargins() if lay is not None else None
        room = self.viewport().width() - (margins.left() + margins.right() if margins is not None else 0)
        self.table.fit(room)
        if self._computed is not None:  # the ≈ the compact table writes, in words under the caption's sentence
            mark = " " + translate("views.requests_panels", "≈: within noise.") if self.table.compact else ""
            self.caption.setText(self._caption + mark)

    def set_computed(self, computed) -> None:
        self._computed = computed
        both = computed.both
        self._caption = translate(
            "views.requests_panels",
            "The same {n} requests, blocks of {b}, run with prefix caching off and on ({schedule}); TTFT is the "
            "median of {repeats} timed prefills, measured on this machine.",
        ).format(
            n=len(both.on.requests), b=both.on.block_size, schedule=schedule_label(both.on.schedule), repeats=both.on.repeats
        )
        self.caption.setText(self._caption)
        self.table.set_runs(both)
        self._fit_table()
        w = both.on.waste
        self.waste_caption.setText(
            translate(
                "views.requests_panels",
                "Memory for these requests' {rows} rows held at once (one slot = one token's K and V in every layer, {size}):",
            ).format(rows=integer(w.exact_slots), size=local(theme.human_bytes(w.bytes_per_slot)))
        )
        self.bars.set_waste(w, both.on.prefix_caching)
        chosen = both.on.block_size
        sizes = " · ".join(
            (f"<b>B={b}: {num(100 * waste, 1)}%</b>" if b == chosen else f"B={b}: {num(100 * waste, 1)}%")
            for b, waste in computed.paged_waste_by_size
        )
        self.trade_off.setText(
            translate("views.requests_panels", "paged waste of these rows with other block sizes: {sizes}").format(sizes=sizes)
        )
        answers = " | ".join(f"{r.index + 1}: {r.output_text.strip()[:60]}" for r in both.on.requests)
        self.outputs.setText(translate("views.requests_panels", "answers (with caching on): {answers}").format(answers=answers))
