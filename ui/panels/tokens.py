"""The text so far, one box per token: prompt (prefill) tokens and generated tokens marked,
the newest token (produced, not yet fed) outlined, and hovering a token highlights its rows."""

from __future__ import annotations

import bisect

from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter, QPen
from PySide6.QtWidgets import QScrollArea, QWidget

from .. import theme
from ..i18n import plain_tip, translate

PAD_X, PAD_Y, GAP, LINE_GAP = 4.0, 3.0, 3.0, 5.0


class TokenStrip(QWidget):
    hovered = Signal(int)  # position, -1 when none

    def __init__(self, session, parent=None) -> None:
        super().__init__(parent)
        self.session = session
        self.setMouseTracking(True)
        f = QFont(self.font())
        f.setPointSizeF(f.pointSizeF() * 1.15)
        self.setFont(f)
        self.fm = QFontMetricsF(f)
        self._rects: list[QRectF] = []
        self._tops: list[float] = []
        self._labels: list[str] = []
        self._layout_width = -1
        self._x = self._y = 0.0
        self.hover = -1
        session.run_started.connect(self._reset)
        session.step_added.connect(lambda _s: self._extend())
        self.dirty = False
        session.cursor_moved.connect(self._mark)
        theme.on_change(self.retheme)

    def retheme(self, _name: str = "") -> None:
        self.update()  # painted from the theme's colours

    def _mark(self, _step: int) -> None:
        self.dirty = True  # redrawn on flush(), staggered after the lanes

    def flush(self) -> None:
        if self.dirty:
            self._on_cursor()

    # ------------------------------------------------------------------ layout
    def _reset(self) -> None:
        self._drawn_n = -1
        self._rects, self._tops, self._labels = [], [], []
        self._x = self._y = 0.0
        self._layout_width = self.width()
        self._extend()

    def _extend(self) -> None:
        s = self.session
        if s.run is None:
            return
        line_h = self.fm.height() + 2 * PAD_Y
        width = max(self.width(), 200)
        for pos in range(len(self._rects), len(s.tokens)):
            raw = s.token_label(pos)
            label = theme.show_token(raw) if raw.strip() == "" else raw.replace("\n", "↵")
            w = self.fm.horizontalAdvance(label) + 2 * PAD_X
            if self._x > 0 and self._x + w > width:
                self._x, self._y = 0.0, self._y + line_h + LINE_GAP
            rect = QRectF(self._x, self._y, w, line_h)
            self._rects.append(rect)
            self._tops.append(rect.top())
            self._labels.append(label)
            self._x += w + GAP
            if "\n" in raw:
                self._x, self._y = 0.0, self._y + line_h + LINE_GAP
        self._fit_height()

    def _fit_height(self) -> None:
        n = self.session.n_text_tokens() if self.session.run else 0
        bottom = self._rects[min(n, len(self._rects)) - 1].bottom() if n > 0 and self._rects else 0
        self.setMinimumHeight(int(bottom + 4))

    def resizeEvent(self, event) -> None:  # noqa: N802
        if abs(event.size().width() - self._layout_width) > 1:
            self._reset()
        super().resizeEvent(event)

    def _on_cursor(self) -> None:
        self.dirty = False
        self._fit_height()
        n = self.session.n_text_tokens()
        last = getattr(self, "_drawn_n", -1)
        if n == last + 1 and 2 <= n <= len(self._rects):
            # one step on: only the last two tokens change (the dashed "not fed yet" mark moves)
            self.update(self._rects[n - 2].united(self._rects[n - 1]).toAlignedRect().adjusted(-3, -3, 3, 3))
        else:
            self.update()
        self._drawn_n = n
        if n > 0 and n <= len(self._rects):
            holder = self.parent()
            area = holder.parent() if holder is not None else None
            if isinstance(area, QScrollArea):
                r = self._rects[n - 1]
                view = area.viewport().rect().translated(0, area.verticalScrollBar().value())
                if view.contains(r.toAlignedRect()):
                    return
                area.ensureVisible(int(r.center().x()), int(r.center().y()), 10, int(r.height()))

    # ------------------------------------------------------------------ painting
    def paintEvent(self, event) -> None:  # noqa: N802
        s = self.session
        if s.run is None:
            return
        n = min(s.n_text_tokens(), len(self._rects)) if s.cursor >= 0 else min(s.prompt_len, len(self._rects))
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        p.setFont(self.font())
        top, bottom = event.rect().top(), event.rect().bottom()
        line_h = self.fm.height() + 2 * PAD_Y
        start = max(0, bisect.bisect_left(self._tops, top - line_h - LINE_GAP))
        prompt = s.prompt_len
        prefill = QColor(theme.PHASE_COLORS["prefill"])
        prefill.setAlpha(70)
        decode = QColor(theme.PHASE_COLORS["decode"])
        decode.setAlpha(70)
        fed = s.n_rows()
        for pos in range(start, n):
            r = self._rects[pos]
            if r.top() > bottom:
                break
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(prefill if pos < prompt else decode)
            p.drawRoundedRect(r, 4, 4)
            if pos == self.hover:
                p.setPen(QPen(QColor(theme.HOVER), 2))
                p.setBrush(Qt.BrushStyle.NoBrush)
                p.drawRoundedRect(r, 4, 4)
            elif pos >= fed and s.cursor >= 0:  # produced this step, not fed yet: no K/V row
                pen = QPen(QColor(theme.ACCENT), 2, Qt.PenStyle.DashLine)
                p.setPen(pen)
                p.setBrush(Qt.BrushStyle.NoBrush)
                p.drawRoundedRect(r, 4, 4)
            p.setPen(QColor(theme.TEXT))
            p.drawText(r, Qt.AlignmentFlag.AlignCenter, self._labels[pos])
        p.end()

    # ------------------------------------------------------------------ hover
    def position_at(self, x: float, y: float) -> int:
        """The token position under (x, y), or -1."""
        s = self.session
        n = s.n_text_tokens() if s.cursor >= 0 else s.prompt_len
        i = bisect.bisect_right(self._tops, y) - 1
        if i < 0:
            return -1
        line_top = self._tops[i]
        while i >= 0 and self._tops[i] == line_top:
            if self._rects[i].contains(x, y):
                return i if i < n else -1
            i -= 1
        return -1

    def mouseMoveEvent(self, event) -> None:  # noqa: N802
        pos = self.position_at(event.position().x(), event.position().y())
        self.set_hover(pos)

    def leaveEvent(self, event) -> None:  # noqa: N802
        self.set_hover(-1)

    def set_hover(self, pos: int) -> None:
        if pos != self.hover:
            self.hover = pos
            self.update()
            if pos >= 0:
                s = self.session
                tip = _token_tip(pos < s.prompt_len, pos < s.n_rows()).format(pos=pos, token=repr(self._labels[pos]))
                step = pos - s.prompt_len  # the step that produced this token
                if 0 <= step < s.n_steps:
                    lane = s.records[step].lanes[0]
                    cands = ", ".join(f"{s.id_label(i)!r} {p:.0%}" for i, p in zip(lane.top_ids, lane.top_probs, strict=False))
                    tip += "\n" + translate("views.tokens", "candidates at step {step}: {candidates}").format(
                        step=step, candidates=cands
                    )
                self.setToolTip(plain_tip(tip))  # a token's text is data: shown, never rendered
            self.hovered.emit(pos)


def _token_tip(prompt: bool, fed: bool) -> str:
    """The first line of a token's tooltip, with {pos} and {token} to fill in."""
    if prompt and fed:
        return translate("views.tokens", "position {pos}: {token} · prompt token (prefill)")
    if prompt:
        return translate(
            "views.tokens", "position {pos}: {token} · prompt token (prefill) — not fed yet: no K/V row until the next step"
        )
    if fed:
        return translate("views.tokens", "position {pos}: {token} · generated token")
    return translate("views.tokens", "position {pos}: {token} · generated token — not fed yet: no K/V row until the next step")
