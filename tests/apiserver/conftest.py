"""Fixtures: an ApiServer over a fresh snapshot, and an official ApiClient wired to it.

The pool-manager shim below is TEMPORARY: it stands in for ``kamera_cli.apiserver.transports.containment``
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
    yield from client_for(server)


def client_for(server: ApiServer) -> Iterator[Any]:
    try:
        from kamera_cli.apiserver.transports.containment import Containment  # type: ignore[attr-defined]
    except ImportError:
        Containment = None
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


@pytest.fixture
def crd_server(clock: Clock) -> ApiServer:
    from .crds import GADGET, WIDGET

    return make_server(Registry.builtin().with_crds([WIDGET, GADGET]), clock)


@pytest.fixture
def crd_client(crd_server: ApiServer) -> Iterator[Any]:
    yield from client_for(crd_server)


@pytest.fixture(scope="module")
def fake_patching_module() -> Iterator[Any]:
    """``fake_patching`` for a whole module (Hypothesis tests cannot use function-scoped fixtures)."""
    mp = pytest.MonkeyPatch()
    yield fake_patching.__wrapped__(mp)  # type: ignore[attr-defined]
    mp.undo()


@pytest.fixture
def fake_patching(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The real patching module when it exists; otherwise a minimal JSON/merge-patch stand-in.

    The stand-in only exists so the server's patch plumbing (preconditions, status split, errors)
    is testable before the patching module is merged; it is not a patch implementation under test.
    """
    import sys
    import types

    from kamera_cli.apiserver.server import base as server_base

    try:
        from kamera_cli.apiserver.patch import functions as patching  # type: ignore[attr-defined]
    except ImportError:
        import jsonpatch

        patching = types.ModuleType("kamera_cli.apiserver.patch.functions")

        class PatchError(Exception):
            def __init__(self, status: int, reason: str, message: str, causes: Any = None) -> None:
                super().__init__(message)
                self.status, self.reason, self.message, self.causes = status, reason, message, causes

        def merge(obj: Any, patch: Any) -> Any:
            if not isinstance(patch, dict):
                return patch
            out = dict(obj) if isinstance(obj, dict) else {}
            for k, v in patch.items():
                if v is None:
                    out.pop(k, None)
                else:
                    out[k] = merge(out.get(k), v)
            return out

        def json_patch(obj: Any, ops: Any) -> Any:
            try:
                return jsonpatch.apply_patch(obj, ops)
            except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
                raise PatchError(422, "Invalid", str(exc)) from None

        patching.PatchError = PatchError  # type: ignore[attr-defined]
        patching.json_patch = json_patch  # type: ignore[attr-defined]
        patching.merge_patch = merge  # type: ignore[attr-defined]
        patching.strategic_merge_patch = lambda obj, p, fields: merge(obj, p)  # type: ignore[attr-defined]
        patching.builtin_field_lookup = lambda d, r: (lambda path: None)  # type: ignore[attr-defined]
        patching.openapi_field_lookup = lambda s: (lambda path: None)  # type: ignore[attr-defined]

        def ssa(live: Any, applied: Any, **kw: Any) -> Any:
            return merge(live or {}, applied)

        patching.server_side_apply = ssa  # type: ignore[attr-defined]
        patching.update_managed_fields = lambda before, after, **kw: [  # type: ignore[attr-defined]
            {"manager": kw["manager"], "operation": kw["operation"], "apiVersion": kw["api_version"],
             "time": kw["now"], "fieldsType": "FieldsV1", "fieldsV1": {}}]
        monkeypatch.setitem(sys.modules, "kamera_cli.apiserver.patch.functions", patching)
    monkeypatch.setattr(server_base, "_PATCHING", [patching])
    return patching
