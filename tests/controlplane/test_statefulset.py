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
from kamera_cli.model.objects import ObjectRef
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


# --------------------------------------------------------------------------- ControllerRevisions
def _revisions(h: Harness) -> dict[str, dict]:
    return {r["metadata"]["name"]: r for r in h.of_kind("ControllerRevision")}


def _set_image(h: Harness, image: str, **spec: object) -> None:
    h.set_image("apps/v1", "StatefulSet", "db", image, **spec)


def _run_all(h: Harness) -> None:
    for p in h.pods():
        Kubelet().reconcile(h.cluster, "default", p["metadata"]["name"], "")


def _image(h: Harness, pod: str) -> str:
    found = h.get("v1", "Pod", pod)
    assert found is not None
    return str(found["spec"]["containers"][0]["image"])


def test_a_revision_is_a_controller_revision_object() -> None:
    h = Harness()
    sts = h.create(_sts(1))
    _sync(h)
    [rev] = _revisions(h).values()
    name = revision_name(sts)
    assert rev["metadata"]["name"] == name and name.startswith("db-") and rev["revision"] == 1
    assert rev["metadata"]["labels"]["app"] == "db"
    assert rev["metadata"]["labels"]["controller.kubernetes.io/hash"] == name.removeprefix("db-")
    [ref] = rev["metadata"]["ownerReferences"]
    assert ref["kind"] == "StatefulSet" and ref["uid"] == sts["metadata"]["uid"] and ref["controller"] is True
    assert rev["data"]["spec"]["template"]["$patch"] == "replace"
    assert rev["data"]["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox"
    _sync(h)
    assert list(_revisions(h)) == [name]  # an unchanged template makes no new revision


def test_a_pod_recreated_below_the_partition_gets_the_current_revisions_template() -> None:
    h = Harness()
    h.create({**_sts(3, policy="Parallel")})
    _sync(h)
    _run_all(h)
    _sync(h)
    old = h.get("apps/v1", "StatefulSet", "db")["status"]["currentRevision"]  # type: ignore[index]
    _set_image(h, "busybox:2", updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 2}})
    _sync(h)  # the new revision; db-2 (at the partition) is replaced
    revisions = _revisions(h)
    assert len(revisions) == 2
    new = next(n for n in revisions if n != old)
    assert revisions[old]["revision"] == 1 and revisions[new]["revision"] == 2
    assert _names(h) == ["db-0", "db-1"]
    _sync(h)
    assert _image(h, "db-2") == "busybox:2"
    h.server.delete(ObjectRef("v1", "Pod", "default", "db-0"))
    _sync(h)
    db0 = h.get("v1", "Pod", "db-0")
    assert db0 is not None and db0["spec"]["containers"][0]["image"] == "busybox"  # the stored template
    assert db0["metadata"]["labels"][REVISION_LABEL] == old
    st = h.get("apps/v1", "StatefulSet", "db")["status"]  # type: ignore[index]
    assert st["currentRevision"] == old and st["updateRevision"] == new


def test_going_back_to_an_old_template_renumbers_its_revision() -> None:
    h = Harness()
    h.create(_sts(1))
    _sync(h)
    [first] = _revisions(h)
    _set_image(h, "busybox:2")
    _sync(h)
    _set_image(h, "busybox")
    _sync(h)
    revisions = _revisions(h)
    assert len(revisions) == 2 and revisions[first]["revision"] == 3  # rolled back, not recreated
    assert h.get("apps/v1", "StatefulSet", "db")["status"]["updateRevision"] == first  # type: ignore[index]


def test_history_beyond_the_limit_is_pruned_oldest_first() -> None:
    h = Harness()
    h.create({**_sts(1), "spec": {**_sts(1)["spec"], "revisionHistoryLimit": 0,
                                  "updateStrategy": {"type": "OnDelete"}}})
    _sync(h)
    [first] = _revisions(h)
    _set_image(h, "busybox:2")
    _sync(h)
    assert len(_revisions(h)) == 2  # db-0 still runs the first revision: it is live
    h.server.delete(ObjectRef("v1", "Pod", "default", "db-0"))
    _sync(h)
    assert _image(h, "db-0") == "busybox:2"
    _set_image(h, "busybox:3")
    _sync(h)
    assert first not in _revisions(h) and len(_revisions(h)) == 2


def test_an_orphaned_revision_is_adopted_and_reused() -> None:
    h = Harness()
    sts = h.create(_sts(1))
    _sync(h)
    [rev] = h.of_kind("ControllerRevision")
    orphan = {k: v for k, v in rev.items() if k != "metadata"}
    orphan["metadata"] = {"name": rev["metadata"]["name"], "namespace": "default",
                          "labels": rev["metadata"]["labels"]}
    h.server.delete(ObjectRef("apps/v1", "ControllerRevision", "default", rev["metadata"]["name"]))
    h.create(orphan)  # e.g. left by a StatefulSet deleted with orphan propagation
    _sync(h)
    [adopted] = h.of_kind("ControllerRevision")
    assert adopted["metadata"]["ownerReferences"][0]["uid"] == sts["metadata"]["uid"]
    assert adopted["revision"] == 1  # the same data: reused, not recreated
