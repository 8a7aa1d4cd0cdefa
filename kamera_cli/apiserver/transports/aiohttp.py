"""aiohttp, routed into the simulated API server in-process (kopf's client; kubernetes_asyncio's).

Why at ``ClientSession._request``: every aiohttp call — ``session.request``, ``.get``, ``.patch``,
with or without ``async with`` — goes through it, whoever built the session and whatever connector
it was given, so one replacement covers kopf's own API client and any other aiohttp user without
knowing their code.  A request to the containment's cluster host is answered by the bound
``ApiServer`` (no socket, no event-loop I/O); one that a fake by URL answers (``spec.fakes[].url``,
``transports/services.py``) is answered by that fake; a request anywhere else is refused as a
network attempt, like a socket the fence refuses.  The response stand-in offers what aiohttp clients read:
``status``, ``headers``, ``reason``, ``json()``, ``text()``, ``read()``, ``content`` (line
iteration, ``readline``, ``readany``, ``iter_chunked``: a watch stream), ``release()``,
``raise_for_status()`` and the async context-manager protocol.
"""

from __future__ import annotations

import json as _json
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from kamera_cli.apiserver.transports import services

__all__ = ["SimulatedResponse", "route_request"]


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


def route_request(
    current: Callable[[], Any],
    blocked: Callable[[str], BaseException],
) -> Callable[..., Any]:
    """A replacement for ``aiohttp.ClientSession._request`` answering from ``current().server``.

    ``current`` gives the active containment (``host`` and ``server``); ``blocked(address)`` makes the
    exception for a request to anywhere else.
    """

    async def _request(session: Any, method: str, str_or_url: Any, *, params: Any = None, data: Any = None,
                       json: Any = None, headers: Any = None, **_: Any) -> SimulatedResponse:
        owner = current()
        url = str(str_or_url)
        base = getattr(session, "_base_url", None)
        if base is not None and "://" not in url:
            from yarl import URL  # aiohttp's own URL type, present wherever aiohttp is

            url = str(base.join(URL(url)))
        parts = urlsplit(url)
        host = f"{parts.scheme}://{parts.netloc}"
        query = parse_qsl(parts.query, keep_blank_values=True)
        if params:
            items = params.items() if isinstance(params, Mapping) else params
            query.extend((str(k), str(v)) for k, v in items)
            url = urlunsplit(parts._replace(query=urlencode(query)))
        service = services.find(url) if owner is None or host != owner.host else None
        if service is None and (owner is None or host != owner.host):
            raise blocked(parts.netloc or url)
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

    return _request
