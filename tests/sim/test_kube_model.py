"""The Kubernetes model on small controller scenarios, with their state counts pinned.

Each scenario is one of the shapes the explorer must get right: a status moving through two
steps; the same logic split over two controllers; an order-dependent outcome; a livelock; a
timestamp loop; an exception on one ordering only; garbage collection of an owned child.
"""

from __future__ import annotations

from kamera_cli.model.objects import ObjectRef
from kamera_cli.model.result import CheckName, Verdict
from kamera_cli.model.scenario import ActionSpec, ExpectSpec, ExploreBounds, InvariantSpec
from kamera_cli.runner import explore
from tests.sim.conftest import CONFIGMAP, TASK, TASK_CRD, MakeScenario

TWO_STEP = """
from kubernetes import client
api = client.CustomObjectsApi()

def _advance(request, phases):
    t = api.get_namespaced_custom_object("example.com", "v1", request.namespace, "tasks", request.name)
    phase = (t.get("status") or {}).get("phase", "")
    nxt = phases.get(phase)
    if nxt:
        api.patch_namespaced_custom_object_status("example.com", "v1", request.namespace, "tasks",
                                                  request.name, {"status": {"phase": nxt}})

def both(request):
    _advance(request, {"": "Pending", "Pending": "Done"})

def first(request):
    _advance(request, {"": "Pending"})

def second(request):
    _advance(request, {"Pending": "Done"})
"""

TASK_OBJ = {"apiVersion": "example.com/v1", "kind": "Task", "metadata": {"name": "t", "namespace": "default"},
            "spec": {}}


def checks(result):
    return {c.name: c.verdict for c in result.checks}


def test_one_controller_two_status_steps_converges_to_one_state(make_scenario: MakeScenario) -> None:
    s = make_scenario(TWO_STEP, [("task", "both", TASK)], [TASK_OBJ], crds=(TASK_CRD,))
    r = explore(s).result
    assert checks(r) == {CheckName.CONVERGES: Verdict.PASSED, CheckName.DETERMINISTIC: Verdict.PASSED,
                         CheckName.NO_CONTROLLER_ERRORS: Verdict.PASSED}
    assert r.stats.converged_states == 1
    # initial, phase Pending, phase Done (pending), Done with nothing pending
    assert (r.stats.states, r.stats.transitions) == (4, 3)
    (final,) = r.converged
    task = next(o for o in final.objects if o["kind"] == "Task")
    assert task["status"]["phase"] == "Done"
    assert final.path[0].headline().startswith("1. task reconcile default/t")


def test_same_logic_as_two_controllers_one_outcome_several_paths(make_scenario: MakeScenario) -> None:
    s = make_scenario(TWO_STEP, [("first", "first", TASK), ("second", "second", TASK)], [TASK_OBJ],
                      crds=(TASK_CRD,))
    r = explore(s).result
    assert checks(r)[CheckName.DETERMINISTIC] is Verdict.PASSED
    assert checks(r)[CheckName.CONVERGES] is Verdict.PASSED
    assert r.stats.converged_states == 1
    assert r.stats.transitions > r.stats.states - 1  # more than one path reaches the states


ORDER = """
from kubernetes import client
core = client.CoreV1Api()

def _claim(request, team):
    cm = core.read_namespaced_config_map(request.name, request.namespace)
    if not (cm.data or {}).get("owner"):
        core.patch_namespaced_config_map(request.name, request.namespace, {"data": {"owner": team}})

def a(request):
    _claim(request, "a")

def b(request):
    _claim(request, "b")
"""
CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "default"}}


def test_order_decides_two_converged_states(make_scenario: MakeScenario) -> None:
    s = make_scenario(ORDER, [("a", "a", CONFIGMAP), ("b", "b", CONFIGMAP)], [CM])
    r = explore(s).result
    assert checks(r)[CheckName.DETERMINISTIC] is Verdict.FAILED
    assert r.stats.converged_states == 2
    det = next(c for c in r.checks if c.name == CheckName.DETERMINISTIC)
    cex = det.counterexamples[0]
    assert cex.kind == "nondeterministic"
    assert cex.steps and cex.alternative
    owners = {o["data"]["owner"] for st in r.converged for o in st.objects if o["kind"] == "ConfigMap"
              and o["metadata"]["name"] == "x"}
    assert owners == {"a", "b"}


FIGHT = """
from kubernetes import client
core = client.CoreV1Api()

def _set(request, v):
    cm = core.read_namespaced_config_map(request.name, request.namespace)
    if (cm.data or {}).get("v") != v:
        core.patch_namespaced_config_map(request.name, request.namespace, {"data": {"v": v}})

def a(request):
    _set(request, "1")

def b(request):
    _set(request, "2")
"""


def test_two_controllers_fighting_is_a_livelock_with_its_loop(make_scenario: MakeScenario) -> None:
    s = make_scenario(FIGHT, [("a", "a", CONFIGMAP), ("b", "b", CONFIGMAP)], [CM])
    r = explore(s).result
    conv = next(c for c in r.checks if c.name == CheckName.CONVERGES)
    assert conv.verdict is Verdict.FAILED
    live = [c for c in conv.counterexamples if c.kind == "livelock"]
    assert live and live[0].loop
    actors = {st.actor for st in live[0].loop}
    assert actors == {"a", "b"}
    assert r.stats.converged_states == 0


