"""managedFields of non-apply writes (create, update, patch): typed by the kind's schema, as upstream.

Upstream: the create handler (``staging/src/k8s.io/apiserver/pkg/endpoints/handlers/create.go``)
calls ``FieldManager.UpdateNoErrors(liveObj, obj, manager)`` with ``liveObj`` from
``scope.Creater.New(scope.Kind)`` — the Go zero value of the kind — and the update and patch
handlers with the stored object; the structured-merge-diff updater (``merge/update.go``,
``Updater.Update``) compares the two *typed* values, so keyed lists (``containers`` by name, ports by
port and protocol) are owned item by item, an atomic struct (``LabelSelector``) as one field, and a
field the zero value already has (a struct, a field without ``omitempty``) is not "added" and gets no
``.`` of its own.  The expected field sets below are what ``kubectl get --show-managed-fields`` shows
for the same writes on a cluster.
"""

from __future__ import annotations

import json
from typing import Any

from kamera_cli.apiserver import ApiServer

_DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
_JSON = {"Content-Type": "application/json"}
_APPLY = {"Content-Type": "application/apply-patch+yaml"}


def _deployment(name: str = "web", **meta: Any) -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, **meta},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "app", "image": "nginx:1.27",
                                                           "ports": [{"containerPort": 80}]}]}}}}


def _send(server: ApiServer, method: str, path: str, body: Any, headers: dict[str, str] = _JSON,
          manager: str = "") -> tuple[int, dict[str, Any]]:
    query = [("fieldManager", manager)] if manager else []
    resp = server.handle(method, path, query, headers, json.dumps(body).encode())
    return resp.status, json.loads(resp.body)


def _fields(obj: dict[str, Any], manager: str) -> dict[str, Any]:
    entries = [e for e in obj["metadata"]["managedFields"] if e["manager"] == manager]
    assert len(entries) == 1, obj["metadata"]["managedFields"]
    fields: dict[str, Any] = entries[0]["fieldsV1"]
    return fields


_CONTAINER = {".": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {},
              "f:ports": {".": {}, 'k:{"containerPort":80,"protocol":"TCP"}': {
                  ".": {}, "f:containerPort": {}, "f:protocol": {}}},
              "f:resources": {}, "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {}}


def test_a_created_deployment_is_owned_field_by_field_against_the_zero_value(server):
    status, out = _send(server, "POST", _DEPLOYMENTS, _deployment(labels={"team": "a"}), manager="kubectl-create")
    assert status == 201
    assert _fields(out, "kubectl-create") == {
        "f:metadata": {"f:labels": {".": {}, "f:team": {}}},
        "f:spec": {
            "f:progressDeadlineSeconds": {}, "f:replicas": {}, "f:revisionHistoryLimit": {},
            "f:selector": {},  # LabelSelector is an atomic struct
            "f:strategy": {"f:rollingUpdate": {".": {}, "f:maxSurge": {}, "f:maxUnavailable": {}}, "f:type": {}},
            "f:template": {
                "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                "f:spec": {"f:containers": {'k:{"name":"app"}': _CONTAINER},
                           "f:dnsPolicy": {}, "f:restartPolicy": {}, "f:schedulerName": {},
                           "f:securityContext": {}, "f:terminationGracePeriodSeconds": {}}}}}


def test_a_created_config_map_owns_its_data_map():
    from .conftest import make_server

    server = make_server()
    status, out = _send(server, "POST", "/api/v1/namespaces/default/configmaps",
                        {"metadata": {"name": "c"}, "data": {"k": "v"}}, manager="m")
    assert status == 201 and _fields(out, "m") == {"f:data": {".": {}, "f:k": {}}}


def test_an_apply_over_a_created_container_image_conflicts_and_a_new_field_does_not(server):
    _send(server, "POST", _DEPLOYMENTS, _deployment(), manager="creator")
    image = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
             "spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:1.28"}]}}}}
    status, out = _send(server, "PATCH", f"{_DEPLOYMENTS}/web", image, _APPLY, manager="ctl")
    assert status == 409, out
    assert [c["field"] for c in out["details"]["causes"]] == ['.spec.template.spec.containers[name="app"].image']
    env = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
           "spec": {"template": {"spec": {"containers": [{"name": "app", "env": [{"name": "X", "value": "1"}]}]}}}}
    status, out = _send(server, "PATCH", f"{_DEPLOYMENTS}/web", env, _APPLY, manager="ctl")
    assert status == 200, out
    assert _fields(out, "ctl")["f:spec"]["f:template"]["f:spec"]["f:containers"] == {
        'k:{"name":"app"}': {".": {}, "f:name": {},
                             "f:env": {'k:{"name":"X"}': {".": {}, "f:name": {}, "f:value": {}}}}}
    assert _fields(out, "creator")["f:spec"]["f:template"]["f:spec"]["f:containers"] == {'k:{"name":"app"}': _CONTAINER}


