"""Calling a metacontroller hook in-process: a ``function(dict) -> dict`` or the hook server's handler.

Why both shapes: metacontroller hooks in Python are usually a small ``http.server`` program — a
``BaseHTTPRequestHandler`` subclass whose ``do_POST`` reads the JSON request and writes the JSON
response, started with ``HTTPServer(...).serve_forever()`` at the module's top level.  kamera runs
that handler unmodified: the request is fed to it as the bytes metacontroller would send (a POST to
the webhook's path with a JSON body) over an in-memory socket, and its answer is parsed as
metacontroller's HTTP client would.  A plain function is the same contract without the HTTP.

Importing such a module must not start a server: while hook modules are imported, socketserver's
``server_bind``/``server_activate`` do nothing (no socket is bound) and ``serve_forever`` returns at
once, as if the server had been shut down, so the rest of the module still loads.
"""

from __future__ import annotations

import contextlib
import http.client
import http.server
import io
import json
import socketserver
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["HookAnswer", "HookError", "HookTarget", "call_hook", "neutered_servers"]


class HookError(Exception):
    """A hook answered something metacontroller cannot use (a finding, like a reconcile's exception)."""


@dataclass(frozen=True, slots=True)
class HookTarget:
    """One manifest hook mapped to Python: what to call and how."""

    hook: str
    entrypoint: str
    shape: Literal["function", "handler"]
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
    base = socketserver.BaseServer
    tcp = socketserver.TCPServer
    saved = (base.serve_forever, tcp.server_bind, tcp.server_activate)
    started: list[Any] = []

    def serve_forever(self: Any, poll_interval: float = 0.5) -> None:
        if self not in started:
            started.append(self)

    def nothing(self: Any) -> None:
        return None

    base.serve_forever = serve_forever  # type: ignore[method-assign]
    tcp.server_bind = nothing  # type: ignore[method-assign]
    tcp.server_activate = nothing  # type: ignore[method-assign]
    try:
        yield started
    finally:
        base.serve_forever, tcp.server_bind, tcp.server_activate = saved  # type: ignore[method-assign]


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
    status, headers, body = _post(target.target, target.path, json.dumps(request).encode("utf-8"),
                                  target.server or _Server())
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
