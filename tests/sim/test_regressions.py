"""Regressions found by using kamera as a new user would: no false positives, no crashes, true stories."""

from __future__ import annotations

from kamera_cli.model.objects import KindRef, ObjectRef
from kamera_cli.model.result import CheckName, Verdict
from kamera_cli.model.scenario import ActionSpec, ConflictSpec, ExpectSpec, InvariantSpec, Perturbations, WatchSpec
from kamera_cli.runner import explore
from tests.sim.conftest import CONFIGMAP, MakeScenario

CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "default"}}


def _verdicts(result):
    return {c.name: c.verdict for c in result.checks}


DYNAMIC = """
from kubernetes import client, config, dynamic
config.load_kube_config()
AT_IMPORT = dynamic.DynamicClient(client.ApiClient())   # discovery at import time

def per_call(request):
    dyn = dynamic.DynamicClient(client.ApiClient())      # discovery on first use only
    cms = dyn.resources.get(api_version="v1", kind="ConfigMap")
    cm = cms.get(name=request.name, namespace=request.namespace)
    if not (cm.metadata.labels or {}).get("seen"):
        cms.patch(name=request.name, namespace=request.namespace, body={"metadata": {"labels": {"seen": "1"}}},
                  content_type="application/merge-patch+json")

def cached(request):
    cms = AT_IMPORT.resources.get(api_version="v1", kind="ConfigMap")
    cm = cms.get(name=request.name, namespace=request.namespace)
    if not (cm.metadata.labels or {}).get("seen"):
        cms.patch(name=request.name, namespace=request.namespace, body={"metadata": {"labels": {"seen": "1"}}},
                  content_type="application/merge-patch+json")
"""


def test_dynamic_client_controllers_are_deterministic(make_scenario: MakeScenario) -> None:
    for attr in ("per_call", "cached"):
        r = explore(make_scenario(DYNAMIC, [("dyn", attr, CONFIGMAP)], [CM])).result
        assert r.verdict is Verdict.PASSED, (attr, [(c.name, c.message) for c in r.checks])


CREATE = """
from kubernetes import client
core = client.CoreV1Api()

def reconcile(request):
    if request.name != "x":
        return None
    try:
        core.create_namespaced_secret(request.namespace, client.V1Secret(metadata=client.V1ObjectMeta(name="s")))
    except client.ApiException as e:
        if e.status != 409:   # AlreadyExists: fine
            raise
"""


def test_injected_conflicts_never_answer_a_create(make_scenario: MakeScenario) -> None:
    exists = InvariantSpec(name="secret exists", select="$.items[?@.kind == 'Secret']", expect=ExpectSpec(count=1))
    s = make_scenario(CREATE, [("c", "reconcile", CONFIGMAP)], [CM], invariants=(exists,),
                      perturbations=Perturbations(conflicts=(ConflictSpec("*", max=1),)))
    assert explore(s).result.verdict is Verdict.PASSED


GENERATION = """
from kubernetes import client
apps = client.AppsV1Api()
core = client.CoreV1Api()

def reconcile(request):
    if request.name != "app":
        return None
    replicas = int(core.read_namespaced_config_map("app", request.namespace).data["replicas"])
    body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "app"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "a"}},
                     "template": {"metadata": {"labels": {"app": "a"}},
                                  "spec": {"containers": [{"name": "c", "image": "i"}]}}}}
    try:
        dep = apps.read_namespaced_deployment("app", request.namespace)
    except client.ApiException as e:
        if e.status != 404:
            raise
        apps.create_namespaced_deployment(request.namespace, body)
        return None
    if dep.spec.replicas != replicas:
        apps.patch_namespaced_deployment("app", request.namespace, {"spec": {"replicas": replicas}})
"""


def test_outcomes_that_differ_only_in_generation_are_one_outcome(make_scenario: MakeScenario) -> None:
    app = {**CM, "metadata": {"name": "app", "namespace": "default"}, "data": {"replicas": "1"}}
    edit = ActionSpec(name="scale", verb="patch", at="any", patch_type="merge", patch={"data": {"replicas": "2"}},
                      target=ObjectRef("v1", "ConfigMap", "default", "app"))
    r = explore(make_scenario(GENERATION, [("app", "reconcile", CONFIGMAP)], [app], actions=(edit,))).result
    assert _verdicts(r)[CheckName.DETERMINISTIC] is Verdict.PASSED, [c.message for c in r.checks]
    assert r.stats.converged_states == 1


PICK = """
from kubernetes import client
core = client.CoreV1Api()
RUNS = [0]

def reconcile(request):
    if request.name != "x":
        return None
    RUNS[0] += 1
    target = "a" if RUNS[0] % 2 else "b"     # same body, different object on each run
    core.patch_namespaced_config_map(target, request.namespace, {"metadata": {"labels": {"hit": "yes"}}})
"""


def test_the_determinism_check_compares_paths(make_scenario: MakeScenario) -> None:
    seed = [CM] + [{**CM, "metadata": {"name": n, "namespace": "default"}} for n in ("a", "b")]
    r = explore(make_scenario(PICK, [("pick", "reconcile", CONFIGMAP)], seed)).result
    det = next(c for c in r.checks if c.name == CheckName.DETERMINISTIC)
    assert det.verdict is Verdict.FAILED
    assert "/api/v1/namespaces/default/configmaps/a" in det.counterexamples[0].summary


