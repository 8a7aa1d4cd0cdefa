"""A hook written as a WSGI or ASGI application (Flask, FastAPI, Starlette, ...), called in-process.

Why the standard calling conventions rather than each framework's test client: a hook server is
whatever the user deploys, and every Python web framework is, at its edge, a WSGI callable
(PEP 3333: ``app(environ, start_response)``) or an ASGI one (``await app(scope, receive, send)``, the
ASGI 3 HTTP spec).  kamera plays the server's part of that contract for the one request
metacontroller sends — a POST of the JSON body to the webhook's path — and reads the status,
headers and body back, with no socket and no framework imported by kamera itself.

ASGI ``lifespan`` events are not sent (no ``startup`` handler runs): a real server sends them once
per process and keeps the app's lifespan task running between requests, which one in-process call
per hook request cannot keep (docs/controllers.md).
"""

from __future__ import annotations

import asyncio
import inspect
import io
import sys
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from kamera_cli.adapters.sandbox.loading import arity_of

__all__ = ["AppError", "HttpAnswer", "asgi_post", "is_asgi", "is_wsgi", "wsgi_post"]

#: (status, lower-cased headers, body)
HttpAnswer = tuple[int, dict[str, str], bytes]

_HOST = "hook"
_PORT = 80


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
    argument alone (a hook function takes the request dict)."""
    if inspect.isclass(value) or not callable(value) or is_asgi(value):
        return False
    arity = arity_of(value)
    return arity is not None and arity.accepts(2) and not arity.accepts(1)


def _split(path: str) -> tuple[str, str]:
    """The webhook path as the server parses it: unquoted path, raw query string."""
    raw, _, query = path.partition("?")
    return raw or "/", query


def wsgi_post(app: Callable[..., Any], path: str, body: bytes) -> HttpAnswer:
    """Call ``app`` as a WSGI server does for ``POST path`` with ``body`` (``wsgiref.handlers``'s order:
    the iterable is drained, then closed)."""
    raw, query = _split(path)
    environ: dict[str, Any] = {
        "REQUEST_METHOD": "POST", "SCRIPT_NAME": "",
        # PEP 3333: PATH_INFO is the unquoted path, its bytes as latin-1 ("native strings")
        "PATH_INFO": unquote(raw, encoding="latin-1"), "QUERY_STRING": query,
        "CONTENT_TYPE": "application/json", "CONTENT_LENGTH": str(len(body)),
        "SERVER_NAME": _HOST, "SERVER_PORT": str(_PORT), "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1", "HTTP_HOST": _HOST,
        "wsgi.version": (1, 0), "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr, "wsgi.multithread": False, "wsgi.multiprocess": False, "wsgi.run_once": False,
    }
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
    status, headers = started[0]
    try:
        code = int(status.split(" ", 1)[0])
    except ValueError:
        raise AppError(f"the WSGI application answered the status {status!r}, not '<code> <reason>'") from None
    return code, {str(k).lower(): str(v) for k, v in headers}, b"".join(written)


def asgi_post(app: Callable[..., Any], path: str, body: bytes) -> HttpAnswer:
    """Await ``app`` as an ASGI server does for one HTTP ``POST path`` with ``body``, on the step's
    virtual-time event loop."""
    from kamera_cli.adapters.asyncio.loop import run_async

    return run_async(_asgi(app, path, body))


async def _asgi(app: Callable[..., Any], path: str, body: bytes) -> HttpAnswer:
    raw, query = _split(path)
    scope: dict[str, Any] = {
        "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
        "method": "POST", "scheme": "http", "path": unquote(raw), "raw_path": raw.encode("latin-1", "replace"),
        "query_string": query.encode("latin-1", "replace"), "root_path": "",
        "headers": [(b"host", _HOST.encode()), (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode())],
        "client": ("127.0.0.1", 0), "server": (_HOST, _PORT), "state": {},
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
    headers = {bytes(k).decode("latin-1").lower(): bytes(v).decode("latin-1")
               for k, v in start[0].get("headers") or []}
    return int(start[0].get("status", 0)), headers, b"".join(chunks)
