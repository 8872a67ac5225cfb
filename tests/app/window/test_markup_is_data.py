"""Text from files and users is data in rich text too (issue 36): a prompt, a token, a lane's name or a path holding
markup (``<b>``, ``<img src=…>``, ``<a href>``) is shown with its characters, never rendered — in the error banner,
the tokens' and the lanes' tooltips and the costs panel's tooltip and legend (Qt renders a tooltip as rich text when
its first line looks like markup; pyqtgraph's legend always does)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from helpers import ready_window
from PySide6.QtCore import Qt
from PySide6.QtGui import Qt as GuiQt
from PySide6.QtGui import QTextDocument

from kvsim.cli.entry import main as cli_main
from kvsim.engine.trace import Trace

MARKUP = ["<b>bold</b>", "<img src='x.png'>", "<a href='https://example.org'>link</a>", "a <i>b</i>\nsecond <u>line</u>"]


def shown(tip: str) -> str:
    """What a tooltip shows: rendered when Qt takes it for rich text, as it is otherwise."""
    if not GuiQt.mightBeRichText(tip):
        return tip
    doc = QTextDocument()
    doc.setHtml(tip)
    return doc.toPlainText()


@pytest.mark.parametrize("text", [*MARKUP, "plain a < b > c", ""])
def test_plain_tip_shows_the_characters(qapp, text) -> None:
    from kvsim.ui.i18n import plain_tip

    assert shown(plain_tip(text)) == text
    if not GuiQt.mightBeRichText(text):
        assert plain_tip(text) == text  # plain text goes out unchanged


@pytest.fixture
def window(qtbot, qapp):
    w = ready_window(qtbot, qapp, "tiny", "<b>bold</b> <img src='x.png'>", size=(1280, 720))
    yield w
    w.shutdown()


def test_banner_token_lane_and_costs_show_markup_literally(window, qtbot, tmp_path) -> None:
    # the banner: an error naming a path that holds markup
    missing = tmp_path / "<b>bold</b><img src='x.png'>.kvsim"
    assert not window.open_run(str(missing))
    assert window.banner.textFormat() == Qt.TextFormat.PlainText
    assert "<b>bold</b><img src='x.png'>" in window.banner.text()

    # a saved run whose prompt and second lane's name hold markup
    path = tmp_path / "run.kvsim"
    assert (
        cli_main(
            ["run", "--model", "tiny", "--prompt", "<b>bold</b>", "--steps", "2", "--lanes", "uncached,kv", "--save", str(path)]
        )
        == 0
    )
    trace = Trace.load(path)
    name = "<b>kv</b><img src='x.png'>"
    trace.meta["lanes"][1]["name"] = name
    trace.records = [replace(r, lanes=(r.lanes[0], replace(r.lanes[1], name=name))) for r in trace.records]
    trace.save(path)
    assert window.open_run(str(path)), window.controller.last_error
    window.flush_views()
    qtbot.waitUntil(lambda: len(window.lanes.panels) == 2, timeout=20_000)

    panel = window.lanes.panels[1]
    panel._set_header()
    assert name in shown(panel.header.toolTip())

    tips = []
    for pos in range(window.session.n_rows()):
        window.tokens.set_hover(-1)
        window.tokens.set_hover(pos)
        tips.append(shown(window.tokens.toolTip()))
    labels = [window.tokens._labels[p] for p in range(window.session.n_rows())]
    for label, tip in zip(labels, tips, strict=True):
        assert repr(label) in tip  # each token's text, with its characters
    assert "".join(labels).startswith("<b>bold</b>")

    costs = window.costs
    costs._stats()
    from kvsim.ui.lanes.policy_text import lane_label
    from kvsim.ui.panels.costs_text import verdicts_tip

    assert shown(costs.stats.toolTip()) == verdicts_tip(window.session)  # its lanes' words as they are
    legend = costs.plots[1].legend
    drawn = [label.item.toPlainText() for _sample, label in legend.items]  # what pyqtgraph's HTML label shows
    assert drawn == [lane_label(window.session, lane.index) for lane in window.session.lanes]