MAPPER = """
def reconcile(request):
    return None

def bad_mapper(obj):
    return "default/a"
"""


def test_a_mapper_failing_on_the_initial_list_is_a_finding(make_scenario: MakeScenario) -> None:
    from kamera_cli.model.scenario import ControllerSpec

    spec = ControllerSpec(name="m", entrypoint="ctrl.py:reconcile", for_kind=CONFIGMAP,
                          watches=(WatchSpec(KindRef("", "v1", "Namespace"), "ctrl:bad_mapper"),))
    r = explore(make_scenario(MAPPER, [spec], [CM])).result
    err = next(c for c in r.checks if c.name == CheckName.NO_CONTROLLER_ERRORS)
    assert err.verdict is Verdict.FAILED
    assert "initial list" in err.counterexamples[0].summary


HOT = """
from kamera_cli import Result

def reconcile(request):
    return Result(requeue=True)
"""


def test_an_action_never_reached_is_not_reported_as_applied(make_scenario: MakeScenario) -> None:
    act = ActionSpec(name="later", verb="delete", target=ObjectRef("v1", "ConfigMap", "default", "x"))
    r = explore(make_scenario(HOT, [("hot", "reconcile", CONFIGMAP)], [CM], actions=(act,))).result
    check = next(c for c in r.checks if c.name == "actions apply")
    assert check.verdict is Verdict.INCONCLUSIVE
    assert "never reached" in check.message
    assert _verdicts(r)[CheckName.CONVERGES] is Verdict.FAILED
    assert r.verdict is Verdict.FAILED


def test_refused_writes_name_their_object_and_api_errors_say_why(make_scenario: MakeScenario) -> None:
    code = """
from kubernetes import client
core = client.CoreV1Api()

def reconcile(request):
    core.create_namespaced_config_map(request.namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="x")))
"""
    search = explore(make_scenario(code, [("dup", "reconcile", CONFIGMAP)], [CM])).search
    labels = [search.graph.edge(e).label for e in range(search.graph.num_edges)]
    notes = [lab.note for lab in labels]
    assert any("409" in n and "already exists" in n for n in notes), notes
    refused = [w for lab in labels for w in lab.writes if w.refused]
    assert refused and refused[0].ref.name == "x"


RECREATE = """
from kubernetes import client
core = client.CoreV1Api()

def reconcile(request):
    if request.name != "parent":
        return None
    parent = core.read_namespaced_config_map("parent", request.namespace)
    owner = client.V1OwnerReference(api_version="v1", kind="ConfigMap", name="parent", uid=parent.metadata.uid,
                                    controller=True)
    try:
        core.create_namespaced_config_map(request.namespace, client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name="child", owner_references=[owner])))
    except client.ApiException as e:
        if e.status != 409:   # AlreadyExists: nothing to do
            raise
"""


def test_a_memoized_refused_create_is_not_replayed_once_its_target_is_gone(make_scenario: MakeScenario) -> None:
    parent = {**CM, "metadata": {"name": "parent", "namespace": "default"}}
    # the create of a child that exists is refused (409) and memoized; once a user deletes the child, the
    # owner's reconcile (triggered through `owns`) must really run again and recreate it
    delete = ActionSpec(name="delete the child", verb="delete", target=ObjectRef("v1", "ConfigMap", "default", "child"))
    child = InvariantSpec(name="child exists", expect=ExpectSpec(count=1),
                          select="$.items[?@.kind == 'ConfigMap' && @.metadata.name == 'child']")
    r = explore(make_scenario(RECREATE, [("p", "reconcile", CONFIGMAP, {"owns": (CONFIGMAP,)})], [parent],
                              actions=(delete,), invariants=(child,))).result
    assert r.verdict is Verdict.PASSED, [(c.name, c.message) for c in r.checks]


OBSGEN = """
from kubernetes import client
api = client.CustomObjectsApi()

def reconcile(request):
    t = api.get_namespaced_custom_object("example.com", "v1", request.namespace, "tasks", request.name)
    image = t["spec"]["image"]
    if ":" not in image:   # default the tag: a spec write, so generation moves once more in some orders
        t = api.patch_namespaced_custom_object("example.com", "v1", request.namespace, "tasks", request.name,
                                               {"spec": {"image": image + ":latest"}})
    gen = t["metadata"]["generation"]
    if (t.get("status") or {}).get("observedGeneration") != gen:
        api.patch_namespaced_custom_object_status("example.com", "v1", request.namespace, "tasks", request.name,
                                                  {"status": {"observedGeneration": gen}})
"""


def test_observed_generation_echoing_generation_is_not_a_different_outcome(make_scenario: MakeScenario) -> None:
    from tests.sim.conftest import TASK, TASK_CRD

    task = {"apiVersion": "example.com/v1", "kind": "Task", "metadata": {"name": "t", "namespace": "default"},
            "spec": {"image": "a"}}
    edit = ActionSpec(name="edit", verb="patch", at="any", patch_type="merge", patch={"spec": {"image": "b"}},
                      target=ObjectRef("example.com/v1", "Task", "default", "t"))
    r = explore(make_scenario(OBSGEN, [("t", "reconcile", TASK)], [task], crds=(TASK_CRD,), actions=(edit,))).result
    assert _verdicts(r)[CheckName.DETERMINISTIC] is Verdict.PASSED, [c.message for c in r.checks]
