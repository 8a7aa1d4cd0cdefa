"""kubernetes.dynamic.DynamicClient through the transport: discovery, CRUD, patch and server-side apply."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from transport_fakes import WIDGET, FakeRegistry, FakeServer

from kamera_cli.apiserver.transports.containment import Containment

pytest.importorskip("kubernetes")
from kubernetes import client
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import NotFoundError, ResourceNotFoundError


@pytest.fixture
def server() -> FakeServer:
    return FakeServer()


@pytest.fixture
def contained(server: FakeServer) -> Iterator[Containment]:
    with Containment(server) as c:
        yield c


def test_discovery_finds_builtin_and_custom_resources(contained: Containment) -> None:
    dyn = DynamicClient(client.ApiClient())
    deployments = dyn.resources.get(api_version="apps/v1", kind="Deployment")
    assert deployments.namespaced
    assert deployments.name == "deployments"
    # preferred version: autoscaling has v1 and v2; v2 is preferred, as on a real cluster.
    hpa = dyn.resources.get(group="autoscaling", kind="HorizontalPodAutoscaler", preferred=True)
    assert hpa.api_version == "v2"
    widgets = dyn.resources.get(api_version="example.com/v1", kind="Widget")
    assert widgets.name == "widgets"
    assert sorted(deployments.subresources) == ["scale", "status"]
    assert deployments.short_names == ["deploy"]
    # A status update through the subresource goes to .../deployments/{name}/status.
    assert deployments.status.path(name="web", namespace="ns") == "/apis/apps/v1/namespaces/ns/deployments/web/status"
    with pytest.raises(ResourceNotFoundError):
        dyn.resources.get(api_version="example.com/v1", kind="Gadget")
    assert dyn.version["kubernetes"]["gitVersion"].startswith("v1.")


def test_crud_patch_and_server_side_apply(contained: Containment, server: FakeServer) -> None:
    dyn = DynamicClient(client.ApiClient())
    cms = dyn.resources.get(api_version="v1", kind="ConfigMap")
    cms.create(body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}},
               namespace="default")
    got = cms.get(name="a", namespace="default")
    assert got.data.k == "v"
    listed = cms.get(namespace="default")
    assert [i.metadata.name for i in listed.items] == ["a"]
    cms.patch(name="a", namespace="default", body={"data": {"x": "1"}},
              content_type="application/merge-patch+json")
    assert server.seen[-1].headers["Content-Type"] == "application/merge-patch+json"
    applied = cms.server_side_apply(
        body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": "default"},
              "data": {"y": "2"}},
        name="b", namespace="default", field_manager="kamera-test",
    )
    assert applied.metadata.name == "b"
    seen = server.seen[-1]
    assert seen.method == "PATCH"
    assert seen.headers["Content-Type"] == "application/apply-patch+yaml"
    assert ("fieldManager", "kamera-test") in seen.query
    cms.delete(name="a", namespace="default")
    with pytest.raises(NotFoundError):
        cms.get(name="a", namespace="default")


def test_discovery_cache_stays_inside_the_containment(server: FakeServer) -> None:
    before = set(os.listdir(tempfile.gettempdir()))
    with Containment(server) as c:
        DynamicClient(client.ApiClient()).resources.get(api_version="v1", kind="ConfigMap")
        assert c._cache_dir is not None
        assert any(n.startswith("osrcp-") for n in os.listdir(c._cache_dir))
        cache_dir = c._cache_dir
    assert not os.path.exists(cache_dir)
    assert not {n for n in set(os.listdir(tempfile.gettempdir())) - before if n.startswith("osrcp-")}


def test_rebinding_a_server_with_other_resources_drops_the_discovery_cache() -> None:
    plain = FakeServer(FakeRegistry())
    with Containment(plain) as c:
        dyn = DynamicClient(client.ApiClient())
        with pytest.raises(ResourceNotFoundError):
            dyn.resources.get(api_version="example.com/v1", kind="Widget")
        c.bind(FakeServer(FakeRegistry((WIDGET,))))
        assert DynamicClient(client.ApiClient()).resources.get(api_version="example.com/v1", kind="Widget")


def test_rebinding_a_server_with_the_same_registry_keeps_the_discovery_cache() -> None:
    registry = FakeRegistry((WIDGET,))
    first, second = FakeServer(registry), FakeServer(registry)
    with Containment(first) as c:
        DynamicClient(client.ApiClient()).resources.get(api_version="v1", kind="ConfigMap")
        assert "/apis" in [s.path for s in first.seen]
        c.bind(None)  # between two reconcile steps
        c.bind(second)
        DynamicClient(client.ApiClient()).resources.get(api_version="v1", kind="ConfigMap")
    assert "/apis" not in [s.path for s in second.seen]