STAMP = """
import datetime
from kubernetes import client
api = client.CustomObjectsApi()

def reconcile(request):
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    api.patch_namespaced_custom_object_status("example.com", "v1", request.namespace, "tasks", request.name,
                                              {"status": {"lastSeen": now}})
"""


def test_stamping_the_time_every_reconcile_never_converges(make_scenario: MakeScenario) -> None:
    s = make_scenario(STAMP, [("stamp", "reconcile", TASK)], [TASK_OBJ], crds=(TASK_CRD,))
    r = explore(s).result
    assert checks(r)[CheckName.CONVERGES] is Verdict.FAILED
    assert r.stats.converged_states == 0


KEYERROR = """
from kubernetes import client
core = client.CoreV1Api()

def producer(request):
    if request.name == "shared":
        cm = core.read_namespaced_config_map("shared", request.namespace)
        if "k" not in (cm.data or {}):
            core.patch_namespaced_config_map("shared", request.namespace, {"data": {"k": "v"}})

def consumer(request):
    if request.name == "shared":
        cm = core.read_namespaced_config_map("shared", request.namespace)
        value = cm.data["k"]
        core.patch_namespaced_config_map("shared", request.namespace, {"metadata": {"labels": {"seen": value}}})
"""


def test_keyerror_on_one_ordering_is_a_controller_error_with_that_path(make_scenario: MakeScenario) -> None:
    s = make_scenario(KEYERROR, [("producer", "producer", CONFIGMAP), ("consumer", "consumer", CONFIGMAP)],
                      # not "data": {} — the server omits an empty map, and cm.data would be None
                      [{**CM, "metadata": {"name": "shared", "namespace": "default"}, "data": {"other": "x"}}])
    r = explore(s).result
    err = next(c for c in r.checks if c.name == CheckName.NO_CONTROLLER_ERRORS)
    assert err.verdict is Verdict.FAILED
    cex = err.counterexamples[0]
    assert cex.kind == "controller-error"
    assert "KeyError" in cex.summary
    assert [st.actor for st in cex.steps] == ["consumer"]
    assert "cm.data[\"k\"]" in cex.steps[-1].error and "KeyError" in cex.steps[-1].error
    assert checks(r)[CheckName.CONVERGES] is Verdict.PASSED
    assert checks(r)[CheckName.DETERMINISTIC] is Verdict.PASSED


OWNER = """
from kubernetes import client
core = client.CoreV1Api()

def reconcile(request):
    try:
        parent = core.read_namespaced_config_map(request.name, request.namespace)
    except client.ApiException as e:
        if e.status == 404:
            return None
        raise
    if request.name != "parent" or parent.metadata.deletion_timestamp:
        return None
    try:
        core.read_namespaced_secret("child", request.namespace)
    except client.ApiException as e:
        if e.status != 404:
            raise
        ref = client.V1OwnerReference(api_version="v1", kind="ConfigMap", name="parent",
                                      uid=parent.metadata.uid, controller=True)
        core.create_namespaced_secret(request.namespace, client.V1Secret(
            metadata=client.V1ObjectMeta(name="child", owner_references=[ref])))
"""


def test_deleting_the_parent_lets_the_garbage_collector_remove_the_child(make_scenario: MakeScenario) -> None:
    parent = ObjectRef("v1", "ConfigMap", "default", "parent")
    s = make_scenario(
        OWNER, [("parent", "reconcile", CONFIGMAP)],
        [{**CM, "metadata": {"name": "parent", "namespace": "default"}}],
        actions=(ActionSpec(name="delete parent", verb="delete", target=parent),),
        invariants=(InvariantSpec(name="no secret left", select="$.items[?@.kind == 'Secret']",
                                  expect=ExpectSpec(count=0), vacuous="allowed"),),
    )
    r = explore(s).result
    assert {c.name: c.verdict for c in r.checks}["invariant: no secret left"] is Verdict.PASSED
    assert r.verdict is Verdict.PASSED
    (final,) = r.converged
    assert not [o for o in final.objects if o["kind"] == "Secret"]
    gc_steps = [st for st in final.path if st.actor == "garbage-collector"]
    assert gc_steps and gc_steps[0].writes[0].ref.kind == "Secret"


def test_state_counts_do_not_depend_on_memoization(make_scenario: MakeScenario) -> None:
    s = make_scenario(ORDER, [("a", "a", CONFIGMAP), ("b", "b", CONFIGMAP)], [CM])
    with_memo = explore(s).result
    from dataclasses import replace

    without = explore(replace(s, explore=ExploreBounds(max_depth=30, max_states=5000, memoize=False))).result
    assert (with_memo.stats.states, with_memo.stats.transitions) == (without.stats.states, without.stats.transitions)
    assert without.stats.memo_hits == 0
