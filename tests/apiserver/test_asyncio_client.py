"""The simulated API server under kubernetes_asyncio: the smoke set of the fidelity suite.

kubernetes_asyncio talks aiohttp, which kamera routes in-process like kopf's client; these cases
check that the typed APIs, errors, patch content types, the status subresource, ``Watch`` and the
``DynamicClient`` behave through that route as they do through the official client (the rest of the
fidelity suite). Skipped when kubernetes_asyncio is not installed.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from kamera_cli.apiserver import ApiServer, Registry
from kamera_cli.apiserver.transports.containment import Containment
from tests.apiserver.conftest import make_server
from tests.apiserver.crds import WIDGET  # a namespaced CRD with a status subresource

pytestmark = pytest.mark.skipif(importlib.util.find_spec("kubernetes_asyncio") is None,
                                reason="kubernetes_asyncio is not installed (pip install 'kamera-cli[asyncio]')")


def through(server: ApiServer, body: Callable[[Any], Awaitable[Any]]) -> Any:
    """Run ``body(api_client)`` with kubernetes_asyncio configured the way a controller would do it."""
    from kubernetes_asyncio import client, config

    async def main() -> Any:
        await config.load_kube_config()  # lands on the simulation whatever the environment says
        async with client.ApiClient() as api:
            return await body(api)

    with Containment(server):
        return asyncio.run(main())


def test_crud_and_list_with_a_label_selector() -> None:
    from kubernetes_asyncio import client

    async def body(api: Any) -> Any:
        core = client.CoreV1Api(api)
        for name, team in (("a", "x"), ("b", "y")):
            await core.create_namespaced_config_map("default", client.V1ConfigMap(
                metadata=client.V1ObjectMeta(name=name, labels={"team": team}), data={"k": name}))
        got = await core.read_namespaced_config_map("a", "default")
        got.data["k"] = "changed"
        replaced = await core.replace_namespaced_config_map("a", "default", got)
        listed = await core.list_namespaced_config_map("default", label_selector="team=x")
        await core.delete_namespaced_config_map("b", "default")
        remaining = await core.list_namespaced_config_map("default")
        return replaced, listed, remaining

    replaced, listed, remaining = through(make_server(), body)
    assert replaced.data == {"k": "changed"}
    assert int(replaced.metadata.resource_version) > 0
    assert [i.metadata.name for i in listed.items] == ["a"]
    assert [i.metadata.name for i in remaining.items] == ["a"]


def test_errors_are_api_exceptions_with_the_server_s_status() -> None:
    from kubernetes_asyncio import client
    from kubernetes_asyncio.client.rest import ApiException

    async def body(api: Any) -> Any:
        core = client.CoreV1Api(api)
        codes = []
        try:
            await core.read_namespaced_config_map("missing", "default")
        except ApiException as exc:
            codes.append((exc.status, exc.reason))
        await core.create_namespaced_config_map("default", {"metadata": {"name": "dup"}})
        try:
            await core.create_namespaced_config_map("default", {"metadata": {"name": "dup"}})
        except ApiException as exc:
            codes.append((exc.status, exc.reason))
        stale = await core.read_namespaced_config_map("dup", "default")
        await core.patch_namespaced_config_map("dup", "default", {"data": {"x": "1"}})
        try:
            await core.replace_namespaced_config_map("dup", "default", stale)  # an old resourceVersion
        except ApiException as exc:
            codes.append((exc.status, exc.reason))
        return codes

    assert through(make_server(), body) == [(404, "Not Found"), (409, "Conflict"), (409, "Conflict")]


def test_a_dict_patch_is_a_json_patch_unless_told_otherwise() -> None:
    """kubernetes_asyncio sends a dict body as application/json-patch+json: the server answers 400."""
    from kubernetes_asyncio import client
    from kubernetes_asyncio.client.rest import ApiException

    async def body(api: Any) -> Any:
        core = client.CoreV1Api(api)
        await core.create_namespaced_config_map("default", {"metadata": {"name": "p"}, "data": {"a": "1"}})
        try:
            await core.patch_namespaced_config_map("p", "default", {"data": {"b": "2"}},
                                                   _content_type="application/json-patch+json")
        except ApiException as exc:
            first = exc.status
        merged = await core.patch_namespaced_config_map("p", "default", {"data": {"b": "2"}},
                                                        _content_type="application/merge-patch+json")
        return first, merged.data

    assert through(make_server(), body) == (400, {"a": "1", "b": "2"})


def test_the_status_subresource_of_a_custom_resource() -> None:
    from kubernetes_asyncio import client

    async def body(api: Any) -> Any:
        custom = client.CustomObjectsApi(api)
        await custom.create_namespaced_custom_object("example.com", "v1", "default", "widgets", {
            "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": "small"},
            "status": {"ready": False}})
        await custom.patch_namespaced_custom_object_status(
            "example.com", "v1", "default", "widgets", "w", {"status": {"ready": True}},
            _content_type="application/merge-patch+json")
        return await custom.get_namespaced_custom_object("example.com", "v1", "default", "widgets", "w")

    server = make_server(Registry.builtin().with_crds([WIDGET]))
    widget = through(server, body)
    assert widget["status"] == {"ready": True}
    assert widget["metadata"]["generation"] == 1  # a status write does not bump the generation


def test_watch_streams_the_events_since_the_list() -> None:
    from kubernetes_asyncio import client, watch

    async def body(api: Any) -> Any:
        core = client.CoreV1Api(api)
        listed = await core.list_namespaced_config_map("default")
        await core.create_namespaced_config_map("default", {"metadata": {"name": "w1"}})
        await core.patch_namespaced_config_map("w1", "default", {"data": {"x": "1"}},
                                               _content_type="application/merge-patch+json")
        seen = []
        async with watch.Watch() as w:
            async for event in w.stream(core.list_namespaced_config_map, "default",
                                        resource_version=listed.metadata.resource_version, timeout_seconds=5):
                seen.append((event["type"], event["object"].metadata.name, event["object"].data))
                if len(seen) == 2:
                    w.stop()
        return seen

    assert through(make_server(), body) == [("ADDED", "w1", None), ("MODIFIED", "w1", {"x": "1"})]


def test_the_dynamic_client_discovers_and_serves_resources() -> None:
    from kubernetes_asyncio.dynamic import DynamicClient

    async def body(api: Any) -> Any:
        dyn = await DynamicClient(api)
        widgets = await dyn.resources.get(api_version="example.com/v1", kind="Widget")
        await dyn.create(widgets, namespace="default", body={
            "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "d"}, "spec": {"size": "large"}})
        got = await dyn.get(widgets, name="d", namespace="default")
        cms = await dyn.resources.get(api_version="v1", kind="ConfigMap")
        return got.spec.size, (await dyn.get(cms, namespace="default")).kind

    server = make_server(Registry.builtin().with_crds([WIDGET]))
    assert through(server, body) == ("large", "ConfigMapList")
