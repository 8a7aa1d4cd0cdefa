"""Every refusal is a real Status body with the real message; handle() never raises for bad input."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from kamera_cli.apiserver.server import base as server_base
from kamera_cli.apiserver.server import session as server_module

CM = "/api/v1/namespaces/default/configmaps"


def _status(resp):
    body = json.loads(resp.body)
    assert body["kind"] == "Status" and body["apiVersion"] == "v1" and body["status"] == "Failure"
    assert body["metadata"] == {} and body["code"] == resp.status
    return body


def test_not_found_names_the_resource(server):
    body = _status(server.handle("GET", CM + "/a", [], {}, None))
    assert body["reason"] == "NotFound"
    assert body["message"] == 'configmaps "a" not found'
    assert body["details"] == {"name": "a", "kind": "configmaps"}


def test_not_found_in_a_group_uses_the_qualified_resource(server):
    body = _status(server.handle("GET", "/apis/apps/v1/namespaces/default/deployments/d", [], {}, None))
    assert body["message"] == 'deployments.apps "d" not found'
    assert body["details"]["group"] == "apps"


def test_already_exists(api_client):
    core = client.CoreV1Api(api_client)
    core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    assert exc.value.status == 409
    body = json.loads(exc.value.body)
    assert body["reason"] == "AlreadyExists" and body["message"] == 'configmaps "a" already exists'


@pytest.mark.parametrize("path", ["/api/v1/namespaces/default/widgets", "/apis/nope.io/v1/things", "/foo/bar",
                                  "/api/v1/namespaces/default/configmaps/a/b/c"])
def test_unknown_resource_is_404(server, path):
    resp = server.handle("GET", path, [], {}, None)
    assert resp.status == 404
    assert _status(resp)["message"] == "the server could not find the requested resource"


def test_invalid_json_is_400(server):
    resp = server.handle("POST", CM, [], {}, b"{not json")
    assert resp.status == 400 and _status(resp)["reason"] == "BadRequest"


def test_body_must_be_an_object(server):
    resp = server.handle("POST", CM, [], {}, b"[1, 2]")
    assert resp.status == 400


def test_missing_required_field_is_422_with_causes(server):
    resp = server.handle("POST", "/api/v1/namespaces/default/pods", [], {},
                         b'{"metadata":{"name":"p"},"spec":{}}')
    body = _status(resp)
    assert resp.status == 422 and body["reason"] == "Invalid"
    assert body["message"] == 'Pod "p" is invalid: spec.containers: Required value'
    assert body["details"]["causes"] == [
        {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.containers"}]


def test_required_fields_checked_through_references(server):
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"image": "x"}]}}
    body = _status(server.handle("POST", "/api/v1/namespaces/default/pods", [], {}, json.dumps(pod).encode()))
    assert body["details"]["causes"][0]["field"] == "spec.containers[0].name"


def test_wrong_basic_type_is_422(server):
    resp = server.handle("POST", CM, [], {}, b'{"metadata":{"name":"a"},"data":{"x":1}}')
    body = _status(resp)
    assert resp.status == 422 and body["details"]["causes"][0]["field"] == "data[x]"


def test_invalid_name_is_422(server):
    body = _status(server.handle("POST", CM, [], {}, b'{"metadata":{"name":"Not_Valid"}}'))
    assert body["details"]["causes"][0]["field"] == "metadata.name"
    assert "RFC 1123 subdomain" in body["message"]


def test_missing_name_and_generate_name_is_422(server):
    body = _status(server.handle("POST", CM, [], {}, b'{"metadata":{}}'))
    assert body["code"] == 422
    assert "metadata.name: Required value: name or generateName is required" in body["message"]


def test_name_or_namespace_mismatch_is_400(server):
    server.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default"}})
    resp = server.handle("PUT", CM + "/a", [], {}, b'{"metadata":{"name":"b"}}')
    assert resp.status == 400
    resp = server.handle("POST", CM, [], {}, b'{"metadata":{"name":"c","namespace":"kube-system"}}')
    assert resp.status == 400
    assert "does not match the namespace" in _status(resp)["message"]


def test_method_not_allowed(server):
    resp = server.handle("POST", CM + "/a", [], {}, b"{}")
    assert resp.status == 405 and _status(resp)["reason"] == "MethodNotAllowed"


def test_unsimulated_subresource_says_so(server):
    server.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                   "spec": {"containers": [{"name": "c", "image": "i"}]}})
    resp = server.handle("GET", "/api/v1/namespaces/default/pods/p/log", [], {}, None)
    assert resp.status == 404
    assert "does not simulate the pods/log subresource" in _status(resp)["message"]


def test_strategic_merge_patch_on_a_custom_resource_is_415(crd_server, fake_patching):
    from .crds import widget

    crd_server.create(widget())
    resp = crd_server.handle("PATCH", "/apis/example.com/v1/namespaces/default/widgets/w", [],
                             {"Content-Type": "application/strategic-merge-patch+json"}, b'{"spec":{}}')
    assert resp.status == 415 and _status(resp)["reason"] == "UnsupportedMediaType"


def test_force_on_a_non_apply_patch_is_refused(server, fake_patching):
    server.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default"}})
    resp = server.handle("PATCH", CM + "/a", [("force", "true")],
                         {"Content-Type": "application/merge-patch+json"}, b"{}")
    assert resp.status == 422
    assert "force: Forbidden: may not be specified for non-apply patch" in _status(resp)["message"]


def test_apply_needs_a_field_manager(server, fake_patching):
    resp = server.handle("PATCH", CM + "/a", [], {"Content-Type": "application/apply-patch+yaml"},
                         b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")
    assert resp.status == 422
    assert "fieldManager: Required value" in _status(resp)["message"]


def test_patch_without_the_patching_module_is_500_not_a_crash(server, monkeypatch):
    monkeypatch.setattr(server_base, "_PATCHING", [None])
    server.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default"}})
    resp = server.handle("PATCH", CM + "/a", [], {"Content-Type": "application/merge-patch+json"}, b"{}")
    assert resp.status == 500 and "not yet available" in _status(resp)["message"]


def test_an_internal_bug_becomes_a_500_status(server, monkeypatch):
    def boom(*_a, **_k):
        raise RuntimeError("boom")

    monkeypatch.setattr(server_module.ApiServer, "_do_get", boom)
    resp = server.handle("GET", CM + "/a", [], {}, None)
    body = _status(resp)
    assert resp.status == 500 and body["message"] == "kamera internal error: RuntimeError: boom"
    assert "Traceback" in body["details"]["causes"][0]["message"]


def test_every_request_is_journaled_with_its_status(server):
    server.handle("GET", CM + "/a", [], {}, None)
    server.handle("POST", CM, [], {}, b'{"metadata":{"name":"a"}}')
    assert [(a.verb, a.status, a.name) for a in server.journal] == [("get", 404, "a"), ("create", 201, "a")]
    assert server.journal[1].is_write and not server.journal[0].is_write
    assert server.journal[1].after is not None and server.journal[1].before is None


def test_namespaced_writes_need_a_namespace(server):
    resp = server.handle("POST", "/api/v1/configmaps", [], {}, b'{"metadata":{"name":"a"}}')
    assert resp.status == 405
