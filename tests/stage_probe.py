"""What the audience sees, measured: run in its own process (the screen size and the scale are fixed
when Qt starts) by tests/app/window/test_layout.py and scripts/stage_shots.py.

    QT_QPA_PLATFORM=offscreen:configfile=… QT_SCALE_FACTOR=1.5 python tests/stage_probe.py MODE LANGS [SHOTS_DIR]
    QT_QPA_PLATFORM=offscreen:configfile=… QT_SCALE_FACTOR=1.5 python tests/stage_probe.py screen FITS MODES LANGS

MODE: ``normal`` (the window as it opens on this screen, and every stage view), ``presenter`` (presenter
mode: every stage view), ``lesson`` (every lesson step) or ``scenes`` (``scenes()``: 1, 3 and 4 lanes, the
all-heads view of a Gemma-like and an MLA model, every lane preset, the hybrid and CLA models — one window, the
model and lanes changed scene after scene; ``scenes:NAME,…`` for some of them). LANGS: ``en,pt_BR``. For each language a
fresh window runs the bundled model, then every view (or lesson step) is shown and ``audit`` lists what
is wrong on screen: visible sibling widgets that overlap (a deliberate overlay sets the property
``overlay``), text wider than its room (labels, buttons, check boxes, tabs, combo boxes and their
items, table headers, dock titles, plot titles; elided text counts as cut), a plotted point outside
its plot, a label of a plot layout wider than its cell or outside its view (the all-heads view's "head 7 · kv 1"),
a view that scrolls, text smaller than ``MIN_PX`` physical pixels. Prints one line
``RESULT {json}``: {lang: {view: [problems]}} and the sizes it measured.

``screen``: everything tests/app/window/test_layout.py checks on one screen, in one process (a process per check paid
Python's, Qt's and torch's start-up eleven times): ``fit`` for each of FITS (``normal``, ``lanes-only``,
``presenter``; comma-separated, ``-`` for none), then ``probe`` for each of MODES; prints
``RESULT {"fit": {fit: …}, "probe": {mode: …}}``.
"""

from __future__ import annotations

import json
import math
import sys
import time

MIN_PX = 18  # physical pixels of body text on a 1280×720 projector
RUN_STEPS = 24
TOLERANCE = 1  # px


def _name(w) -> str:
    parts = []
    while w is not None and len(parts) < 4:
        n = w.objectName() or type(w).__name__
        parts.append(n)
        w = w.parentWidget()
    return "/".join(reversed(parts))


def _box(window, w):
    from PySide6.QtCore import QRect

    return QRect(w.mapTo(window, w.rect().topLeft()), w.size())


def _clip(window, w):
    """The part of ``w`` its ancestors let through (a scroll area's viewport, the window), in window coordinates."""
    r = _box(window, w)
    a = w.parentWidget()
    while a is not None and a is not window:
        r = r.intersected(_box(window, a))
        a = a.parentWidget()
    return r.intersected(window.rect())


def _shown(window, w) -> bool:
    return w.isVisibleTo(window) and w.isVisible() and not _clip(window, w).isEmpty()


def _text_width(fm, text: str) -> int:
    return max((fm.horizontalAdvance(line) for line in text.split("\n")), default=0)


def _elided(text: str) -> bool:
    t = text.rstrip()
    return t.endswith("…") and not t.endswith(" …") and len(t) > 1


def _text_size(label, text: str, rich: bool, width: int | None) -> tuple[float, float]:
    """(width, height) the label's text takes, laid out with its own font: on one line per paragraph, or
    wrapped at ``width`` (a word longer than ``width`` makes it wider than ``width``)."""
    from PySide6.QtCore import QRect, Qt
    from PySide6.QtGui import QTextDocument

    if rich:
        doc = QTextDocument()
        doc.setDefaultFont(label.font())
        doc.setDocumentMargin(0)
        doc.setHtml(text)
        if width is not None:
            doc.setTextWidth(width)
        return doc.idealWidth(), doc.size().height()
    fm = label.fontMetrics()
    if width is None:
        return _text_width(fm, text), fm.lineSpacing() * (text.count("\n") + 1)
    r = fm.boundingRect(QRect(0, 0, width, 100_000), int(Qt.TextWordWrap), text)
    return r.width(), r.height()


def _styled_padding(label) -> bool:
    """Whether a style sheet (the app's, or the label's or an ancestor's) pads ``label``: a ``QLabel`` rule, for
    every label or for its object name, that sets ``padding``."""
    import re

    from PySide6.QtWidgets import QApplication

    sheets, w = [QApplication.instance().styleSheet()], label
    while w is not None:
        sheets.append(w.styleSheet())
        w = w.parentWidget()
    for selector, body in re.findall(r"([^{}]+)\{([^{}]*)\}", "\n".join(sheets)):
        names = [part.strip() for part in selector.split(",")]
        if "padding" in body and any(n in ("QLabel", f"QLabel#{label.objectName()}") for n in names):
            return True
    return False


