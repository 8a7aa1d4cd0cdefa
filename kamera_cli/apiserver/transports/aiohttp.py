"""aiohttp, routed into the simulated API server in-process (kopf's client; kubernetes_asyncio's).

Why at ``ClientSession._request``: every aiohttp call — ``session.request``, ``.get``, ``.patch``,
with or without ``async with`` — goes through it, whoever built the session and whatever connector
it was given, so one replacement covers kopf's own API client and any other aiohttp user without
knowing their code.  A request to the containment's cluster host is answered by the bound
``ApiServer`` (no socket, no event-loop I/O); one that a fake by URL answers (``spec.fakes[].url``,
``transports/services.py``) is answered by that fake; a request anywhere else goes aiohttp's own way
up to its connector, which refuses the connection (``refuse_connections``) as a network attempt and
raises it as aiohttp raises a refused connect (``ClientConnectorError``).  The response stand-in
offers what aiohttp clients read: ``status``, ``headers``, ``reason``, ``json()``, ``text()``,
``read()``, ``content`` (line iteration, ``readline``, ``readany``, ``iter_chunked``: a watch stream), ``release()``,
``raise_for_status()`` and the async context-manager protocol.
"""

from __future__ import annotations

import json as _json
from collections.abc import AsyncIterator, Callable, Collection, Iterator, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from kamera_cli.apiserver.transports import services
from kamera_cli.model.services import HTTP_SCHEMES

__all__ = ["SimulatedResponse", "refuse_connections", "route_request"]


class _Content:
    """``response.content``: the body (or a watch's lines) as an aiohttp ``StreamReader`` offers it."""

    def __init__(self, body: bytes, stream: Iterator[bytes] | None) -> None:
        self._buffer = body
        self._stream = stream

    def _more(self) -> bool:
        if self._stream is None:
            return False
        try:
            self._buffer += next(self._stream)
        except StopIteration:
            self._stream = None
            return False
        return True

    async def readline(self) -> bytes:
        while b"\n" not in self._buffer and self._more():
            pass
        line, sep, rest = self._buffer.partition(b"\n")
        self._buffer = rest
        return line + sep

    async def readany(self) -> bytes:
        if not self._buffer:
            self._more()
        data, self._buffer = self._buffer, b""
        return data

    async def read(self, n: int = -1) -> bytes:
        if n < 0:
            while self._more():
                pass
            data, self._buffer = self._buffer, b""
            return data
        while len(self._buffer) < n and self._more():
            pass
        data, self._buffer = self._buffer[:n], self._buffer[n:]
        return data

    def at_eof(self) -> bool:
        return not self._buffer and self._stream is None

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[bytes]:
        while True:
            line = await self.readline()
            if not line:
                return
            yield line

    async def iter_chunked(self, n: int) -> AsyncIterator[bytes]:
        while chunk := await self.read(n):
            yield chunk

    async def iter_any(self) -> AsyncIterator[bytes]:
        while chunk := await self.readany():
            yield chunk


class SimulatedResponse:
    """The parts of ``aiohttp.ClientResponse`` that API clients use."""

    def __init__(self, method: str, url: str, status: int, headers: Mapping[str, str], body: bytes,
                 stream: Iterator[bytes] | None = None) -> None:
        from multidict import CIMultiDict, CIMultiDictProxy
        from yarl import URL

        self.method = method
        self.url = URL(url)
        self.real_url = self.url
        self.status = status
        self.reason = _REASONS.get(status, "")
        self.headers = CIMultiDictProxy(CIMultiDict(headers))
        self.content_type = str(self.headers.get("Content-Type", "application/json")).split(";")[0]
        self.charset = "utf-8"
        self.content = _Content(body, stream)
        self.closed = False
        self.history = ()
        self.request_info = None

    async def read(self) -> bytes:
        return await self.content.read()

    async def text(self, encoding: str | None = None, errors: str = "strict") -> str:
        return (await self.read()).decode(encoding or "utf-8", errors)

    async def json(self, *, encoding: str | None = None, loads: Callable[[str], Any] = _json.loads,
                   content_type: str | None = "application/json") -> Any:
        text = await self.text(encoding)
        return loads(text) if text.strip() else None

    def raise_for_status(self) -> None:
        if self.status >= 400:
            import aiohttp

            raise aiohttp.ClientResponseError(
                self.request_info, (), status=self.status,  # type: ignore[arg-type, unused-ignore]
                message=self.reason, headers=self.headers)

    @property
    def ok(self) -> bool:
        return self.status < 400

    def release(self) -> None:
        self.closed = True

    def close(self) -> None:
        self.closed = True

    async def wait_for_close(self) -> None:
        self.closed = True

    async def __aenter__(self) -> SimulatedResponse:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.release()


_REASONS = {200: "OK", 201: "Created", 202: "Accepted", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
            404: "Not Found", 405: "Method Not Allowed", 409: "Conflict", 410: "Gone", 415: "Unsupported Media Type",
            422: "Unprocessable Entity", 500: "Internal Server Error", 503: "Service Unavailable"}


