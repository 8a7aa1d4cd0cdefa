"""``fieldValidation`` (handlers/rest.go ``fieldValidation``, the strict decoders' ``StrictDecodingError``,
``ValidateFieldValidation``): Warn by default, Strict refuses, Ignore stays silent."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from .crds import widget

CM_PATH = "/api/v1/namespaces/default/configmaps"


def _post(server, path, body, **query):
    return server.handle("POST", path, list(query.items()), {"Content-Type": "application/json"},
                         json.dumps(body).encode())


def _cm(**extra):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}, **extra}


def test_unknown_fields_are_dropped_with_a_warning_by_default(server):
    resp = _post(server, CM_PATH, _cm(datta={"x": "y"}))
    assert resp.status == 201 and "datta" not in resp.json()
    assert resp.headers["Warning"] == '299 - "unknown field \\"datta\\""'


def test_nested_unknown_fields_are_named_by_their_path(server):
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {
        "selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}, "spec": {
            "containers": [{"name": "c", "image": "x", "imagePullPolicyy": "Always"}]}}}}
    resp = _post(server, "/apis/apps/v1/namespaces/default/deployments", dep, fieldValidation="Strict")
    assert resp.status == 400
    assert resp.json()["message"] == ('Deployment in version "v1" cannot be handled as a Deployment: strict decoding '
                                      'error: unknown field "spec.template.spec.containers[0].imagePullPolicyy"')


def test_strict_through_the_official_client(crd_client):
    # the typed models refuse unknown fields themselves; custom objects reach the server as sent
    with pytest.raises(ApiException) as exc:
        client.CustomObjectsApi(crd_client).create_namespaced_custom_object(
            "example.com", "v1", "default", "widgets", widget(bogus=1, other=2), field_validation="Strict")
    assert exc.value.status == 400
    assert json.loads(exc.value.body)["message"].endswith(
        'strict decoding error: unknown field "spec.bogus", unknown field "spec.other"')


def test_ignore_is_silent(server):
    resp = _post(server, CM_PATH, _cm(datta={"x": "y"}), fieldValidation="Ignore")
    assert resp.status == 201 and "Warning" not in resp.headers


def test_a_known_object_gets_no_warning(server):
    assert "Warning" not in _post(server, CM_PATH, _cm()).headers


def test_an_unknown_directive_is_refused(server):
    resp = _post(server, CM_PATH, _cm(), fieldValidation="Loose")
    assert resp.status == 422
    assert resp.json()["message"] == ('CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: '
                                      '"Loose": supported values: "", "Ignore", "Strict", "Warn"')


def test_custom_resources_too(crd_server):
    body = widget(bogus=1)
    resp = _post(crd_server, "/apis/example.com/v1/namespaces/default/widgets", body, fieldValidation="Strict")
    assert resp.status == 400
    assert resp.json()["message"] == ('Widget in version "v1" cannot be handled as a Widget: strict decoding error: '
                                      'unknown field "spec.bogus"')
    warned = _post(crd_server, "/apis/example.com/v1/namespaces/default/widgets", body)
    assert warned.status == 201 and warned.headers["Warning"] == '299 - "unknown field \\"spec.bogus\\""'