def _aligned(room, width: float, height: float, align):
    """Where a text of ``width`` × ``height`` aligned by ``align`` lies in the rectangle ``room``."""
    from PySide6.QtCore import QRect, Qt

    w, h = math.ceil(width), math.ceil(height)
    if align & Qt.AlignRight:
        x = room.right() + 1 - w
    elif align & Qt.AlignHCenter:
        x = room.left() + (room.width() - w) // 2
    else:
        x = room.left()
    if align & Qt.AlignBottom:
        y = room.bottom() + 1 - h
    elif align & Qt.AlignTop:
        y = room.top()
    else:
        y = room.top() + (room.height() - h) // 2
    return QRect(x, y, w, h)


def _cut_by(window, w, extent) -> str | None:
    """What hides part of ``extent`` (a rectangle in ``w``'s coordinates: where its text is drawn): an ancestor
    (a scroll area's viewport, a splitter, a page) or the window's edge; None when all of it shows. A list
    that scrolls by design (the ``scrolls`` property) may hide what lies below or above its view, never
    what lies beside it."""
    from PySide6.QtCore import QRect
    from PySide6.QtWidgets import QAbstractScrollArea

    r = QRect(w.mapTo(window, extent.topLeft()), extent.size())
    t = TOLERANCE
    a = w.parentWidget()
    while a is not None and a is not window:
        box = _box(window, a)
        if not box.adjusted(-t, -t, t, t).contains(r):
            beside = r.left() < box.left() - t or r.right() > box.right() + t
            area = a.parentWidget()
            by_design = (isinstance(area, QAbstractScrollArea) and a is area.viewport() and _scrolls_by_design(area)) or (
                isinstance(a, QAbstractScrollArea) and _scrolls_by_design(a)  # the scroll area's own frame, around that viewport
            )
            if beside or not by_design:
                return _name(a)
            r = r.intersected(box)  # scrolled out of sight by design: the ancestors further up see only what shows
        a = a.parentWidget()
    if not window.rect().adjusted(-t, -t, t, t).contains(r):
        return "the window's edge"
    return None


def _cells(view) -> list[str]:
    """A table's or tree's visible cells: each text whole in its column (measured with the view's font)."""
    from PySide6.QtCore import Qt

    model = view.model()
    if model is None:
        return []
    from PySide6.QtWidgets import QStyle

    fm, problems = view.fontMetrics(), []
    margin = 2 * (view.style().pixelMetric(QStyle.PM_FocusFrameHMargin, None, view) + 1)  # Qt's item text margins
    viewport = view.viewport().rect()
    root = view.rootIndex()
    for row in range(min(model.rowCount(root), 500)):
        for col in range(model.columnCount(root)):
            index = model.index(row, col, root)
            r = view.visualRect(index)
            if r.isEmpty() or not r.intersects(viewport):
                continue
            text = str(model.data(index, Qt.DisplayRole) or "")
            if not text:
                continue
            need = _text_width(fm, text) + margin
            if model.data(index, Qt.DecorationRole) is not None:
                need += view.iconSize().width() + 4
            if _elided(text):
                problems.append(f"elided cell '{text[-30:]}': {_name(view)}")
            elif need > r.width() + TOLERANCE:
                problems.append(f"cell text {need} px wide in {r.width()} px: {_name(view)} '{text[:30]}'")
            elif r.left() < viewport.left() - TOLERANCE or r.left() + need > viewport.right() + 1 + TOLERANCE:
                problems.append(f"cell '{text[:30]}' cut by the view's edge: {_name(view)}")
    return problems


