"""Servers a controller starts bind nothing and serve nothing (``idle_servers``).

Why: controllers are often processes that also serve something — a metacontroller hook server, a
health or metrics endpoint (``http.server``, ``wsgiref``, ``prometheus_client.start_http_server``)
on a thread of its own. Under kamera nothing can reach them (the network is fenced), and a real
``serve_forever`` would block its thread on a socket kamera does not control. While this context is
active, ``socketserver`` servers (which ``http.server`` and ``wsgiref`` build on) bind and listen on
nothing, and ``serve_forever`` returns at once as if the server had been shut down (so a later
``shutdown()`` returns too); the servers so started are collected for whoever needs them.
"""

from __future__ import annotations

import contextlib
import socketserver
from collections.abc import Iterator
from typing import Any

__all__ = ["idle_servers"]


@contextlib.contextmanager
def idle_servers() -> Iterator[list[Any]]:
    """For the block: servers bind nothing and ``serve_forever`` returns; yields the servers started."""
    base = socketserver.BaseServer
    tcp = socketserver.TCPServer
    saved = (base.serve_forever, tcp.server_bind, tcp.server_activate)
    started: list[Any] = []

    def serve_forever(self: Any, poll_interval: float = 0.5) -> None:
        if self not in started:
            started.append(self)
        done = getattr(self, "_BaseServer__is_shut_down", None)
        if done is not None:
            done.set()  # as after a real serve_forever: shutdown() must not wait for it

    def nothing(self: Any) -> None:
        return None

    base.serve_forever = serve_forever  # type: ignore[method-assign]
    tcp.server_bind = nothing  # type: ignore[method-assign]
    tcp.server_activate = nothing  # type: ignore[method-assign]
    try:
        yield started
    finally:
        base.serve_forever, tcp.server_bind, tcp.server_activate = saved  # type: ignore[method-assign]
