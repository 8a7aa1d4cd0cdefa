"""The official ``kubernetes`` client's side of the in-process transport: real ``urllib3`` responses.

Why here: every request of every generation of the official client ends in its REST client's
``pool_manager.request(...)``; the stand-in below answers there with a real ``urllib3.HTTPResponse``
built from the simulator's answer, so the client's own code does everything above it. The
containment that decides *which* simulator answers, and guards the network, is
``apiserver/transports/containment.py``; ``bind`` connects the two (it tells this module how to find the active
containment, a ``Dispatcher``), so that this module never imports that one.  The raw bodies and the
response builder are public because the containment answers through them too.
"""

from __future__ import annotations

import functools
import http
import json
from collections.abc import Callable, Generator, Iterator, Mapping
from typing import Any, Protocol
from urllib.parse import parse_qsl, urlsplit

import urllib3

__all__ = [
    "JSON_HEADERS",
    "TRUTHY",
    "BodyRaw",
    "Dispatcher",
    "PoolManagerStandIn",
    "StreamRaw",
    "bind",
    "body_bytes",
    "canned_pool_manager",
    "check_guards",
    "guard_requests",
    "http_response",
    "status_body",
]

# Methods whose ``fields`` urllib3 encodes into the URL (legacy clients pass GET query params there).
_URL_FIELD_METHODS = frozenset({"GET", "HEAD", "DELETE", "OPTIONS"})
JSON_HEADERS = {"Content-Type": "application/json"}
_REASONS = {s.value: s.phrase for s in http.HTTPStatus}
TRUTHY = frozenset({"true", "True", "1"})


def _unbound() -> Dispatcher | None:
    return None


_finders: list[Callable[[], Dispatcher | None]] = [_unbound]  # how to find the active containment (``bind``)


def _current() -> Dispatcher | None:
    """The containment that answers now, or None."""
    return _finders[-1]()


def bind(current: Callable[[], Dispatcher | None]) -> None:
    """How to find the containment that answers now (``containment.py`` calls it once)."""
    _finders.append(current)


#: checks every request passes before it is sent anywhere: ``(method, path) -> refusal or None``
_guards: list[Callable[[str, str], BaseException | None]] = []


def guard_requests(check: Callable[[str, str], BaseException | None]) -> None:
    """Have ``check`` see every request first; the exception it returns is raised to the caller instead.

    Why a hook: the simulator refuses requests from threads a reconcile started (the sandbox knows
    them, and this package may not import the sandbox).  Installing the same check twice is a no-op.
    """
    if check not in _guards:
        _guards.append(check)


def check_guards(method: str, target: str) -> None:
    """Raise what a guard refuses ``method target`` with: an API path, or the URL of a service faked by URL."""
    for check in _guards:
        refusal = check(method, target)
        if refusal is not None:
            raise refusal


class Dispatcher(Protocol):
    """What the stand-in hands a request to: ``transports.containment.Containment``."""

    def dispatch(self, method: str, path: str, query: list[tuple[str, str]], headers: Mapping[str, str],
                 body: bytes | None, preload: bool) -> urllib3.HTTPResponse: ...


# --------------------------------------------------------------------------------------------------
# Raw streams urllib3.HTTPResponse reads from


class BodyRaw:
    """A finished body; ``isclosed()`` turns True once read, so ``HTTPResponse.stream`` ends."""

    __slots__ = ("_data", "_pos")

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0

    def read(self, amt: int | None = None) -> bytes:
        if amt is None or amt < 0:
            chunk = self._data[self._pos :] if self._pos else self._data
            self._pos = len(self._data)
            return chunk
        chunk = self._data[self._pos : self._pos + amt]
        self._pos += len(chunk)
        return chunk

    def isclosed(self) -> bool:
        return self._pos >= len(self._data)

    def close(self) -> None:
        self._pos = len(self._data)

    @property
    def closed(self) -> bool:
        return self.isclosed()


class StreamRaw:
    """A watch stream: each ``read()`` hands out the next event line, so events arrive one at a time.

    Reading is lazy: the server's iterator is advanced only when the client asks for the next
    event, which makes every read a point where the simulation may decide what happens next.
    """

    __slots__ = ("_done", "_events", "_iter", "_on_end")

    def __init__(self, stream: Iterator[bytes], on_end: Callable[[int], None] | None) -> None:
        self._iter: Iterator[bytes] | None = iter(stream)
        self._events = 0
        self._on_end = on_end
        self._done = False

    def read(self, amt: int | None = None) -> bytes:
        while self._iter is not None:
            try:
                line = next(self._iter)
            except StopIteration:
                self._finish()
                return b""
            if line:
                self._events += 1
                return line if line.endswith(b"\n") else line + b"\n"
        return b""

    def _finish(self) -> None:
        it, self._iter = self._iter, None
        if it is not None:
            close = getattr(it, "close", None)
            if close is not None:
                close()
        if not self._done:
            self._done = True
            if self._on_end is not None:
                self._on_end(self._events)

    def isclosed(self) -> bool:
        return self._iter is None

    def close(self) -> None:
        # Closed early by the client (``Watch.stop()``): events were wanted, so it is not "idle".
        if self._iter is not None:
            self._events += 1
            self._finish()

    @property
    def closed(self) -> bool:
        return self._iter is None


