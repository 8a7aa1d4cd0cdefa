"""The HTML report in a real browser: headless Chromium, driven by Playwright, reading the rendered DOM.

Covers: the graph is drawn (one node per recorded state, one edge per recorded transition); a real
mouse click on a state shows its objects as YAML; "show in graph" highlights a livelock's loop; the
two converged outcomes of a non-deterministic scenario are preselected for comparison and their diff
names the object that differs; both collapse modes redraw and say what they merged; no console
error, no page error and no request but the file itself.  A screenshot of each report is saved to
``build/test-artifacts/`` (or ``$KAMERA_TEST_ARTIFACTS``) for CI to keep.

Skips, saying how to install, when Playwright or a Chromium is missing.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kamera_cli.model.result import CheckResult
from kamera_cli.report import write_html
from kamera_cli.runner import Overrides, check_file

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"
ARTIFACTS = Path(os.environ.get("KAMERA_TEST_ARTIFACTS") or ROOT / "build" / "test-artifacts")
INSTALL = ("install a browser and the test extra: `apt-get install -y chromium` (or set KAMERA_CHROMIUM to a "
           "Chromium/Chrome binary) and `pip install -e '.[test,browser]'`")

sync_api = pytest.importorskip("playwright.sync_api", reason=f"playwright is not installed; {INSTALL}")


def _chromium() -> str | None:
    for candidate in (os.environ.get("KAMERA_CHROMIUM"), shutil.which("chromium"), shutil.which("chromium-browser"),
                      shutil.which("google-chrome")):
        if candidate and Path(candidate).exists():
            return candidate
    return None


# what a sandboxed CI machine needs: no GPU, no sandbox as root, and no background traffic to Google
ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-default-apps"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = _chromium()
    if executable is None:
        pytest.skip(f"no Chromium found; {INSTALL}")
    with sync_api.sync_playwright() as p:
        try:
            launched = p.chromium.launch(executable_path=executable, args=ARGS)
        except Exception as exc:  # a browser that cannot start here (missing libraries, ...)
            pytest.skip(f"Chromium at {executable} does not start: {str(exc).splitlines()[0]}; {INSTALL}")
        yield launched
        launched.close()


class Opened:
    """A loaded report page and everything it said or asked for."""

    def __init__(self, browser: Any, path: Path) -> None:
        self.console: list[tuple[str, str]] = []
        self.requests: list[str] = []
        self.page = browser.new_page(viewport={"width": 1400, "height": 1000})
        self.page.on("console", lambda m: self.console.append((m.type, m.text)))
        self.page.on("pageerror", lambda e: self.console.append(("pageerror", str(e))))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.url = path.resolve().as_uri()
        self.page.goto(self.url)
        self.page.wait_for_selector("body[data-graph-ready='1']", timeout=20_000)

    def attr(self, selector: str, name: str) -> str:
        value = self.page.get_attribute(selector, name)
        assert value is not None, f"{selector} has no {name}"
        return str(value)

    def click_state(self, state_id: int) -> None:
        """A real mouse click at the node's position on the canvas.

        ``cy.resize()`` drops Cytoscape's cached position of its container, which it otherwise
        refreshes only some milliseconds after a scroll (a person never clicks that fast).
        """
        self.page.locator("#graph").scroll_into_view_if_needed()
        where = self.page.evaluate(
            """id => { const cy = window.kameraReport.cy; const n = cy.getElementById('n' + id);
                       cy.resize(); cy.center(n); const p = n.renderedPosition();
                       const r = document.getElementById('graph').getBoundingClientRect();
                       return {x: r.left + p.x, y: r.top + p.y}; }""", state_id)
        self.page.mouse.click(where["x"], where["y"])

    def clean(self) -> None:
        bad = [(kind, text) for kind, text in self.console if kind in ("error", "warning", "pageerror")]
        assert not bad, f"console: {bad}"
        assert self.requests == [self.url], f"requests beyond the file: {self.requests}"
        assert self.page.evaluate("window.kameraReport.errors") == []

    def screenshot(self, name: str) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        target = ARTIFACTS / name
        self.page.locator("#explorer").scroll_into_view_if_needed()
        self.page.screenshot(path=str(target))
        assert target.stat().st_size > 10_000
        return target


def _report(tmp_path: Path, *rels: str, limit: int = 2000) -> tuple[Path, CheckResult]:
    result = CheckResult(tuple(check_file(SCENARIOS / rel / "scenario.yaml", Overrides(graph_states=limit))
                               for rel in rels))
    target = tmp_path / "report.html"
    write_html(result, target)
    return target, result


def test_graph_is_drawn_and_a_click_shows_the_state(browser: Any, tmp_path: Path) -> None:
    path, result = _report(tmp_path, "bugs/order-dependent")
    graph = result.scenarios[0].graph
    assert graph is not None
    page = Opened(browser, path)
    assert int(page.attr("#graph", "data-drawn-nodes")) == len(graph.states) == result.scenarios[0].stats.states
    assert int(page.attr("#graph", "data-drawn-edges")) == len(graph.edges)
    assert "All 7 explored states" in page.page.inner_text("#graph-note")
    page.click_state(1)
    panel = page.page.inner_text("#state-panel")
    assert panel.startswith("State 1") and "object(s)" in panel
    assert "v1/ConfigMap default/settings" in panel
    page.page.click("#state-panel details.obj:has-text('v1/ConfigMap default/settings') summary")
    yaml_text = page.page.inner_text("#state-panel details.obj[open] pre.yaml")
    assert "kind: ConfigMap" in yaml_text and "name: settings" in yaml_text
    # two outcomes preselected: their diff names the field that differs
    diff = page.page.inner_text("#diff-panel")
    assert "1 object(s) differ" in diff and "/data/owner" in diff and "team-a" in diff and "team-b" in diff
    page.screenshot("html-report-order-dependent.png")
    page.clean()


def test_a_livelock_loop_is_highlighted_from_its_timeline(browser: Any, tmp_path: Path) -> None:
    path, _result = _report(tmp_path, "quickstart", "bugs/livelock")
    page = Opened(browser, path)
    # the failing scenario is listed first, though it was checked second
    assert "bug-livelock" in page.page.inner_text("section[data-scenario='0'] h2")
    page.page.click("section[data-scenario='0'] button.show-path")
    assert page.page.eval_on_selector("#graph-scenario", "s => s.value") == "0"
    # transitions carry short labels, explained by the legend, full on hover
    labels = page.page.evaluate("() => window.kameraReport.cy.edges().map(e => e.data('label')).sort()")
    assert set(labels) <= {"au", "de"} and labels
    legend = page.page.inner_text("#edge-legend")
    assert "au = autoscaler" in legend and "de = deployer" in legend
    counts = page.page.evaluate("""() => { const cy = window.kameraReport.cy;
        return {loop: cy.edges('.onloop').length, path: cy.edges('.onpath').length,
                nodes: cy.nodes('.onpath').length}; }""")
    assert counts == {"loop": 2, "path": 1, "nodes": 3}
    page.page.click("section[data-scenario='0'] li.step.loop >> nth=0 >> button.goto")
    assert page.page.inner_text("#state-panel").startswith("State ")
    assert page.page.evaluate("window.kameraReport.cy.nodes(':selected').length") == 1
    page.screenshot("html-report-livelock.png")
    page.clean()


def test_collapse_modes_redraw_and_say_what_they_merged(browser: Any, tmp_path: Path) -> None:
    path, result = _report(tmp_path, "bugs/exception-one-ordering", limit=12)
    page = Opened(browser, path)
    note = page.page.inner_text("#graph-note")
    assert "Recorded 12 of 13 explored states" in note and "Explored states per depth" in note
    drawn = int(page.attr("#graph", "data-drawn-nodes"))
    assert drawn == 12
    page.page.select_option("#collapse", "depth")
    page.page.fill("#depth", "1")
    page.page.dispatch_event("#depth", "change")
    shallow = int(page.attr("#graph", "data-drawn-nodes"))
    assert shallow < drawn and "deeper than 1" in page.page.inner_text("#graph-note")
    page.page.select_option("#collapse", "objects")
    merged = int(page.attr("#graph", "data-drawn-nodes"))
    assert merged <= drawn and "the same objects" in page.page.inner_text("#graph-note")
    page.screenshot("html-report-collapsed.png")
    page.clean()
    assert result.scenarios[0].graph is not None


def test_hostile_strings_render_as_text_in_the_browser(browser: Any, tmp_path: Path) -> None:
    """Markup in every field a controller or a scenario controls: no dialog, no error, shown literally."""
    from kamera_cli.model.graph import GraphEdge, GraphState, StateGraph
    from kamera_cli.model.objects import ObjectRef
    from kamera_cli.model.result import Check, Counterexample, ScenarioResult, Step, Verdict, Write

    bad = "<img src=x onerror=alert(1)><script>alert(2)</script>\"'><svg onload=alert(3)>\u2028</script>"
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": bad, "namespace": "default"},
           "data": {bad: bad}}
    step = Step(1, "reconcile", bad, bad, (Write("created", ObjectRef("v1", "ConfigMap", "default", bad)),),
                note=bad, error=bad, log=bad, reads=(bad,))
    graph = StateGraph(states=(GraphState(0, 0, bad, (), ("initial",), pending=(bad,)),
                               GraphState(1, 1, bad, ("k",), ("violation",), pending=(bad,))),
                       edges=(GraphEdge(0, 1, "reconcile", bad, bad, bad, (bad,)),), objects=(("k", obj),),
                       total_states=2, total_edges=1, depth_counts=(1, 1), limit=10)
    cx = Counterexample("invariant", bad, steps=(step,), details=bad, nodes=(0, 1))
    scenario = ScenarioResult(name=bad, file=bad, verdict=Verdict.FAILED, description=bad, notes=(bad,),
                              checks=(Check(bad, Verdict.FAILED, bad, (cx,)),), graph=graph)
    path = tmp_path / "hostile.html"
    write_html(CheckResult((scenario,), notes=(bad,)), path)
    page = Opened(browser, path)
    dialogs: list[str] = []
    page.page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.click_state(1)
    panel = page.page.inner_text("#state-panel")
    assert "<img src=x onerror=alert(1)>" in panel, "the state's name is shown as text"
    page.page.click("#state-panel details.obj summary")
    assert "onerror=alert(1)" in page.page.inner_text("#state-panel pre.yaml")
    page.page.select_option("#diff-b", "1")
    assert "created v1/ConfigMap default/<img" in page.page.inner_text("#diff-panel")
    page.page.click("li.step button.goto")
    assert page.page.evaluate("document.querySelectorAll('img, svg, iframe').length") == 0
    assert page.page.evaluate("document.querySelectorAll('script').length") == 3
    assert dialogs == []
    page.clean()
