"""The ReplicaSet controller: creates from the template, claims, deletion order, status."""

from __future__ import annotations

from kamera_cli.controlplane.pods import deletion_order, slow_start_batches
from kamera_cli.controlplane.replicaset import ReplicaSetController
from tests.controlplane.harness import Harness, pod, pod_template


def _rs(replicas: int = 3) -> dict:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": pod_template({"app": "web", "tier": "front"})}}


def test_creates_pods_from_the_template_with_a_controller_reference() -> None:
    h = Harness()
    rs = h.create(_rs(3))
    ReplicaSetController().reconcile(h.cluster, "default", "web", "")
    pods = h.pods()
    assert len(pods) == 3
    for p in pods:
        assert p["metadata"]["generateName"] == "web-"
        assert p["metadata"]["name"].startswith("web-")
        assert p["metadata"]["labels"] == {"app": "web", "tier": "front"}
        assert p["metadata"]["ownerReferences"] == [{
            "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": rs["metadata"]["uid"],
            "controller": True, "blockOwnerDeletion": True}]
    # the status is computed from the pods the sync started with (none), as upstream does
    after = h.get("apps/v1", "ReplicaSet", "web")
    assert after is not None and after["status"] == {"replicas": 0, "observedGeneration": 1}
    ReplicaSetController().reconcile(h.cluster, "default", "web", "")
    after = h.get("apps/v1", "ReplicaSet", "web")
    assert after is not None
    assert after["status"] == {"replicas": 3, "fullyLabeledReplicas": 3, "observedGeneration": 1}


def test_adopts_matching_orphans_and_releases_pods_that_stop_matching() -> None:
    h = Harness()
    h.create(pod("stray", {"app": "web"}))
    rs = h.create(_rs(1))
    ReplicaSetController().reconcile(h.cluster, "default", "web", "")
    stray = h.get("v1", "Pod", "stray")
    assert stray is not None and stray["metadata"]["ownerReferences"][0]["uid"] == rs["metadata"]["uid"]
    assert len(h.pods()) == 1  # adopted, so none created
    relabelled = {**stray, "metadata": {**stray["metadata"], "labels": {"app": "other"}}}
    h.server.update(relabelled)
    ReplicaSetController().reconcile(h.cluster, "default", "web", "")
    released = h.get("v1", "Pod", "stray")
    assert released is not None and not released["metadata"].get("ownerReferences")
    assert len(h.pods()) == 2  # a replacement for the released pod


def test_scale_down_deletes_unscheduled_then_not_ready_pods_first() -> None:
    a = {"metadata": {"name": "a", "creationTimestamp": "2026-01-01T00:00:00Z"}, "spec": {"nodeName": "n1"},
         "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True",
                                                           "lastTransitionTime": "2026-01-01T00:00:05Z"}]}}
    b = {"metadata": {"name": "b", "creationTimestamp": "2026-01-01T00:00:00Z"}, "spec": {"nodeName": "n1"},
         "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]}}
    c = {"metadata": {"name": "c", "creationTimestamp": "2026-01-01T00:00:00Z"}, "spec": {},
         "status": {"phase": "Pending"}}
    d = {"metadata": {"name": "d", "creationTimestamp": "2026-01-01T00:00:00Z"}, "spec": {"nodeName": "n1"},
         "status": {"phase": "Pending"}}
    assert [p["metadata"]["name"] for p in deletion_order([a, b, c, d], [a, b, c, d])] == ["c", "d", "b", "a"]


def test_scale_down_through_the_controller() -> None:
    h = Harness()
    h.create(_rs(3))
    ReplicaSetController().reconcile(h.cluster, "default", "web", "")
    rs = h.get("apps/v1", "ReplicaSet", "web")
    assert rs is not None
    h.server.update({**rs, "spec": {**rs["spec"], "replicas": 1}})
    ReplicaSetController().reconcile(h.cluster, "default", "web", "")
    assert len(h.pods()) == 1


def test_slow_start_batches_double() -> None:
    assert slow_start_batches(0) == []
    assert slow_start_batches(1) == [1]
    assert slow_start_batches(7) == [1, 2, 4]
    assert slow_start_batches(10) == [1, 2, 4, 3]
