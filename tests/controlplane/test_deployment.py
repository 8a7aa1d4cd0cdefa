"""The Deployment controller: ReplicaSet naming and annotations, rolling and recreate rollouts, status."""

from __future__ import annotations

import copy

import pytest

from kamera_cli.controlplane import Kubelet
from kamera_cli.controlplane import rollout as R
from kamera_cli.controlplane.deployment import DeploymentController
from kamera_cli.controlplane.replicaset import ReplicaSetController
from tests.controlplane.harness import Harness, pod_template


def _deploy(replicas: int = 3, strategy: dict | None = None, image: str = "web:1") -> dict:
    template = pod_template({"app": "web"})
    template["spec"]["containers"][0]["image"] = image
    spec = {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}}, "template": template}
    if strategy is not None:
        spec["strategy"] = strategy
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
            "spec": spec}


def _settle(h: Harness, rounds: int = 12) -> None:
    """Run every built-in on every object until nothing changes (one fixed order, for unit tests)."""
    for _ in range(rounds):
        before = h.server.snapshot.resource_version
        DeploymentController().reconcile(h.cluster, "default", "web", "")
        for rs in h.of_kind("ReplicaSet"):
            ReplicaSetController().reconcile(h.cluster, "default", rs["metadata"]["name"], "")
        for p in h.pods():
            Kubelet().reconcile(h.cluster, "default", p["metadata"]["name"], "")
        h.tick()
        if h.server.snapshot.resource_version == before:
            return


def _roll_out_a_new_image(h: Harness) -> None:
    """Settle the first rollout, change the image, and run one Deployment sync."""
    _settle(h)
    d = h.get("apps/v1", "Deployment", "web")
    assert d is not None
    changed = copy.deepcopy(d)
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "web:2"
    h.server.update(changed)
    DeploymentController().reconcile(h.cluster, "default", "web", "")


@pytest.mark.parametrize(("surge", "unavailable", "replicas", "expected"), [
    ("25%", "25%", 3, (1, 0)),     # surge rounds up, unavailable down
    ("25%", "25%", 10, (3, 2)),
    (0, 0, 3, (0, 1)),             # both zero: unavailable becomes 1
    ("50%", 1, 4, (2, 1)),
])
def test_fenceposts(surge: object, unavailable: object, replicas: int, expected: tuple[int, int]) -> None:
    d = _deploy(replicas, {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": surge,
                                                                      "maxUnavailable": unavailable}})
    assert R.fenceposts(d) == expected


def test_template_hash_is_stable_safe_and_moved_by_collisions() -> None:
    t = pod_template({"app": "web"})
    h1, h2 = R.template_hash(t, None), R.template_hash(copy.deepcopy(t), None)
    assert h1 == h2 and set(h1) <= set("bcdfghjklmnpqrstvwxz2456789")
    assert R.template_hash(t, 1) != h1
    assert R.equal_ignore_hash({**t, "metadata": {"labels": {"app": "web", R.HASH_LABEL: h1}}}, t)


def test_first_sync_creates_the_new_replicaset() -> None:
    h = Harness()
    d = h.create(_deploy(3))
    DeploymentController().reconcile(h.cluster, "default", "web", "")
    [rs] = h.of_kind("ReplicaSet")
    hashed = rs["metadata"]["labels"][R.HASH_LABEL]
    assert rs["metadata"]["name"] == f"web-{hashed}"
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", R.HASH_LABEL: hashed}
    assert rs["spec"]["template"]["metadata"]["labels"] == {"app": "web", R.HASH_LABEL: hashed}
    assert rs["spec"]["replicas"] == 3
    notes = rs["metadata"]["annotations"]
    assert notes[R.REVISION] == "1" and notes[R.DESIRED_REPLICAS] == "3" and notes[R.MAX_REPLICAS] == "4"
    assert rs["metadata"]["ownerReferences"][0]["uid"] == d["metadata"]["uid"]
    after = h.get("apps/v1", "Deployment", "web")
    assert after is not None
    assert after["metadata"]["annotations"][R.REVISION] == "1"
    progressing = R.condition(after["status"]["conditions"], "Progressing")
    assert progressing is not None and progressing["reason"] == "NewReplicaSetCreated"


def test_rollout_completes_with_the_upstream_status_and_conditions() -> None:
    h = Harness()
    h.create(_deploy(3))
    _settle(h)
    d = h.get("apps/v1", "Deployment", "web")
    assert d is not None
    st = d["status"]
    assert {k: st.get(k) for k in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas",
                                   "observedGeneration")} == {
        "replicas": 3, "updatedReplicas": 3, "readyReplicas": 3, "availableReplicas": 3, "observedGeneration": 1}
    assert "unavailableReplicas" not in st  # zero is omitted
    available = R.condition(st["conditions"], "Available")
    progressing = R.condition(st["conditions"], "Progressing")
    assert available is not None and (available["status"], available["reason"]) == ("True", "MinimumReplicasAvailable")
    assert progressing is not None and progressing["reason"] == "NewReplicaSetAvailable"
    assert len(h.pods()) == 3


def test_a_new_template_rolls_to_a_second_replicaset_within_the_fenceposts() -> None:
    h = Harness()
    h.create(_deploy(4))
    _roll_out_a_new_image(h)
    rss = {rs["metadata"]["annotations"][R.REVISION]: rs for rs in h.of_kind("ReplicaSet")}
    assert set(rss) == {"1", "2"}
    # maxSurge 1 of 4: the new one may add one pod; maxUnavailable 1: the old one loses at most one
    assert rss["2"]["spec"]["replicas"] == 1
    _settle(h, rounds=30)
    rss = {rs["metadata"]["annotations"][R.REVISION]: rs for rs in h.of_kind("ReplicaSet")}
    assert rss["1"]["spec"]["replicas"] == 0 and rss["2"]["spec"]["replicas"] == 4
    assert all(p["spec"]["containers"][0]["image"] == "web:2" for p in h.pods())
    final = h.get("apps/v1", "Deployment", "web")
    assert final is not None and final["metadata"]["annotations"][R.REVISION] == "2"


def test_recreate_scales_the_old_replicaset_down_before_creating_the_new_one() -> None:
    h = Harness()
    h.create(_deploy(2, {"type": "Recreate"}))
    _roll_out_a_new_image(h)
    [old] = h.of_kind("ReplicaSet")  # no new one while old pods run
    assert old["spec"]["replicas"] == 0
    _settle(h, rounds=30)
    rss = {rs["metadata"]["annotations"][R.REVISION]: rs["spec"]["replicas"] for rs in h.of_kind("ReplicaSet")}
    assert rss == {"1": 0, "2": 2}