def refuse_connections(set_attr: Callable[[Any, str, Any], None], blocked: Callable[[str], BaseException]) -> None:
    """aiohttp's connectors open no connection: each refuses it where it would connect (before resolving
    the name, which the cluster would answer), raising the refusal in the error aiohttp wraps a refused
    connect in (``client_error(req.connection_key, exc)``: ``ClientConnectorError``, or
    ``ClientProxyConnectionError`` for a proxy; ``UnixClientConnectorError`` for a Unix socket)."""
    import aiohttp

    async def direct(connector: Any, req: Any, traces: Any, timeout: Any, *,
                     client_error: type[Exception] = aiohttp.ClientConnectorError) -> Any:
        refusal = blocked(f"{req.url.raw_host}:{req.port}")
        raise client_error(req.connection_key, refusal) from refusal

    async def unix(connector: Any, req: Any, traces: Any, timeout: Any) -> Any:
        refusal = blocked(str(connector.path))
        unix_error: Any = aiohttp.UnixClientConnectorError
        raise unix_error(connector.path, req.connection_key, refusal) from refusal

    set_attr(aiohttp.TCPConnector, "_create_direct_connection", direct)
    set_attr(aiohttp.UnixConnector, "_create_connection", unix)


def route_request(current: Callable[[], Any], real_request: Callable[..., Any],
                  misaddressed: Callable[[str], BaseException]) -> Callable[..., Any]:
    """A replacement for ``aiohttp.ClientSession._request`` answering from ``current().server``.

    ``current`` gives the active containment (``host`` and ``server``); a request to anywhere else (no
    fake by URL matching it) goes to ``real_request``, aiohttp's own, whose connection is refused.  A
    URL without a host (a client whose configuration was never loaded) raises ``misaddressed(url)``,
    whose message names the likely cause, where aiohttp would raise ``InvalidUrlClientError`` (no
    connection is attempted: not a network attempt).
    """

    async def _request(session: Any, method: str, str_or_url: Any, *args: Any, **kwargs: Any) -> Any:
        owner = current()
        url = str(str_or_url)
        base = getattr(session, "_base_url", None)
        if base is not None and "://" not in url:
            from yarl import URL  # aiohttp's own URL type, present wherever aiohttp is

            url = str(base.join(URL(url)))
        parts = urlsplit(url)
        if not parts.netloc:
            raise misaddressed(url)
        host = f"{parts.scheme}://{parts.netloc}"
        schemes = _schemes(session)
        if (owner is None or host != owner.host) and \
                services.find(_with_params(url, kwargs.get("params")), schemes) is None:
            return await real_request(session, method, str_or_url, *args, **kwargs)
        return await _answered(session, owner, method, url, schemes, **kwargs)

    return _request


def _schemes(session: Any) -> Collection[str]:
    """The schemes the session's connector sends HTTP requests to, as aiohttp's ``_request`` checks them
    (``allowed_protocol_schema_set``: a ``TCPConnector`` takes ``tcp://`` too, as plain HTTP); any other
    URL goes to aiohttp's own ``_request``, which refuses it (``NonHttpUrlClientError``)."""
    allowed = getattr(getattr(session, "_connector", None), "allowed_protocol_schema_set", None)
    return frozenset(allowed) if allowed else HTTP_SCHEMES


def _with_params(url: str, params: Any) -> str:
    if not params:
        return url
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    items = params.items() if isinstance(params, Mapping) else params
    query.extend((str(k), str(v)) for k, v in items)
    return urlunsplit(parts._replace(query=urlencode(query)))


async def _answered(session: Any, owner: Any, method: str, url: str, schemes: Collection[str], *, params: Any = None,
                    data: Any = None, json: Any = None, headers: Any = None, **_: Any) -> SimulatedResponse:
    """A request to the cluster host, answered by the bound server, or to a URL a fake answers."""
    parts = urlsplit(url)
    url = _with_params(url, params)
    query = parse_qsl(urlsplit(url).query, keep_blank_values=True)
    service = services.find(url, schemes) if owner is None or f"{parts.scheme}://{parts.netloc}" != owner.host \
        else None
    merged: dict[str, str] = {}
    for source in (getattr(session, "_default_headers", None), headers):
        if source:
            for k, v in source.items():
                merged[str(k)] = str(v)
    body: bytes | None
    if json is not None:
        body = _json.dumps(json).encode()
        if not any(k.lower() == "content-type" for k in merged):
            merged["Content-Type"] = "application/json"
    elif isinstance(data, str):
        body = data.encode()
    elif isinstance(data, (bytes, bytearray)):
        body = bytes(data)
    elif isinstance(data, Mapping):  # a form, as aiohttp encodes it
        body = urlencode([(str(k), str(v)) for k, v in data.items()]).encode()
        if not any(k.lower() == "content-type" for k in merged):
            merged["Content-Type"] = "application/x-www-form-urlencoded"
    else:
        body = None
    if service is not None:
        answer = services.call(service, method, url, merged, body)
        return SimulatedResponse(method, url, answer.status, dict(answer.headers), answer.body)
    server = owner.server
    if server is None:
        return SimulatedResponse(method, url, 503, {"Content-Type": "application/json"},
                                 b'{"kind":"Status","status":"Failure","message":"no simulation is running",'
                                 b'"reason":"ServiceUnavailable","code":503}')
    answer = server.handle(method.upper(), parts.path, query, merged, body)
    return SimulatedResponse(method, url, answer.status, dict(answer.headers), answer.body, answer.stream)
