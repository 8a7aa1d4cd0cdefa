"""Fixtures: an ApiServer over a fresh snapshot, and an official ApiClient wired to it.

The pool-manager shim below is TEMPORARY: it stands in for ``kamera_cli.apiserver.transport``
(owned by another helper) so these tests go through the real client today.  When the transport
module exists, ``api_client`` uses its ``Containment`` instead.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
import urllib3

from kamera_cli.apiserver import ApiServer, Registry, Snapshot

NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")


class Clock:
    """A virtual clock the tests can advance."""

    def __init__(self) -> None:
        self.t = 0

    def __call__(self) -> int:
        return self.t


def make_server(registry: Registry | None = None, clock: Clock | None = None) -> ApiServer:
    server = ApiServer(registry or Registry.builtin(), Snapshot.empty(), now=clock or Clock())
    for ns in NAMESPACES:
        server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    server.journal.clear()
    return server


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def server(clock: Clock) -> ApiServer:
    return make_server(clock=clock)


class _LineStream(io.RawIOBase):
    """A raw body whose read() returns the next watch line and which reports closed at EOF."""

    def __init__(self, lines: Iterator[bytes]) -> None:
        self._lines = lines
        self._done = False

    def readable(self) -> bool:
        return True

    def read(self, amt: int | None = -1) -> bytes:
        if self._done:
            return b""
        try:
            return next(self._lines)
        except StopIteration:
            self._done = True
            return b""

    def readinto(self, b: Any) -> int:
        data = self.read()
        b[: len(data)] = data
        return len(data)

    def isclosed(self) -> bool:
        return self._done


class _ShimPoolManager:
    """TEMPORARY stand-in for urllib3.PoolManager (replaced by transport.Containment when merged)."""

    def __init__(self, server: ApiServer) -> None:
        self.server = server

    def clear(self) -> None:
        pass

    def request(self, method: str, url: str, fields: Any = None, body: Any = None, headers: Any = None,
                preload_content: bool = True, **_: Any) -> urllib3.HTTPResponse:
        parts = urlsplit(url)
        query = parse_qsl(parts.query, keep_blank_values=True)
        if fields and method in ("GET", "DELETE", "HEAD"):
            query += [(str(k), str(v)) for k, v in (fields.items() if isinstance(fields, dict) else fields)]
        raw = body.encode() if isinstance(body, str) else body
        resp = self.server.handle(method, parts.path, query, dict(headers or {}), raw)
        source: Any = _LineStream(resp.stream) if resp.stream is not None else io.BytesIO(resp.body)
        return urllib3.HTTPResponse(body=source, headers=dict(resp.headers), status=resp.status,
                                    preload_content=preload_content, decode_content=False)


@pytest.fixture
def api_client(server: ApiServer) -> Iterator[Any]:
    try:
        from kamera_cli.apiserver.transport import Containment  # type: ignore[attr-defined]
    except ImportError:
        Containment = None  # noqa: N806
    if Containment is not None:
        containment = Containment()
        with containment:
            containment.server = server
            yield containment.api_client()
        return
    from kubernetes import client

    config = client.Configuration()
    config.host = "http://kamera.invalid"
    api = client.ApiClient(config)
    api.rest_client.pool_manager = _ShimPoolManager(server)
    yield api
