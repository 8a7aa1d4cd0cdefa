"""The DaemonSet controller: one pinned pod per eligible node, the daemon tolerations, status."""

from __future__ import annotations

from kamera_cli.controlplane import Kubelet
from kamera_cli.controlplane.daemonset import DaemonSetController, pinned_node
from tests.controlplane.harness import Harness, pod_template


def _ds(**pod_spec: object) -> dict:
    template = pod_template({"app": "agent"})
    template["spec"].update(pod_spec)
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": template}}


def _sync(h: Harness) -> None:
    DaemonSetController().reconcile(h.cluster, "default", "agent", "")


def test_one_pod_per_node_pinned_by_affinity_and_bound_by_the_scheduler() -> None:
    h = Harness(nodes=3)
    h.create(_ds())
    _sync(h)
    pods = h.pods()
    assert sorted(pinned_node(p) for p in pods) == ["node-1", "node-2", "node-3"]
    tolerated = {t["key"] for t in pods[0]["spec"]["tolerations"]}
    assert "node.kubernetes.io/unschedulable" in tolerated and "node.kubernetes.io/not-ready" in tolerated
    for p in pods:
        Kubelet().reconcile(h.cluster, "default", p["metadata"]["name"], "")
    assert all(p["spec"]["nodeName"] == pinned_node(p) for p in h.pods())  # the affinity is honoured
    _sync(h)
    st = h.get("apps/v1", "DaemonSet", "agent")["status"]  # type: ignore[index]
    assert st["desiredNumberScheduled"] == 3 and st["currentNumberScheduled"] == 3
    assert st["numberReady"] == 3 and st["numberAvailable"] == 3 and st["numberMisscheduled"] == 0
    assert st["updatedNumberScheduled"] == 3 and "numberUnavailable" not in st


def test_node_selector_limits_the_nodes_and_a_cordoned_node_still_runs_daemons() -> None:
    h = Harness(nodes=2)
    node = h.get("v1", "Node", "node-2", namespace="")
    assert node is not None
    h.server.update({**node, "spec": {**node["spec"], "unschedulable": True}})
    h.create(_ds())
    _sync(h)
    assert sorted(pinned_node(p) for p in h.pods()) == ["node-1", "node-2"]
    h2 = Harness(nodes=2)
    h2.create(_ds(nodeSelector={"kubernetes.io/hostname": "node-1"}))
    _sync(h2)
    assert [pinned_node(p) for p in h2.pods()] == ["node-1"]
    st = h2.get("apps/v1", "DaemonSet", "agent")["status"]  # type: ignore[index]
    assert st["desiredNumberScheduled"] == 1 and st["numberReady"] == 0 and st["numberUnavailable"] == 1


def _revisions(h: Harness) -> dict[str, dict]:
    return {r["metadata"]["name"]: r for r in h.of_kind("ControllerRevision")}


def _set_image(h: Harness, image: str, **spec: object) -> None:
    h.set_image("apps/v1", "DaemonSet", "agent", image, **spec)


def test_revisions_are_controller_revisions_named_by_the_pod_template_hash() -> None:
    h = Harness(nodes=1)
    ds = h.create({**_ds(), "metadata": {"name": "agent", "namespace": "default", "annotations": {"team": "a"}}})
    _sync(h)
    [rev] = _revisions(h).values()
    [pod] = h.pods()
    digest = pod["metadata"]["labels"]["controller-revision-hash"]
    assert rev["metadata"]["name"] == f"agent-{digest}" and rev["revision"] == 1
    assert rev["metadata"]["labels"] == {"app": "agent", "controller-revision-hash": digest}
    assert rev["metadata"]["annotations"] == {"team": "a"}  # snapshot copies the DaemonSet's annotations
    assert rev["metadata"]["ownerReferences"][0]["uid"] == ds["metadata"]["uid"]
    assert rev["data"]["spec"]["template"]["$patch"] == "replace"
    _set_image(h, "busybox:2", revisionHistoryLimit=0)
    _sync(h)
    revisions = _revisions(h)
    assert sorted(r["revision"] for r in revisions.values()) == [1, 2]  # the old pod still runs revision 1
    Kubelet().reconcile(h.cluster, "default", pod["metadata"]["name"], "")
    _sync(h)  # the rolling update replaces the ready old pod
    _sync(h)  # the new pod is created
    assert [p["spec"]["containers"][0]["image"] for p in h.pods()] == ["busybox:2"]
    _sync(h)
    assert [r["revision"] for r in _revisions(h).values()] == [2]  # revision 1 is no longer live: pruned
    _set_image(h, "busybox")
    _sync(h)
    assert sorted(r["revision"] for r in _revisions(h).values()) == [2, 3]  # not the pruned one's number
