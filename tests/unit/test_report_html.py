"""The HTML report without a browser: self-contained, complete, injection-proof, stable.

Covers: no fetch of any kind (no external src/href/url(), a CSP of default-src 'none' whose script
hashes match exactly the inline scripts); every scenario, check, counterexample step and converged
outcome present; the JSON island parses back to the page data; hostile strings from controllers and
scenario files (markup, a closing </script>, attribute breakers, ANSI escapes, U+2028) arrive as
text and never as elements, attributes or script; the vendored library and its licence are there;
identical input gives identical bytes.  tests/e2e/test_html_browser.py drives the page in Chromium.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

from kamera_cli.model.graph import GraphEdge, GraphState, StateGraph
from kamera_cli.model.objects import ObjectRef
from kamera_cli.model.result import Check, CheckResult, Counterexample, ScenarioResult, Step, Verdict, Write
from kamera_cli.report import to_html, write_html
from kamera_cli.report.html_report import (
    CYTOSCAPE_ASSET,
    CYTOSCAPE_VERSION,
    abbreviations,
    failing_first,
    page_data,
)

try:
    from tests.unit.test_report_samples import everything, livelock
except ImportError:  # tests/unit is not a package: pytest put this folder on sys.path
    from test_report_samples import everything, livelock  # type: ignore[no-redef]

ASSETS = Path(__file__).resolve().parents[2] / "kamera_cli" / "report" / "assets"
WHEN = "2026-01-01T00:00:00Z"


class Page(HTMLParser):
    """Every element with its attributes, the text of each <script>, and all visible text."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self.text: list[str] = []
        self._in_script = False
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))
        if tag == "script":
            self._in_script = True
            self.scripts.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1] += data
        else:
            self.text.append(data)

    def tags(self, name: str) -> list[dict[str, str | None]]:
        return [attrs for tag, attrs in self.elements if tag == name]

    @property
    def visible(self) -> str:
        return "".join(self.text)


def _page(result: CheckResult) -> tuple[str, Page]:
    text = to_html(result, generated_at=WHEN)
    return text, Page(text)


def test_nothing_is_fetched_when_the_file_is_opened() -> None:
    text, page = _page(everything())
    for _tag, attrs in page.elements:
        for name in ("src", "href", "action", "data", "poster", "srcset"):
            value = attrs.get(name) or ""
            assert not re.match(r"\s*(https?:)?//", value), f"{name}={value!r} would be fetched"
            assert not (name == "src" and value), "every script and image is inline"
    assert not page.tags("link") and not page.tags("iframe") and not page.tags("img")
    assert "@import" not in text and not re.search(r"url\(\s*['\"]?(https?:)?//", text)
    (csp,) = [a["content"] for a in page.tags("meta") if a.get("http-equiv") == "Content-Security-Policy"]
    assert csp is not None and csp.startswith("default-src 'none';")
    executable = [s for attrs, s in zip(page.tags("script"), page.scripts) if attrs.get("type") != "application/json"]
    hashes = set(re.findall(r"'sha256-([^']+)'", csp))
    assert len(executable) == 2 and hashes == {
        base64.b64encode(hashlib.sha256(s.encode()).digest()).decode() for s in executable}


def test_the_graph_library_and_its_licence_are_inlined() -> None:
    _text, page = _page(everything())
    library = (ASSETS / CYTOSCAPE_ASSET).read_text(encoding="utf-8")
    assert library in page.scripts
    assert f'version="{CYTOSCAPE_VERSION}"' in library
    licence = (ASSETS / "cytoscape-LICENSE.txt").read_text(encoding="utf-8")
    assert "Permission is hereby granted" in licence and "Permission is hereby granted" in library[:2000]
    assert f"Cytoscape.js {CYTOSCAPE_VERSION}" in page.visible


def test_every_scenario_check_step_and_outcome_is_in_the_page() -> None:
    result = everything()
    _text, page = _page(result)
    visible = page.visible
    for scenario in result.scenarios:
        assert scenario.name in visible
        for check in scenario.checks:
            assert check.name in visible and check.message in visible
            for cx in check.counterexamples:
                assert cx.summary in visible
                for step in (*cx.steps, *cx.loop, *cx.alternative):
                    assert step.actor in visible
                    for write in step.writes:
                        assert write.describe() in visible
                        assert all(d.path in visible for d in write.diff)
                    assert all(r in visible for r in step.reads)
                for node in cx.selected:
                    assert node.label in visible and node.path in visible
        assert f"{len(scenario.converged)} object" in visible or not scenario.converged
    assert "bound hit: maxStates 100000 reached" in visible
    assert "'entrypoint' is a required property" in visible
    assert "↺ back to step 2" in visible


def test_timeline_steps_point_at_the_states_after_them() -> None:
    _text, page = _page(CheckResult((livelock(),)))
    steps = [a for tag, a in page.elements if tag == "li" and "step" in (a.get("class") or "").split()]
    assert [s.get("data-node") for s in steps] == ["1", "2", "1"]  # nodes (0, 1, 2, 1): after each step
    (button,) = [a for tag, a in page.elements if tag == "button" and a.get("class") == "show-path"]
    assert button["data-path"] == "0.0" and button["data-scenario"] == "0"


def test_the_data_island_reads_back_as_the_page_data() -> None:
    result = everything()
    _text, page = _page(result)
    (island,) = [s for a, s in zip(page.tags("script"), page.scripts) if a.get("id") == "kamera-data"]
    data = json.loads(island)
    assert data == json.loads(json.dumps(page_data(failing_first(result))))
    (fight,) = [s for s in data["scenarios"] if s["graph"]]
    assert fight["paths"][0]["nodes"] == [0, 1, 2, 1] and fight["paths"][0]["loop_start"] == 1
    assert len(fight["graph"]["states"]) == 3 and fight["graph"]["omitted"]


