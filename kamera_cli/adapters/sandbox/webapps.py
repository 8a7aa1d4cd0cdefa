"""Calling a WSGI or ASGI application in-process, as a server would for one HTTP request.

Why the standard calling conventions rather than each framework's test client: every Python web
framework is, at its edge, a WSGI callable (PEP 3333: ``app(environ, start_response)``) or an ASGI
one (``await app(scope, receive, send)``, the ASGI 3 HTTP spec).  kamera plays the server's part of
that contract for one request and reads the status, headers and body back, with no socket and no
framework imported by kamera itself.  Two users: metacontroller's hooks (``metacontroller/apps.py``,
a POST of the JSON body) and fakes by URL (``sandbox/services.py``, any request a controller sends).

ASGI ``lifespan`` events are not sent (no ``startup`` handler runs): a real server sends them once
per process and keeps the app's lifespan task running between requests, which one in-process call
per request cannot keep (docs/controllers.md).
"""

from __future__ import annotations

import asyncio
import inspect
import io
import sys
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import unquote, urlsplit

from kamera_cli.adapters.sandbox.loading import arity_of

__all__ = ["AppAnswer", "AppError", "asgi_call", "is_asgi", "is_wsgi", "wsgi_call"]

#: (status, headers as sent, body)
AppAnswer = tuple[int, list[tuple[str, str]], bytes]
_PORTS = {"http": 80, "https": 443}


class AppError(Exception):
    """The application broke the WSGI/ASGI contract (no response, a malformed status)."""


def is_asgi(value: Any) -> bool:
    """An ASGI 3 application: a coroutine function (or an object whose ``__call__`` is one) of
    ``(scope, receive, send)``."""
    if inspect.isclass(value) or not callable(value):
        return False
    call = value if inspect.isfunction(value) or inspect.ismethod(value) else getattr(value, "__call__", None)  # noqa: B004
    if not inspect.iscoroutinefunction(call):
        return False
    arity = arity_of(value)
    return arity is None or arity.accepts(3)


def is_wsgi(value: Any) -> bool:
    """A WSGI application: a plain callable of ``(environ, start_response)`` that cannot take one
    argument alone (a function of the request takes one)."""
    if inspect.isclass(value) or not callable(value) or is_asgi(value):
        return False
    arity = arity_of(value)
    return arity is not None and arity.accepts(2) and not arity.accepts(1)


def _where(url: str) -> tuple[str, str, int, str, str]:
    """scheme, host, port, raw path and raw query of an absolute URL."""
    parts = urlsplit(url)
    # a server sees plain HTTP on a tcp:// URL (aiohttp's TCPConnector speaks HTTP to it, unencrypted)
    scheme = parts.scheme if parts.scheme in _PORTS else "http"
    port = parts.port or _PORTS[scheme]
    return scheme, parts.hostname or "localhost", port, parts.path or "/", parts.query


def wsgi_call(app: Callable[..., Any], method: str, url: str, headers: Iterable[tuple[str, str]],
              body: bytes) -> AppAnswer:
    """Call ``app`` as a WSGI server does for one request (``wsgiref.handlers``'s order: the
    iterable is drained, then closed)."""
    scheme, host, port, raw, query = _where(url)
    environ: dict[str, Any] = {
        "REQUEST_METHOD": method.upper(), "SCRIPT_NAME": "",
        # PEP 3333: PATH_INFO is the unquoted path, its bytes as latin-1 ("native strings")
        "PATH_INFO": unquote(raw, encoding="latin-1"), "QUERY_STRING": query,
        "CONTENT_LENGTH": str(len(body)),
        "SERVER_NAME": host, "SERVER_PORT": str(port), "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1", "HTTP_HOST": host if port == _PORTS.get(scheme) else f"{host}:{port}",
        "wsgi.version": (1, 0), "wsgi.url_scheme": scheme, "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr, "wsgi.multithread": False, "wsgi.multiprocess": False, "wsgi.run_once": False,
    }
    for name, value in headers:
        key = name.upper().replace("-", "_")
        if key == "CONTENT_TYPE":
            environ[key] = value
        elif key not in ("CONTENT_LENGTH", "HOST"):  # the length is the body's; the host the URL's
            environ[f"HTTP_{key}"] = f"{environ[f'HTTP_{key}']},{value}" if f"HTTP_{key}" in environ else value
    started: list[tuple[str, list[tuple[str, str]]]] = []
    written: list[bytes] = []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable[[bytes], None]:
        if exc_info is not None:
            try:
                if written:  # headers already sent: the error can only be re-raised
                    raise exc_info[1].with_traceback(exc_info[2])
            finally:
                exc_info = None
        elif started:
            raise AppError("start_response called a second time without exc_info")
        started[:] = [(status, list(headers))]
        return written.append

    result = app(environ, start_response)
    try:
        for chunk in result:
            if chunk:
                if not started:
                    raise AppError("the WSGI application yielded a body before calling start_response")
                written.append(bytes(chunk))
    finally:
        close = getattr(result, "close", None)
        if callable(close):
            close()
    if not started:
        raise AppError("the WSGI application never called start_response")
    status, out_headers = started[0]
    try:
        code = int(status.split(" ", 1)[0])
    except ValueError:
        raise AppError(f"the WSGI application answered the status {status!r}, not '<code> <reason>'") from None
    return code, [(str(k), str(v)) for k, v in out_headers], b"".join(written)


async def asgi_call(app: Callable[..., Any], method: str, url: str, headers: Iterable[tuple[str, str]],
                    body: bytes) -> AppAnswer:
    """Await ``app`` as an ASGI server does for one HTTP request."""
    scheme, host, port, raw, query = _where(url)
    sent = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers
            if k.lower() not in ("host", "content-length")]
    scope: dict[str, Any] = {
        "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
        "method": method.upper(), "scheme": scheme, "path": unquote(raw),
        "raw_path": raw.encode("latin-1", "replace"), "query_string": query.encode("latin-1", "replace"),
        "root_path": "",
        "headers": [(b"host", (host if port == _PORTS.get(scheme) else f"{host}:{port}").encode()),
                    *sent, (b"content-length", str(len(body)).encode())],
        "client": ("127.0.0.1", 0), "server": (host, port), "state": {},
    }
    delivered: list[bool] = []
    done = asyncio.Event()
    start: list[dict[str, Any]] = []
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        if not delivered:
            delivered.append(True)
            return {"type": "http.request", "body": body, "more_body": False}
        await done.wait()  # the client stays connected until the response is complete
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "http.response.start":
            if start:
                raise AppError("the ASGI application sent http.response.start twice")
            start.append(message)
        elif kind == "http.response.body":
            if not start:
                raise AppError("the ASGI application sent a body before http.response.start")
            if done.is_set():
                raise AppError("the ASGI application sent a body after the response was complete")
            chunks.append(bytes(message.get("body") or b""))
            if not message.get("more_body", False):
                done.set()
        else:
            raise AppError(f"the ASGI application sent {kind!r}, not an http.response message")

    await app(scope, receive, send)
    if not start:
        raise AppError("the ASGI application returned without sending http.response.start")
    if not done.is_set():
        raise AppError("the ASGI application returned before its response body was complete")
    out = [(bytes(k).decode("latin-1"), bytes(v).decode("latin-1")) for k, v in start[0].get("headers") or []]
    return int(start[0].get("status", 0)), out, b"".join(chunks)