def test_an_update_takes_only_the_container_field_it_changed(server):
    _, live = _send(server, "POST", _DEPLOYMENTS, _deployment(), manager="creator")
    changed = json.loads(json.dumps(live))
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.28"
    status, out = _send(server, "PUT", f"{_DEPLOYMENTS}/web", changed, manager="bumper")
    assert status == 200
    assert _fields(out, "bumper") == {
        "f:spec": {"f:template": {"f:spec": {"f:containers": {'k:{"name":"app"}': {"f:image": {}}}}}}}
    creator = _fields(out, "creator")["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"app"}']
    assert "f:image" not in creator and "f:name" in creator


def test_a_patch_adding_a_container_owns_that_item(server):
    _send(server, "POST", _DEPLOYMENTS, _deployment(), manager="creator")
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "side", "image": "busybox"}]}}}}
    status, out = _send(server, "PATCH", f"{_DEPLOYMENTS}/web", patch,
                        {"Content-Type": "application/strategic-merge-patch+json"}, manager="sidecar")
    assert status == 200
    owned = _fields(out, "sidecar")["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert list(owned) == ['k:{"name":"side"}']
    assert set(owned['k:{"name":"side"}']) == {".", "f:image", "f:imagePullPolicy", "f:name", "f:resources",
                                               "f:terminationMessagePath", "f:terminationMessagePolicy"}


def test_a_custom_resource_keyed_list_is_owned_item_by_item():
    """A CRD's ``x-kubernetes-list-type: map`` keys the list for every write, not only for apply."""
    from kamera_cli.apiserver import Registry

    from .conftest import make_server
    from .crds import crd

    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["id"],
                  "items": {"type": "object", "required": ["id"],
                            "properties": {"id": {"type": "string"}, "size": {"type": "integer"}}}}}}}}
    server = make_server(Registry.builtin().with_crds([crd("Shelf", "shelves", status=False, schema=schema)]))
    path = "/apis/example.com/v1/namespaces/default/shelves"
    body = {"apiVersion": "example.com/v1", "kind": "Shelf", "metadata": {"name": "s"},
            "spec": {"items": [{"id": "a", "size": 1}, {"id": "b", "size": 2}]}}
    status, live = _send(server, "POST", path, body, manager="creator")
    assert status == 201
    # no Go type: compared with an empty object, so spec is added with its "." (metadata never is)
    assert _fields(live, "creator") == {"f:spec": {".": {}, "f:items": {
        ".": {}, 'k:{"id":"a"}': {".": {}, "f:id": {}, "f:size": {}},
        'k:{"id":"b"}': {".": {}, "f:id": {}, "f:size": {}}}}}
    changed = json.loads(json.dumps(live))
    changed["spec"]["items"][1]["size"] = 3
    status, out = _send(server, "PUT", f"{path}/s", changed, manager="resizer")
    assert status == 200
    assert _fields(out, "resizer") == {"f:spec": {"f:items": {'k:{"id":"b"}': {"f:size": {}}}}}


def test_a_custom_resources_spec_added_by_a_later_write_is_owned_with_its_dot():
    from kamera_cli.apiserver import Registry

    from .conftest import make_server
    from .crds import crd

    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}
    server = make_server(Registry.builtin().with_crds([crd("Crate", "crates", status=False, schema=schema)]))
    path = "/apis/example.com/v1/namespaces/default/crates"
    status, live = _send(server, "POST", path, {"apiVersion": "example.com/v1", "kind": "Crate",
                                                "metadata": {"name": "c", "labels": {"a": "b"}}}, manager="creator")
    assert status == 201 and _fields(live, "creator") == {"f:metadata": {"f:labels": {".": {}, "f:a": {}}}}
    status, out = _send(server, "PUT", f"{path}/c", {**live, "spec": {"size": 2}}, manager="sizer")
    assert status == 200 and _fields(out, "sizer") == {"f:spec": {".": {}, "f:size": {}}}
