"""The transport with the real kubernetes client (any of 33.x-37.x) against a fake server."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from transport_fakes import FakeServer

from kamera_cli.apiserver.transports.containment import Containment, WatchBlocked

kubernetes = pytest.importorskip("kubernetes")
from kubernetes import client, watch  # noqa: E402
from kubernetes.client.rest import ApiException  # noqa: E402

NS = "default"


def _cm(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": NS, "labels": labels or {}}, "data": {"k": "v"}}


def _deployment(name: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NS},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
    }


@pytest.fixture
def server() -> FakeServer:
    return FakeServer()


@pytest.fixture
def contained(server: FakeServer) -> Iterator[Containment]:
    with Containment(server) as c:
        yield c


def test_typed_crud_round_trip(contained: Containment, server: FakeServer) -> None:
    core = client.CoreV1Api()
    created = core.create_namespaced_config_map(NS, _cm("a", {"app": "x"}))
    assert created.metadata.name == "a"
    assert created.metadata.resource_version == "101"
    got = core.read_namespaced_config_map("a", NS)
    assert got.data == {"k": "v"}
    core.create_namespaced_config_map(NS, _cm("b"))
    listed = core.list_namespaced_config_map(NS, label_selector="app=x")
    assert [i.metadata.name for i in listed.items] == ["a"]
    # The query reached the server however the client version encodes it (URL or ``fields``).
    assert ("labelSelector", "app=x") in server.seen[-1].query
    got.data = {"k": "w"}
    replaced = core.replace_namespaced_config_map("a", NS, got)
    assert replaced.data == {"k": "w"}
    patched = core.patch_namespaced_config_map("a", NS, {"data": {"z": "1"}})
    assert patched.data == {"k": "w", "z": "1"}
    assert server.seen[-1].headers["Content-Type"] == "application/strategic-merge-patch+json"
    core.patch_namespaced_config_map("a", NS, [{"op": "add", "path": "/data/y", "value": "2"}])
    assert server.seen[-1].headers["Content-Type"] == "application/json-patch+json"
    deleted = core.delete_namespaced_config_map("a", NS)
    # v37 returns the answer as a dict for per-object deletes; legacy deserializes it into V1Status.
    if isinstance(deleted, dict):
        assert deleted["metadata"]["name"] == "a"
    else:
        assert type(deleted).__name__ == "V1Status"
    with pytest.raises(ApiException) as err:
        core.read_namespaced_config_map("a", NS)
    assert err.value.status == 404
    assert "not found" in str(err.value.body)


def test_errors_map_to_api_exceptions_with_status(contained: Containment) -> None:
    core = client.CoreV1Api()
    core.create_namespaced_config_map(NS, _cm("a"))
    with pytest.raises(ApiException) as dup:
        core.create_namespaced_config_map(NS, _cm("a"))
    assert dup.value.status == 409
    stale = core.read_namespaced_config_map("a", NS)
    core.patch_namespaced_config_map("a", NS, {"data": {"x": "1"}})
    with pytest.raises(ApiException) as conflict:
        core.replace_namespaced_config_map("a", NS, stale)
    assert conflict.value.status == 409
    assert "the object has been modified" in str(conflict.value.body)


def test_apps_batch_and_custom_objects(contained: Containment, server: FakeServer) -> None:
    apps = client.AppsV1Api()
    dep = apps.create_namespaced_deployment(NS, _deployment("web"))
    assert dep.spec.selector.match_labels == {"app": "web"}
    apps.patch_namespaced_deployment("web", NS, {"spec": {"replicas": 3}})
    assert apps.read_namespaced_deployment("web", NS).spec.replicas == 3
    batch = client.BatchV1Api()
    assert batch.list_namespaced_job(NS).items == []
    custom = client.CustomObjectsApi()
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1}}
    made = custom.create_namespaced_custom_object("example.com", "v1", NS, "widgets", widget)
    assert made["metadata"]["resourceVersion"]
    custom.patch_namespaced_custom_object("example.com", "v1", NS, "widgets", "w", {"spec": {"size": 2}})
    assert server.seen[-1].headers["Content-Type"] == "application/merge-patch+json"
    got = custom.get_namespaced_custom_object("example.com", "v1", NS, "widgets", "w")
    assert got["spec"] == {"size": 2}
    listed = custom.list_namespaced_custom_object("example.com", "v1", NS, "widgets")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["w"]


def test_post_body_and_headers_reach_the_server(contained: Containment, server: FakeServer) -> None:
    client.CoreV1Api().create_namespaced_config_map(NS, _cm("a"))
    seen = server.seen[-1]
    assert seen.method == "POST"
    assert seen.path == "/api/v1/namespaces/default/configmaps"
    assert seen.body["metadata"]["name"] == "a"
    # v37 sends no Content-Type on POST/PUT, legacy sends application/json: both pass through untouched.
    assert seen.headers.get("Content-Type") in (None, "application/json")
    assert seen.headers["User-Agent"].startswith("OpenAPI-Generator/")


def test_preload_content_false_returns_the_raw_response(contained: Containment) -> None:
    core = client.CoreV1Api()
    core.create_namespaced_config_map(NS, _cm("a"))
    resp = core.read_namespaced_config_map("a", NS, _preload_content=False)
    assert resp.status == 200
    import json

    assert json.loads(resp.data)["metadata"]["name"] == "a"
    with pytest.raises(ApiException) as err:
        core.read_namespaced_config_map("missing", NS, _preload_content=False)
    assert err.value.status == 404


def test_watch_with_timeout_delivers_events_one_at_a_time(contained: Containment, server: FakeServer) -> None:
    core = client.CoreV1Api()
    for name in ("a", "b", "c"):
        core.create_namespaced_config_map(NS, _cm(name))
    w = watch.Watch()
    reads_before = len(server.seen)
    events = []
    for event in w.stream(core.list_namespaced_config_map, NS, timeout_seconds=5):
        events.append((event["type"], event["object"].metadata.name))
    assert events == [("ADDED", "a"), ("ADDED", "b"), ("ADDED", "c")]
    assert len(server.seen) == reads_before + 1  # timeout_seconds: no reconnect
    assert ("watch", "true") in server.seen[-1].query  # legacy's ``True`` is normalised


def test_watch_from_resource_version_and_stop(contained: Containment) -> None:
    core = client.CoreV1Api()
    first = core.create_namespaced_config_map(NS, _cm("a"))
    core.create_namespaced_config_map(NS, _cm("b"))
    core.delete_namespaced_config_map("a", NS)
    w = watch.Watch()
    seen = []
    for event in w.stream(core.list_namespaced_config_map, NS, resource_version=first.metadata.resource_version,
                          timeout_seconds=1):
        seen.append((event["type"], event["raw_object"]["metadata"]["name"]))
        if len(seen) == 1:
            w.stop()
    assert seen == [("ADDED", "b")]


def test_watch_without_timeout_blocks_after_an_empty_reconnect(contained: Containment, server: FakeServer) -> None:
    core = client.CoreV1Api()
    core.create_namespaced_config_map(NS, _cm("a"))
    w = watch.Watch()
    names = []
    with pytest.raises(WatchBlocked) as blocked:
        for event in w.stream(core.list_namespaced_config_map, NS):
            names.append(event["object"].metadata.name)
    assert names == ["a"]
    assert blocked.value.empty_streams == 1
    watches = [s for s in server.seen if ("watch", "true") in s.query]
    # first watch (delivers "a"), one empty reconnect from the last RV, then the transport refuses.
    assert len(watches) == 2
    assert ("resourceVersion", "101") in watches[1].query


def test_idle_watch_resets_when_the_state_changes(contained: Containment, server: FakeServer) -> None:
    core = client.CoreV1Api()
    core.create_namespaced_config_map(NS, _cm("a"))
    with pytest.raises(WatchBlocked):
        for _ in watch.Watch().stream(core.list_namespaced_config_map, NS):
            pass
    # A write (by anyone, e.g. another actor) means a new watch may have something to deliver.
    server.seed("v1", "configmaps", NS, _cm("b"))
    names = []
    with pytest.raises(WatchBlocked):
        for event in watch.Watch().stream(core.list_namespaced_config_map, NS, resource_version="101"):
            names.append(event["object"].metadata.name)
    assert names == ["b"]


def test_watch_body_read_whole_without_streaming(contained: Containment) -> None:
    core = client.CoreV1Api()
    core.create_namespaced_config_map(NS, _cm("a"))
    core.create_namespaced_config_map(NS, _cm("b"))
    resp = core.list_namespaced_config_map(NS, watch=True, timeout_seconds=1, _preload_content=False)
    lines = [line for line in resp.data.split(b"\n") if line]
    assert len(lines) == 2


def test_unbound_containment_answers_503(server: FakeServer) -> None:
    with Containment() as c:
        core = client.CoreV1Api()
        with pytest.raises(ApiException) as err:
            core.read_namespaced_config_map("a", NS)
        assert err.value.status == 503
        assert "no kamera simulation is bound" in str(err.value.body)
        c.bind(server)
        core.create_namespaced_config_map(NS, _cm("a"))
        assert core.read_namespaced_config_map("a", NS).metadata.name == "a"
        c.server = None
        with pytest.raises(ApiException):
            core.read_namespaced_config_map("a", NS)


def test_server_bug_becomes_500_and_is_recorded() -> None:
    class Broken:
        registry = None

        def handle(self, *args: Any) -> Any:
            raise RuntimeError("boom")

    with Containment(Broken()) as c:
        with pytest.raises(ApiException) as err:
            client.CoreV1Api().read_namespaced_config_map("a", NS)
        assert err.value.status == 500
        assert [type(e) for e in c.server_errors] == [RuntimeError]


def test_crash_signals_from_the_server_reach_the_caller() -> None:
    class Crash(BaseException):
        pass

    class Crashing:
        registry = None

        def handle(self, *args: Any) -> Any:
            raise Crash()

    with Containment(Crashing()), pytest.raises(Crash):
        client.CoreV1Api().create_namespaced_config_map(NS, _cm("a"))


def test_api_client_is_bound_to_its_containment(server: FakeServer) -> None:
    other = FakeServer()
    outer = Containment(server)
    with outer, Containment(other):
        client.CoreV1Api(outer.api_client()).create_namespaced_config_map(NS, _cm("mine"))
        client.CoreV1Api().create_namespaced_config_map(NS, _cm("theirs"))
    assert [k[3] for k in server.objects] == ["mine"]
    assert [k[3] for k in other.objects] == ["theirs"]


def test_idle_watch_limit_allows_more_empty_streams(server: FakeServer) -> None:
    with Containment(server, idle_watch_limit=3):
        core = client.CoreV1Api()
        core.create_namespaced_config_map(NS, _cm("a"))
        with pytest.raises(WatchBlocked) as blocked:
            for _ in watch.Watch().stream(core.list_namespaced_config_map, NS):
                pass
    assert blocked.value.empty_streams == 3
    assert len([s for s in server.seen if ("watch", "true") in s.query]) == 4
    with pytest.raises(ValueError):
        Containment(server, idle_watch_limit=0)
