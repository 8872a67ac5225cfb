"""The memory dock's check against the run: each lane's real cache bytes beside the formula's value
for that lane's settings (its window, its bits, the run's model and dtype), at the cursor's step.

The formula for a lane comes from ``kvsim.costs.memory.lane_bill`` (engine-side: which policy keeps what);
the live bytes are what the lane's cache reported after that step (``LaneStep.cache_bytes``).
"""

from __future__ import annotations

from html import escape

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGridLayout, QLabel, QVBoxLayout, QWidget

from kvsim.costs.memory import LaneBill, human_bytes, lane_bill, model_facts

from ... import theme
from ...i18n import integer, local, translate
from ...lanes import policy_text


def lane_bills(session, step: int | None = None) -> list[tuple[int, int, LaneBill | None]]:
    """(lane index, live bytes, the formula's bill) for every lane after ``step`` (the cursor's by default)."""
    run = session.run
    step = session.cursor if step is None else step
    if run is None or session.record(step) is None:
        return []
    cfg, meta = run.config, run.meta
    lanes_meta = meta.get("lanes", [])
    tokens = session.n_rows(step)
    out = []
    for lane in session.lanes:
        ls = session.lane_step(lane.index, step)
        lane_meta = lanes_meta[lane.index] if lane.index < len(lanes_meta) else {"name": lane.name, "policy": lane.name}
        bill = lane_bill(
            lane_meta,
            cfg.n_layers,
            cfg.n_kv_heads,
            cfg.head_dim,
            tokens,
            ls.kv_positions,
            str(meta.get("dtype", "float32")),
            held_tokens=int(ls.cache_tokens),
            prompt_tokens=len(meta.get("prompt_ids") or ()) or None,
            layer_windows=tuple(cfg.window_of(i) for i in range(cfg.n_layers)),
            # an mla model's latent, a sparse-attention model's indexer keys, a hybrid's states, CLA's owners
            **model_facts(cfg),
        )
        out.append((lane.index, int(ls.cache_bytes), bill))
    return out


def _signed(n: int) -> str:
    """``+1,234`` / ``-56``: a difference of bytes, grouped in the locale's way."""
    return ("+" if n >= 0 else "-") + integer(abs(n))


def verdict(live: int, bill: LaneBill | None) -> tuple[str, bool | None]:
    """Plain words on one lane: (text, True when the formula accounts for every byte, None when unknown)."""
    if bill is None:
        return translate(
            "views.memory_live", "no closed form for this policy (a plug-in): the live bytes are its own count"
        ), None
    if bill.expected_bytes != live:
        diff = live - bill.expected_bytes
        return translate("views.memory_live", "✗ live differs from the formula by {diff} B").format(diff=_signed(diff)), False
    if bill.expected_bytes == bill.formula_bytes:
        return agreed(), True
    extra = live - bill.formula_bytes
    return translate("views.memory_live", "live = formula {extra} B ✓ — {why}").format(
        extra=_signed(extra), why=policy_text.why(bill)
    ), True


def agreed() -> str:
    """The verdict of a lane whose bytes the formula gives exactly."""
    return translate("views.memory_live", "formula = live ✓")


