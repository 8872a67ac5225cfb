"""The Requests dock in Portuguese: the default demo is a Portuguese list (an opening for tiny, a system
prompt and questions for a chat model), and the dock built in pt_BR says everything in Portuguese with
the numbers in the locale's format, while the engine's values (the schedule, the cells' events) stay
as the engine names them."""

from __future__ import annotations

import re

import pytest
from helpers import SyncHost

# words of this dock's English sentences that are not Portuguese ("pool" and "slots" are Portuguese too)
ENGLISH_HERE = set(
    "the of and with without rows row computed blocks block request requests found reused held free cached step steps "
    "hit hits misses run press hover wasted saves paged contiguous all on off none sequential interleaved".split()
)


class ChatTokenizer:
    chat_template = "{{ messages }}"


@pytest.fixture
def portuguese(qapp):
    from kvsim.ui import i18n

    i18n.install(qapp, "pt_BR")
    yield
    i18n.install(qapp, "en")


def _english(text: str) -> set[str]:
    text = re.sub(r"<[^>]+>", " ", text).replace("copy-on-write", " ")  # rich text; the technique's own name
    return {w for w in re.findall(r"[^\W\d_]+", text) if w.lower() in ENGLISH_HERE}


def test_the_default_demo_follows_the_language(qapp, tiny) -> None:
    from kvsim.serving.request_lists import demo_request_files, load_requests
    from kvsim.ui import i18n
    from kvsim.ui.docks.requests.job import default_demo

    files = {f.name: load_requests(f) for f in demo_request_files()}
    pt_plain, pt_chat = files["pt-aberturas.json"], files["pt-prompt-de-sistema.json"]
    en_plain, en_chat = files["austen-openings.json"], files["system-prompt.json"]
    assert len(pt_plain.prompts) == len(pt_chat.prompts) == 4 and pt_plain.system and pt_chat.system
    try:
        i18n.install(qapp, "pt_BR")
        assert default_demo(tiny.tokenizer).prompts == pt_plain.prompts
        assert default_demo(tiny.tokenizer).system == pt_plain.system
        assert default_demo(ChatTokenizer()).prompts == pt_chat.prompts
        assert default_demo(ChatTokenizer()).system == pt_chat.system
    finally:
        i18n.install(qapp, "en")
    assert default_demo(tiny.tokenizer).prompts == en_plain.prompts
    assert default_demo(ChatTokenizer()).prompts == en_chat.prompts and default_demo(ChatTokenizer()).system is None


def test_the_portuguese_opening_is_shared_by_tinys_four_requests(tiny) -> None:
    """Every later request of pt-aberturas hits the opening's full blocks (what the demo is there to show)."""
    from kvsim.serving.request_lists import demo_request_files, encode_requests, load_requests
    from kvsim.serving.waste import shared_prefix_blocks

    path = next(f for f in demo_request_files() if f.name == "pt-aberturas.json")
    reqs = encode_requests(tiny.tokenizer, load_requests(path))
    opening = len(tiny.tokenizer.encode(load_requests(path).system))
    shared = shared_prefix_blocks([r.prompt_ids for r in reqs], 16)
    assert shared[0] == 0 and all(s >= (opening - 16) // 16 for s in shared[1:]) and min(shared[1:]) >= 4


def test_the_dock_in_portuguese(qtbot, qapp, tiny, portuguese) -> None:
    from PySide6.QtGui import QFontMetrics

    from kvsim.ui import i18n, theme
    from kvsim.ui.docks.requests.blocks import event_label
    from kvsim.ui.docks.requests.dock import RequestsView
    from kvsim.ui.docks.requests.job import RequestsSettings

    theme.apply(qapp)
    view = RequestsView(SyncHost(tiny))
    qtbot.addWidget(view)
    view.resize(800, 1000)
    view.show()
    assert view.editor.demos.itemText(0).startswith("pt-")  # the Portuguese lists first
    view.bar.steps.setValue(2)
    view.bar.block_size.setValue(8)
    view.bar.schedule.setCurrentIndex(view.bar.schedule.findData("sequential"))
    assert view.run_demo(show_request=1), view.status.text()
    assert view.computed is not None, view.status.text()
    # the engine got its own words; the person sees Portuguese
    assert view.computed.settings == RequestsSettings(block_size=8, steps=2, schedule="sequential")
    assert view.bar.schedule.currentText() == "sequencial" and "sequencial" in view.status.text()
    assert view.computed.given.prompts[0] == "O usuário pode ver"
    on, off = view.computed.both.on, view.computed.both.off
    r2 = on.requests[1]
    summary = view.summary.text()
    assert "Requisição 2" in summary and f"{r2.hit_blocks} bloco(s) achado(s) pelo hash" in summary
    ratio = r2.ttft_ms / off.requests[1].ttft_ms
    assert f"({i18n.num(ratio, 2)}×)" in summary and "," in i18n.num(ratio, 2)
    table = view.numbers.table
    assert table.text("ratio", 1) == f"{ratio:.2f}×".replace(".", ",")
    assert table.horizontalHeaderItem(len(on.requests)).text() == "todas"
    waste = on.waste.paged_waste
    assert f"{100 * waste:.1f}%".replace(".", ",") in view.numbers.trade_off.text()
    assert {event_label(w) for w in ("hit", "evict", "cached")} == {"acerto", "descarte", "em cache"}
    assert any(c.event == "hit" for c in view.grid.cells())  # the cells keep the engine's word; drawn translated
    fm = QFontMetrics(view.grid.small_font())  # every footer fits the longest word beside the widest "L j"
    need = max(fm.horizontalAdvance(event_label(w)) for w in ("new", "write", "hit", "copy", "evict"))
    need += fm.horizontalAdvance(f"L{on.pool_blocks - 1}") + 3
    assert all(c.rect.width() - 10 >= need for c in view.grid.cells())
    hit = next(c.block for c in view.grid.cells() if c.event == "hit")
    view._hover(hit)
    shown = [
        view.status.text(),
        view.summary.text(),
        view.readout.text(),
        view.legend.text(),
        view.legend.toolTip(),
        view.step_label.text(),
        view.numbers.caption.text(),
        view.numbers.waste_caption.text(),
        view.numbers.trade_off.text(),
        *(table.verticalHeaderItem(i).text() for i in range(table.rowCount())),
        *(view.tabs.tabText(i) for i in range(view.tabs.count())),
        *(view.which_run.itemText(i) for i in range(view.which_run.count())),
        *(view.request_box.itemText(i) for i in range(view.request_box.count())),
        *(label for label, _, _ in view.numbers.bars.rows),
    ]
    left = [(text, _english(text)) for text in shown if _english(text)]
    assert not left, left
    snap = on.snapshots[view.step]  # sequential: request 1 is done, request 2 alone holds the block it hit
    holders = ", ".join(str(o + 1) for o in snap.owners[hit])
    assert f"{int(snap.ref_counts[hit])} referência(s) · ocupado pela(s) requisição(ões) {holders}" in view.readout.text()
