"""``kamera check --html``: the flag, its bounds and its errors, through the real command line.

Covers: the report is written (alongside --json, which then carries the same graph); the graph is
recorded only with --html or --graph-states; --graph-states caps it and the page says what was left out; an
unwritable path is a usage error before any search, like --junit and --json.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from kamera_cli.cli import app

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"
ENV = {"NO_COLOR": "1", "GITHUB_ACTIONS": "", "COLUMNS": "200"}


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env=ENV)
    return result.exit_code, result.stdout, result.stderr


def _island(text: str) -> dict[str, object]:
    match = re.search(r'<script type="application/json" id="kamera-data">(.*?)</script>', text, re.S)
    assert match is not None
    data: dict[str, object] = json.loads(match.group(1))
    return data


def test_writes_the_report_and_the_json_carries_the_same_graph(tmp_path: Path) -> None:
    html, js = tmp_path / "out" / "report.html", tmp_path / "r.json"
    code, out, _ = invoke("check", str(SCENARIOS / "bugs/livelock"), "--html", str(html), "--json", str(js), "-q")
    assert code == 1, out
    text = html.read_text(encoding="utf-8")
    data = _island(text)
    doc = json.loads(js.read_text(encoding="utf-8"))
    (scenario,) = data["scenarios"]  # type: ignore[misc]
    assert scenario["graph"] == doc["scenarios"][0]["graph"]
    assert scenario["graph"]["total_states"] == doc["scenarios"][0]["stats"]["states"] == 5
    assert "bug-livelock" in text and "livelock" in text


def test_no_graph_in_the_json_without_html(tmp_path: Path) -> None:
    js = tmp_path / "r.json"
    invoke("check", str(SCENARIOS / "bugs/livelock"), "--json", str(js), "-q")
    assert "graph" not in json.loads(js.read_text(encoding="utf-8"))["scenarios"][0]


def test_max_states_caps_the_graph_and_the_page_says_so(tmp_path: Path) -> None:
    html = tmp_path / "report.html"
    code, _out, _ = invoke("check", str(SCENARIOS / "bugs/exception-one-ordering"), "--html", str(html),
                           "--graph-states", "4", "-q")
    assert code == 1
    graph = _island(html.read_text(encoding="utf-8"))["scenarios"][0]["graph"]  # type: ignore[index]
    assert graph["limit"] == 4 and graph["total_states"] == 13
    assert "of 13 states are not recorded" in graph["omitted"]
    paths = _island(html.read_text(encoding="utf-8"))["scenarios"][0]["paths"]  # type: ignore[index]
    kept = {s["id"] for s in graph["states"]}
    assert paths and all(set(p["nodes"]) <= kept for p in paths), "counterexample paths are always kept"


def test_an_unwritable_path_is_a_usage_error_before_the_search(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, out, err = invoke("check", str(SCENARIOS / "quickstart"), "--html", str(blocker / "r.html"))
    assert code == 2 and "--html" in err and "cannot write there" in err
    assert "quickstart" not in out
    code, _out, err = invoke("check", str(SCENARIOS / "quickstart"), "--html", str(tmp_path))
    assert code == 2 and "is a folder" in err


def test_graph_states_records_the_graph_for_the_json_alone(tmp_path: Path) -> None:
    js = tmp_path / "r.json"
    invoke("check", str(SCENARIOS / "bugs/livelock"), "--json", str(js), "--graph-states", "3", "-q")
    graph = json.loads(js.read_text(encoding="utf-8"))["scenarios"][0]["graph"]
    assert graph["limit"] == 3 and len(graph["states"]) <= 3 and graph["total_states"] == 5
    html = tmp_path / "r.html"
    invoke("check", str(SCENARIOS / "bugs/livelock"), "--html", str(html), "--json", str(js), "--graph-states", "0",
           "-q")
    assert "graph" not in json.loads(js.read_text(encoding="utf-8"))["scenarios"][0]
    assert "Not recorded" in html.read_text(encoding="utf-8")