def audit(window, min_px: float = 0.0) -> list[str]:
    """What is wrong on screen in ``window`` now (empty: nothing)."""
    import pyqtgraph as pg
    from PySide6.QtCore import QRect, Qt
    from PySide6.QtGui import QFontInfo
    from PySide6.QtWidgets import (
        QAbstractButton,
        QAbstractItemView,
        QAbstractScrollArea,
        QAbstractSpinBox,
        QCheckBox,
        QComboBox,
        QDockWidget,
        QHeaderView,
        QLabel,
        QMainWindow,
        QPushButton,
        QRadioButton,
        QScrollBar,
        QStatusBar,
        QStyle,
        QStyleOptionComboBox,
        QTabBar,
        QToolButton,
        QWidget,
    )

    problems: list[str] = []
    dpr = window.devicePixelRatioF()
    widgets = [w for w in window.findChildren(QWidget) if not w.isWindow() and _shown(window, w)]

    def small(w, what: str) -> None:
        if min_px and QFontInfo(w.font()).pixelSize() * dpr < min_px - 0.5:
            problems.append(f"small text ({QFontInfo(w.font()).pixelSize() * dpr:.0f} px) {what}: {_name(w)}")

    # --- overlaps between visible siblings
    parents = {window, *widgets}
    for parent in parents:
        if isinstance(parent, QAbstractScrollArea | QComboBox | QTabBar):
            continue  # their own parts (viewport, bars, scroll buttons) are laid out by Qt
        kids = [
            c
            for c in parent.children()
            if isinstance(c, QWidget)
            and not c.isWindow()
            and c.isVisible()
            and not c.objectName().startswith("qt_")
            and not c.property("overlay")
            and type(c).__name__ not in ("QRubberBand", "QSizeGrip", "QMainWindowLayoutSeparatorHelper", "QWidgetResizeHandler")
        ]
        if isinstance(parent, QMainWindow):
            kids = [
                c
                for c in kids
                if isinstance(c, QWidget)
                and (
                    c is parent.centralWidget() or c.inherits("QToolBar") or c.inherits("QDockWidget") or c.inherits("QStatusBar")
                )
            ]
        for i, a in enumerate(kids):
            for b in kids[i + 1 :]:
                r = a.geometry().intersected(b.geometry())
                if r.width() > TOLERANCE and r.height() > TOLERANCE:
                    problems.append(f"overlap {r.width()}×{r.height()}: {_name(a)} / {_name(b)}")

    # --- text in its room
    for w in widgets:
        fm = w.fontMetrics()
        if isinstance(w, QLabel):
            text = w.text()
            if not text or w.pixmap() is not None and not w.pixmap().isNull():
                continue
            cr = w.contentsRect()
            room = cr.width() - 2 * w.margin() - max(w.indent(), 0)
            rich = w.textFormat() == Qt.RichText or (w.textFormat() == Qt.AutoText and "<" in text and ">" in text)
            if _elided(_plain(text) if rich else text):
                problems.append(f"elided '{_plain(text)[-40:]}': {_name(w)}")
            inner = cr.adjusted(w.margin(), w.margin(), -w.margin(), -w.margin())
            if w.wordWrap():
                need_w, need = _text_size(w, text, rich, inner.width())
                if rich and _styled_padding(w):  # with a style sheet's padding QLabel wraps rich text 3 px inside its
                    need = max(need, _text_size(w, text, rich, max(inner.width() - 3, 1))[1])  # contents (measured)
                if need > inner.height() + 2:
                    problems.append(f"wrapped text {need:.0f} px tall in {cr.height()} px: {_name(w)} '{_plain(text)[:50]}'")
                if need_w > inner.width() + TOLERANCE:
                    problems.append(f"wrapped text {need_w:.0f} px wide in {inner.width()} px: {_name(w)} '{_plain(text)[:50]}'")
            else:
                need_w, need = _text_size(w, text, rich, None)
                if need_w > room + TOLERANCE:
                    problems.append(f"text {need_w:.0f} px wide in {room} px: {_name(w)} '{_plain(text)[:50]}'")
            if w.indent() > 0 and not w.alignment() & (Qt.AlignRight | Qt.AlignHCenter):
                inner.setLeft(inner.left() + w.indent())
            extent = _aligned(inner, min(need_w, max(inner.width(), 1)), min(need, max(inner.height(), 1)), w.alignment())
            hidden_by = _cut_by(window, w, extent)
            if hidden_by:
                problems.append(f"text cut by {hidden_by}: {_name(w)} '{_plain(text)[:50]}'")
            small(w, f"'{_plain(text)[:30]}'")
        elif isinstance(w, QAbstractButton) and w.text():
            text = w.text().replace("&", "")
            need = _text_width(fm, text)
            if not w.icon().isNull():
                need += w.iconSize().width() + 4
            if isinstance(w, QCheckBox | QRadioButton):
                need += w.style().pixelMetric(QStyle.PM_IndicatorWidth) + w.style().pixelMetric(QStyle.PM_CheckBoxLabelSpacing)
                room = w.width()
            elif isinstance(w, QPushButton):
                room = w.width() - 8
            elif isinstance(w, QToolButton):
                room = w.width() - 4 - (12 if w.menu() is not None or w.popupMode() == QToolButton.MenuButtonPopup else 0)
            else:
                room = w.width()
            if need > room + TOLERANCE:
                problems.append(f"button text {need} px wide in {room} px: {_name(w)} '{text[:40]}'")
            extent = QRect(0, 0, min(need, w.width()), w.height()) if isinstance(w, QCheckBox | QRadioButton) else w.rect()
            hidden_by = _cut_by(window, w, extent)
            if hidden_by:
                problems.append(f"button cut by {hidden_by}: {_name(w)} '{text[:40]}'")
            if _elided(text):
                problems.append(f"elided button '{text}': {_name(w)}")
            small(w, f"'{text[:30]}'")
        elif isinstance(w, QComboBox):
            opt = QStyleOptionComboBox()
            w.initStyleOption(opt)
            room = w.style().subControlRect(QStyle.CC_ComboBox, opt, QStyle.SC_ComboBoxEditField, w).width()
            shown = w.shown_text() if hasattr(w, "shown_text") else w.currentText()  # a box may paint a short form
            # an editable box scrolls what one types (the prompt); one that paints a short form (the lane chooser)
            # is measured as a label: its room is its line edit's, less the edit's margins
            measured = not w.isEditable() or hasattr(w, "shown_text")
            if w.isEditable():
                room -= 4
            if measured and _text_width(fm, shown) > room + TOLERANCE:
                need = _text_width(fm, shown)
                problems.append(f"combo text {need} px wide in {room} px: {_name(w)} '{shown[:40]}'")
            if measured and _elided(shown):
                problems.append(f"elided combo text '{shown[-40:]}': {_name(w)}")
            problems += _combo_items(w)
            hidden_by = _cut_by(window, w, w.rect())
            if hidden_by:
                problems.append(f"combo box cut by {hidden_by}: {_name(w)} '{w.currentText()[:40]}'")
            small(w, f"'{w.currentText()[:30]}'")
        elif isinstance(w, QTabBar):
            for i in range(w.count()):
                r = w.tabRect(i)
                need = _text_width(fm, w.tabText(i)) + 8
                if r.width() < need or r.right() > w.width() + TOLERANCE:
                    problems.append(f"tab '{w.tabText(i)}' {r.width()} px for {need}: {_name(w)}")
            small(w, "tabs")
        elif isinstance(w, QHeaderView):
            model = w.model()
            if model is None:
                continue
            n = model.columnCount() if w.orientation() == Qt.Horizontal else model.rowCount()
            for i in range(n):
                if w.isSectionHidden(i):
                    continue
                text = str(model.headerData(i, w.orientation(), Qt.DisplayRole) or "")
                need = _text_width(fm, text) + 8
                room = w.sectionSize(i) if w.orientation() == Qt.Horizontal else w.width()
                if text and room < need:
                    problems.append(f"header '{text[:30]}' {room} px for {need}: {_name(w)}")
        elif isinstance(w, QDockWidget) and w.titleBarWidget() is None:
            need = _text_width(fm, w.windowTitle()) + 2 * 20 + 8
            if need > w.width():
                problems.append(f"dock title {need} px wide in {w.width()} px: '{w.windowTitle()[:40]}'")
        elif isinstance(w, QAbstractSpinBox) and w.text():
            room = w.lineEdit().width() - 4
            if _text_width(w.lineEdit().fontMetrics(), w.text()) > room + TOLERANCE:
                problems.append(f"spin box text {_text_width(fm, w.text())} px wide in {room} px: {_name(w)} '{w.text()}'")
            hidden_by = _cut_by(window, w, w.rect())
            if hidden_by:
                problems.append(f"spin box cut by {hidden_by}: {_name(w)} '{w.text()}'")
            small(w, f"'{w.text()}'")
        elif isinstance(w, QStatusBar) and w.currentMessage():
            need = _text_width(fm, w.currentMessage()) + 8
            if need > w.width() - 20:
                problems.append(f"status message {need} px wide in {w.width() - 20} px: '{w.currentMessage()[:50]}'")
        elif isinstance(w, QScrollBar) and w.maximum() > w.minimum() and not _scrolls_by_design(w):
            problems.append(f"scrolls ({w.maximum() - w.minimum()} px hidden): {_name(w)}")
        elif isinstance(w, pg.GraphicsView):
            problems += _plots(window, w)
        if isinstance(w, QAbstractItemView) and not isinstance(w, QHeaderView) and not w.inherits("QComboBoxListView"):
            problems += _cells(w)
        if type(w).__name__ == "Legend" and not w.fits():  # the lanes' legend paints its words: they fit its width
            problems.append(f"legend {w.form(w.fontMetrics())[2]} px wide in {w.width()} px: {_name(w)}")
    return problems


