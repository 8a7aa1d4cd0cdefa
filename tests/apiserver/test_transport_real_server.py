"""The transport end to end with the real ApiServer: typed APIs, watch, DynamicClient, containment."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("kubernetes")
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException
from kubernetes.dynamic import DynamicClient

from kamera_cli.apiserver import ApiServer, Registry, Snapshot
from kamera_cli.apiserver.transports.containment import Containment, WatchBlocked

sys.path.insert(0, str(Path(__file__).resolve().parent))
from transport_fakes import WIDGET_CRD

NS = "default"


def _server(registry: Registry | None = None) -> ApiServer:
    server = ApiServer(registry or Registry.builtin(), Snapshot.empty(), now=lambda: 0)
    server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    return server


@pytest.fixture
def server() -> ApiServer:
    return _server()


@pytest.fixture
def contained(server: ApiServer) -> Iterator[Containment]:
    with Containment(server) as c:
        yield c


def _cm(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NS, "labels": labels},
            "data": {"k": "v"}}


def test_controller_style_round_trip(contained: Containment, server: ApiServer) -> None:
    config.load_kube_config()
    core = client.CoreV1Api()
    core.create_namespaced_config_map(NS, _cm("a", app="x"))
    core.create_namespaced_config_map(NS, _cm("b"))
    assert [i.metadata.name for i in core.list_namespaced_config_map(NS, label_selector="app=x").items] == ["a"]
    got = core.read_namespaced_config_map("a", NS)
    core.patch_namespaced_config_map("a", NS, {"data": {"z": "1"}})
    with pytest.raises(ApiException) as conflict:
        core.replace_namespaced_config_map("a", NS, got)
    assert conflict.value.status == 409
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_config_map("nope", NS)
    assert missing.value.status == 404
    verbs = [(a.method, a.verb) for a in server.journal[-5:]]
    assert verbs[0] == ("GET", "list")
    assert ("PATCH", "patch") in verbs


def test_deployment_through_apps_api(contained: Containment) -> None:
    apps = client.AppsV1Api()
    labels = {"app": "web"}
    apps.create_namespaced_deployment(NS, {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
    patched = apps.patch_namespaced_deployment("web", NS, {"spec": {"replicas": 3}})
    assert patched.spec.replicas == 3
    assert patched.metadata.generation == 2


def test_watch_with_timeout_and_without(contained: Containment, server: ApiServer) -> None:
    core = client.CoreV1Api()
    core.create_namespaced_config_map(NS, _cm("a"))
    core.create_namespaced_config_map(NS, _cm("b"))
    events = [(e["type"], e["object"].metadata.name)
              for e in watch.Watch().stream(core.list_namespaced_config_map, NS, timeout_seconds=5)]
    assert events == [("ADDED", "a"), ("ADDED", "b")]
    names = []
    with pytest.raises(WatchBlocked):
        for e in watch.Watch().stream(core.list_namespaced_config_map, NS):
            names.append(e["object"].metadata.name)
    assert names == ["a", "b"]


def test_watch_resumes_from_a_resource_version(contained: Containment) -> None:
    core = client.CoreV1Api()
    first = core.create_namespaced_config_map(NS, _cm("a"))
    core.create_namespaced_config_map(NS, _cm("b"))
    core.delete_namespaced_config_map("a", NS)
    events = [(e["type"], e["raw_object"]["metadata"]["name"])
              for e in watch.Watch().stream(core.list_namespaced_config_map, NS,
                                            resource_version=first.metadata.resource_version, timeout_seconds=1)]
    assert events == [("ADDED", "b"), ("DELETED", "a")]


def test_dynamic_client_with_a_crd() -> None:
    registry = Registry.builtin().with_crds([WIDGET_CRD])
    server = _server(registry)
    with Containment(server):
        dyn = DynamicClient(client.ApiClient())
        widgets = dyn.resources.get(api_version="example.com/v1", kind="Widget")
        assert widgets.short_names == ["wd"]
        widgets.create(body={"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
                             "spec": {"size": 1}}, namespace=NS)
        widgets.patch(name="w", namespace=NS, body={"spec": {"size": 2}},
                      content_type="application/merge-patch+json")
        applied = widgets.server_side_apply(
            body={"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": NS},
                  "spec": {"color": "red"}},
            name="w", namespace=NS, field_manager="ctrl")
        assert applied.spec.color == "red"
        listed = widgets.get(namespace=NS)
        assert [i.metadata.name for i in listed.items] == ["w"]
        cms = dyn.resources.get(api_version="v1", kind="ConfigMap")
        cms.create(body=_cm("c"), namespace=NS)
        assert cms.get(name="c", namespace=NS).data.k == "v"


def test_preload_content_false_with_the_real_server(contained: Containment) -> None:
    core = client.CoreV1Api()
    core.create_namespaced_config_map(NS, _cm("a"))
    resp = core.list_namespaced_config_map(NS, _preload_content=False)
    import json

    doc = json.loads(resp.data)
    assert doc["kind"] == "ConfigMapList"
    assert [i["metadata"]["name"] for i in doc["items"]] == ["a"]
