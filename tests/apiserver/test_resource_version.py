"""resourceVersion: a monotonic string; stale updates conflict; unconditional PUT for built-ins only."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from .crds import widget


def _cm(name: str = "a", **data: str) -> dict:
    return {"metadata": {"name": name}, "data": data}


def test_rv_is_a_string_that_grows_with_every_write(api_client):
    core = client.CoreV1Api(api_client)
    first = core.create_namespaced_config_map("default", _cm(x="1"))
    second = core.replace_namespaced_config_map("a", "default", {**_cm(x="2"), "metadata": {
        "name": "a", "resourceVersion": first.metadata.resource_version}})
    assert isinstance(first.metadata.resource_version, str)
    assert int(second.metadata.resource_version) > int(first.metadata.resource_version)


def test_update_with_stale_rv_is_a_409_conflict_with_the_real_message(api_client):
    core = client.CoreV1Api(api_client)
    old = core.create_namespaced_config_map("default", _cm(x="1"))
    core.replace_namespaced_config_map("a", "default", _cm(x="2"))
    stale = {"metadata": {"name": "a", "resourceVersion": old.metadata.resource_version}, "data": {"x": "3"}}
    with pytest.raises(ApiException) as exc:
        core.replace_namespaced_config_map("a", "default", stale)
    assert exc.value.status == 409
    body = json.loads(exc.value.body)
    assert body["reason"] == "Conflict"
    assert body["message"] == ('Operation cannot be fulfilled on configmaps "a": the object has been modified; '
                               "please apply your changes to the latest version and try again")


def test_put_without_rv_is_unconditional_for_builtins(api_client):
    core = client.CoreV1Api(api_client)
    core.create_namespaced_config_map("default", _cm(x="1"))
    out = core.replace_namespaced_config_map("a", "default", _cm(x="2"))
    assert out.data == {"x": "2"}


def test_put_without_rv_is_422_for_custom_resources(crd_client):
    api = client.CustomObjectsApi(crd_client)
    api.create_namespaced_custom_object("example.com", "v1", "default", "widgets", widget())
    with pytest.raises(ApiException) as exc:
        api.replace_namespaced_custom_object("example.com", "v1", "default", "widgets", "w", widget(size="large"))
    assert exc.value.status == 422
    assert "metadata.resourceVersion: Invalid value: 0x0: must be specified for an update" in json.loads(
        exc.value.body)["message"]


def test_put_to_a_missing_object_is_404(api_client, crd_client):
    with pytest.raises(ApiException) as exc:
        client.CoreV1Api(api_client).replace_namespaced_config_map("nope", "default", _cm("nope"))
    assert exc.value.status == 404
    with pytest.raises(ApiException) as exc:
        client.CustomObjectsApi(crd_client).replace_namespaced_custom_object(
            "example.com", "v1", "default", "widgets", "nope", {**widget("nope"), "metadata": {
                "name": "nope", "resourceVersion": "1"}})
    assert exc.value.status == 404


def test_patch_conflicts_only_when_the_body_carries_a_resource_version(api_client, fake_patching):
    core = client.CoreV1Api(api_client)
    old = core.create_namespaced_config_map("default", _cm(x="1"))
    core.patch_namespaced_config_map("a", "default", {"data": {"x": "2"}})  # no RV: never conflicts
    with pytest.raises(ApiException) as exc:
        core.patch_namespaced_config_map("a", "default", {"metadata": {
            "resourceVersion": old.metadata.resource_version}, "data": {"x": "3"}})
    assert exc.value.status == 409
    current = core.read_namespaced_config_map("a", "default")
    ok = core.patch_namespaced_config_map("a", "default", {"metadata": {
        "resourceVersion": current.metadata.resource_version}, "data": {"x": "4"}})
    assert ok.data == {"x": "4"}


def test_a_write_that_changes_nothing_keeps_the_resource_version(api_client, server):
    core = client.CoreV1Api(api_client)
    created = core.create_namespaced_config_map("default", _cm(x="1"))
    rv_before = server.snapshot.resource_version
    same = core.replace_namespaced_config_map("a", "default", _cm(x="1"))
    assert same.metadata.resource_version == created.metadata.resource_version
    assert server.snapshot.resource_version == rv_before
