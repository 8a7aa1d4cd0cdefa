"""What the HTML report costs on a large example: recording the graph, writing the file, its size.

For one scenario (default: workloads/wait-for-deployment, 1,769 states) the search runs once without
a recorded graph and once per cap in ``--limits``; the table gives the time the recording added to
the run (search + judging + recording, best of ``--repeat``), the time ``to_html`` takes and the
file's size, with how many states and object versions the graph holds.  The size is dominated by
Cytoscape.js (435 kB) and the recorded objects; the JSON result grows by the same graph.

With ``--browser`` (Playwright and a Chromium, as for tests/e2e/test_html_browser.py) it also opens
each report headless and times until the graph is drawn as it opens (collapsed by identical
clusters above 400 states) and then with nothing collapsed.

Usage: python bench/bench_html_report.py [--scenario workloads/wait-for-deployment] [--limits 500,2000,20000]
       [--browser]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kamera_cli.model.result import CheckResult, ScenarioResult  # noqa: E402
from kamera_cli.report.html_report import to_html  # noqa: E402
from kamera_cli.report.json_report import dumps  # noqa: E402
from kamera_cli.runner import Overrides, check_file  # noqa: E402


def _timed(path: Path, limit: int, repeat: int) -> tuple[float, ScenarioResult]:
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = check_file(path, Overrides(graph_states=limit))
        best = min(best, time.perf_counter() - started)
    assert result is not None
    return best, result


def _browser_times(page: str) -> str:
    import os
    import shutil
    import tempfile

    from playwright.sync_api import sync_playwright

    chromium = os.environ.get("KAMERA_CHROMIUM") or shutil.which("chromium")
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        path = Path(tmp) / "report.html"
        path.write_text(page, encoding="utf-8")
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu",
                                                                      "--disable-background-networking"])
        tab = browser.new_page(viewport={"width": 1400, "height": 1000})
        started = time.perf_counter()
        tab.goto(path.as_uri())
        tab.wait_for_selector("body[data-graph-ready='1']", timeout=120_000)
        opened = time.perf_counter() - started
        first = tab.get_attribute("#graph", "data-drawn-nodes")
        started = time.perf_counter()
        tab.select_option("#collapse", "none")
        full = time.perf_counter() - started
        every = tab.get_attribute("#graph", "data-drawn-nodes")
        browser.close()
    return f"opens in {opened:.2f}s ({first} nodes drawn); everything ({every} nodes) in {full:.2f}s"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="workloads/wait-for-deployment")
    parser.add_argument("--limits", default="500,2000,20000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--browser", action="store_true", help="also time drawing each report in headless Chromium")
    args = parser.parse_args()
    path = ROOT / "scenarios" / args.scenario / "scenario.yaml"
    check_file(path, Overrides(graph_states=10))  # warm up: imports, caches
    base, plain = _timed(path, 0, args.repeat)
    print(f"{args.scenario}: {plain.stats.states:,} states, {plain.stats.transitions:,} transitions; "
          f"run without a graph {base:.2f}s (best of {args.repeat})")
    print(f"{'cap':>7} {'states':>7} {'edges':>7} {'objects':>8} {'+record':>8} {'to_html':>8} {'html size':>10} "
          f"{'json +':>9}")
    plain_json = len(dumps(CheckResult((plain,))).encode())
    for limit in (int(x) for x in args.limits.split(",")):
        took, result = _timed(path, limit, args.repeat)
        graph = result.graph
        assert graph is not None
        started = time.perf_counter()
        page = to_html(CheckResult((result,)))
        write = time.perf_counter() - started
        size = len(page.encode())
        extra_json = len(dumps(CheckResult((result,))).encode()) - plain_json
        print(f"{limit:>7,} {len(graph.states):>7,} {len(graph.edges):>7,} {len(graph.objects):>8,} "
              f"{took - base:>7.2f}s {write:>7.2f}s {size / 1e6:>8.2f}MB {extra_json / 1e6:>7.2f}MB")
        if args.browser:
            print("        in Chromium: " + _browser_times(page))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