def lane_sets(w) -> list[str]:
    """The lane chooser closed on each of its sets in turn (what L cycles through): the text it shows fits its
    room, and is one of the set's own forms (its whole name or a deliberate short one, never a cut)."""
    from kvsim.ui.shell.toolbar import lanes_forms

    box, problems = w.toolbar.lanes_box, []
    if not box.isVisible():
        return problems
    before = box.currentIndex()
    fm = box.fontMetrics()
    for i in range(box.count()):
        box.setCurrentIndex(i)
        shown, room = box.shown_text(), box.room()
        if fm.horizontalAdvance(shown) > room + TOLERANCE:
            problems.append(f"lane set {fm.horizontalAdvance(shown)} px wide in {room} px: '{shown}' ({box.itemData(i)})")
        if shown not in lanes_forms(str(box.itemData(i))):
            problems.append(f"lane set shown as '{shown}', not one of its names ({box.itemData(i)})")
    box.setCurrentIndex(before)
    return problems


def _combo_items(combo) -> list[str]:
    """Open the popup and measure each item's room there (what the audience sees when it opens)."""
    from PySide6.QtWidgets import QApplication

    if combo.count() == 0:
        return []
    combo.showPopup()
    QApplication.processEvents()
    view, fm = combo.view(), combo.view().fontMetrics()
    problems = []
    for i in range(combo.count()):
        room = view.visualRect(combo.model().index(i, combo.modelColumn())).width()
        need = _text_width(fm, combo.itemText(i)) + 6 + (view.iconSize().width() + 4 if not combo.itemIcon(i).isNull() else 0)
        if room and need > room + TOLERANCE:
            problems.append(f"combo item {need} px wide in {room} px: {_name(combo)} '{combo.itemText(i)[:40]}'")
    combo.hidePopup()
    QApplication.processEvents()
    return problems


def _scrolls_by_design(bar) -> bool:
    """The text strip (a long text wraps and scrolls), the request list and block grid of a long run,
    a combo box's popup: scrolling is their nature, not a cut."""
    w = bar
    while w is not None:
        if w.property("scrolls"):
            return True
        w = w.parentWidget()
    return False


def _plain(text: str) -> str:
    import re

    return re.sub(r"<[^>]+>", "", text).replace("&nbsp;", " ")


