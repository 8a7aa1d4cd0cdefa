"""The README's picture of the HTML report, made from an example scenario in headless Chromium.

Run: python scripts/screenshot_report.py [--scenario bugs/order-dependent] [--out docs/images/html-report.png]

Checks the scenario with the graph recorded, writes the report next to the image (``.html``, not
committed), opens it in Chromium through Playwright (``pip install -e '.[browser]'`` and Debian's
``chromium``; ``KAMERA_CHROMIUM`` points at another binary), clicks the state after the first step
of the first counterexample, so the inspector shows that state (its objects folded) and the two
outcomes' diff, and saves a screenshot of the state-graph section.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kamera_cli.model.result import CheckResult  # noqa: E402
from kamera_cli.report import write_html  # noqa: E402
from kamera_cli.runner import Overrides, check_file  # noqa: E402

ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="bugs/order-dependent")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images" / "html-report.png")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    scenario = ROOT / "scenarios" / args.scenario / "scenario.yaml"
    result = CheckResult((check_file(scenario, Overrides(graph_states=2000)),))
    report = args.out.with_suffix(".html")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_html(result, report)
    chromium = os.environ.get("KAMERA_CHROMIUM") or shutil.which("chromium") or shutil.which("google-chrome")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 860}, device_scale_factor=1)
        page.goto(report.resolve().as_uri())
        page.wait_for_selector("body[data-graph-ready='1']")
        page.click("li.step >> nth=0 >> button.goto")
        page.locator("#explorer").screenshot(path=str(args.out))
        browser.close()
    report.unlink()
    print(f"wrote {args.out} ({args.out.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
