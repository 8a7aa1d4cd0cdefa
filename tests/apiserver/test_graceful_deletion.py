"""Graceful deletion of Pods, and the DELETE preconditions, through the official client.

Upstream: ``rest.BeforeDelete`` (staging/src/k8s.io/apiserver/pkg/registry/rest/delete.go),
``podStrategy.CheckGracefulDelete`` (pkg/registry/core/pod/strategy.go),
``Store.Delete``/``updateForGracefulDeletionAndFinalizers`` (…/registry/generic/registry/store.go).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from kamera_cli.model.objects import ObjectRef

P = ObjectRef("v1", "Pod", "default", "p")


def _pod(node: str = "node-1", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"metadata": {"name": "p"},
                            "spec": {"containers": [{"name": "c", "image": "nginx"}], **spec}}
    if node:
        body["spec"]["nodeName"] = node
    return body


def _delete(server, **options: Any) -> tuple[int, dict[str, Any]]:
    resp = server.handle("DELETE", "/api/v1/namespaces/default/pods/p", [], {"Content-Type": "application/json"},
                         json.dumps({"kind": "DeleteOptions", "apiVersion": "v1", **options}).encode())
    return resp.status, json.loads(resp.body)


# -- podStrategy.CheckGracefulDelete + rest.BeforeDelete: a pod a node runs gets its grace period ----

def test_a_bound_pod_is_terminating_for_its_grace_period_on_the_virtual_clock(api_client, server, clock):
    core = client.CoreV1Api(api_client)
    created = core.create_namespaced_pod("default", _pod())
    clock.t = 10
    answer = core.delete_namespaced_pod("p", "default")  # the pod itself (ReturnDeletedObject)
    meta = server.journal[-1].response["metadata"]
    assert meta["deletionTimestamp"] == "2026-01-01T00:00:40Z"  # now + terminationGracePeriodSeconds (30)
    assert meta["deletionGracePeriodSeconds"] == 30
    assert meta["generation"] == created.metadata.generation + 1  # BeforeDelete bumps it on the first deletion
    still = core.read_namespaced_pod("p", "default")
    assert still.metadata.deletion_timestamp is not None and still.metadata.deletion_grace_period_seconds == 30
    assert answer is not None


def test_the_requested_grace_period_wins_and_a_negative_one_counts_as_one_second(api_client, server):
    core = client.CoreV1Api(api_client)
    core.create_namespaced_pod("default", _pod())
    core.delete_namespaced_pod("p", "default", grace_period_seconds=-5)
    assert server.snapshot.get(P)["metadata"]["deletionGracePeriodSeconds"] == 1


def test_the_pod_spec_grace_period_is_the_default(api_client, server):
    core = client.CoreV1Api(api_client)
    core.create_namespaced_pod("default", _pod(terminationGracePeriodSeconds=120))
    core.delete_namespaced_pod("p", "default")
    assert server.snapshot.get(P)["metadata"]["deletionTimestamp"] == "2026-01-01T00:02:00Z"


@pytest.mark.parametrize("case", ["unscheduled", "succeeded", "failed", "zero"])
def test_pods_no_node_runs_or_that_finished_go_at_once(api_client, server, case):
    core = client.CoreV1Api(api_client)
    core.create_namespaced_pod("default", _pod("" if case == "unscheduled" else "node-1"))
    if case in ("succeeded", "failed"):
        live = server.get(P)
        server.update({**live, "status": {**live["status"], "phase": case.capitalize()}}, subresource="status")
    core.delete_namespaced_pod("p", "default", grace_period_seconds=0 if case == "zero" else None)
    assert server.snapshot.get(P) is None
    gone = server.journal[-1].response
    assert gone["kind"] == "Pod" and gone["metadata"]["deletionGracePeriodSeconds"] == 0


# -- rest.BeforeDelete on a pod already terminating: only a shorter period changes anything --------

def test_deleting_again_without_a_shorter_period_changes_nothing(server, clock):
    server.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                   **{k: v for k, v in _pod().items() if k != "metadata"}})
    assert _delete(server)[0] == 200
    before = server.snapshot.get(P)
    clock.t = 5
    for options in ({}, {"gracePeriodSeconds": 30}, {"gracePeriodSeconds": 60}):
        status, answer = _delete(server, **options)
        assert status == 200 and answer["metadata"] == before["metadata"]
    assert server.snapshot.get(P) is before


def test_a_shorter_period_counts_from_the_original_request(server, clock):
    server.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                   **{k: v for k, v in _pod().items() if k != "metadata"}})
    clock.t = 100
    _delete(server)  # ends at 130
    generation = server.snapshot.get(P)["metadata"]["generation"]
    clock.t = 110
    status, answer = _delete(server, gracePeriodSeconds=5)
    assert status == 200
    assert answer["metadata"]["deletionTimestamp"] == "2026-01-01T00:01:45Z"  # 100 + 5, not 110 + 5
    assert answer["metadata"]["deletionGracePeriodSeconds"] == 5
    assert answer["metadata"]["generation"] == generation  # no second bump


def test_the_kubelets_final_delete_removes_the_pod(server, clock):
    server.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                   **{k: v for k, v in _pod().items() if k != "metadata"}})
    _delete(server)
    uid = server.snapshot.get(P)["metadata"]["uid"]
    clock.t = 30
    status, answer = _delete(server, gracePeriodSeconds=0, preconditions={"uid": uid})
    assert status == 200 and server.snapshot.get(P) is None
    assert answer["metadata"]["deletionGracePeriodSeconds"] == 0
    assert answer["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:00Z"


def test_finalizers_keep_a_pod_whose_grace_period_is_over(server):
    server.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default",
                                                                   "finalizers": ["example.com/hold"]},
                   **{k: v for k, v in _pod().items() if k != "metadata"}})
    _delete(server)
    _delete(server, gracePeriodSeconds=0)
    meta = server.snapshot.get(P)["metadata"]
    assert meta["deletionGracePeriodSeconds"] == 0 and meta["finalizers"] == ["example.com/hold"]
    assert _delete(server, gracePeriodSeconds=0)[0] == 200  # BeforeDelete: no grace left, nothing to do
    assert server.snapshot.get(P)["metadata"] == meta


def test_other_kinds_ignore_the_grace_period(api_client, server):
    core = client.CoreV1Api(api_client)
    core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    core.delete_namespaced_config_map("a", "default", grace_period_seconds=30)
    assert server.snapshot.get(ObjectRef("v1", "ConfigMap", "default", "a")) is None


def test_deletecollection_deletes_each_pod_gracefully(api_client, server):
    core = client.CoreV1Api(api_client)
    core.create_namespaced_pod("default", _pod())
    core.delete_collection_namespaced_pod("default")
    assert server.snapshot.get(P)["metadata"]["deletionGracePeriodSeconds"] == 30


def test_a_dry_run_leaves_the_pod_running(api_client, server):
    core = client.CoreV1Api(api_client)
    core.create_namespaced_pod("default", _pod())
    core.delete_namespaced_pod("p", "default", dry_run="All")
    assert "deletionTimestamp" not in server.snapshot.get(P)["metadata"]
    assert server.journal[-1].response["metadata"]["deletionGracePeriodSeconds"] == 30


# -- rest.BeforeDelete checks DELETE preconditions first, naming the kind ---------------------------

@pytest.mark.parametrize(("field", "wording"), [
    ("uid", "the UID in the precondition (nope) does not match the UID in record ({uid}). The object might "
            "have been deleted and then recreated"),
    ("resource_version", "the ResourceVersion in the precondition (nope) does not match the ResourceVersion "
                         "in record ({rv}). The object might have been modified"),
])
def test_delete_preconditions_are_worded_by_before_delete(api_client, field, wording):
    apps = client.AppsV1Api(api_client)
    live = apps.create_namespaced_deployment("default", {
        "metadata": {"name": "d"}, "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
            "metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
    with pytest.raises(ApiException) as exc:
        apps.delete_namespaced_deployment("d", "default", body=client.V1DeleteOptions(
            preconditions=client.V1Preconditions(**{field: "nope"})))
    body = json.loads(exc.value.body)
    assert exc.value.status == 409 and body["reason"] == "Conflict"
    assert body["message"] == 'Operation cannot be fulfilled on Deployment.apps "d": ' + wording.format(
        uid=live.metadata.uid, rv=live.metadata.resource_version)
    assert body["details"] == {"name": "d", "group": "apps", "kind": "Deployment"}


# -- kamera: graceful whatever runs on the node; only unit harnesses turn it off ---------------------

def test_a_harness_playing_the_kubelet_may_delete_bound_pods_at_once() -> None:
    from kamera_cli.apiserver import ApiServer, Registry, Snapshot

    from .crds import WIDGET

    registry = Registry.builtin().without_graceful_deletion().with_crds([WIDGET])
    assert not registry.graceful_deletion and Registry.builtin().graceful_deletion
    server = ApiServer(registry, Snapshot.empty(), now=lambda: 0)
    server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    server.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                   **{k: v for k, v in _pod().items() if k != "metadata"}})
    assert _delete(server)[0] == 200 and server.snapshot.get(P) is None


def test_a_scenario_without_the_kubelet_leaves_a_deleted_bound_pod_terminating() -> None:
    # podStrategy.CheckGracefulDelete does not ask what runs on the node: the statefulset built-in's
    # delete of db-2 (bound to node-1) marks it Terminating, and nothing ends its grace period
    from pathlib import Path

    from kamera_cli.runner import explore
    from kamera_cli.scenario import load_scenario
    from kamera_cli.sim.bootstrap import Simulation

    example = Path(__file__).resolve().parents[2] / "scenarios/workloads/scale-down-before-move/fixed"
    scenario = load_scenario(example / "scenario.yaml")
    assert "kubelet" not in scenario.cluster.builtins
    with Simulation(scenario) as sim:
        assert sim.registry.graceful_deletion
    (final,) = explore(scenario).result.converged
    pods = {o["metadata"]["name"]: o["metadata"] for o in final.objects if o["kind"] == "Pod"}
    assert sorted(pods) == ["db-0", "db-1", "db-2"]
    assert pods["db-2"]["deletionGracePeriodSeconds"] == 30 and "deletionTimestamp" in pods["db-2"]
    assert "deletionTimestamp" not in pods["db-0"] and "deletionTimestamp" not in pods["db-1"]


# -- the DELETE handler: 202 when the object stays and orphanDependents=false was asked for -----------

@pytest.mark.parametrize(("options", "status"), [({"orphanDependents": False}, 202), ({}, 200),
                                                 ({"orphanDependents": False, "dryRun": ["All"]}, 202)])
def test_a_pending_deletion_asked_with_orphan_dependents_false_is_accepted(server, options, status):
    server.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                   **{k: v for k, v in _pod().items() if k != "metadata"}})
    assert _delete(server, **options)[0] == status


def test_an_immediate_deletion_with_orphan_dependents_false_is_ok(api_client, server):
    core = client.CoreV1Api(api_client)
    core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    core.delete_namespaced_config_map("a", "default", orphan_dependents=False)
    assert server.journal[-1].status == 200
