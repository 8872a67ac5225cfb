"""The run as one web page (kvsim.engine.html_page): escaped, within its budget, written atomically and read back,
its numbers the run's. The page in a real browser: tests/app/views/test_web_page.py."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest

from kvsim.caches import parse_lanes
from kvsim.cli.entry import main as cli_main
from kvsim.core.atomic import WriteError
from kvsim.engine import html_page
from kvsim.engine.html_page import embed_json, page_data, page_html, read_page_data, write_page
from kvsim.engine.simulate import Simulator
from kvsim.engine.trace import Trace

DEMOS = Path(__file__).resolve().parents[3] / "resources" / "demos"
HOSTILE = "</script><script>window.pwned=1</script><!-- <img src=x onerror=alert(1)> \u2028\u2029 & ]]> {{DATA}} {{LANG}}"


def _trace(tiny, steps: int, lanes: str = "uncached,cached", prompt: str = "Once upon a time", model_id: str = "tiny") -> Trace:
    ids = tiny.tokenizer.encode(prompt)
    sim = Simulator(tiny.model, tiny.tokenizer, ids, parse_lanes(lanes), model_id=model_id, prompt_text=prompt, warmup=False)
    records = list(sim.run(steps, stop_at_eos=False))
    return Trace(meta=sim.trace.meta, records=records)


@pytest.fixture(scope="module")
def run40(tiny) -> Trace:
    return _trace(tiny, 40)


def _floats(data: dict, name: str) -> np.ndarray:
    kind, b64 = data["arrays"][name]
    assert kind == "f32"
    return np.frombuffer(base64.b64decode(b64), dtype="<f4")


def test_embedded_json_cannot_close_the_script_or_break_a_line():
    text = embed_json({"s": HOSTILE})
    for bad in ("<", ">", "&", "\u2028", "\u2029"):
        assert bad not in text
    assert json.loads(text) == {"s": HOSTILE}


def test_a_hostile_prompt_and_model_name_stay_text(tiny, tmp_path):
    trace = _trace(tiny, 2, prompt=HOSTILE, model_id="<b>evil</b></script><script>alert(1)</script>")
    page, data = page_html(trace)
    assert page.count("<script") == 2 and page.count("</script>") == 2  # the data element and the page's own script
    assert "<img" not in page and "<b>" not in page and "\u2028" not in page
    assert "innerHTML" not in page and "document.write" not in page  # the script writes text only
    back = read_page_data(write_page(trace, tmp_path / "h.html").path)
    assert back["prompt"] == HOSTILE and back["model"].startswith("<b>evil</b>")
    assert "{{LANG}}" in back["prompt"]  # the template's holes are filled once, never inside the data
    assert "content=\"default-src 'none'" in page  # nothing may be fetched, even by an edited page


def test_a_40_step_tiny_run_with_two_lanes_fits_in_2_mb_with_every_view(run40, tmp_path):
    report = write_page(run40, tmp_path / "run.html")
    assert report.size_bytes < 2_000_000 and report.path.stat().st_size == report.size_bytes
    assert report.dropped == () and report.views == report.views_recorded == 24
    data = read_page_data(report.path)
    # the no-cache and cached lanes attend alike: their rows are one shared array, not two
    assert data["lanes"][0]["attention"]["0,0"] == data["lanes"][1]["attention"]["0,0"]


def test_past_the_budget_views_are_dropped_and_said(run40):
    data = page_data(run40, budget_bytes=250_000)
    assert 1 <= len(data["views"]) < 24 and data["views"][0] == [0, 0]
    assert data["dropped"] and "of 24 (layer, head) views" in data["dropped"][0]
    assert data["budget"] == {"mb": 0.25, "views": len(data["views"]), "recorded": 24}  # what the page says, in its language
    assert len(embed_json(data)) < 250_000
    tiny_budget = page_data(run40, budget_bytes=1)  # the first view is kept whatever the budget
    assert tiny_budget["views"] == [[0, 0]]


def test_the_page_holds_the_runs_numbers(run40):
    data = page_data(run40)
    P, n = data["prompt_len"], data["n_steps"]
    assert n == 40 and data["tokens"][P:] == [r.token for r in run40.records]
    for j, lane in enumerate(data["lanes"]):
        assert lane["computed"] == np.cumsum([r.lanes[j].kv_positions for r in run40.records]).tolist()
        assert lane["cache_bytes"] == [r.lanes[j].cache_bytes for r in run40.records]
    att = _floats(data, data["lanes"][1]["attention"]["2,3"])
    assert att.size == sum(P + s for s in range(n))
    last = att[-(P + n - 1) :]  # the last step's row: every key read, probabilities summing to 1
    assert not np.isnan(last).any() and abs(float(last.sum()) - 1) < 1e-5
    k = _floats(data, data["kv"]["2,1"]["k"]).reshape(-1, data["shape"]["width"])
    np.testing.assert_array_equal(k, np.concatenate([r.k[2, 1] for r in run40.records]))


def test_a_window_lane_reads_only_its_window():
    trace = Trace.load(DEMOS / "window-and-sinks.kvsim")
    data = page_data(trace)
    P = data["prompt_len"]
    s = data["n_steps"] - 1
    lane = next(i for i, lane in enumerate(data["lanes"]) if lane["name"] == "window:16")
    att = _floats(data, data["lanes"][lane]["attention"]["0,0"])
    row = att[s * P + s * (s - 1) // 2 :][: P + s]
    read = np.flatnonzero(~np.isnan(row))
    assert read.tolist() == list(range(P + s - 16, P + s)) and abs(float(row[read].sum()) - 1) < 1e-5


def test_a_failed_read_back_keeps_the_old_file(run40, tmp_path, monkeypatch):
    target = tmp_path / "run.html"
    target.write_text("the old page")
    monkeypatch.setattr(html_page, "read_page_data", lambda path: {"format": 0})
    with pytest.raises(WriteError, match="does not read back"):
        write_page(run40, target)
    assert target.read_text() == "the old page" and [p.name for p in tmp_path.iterdir()] == ["run.html"]


def test_export_html_from_a_saved_run_and_its_refusals(tmp_path, capsys):
    out = tmp_path / "demo.html"
    assert cli_main(["export", "--from", str(DEMOS / "quantized-cache.kvsim"), "--html", str(out), "--lang", "pt_BR"]) == 0
    said = capsys.readouterr().out
    steps = len(Trace.load(DEMOS / "quantized-cache.kvsim").records)  # the page's steps: every record of the run
    assert f"{out}: web page, {steps} steps, 3 lanes, 24 of 24 (layer, head) views" in said
    assert read_page_data(out)["lang"] == "pt_BR" and '<html lang="pt-BR">' in out.read_text()
    assert cli_main(["export", "--from", str(DEMOS / "quantized-cache.kvsim"), "--html", str(out), "--max-mb", "0.3"]) == 0
    assert "left out: attention and K/V of" in capsys.readouterr().out
    for argv, message in [
        (["--html", str(out)], "give --prompt, --prompt-ids or --from RUN.kvsim"),
        (["--prompt", "x", "--html", str(out), "--out", str(tmp_path / "a.gif")], "not both"),
        (["--prompt", "x"], "give --out FILE.gif|FILE.mp4 (an animation) or --html FILE.html"),
        (["--from", str(DEMOS / "quantized-cache.kvsim"), "--out", str(tmp_path / "a.gif")], "for --html only"),
        (["--from", str(DEMOS / "quantized-cache.kvsim"), "--html", str(tmp_path)], "--html: cannot write"),
        (["--prompt", "x", "--html", str(out), "--lang", "fr"], "--lang must be pt_BR or en"),
    ]:
        assert cli_main(["export", *argv]) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("error: ") and message in err and err.count("\n") == 1, (argv, err)


def test_export_html_from_a_live_runs_flags(tmp_path, capsys):
    out = tmp_path / "live.html"
    assert cli_main(["export", "--prompt-ids", "5,6,7", "--steps", "3", "--lanes", "kv,window:2", "--html", str(out)]) == 0
    data = read_page_data(out)
    assert data["n_steps"] == 3 and [lane["name"] for lane in data["lanes"]] == ["kv", "window:2"]
    assert data["model"] == "tiny" and data["version"] and "web page, 3 steps, 2 lanes" in capsys.readouterr().out
