"""Calling a metacontroller hook in-process: a ``function(dict) -> dict`` or the hook server itself.

Why every shape: metacontroller hooks in Python are small web servers — an ``http.server``
program (a ``BaseHTTPRequestHandler`` subclass whose ``do_POST`` reads the JSON request and writes
the JSON response, started with ``HTTPServer(...).serve_forever()`` at the module's top level), a
Flask or other WSGI application, or a FastAPI/Starlette ASGI one.  kamera runs that server code
unmodified: the request is what metacontroller would send (a POST to the webhook's path with a JSON
body) — as bytes over an in-memory socket for a handler, through the WSGI or ASGI calling convention
for an application (``apps.py``) — and the answer is read as metacontroller's HTTP client would.  A
plain function is the same contract without the HTTP.

Importing such a module must not start a server: while hook modules are imported, socketserver's
``server_bind``/``server_activate`` do nothing (no socket is bound) and ``serve_forever`` returns at
once, as if the server had been shut down, so the rest of the module still loads.  The standard
library's WSGI server (``wsgiref.simple_server``) is a socketserver server, so the same holds for it;
Flask's ``app.run()`` returns at once, as it does under the ``flask`` command, and so does
``uvicorn.run(app)``.
"""

from __future__ import annotations

import contextlib
import http.client
import http.server
import importlib
import importlib.util
import io
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from kamera_cli.adapters.metacontroller.apps import AppError, asgi_post, wsgi_post
from kamera_cli.adapters.sandbox.servers import idle_servers

__all__ = ["HookAnswer", "HookError", "HookTarget", "call_hook", "neutered_servers"]


class HookError(Exception):
    """A hook answered something metacontroller cannot use (a finding, like a reconcile's exception)."""


@dataclass(frozen=True, slots=True)
class HookTarget:
    """One manifest hook mapped to Python: what to call and how."""

    hook: str
    entrypoint: str
    #: a function of the request dict, a ``BaseHTTPRequestHandler`` subclass, a WSGI or an ASGI application
    shape: Literal["function", "handler", "wsgi", "asgi"]
    target: Any
    #: the request path the hook server sees (the webhook's URL path or service path)
    path: str = "/"
    #: the server the module started with this handler, if any (what ``self.server`` is)
    server: Any = None


@dataclass(frozen=True, slots=True)
class HookAnswer:
    """A hook's decoded JSON answer, or how long metacontroller backs off (HTTP 429)."""

    body: dict[str, Any]
    retry_after: float | None = None


@contextlib.contextmanager
def neutered_servers() -> Iterator[list[Any]]:
    """While hook modules import: servers bind nothing and ``serve_forever`` returns immediately.

    Yields the list of the servers the modules started (their handler may look at ``self.server``).
    """
    # Flask's own switch for "a server already runs this app": ``Flask.run`` returns at once (it
    # would otherwise look up the host's address over a UDP socket before serving)
    flask_cli = os.environ.get("FLASK_RUN_FROM_CLI")
    os.environ["FLASK_RUN_FROM_CLI"] = "true"
    with idle_servers() as started:
        runners = _neuter_uvicorn(started)
        try:
            yield started
        finally:
            for module, run in runners:
                module.run = run
            if flask_cli is None:
                os.environ.pop("FLASK_RUN_FROM_CLI", None)
            else:
                os.environ["FLASK_RUN_FROM_CLI"] = flask_cli


def _neuter_uvicorn(started: list[Any]) -> list[tuple[Any, Any]]:
    """``uvicorn.run(app)`` at a module's top level returns at once (when uvicorn is installed at all:
    it is imported here, before the hook module imports it, so that ``from uvicorn import run`` gets
    the neutered one too); returns what to put back."""
    if importlib.util.find_spec("uvicorn") is None:
        return []
    try:
        main = importlib.import_module("uvicorn.main")
        package = importlib.import_module("uvicorn")
    except Exception:  # a broken installation: the hook module's own import will say so
        return []

    def run(app: Any, *args: Any, **kwargs: Any) -> None:
        started.append(app)

    saved: list[tuple[Any, Any]] = [(m, getattr(m, "run", None)) for m in (package, main)]
    saved = [(m, was) for m, was in saved if callable(was)]
    for module, _ in saved:
        module.run = run
    return saved


