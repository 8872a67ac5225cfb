"""☰ → Language, and the shell (toolbar, window, controller) in Portuguese: the choice is remembered under
``i18n.SETTING`` and read back by ``i18n.choose`` at the next start; a window without settings only says
when it would take effect; the toolbar offers a Portuguese example first, its names and numbers in pt-BR."""

from __future__ import annotations

import pytest
from helpers import ready_window
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QMainWindow, QMenu

from kvsim.ui import i18n
from kvsim.ui.menu.language_menu import LanguageSetting


@pytest.fixture
def portuguese(qapp):
    i18n.install(qapp, "pt_BR")
    yield
    i18n.install(qapp, "en")


def _menu_of(menu: QMenu, title: str) -> QMenu:
    found = [a.menu() for a in menu.actions() if a.menu() is not None and a.menu().title() == title]
    assert len(found) == 1, [a.text() for a in menu.actions()]
    return found[0]


def test_the_choice_is_remembered_and_read_back_at_the_next_start(qapp) -> None:
    settings = QSettings("kvsim", "kvsim-ui")  # the test's own config folder (tests/conftest.py)
    said: list[str] = []
    menu = QMenu()
    setting = LanguageSetting(settings, menu, said.append)
    actions = setting.menu.actions()
    assert [a.text() for a in actions] == ["English", "Português (Brasil)"]
    assert all(a.isCheckable() for a in actions) and [a.isChecked() for a in actions] == [True, False]
    assert i18n.choose(None, settings) == i18n.choose(None, None)  # nothing remembered yet: the system's
    actions[1].trigger()
    assert setting.chosen() == "pt_BR" and [a.isChecked() for a in actions] == [False, True]  # one at a time
    assert settings.value(i18n.SETTING) == "pt_BR"
    assert said[-1] == "Português (Brasil) takes effect when kvsim restarts"
    assert i18n.choose(None, QSettings("kvsim", "kvsim-ui")) == "pt_BR"  # what the next start uses
    assert i18n.choose("en", settings) == "en"  # --lang still wins
    actions[0].trigger()
    assert settings.value(i18n.SETTING) == "en" and said[-1] == "English is the language in use"


def test_the_window_menu_without_settings_only_says_so(qtbot, qapp) -> None:
    w = ready_window(qtbot, qapp, "tiny", "The cache")
    try:
        menu = _menu_of(w.toolbar.menu, "Language")
        assert menu is w.language_setting.menu
        pt = next(a for a in menu.actions() if a.data() == "pt_BR")
        pt.trigger()
        assert "takes effect when kvsim restarts" in w.statusBar().currentMessage()
        assert pt.isChecked()
        assert QSettings("kvsim", "kvsim-ui").value(i18n.SETTING) is None  # persist=False writes nothing
        assert i18n.language() == "en"  # the running app keeps its language
    finally:
        w.shutdown()


def test_the_toolbar_in_portuguese(qtbot, portuguese) -> None:
    from kvsim.ui.shell.animation import SPEEDS
    from kvsim.ui.shell.toolbar import ControlsToolBar, example_prompts, lanes_label

    host = QMainWindow()
    qtbot.addWidget(host)
    tb = ControlsToolBar(host)
    box = tb.prompt_box
    assert box.itemData(0) == "pt" and box.currentText() == example_prompts()[0][1]  # the default is Portuguese
    assert {box.itemData(i) for i in range(box.count())} == {"pt", "en"}  # the English ones still offered
    assert [tb.speed_box.itemText(i) for i in range(tb.speed_box.count())] == ["lenta", "normal", "rápida", "instantânea"]
    assert [tb.speed_box.itemData(i) for i in range(tb.speed_box.count())] == list(SPEEDS)  # the settings' names
    assert tb.play_action.text() == "▶▶ Reproduzir" and tb.step_action.text() == "Avançar ▶"
    tb.show_playing(True)
    assert tb.play_action.text() == "❚❚ Pausar"
    import kvsim.caches  # noqa: F401 - the engine's registry gives a lane its words (the app loads it with the engine)

    assert lanes_label("uncached,cached,window:8") == "sem cache | KV cache | janela 8 (window:8)"  # words, then the spec
    assert lanes_label("kv,kv@w8,window:x9") == "KV cache | pesos INT8 (kv@w8) | window:x9"  # no words: the spec as typed
    tb.fill_models([{"name": "smollm2-135m", "kind": "fetchable"}])
    labels = [tb.model_box.itemText(i) for i in range(tb.model_box.count())]
    assert labels[0] == "tiny (embutido)" and "smollm2-135m (não baixado: kvsim models get smollm2-135m)" in labels
    config = {"family": "llama", "n_layers": 4, "n_heads": 6, "n_kv_heads": 2, "head_dim": 32, "max_seq_len": 2048}
    text = tb.show_loaded({"model_id": "tiny", "config": config, "params": 2164416})
    assert text == (
        "modelo tiny: llama, 4 camadas, 6 cabeças / 2 cabeças kv, dim. da cabeça 32, contexto 2.048, 2.164.416 parâmetros"
    )


def test_the_toolbar_in_english_is_unchanged(qtbot, qapp) -> None:
    from kvsim.ui.shell.toolbar import ControlsToolBar, lanes_label

    assert i18n.language() == "en"
    host = QMainWindow()
    qtbot.addWidget(host)
    tb = ControlsToolBar(host)
    assert tb.prompt_box.itemData(0) == "en"
    assert [tb.speed_box.itemText(i) for i in range(tb.speed_box.count())] == ["slow", "normal", "fast", "instant"]
    assert tb.play_action.text() == "▶▶ Play" and tb.play_action.toolTip() == "play / pause (Space)"
    import kvsim.caches  # noqa: F401 - the engine's registry gives a lane its words

    assert lanes_label("uncached,cached,h2o:8:r8") == "no cache | KV cache | H2O 8+8 (h2o:8:r8)"


