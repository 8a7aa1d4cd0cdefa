"""What ``kamera inspect`` shows, without a terminal: the tree built by ``report.browse``.

Covers: every scenario, check, counterexample and step is an entry; a step's entry carries its
reads, every diff line uncut and its traceback; outcomes list their path and objects as YAML; the
recorded graph lists its states with their transitions and objects; hostile text is cleaned.
"""

from __future__ import annotations

from dataclasses import replace

from kamera_cli.model.result import CheckResult
from kamera_cli.report.browse import Entry, outline

try:
    from tests.unit.test_report_samples import TRACEBACK, everything, livelock
except ImportError:  # tests/unit is not a package: pytest put this folder on sys.path
    from test_report_samples import TRACEBACK, everything, livelock  # type: ignore[no-redef]


def _find(entry: Entry, start: str) -> Entry:
    for child in entry.children():
        if child.label.startswith(start):
            return child
    raise AssertionError(f"no entry starting {start!r} under {entry.label!r}: {[c.label for c in entry.children()]}")


def _walk(entry: Entry, depth: int = 0) -> list[Entry]:
    out = [entry]
    if depth < 8:
        for child in entry.children():
            out.extend(_walk(child, depth + 1))
    return out


def test_every_scenario_check_counterexample_and_step_is_an_entry() -> None:
    result = everything()
    root = outline(result)
    assert root.label.startswith("7 scenarios")
    labels = [e.label for e in _walk(root)]
    for scenario in result.scenarios:
        assert any(scenario.name in lbl for lbl in labels)
        for check in scenario.checks:
            assert any(check.name in lbl for lbl in labels)
            for cx in check.counterexamples:
                assert any(lbl.startswith(f"{cx.kind}: ") for lbl in labels)
                for step in (*cx.steps, *cx.loop, *cx.alternative):
                    assert any(step.headline() in lbl for lbl in labels)


def test_a_step_shows_reads_diffs_and_traceback() -> None:
    root = outline(everything())
    crash = _find(_find(_find(root, "✗ widget-crash"), "✗ no controller errors"), "controller-error")
    first, second = crash.children()
    assert "read or wrote:" in first.detail and "example.com/v1/Widget default/demo" in first.detail
    assert '+ /data/key: "v"' in first.detail and '~ /status/phase: "Pending" → "Ready"' in first.detail
    assert TRACEBACK.splitlines()[-1] in second.detail and 'File "controllers/widget.py", line 10' in second.detail


def test_a_livelock_marks_its_loop_and_the_states_it_leads_to() -> None:
    root = outline(CheckResult((livelock(),)))
    cx = _find(_find(_find(root, "✗ widget-fight"), "✗ converges"), "livelock")
    steps = cx.children()
    assert [s.label.split(" ")[0] for s in steps] == ["1.", "loop", "loop"]
    assert [s.detail.splitlines()[1] for s in steps] == ["leads to state 1", "leads to state 2", "leads to state 1"]
    assert "↺ back to step 2" in cx.detail


def test_outcomes_and_graph_states_show_objects_as_yaml() -> None:
    root = outline(everything())
    outcomes = _find(_find(root, "✗ widget-race"), "converged outcomes")
    second = outcomes.children()[1]
    path, objects = second.children()
    assert path.label == "path (1 steps)" and objects.label == "objects (1)"
    (cm,) = objects.children()
    assert cm.label == "v1/ConfigMap default/demo-cfg" and "key: w" in cm.detail
    graph = _find(_find(root, "✗ widget-fight"), "state graph")
    assert graph.label == "state graph (3 of 5 states)" and "not recorded: 2 of 5" in graph.detail
    state1 = _find(graph, "state 1 ")
    assert "livelock" in state1.label and "from state 0" in state1.detail and "→ state 2" in state1.detail
    held = {c.label for c in state1.children()}
    assert held == {"v1/ConfigMap default/demo-cfg", "example.com/v1/Widget default/demo"}


def test_hostile_text_is_cleaned() -> None:
    bad = "evil\x1b[2J\x07[bold]name"
    result = everything()
    scenario = replace(result.scenarios[0], name=bad, description=bad)
    root = outline(CheckResult((scenario,)))
    (entry,) = root.children()
    assert "\x1b" not in entry.label + entry.detail and "\x07" not in entry.detail
    assert "[bold]name" in entry.label  # shown literally; the TUI passes it as plain Text, not markup
