"""``pods/binding`` as ``BindingREST.Create`` answers it (pkg/registry/core/pod/storage/storage.go)."""

from __future__ import annotations

import json

from kamera_cli.model.objects import ObjectRef
from tests.apiserver.conftest import make_server

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default"},
       "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


def _bind(server, node: str = "node-1", name: str = "web") -> tuple[int, dict]:  # type: ignore[no-untyped-def]
    body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
    resp = server.handle("POST", f"/api/v1/namespaces/default/pods/{name}/binding", [],
                         {"Content-Type": "application/json"}, json.dumps(body).encode())
    return resp.status, json.loads(resp.body)


def test_binding_sets_the_node_and_the_scheduled_condition() -> None:
    server = make_server()
    server.create(POD)
    status, body = _bind(server)
    assert status == 201 and body["kind"] == "Status" and body["status"] == "Success"
    pod = server.snapshot.get(ObjectRef("v1", "Pod", "default", "web"))
    assert pod is not None and pod["spec"]["nodeName"] == "node-1"
    assert {"type": "PodScheduled", "status": "True"} in pod["status"]["conditions"]
    assert server.journal[-1].verb == "create" and server.journal[-1].subresource == "binding"


def test_a_bound_pod_cannot_be_bound_again() -> None:
    server = make_server()
    server.create(POD)
    _bind(server)
    status, body = _bind(server, node="node-2")
    assert status == 409 and body["reason"] == "Conflict"
    assert 'is already assigned to node "node-1"' in body["message"]


def test_binding_a_missing_pod_is_not_found() -> None:
    status, body = _bind(make_server(), name="ghost")
    assert status == 404 and body["reason"] == "NotFound"


def test_the_target_must_be_a_node() -> None:
    server = make_server()
    server.create(POD)
    body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "web"}, "target": {"kind": "Pod"}}
    resp = server.handle("POST", "/api/v1/namespaces/default/pods/web/binding", [],
                         {"Content-Type": "application/json"}, json.dumps(body).encode())
    assert resp.status == 422