def call_hook(target: HookTarget, request: dict[str, Any]) -> HookAnswer:
    """Call the hook with metacontroller's request; its answer as metacontroller decodes it."""
    if target.shape == "function":
        value = target.target(json.loads(json.dumps(request)))  # the hook gets its own copy, as over HTTP
        if isinstance(value, (bytes, str)):
            value = _decode(value, target)
        if not isinstance(value, dict):
            raise HookError(f"{target.hook} hook {target.entrypoint!r} returned {type(value).__name__}, "
                            "not a dict (the JSON response metacontroller expects)")
        return HookAnswer(json.loads(json.dumps(value)))
    data = json.dumps(request).encode("utf-8")
    try:
        if target.shape == "wsgi":
            status, headers, body = wsgi_post(target.target, target.path, data)
        elif target.shape == "asgi":
            status, headers, body = asgi_post(target.target, target.path, data)
        else:
            status, headers, body = _post(target.target, target.path, data, target.server or _Server())
    except AppError as exc:
        raise HookError(f"{target.hook} hook {target.entrypoint!r}: {exc}") from None
    if status == 429:  # metacontroller's TooManyRequestError: requeue after Retry-After seconds
        try:
            after = float(headers.get("retry-after", "") or 0)
        except ValueError:
            after = 0.0
        return HookAnswer({}, retry_after=max(after, 1.0))
    if status != 200:
        raise HookError(f"{target.hook} hook {target.entrypoint!r} answered HTTP {status}: "
                        f"{body.decode('utf-8', 'replace')[:500]}")
    value = _decode(body, target)
    if not isinstance(value, dict):
        raise HookError(f"{target.hook} hook {target.entrypoint!r} answered {type(value).__name__} JSON, not an object")
    return HookAnswer(value)


def _decode(body: bytes | str, target: HookTarget) -> Any:
    try:
        return json.loads(body)
    except ValueError as exc:
        raise HookError(f"{target.hook} hook {target.entrypoint!r} answered a body that is not JSON: {exc}") from None


class _Socket:
    """The connection a handler reads its request from and writes its answer to, in memory."""

    def __init__(self, incoming: bytes) -> None:
        self.incoming = incoming
        self.sent = bytearray()

    def makefile(self, mode: str = "r", buffering: int | None = None, **_: Any) -> Any:
        return io.BytesIO(self.incoming) if "r" in mode else _Writer(self)

    def sendall(self, data: bytes) -> None:
        self.sent.extend(data)

    def settimeout(self, value: float | None) -> None:
        return None

    def setsockopt(self, *args: Any) -> None:
        return None

    def getpeername(self) -> tuple[str, int]:
        return ("127.0.0.1", 0)

    def close(self) -> None:
        return None


class _Writer(io.RawIOBase):
    def __init__(self, sock: _Socket) -> None:
        self.sock = sock

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.sock.sendall(bytes(data))
        return len(data)


class _Server:
    """What a handler may look at on its server."""

    server_name = "localhost"
    server_port = 80
    server_address = ("127.0.0.1", 80)


def _post(handler: Callable[..., Any], path: str, body: bytes, server: Any) -> tuple[int, dict[str, str], bytes]:
    head = (f"POST {path} HTTP/1.1\r\nHost: hook\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode("ascii")
    sock = _Socket(head + body)
    handler(sock, ("127.0.0.1", 0), server)
    if not sock.sent:
        raise HookError("the hook handler sent no response")
    answer = http.client.HTTPResponse(_Socket(bytes(sock.sent)))  # type: ignore[arg-type]
    try:
        answer.begin()
        data = answer.read()
    except (http.client.HTTPException, ValueError) as exc:
        raise HookError(f"the hook handler's response is not valid HTTP: {exc!r}") from None
    return answer.status, {k.lower(): v for k, v in answer.getheaders()}, data


def is_handler(value: Any) -> bool:
    """Whether ``value`` is a hook server's request handler class."""
    return isinstance(value, type) and issubclass(value, http.server.BaseHTTPRequestHandler)
