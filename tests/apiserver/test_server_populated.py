"""Fields the server fills in: Service cluster IPs (alloc.go) and the Namespace name label (namespace strategy)."""

from __future__ import annotations

import ipaddress

import pytest

from kamera_cli.apiserver import ApiError
from kamera_cli.model.objects import ObjectRef
from tests.apiserver.conftest import make_server


def _svc(name: str, **spec: object) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"app": name}, "ports": [{"port": 80}], **spec}}


def test_services_get_distinct_stable_cluster_ips_in_the_service_cidr() -> None:
    server = make_server()
    a, b = server.create(_svc("a")), server.create(_svc("b"))
    ips = {a["spec"]["clusterIP"], b["spec"]["clusterIP"]}
    assert len(ips) == 2 and all(ipaddress.ip_address(ip) in ipaddress.ip_network("10.96.0.0/12") for ip in ips)
    assert a["spec"]["clusterIPs"] == [a["spec"]["clusterIP"]]
    assert a["spec"]["ipFamilies"] == ["IPv4"] and a["spec"]["ipFamilyPolicy"] == "SingleStack"
    again = make_server().create(_svc("a"))
    assert again["spec"]["clusterIP"] == a["spec"]["clusterIP"]  # deterministic


def test_headless_requested_and_external_name_services() -> None:
    server = make_server()
    assert server.create(_svc("h", clusterIP="None"))["spec"]["clusterIPs"] == ["None"]
    assert server.create(_svc("r", clusterIP="10.96.0.42"))["spec"]["clusterIP"] == "10.96.0.42"
    ext = server.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "e", "namespace": "default"},
                         "spec": {"type": "ExternalName", "externalName": "example.com"}})
    assert "clusterIP" not in ext["spec"]


def test_an_update_that_omits_the_cluster_ip_keeps_it_and_a_change_is_refused() -> None:
    server = make_server()
    created = server.create(_svc("a"))
    body = {**created, "spec": {k: v for k, v in created["spec"].items() if k not in ("clusterIP", "clusterIPs")}}
    assert server.update(body)["spec"]["clusterIP"] == created["spec"]["clusterIP"]
    live = server.get(ObjectRef("v1", "Service", "default", "a"))
    with pytest.raises(ApiError) as info:
        server.update({**live, "spec": {**live["spec"], "clusterIP": "10.96.0.99", "clusterIPs": ["10.96.0.99"]}})
    assert info.value.status == 422


def test_namespaces_carry_their_name_label_even_when_an_update_drops_it() -> None:
    server = make_server()
    ns = server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}})
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team-a"}
    assert ns["status"] == {"phase": "Active"}
    updated = server.update({**ns, "metadata": {**ns["metadata"], "labels": {"owner": "x"}}})
    assert updated["metadata"]["labels"] == {"owner": "x", "kubernetes.io/metadata.name": "team-a"}