class LiveBill(QWidget):
    """A small table: lane | live bytes | formula | verdict, and one line saying whether they agree."""

    def __init__(self, session, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.title = QLabel()
        self.title.setWordWrap(True)
        self.title.setToolTip(
            translate(
                "views.memory_live",
                "What each lane of the run on screen really holds after the step under the cursor, next to what\n"
                "the formula says it should hold with that lane's own settings (window, bits) and the model's shape.",
            )
        )
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.summary.setObjectName("memoryVerdict")
        self.grid = QGridLayout()
        self.grid.setHorizontalSpacing(10)
        self.grid.setVerticalSpacing(2)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.title)
        lay.addWidget(self.summary)
        lay.addLayout(self.grid)
        self._cells: list[QLabel] = []
        self.rows: list[tuple[str, int, int | None, str]] = []  # (lane, live, formula value, verdict): for tests

    def refresh(self) -> None:
        for cell in self._cells:
            self.grid.removeWidget(cell)
            cell.deleteLater()
        self._cells, self.rows = [], []
        s = self.session
        bills = lane_bills(s)
        if not bills:
            self.title.setText(
                translate(
                    "views.memory_live", "<b>This run</b>: no step yet — step once to compare the formula with the real cache."
                )
            )
            self.summary.setText("")
            return
        cfg = s.config
        dtype = str(s.run.meta.get("dtype", "float32"))
        n = s.n_rows()
        mla = cfg.latent  # a latent cache: one latent and one RoPE key a token and layer, not K/V heads
        self.title.setText(
            (
                translate(
                    "views.memory_live",
                    "<b>The run on screen</b>, step {step}: n = {n} tokens, {dtype} "
                    "({layers} layers × one latent of {latent} + a RoPE key of {rope}, shared by every head)",
                )
                if mla
                else translate(
                    "views.memory_live",
                    "<b>The run on screen</b>, step {step}: n = {n} tokens, {dtype} "
                    "({layers} layers × {kv_heads} K/V heads × d {head_dim})",
                )
            ).format(
                latent=cfg.kv_lora_rank,
                rope=cfg.qk_rope_head_dim,
                step=s.cursor,
                n=integer(n),
                dtype=escape(dtype),
                layers=cfg.n_layers,
                kv_heads=cfg.n_kv_heads,
                head_dim=cfg.head_dim,
            )
        )
        header = (
            translate("views.memory_live", "lane"),
            translate("views.memory_live", "live"),
            translate("views.memory_live", "formula"),
            "",
        )
        tips = (
            translate("views.memory_live", "The lane (a cache policy) of the run on screen."),
            translate(
                "views.memory_live",
                "Bytes the lane's cache really holds after this step, as it reported them (K/V values, and any scales).",
            ),
            translate(
                "views.memory_live", "2 · L · H_kv · d · min(n, W) · b · bits/8 with this lane's window W and bits (b = 1)."
            ),
            translate("views.memory_live", "✓: the formula accounts for every byte the lane holds."),
        )
        for col, (text, tip) in enumerate(zip(header, tips, strict=True)):
            self._cell(f"<span style='color:{theme.MUTED}'>{text}</span>", 0, col, tip)
        agree = known = 0
        for i, (index, live, bill) in enumerate(bills):
            row = 2 * i + 1
            label = policy_text.lane_label(s, index)
            color = theme.lane_color(index)
            words, ok = verdict(live, bill)
            known += ok is not None
            agree += ok is True
            formula = bill.formula_bytes if bill is not None else None
            self.rows.append((s.lanes[index].name, live, formula, words))
            self._cell(  # wraps: a long lane name ("sinks de atenção + janela") never widens the table past its room
                f"<span style='color:{color}'>■</span> {escape(label)}",
                row,
                0,
                policy_text.explanation(s.lanes[index]),
                wrap=True,
            )
            holds = translate("views.memory_live", "{size}: what {lane} holds after step {step}").format(
                size=local(human_bytes(live)), lane=label, step=s.cursor
            )
            self._cell(f"{integer(live)} B", row, 1, holds, Qt.AlignmentFlag.AlignRight)
            ftip = translate("views.memory_live", "no formula known for this policy")
            if bill is not None:
                w = f"min(n, {bill.window})" if bill.window else "n"
                product = f"2 × {cfg.n_layers} × {cfg.n_kv_heads} × {cfg.head_dim} × {w} × 1 × {bill.bits}/8"
                if cfg.latent:  # one latent (r) and one RoPE key (d_R) a token and layer, no factor 2
                    product = f"{cfg.n_layers} × ({cfg.kv_lora_rank} + {cfg.qk_rope_head_dim}) × {w} × {bill.bits}/8"
                ftip = translate("views.memory_live", "{product} = {bytes} B ({size}) at {bits} bits").format(
                    product=product,
                    bytes=integer(bill.formula_bytes),
                    size=local(human_bytes(bill.formula_bytes)),
                    bits=bill.bits,
                )
            self._cell("-" if formula is None else f"{integer(formula)} B", row, 2, ftip, Qt.AlignmentFlag.AlignRight)
            tone = theme.ERROR if ok is False else theme.TEXT if ok else theme.MUTED
            mark = "✓" if ok else "✗" if ok is False else "?"
            self._cell(f"<span style='color:{tone}'><b>{mark}</b></span>", row, 3, words, Qt.AlignmentFlag.AlignCenter)
            if words != agreed():  # the why, on its own line under the lane
                self._cell(
                    f"<span style='color:{tone}; font-size:10pt'>{escape(words)}</span>", row + 1, 0, words, wrap=True, span=4
                )
        self.grid.setColumnStretch(0, 1)
        if agree == known:
            text = (
                translate("views.memory_live", "<b>formula = live ✓</b> for the one lane the formula knows")
                if known == 1
                else translate("views.memory_live", "<b>formula = live ✓</b> for all {n} lanes the formula knows").format(n=known)
            )
            plugins = len(bills) - known
            if plugins == 1:
                text += translate("views.memory_live", " (1 plug-in lane without one)")
            elif plugins > 1:
                text += translate("views.memory_live", " ({n} plug-in lanes without one)").format(n=plugins)
            self.summary.setText(text)
        else:
            differ = translate("views.memory_live", "✗ {n} lane(s) hold other bytes than the formula").format(n=known - agree)
            self.summary.setText(f"<b style='color:{theme.ERROR}'>{differ}</b>")

    def _cell(
        self, html: str, row: int, col: int, tip: str, align=Qt.AlignmentFlag.AlignLeft, wrap: bool = False, span: int = 1
    ) -> None:
        cell = QLabel(html)
        cell.setToolTip(tip)
        cell.setWordWrap(wrap)
        cell.setAlignment(align | Qt.AlignmentFlag.AlignVCenter)
        self.grid.addWidget(cell, row, col, 1, span)
        self._cells.append(cell)
