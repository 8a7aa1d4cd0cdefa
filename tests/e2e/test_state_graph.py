"""The recorded state graph (``Overrides(graph_states=N)``, what ``--html`` draws) against real searches.

Covers: the graph is recorded only when asked; it agrees with the statistics and the counterexamples
(their ``nodes`` are recorded states joined by recorded edges, the livelock's loop closes, converged
outcomes point at their states); every state's objects resolve; steps carry what they read; the cap
keeps counterexample paths and says what it left out; the JSON round trip keeps the graph; and the
same run gives the same graph under another PYTHONHASHSEED.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from kamera_cli.model.graph import StateGraph
from kamera_cli.model.objects import ObjectRef
from kamera_cli.model.result import ScenarioResult
from kamera_cli.report import from_json, to_json
from kamera_cli.runner import Overrides, check_file

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"


def _run(rel: str, limit: int = 2000) -> ScenarioResult:
    return check_file(SCENARIOS / rel / "scenario.yaml", Overrides(graph_states=limit))


def _edges(graph: StateGraph) -> set[tuple[int, int]]:
    return {(e.src, e.dst) for e in graph.edges}


def test_no_graph_unless_asked() -> None:
    assert check_file(SCENARIOS / "bugs/livelock/scenario.yaml").graph is None


def test_livelock_graph_is_complete_and_highlights_the_loop() -> None:
    result = _run("bugs/livelock")
    graph = result.graph
    assert graph is not None and graph.complete and graph.omitted == ""
    assert len(graph.states) == result.stats.states == graph.total_states
    assert len(graph.edges) == result.stats.transitions == graph.total_edges
    assert sum(graph.depth_counts) == graph.total_states
    by_id = {s.id: s for s in graph.states}
    assert [s.id for s in graph.states] == sorted(by_id)
    assert "initial" in by_id[0].tags and by_id[0].depth == 0
    (cx,) = [x for c in result.checks for x in c.counterexamples if x.kind == "livelock"]
    assert len(cx.nodes) == len(cx.steps) + len(cx.loop) + 1
    assert cx.nodes[-1] == cx.nodes[len(cx.steps)], "the loop returns to its first state"
    for a, b in zip(cx.nodes, cx.nodes[1:]):
        assert (a, b) in _edges(graph)
    assert all("livelock" in by_id[n].tags for n in cx.nodes[len(cx.steps):])
    objects = dict(graph.objects)
    for state in graph.states:
        assert all(key in objects for key in state.objects)
    first = [objects[k] for k in by_id[cx.nodes[1]].objects]
    assert {str(ObjectRef.of(o)) for o in first} >= {"v1/ConfigMap default/web"}


def test_nondeterminism_paths_end_at_the_two_outcomes() -> None:
    result = _run("bugs/order-dependent")
    graph = result.graph
    assert graph is not None
    by_id = {s.id: s for s in graph.states}
    (cx,) = [x for c in result.checks for x in c.counterexamples if x.kind == "nondeterministic"]
    assert len(cx.alternative_nodes) == len(cx.alternative) + 1
    ends = {by_id[cx.nodes[-1]].outcome, by_id[cx.alternative_nodes[-1]].outcome}
    assert ends == {0, 1}
    for index, converged in enumerate(result.converged):
        (state,) = [s for s in graph.states if s.outcome == index]
        assert "outcome" in state.tags and "converged" in state.tags
        held = sorted(str(ObjectRef.of(dict(graph.objects)[k])) for k in state.objects)
        assert held == sorted(str(ObjectRef.of(o)) for o in converged.objects)


def test_reconcile_steps_say_what_they_read() -> None:
    result = _run("quickstart")
    steps = [s for c in result.converged for s in c.path if s.kind == "reconcile"]
    assert steps and all(s.reads for s in steps)
    assert "example.com/v1/Widget default/demo" in steps[0].reads


def test_the_cap_keeps_counterexamples_and_says_what_it_left_out() -> None:
    result = _run("bugs/exception-one-ordering", limit=5)
    graph = result.graph
    assert graph is not None and not graph.complete
    ids = {s.id for s in graph.states}
    kept_paths = [n for c in result.checks for x in c.counterexamples for n in x.nodes]
    assert set(kept_paths) <= ids
    assert len(ids) <= 5 or len(ids) == len(set(kept_paths))
    assert graph.total_states == result.stats.states > len(ids)
    assert f"of {graph.total_states:,} states are not recorded" in graph.omitted
    assert all(e.src in ids and e.dst in ids for e in graph.edges)


def test_json_round_trip_keeps_the_graph() -> None:
    from kamera_cli.model.result import CheckResult

    result = CheckResult((_run("bugs/livelock"),))
    doc = to_json(result)
    assert from_json(json.loads(json.dumps(doc))) == result
    assert doc["scenarios"][0]["graph"]["total_states"] == result.scenarios[0].stats.states


def test_same_graph_under_another_hash_seed(tmp_path: Path) -> None:
    out = []
    for seed in ("1", "2"):
        target = tmp_path / f"r{seed}.json"
        code = ("import sys; from pathlib import Path; from kamera_cli.runner import Overrides, check_file;"
                "from kamera_cli.report import write_json; from kamera_cli.model.result import CheckResult;"
                "r = check_file(Path(sys.argv[1]), Overrides(graph_states=50));"
                "write_json(CheckResult((r,)), sys.argv[2])")
        subprocess.run([sys.executable, "-c", code, str(SCENARIOS / "bugs/order-dependent/scenario.yaml"),
                        str(target)], check=True, env={**os.environ, "PYTHONHASHSEED": seed})
        doc = json.loads(target.read_text(encoding="utf-8"))
        out.append(doc["scenarios"][0]["graph"])
    assert out[0] == out[1]


def test_an_invariant_counterexample_lists_its_selected_nodes() -> None:
    result = _run("bugs/invariant-at-convergence")
    (cx,) = [x for c in result.checks for x in c.counterexamples if x.kind == "invariant"]
    assert cx.selected and cx.selected[0].failing
    assert cx.selected[0].path.startswith("$")
    assert cx.nodes and result.graph is not None
    assert "violation" in {t for s in result.graph.states if s.id == cx.nodes[-1] for t in s.tags}


def test_a_capped_depth_first_graph_stays_connected() -> None:
    """After DFS a parent may be discovered after its child: the cap still keeps every parent path."""
    from dataclasses import replace

    from kamera_cli.runner import run_scenario
    from kamera_cli.scenario import load_scenario

    scenario = load_scenario(SCENARIOS / "workloads/conditions-no-null-check/scenario.yaml")
    scenario = replace(scenario, explore=replace(scenario.explore, strategy="dfs"))
    for limit in (7, 30, 60):
        graph = run_scenario(scenario, overrides=Overrides(graph_states=limit)).graph
        assert graph is not None and len(graph.states) <= limit
        ids = {s.id for s in graph.states}
        into = {(e.dst, e.src) for e in graph.edges}
        for state in graph.states:
            if "initial" not in state.tags:
                assert any((state.id, src) in into for src in ids), f"state {state.id} is cut off (cap {limit})"