class _WatchResponse(urllib3.HTTPResponse):
    """A real ``HTTPResponse`` over a watch stream: ``stream()`` yields one event line per read.

    ``read()`` without a size drains the rest of the stream, as it would on a socket that the
    server closes (``.data`` and ``preload_content=True`` go through it).
    """

    def stream(self, amt: int | None = 2**16, decode_content: bool | None = None) -> Generator[bytes, None, None]:
        raw: Any = self._fp
        if not isinstance(raw, StreamRaw):
            yield from super().stream(amt, decode_content)
            return
        while True:
            line = raw.read()
            if not line:
                return
            yield line

    def read(self, amt: int | None = None, *args: Any, **kwargs: Any) -> bytes:
        raw: Any = self._fp
        if amt is None and isinstance(raw, StreamRaw):
            data = b"".join(iter(raw.read, b""))
            if kwargs.get("cache_content"):
                self._body = data
            return data
        result: bytes = super().read(amt, *args, **kwargs)
        return result


def http_response(
    status: int,
    headers: Mapping[str, str],
    raw: BodyRaw | StreamRaw,
    preload: bool,
) -> urllib3.HTTPResponse:
    cls = _WatchResponse if isinstance(raw, StreamRaw) else urllib3.HTTPResponse
    body: Any = raw
    return cls(
        body=body,
        headers=headers,
        status=status,
        reason=_REASONS.get(status, ""),
        preload_content=preload,
        decode_content=False,
    )


def status_body(code: int, reason: str, message: str) -> bytes:
    return json.dumps(
        {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
         "message": message, "reason": reason, "code": code},
        separators=(",", ":"),
    ).encode()


@functools.lru_cache(maxsize=4096)
def _parse_url(url: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """Path and normalised query of a URL; cached, as a controller asks for the same URLs over and over."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True) if parts.query else []
    return parts.path or "/", tuple((k, _norm_bool(v)) for k, v in query)


def _norm_bool(value: str) -> str:
    # Legacy clients spell booleans ``True``/``False``; the apiserver parses ``true``/``false``.
    return "true" if value == "True" else "false" if value == "False" else value


def _split_url(method: str, url: str, fields: Any) -> tuple[str, list[tuple[str, str]]]:
    path, parsed = _parse_url(url)
    query = list(parsed)
    if fields and method in _URL_FIELD_METHODS:
        items = fields.items() if isinstance(fields, Mapping) else fields
        query.extend((str(k), _norm_bool(_field_value(v))) for k, v in items)
    return path, query


def _field_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes):
        return value.decode()
    return str(value)


def body_bytes(body: Any) -> bytes | None:
    """A request body as bytes, whatever urllib3 was handed (bytes, text, a file, a JSON value)."""
    if body is None:
        return None
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    if isinstance(body, (bytearray, memoryview)):
        return bytes(body)
    # A file-like body (never produced by the kubernetes client, but urllib3 accepts it).
    read = getattr(body, "read", None)
    if read is not None:
        data = read()
        return data.encode() if isinstance(data, str) else bytes(data)
    if not isinstance(body, (dict, list)) and hasattr(body, "__iter__"):  # chunks (``chunked=True``)
        return b"".join(chunk.encode() if isinstance(chunk, str) else bytes(chunk) for chunk in body)
    return json.dumps(body).encode()


# --------------------------------------------------------------------------------------------------
# The pool manager stand-in


class PoolManagerStandIn:
    """Takes the place of ``urllib3.PoolManager`` in a ``RESTClientObject``; never opens a socket.

    ``owner`` pins it to one ``Containment``; without an owner it answers from whichever
    containment is active when the request is made (so clients created once, e.g. at module import,
    follow the simulation that is running now), and with none active it answers 503.
    """

    def __init__(self, owner: Dispatcher | None = None) -> None:
        self._owner = owner

    def clear(self) -> None:
        """Nothing pooled, nothing to clear (``RESTClientObject.close()`` calls it)."""

    def request(
        self,
        method: str,
        url: str,
        fields: Any = None,
        headers: Mapping[str, str] | None = None,
        **urlopen_kw: Any,
    ) -> urllib3.HTTPResponse:
        method = method.upper()
        path, query = _split_url(method, url, fields)
        check_guards(method, path)
        owner = self._owner if self._owner is not None else _current()
        preload = bool(urlopen_kw.get("preload_content", True))
        body = body_bytes(urlopen_kw.get("body"))
        if owner is None:
            msg = f"no kamera simulation is bound: {method} {path} was not sent anywhere"
            return http_response(503, JSON_HEADERS, BodyRaw(status_body(503, "ServiceUnavailable", msg)), preload)
        return owner.dispatch(method, path, query, headers or {}, body, preload)

    def urlopen(
        self, method: str, url: str, body: Any = None, headers: Mapping[str, str] | None = None, **kw: Any
    ) -> urllib3.HTTPResponse:
        return self.request(method, url, body=body, headers=headers, **kw)


def canned_pool_manager(status: int, body: bytes) -> Any:
    """A pool manager stand-in that answers every request with the same body and no server work.

    The client's own floor for benchmarks: the cost of everything above the pool manager.
    """

    class _Canned(PoolManagerStandIn):
        def request(
            self, method: str, url: str, fields: Any = None, headers: Mapping[str, str] | None = None,
            **urlopen_kw: Any,
        ) -> urllib3.HTTPResponse:
            _split_url(method, url, fields)
            body_bytes(urlopen_kw.get("body"))
            return http_response(status, JSON_HEADERS, BodyRaw(body), bool(urlopen_kw.get("preload_content", True)))

    return _Canned()
