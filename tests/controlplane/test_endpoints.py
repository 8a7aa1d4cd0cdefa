"""Endpoints and EndpointSlices: ready and not-ready addresses, named target ports, slices' labels."""

from __future__ import annotations

from kamera_cli.controlplane import Kubelet
from kamera_cli.controlplane.endpoints import (
    CONTROLLER,
    MANAGED_BY,
    SERVICE_NAME,
    EndpointsController,
    EndpointSliceController,
    find_port,
)
from kamera_cli.model.objects import ObjectRef
from tests.controlplane.harness import Harness, pod

SVC = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default",
                                                          "labels": {"team": "a"}},
       "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}}


def _web_pod(name: str) -> dict:
    p = pod(name, {"app": "web"})
    p["spec"]["containers"][0]["ports"] = [{"name": "http", "containerPort": 8080}]
    return p


def _cluster(outcomes: dict[str, str]) -> Harness:
    h = Harness()
    h.create(SVC)
    for name, outcome in outcomes.items():
        h.create(_web_pod(name))
        Kubelet().reconcile(h.cluster, "default", name, outcome)
    return h


def test_endpoints_split_ready_from_not_ready_and_resolve_named_ports() -> None:
    h = _cluster({"a": "ready", "b": "running", "c": "pending"})  # c has no IP: left out
    EndpointsController().reconcile(h.cluster, "default", "web", "")
    ep = h.get("v1", "Endpoints", "web")
    assert ep is not None and ep["metadata"]["labels"] == {"team": "a"}
    [subset] = ep["subsets"]
    assert [a["targetRef"]["name"] for a in subset["addresses"]] == ["a"]
    assert [a["targetRef"]["name"] for a in subset["notReadyAddresses"]] == ["b"]
    assert subset["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
    assert subset["addresses"][0]["nodeName"] in ("node-1", "node-2")


def test_endpoints_follow_the_service_away() -> None:
    h = _cluster({"a": "ready"})
    EndpointsController().reconcile(h.cluster, "default", "web", "")
    h.server.delete(ObjectRef("v1", "Service", "default", "web"))
    EndpointsController().reconcile(h.cluster, "default", "web", "")
    assert h.get("v1", "Endpoints", "web") is None


def test_endpoint_slices_are_owned_labelled_and_carry_conditions() -> None:
    h = _cluster({"a": "ready", "b": "running"})
    EndpointSliceController().reconcile(h.cluster, "default", "web", "")
    [s] = h.of_kind("EndpointSlice")
    assert s["metadata"]["generateName"] == "web-"
    assert s["metadata"]["labels"] == {"team": "a", SERVICE_NAME: "web", MANAGED_BY: CONTROLLER}
    assert s["metadata"]["ownerReferences"][0]["kind"] == "Service"
    assert s["addressType"] == "IPv4" and s["ports"] == [{"name": "http", "protocol": "TCP", "port": 8080}]
    conditions = {e["targetRef"]["name"]: e["conditions"] for e in s["endpoints"]}
    assert conditions == {"a": {"ready": True, "serving": True, "terminating": False},
                          "b": {"ready": False, "serving": False, "terminating": False}}
    EndpointSliceController().reconcile(h.cluster, "default", "web", "")
    assert len(h.of_kind("EndpointSlice")) == 1  # a second sync changes nothing


def test_find_port() -> None:
    p = _web_pod("x")
    assert find_port(p, {"port": 80, "targetPort": "http"}) == 8080
    assert find_port(p, {"port": 80, "targetPort": 9090}) == 9090
    assert find_port(p, {"port": 80}) == 80
    assert find_port(p, {"port": 80, "targetPort": "grpc"}) is None
