"""httpx (and its fork httpx2), routed into the simulated API server in-process: kr8s's and lightkube's client.

Why at ``Client._transport_for_url``: every request of an ``httpx.Client`` or ``httpx.AsyncClient`` —
``request``, ``get``, ``stream``, with auth flows and redirects — asks this method which transport
to send through (the default connection pool, a proxy or a mount).  Answering it with a simulated
transport for kamera's cluster host leaves everything above the transport to httpx itself:
``response.request``, ``raise_for_status``, ``json()``, ``iter_lines``/``aiter_lines`` over a watch,
event hooks, auth flows.  The transport hands the request to the pool-manager stand-in of
``apiserver/transports/containment.py`` and streams the ``urllib3`` answer it gets back, so the official client
and httpx share one request path (idle-watch detection, the 503 with no simulation bound, the 500
for a server bug) and a watch is read one event per chunk, lazily.

A request that a fake by URL answers (``spec.fakes[].url``, ``transports/services.py``) goes to a
transport that asks that fake.  A request to any other host goes to the client's own transport: a
transport the user supplied (``httpx.MockTransport``) still works, and httpx's real
``HTTPTransport``/``AsyncHTTPTransport`` run as they would, up to the connection: httpcore's network
backends (sync, anyio, trio) refuse it while contained (``NetworkBlocked``, the controller's network
attempt) inside httpcore's own exception mapping, so the controller gets ``httpx.ConnectError`` as
from a refused connect.

kamera hosts are recognised by name (``kamera-<hex>.invalid``, RFC 2606's reserved TLD): a client
built under an earlier containment (kr8s caches its API objects per thread) still lands on the
simulation running now, never on the network.  httpx2 (lightkube 1.x) is httpx renamed: the same
code patches whichever of the two modules is installed.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any

from kamera_cli.apiserver.transports import services

__all__ = ["is_kamera_host", "patch"]

_KAMERA_HOST = re.compile(r"kamera-(?:[0-9a-f]{16}|unbound)\.invalid")
_CHUNK = 2**16


def is_kamera_host(host: str) -> bool:
    """Whether ``host`` names a kamera simulation (a containment's dummy host), never a real machine."""
    return _KAMERA_HOST.fullmatch(host) is not None


#: ``(method, url, headers, body) -> urllib3.HTTPResponse``: the pool-manager stand-in's request
Send = Callable[[str, str, Mapping[str, str], "bytes | None"], Any]


def patch(module_name: str, set_attr: Callable[[Any, str, Any], None], send: Send,
          blocked: Callable[[str], BaseException]) -> None:
    """Route ``module_name`` (``httpx`` or ``httpx2``) to ``send`` for kamera hosts; refuse its real transports.

    ``set_attr`` records each original so that the containment puts it back.
    """
    mod: Any = importlib.import_module(module_name)

    class _Body(mod.SyncByteStream, mod.AsyncByteStream):  # type: ignore[misc]
        """A response body over the stand-in's ``urllib3`` answer: a watch yields one event per chunk."""

        def __init__(self, raw: Any) -> None:
            self._raw = raw

        def __iter__(self) -> Iterator[bytes]:
            yield from self._raw.stream(_CHUNK)

        async def __aiter__(self) -> AsyncIterator[bytes]:
            for chunk in self._raw.stream(_CHUNK):
                yield chunk

        def close(self) -> None:
            self._raw.close()

        async def aclose(self) -> None:
            self._raw.close()

    def respond(request: Any, body: bytes | None) -> Any:
        answer = send(request.method, str(request.url), dict(request.headers), body or None)
        return mod.Response(answer.status, headers=list(answer.headers.items()), stream=_Body(answer),
                            extensions={"http_version": b"HTTP/1.1", "reason_phrase": answer.reason.encode()})

    class SimulatedTransport(mod.BaseTransport):  # type: ignore[misc]
        def handle_request(self, request: Any) -> Any:
            return respond(request, request.read())

    class AsyncSimulatedTransport(mod.AsyncBaseTransport):  # type: ignore[misc]
        async def handle_async_request(self, request: Any) -> Any:
            return respond(request, await request.aread())

    def faked(request: Any, handler: services.Handler, body: bytes) -> Any:
        answer = services.call(handler, request.method, str(request.url), request.headers.multi_items(), body)
        return mod.Response(answer.status, headers=list(answer.headers), content=answer.body,
                            extensions={"http_version": b"HTTP/1.1"})

    class ServiceTransport(mod.BaseTransport):  # type: ignore[misc]
        """A faked service (``spec.fakes[].url``): answered by its fake, in-process."""

        def __init__(self, handler: services.Handler) -> None:
            self._handler = handler

        def handle_request(self, request: Any) -> Any:
            return faked(request, self._handler, request.read())

    class AsyncServiceTransport(mod.AsyncBaseTransport):  # type: ignore[misc]
        def __init__(self, handler: services.Handler) -> None:
            self._handler = handler

        async def handle_async_request(self, request: Any) -> Any:
            return faked(request, self._handler, await request.aread())

    sync_transport, async_transport = SimulatedTransport(), AsyncSimulatedTransport()
    sync_for_url = mod.Client._transport_for_url
    async_for_url = mod.AsyncClient._transport_for_url

    def transport_for_url(client: Any, url: Any) -> Any:
        if is_kamera_host(url.host):
            return sync_transport
        handler = services.find(str(url))
        return ServiceTransport(handler) if handler is not None else sync_for_url(client, url)

    def async_transport_for_url(client: Any, url: Any) -> Any:
        if is_kamera_host(url.host):
            return async_transport
        handler = services.find(str(url))
        return AsyncServiceTransport(handler) if handler is not None else async_for_url(client, url)

    set_attr(mod.Client, "_transport_for_url", transport_for_url)
    set_attr(mod.AsyncClient, "_transport_for_url", async_transport_for_url)
    _refuse_connections(module_name.replace("httpx", "httpcore"), set_attr, blocked)


def _refuse_connections(core: str, set_attr: Callable[[Any, str, Any], None],
                        blocked: Callable[[str], BaseException]) -> None:
    """httpcore's (or httpx2's httpcore2's) backends open no connection: each ``connect_*`` raises the
    refusal where the real one connects, inside the same ``map_exceptions`` (``OSError`` to ``ConnectError``)."""
    try:
        connect_error: type[Exception] = importlib.import_module(core).ConnectError
        map_exceptions: Any = importlib.import_module(f"{core}._exceptions").map_exceptions
    except (ImportError, AttributeError):  # moved internals: a request then meets the socket fence
        return
    refused: dict[type[Exception], type[Exception]] = {OSError: connect_error}

    def refuse(backend: Any, host: Any = "", port: Any = None, *args: Any, **kwargs: Any) -> Any:
        with map_exceptions(refused):
            raise blocked(f"{host}:{port}" if port is not None else str(host))

    async def refuse_async(backend: Any, host: Any = "", port: Any = None, *args: Any, **kwargs: Any) -> Any:
        return refuse(backend, host, port)

    for module, name, fn in (("sync", "SyncBackend", refuse), ("anyio", "AnyIOBackend", refuse_async),
                             ("trio", "TrioBackend", refuse_async)):
        try:
            backend = getattr(importlib.import_module(f"{core}._backends.{module}"), name)
        except (ImportError, AttributeError):  # trio (or anyio) not installed: no such backend to use
            continue
        set_attr(backend, "connect_tcp", fn)
        set_attr(backend, "connect_unix_socket", fn)
