"""dryRun=All validates and answers but persists nothing; any other value is 400."""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from kamera_cli.model.objects import KindRef


def test_dry_run_create_persists_nothing(api_client, server):
    rv = server.snapshot.resource_version
    out = client.CoreV1Api(api_client).create_namespaced_config_map(
        "default", {"metadata": {"name": "a"}, "data": {"x": "1"}}, dry_run="All")
    assert out.data == {"x": "1"} and out.metadata.uid
    assert server.snapshot.resource_version == rv
    assert server.snapshot.objects_of(KindRef("", "v1", "ConfigMap")) == []


def test_dry_run_still_validates(api_client):
    with pytest.raises(ApiException) as exc:
        client.CoreV1Api(api_client).create_namespaced_config_map("default", {"metadata": {"name": "Bad_Name"}},
                                                                  dry_run="All")
    assert exc.value.status == 422


def test_dry_run_update_and_delete_persist_nothing(api_client, server):
    core = client.CoreV1Api(api_client)
    core.create_namespaced_config_map("default", {"metadata": {"name": "a"}, "data": {"x": "1"}})
    rv = server.snapshot.resource_version
    out = core.replace_namespaced_config_map("a", "default", {"metadata": {"name": "a"}, "data": {"x": "2"}},
                                             dry_run="All")
    assert out.data == {"x": "2"}
    core.delete_namespaced_config_map("a", "default", dry_run="All")
    assert server.snapshot.resource_version == rv
    assert core.read_namespaced_config_map("a", "default").data == {"x": "1"}


def test_other_dry_run_values_are_400(server):
    resp = server.handle("POST", "/api/v1/namespaces/default/configmaps", [("dryRun", "Some")], {},
                         b'{"metadata":{"name":"a"}}')
    assert resp.status == 400


def test_dry_run_requests_are_marked_in_the_journal(server):
    server.handle("POST", "/api/v1/namespaces/default/configmaps", [("dryRun", "All")], {},
                  b'{"metadata":{"name":"a"}}')
    assert server.journal[-1].dry_run and server.journal[-1].status == 201 and server.journal[-1].after is None
