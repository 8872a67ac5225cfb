"""The app opens saved requests runs it wrote (issue 36): a requests run (one run, and prefix caching off and
on) and a continuously batched run, written by ``kvsim run --requests … --save`` into tmp_path, opened with
the window's Open (``open_run``): the Requests view shows the file's requests — their count, their tokens, each
step's snapshot — and the lanes' run is kept. A damaged one (every generated damage of a batched run, a truncated
file) is one banner line; the window keeps working (the next open, a step of the lanes)."""

from __future__ import annotations

import hostile
import pytest
from helpers import ready_window

from kvsim.cli.entry import main as cli_main
from kvsim.serving.saved_runs import load_runs

MODEL, PROMPT = "tiny", "Once upon a time"
PROMPTS = ["--prompt", "Once upon a time there was", "--prompt", "Once upon a time there lived", "--prompt", "The cat sat"]


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> dict:
    """Requests runs of the window's model written by the CLI: prefix caching on, off and on side by side, and
    continuous batching that preempts (a pool of 7 blocks of 4)."""
    root = tmp_path_factory.mktemp("requests-runs")
    common = ["run", "--model", MODEL, "--steps", "6", "--ignore-eos", "--block-size", "4", *PROMPTS]
    runs = {
        "requests": [],
        "compared": ["--compare-prefix-cache", "--repeats", "1"],
        "batched": ["--batching", "continuous", "--max-batched-tokens", "16", "--pool-blocks", "7"],
    }
    out = {}
    for name, extra in runs.items():
        path = root / f"{name}.kvsim"
        assert cli_main([*common, *extra, "--save", str(path)]) == 0
        out[name] = path
    return out


@pytest.fixture
def window(qtbot, qapp):
    w = ready_window(qtbot, qapp, MODEL, PROMPT, size=(1280, 720))
    yield w
    w.shutdown()


def _open(window, qtbot, path) -> object:
    """Open ``path`` and wait for the Requests view to show it (its computations run on the worker)."""
    assert window.open_run(str(path)), window.controller.last_error
    dock = window.extra_docks["requests"]
    qtbot.waitUntil(lambda: dock.view is not None and getattr(dock.view.computed, "source", None) == str(path), timeout=20_000)
    return dock.view


def _shows(view, runs) -> None:
    """The view draws the file's runs: its requests (count, prompt and output tokens) and every snapshot."""
    by_caching = {run.prefix_caching: run for run in runs}
    run = view.current_run()
    saved = by_caching[run.prefix_caching]
    assert len(run.requests) == len(saved.requests) == 3
    assert view.request_box.count() == 1 + len(saved.requests)  # "the step's request", then each request
    for a, b in zip(run.requests, saved.requests, strict=True):
        assert (a.prompt_ids, a.output_ids) == (b.prompt_ids, b.output_ids)
        assert len(b.output_ids) == 6
    assert view.slider.maximum() == len(saved.snapshots) - 1
    for i in (0, len(saved.snapshots) // 2, len(saved.snapshots) - 1):
        view.show_step(i)
        cells = view.grid.cells()
        snap = saved.snapshots[i]
        assert [c.owners for c in cells] == [snap.owners[b] for b in range(snap.n_blocks)]
        assert view.summary.text()
    # the tokens' text: the file is of the loaded model, so its tokenizer gives them
    ids = {t for r in saved.requests for t in (*r.prompt_ids, *r.output_ids)}
    assert set(view.computed.token_text) == ids
    assert view.editor.given().prompts == tuple(r.prompt for r in saved.requests)


def test_saved_requests_and_batched_runs_open_in_the_requests_view(window, qtbot, saved) -> None:
    c = window.controller
    before = (window.session.run.run_id, window.session.n_steps)
    with qtbot.captureExceptions() as raised:
        for name in ("requests", "compared", "batched"):
            runs = load_runs(saved[name])
            view = _open(window, qtbot, saved[name])
            assert not window.banner.isVisible()
            assert f"opened {saved[name].name}: 3 requests of tiny" in window.statusBar().currentMessage()
            _shows(view, runs)
            single = len(runs) == 1
            assert view.which_run.isEnabled() == (not single) and view.tabs.isTabEnabled(1) == (not single)
            if name == "compared":  # off and on: the chooser shows each
                for index, caching in ((1, False), (0, True)):
                    view.which_run.setCurrentIndex(index)
                    _shows(view, runs)
                    assert view.current_run().prefix_caching is caching
            if name == "batched":  # the Timeline: every request's state over the steps
                run = runs[0]
                assert run.batches and sum(r.preemptions for r in run.requests) > 0
                assert view.part == "timeline"
                assert view.timeline.states.shape == (3, len(run.batches))
                cells = {(cell.request, cell.step): cell.tokens for cell in view.timeline.cells()}
                for s, batch in enumerate(run.batches):  # each entry of each step drawn with its positions
                    for e in batch.entries:
                        assert cells[(e.request, s)] == e.tokens
            else:
                assert view.part == "blocks"
            assert "saved run:" in view.status.text()
        assert (window.session.run.run_id, window.session.n_steps) == before  # the lanes' run is kept
        assert c.run_steps(1), c.last_error
    assert not raised, raised


def test_damaged_saved_requests_runs_are_one_line_and_the_window_keeps_working(window, qtbot, saved, tmp_path) -> None:
    c = window.controller
    good = saved["batched"]
    damaged = hostile._damaged_copies(good, hostile.batched_run_changes())
    data = good.read_bytes()
    damaged["truncated"] = data[: len(data) // 2]
    with qtbot.captureExceptions() as raised:
        view = _open(window, qtbot, saved["requests"])
        shown = view.computed
        for name, raw in damaged.items():
            path = tmp_path / f"{name}.kvsim"
            path.write_bytes(raw)
            assert not c.open_run(str(path)), name
            text = window.banner.text()
            assert window.banner.isVisible() and "could not open" in text and "\n" not in text, (name, text)
            assert "\x1b" not in text and "Traceback" not in text, (name, text)
            assert view.computed is shown  # what the view showed is kept
        _open(window, qtbot, good)  # the next open works
        assert not window.banner.isVisible()
        assert c.run_steps(1), c.last_error
    assert not raised, raised