HOSTILE = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(2)>',
    "'><svg onload=alert(3)>",
    "</script><script>alert(4)</script>",
    "<!-- </textarea> ]]> &amp; &lt;",
    "\x1b[31mred\x1b[0m and \u2028 line separator",
]


def _hostile_result() -> CheckResult:
    bad = " ".join(HOSTILE)
    ref = ObjectRef("v1", "ConfigMap", "default", bad)
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": bad, "namespace": "default"},
           "data": {bad: bad}}
    step = Step(1, "reconcile", bad, bad, (Write("created", ref),), note=bad, error=bad, log=bad, reads=(bad,))
    cx = Counterexample("invariant", bad, steps=(step,), details=bad, nodes=(0, 1))
    graph = StateGraph(
        states=(GraphState(0, 0, bad, (), ("initial",), pending=(bad,)), GraphState(1, 1, bad, ("k",), ("violation",))),
        edges=(GraphEdge(0, 1, "reconcile", bad, bad, bad, (bad,)),), objects=(("k", obj),), total_states=2,
        total_edges=1, depth_counts=(1, 1), limit=10)
    scenario = ScenarioResult(name=bad, file=bad, verdict=Verdict.FAILED, description=bad, notes=(bad,),
                              checks=(Check(bad, Verdict.FAILED, bad, (cx,)),), graph=graph)
    return CheckResult((scenario, replace(scenario, verdict=Verdict.ERROR, error=bad, graph=None)), notes=(bad,))


def test_hostile_strings_stay_text() -> None:
    text, page = _page(_hostile_result())
    scripts = page.tags("script")
    assert len(scripts) == 3, "no script element but the page's own"
    assert not page.tags("img") and not page.tags("svg")
    for tag, attrs in page.elements:
        assert not any(name.startswith("on") for name in attrs), f"an event handler attribute on <{tag}>"
    assert "alert(1)" in page.visible and "<script>alert(1)</script>" in page.visible  # shown, as text
    assert "\x1b" not in text, "ANSI escapes are dropped"
    (island,) = [s for a, s in zip(scripts, page.scripts) if a.get("id") == "kamera-data"]
    assert "<" not in island and "\u2028" not in island
    (drawn,) = [s for s in json.loads(island)["scenarios"] if s["graph"]]
    assert drawn["graph"]["objects"]["k"]["data"][" ".join(HOSTILE)] == " ".join(HOSTILE)


def test_without_a_graph_the_page_says_it_was_not_recorded() -> None:
    result = CheckResult(tuple(replace(s, graph=None) for s in everything().scenarios))
    _text, page = _page(result)
    assert "Not recorded" in page.visible and not [a for tag, a in page.elements if a.get("id") == "graph"]
    buttons = [a for tag, a in page.elements if tag == "button"]
    assert buttons == [] and not [a for _tag, a in page.elements if "data-node" in a], "nothing to point into"


def test_identical_input_gives_identical_bytes(tmp_path: Path) -> None:
    assert to_html(everything(), generated_at=WHEN) == to_html(everything(), generated_at=WHEN)
    target = tmp_path / "deep" / "report.html"
    write_html(everything(), target)
    assert target.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_the_vendored_library_matches_its_recorded_checksum() -> None:
    readme = (ASSETS / "README.md").read_text(encoding="utf-8")
    recorded = re.search(r"file sha256 `([0-9a-f]{64})`", readme)
    assert recorded is not None
    assert hashlib.sha256((ASSETS / CYTOSCAPE_ASSET).read_bytes()).hexdigest() == recorded.group(1)


def test_failing_scenarios_come_first_in_the_page_and_its_navigation() -> None:
    result = everything()
    _text, page = _page(result)
    order = [a["id"] for tag, a in page.elements if tag == "section" and a.get("id", "").startswith("scenario-")]
    verdicts = [a["class"].split()[-1] for tag, a in page.elements
                if tag == "section" and a.get("id", "").startswith("scenario-")]
    assert order == [f"scenario-{i}" for i in range(len(order))]
    ranks = {"v-error": 0, "v-failed": 1, "v-inconclusive": 2, "v-passed": 3}
    assert [ranks[v] for v in verdicts] == sorted(ranks[v] for v in verdicts)
    assert verdicts[0] != "v-passed" and verdicts[-1] == "v-passed"
    names = [s.name for s in failing_first(result).scenarios]
    assert [d["name"] for d in page_data(failing_first(result))["scenarios"]] == names


def test_edge_labels_are_short_distinct_and_explained() -> None:
    labels = abbreviations(["garbage-collector", "widget", "widgets", "gc", "namespace-controller", "w"])
    assert labels == {"garbage-collector": "gc2", "gc": "gc", "namespace-controller": "nc", "w": "w",
                      "widget": "wi", "widgets": "wi2"}
    assert len(set(labels.values())) == len(labels)
    data = page_data(everything())
    (fight,) = [s for s in data["scenarios"] if s["graph"]]
    assert set(fight["abbrev"]) == {e["actor"] for e in fight["graph"]["edges"]}


def test_a_counterexample_lists_its_actions_before_the_steps() -> None:
    _text, page = _page(everything())
    assert "actions" in page.visible and "↺ back to step" in page.visible
    lists = [a for tag, a in page.elements if tag == "ol" and a.get("class") == "actions"]
    assert lists, "no actions list"
