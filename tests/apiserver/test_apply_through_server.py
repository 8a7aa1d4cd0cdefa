"""Server-side apply through the server: re-applying the same configuration is a no-op.

Pinned because list-map keys with defaults (ports' `protocol`) once made every re-apply append a
duplicate port: the stored object is defaulted, the applied configuration must be keyed the same way.
"""

from __future__ import annotations

import json
from typing import Any

from kamera_cli.apiserver import ApiServer
from kamera_cli.model.objects import ObjectRef

APPLY = {"Content-Type": "application/apply-patch+yaml", "User-Agent": "OpenAPI-Generator/37.0.2/python"}


def _apply(server: ApiServer, path: str, body: dict[str, Any]) -> Any:
    resp = server.handle("PATCH", path, [("fieldManager", "me")], APPLY, json.dumps(body).encode())
    assert resp.status in (200, 201), resp.body
    return json.loads(resp.body)


def test_reapplying_a_deployment_with_defaulted_port_keys_changes_nothing(server: ApiServer) -> None:
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
           "spec": {"selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}},
                                 "spec": {"containers": [{"name": "web", "image": "nginx:1",
                                                          "ports": [{"containerPort": 80}]}]}}}}
    path = "/apis/apps/v1/namespaces/default/deployments/web"
    first = _apply(server, path, dep)
    rv = first["metadata"]["resourceVersion"]
    for _ in range(3):
        again = _apply(server, path, dep)
    ports = again["spec"]["template"]["spec"]["containers"][0]["ports"]
    assert ports == [{"containerPort": 80, "protocol": "TCP"}]
    assert again["metadata"]["resourceVersion"] == rv  # a no-op apply writes nothing
    stored = server.snapshot.get(ObjectRef("apps/v1", "Deployment", "default", "web"))
    assert stored is not None and stored["metadata"]["generation"] == 1


def test_reapplying_a_service_keeps_one_port(server: ApiServer) -> None:
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
           "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}
    path = "/api/v1/namespaces/default/services/web"
    _apply(server, path, svc)
    again = _apply(server, path, svc)
    assert [p["port"] for p in again["spec"]["ports"]] == [80]
