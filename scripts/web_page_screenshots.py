"""Pictures of the web page a run is exported to (``kvsim export --html``), taken in a real browser.

    python scripts/web_page_screenshots.py            # writes docs/screenshots/web-page-*.png

Exports the bundled demo ``window-and-sinks.kvsim`` and opens it in Debian's chromium (headless, through
chromium-driver and selenium, the network off), at a projector's 1280×720 (light and dark) and a phone's 360×640,
stepped to step 8.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's kvsim, installed or not
SHOTS = (("web-page-1280x720.png", 1280, 720, "light"), ("web-page-dark-1280x720.png", 1280, 720, "dark"),
         ("web-page-phone-360x640.png", 360, 640, "light"))  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots", help="the folder for the PNGs")
    parser.add_argument("--step", type=int, default=8, help="the step shown (default 8)")
    args = parser.parse_args(argv)
    browser = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
    driver_path = shutil.which("chromedriver")
    if browser is None or driver_path is None:
        print("error: needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)", file=sys.stderr)
        return 2
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    from kvsim.engine.html_page import write_page
    from kvsim.engine.trace import Trace

    with tempfile.TemporaryDirectory() as tmp:
        page = write_page(Trace.load(ROOT / "resources" / "demos" / "window-and-sinks.kvsim"), Path(tmp) / "run.html").path
        options = webdriver.ChromeOptions()
        for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"):
            options.add_argument(arg)
        options.binary_location = browser
        driver = webdriver.Chrome(service=Service(driver_path), options=options)
        try:
            offline = {"offline": True, "latency": 0, "downloadThroughput": 0, "uploadThroughput": 0}
            driver.execute_cdp_cmd("Network.enable", {})
            driver.execute_cdp_cmd("Network.emulateNetworkConditions", offline)
            for name, width, height, scheme in SHOTS:
                metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 500}
                driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
                media = {"features": [{"name": "prefers-color-scheme", "value": scheme}]}
                driver.execute_cdp_cmd("Emulation.setEmulatedMedia", media)
                driver.get(page.as_uri())
                driver.execute_script(f"for (let i = 0; i < {args.step}; i++) document.getElementById('next').click()")
                target = args.out / name
                target.write_bytes(driver.get_screenshot_as_png())
                print(f"{target}: {width}x{height}, {scheme}, step {args.step}")
        finally:
            driver.quit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
