"""Containment for the other clients: kr8s and lightkube (httpx), pykube-ng (requests).

As in ``test_containment.py``, a real TCP listener on 127.0.0.1 stands for "the cluster in the
user's kubeconfig": ``KUBECONFIG``, ``KUBERNETES_SERVICE_HOST``/``PORT``, a service-account folder
and explicit URLs all name it.  Each client then does everything its users do to find a cluster,
sync and async; the proof is zero connections and zero bytes at the listener while the simulated
API server answered.  A control test per client shows the same configuration does reach the
listener without containment, so each check can fail.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kamera_cli.apiserver.transports.containment import Containment, NetworkBlocked
from tests.apiserver.conftest import make_server
from tests.apiserver.test_containment import Listener, cluster_env, kubeconfig, listener

__all__ = ["Listener", "cluster_env", "kubeconfig", "listener"]


def _needs(module: str, extra: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(importlib.util.find_spec(module) is None,
                              reason=f"{module} is not installed (pip install 'kamera-cli[{extra}]')")


@pytest.fixture
def service_account(tmp_path: Path) -> Path:
    """A pod's service-account folder (token, namespace, CA), for the in-cluster loaders."""
    folder = tmp_path / "serviceaccount"
    folder.mkdir()
    (folder / "token").write_text("in-cluster-token")
    (folder / "namespace").write_text("default")
    (folder / "ca.crt").write_text("")
    return folder


@pytest.fixture
def server() -> Iterator[Any]:
    yield make_server()


def _assert_contained(listener: Listener, server: Any) -> None:
    assert (listener.connections, listener.bytes) == (0, 0)
    assert any(a.resource is not None and a.resource.kind == "Namespace" for a in server.journal)


# --------------------------------------------------------------------------------------------------
# kr8s


@_needs("kr8s", "kr8s")
def test_kr8s_sync_and_async_land_on_the_simulation(cluster_env: Path, listener: Listener,
                                                    service_account: Path, server: Any) -> None:
    import kr8s
    import kr8s.asyncio

    url = f"http://127.0.0.1:{listener.port}"
    with Containment(server):
        apis = [kr8s.api(), kr8s.api(url=url), kr8s.api(kubeconfig=str(cluster_env)),
                kr8s.api(kubeconfig=False, serviceaccount=str(service_account))]
        seen = [[ns.name for ns in api.get("namespaces")] for api in apis]

        async def asynchronously() -> list[str]:
            api = await kr8s.asyncio.api(url=url)
            return [ns.name async for ns in api.get("namespaces")]

        seen.append(asyncio.run(asynchronously()))
    assert all("default" in names for names in seen), seen
    _assert_contained(listener, server)


@_needs("kr8s", "kr8s")
def test_kr8s_control_without_containment_the_listener_is_reached(listener: Listener) -> None:
    import kr8s.asyncio

    async def connect() -> None:
        await kr8s.asyncio.api(url=f"http://127.0.0.1:{listener.port}", kubeconfig=False)

    with pytest.raises(Exception):  # noqa: B017 - the listener hangs up; any client error will do
        asyncio.run(connect())
    assert listener.connections >= 1 and listener.bytes > 0


@_needs("kr8s", "kr8s")
def test_a_crash_inside_a_kr8s_sync_call_reaches_the_caller_and_kr8s_keeps_working(server: Any) -> None:
    from kr8s.objects import ConfigMap

    class Crash(BaseException):
        pass

    def crash(access: Any) -> None:
        raise Crash("injected")

    with Containment(server):
        server.before_write = crash
        with pytest.raises(Crash):
            ConfigMap({"metadata": {"name": "a", "namespace": "default"}}).create()
        server.before_write = None
        ConfigMap({"metadata": {"name": "b", "namespace": "default"}}).create()
        assert [cm.name for cm in ConfigMap.list(namespace="default")] == ["b"]


# --------------------------------------------------------------------------------------------------
# lightkube


@_needs("lightkube", "lightkube")
def test_lightkube_sync_and_async_land_on_the_simulation(cluster_env: Path, listener: Listener,
                                                         service_account: Path, server: Any) -> None:
    from lightkube import AsyncClient, Client, KubeConfig
    from lightkube.resources.core_v1 import Namespace

    url = f"http://127.0.0.1:{listener.port}"
    with Containment(server):
        clients = [Client(), Client(config=KubeConfig.from_env()), Client(config=KubeConfig.from_file(cluster_env)),
                   Client(config=KubeConfig.from_server(url)),
                   Client(config=KubeConfig.from_service_account(service_account))]
        seen = [[ns.metadata.name for ns in c.list(Namespace)] for c in clients]

        async def asynchronously() -> list[str]:
            client = AsyncClient(config=KubeConfig.from_server(url))
            try:
                return [ns.metadata.name async for ns in client.list(Namespace)]
            finally:
                await client.close()

        seen.append(asyncio.run(asynchronously()))
    assert all("default" in names for names in seen), seen
    _assert_contained(listener, server)


