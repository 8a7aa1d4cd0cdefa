"""The fake kubelet and scheduler: binding, the status the kubelet reports, outcomes as choices."""

from __future__ import annotations

import pytest

from kamera_cli.controlplane import Kubelet, PodRule
from kamera_cli.controlplane.kubelet import started_status
from kamera_cli.model.objects import ObjectRef
from tests.controlplane.harness import Harness, pod


def _cond(p: dict, kind: str) -> dict:
    return next(c for c in p["status"]["conditions"] if c["type"] == kind)


def test_a_pending_pod_is_bound_and_becomes_ready() -> None:
    h = Harness()
    h.create(pod("web", {"app": "web"}))
    Kubelet().reconcile(h.cluster, "default", "web", "")
    p = h.get("v1", "Pod", "web")
    assert p is not None
    assert p["spec"]["nodeName"] in ("node-1", "node-2")
    st = p["status"]
    assert st["phase"] == "Running"
    # generateAPIPodStatus's conditions, in the kubelet's order
    assert [c["type"] for c in st["conditions"]] == [
        "PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"]
    assert all(c["status"] == "True" for c in st["conditions"])
    assert st["podIP"].startswith("10.244.") and st["podIPs"] == [{"ip": st["podIP"]}]
    assert st["hostIP"] in ("10.0.0.2", "10.0.0.3")
    assert st["qosClass"] == "BestEffort"
    assert st["containerStatuses"][0]["ready"] is True and "running" in st["containerStatuses"][0]["state"]


def test_a_gated_pod_is_not_scheduled_until_its_gates_are_removed() -> None:
    h = Harness()
    h.create(pod("web", schedulingGates=[{"name": "example.com/quota"}]))
    kubelet = Kubelet(default=("running", "failed"))
    assert kubelet.choices(h.get("v1", "Pod", "web")) == ()
    kubelet.reconcile(h.cluster, "default", "web", "")
    gated = h.get("v1", "Pod", "web")
    assert gated is not None and "nodeName" not in gated["spec"] and gated["status"]["phase"] == "Pending"
    assert "conditions" not in gated["status"]  # no Unschedulable verdict either
    h.server.patch(ObjectRef("v1", "Pod", "default", "web"), "json",
                   [{"op": "remove", "path": "/spec/schedulingGates"}])
    assert kubelet.choices(h.get("v1", "Pod", "web")) == ("running", "failed")
    kubelet.reconcile(h.cluster, "default", "web", "running")
    released = h.get("v1", "Pod", "web")
    assert released is not None and released["spec"]["nodeName"] and released["status"]["phase"] == "Running"


def test_node_selector_that_no_node_matches_is_unschedulable() -> None:
    h = Harness(nodes=2)
    h.create(pod("web", nodeSelector={"disk": "ssd"}))
    Kubelet().reconcile(h.cluster, "default", "web", "")
    p = h.get("v1", "Pod", "web")
    assert p is not None and "nodeName" not in p["spec"]
    scheduled = _cond(p, "PodScheduled")
    assert (scheduled["status"], scheduled["reason"]) == ("False", "Unschedulable")
    assert scheduled["message"].startswith("0/2 nodes are available")


@pytest.mark.parametrize(("tolerations", "bound"), [
    ([], False),
    ([{"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"}], True),
    ([{"key": "dedicated", "operator": "Exists"}], True),
    ([{"key": "dedicated", "operator": "Equal", "value": "web", "effect": "NoSchedule"}], False),
])
def test_taints_need_a_matching_toleration(tolerations: list, bound: bool) -> None:
    h = Harness(nodes=1)
    node = h.get("v1", "Node", "node-1", namespace="")
    assert node is not None
    tainted = {**node, "spec": {**node["spec"], "taints": [{"key": "dedicated", "value": "db",
                                                            "effect": "NoSchedule"}]}}
    h.server.update(tainted)
    h.create(pod("db", tolerations=tolerations))
    Kubelet().reconcile(h.cluster, "default", "db", "")
    p = h.get("v1", "Pod", "db")
    assert p is not None and ("nodeName" in p["spec"]) is bound


@pytest.mark.parametrize(("outcome", "restart", "phase", "ready", "restarts"), [
    ("failed", "Never", "Failed", False, 0),
    ("failed", "OnFailure", "Running", False, 1),   # restarted in place: a crash loop
    ("succeeded", "Never", "Succeeded", False, 0),
    ("succeeded", "Always", "Running", False, 1),  # an exiting container under Always is restarted
    ("crashLoop", "Always", "Running", False, 1),
    ("running", "Always", "Running", False, 0),
    ("pending", "Always", "Pending", False, 0),
])
def test_outcomes_follow_the_restart_policy(outcome: str, restart: str, phase: str, ready: bool,
                                            restarts: int) -> None:
    h = Harness()
    h.create(pod("p", restartPolicy=restart))
    Kubelet().reconcile(h.cluster, "default", "p", outcome)
    p = h.get("v1", "Pod", "p")
    assert p is not None
    assert p["status"]["phase"] == phase
    assert _cond(p, "Ready")["status"] == ("True" if ready else "False")
    assert p["status"]["containerStatuses"][0]["restartCount"] == restarts
    if restarts:
        assert p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "CrashLoopBackOff"


def test_choices_come_from_the_first_matching_rule_and_only_for_unstarted_pods() -> None:
    kubelet = Kubelet(rules=(PodRule({"matchLabels": {"app": "db"}}, ("ready", "failed")),
                             PodRule({}, ("ready", "crashLoop"))), default=("ready",))
    db = pod("db", {"app": "db"})
    assert kubelet.choices(db) == ("ready", "failed")
    assert kubelet.choices(pod("web", {"app": "web"})) == ("ready", "crashLoop")  # {} matches every pod
    bound = {**db, "spec": {**db["spec"], "nodeName": "node-1"}}
    assert kubelet.choices(bound) == ()
    assert Kubelet().choices(db) == ()  # a single outcome is no choice


def test_started_status_is_a_function_of_its_inputs() -> None:
    node = {"status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.2"}]}}
    p = pod("x")
    assert started_status(p, node, "ready", "2026-01-01T00:00:00Z") == \
        started_status(p, node, "ready", "2026-01-01T00:00:00Z")
    guaranteed = pod("g")
    guaranteed["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "1", "memory": "1Gi"}}
    assert started_status(guaranteed, node, "ready", "t")["qosClass"] == "Guaranteed"


def test_a_rule_sets_the_exit_code_of_failing_containers() -> None:
    h = Harness()
    h.create(pod("batch", {"app": "batch"}, restartPolicy="Never"))
    h.create(pod("web", {"app": "web"}))
    kubelet = Kubelet(rules=(PodRule({"matchLabels": {"app": "batch"}}, ("failed",), exit_code=42),
                             PodRule({"matchLabels": {"app": "web"}}, ("crashLoop",), exit_code=137)))
    kubelet.reconcile(h.cluster, "default", "batch", "")
    kubelet.reconcile(h.cluster, "default", "web", "")
    failed, crashing = h.get("v1", "Pod", "batch"), h.get("v1", "Pod", "web")
    assert failed is not None and crashing is not None
    assert failed["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 42
    assert crashing["status"]["containerStatuses"][0]["lastState"]["terminated"]["exitCode"] == 137
