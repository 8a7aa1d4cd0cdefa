"""Watch: synthetic ADDED from RV 0, logged events after a given RV, 410 as an ERROR event, bookmarks."""

from __future__ import annotations

import json

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from kamera_cli.apiserver.storage import snapshot as snapshot_module
from kamera_cli.model.objects import ObjectRef


def _events(server, **query):
    q = [("watch", "true"), *((k, str(v)) for k, v in query.items())]
    resp = server.handle("GET", "/api/v1/namespaces/default/configmaps", q, {}, None)
    assert resp.status == 200 and resp.stream is not None
    return [json.loads(line) for line in resp.stream]


def test_watch_from_nothing_lists_current_objects_as_added_through_the_client(api_client):
    core = client.CoreV1Api(api_client)
    core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    core.create_namespaced_config_map("default", {"metadata": {"name": "b"}})
    seen = [(e["type"], e["object"].metadata.name)
            for e in watch.Watch().stream(core.list_namespaced_config_map, "default", timeout_seconds=5)]
    assert seen == [("ADDED", "a"), ("ADDED", "b")]


def test_watch_from_a_resource_version_replays_later_writes(server):
    a = server.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default"}})
    rv = a["metadata"]["resourceVersion"]
    a["data"] = {"x": "1"}
    server.update(a)
    server.delete(ObjectRef.of(a))
    server.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "default"}})
    events = _events(server, resourceVersion=rv)
    assert [e["type"] for e in events] == ["MODIFIED", "DELETED"]
    deleted = events[1]["object"]
    assert deleted["data"] == {"x": "1"}  # the final state
    assert int(deleted["metadata"]["resourceVersion"]) > int(events[0]["object"]["metadata"]["resourceVersion"])


def test_selector_transitions_become_added_and_deleted(server):
    a = server.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default"}})
    rv = a["metadata"]["resourceVersion"]
    a["metadata"]["labels"] = {"app": "x"}
    a = server.update(a)
    a["metadata"]["labels"] = {}
    server.update(a)
    assert [e["type"] for e in _events(server, resourceVersion=rv, labelSelector="app=x")] == ["ADDED", "DELETED"]


def test_too_old_resource_version_is_an_error_event_410(server, monkeypatch):
    for i in range(snapshot_module.LOG_SIZE + 5):
        server.create({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": f"c{i}", "namespace": "default"}})
    events = _events(server, resourceVersion="1")
    assert len(events) == 1 and events[0]["type"] == "ERROR"
    status = events[0]["object"]
    assert status["code"] == 410 and status["reason"] == "Expired"
    assert status["message"].startswith("too old resource version: 1 (")


def test_watch_410_through_the_client_raises_after_its_retry(api_client, server):
    for i in range(snapshot_module.LOG_SIZE + 5):
        server.create({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": f"c{i}", "namespace": "default"}})
    core = client.CoreV1Api(api_client)
    with pytest.raises(ApiException) as exc:
        list(watch.Watch().stream(core.list_namespaced_config_map, "default", resource_version="1",
                                  timeout_seconds=5))
    assert exc.value.status == 410


def test_bookmark_only_when_allowed_and_carries_only_the_rv(server):
    server.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default"}})
    assert [e["type"] for e in _events(server)] == ["ADDED"]
    events = _events(server, allowWatchBookmarks="true")
    assert events[-1] == {"type": "BOOKMARK", "object": {
        "kind": "ConfigMap", "apiVersion": "v1",
        "metadata": {"resourceVersion": str(server.snapshot.resource_version)}}}


def test_legacy_capitalised_boolean_is_accepted(server):
    resp = server.handle("GET", "/api/v1/namespaces/default/configmaps", [("watch", "True")], {}, None)
    assert resp.stream is not None


def test_send_initial_events_ends_the_initial_list_with_an_annotated_bookmark(server):
    server.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default"}})
    events = _events(server, sendInitialEvents="true", resourceVersionMatch="NotOlderThan",
                     allowWatchBookmarks="true")
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
    assert events[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    resp = server.handle("GET", "/api/v1/namespaces/default/configmaps",
                         [("watch", "true"), ("sendInitialEvents", "true")], {}, None)
    assert resp.status == 422