def _plots(window, view) -> list[str]:
    """Plotted points inside their plots, plots and their titles inside the view."""
    import numpy as np
    import pyqtgraph as pg

    problems = []
    visible = _clip(window, view).translated(-_box(window, view).topLeft())  # in the view's coordinates
    for item in view.scene().items():
        if isinstance(item, pg.LabelItem) and item.isVisible() and item.text and not isinstance(item.parentItem(), pg.PlotItem):
            # a label of the layout (the all-heads view's "head 7 · kv 1"): whole in its cell, inside the view
            need = item.item.boundingRect().width()
            if need > item.width() + TOLERANCE:
                problems.append(f"plot label {need:.0f} px wide in {item.width():.0f} px: '{_plain(item.text)[:40]}'")
            box = view.mapFromScene(item.sceneBoundingRect()).boundingRect()
            if box.width() > 2 and not visible.adjusted(-2, -2, 2, 2).contains(box):
                where = f"({box.getRect()} in {visible.getRect()})"
                problems.append(f"plot label outside its view {where}: '{_plain(item.text)[:40]}'")
            continue
        if not isinstance(item, pg.PlotItem) or not item.isVisible():
            continue
        vb = item.getViewBox()
        box = view.mapFromScene(vb.sceneBoundingRect()).boundingRect()
        if box.height() < 2 or box.width() < 2:
            continue
        if not visible.adjusted(-2, -2, 2, 2).contains(box):
            problems.append(f"plot outside its view ({box.getRect()} in {visible.getRect()}): {_name(view)}")
        title = item.titleLabel
        if title.isVisible() and title.text:
            need = title.item.boundingRect().width()
            if need > item.width() + TOLERANCE:
                problems.append(f"plot title {need:.0f} px wide in {item.width():.0f} px: '{_plain(title.text)[:40]}'")
        (x0, x1), (y0, y1) = vb.viewRange()
        for data in item.listDataItems():
            if not data.isVisible():
                continue
            xs, ys = data.getData()
            if xs is None or len(xs) == 0:
                continue
            xs, ys = np.asarray(xs, float), np.asarray(ys, float)
            ok = np.isfinite(xs) & np.isfinite(ys)
            dx, dy = (x1 - x0) * 1e-3, (y1 - y0) * 1e-3
            out = ok & ((xs < x0 - dx) | (xs > x1 + dx) | (ys < y0 - dy) | (ys > y1 + dy))
            if out.any():
                i = int(np.argmax(out))
                problems.append(
                    f"point ({xs[i]:.3g}, {ys[i]:.3g}) outside the plot x {x0:.3g}…{x1:.3g} y {y0:.3g}…{y1:.3g}: "
                    f"{_plain(title.text or '')[:30]} {data.name() or ''}"
                )
    return problems


def _roof_room(w, name: str) -> list[str]:
    """The roofline on the stage: its plotting area at least half the stage's height and half its width (it was
    a third of the height at 853×480, its words cut)."""
    if name != "stage-roofline" or not w.stage.active:
        return []
    view = w.extra_docks["roofline"].view
    box = view.plot.getPlotItem().getViewBox().sceneBoundingRect()
    stage = w.stage.stack
    if box.height() < 0.5 * stage.height() or box.width() < 0.5 * stage.width():
        return [f"the roofline's plot is {box.width():.0f}×{box.height():.0f} on a {stage.width()}×{stage.height()} stage"]
    return []


def _batching_room(w, name: str) -> list[str]:
    """The batching view on the stage uses its room: its rows at their largest, or no empty band under the view
    taller than a row (at 1920×1080 it was a strip of 16 px rows over two thirds of an empty stage)."""
    if name != "stage-batching" or not w.stage.active:
        return []
    from kvsim.ui.docks.requests.timeline import MAX_ROW_H, ROW_H

    view = w.extra_docks["requests"].view
    timeline, lay = view.timeline, view._timeline_lay
    stretch = lay.itemAt(lay.count() - 1)  # the stretch under the view's lines: what the view leaves empty
    spare = stretch.geometry().height() if stretch is not None and stretch.spacerItem() is not None else 0
    row_h = timeline.sizes()[0]
    if timeline.states.size and row_h < MAX_ROW_H and spare > ROW_H:
        return [f"the batching rows are {row_h} px with {spare} px empty under the view"]
    return []


