"""The transports' side of fakes by URL, without a scenario: each client over ``https``, the routes'
order and their removal, and the pool refused again once a route is gone.

Scenario-level behaviour (every shape, the fence's findings, the explored state, a real listener)
is ``tests/e2e/test_service_fakes.py``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
from collections.abc import Callable, Iterator

import pytest

from kamera_cli.apiserver.transports.containment import Containment, NetworkBlocked
from kamera_cli.apiserver.transports.services import Handler, find, install_routes
from kamera_cli.model.services import ServiceRequest, ServiceResponse, parse_url_pattern


def _echo(tag: str) -> Handler:
    def handle(request: ServiceRequest) -> ServiceResponse:
        return ServiceResponse.of_json({"tag": tag, "url": request.url, "method": request.method,
                                        "body": request.text()})

    return handle


@pytest.fixture
def routed() -> Iterator[None]:
    undo = install_routes([(parse_url_pattern("https://vault.internal/v1/**"), _echo("v1")),
                           (parse_url_pattern("https://**.internal"), _echo("any"))])
    with Containment():
        yield
    undo()


def _requests(url: str) -> str:
    import requests

    return requests.post(url, data="hi", timeout=5).text


def _urllib3(url: str) -> str:
    import urllib3

    return urllib3.request("POST", url, body=b"hi").data.decode()


def _httpx(url: str) -> str:
    import httpx

    return httpx.post(url, content=b"hi").text


def _httpx_async(url: str) -> str:
    import httpx

    async def go() -> str:
        async with httpx.AsyncClient() as http:
            return (await http.post(url, content=b"hi")).text

    return asyncio.run(go())


def _aiohttp(url: str) -> str:
    import aiohttp

    async def go() -> str:
        async with aiohttp.ClientSession() as session, session.post(url, data=b"hi") as response:
            return await response.text()

    return asyncio.run(go())


CLIENTS: dict[str, tuple[str, Callable[[str], str]]] = {
    "requests": ("requests", _requests), "urllib3": ("urllib3", _urllib3), "httpx": ("httpx", _httpx),
    "httpx_async": ("httpx", _httpx_async), "aiohttp": ("aiohttp", _aiohttp)}


@pytest.mark.parametrize("client", CLIENTS)
def test_https_is_answered_by_the_first_matching_route(routed: None, client: str) -> None:
    library, send = CLIENTS[client]
    if importlib.util.find_spec(library) is None:
        pytest.skip(f"{library} is not installed (pip install {library})")
    first = json.loads(send("https://vault.internal/v1/secret/a?x=1"))
    assert first == {"tag": "v1", "url": "https://vault.internal/v1/secret/a?x=1", "method": "POST", "body": "hi"}
    assert json.loads(send("https://db.eu.internal/v2"))["tag"] == "any"


def test_a_removed_route_answers_no_more() -> None:
    undo = install_routes([(parse_url_pattern("http://s.svc"), _echo("s"))])
    assert find("http://s.svc/x") is not None
    undo()
    assert find("http://s.svc/x") is None
    import urllib3

    with Containment(), pytest.raises(urllib3.exceptions.MaxRetryError) as refused:  # refused again
        urllib3.PoolManager().request("GET", "http://s.svc/x")
    assert isinstance(refused.value.reason.__cause__, NetworkBlocked) and "s.svc" in str(refused.value)


def _aiohttp_unix(url: str) -> str:
    import aiohttp

    async def go() -> str:
        connector = aiohttp.UnixConnector(path="/nonexistent/kamera.sock")
        async with aiohttp.ClientSession(connector=connector) as session, session.post(url, data=b"hi") as response:
            return await response.text()

    return asyncio.run(go())


def _urllib(url: str) -> str:
    import urllib.request

    with urllib.request.urlopen(url, data=b"hi") as answer:
        return answer.read().decode()  # type: ignore[no-any-return]


#: what each client does with a ``tcp://`` URL, read from its source: aiohttp's ``TCPConnector`` lists
#: ``tcp`` in ``allowed_protocol_schema_set`` and sends plain HTTP; the others refuse the scheme before
#: any connection (requests: no adapter; urllib3: no pool class; httpcore: not http/https/ws/wss;
#: aiohttp over a Unix socket: ``NonHttpUrlClientError``; urllib.request: no handler, ``URLError``)
_TCP = {"requests": "InvalidSchema", "urllib3": "URLSchemeUnknown", "httpx": "UnsupportedProtocol",
        "httpx_async": "UnsupportedProtocol", "aiohttp": None, "aiohttp_unix": "NonHttpUrlClientError",
        "urllib": "URLError"}


@pytest.mark.parametrize("client", _TCP)
def test_a_tcp_url_is_answered_only_where_the_client_speaks_http_to_it(client: str) -> None:
    """dask-kubernetes asks its scheduler at ``tcp://<service>.<namespace>:8787/api/v1/...`` with aiohttp,
    which speaks HTTP to it: a ``tcp://`` fake answers there, and every other client refuses the URL
    itself, with or without the fake, as it does outside kamera."""
    library, send = {**CLIENTS, "aiohttp_unix": ("aiohttp", _aiohttp_unix), "urllib": ("urllib", _urllib)}[client]
    if importlib.util.find_spec(library) is None:
        pytest.skip(f"{library} is not installed (pip install {library})")
    url = "tcp://simple-scheduler.default:8787/api/v1/retire_workers"

    def outcome() -> str:
        with Containment():
            try:
                return json.loads(send(url))["tag"]  # type: ignore[no-any-return]
            except Exception as exc:
                return type(exc).__name__

    unfaked = outcome()
    undo = install_routes([(parse_url_pattern("tcp://*-scheduler.*:8787/api/**"), _echo("scheduler"))])
    try:
        faked = outcome()
    finally:
        undo()
    if _TCP[client] is None:
        assert (unfaked, faked) == ("ClientConnectorError", "scheduler")  # refused as a connect, then answered
    else:
        assert unfaked == faked == _TCP[client]
