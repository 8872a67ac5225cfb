"""The run as a web page (``kvsim export --html``) in a real browser: Debian's chromium, headless, driven by selenium
through chromium-driver, one browser for the whole module, the network off.

Each bundled demo's page is stepped with → through every step and, at each, its numbers are the app's: the K/V row
count, the attention row of the step's query (the app's own ``DerivedImages.attention_values``, to 1e-6), the
cumulative K/V rows computed, the measured time and the cache's bytes. The page loads with no console error and no
request; the keys, a swipe and the language switch work; at 360×640, 853×480 and 1920×1080 nothing overlaps, nothing
leaves the screen and no text is cut; a hostile prompt and model name run nothing and stay text. Skipped, saying why,
where chromium, chromium-driver or selenium is missing (`.ci/run` installs them)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.slow
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e '.[test]')")

from selenium.webdriver.common.keys import Keys  # noqa: E402

from kvsim.engine.html_page import write_page  # noqa: E402
from kvsim.engine.trace import Trace  # noqa: E402

DEMOS = Path(__file__).resolve().parents[3] / "resources" / "demos"
DEMO_FILES = ("cache-vs-no-cache.kvsim", "window-and-sinks.kvsim", "quantized-cache.kvsim")
HOSTILE = "</script><script>window.pwned=1</script><!-- <img src=x onerror=window.pwned=2> \u2028 <b>bold</b>"
BROWSER = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
DRIVER = shutil.which("chromedriver")


@pytest.fixture(scope="module")
def browser():
    if BROWSER is None or DRIVER is None:
        pytest.skip("needs a real browser: Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,720"):
        options.add_argument(arg)
    options.binary_location = BROWSER
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.execute_cdp_cmd("Network.enable", {})
    offline = {"offline": True, "latency": 0, "downloadThroughput": 0, "uploadThroughput": 0}
    driver.execute_cdp_cmd("Network.emulateNetworkConditions", offline)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, tuple[Path, Trace]]:
    folder = tmp_path_factory.mktemp("pages")
    out = {}
    for name in DEMO_FILES:
        trace = Trace.load(DEMOS / name)
        out[name] = (write_page(trace, folder / f"{name}.html").path, trace)
    trace = Trace.load(DEMOS / DEMO_FILES[0])
    trace.meta = {**trace.meta, "prompt": HOSTILE, "model_id": "<b>evil</b></script><script>window.pwned=3</script>"}
    trace.meta["prompt_tokens"] = {k: HOSTILE for k in trace.meta["prompt_tokens"]}  # every token label hostile too
    out["hostile"] = (write_page(trace, folder / "hostile.html").path, trace)
    return out


def _open(driver, path: Path) -> None:
    driver.get_log("browser"), driver.get_log("performance")  # drop what an earlier page left
    driver.get(path.as_uri())
    assert driver.execute_script("return document.body.dataset.step") == "0"


def _problems(driver, page: Path) -> list[str]:
    """Console errors and every request other than the page itself, since the last call."""
    out = [f"console: {e['message']}" for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            url = message["params"]["request"]["url"]
            if url != page.as_uri():
                out.append(f"request: {url}")
    resources = driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    return out + [f"resource: {r}" for r in resources]


def _press(driver, key: str, times: int = 1) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    chain = ActionChains(driver)
    for _ in range(times):
        chain.send_keys(key)
    chain.perform()


SHOWN = """return [...document.querySelectorAll('.lane')].map(c => ({
  rows: Number(c.querySelector('.kv-rows').dataset.value),
  attention: JSON.parse(c.querySelector('canvas.att').dataset.values),
  computed: Number(c.querySelector('dd.computed').dataset.value),
  ms: Number(c.querySelector('dd.ms').dataset.value),
  bytes: Number(c.querySelector('.billtext').dataset.value),
  text: c.innerText}))"""


def _app_session(qapp, trace: Trace):
    """The app's own session and derived images for ``trace``: what the window draws at each step."""
    from kvsim.ui.lanes.derived import DerivedImages
    from kvsim.ui.session import RunInfo, Session

    session = Session()
    session.start_run(RunInfo.from_trace(trace.meta, trace.records[0].run_id))
    for record in trace.records:
        assert session.add_record(record)
    return session, DerivedImages(session)


@pytest.mark.parametrize("demo", DEMO_FILES)
def test_a_demos_page_replays_the_apps_numbers_at_every_step(browser, pages, qapp, demo):
    path, trace = pages[demo]
    session, derived = _app_session(qapp, trace)
    _open(browser, path)
    P = session.prompt_len
    for step in range(session.n_steps):
        if step:
            _press(browser, Keys.ARROW_RIGHT)
        assert browser.execute_script("return document.body.dataset.step") == str(step)
        session.set_cursor(step)
        for j, shown in enumerate(browser.execute_script(SHOWN)):
            where = f"{demo} step {step} lane {session.lanes[j].name}"
            assert shown["rows"] == session.n_rows(step) == P + step, where
            want = derived.attention_values(j, 0, 0, P + step - 1)
            got = np.array([np.nan if x is None else x for x in shown["attention"]], dtype=np.float64)
            assert got.shape == want.shape, where
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=where)
            assert np.nanmax(np.abs(got - want), initial=0.0) < 1e-6, where
            assert shown["computed"] == session.cumulative(j, step)[0], where
            assert shown["ms"] == pytest.approx(session.series("ms", j)[step], abs=1e-4), where
            assert shown["bytes"] == session.series("bytes", j)[step], where
    assert _problems(browser, path) == []


