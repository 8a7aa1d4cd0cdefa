"""The StatefulSet controller: ordinal identities, claims from templates, ordering, status."""

from __future__ import annotations

from kamera_cli.controlplane import Kubelet
from kamera_cli.controlplane.statefulset import (
    POD_INDEX_LABEL,
    POD_NAME_LABEL,
    REVISION_LABEL,
    StatefulSetController,
    ordinal_of,
    revision_name,
)
from tests.controlplane.harness import Harness, pod_template


def _sts(replicas: int = 3, policy: str = "OrderedReady") -> dict:
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "namespace": "default"},
            "spec": {"replicas": replicas, "serviceName": "db", "podManagementPolicy": policy,
                     "selector": {"matchLabels": {"app": "db"}}, "template": pod_template({"app": "db"}),
                     "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                         "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}}


def _sync(h: Harness) -> None:
    StatefulSetController().reconcile(h.cluster, "default", "db", "")


def _names(h: Harness) -> list[str]:
    return sorted(p["metadata"]["name"] for p in h.pods())


def test_ordered_ready_creates_one_pod_at_a_time_with_its_claim() -> None:
    h = Harness()
    sts = h.create(_sts(3))
    _sync(h)
    assert _names(h) == ["db-0"]
    [p] = h.pods()
    assert p["spec"]["hostname"] == "db-0" and p["spec"]["subdomain"] == "db"
    assert p["metadata"]["labels"][POD_NAME_LABEL] == "db-0" and p["metadata"]["labels"][POD_INDEX_LABEL] == "0"
    assert p["metadata"]["labels"][REVISION_LABEL] == revision_name(sts)
    assert {"name": "data", "persistentVolumeClaim": {"claimName": "data-db-0"}} in p["spec"]["volumes"]
    [claim] = h.of_kind("PersistentVolumeClaim")
    assert claim["metadata"]["name"] == "data-db-0" and claim["metadata"]["labels"] == {"app": "db"}
    assert not claim["metadata"].get("ownerReferences")  # retention policy Retain (the default)
    _sync(h)
    assert _names(h) == ["db-0"]  # waits until db-0 is Running and Ready
    Kubelet().reconcile(h.cluster, "default", "db-0", "")
    _sync(h)
    assert _names(h) == ["db-0", "db-1"]


def test_parallel_creates_every_ordinal_at_once() -> None:
    h = Harness()
    h.create(_sts(3, policy="Parallel"))
    _sync(h)
    assert _names(h) == ["db-0", "db-1", "db-2"]
    assert sorted(c["metadata"]["name"] for c in h.of_kind("PersistentVolumeClaim")) == [
        "data-db-0", "data-db-1", "data-db-2"]


def test_scale_down_removes_the_highest_ordinal_first_and_keeps_claims() -> None:
    h = Harness()
    h.create(_sts(3, policy="Parallel"))
    _sync(h)
    for p in h.pods():
        Kubelet().reconcile(h.cluster, "default", p["metadata"]["name"], "")
    sts = h.get("apps/v1", "StatefulSet", "db")
    assert sts is not None
    h.server.update({**sts, "spec": {**sts["spec"], "replicas": 1}})
    _sync(h)
    assert _names(h) == ["db-0"]
    assert len(h.of_kind("PersistentVolumeClaim")) == 3


def test_status_counts_and_revisions() -> None:
    h = Harness()
    sts = h.create(_sts(1))
    _sync(h)
    Kubelet().reconcile(h.cluster, "default", "db-0", "")
    _sync(h)
    st = h.get("apps/v1", "StatefulSet", "db")["status"]  # type: ignore[index]
    rev = revision_name(sts)
    assert st == {"observedGeneration": 1, "replicas": 1, "readyReplicas": 1, "currentReplicas": 1,
                  "updatedReplicas": 1, "availableReplicas": 1, "currentRevision": rev, "updateRevision": rev,
                  "collisionCount": 0}


def test_only_pods_named_for_the_set_are_its_members() -> None:
    assert ordinal_of("db", {"metadata": {"name": "db-12"}}) == 12
    assert ordinal_of("db", {"metadata": {"name": "db-x"}}) is None
    assert ordinal_of("db", {"metadata": {"name": "dbb-1"}}) is None