def test_the_window_in_portuguese(qtbot, qapp, portuguese, tmp_path) -> None:
    from kvsim.ui.menu import shortcuts

    w = ready_window(qtbot, qapp, "tiny", "O cache de chaves e valores")
    try:
        assert w.windowTitle() == "kvsim — tiny — o KV cache"
        assert w.costs_dock.windowTitle() == "Custos até agora"
        assert [a.text() for a in _menu_of(w.toolbar.menu, "Tema").actions()] == ["escuro", "claro", "sistema (segue o SO)"]
        assert [a.text() for a in _menu_of(w.toolbar.menu, "Idioma").actions()] == ["English", "Português (Brasil)"]
        assert w.controller.run_steps(2)
        path = tmp_path / "run.kvsim"
        assert w.save_run(str(path))
        assert w.statusBar().currentMessage() == f"{w.session.n_steps} passos salvos em {path}"
        assert not w.open_run(str(tmp_path / "missing.kvsim"))
        assert w.banner.isVisible() and w.banner.text().startswith("⚠  não foi possível abrir")
        rows = shortcuts.key_rows(w)
        whats = [what for _, what in rows]
        assert "Camada 0 … 8" in whats and "Modo apresentação" in whats
        # the sheet keeps its order in Portuguese: play, step, back, reset first (ordered by the keys' English names)
        assert whats[:4] == ["▶▶ Reproduzir", "Avançar ▶", "◀ Voltar", "↺ Recomeçar"]
        # every key is described, in Portuguese: the stage's PgDn / PgUp, the views' letters, the requests view's own keys
        assert all(what.strip() for _, what in rows), rows
        described = dict(rows)
        assert described["PgDown"] == "Próxima página ou passo da lição, ou a próxima vista no palco"
        assert described["PgUp"] == "Página ou passo anterior da lição, ou a vista anterior no palco"
        assert described["Q"] == "Requisições: lotes contínuos" and described["F"] == "Só as faixas"
        assert described["← → · Shift+← → · Home / End"].startswith("na vista de requisições:")
    finally:
        w.shutdown()


def test_the_step_buttons_fit_a_projector_in_portuguese(qtbot, qapp, portuguese) -> None:
    """1280x720 at --scale 1.5 is 853 logical pixels wide: the first toolbar row (model, prompt and the four
    step buttons, whose Portuguese names are longer) still shows every button whole."""
    from kvsim.ui import theme
    from kvsim.ui.shell.layout import WINDOW_MIN
    from kvsim.ui.shell.toolbar import ControlsToolBar

    theme.apply(qapp)
    host = QMainWindow()
    qtbot.addWidget(host)
    tb = ControlsToolBar(host)
    host.addToolBar(tb)
    host.setMinimumSize(WINDOW_MIN)
    host.resize(853, 480)
    host.show()
    qtbot.waitExposed(host)
    for action in (tb.reset_action, tb.back_action, tb.step_action, tb.play_action):
        button = tb.widgetForAction(action)
        right = button.mapTo(host, button.rect().topRight()).x()
        assert button.isVisible() and right < host.width(), (action.text(), right, host.width())
    assert tb.widgetForAction(tb.play_action).text() == "▶▶ Reproduzir"


@pytest.mark.parametrize("lang", ["en", "pt_BR"])
def test_the_closed_lane_chooser_shows_a_whole_name_that_fits(qtbot, qapp, lang) -> None:
    """The lane chooser, narrow: each set reads as a form of its own name that fits its room ("+ H2O 8+8", never
    "sem cache | KV (" cut), as wide as the widest set's shortest form; the whole name stays the box's text
    (what Enter runs), in the popup and first in the tooltip; what one types shows as typed."""
    import kvsim.caches  # noqa: F401 - the engine's registry (fill_lanes reads it)
    from kvsim.ui.shell.toolbar import ControlsToolBar, editor, lanes_forms

    i18n.install(qapp, lang)
    try:
        host = QMainWindow()
        qtbot.addWidget(host)
        tb = ControlsToolBar(host)
        host.addToolBar(tb)
        tb.fill_lanes()
        box = tb.lanes_box
        box.resize(box.sizeHint())  # as the toolbar lays it out: never narrower than its hint
        fm = box.fontMetrics()
        for i in range(box.count()):
            box.setCurrentIndex(i)
            specs = str(box.itemData(i))
            shown = box.shown_text()
            assert shown in lanes_forms(specs) and fm.horizontalAdvance(shown) <= box.room(), (specs, shown, box.room())
            assert box.currentText() == box.itemText(i) == lanes_forms(specs)[0]  # the whole name: Enter runs the set
            assert box.toolTip().startswith(box.itemText(i) + "\n")
        box.setCurrentIndex(box.findData("uncached,cached,h2o:8:r8"))
        assert box.shown_text() == "+ H2O 8+8"
        editor(box).setText("kv,window:4")  # typed: shown as typed
        assert box.shown_text() == "kv,window:4"
        hint = box.sizeHint().width()
        tb.show_lanes("kv,window:16,h2o:8:r8,tova:16")  # a set of four from the command line: its count, the box as wide
        assert box.sizeHint().width() == hint
        assert box.shown_text() in lanes_forms("kv,window:16,h2o:8:r8,tova:16")
        assert fm.horizontalAdvance(box.shown_text()) <= box.room()
    finally:
        i18n.install(qapp, "en")
