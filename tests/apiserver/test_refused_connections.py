"""A connection kamera refuses surfaces as the client's own error for a refused connect.

The reference is the real thing: each client against a closed port of 127.0.0.1, outside any
containment. Under a containment and a sandbox, the same client against a real listener must raise
the same exceptions (the client's own wrapping, down to the refused connect), reach nothing (zero
connections at the listener), and leave the attempt recorded as the step's network attempt.
"""

from __future__ import annotations

import asyncio
import importlib.util
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kamera_cli.adapters.sandbox.fence import VirtualClock, note_network_attempt, sandboxed
from kamera_cli.apiserver.transports.containment import Containment, NetworkBlocked, observe_refusals
from tests.e2e.test_supervisor import Listener


def _requests(url: str) -> Any:
    import requests

    return requests.post(url, data=b"x", timeout=2)


def _urllib3(url: str) -> Any:
    import urllib3

    return urllib3.request("GET", url, retries=1)


def _httpx(url: str) -> Any:
    import httpx

    return httpx.get(url)


def _httpx_async(url: str) -> Any:
    import httpx

    async def go() -> Any:
        async with httpx.AsyncClient() as client:
            return await client.get(url)

    return asyncio.run(go())


def _aiohttp(url: str) -> Any:
    import aiohttp

    async def go() -> Any:
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            return await response.text()

    return asyncio.run(go())


def _urllib(url: str) -> Any:
    import urllib.request

    with urllib.request.urlopen(url, timeout=2) as response:
        return response.read()


def _kubernetes(url: str) -> Callable[[], Any]:
    """The official client made before the simulation (a real pool manager): its requests take urllib3's
    path (one made during the simulation lands on the simulated API server, whatever its host)."""
    from kubernetes import client

    cfg = client.Configuration(host=url)
    cfg.retries = False
    api = client.CoreV1Api(client.ApiClient(cfg))
    return lambda: api.list_namespace(_request_timeout=2)


def _later(fn: Callable[[str], Any]) -> Callable[[str], Callable[[], Any]]:
    return lambda url: lambda: fn(url)


#: each client: the library it needs, and how to make (before the simulation) a call to a URL
CLIENTS: dict[str, tuple[str, Callable[[str], Callable[[], Any]]]] = {
    "requests": ("requests", _later(_requests)), "urllib3": ("urllib3", _later(_urllib3)),
    "httpx": ("httpx", _later(_httpx)), "httpx_async": ("httpx", _later(_httpx_async)),
    "aiohttp": ("aiohttp", _later(_aiohttp)), "urllib": ("urllib", _later(_urllib)),
    "kubernetes": ("kubernetes", _kubernetes)}


def _chain(exc: BaseException) -> list[str]:
    """The client's exceptions, outermost first, down to (not including) the refused connect or a bare
    OS error (whose wording is the OS's or kamera's)."""
    names: list[str] = []
    current: BaseException | None = exc
    while current is not None and not isinstance(current, ConnectionRefusedError) \
            and type(current).__module__ != "builtins":
        names.append(f"{type(current).__module__}.{type(current).__qualname__}")
        current = current.__cause__ or current.__context__
    return names


def _raised(call: Callable[[], Any]) -> BaseException:
    with pytest.raises(Exception) as caught:  # which one is what the test compares
        call()
    return caught.value


def _closed_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    sock.close()
    return port


@pytest.fixture
def listener() -> Iterator[Listener]:
    lst = Listener()
    yield lst
    lst.close()


@pytest.mark.parametrize("name", CLIENTS)
def test_a_refused_connection_is_the_clients_own_error_and_reaches_nothing(name: str, listener: Listener) -> None:
    library, make = CLIENTS[name]
    if importlib.util.find_spec(library) is None:
        pytest.skip(f"{library} is not installed")
    real = _raised(make(f"http://127.0.0.1:{_closed_port()}/x"))
    call = make(f"http://127.0.0.1:{listener.port}/x")
    observe_refusals(note_network_attempt)
    with Containment(), sandboxed(VirtualClock(0.0), b"seed") as run:
        refused = _raised(call)
    assert _chain(refused) == _chain(real) and _chain(real), (refused, real)
    leaf: BaseException | None = refused
    while leaf is not None and not isinstance(leaf, ConnectionRefusedError):
        leaf = leaf.__cause__ or leaf.__context__
    assert leaf is not None and leaf.errno == 111 and "kamera" in str(leaf)
    assert {a.address for a in run.network} == {f"127.0.0.1:{listener.port}"}
    time.sleep(0.2)
    assert (listener.connections, listener.bytes) == (0, 0)


def test_the_containments_refusal_is_a_refused_connect() -> None:
    blocked = NetworkBlocked("kamera blocked it", "example.com:80")
    assert isinstance(blocked, ConnectionRefusedError) and blocked.errno == 111
    assert blocked.blocked_address == "example.com:80"
