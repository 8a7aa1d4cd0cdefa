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


def test_a_refusal_the_action_allows_is_an_outcome_and_the_execution_goes_on(make_scenario: MakeScenario) -> None:
    missing = ActionSpec(name="delete a ghost", verb="delete", target=ObjectRef("v1", "ConfigMap", "default", "ghost"),
                         may_fail=True, may_fail_codes=(403, 404))
    r = explore(make_scenario(CODE, [("mark", "mark", CONFIGMAP)], [CM], actions=(missing, PATCH))).result
    assert r.verdict is Verdict.PASSED, [(c.name, c.message) for c in r.checks]
    check = next(c for c in r.checks if c.name == "actions apply")
    assert "mayFail" in check.message
    (final,) = r.converged  # the execution went on: the next action applied, the controller followed it
    assert _final_cm(r)["data"] == {"value": "2", "seen": "2"}
    refused = [s for s in final.path if s.kind == "action" and "delete a ghost" in s.actor]
    assert len(refused) == 1 and refused[0].note.startswith("refused, as it may be: 404")
    assert [w.refused for w in refused[0].writes] == [404]


def test_a_refusal_with_another_code_still_fails(make_scenario: MakeScenario) -> None:
    missing = ActionSpec(name="delete a ghost", verb="delete", target=ObjectRef("v1", "ConfigMap", "default", "ghost"),
                         may_fail=True, may_fail_codes=(403,))
    r = explore(make_scenario(CODE, [("mark", "mark", CONFIGMAP)], [CM], actions=(missing,))).result
    check = next(c for c in r.checks if c.name == "actions apply")
    assert check.verdict is Verdict.FAILED and "not found" in check.message
    assert r.stats.converged_states == 0


def _final_cm(result) -> dict:
    (final,) = result.converged
    return next(o for o in final.objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "x")


def test_replace_puts_the_whole_object_so_left_out_fields_go(make_scenario: MakeScenario) -> None:
    labelled = {**CM, "metadata": {**CM["metadata"], "labels": {"team": "a"}}}
    put = ActionSpec(name="kubectl replace", verb="replace", objects=(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "default"},
         "data": {"value": "3"}},))
    r = explore(make_scenario(CODE, [("mark", "mark", CONFIGMAP)], [labelled], actions=(put,))).result
    assert r.verdict is Verdict.PASSED
    cm = _final_cm(r)
    assert cm["data"] == {"value": "3", "seen": "3"} and "labels" not in cm["metadata"]


def test_replace_of_a_missing_object_is_refused(make_scenario: MakeScenario) -> None:
    put = ActionSpec(name="put a ghost", verb="replace", objects=(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ghost", "namespace": "default"}},))
    r = explore(make_scenario(CODE, [("mark", "mark", CONFIGMAP)], [CM], actions=(put,))).result
    check = next(c for c in r.checks if c.name == "actions apply")
    assert check.verdict is Verdict.FAILED and "put a ghost" in check.message


def test_server_side_apply_action_records_its_manager_and_conflicts_without_force(
        make_scenario: MakeScenario) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"value": "4"}}
    ssa = ActionSpec(name="kubectl apply --server-side", verb="patch", target=X, patch_type="apply", patch=body,
                     field_manager="kubectl", force=True)
    r = explore(make_scenario(CODE, [("mark", "mark", CONFIGMAP)], [CM], actions=(ssa,))).result
    assert r.verdict is Verdict.PASSED
    cm = _final_cm(r)
    assert cm["data"]["value"] == "4"
    assert "kubectl" in {m["manager"] for m in cm["metadata"]["managedFields"]}
    # without force, taking data.value from the manager that created it is a 409: the action is refused
    polite = ActionSpec(name="polite apply", verb="patch", target=X, patch_type="apply", patch=body,
                        field_manager="kubectl")
    r = explore(make_scenario(CODE, [("mark", "mark", CONFIGMAP)], [CM], actions=(polite,))).result
    check = next(c for c in r.checks if c.name == "actions apply")
    assert check.verdict is Verdict.FAILED and "polite apply" in check.message


def test_patch_of_the_scale_subresource(make_scenario: MakeScenario) -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
                  "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                           "template": {"metadata": {"labels": {"app": "web"}},
                                        "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}}
    scale = ActionSpec(name="kubectl scale", verb="patch", target=ObjectRef("apps/v1", "Deployment", "default", "web"),
                       patch_type="merge", patch={"spec": {"replicas": 3}}, subresource="scale")
    r = explore(make_scenario(CODE, [("mark", "mark", CONFIGMAP)], [CM, deployment], actions=(scale,))).result
    assert r.verdict is Verdict.PASSED
    (final,) = r.converged
    web = next(o for o in final.objects if o["kind"] == "Deployment")
    assert web["spec"]["replicas"] == 3