@_needs("lightkube", "lightkube")
def test_lightkube_control_without_containment_the_listener_is_reached(listener: Listener) -> None:
    from lightkube import Client, KubeConfig
    from lightkube.config.models import Cluster, User
    from lightkube.resources.core_v1 import Namespace

    config = KubeConfig.from_one(cluster=Cluster(server=f"http://127.0.0.1:{listener.port}"), user=User(token="t"))
    client = Client(config=config, timeout=2)
    with pytest.raises(Exception):  # noqa: B017
        list(client.list(Namespace))
    assert listener.connections >= 1 and listener.bytes > 0


# --------------------------------------------------------------------------------------------------
# pykube-ng


@_needs("pykube", "pykube")
def test_pykube_lands_on_the_simulation(cluster_env: Path, listener: Listener, service_account: Path,
                                        server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import pykube

    monkeypatch.setenv("PYKUBE_KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("PYKUBE_KUBERNETES_SERVICE_PORT", str(listener.port))
    with Containment(server):
        configs = [pykube.KubeConfig.from_env(), pykube.KubeConfig.from_file(str(cluster_env)),
                   pykube.KubeConfig.from_file(), pykube.KubeConfig.from_service_account(str(service_account)),
                   pykube.KubeConfig.from_url(f"http://127.0.0.1:{listener.port}")]
        seen = [pykube.Namespace.objects(pykube.HTTPClient(c)).get(name="default").name for c in configs]
    assert seen == ["default"] * len(configs)
    _assert_contained(listener, server)


@_needs("pykube", "pykube")
def test_pykube_control_without_containment_the_listener_is_reached(listener: Listener) -> None:
    import pykube

    api = pykube.HTTPClient(pykube.KubeConfig.from_url(f"http://127.0.0.1:{listener.port}"), timeout=2)
    with pytest.raises(Exception):  # noqa: B017
        pykube.Namespace.objects(api).get(name="default")
    assert listener.connections >= 1 and listener.bytes > 0


@_needs("pykube", "pykube")
def test_a_pykube_watch_hands_out_one_event_per_read(server: Any) -> None:
    import pykube

    for name in ("a", "b"):
        server.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}})
    with Containment(server):
        api = pykube.HTTPClient(pykube.KubeConfig.from_env())
        stream = iter(pykube.ConfigMap.objects(api, namespace="default").watch().object_stream())
        first = next(stream)
        assert (first.type, first.object.name) == ("ADDED", "a")
        assert [(e.type, e.object.name) for e in stream] == [("ADDED", "b")]


# --------------------------------------------------------------------------------------------------
# httpx itself


@pytest.mark.parametrize("module", ["httpx", "httpx2"])
def test_httpx_reaches_only_the_simulation(module: str, listener: Listener, server: Any) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (it comes with kr8s / lightkube)")
    httpx: Any = importlib.import_module(module)
    with Containment(server) as containment:
        with httpx.Client() as client:
            assert client.get(f"{containment.host}/api/v1/namespaces/default").json()["metadata"]["name"] == "default"
            with pytest.raises(httpx.ConnectError) as blocked:  # as httpx raises a refused connect
                client.get(f"http://127.0.0.1:{listener.port}/")
        refusal: Any = blocked.value
        while refusal is not None and not isinstance(refusal, NetworkBlocked):  # httpx's, httpcore's, the refusal
            refusal = refusal.__cause__ or refusal.__context__
        assert isinstance(refusal, NetworkBlocked) and refusal.blocked_address == f"127.0.0.1:{listener.port}"

        async def asynchronously() -> int:
            async with httpx.AsyncClient(base_url=containment.host) as client:
                answer = await client.get("/api/v1/namespaces/missing")
                with pytest.raises(httpx.ConnectError):
                    await client.get(f"http://127.0.0.1:{listener.port}/")
                return int(answer.status_code)

        assert asyncio.run(asynchronously()) == 404
    assert (listener.connections, listener.bytes) == (0, 0)
    # outside any containment httpx is httpx again
    assert httpx.Client._transport_for_url.__module__.startswith(module)
