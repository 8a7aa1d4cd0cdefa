"""External actions: when they apply, and what a refused action does to its execution."""

from __future__ import annotations

from kamera_cli.model.objects import ObjectRef
from kamera_cli.model.result import Verdict
from kamera_cli.model.scenario import ActionSpec
from kamera_cli.runner import explore
from tests.sim.conftest import CONFIGMAP, MakeScenario

CODE = """
from kubernetes import client
core = client.CoreV1Api()

def mark(request):
    cm = core.read_namespaced_config_map(request.name, request.namespace)
    if (cm.data or {}).get("seen") != (cm.data or {}).get("value"):
        core.patch_namespaced_config_map(request.name, request.namespace,
                                         {"data": {"seen": (cm.data or {}).get("value", "")}})
"""
CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "default"},
      "data": {"value": "1"}}
X = ObjectRef("v1", "ConfigMap", "default", "x")
PATCH = ActionSpec(name="edit", verb="patch", target=X, patch_type="merge", patch={"data": {"value": "2"}})


def _action_steps(result) -> list[int]:
    return [s.index for st in result.converged for s in st.path if s.kind == "action"]


def test_at_converged_waits_for_convergence(make_scenario: MakeScenario) -> None:
    r = explore(make_scenario(CODE, [("mark", "mark", CONFIGMAP)], [CM], actions=(PATCH,))).result
    assert r.verdict is Verdict.PASSED
    (final,) = r.converged
    kinds = [s.kind for s in final.path]
    assert kinds == ["reconcile", "reconcile", "action", "reconcile", "reconcile"]
    cm = next(o for o in final.objects if o["kind"] == "ConfigMap")
    assert cm["data"] == {"value": "2", "seen": "2"}


def test_at_any_is_a_branch_before_every_step(make_scenario: MakeScenario) -> None:
    from dataclasses import replace

    r = explore(make_scenario(CODE, [("mark", "mark", CONFIGMAP)], [CM], actions=(replace(PATCH, at="any"),)))
    graph = r.search.graph
    depths = sorted({graph.depth(graph.edge(e).src) for e in range(graph.num_edges)
                     if graph.edge(e).action.kind == "action"})
    assert depths[0] == 0 and len(depths) >= 3  # before the first step, and later ones too


def test_after_steps_applies_after_exactly_n_steps(make_scenario: MakeScenario) -> None:
    from dataclasses import replace

    r = explore(make_scenario(CODE, [("mark", "mark", CONFIGMAP)], [CM], actions=(replace(PATCH, at=1),)))
    graph = r.search.graph
    depths = {graph.depth(graph.edge(e).src) for e in range(graph.num_edges)
              if graph.edge(e).action.kind == "action"}
    assert depths == {1}


def test_a_refused_action_is_a_finding_and_stops_that_execution(make_scenario: MakeScenario) -> None:
    missing = ActionSpec(name="delete a ghost", verb="delete", target=ObjectRef("v1", "ConfigMap", "default", "ghost"))
    r = explore(make_scenario(CODE, [("mark", "mark", CONFIGMAP)], [CM], actions=(missing,))).result
    check = next(c for c in r.checks if c.name == "actions apply")
    assert check.verdict is Verdict.FAILED
    assert "delete a ghost" in check.message and "not found" in check.message
    # the halted execution is not an outcome
    assert r.stats.converged_states == 0