def _wait(app, until, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        app.processEvents()
        if until():
            return True
        time.sleep(0.01)
    return False


def _settle(app, w, seconds: float = 0.3) -> None:
    _wait(app, lambda: not w.jobs._waiting and not w.lanes.pending, 120)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        app.processEvents()
        time.sleep(0.01)
    for p in w.lanes.shown():
        p.redraw()
    w.costs.redraw()
    _until_still(app, w)  # the redraws' relayouts (an axis grown by its new labels) come a frame or more later


def _layout_now(w) -> tuple:
    """Where every plot and widget of the window is now (what the audit measures)."""
    import pyqtgraph as pg
    from PySide6.QtWidgets import QWidget

    plots = []
    for view in w.findChildren(pg.GraphicsView):
        plots += [item.sceneBoundingRect().getRect() for item in view.scene().items() if isinstance(item, pg.PlotItem)]
    return tuple(plots) + tuple(c.geometry().getRect() for c in w.findChildren(QWidget) if c.isVisible())


def _until_still(app, w, still: int = 8, most: int = 400) -> None:
    """Process events until the layout has not moved for ``still`` rounds in a row (at most ``most`` rounds of
    ~20 ms): on a busy machine a relayout can come later than any fixed wait (bounded by rounds, not by a clock)."""
    last, calm = None, 0
    for _ in range(most):
        app.processEvents()
        time.sleep(0.02)
        now = _layout_now(w)
        calm = calm + 1 if now == last else 0
        if calm >= still:
            return
        last = now


def _settled_view(app, w, name: str) -> None:
    view = w.stage.entries[name][1]
    view = view.view if view is not None else None
    _settle(app, w)
    busy = getattr(view, "busy", False)
    if busy:
        _wait(app, lambda: not getattr(view, "busy", False), 180)
        _settle(app, w)


PROMPT = "It is a truth universally acknowledged, that a single man in possession of a good fortune"
# the all-heads view's hard shapes, as small random models (cheap: the shape is what is looked at)
GEMMA_LIKE = "random:family=gemma3,layers=2,heads=4,kv_heads=1,dim=128,seed=0"  # Gemma 3 270M's 4 heads sharing 1 K/V head
MLA_MODEL = "random:family=mla,layers=2,heads=8,dim=128,seed=0"  # DeepSeek's latent: 8 heads over one latent
SCENE_STEPS = 10  # a scene's run (the costs plots' ticks and curves of a short talk demo)
PRESET_STEPS = 5  # a lane preset's run: its lanes after a few decode steps (the prompt already exceeds every budget)


def scenes() -> list[tuple[str, str, str, int, tuple[str, ...]]]:
    """The scenes a talk uses past the stage's own views, each ``(name, model, lanes, steps, views)``: one, three
    and four lanes (lanes, costs, memory); the all-heads view of a Gemma-like MQA model and an MLA model; every
    lane preset of the chooser past the default pair (eviction: H2O, TOVA, SnapKV, PyramidKV, AdaKV, DuoAttention;
    speculation; weights; window, sinks, StreamingLLM; INT8/INT4, Hadamard; latent; paged), and the hybrid and
    cross-layer (CLA) random models of the model box. The batching view (Q), the roofline and every lesson step are
    the ``normal`` and ``lesson`` modes' views."""
    from kvsim.ui.shell.toolbar import DEFAULT_LANES, RANDOM_PRESETS, lane_choices

    out = [
        ("lanes-1", "tiny", "kv", SCENE_STEPS, ("lanes", "costs", "memory")),
        ("lanes-3", "tiny", "uncached,cached,int8:r8", SCENE_STEPS, ("lanes", "costs", "memory")),
        ("lanes-4", "tiny", "kv,window:16,h2o:8:r8,tova:16", SCENE_STEPS, ("lanes", "costs", "memory")),
        ("heads-gemma", GEMMA_LIKE, DEFAULT_LANES, 4, ("heads", "lanes")),
        ("heads-mla", MLA_MODEL, DEFAULT_LANES, 4, ("heads", "lanes", "memory")),
    ]
    seen = {lanes for *_, lanes, _steps, _views in out}
    for _label, lanes in lane_choices():
        if lanes in seen or set(lanes.split(",")) <= {"uncached", "cached"}:
            continue
        name = lanes.split(",")[-1] if lanes.startswith("uncached,cached,") else lanes
        out.append((f"preset-{_slug(name)}", "tiny", lanes, PRESET_STEPS, ("lanes",)))
    for _label, spec in RANDOM_PRESETS:
        if "qwen3_next" in spec or "cla=" in spec:  # the hybrid (linear attention layers) and cross-layer sharing
            name = "hybrid" if "qwen3_next" in spec else "cla"
            out.append((f"model-{name}", spec, DEFAULT_LANES, 4, ("lanes", "heads", "memory")))
    return out


def _slug(text: str) -> str:
    import re

    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _show_scene(app, w, model: str, lanes: str, steps: int) -> str:
    """The window on ``model`` with ``lanes``, ``steps`` steps run ("" when reached, else what went wrong)."""
    c = w.controller
    c.lanes = lanes
    w.toolbar.show_lanes(lanes)
    if (c.loaded_info or {}).get("model_id") != model:
        c.load_model(model)  # its first run starts with ``lanes``
    else:
        c.set_lanes(lanes)
    if not c.wait_ready(600) or [lane.name for lane in w.session.lanes] != lanes.split(","):
        return f"the run did not start: {c.last_error}"
    if not c.run_steps(steps, timeout_s=600):
        return f"the steps did not complete: {c.last_error}"
    return ""


def probe(mode: str, langs: list[str], shots: str | None) -> dict:
    from kvsim.ui import i18n
    from kvsim.ui.app import make_app

    app = make_app(handlers=False)
    screen = app.primaryScreen()
    room = screen.availableGeometry()
    # the projector case (a scaled screen 1280 pixels wide or less): body text at least MIN_PX there
    min_px = MIN_PX if screen.devicePixelRatio() > 1 and round(screen.devicePixelRatio() * room.width()) <= 1280 else 0.0
    out: dict = {"screen": [room.width(), room.height()], "dpr": screen.devicePixelRatio(), "window": {}}
    for lang in langs:
        i18n.install(app, lang)
        out[lang] = _one(app, mode, lang, shots, min_px, out["window"])
    return out


def _one(app, mode: str, lang: str, shots: str | None, min_px: float, sizes: dict) -> dict[str, list[str]]:
    from pathlib import Path

    from kvsim.ui.shell.window import MainWindow

    w = MainWindow(persist=False, prompt=PROMPT)
    w.animator.set_speed("instant")
    w.show()
    steps = 0 if mode.startswith("scenes") else RUN_STEPS  # the scenes run their own
    if not w.controller.wait_ready(300) or not w.controller.run_steps(steps, timeout_s=600):
        raise SystemExit("the run did not complete: " + w.controller.last_error)
    found: dict[str, list[str]] = {}

    def look(name: str, settled: bool = False) -> None:
        # ``settled``: the caller has just settled the window (``_settled_view`` or ``_settle``): nothing ran since, and
        # a second settle (its 0.3 s of events, the lanes' and costs' redraws, 8 still rounds) only repeated it
        if not settled:
            _settle(app, w)
        # what the audience sees is what is painted: an offscreen window that is never exposed is never painted,
        # and pyqtgraph lays its plots out when it paints (a page shown but unpainted measures its old layout)
        picture = w.grab()
        _until_still(app, w)
        found[name] = audit(w, min_px) + _roof_room(w, name) + _batching_room(w, name)
        if shots:
            Path(shots).mkdir(parents=True, exist_ok=True)
            picture.save(str(Path(shots) / f"{name}-{lang}.png"), "PNG")

    sizes[lang] = {"size": [w.width(), w.height()], "stage": w.stage.active, "full": w.isFullScreen()}
    if mode == "presenter":
        w.presenter.enter()
        _settle(app, w)
    if mode.split(":")[0] in ("normal", "presenter"):
        views = set(mode.split(":", 1)[1].split(",")) if ":" in mode else None  # "normal:batching,roofline": those
        mode = mode.split(":")[0]
        if mode == "normal":
            found["toolbar-lane-sets"] = lane_sets(w)  # every set of the chooser, closed, at this screen's width
        if mode == "normal" and not w.stage.active:
            look("desktop")
            w.stage.toggle_forced()  # a large screen: the stage on request (S)
        for name in w.stage.entries:
            if views is not None and name not in views:
                continue
            w.stage.show(name)
            _settled_view(app, w, name)
            look(f"stage-{name}", settled=True)
        from kvsim.ui.menu.recent import demos

        w.stage.show("lanes")
        # the bundled demos (Alt+1 …): three lanes side by side on the stage
        for _title, path in demos() if views is None else ():
            if not w.open_run(str(path)):
                found[f"demo-{path.stem}"] = [f"the demo did not open: {w.controller.last_error}"]
                continue
            _settle(app, w, 1.0)
            look(f"demo-{path.stem}", settled=True)
    elif mode.split(":")[0] == "scenes":  # one window, scene after scene: the model and lanes change, the window stays
        only = set(mode.split(":", 1)[1].split(",")) if ":" in mode else None  # "scenes:lanes-3,heads-mla": those
        for name, model, lanes, steps, views in scenes():
            if only is not None and name not in only:
                continue
            wrong = _show_scene(app, w, model, lanes, steps)
            if wrong:
                found[f"scene-{name}"] = [wrong]
                continue
            if not w.stage.active and name.startswith("lanes-"):  # a large screen: the docks' layout too
                look(f"scene-{name}-desktop")
            if not w.stage.active:
                w.stage.toggle_forced()
            for view in views:
                w.stage.show(view)
                _settled_view(app, w, view)
                look(f"scene-{name}-{view}", settled=True)
            if w.stage.forced and w.width() >= 1100:
                w.stage.toggle_forced()  # back to the docks for the next scene's desktop look
            w.stage.show("lanes")
    elif mode == "desktop":  # the docks forced on this screen (the stage's threshold is measured with it)
        w.stage.forced = False
        w.stage.update()
        look("desktop")
        for name in ("memory", "roofline", "requests"):
            dock = w.extra_docks[name]
            dock.setVisible(True)
            dock.raise_()
            _settled_view(app, w, name)
            look(f"desktop-{name}", settled=True)
    elif mode == "lesson":
        if not w.stage.active:
            w.stage.toggle_forced()
        lesson = w.lesson
        lesson.set_language("pt" if lang == "pt_BR" else "en")
        w.lesson_action.setChecked(True)
        for i, step in enumerate(lesson.steps):
            lesson.go(i)
            # 4 lanes × 40 steps take ~60 s on a quiet machine and past 300 s on a busy one (load 20 on 2 cores)
            if not _wait(app, lambda: lesson.done or bool(lesson.problem), 1200):
                found[f"lesson-{step.id}"] = ["the step's state was not reached"]
                continue
            _settled_view(app, w, step.view)
            look(f"lesson-{step.id}", settled=True)
            found[f"lesson-{step.id}"] += _lesson_problems(w, lesson, step)
    w.shutdown()
    w.close()
    w.deleteLater()
    app.processEvents()
    return found


def fit(mode: str) -> dict:
    """The window as it opens on this screen, 6 steps run, in ``mode`` (``normal``, ``lanes-only`` or
    ``presenter``): the screen's room, the window's frame, every toolbar control's box and every lane plot's
    rectangle (tests/app/window/test_layout.py checks that they fit)."""
    from kvsim.ui.app import make_app

    app = make_app()
    from kvsim.ui.shell.layout import LANES_MIN_HEIGHT
    from kvsim.ui.shell.window import MainWindow

    w = MainWindow(persist=False)
    w.animator.set_speed("instant")
    w.show()
    assert w.controller.wait_ready(120), w.controller.last_error
    w.controller.run_steps(6)
    if mode == "lanes-only":
        w.toggle_lanes_only()
    if mode == "presenter":
        w.presenter.enter()
    for _ in range(30):
        app.processEvents()
    room = w.screen().availableGeometry()

    def box(widget) -> list[int]:
        top_left = widget.mapTo(w, widget.rect().topLeft())
        return [top_left.x(), top_left.y(), widget.width(), widget.height()]

    tb = w.toolbar
    names = ("model_box", "prompt_box", "speed_box", "lanes_box", "layer_box", "head_box", "view_button")
    controls = {n: getattr(tb, n) for n in names}
    controls.update({a.text(): tb.widgetForAction(a) for a in (tb.reset_action, tb.back_action, tb.step_action, tb.play_action)})
    plots = []
    for p in w.lanes.shown():
        for name in ("k", "v", "a"):
            r = getattr(p, name).vb.sceneBoundingRect()
            plots.append(
                {
                    "lane": p.index,
                    "plot": name,
                    "left": r.left(),
                    "right": r.right(),
                    "top": r.top(),
                    "bottom": r.bottom(),
                    "glw_w": p.glw.width(),
                    "glw_h": p.glw.height(),
                }
            )
    frame = w.frameGeometry()
    out = {
        "screen": [room.x(), room.y(), room.width(), room.height()],
        "frame": [frame.x(), frame.y(), frame.width(), frame.height()],
        "full": w.isFullScreen(),
        "controls": {n: {"visible": c.isVisible(), "box": box(c)} for n, c in controls.items()},
        "lanes": box(w.lanes),
        "lanes_min": LANES_MIN_HEIGHT,
        "plots": plots,
        "costs_visible": w.costs_dock.isVisible(),
        # the prompt box's width, its most (layout.PROMPT_CHARS characters), and what its toolbar row leaves empty
        # at its right end (the row's spare width went to the last bar: the prompt read "It is a truth u" at 1920 px)
        "prompt": [tb.prompt_box.width(), _prompt_most(tb.prompt_box)],
        "row_spare": w.width() - max(sum(box(c)[::2]) for c in controls.values() if box(c)[1] == box(tb.prompt_box)[1]),
        "toolbar_visible": tb.isVisible(),
    }
    w.shutdown()
    w.close()
    w.deleteLater()
    app.processEvents()
    return out


def _prompt_most(prompt) -> int:
    from kvsim.ui.shell.layout import PROMPT_CHARS

    return PROMPT_CHARS * prompt.fontMetrics().horizontalAdvance("x")


def screen(fits: list[str], modes: list[str], langs: list[str]) -> dict:
    """Every check of one screen in one process: the fits first (each on a fresh window, in the language the
    app starts in), then the probes (a fresh window for each mode and language; they switch the language)."""
    return {"fit": {mode: fit(mode) for mode in fits}, "probe": {mode: probe(mode, langs, None) for mode in modes}}


def _lesson_problems(w, lesson, step) -> list[str]:
    problems = []
    if lesson.problem:
        problems.append(f"lesson problem: {lesson.problem}")
    if w.stage.current != step.view:
        problems.append(f"the stage shows {w.stage.current}, not {step.view}")
    if _box(w, lesson.panel).intersects(_box(w, w.stage.current_page())):
        problems.append("the lesson band covers the view")
    if lesson.highlight.target is not None:
        want = _box(w, lesson.highlight.target).adjusted(-3, -3, 3, 3)
        if not lesson.highlight.isVisible() or lesson.highlight.geometry() != want:
            problems.append(f"highlight at {lesson.highlight.geometry().getRect()}, its target at {want.getRect()}")
    page = lesson.panel.page
    lines = page.heightForWidth(page.width()) / page.fontMetrics().lineSpacing()
    if math.floor(lines) > lesson.panel.LINES:
        problems.append(f"lesson text on {lines:.1f} lines")
    return problems


if __name__ == "__main__":
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's kvsim (and its ui), not an installed one
    if sys.argv[1] == "screen":
        fits, modes = ([] if arg == "-" else arg.split(",") for arg in sys.argv[2:4])
        result = screen(fits, modes, sys.argv[4].split(","))
    else:
        result = probe(sys.argv[1], sys.argv[2].split(","), sys.argv[3] if len(sys.argv) > 3 else None)
    print("RESULT " + json.dumps(result))
    sys.stdout.flush()
    import os

    os._exit(0)  # the worker threads of two windows: no slow teardown
