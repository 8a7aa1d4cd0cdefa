"""List: kind XList, items always present, list RV, all-namespaces, limit/continue pinning the RV."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException


def _make(core, ns, name):
    core.create_namespaced_config_map(ns, {"metadata": {"name": name}})


def test_empty_list_has_items_and_kind(server):
    resp = server.handle("GET", "/api/v1/namespaces/default/configmaps", [], {}, None)
    body = json.loads(resp.body)
    assert body["kind"] == "ConfigMapList"
    assert body["apiVersion"] == "v1"
    assert body["items"] == []
    assert body["metadata"]["resourceVersion"] == str(server.snapshot.resource_version)


def test_list_all_namespaces_is_sorted(api_client):
    core = client.CoreV1Api(api_client)
    _make(core, "kube-system", "b")
    _make(core, "default", "z")
    _make(core, "default", "a")
    out = core.list_config_map_for_all_namespaces()
    assert [(i.metadata.namespace, i.metadata.name) for i in out.items] == [
        ("default", "a"), ("default", "z"), ("kube-system", "b")]


def test_limit_and_continue_pages_through_a_pinned_snapshot(api_client):
    core = client.CoreV1Api(api_client)
    for name in "abcde":
        _make(core, "default", name)
    page = core.list_namespaced_config_map("default", limit=2)
    names = [i.metadata.name for i in page.items]
    assert page.metadata.remaining_item_count == 3
    _make(core, "default", "f")  # written after the first page: not part of this list
    while page.metadata._continue:
        page = core.list_namespaced_config_map("default", limit=2, _continue=page.metadata._continue)
        names += [i.metadata.name for i in page.items]
    assert names == list("abcde")


def test_a_garbage_continue_token_is_400(api_client):
    with pytest.raises(ApiException) as exc:
        client.CoreV1Api(api_client).list_namespaced_config_map("default", _continue="!!!")
    assert exc.value.status == 400


def test_an_expired_continue_token_is_410(server):
    import base64

    token = base64.urlsafe_b64encode(b'{"rv":99999,"start":"default/a"}').decode()
    resp = server.handle("GET", "/api/v1/namespaces/default/configmaps", [("continue", token)], {}, None)
    assert resp.status == 410
    assert json.loads(resp.body)["reason"] == "Expired"


def test_cluster_scoped_list(api_client):
    names = [n.metadata.name for n in client.CoreV1Api(api_client).list_namespace().items]
    assert names == ["default", "kube-node-lease", "kube-public", "kube-system"]


def test_cached_encoding_matches_plain_json(server):
    from kamera_cli.apiserver.server.encoding import ListBody, encode

    for name in ("a", "b"):
        server.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
                       "data": {"k": name}})
    resp = server.handle("GET", "/api/v1/namespaces/default/configmaps", [], {}, None)
    body = server.journal[-1].response
    assert isinstance(body, ListBody) and resp.body == encode(dict(body))
    one = server.handle("GET", "/api/v1/namespaces/default/configmaps/a", [], {}, None)
    assert one.body == encode(server.journal[-1].response)
    empty = ListBody(kind="ConfigMapList", apiVersion="v1", metadata={}, items=[])
    assert json.loads(empty.encode()) == {"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {}, "items": []}