def test_keys_swipe_and_language(browser, pages):
    path, trace = pages[DEMO_FILES[0]]
    _open(browser, path)
    last = str(len(trace.records) - 1)
    step = lambda: browser.execute_script("return document.body.dataset.step")  # noqa: E731
    _press(browser, Keys.END)
    assert step() == last
    _press(browser, Keys.PAGE_UP, 2)
    assert step() == str(int(last) - 2)
    _press(browser, Keys.HOME)
    assert step() == "0"
    _press(browser, Keys.PAGE_DOWN, 3)
    _press(browser, Keys.ARROW_LEFT)
    assert step() == "2"
    for kind, x in (("touchStart", 300), ("touchMove", 120), ("touchEnd", 120)):  # a swipe to the left: the next step
        points = [] if kind == "touchEnd" else [{"x": x, "y": 400}]
        browser.execute_cdp_cmd("Input.dispatchTouchEvent", {"type": kind, "touchPoints": points})
    assert step() == "3"
    _press(browser, " ")  # Space plays: the steps go on by themselves
    deadline = time.monotonic() + 5
    while step() == "3" and time.monotonic() < deadline:
        time.sleep(0.05)
    _press(browser, " ")
    assert step() != "3"
    where = browser.find_element("id", "where")
    assert where.text.startswith("step ")
    browser.find_element("id", "lang").click()
    assert where.text.startswith("passo ") and browser.find_element("id", "lang").text == "English"
    assert "linhas de K" in browser.find_element("css selector", ".lane").text
    assert _problems(browser, path) == []


LAYOUT = """
const bad = [], W = document.documentElement.clientWidth;
if (document.documentElement.scrollWidth > W + 1) bad.push('the page scrolls sideways: ' + document.documentElement.scrollWidth);
const shown = (e) => { const s = getComputedStyle(e); const r = e.getBoundingClientRect();
  return s.display !== 'none' && s.visibility !== 'hidden' && r.width > 0 && r.height > 0; };
const name = (e) => e.tagName + (e.id ? '#' + e.id : '') + (e.className ? '.' + e.className : '');
for (const e of document.body.querySelectorAll('*')) {
  if (!shown(e)) continue;
  const r = e.getBoundingClientRect(), s = getComputedStyle(e);
  if (r.left < -1 || r.right > W + 1) bad.push('off the screen: ' + name(e) + ' ' + r.left + '..' + r.right);
  if (e.scrollWidth > e.clientWidth + 1 && s.display !== 'inline') bad.push('text cut: ' + name(e));
  const blocks = [...e.children].filter((c) => shown(c) && getComputedStyle(c).display !== 'inline');
  for (let i = 0; i < blocks.length; i++) for (let j = i + 1; j < blocks.length; j++) {
    const a = blocks[i].getBoundingClientRect(), b = blocks[j].getBoundingClientRect();
    const w = Math.min(a.right, b.right) - Math.max(a.left, b.left), h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
    if (w > 1 && h > 1) bad.push('overlap: ' + name(blocks[i]) + ' / ' + name(blocks[j]));
  }
}
return bad;"""


@pytest.mark.parametrize("size", [(360, 640), (853, 480), (1920, 1080)])
def test_no_overlap_no_cut_text_on_a_phone_a_projector_and_a_screen(browser, pages, size):
    path, _trace = pages[DEMO_FILES[1]]  # three lanes, the longest names
    metrics = {"width": size[0], "height": size[1], "deviceScaleFactor": 1, "mobile": size[0] < 500}
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    try:
        _open(browser, path)
        _press(browser, Keys.END)  # the last step: the longest text, the fullest tables
        for lang in ("en", "pt_BR"):
            assert browser.execute_script(LAYOUT) == [], (size, lang)
            browser.find_element("id", "lang").click()
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    assert _problems(browser, path) == []


def test_a_hostile_prompt_and_model_name_run_nothing(browser, pages):
    path, trace = pages["hostile"]
    _open(browser, path)
    _press(browser, Keys.END)
    assert browser.execute_script("return window.pwned === undefined")
    assert browser.execute_script("return document.querySelectorAll('script').length") == 2
    assert browser.execute_script("return document.querySelectorAll('body b, body img').length") == 0
    assert browser.find_element("id", "title").text == "kvsim — " + trace.meta["model_id"]
    assert HOSTILE.split("\u2028")[0] in browser.execute_script("return document.getElementById('text').textContent")
    assert _problems(browser, path) == []


def test_dark_when_the_system_is_dark(browser, pages):
    path, _trace = pages[DEMO_FILES[0]]
    background = "return getComputedStyle(document.body).backgroundColor"
    _open(browser, path)
    light = browser.execute_script(background)
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
    try:
        dark = browser.execute_script(background)
    finally:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
    assert light != dark and sum(int(x) for x in dark[4:-1].split(",")) < 150 < sum(int(x) for x in light[4:-1].split(","))
