"""The in-process transport: every request of the official ``kubernetes`` client lands in the simulator.

Why the pool manager: every request of every generation of the client (33.x legacy, 37.x modern,
typed APIs, ``Watch``, ``DynamicClient``, ``_preload_content=False``) ends in
``api_client.rest_client.pool_manager.request(...)``.  The signatures above it (``call_api``,
``RESTClientObject.request``) changed between versions; this one did not.  Answering there with a
*real* ``urllib3.HTTPResponse`` leaves all client logic (content types, JSON encoding, exception
mapping, deserialization, watch line splitting) to the real code, so a controller sees exactly what
it would see against a cluster.

``Containment`` is the safety guarantee around it: while active, no request can leave the process,
whatever the kubeconfig or the in-cluster environment say.  See ``docs/transport.md``.
"""

from __future__ import annotations

import contextlib
import functools
import http
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import threading
import uuid
from collections.abc import Callable, Generator, Iterator, Mapping
from typing import Any, Protocol
from urllib.parse import parse_qsl, urlsplit

import urllib3

from kamera_cli.errors import KameraError

__all__ = [
    "Containment",
    "HttpServer",
    "NetworkBlocked",
    "PoolManagerStandIn",
    "WatchBlocked",
    "bound_server",
    "canned_pool_manager",
]

# Methods whose ``fields`` urllib3 encodes into the URL (legacy clients pass GET query params there).
_URL_FIELD_METHODS = frozenset({"GET", "HEAD", "DELETE", "OPTIONS"})
_JSON_HEADERS = {"Content-Type": "application/json"}
_REASONS = {s.value: s.phrase for s in http.HTTPStatus}
_TRUTHY = frozenset({"true", "True", "1"})


class HttpResponseLike(Protocol):
    """What ``ApiServer.handle`` returns (``apiserver.server.HttpResponse``)."""

    @property
    def status(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    @property
    def body(self) -> bytes: ...

    @property
    def stream(self) -> Iterator[bytes] | None: ...


class HttpServer(Protocol):
    """The HTTP surface the transport calls: ``ApiServer`` or anything shaped like it."""

    def handle(
        self,
        method: str,
        path: str,
        query: list[tuple[str, str]],
        headers: Mapping[str, str],
        body: bytes | None,
    ) -> HttpResponseLike: ...


class NetworkBlocked(KameraError, ConnectionError):
    """A real network connection was attempted while a simulation was contained.

    It is a ``ConnectionError`` so that code expecting network failures handles it as one; it is a
    ``KameraError`` so kamera can tell it apart from the user's own errors.  ``blocked_address``
    lets the adapters report it as the controller's network attempt (a finding), like a socket
    the fence refused.
    """

    controller_fault = True

    def __init__(self, message: str, address: str = "") -> None:
        super().__init__(message)
        self.blocked_address = address


class WatchBlocked(BaseException):
    """A watch without ``timeoutSeconds`` would block forever: nothing is left to deliver.

    Against a real cluster, ``Watch.stream`` without ``timeout_seconds`` reconnects from the last
    resourceVersion and then waits for the next change, which in a simulation between two steps
    never comes.  The transport counts consecutive empty, untimed reconnects of the same watch and,
    past the limit, raises this instead of serving another empty stream.  It derives from
    ``BaseException`` so that a controller's ``except Exception`` retry loop cannot swallow it; the
    runner reports it as a reconcile that blocks on an idle watch.
    """

    #: the controller's doing, not kamera's: the adapters report it as a controller error
    controller_fault = True

    def __init__(self, path: str, empty_streams: int) -> None:
        self.path = path
        self.empty_streams = empty_streams
        super().__init__(
            f"watch on {path} has nothing more to deliver and no timeoutSeconds: after {empty_streams} empty "
            "stream(s) the reconcile would block forever (pass timeout_seconds= to Watch.stream)"
        )


# --------------------------------------------------------------------------------------------------
# Raw streams urllib3.HTTPResponse reads from


class _BodyRaw:
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


class _StreamRaw:
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
        if not isinstance(raw, _StreamRaw):
            yield from super().stream(amt, decode_content)
            return
        while True:
            line = raw.read()
            if not line:
                return
            yield line

    def read(self, amt: int | None = None, *args: Any, **kwargs: Any) -> bytes:
        raw: Any = self._fp
        if amt is None and isinstance(raw, _StreamRaw):
            data = b"".join(iter(raw.read, b""))
            if kwargs.get("cache_content"):
                self._body = data
            return data
        result: bytes = super().read(amt, *args, **kwargs)
        return result


def _response(
    status: int,
    headers: Mapping[str, str],
    raw: _BodyRaw | _StreamRaw,
    preload: bool,
) -> urllib3.HTTPResponse:
    cls = _WatchResponse if isinstance(raw, _StreamRaw) else urllib3.HTTPResponse
    body: Any = raw
    return cls(
        body=body,
        headers=headers,
        status=status,
        reason=_REASONS.get(status, ""),
        preload_content=preload,
        decode_content=False,
    )


def _status_body(code: int, reason: str, message: str) -> bytes:
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


def _body_bytes(body: Any) -> bytes | None:
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
    return json.dumps(body).encode()


# --------------------------------------------------------------------------------------------------
# The pool manager stand-in


class PoolManagerStandIn:
    """Takes the place of ``urllib3.PoolManager`` in a ``RESTClientObject``; never opens a socket.

    ``owner`` pins it to one ``Containment``; without an owner it answers from whichever
    containment is active when the request is made (so clients created once, e.g. at module import,
    follow the simulation that is running now), and with none active it answers 503.
    """

    def __init__(self, owner: Containment | None = None) -> None:
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
        owner = self._owner if self._owner is not None else _current()
        preload = bool(urlopen_kw.get("preload_content", True))
        body = _body_bytes(urlopen_kw.get("body"))
        if owner is None:
            msg = f"no kamera simulation is bound: {method} {path} was not sent anywhere"
            return _response(503, _JSON_HEADERS, _BodyRaw(_status_body(503, "ServiceUnavailable", msg)), preload)
        return owner._dispatch(method, path, query, headers or {}, body, preload)

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
            _body_bytes(urlopen_kw.get("body"))
            return _response(status, _JSON_HEADERS, _BodyRaw(body), bool(urlopen_kw.get("preload_content", True)))

    return _Canned()


# --------------------------------------------------------------------------------------------------
# Containment

_lock = threading.RLock()
_active: list[Containment] = []  # innermost last
_patches: _Patches | None = None


def _current() -> Containment | None:
    return _active[-1] if _active else None


def bound_server() -> HttpServer | None:
    """The server the innermost active containment answers from (the running step's), or None."""
    owner = _current()
    return owner.server if owner is not None else None


class Containment:
    """While active, every client of the process talks to ``server`` and nothing leaves the process.

    Re-entrant and reference-counted: entering it again (or entering another containment) nests;
    the process-wide patches are removed, and every replaced value restored, when the last one exits.
    """

    def __init__(self, server: HttpServer | None = None, *, idle_watch_limit: int = 1) -> None:
        if idle_watch_limit < 1:
            raise ValueError("idle_watch_limit must be >= 1")
        self.host = f"http://kamera-{uuid.uuid4().hex[:16]}.invalid"
        self.idle_watch_limit = idle_watch_limit
        #: Exceptions the bound server raised (a kamera bug): answered 500, kept for the runner.
        self.server_errors: list[BaseException] = []
        self._server: HttpServer | None = server
        self._depth = 0
        self._idle: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[int, object]] = {}
        self._cache_dir: str | None = None
        self._cache_registry: object = getattr(server, "registry", None)  # what the discovery cache describes

    # -- binding ---------------------------------------------------------------------------------
    @property
    def server(self) -> HttpServer | None:
        return self._server

    @server.setter
    def server(self, server: HttpServer | None) -> None:
        self.bind(server)

    def bind(self, server: HttpServer | None) -> None:
        """Route requests to ``server`` (``None``: answer 503).  Resets idle-watch bookkeeping.

        Binding a server with another registry (other CRDs) empties the DynamicClient discovery cache.
        """
        if server is not None:
            registry = getattr(server, "registry", None)
            if registry is not self._cache_registry:
                if self._cache_dir is not None:
                    _clear_discovery_cache(self._cache_dir)
                self._cache_registry = registry
        self._server = server
        self._idle.clear()

    @property
    def active(self) -> bool:
        return self._depth > 0

    def configuration(self) -> Any:
        """A fresh ``kubernetes.client.Configuration`` pointing at this simulation's dummy host."""
        from kubernetes import client

        cfg = client.Configuration(host=self.host)
        cfg.proxy = None
        return cfg

    def api_client(self) -> Any:
        """An ``ApiClient`` whose requests go to this containment's server, active or not."""
        from kubernetes import client

        api: Any = client.ApiClient(configuration=self.configuration())
        api.rest_client.pool_manager = PoolManagerStandIn(self)
        return api

    # -- context manager -------------------------------------------------------------------------
    def __enter__(self) -> Containment:
        global _patches
        with _lock:
            if self._depth == 0:
                if _patches is None:
                    _patches = _Patches()
                    _patches.install()
                else:
                    _patches.refs += 1
                _active.append(self)
                self._cache_dir = tempfile.mkdtemp(prefix="kamera-discovery-")
                _patches.push_default(self)
            self._depth += 1
        return self

    def __exit__(self, *exc: object) -> None:
        global _patches
        with _lock:
            if self._depth == 0:
                return
            self._depth -= 1
            if self._depth:
                return
            assert _patches is not None
            _patches.pop_default(self)
            _active.remove(self)
            _patches.refs -= 1
            if _patches.refs == 0:
                _patches.uninstall()
                _patches = None
            if self._cache_dir is not None:
                shutil.rmtree(self._cache_dir, ignore_errors=True)
                self._cache_dir = None

    # -- request path ----------------------------------------------------------------------------
    def _dispatch(
        self,
        method: str,
        path: str,
        query: list[tuple[str, str]],
        headers: Mapping[str, str],
        body: bytes | None,
        preload: bool,
    ) -> urllib3.HTTPResponse:
        server = self._server
        if server is None:
            msg = f"no kamera simulation is bound: {method} {path} was not sent anywhere"
            return _response(503, _JSON_HEADERS, _BodyRaw(_status_body(503, "ServiceUnavailable", msg)), preload)
        watch_key = None
        if method == "GET" and any(k == "watch" and v in _TRUTHY for k, v in query):
            if not any(k == "timeoutSeconds" for k, _ in query):
                watch_key = (path, tuple(sorted(kv for kv in query if kv[0] != "resourceVersion")))
                self._check_idle(server, watch_key, path)
        elif self._idle:
            self._idle.clear()
        try:
            resp = server.handle(method, path, query, headers, body)
        except Exception as err:  # a kamera bug: never let the controller's error handling see it
            self.server_errors.append(err)
            msg = f"kamera's simulated API server failed on {method} {path}: {type(err).__name__}: {err}"
            return _response(500, _JSON_HEADERS, _BodyRaw(_status_body(500, "InternalError", msg)), preload)
        out_headers: Mapping[str, str] = resp.headers or _JSON_HEADERS
        if "Content-Type" not in out_headers and "content-type" not in out_headers:
            out_headers = {**out_headers, **_JSON_HEADERS}
        stream = resp.stream
        if stream is None:
            return _response(resp.status, out_headers, _BodyRaw(resp.body), preload)
        on_end = None if watch_key is None else self._idle_recorder(server, watch_key)
        return _response(resp.status, out_headers, _StreamRaw(stream, on_end), preload)

    def _state_token(self, server: HttpServer) -> object:
        snapshot = getattr(server, "snapshot", None)
        return getattr(snapshot, "resource_version", snapshot)

    def _check_idle(self, server: HttpServer, key: tuple[str, tuple[tuple[str, str], ...]], path: str) -> None:
        seen = self._idle.get(key)
        if seen is None:
            return
        count, token = seen
        if token != self._state_token(server):
            del self._idle[key]
            return
        if count >= self.idle_watch_limit:
            del self._idle[key]
            raise WatchBlocked(path, count)

    def _idle_recorder(
        self, server: HttpServer, key: tuple[str, tuple[tuple[str, str], ...]]
    ) -> Callable[[int], None]:
        def record(events: int) -> None:
            # Consecutive streams that ended without delivering anything; a delivering one resets it.
            count = 0 if events else self._idle.get(key, (0, None))[0] + 1
            self._idle[key] = (count, self._state_token(server))

        return record


def _clear_discovery_cache(directory: str) -> None:
    with contextlib.suppress(OSError):
        for name in os.listdir(directory):
            if name.startswith("osrcp-"):
                with contextlib.suppress(OSError):
                    os.remove(os.path.join(directory, name))


# --------------------------------------------------------------------------------------------------
# The process-wide patches (installed once for all nested containments)


class _FakeKubeConfigLoader:
    """Stands in for ``KubeConfigLoader``: whatever the file says, the cluster is the simulation."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.current_context = {"name": "kamera", "context": {"cluster": "kamera", "user": "kamera"}}

    def list_contexts(self) -> list[dict[str, Any]]:
        return [self.current_context]

    def load_and_set(self, client_configuration: Any = None) -> None:
        _fill_configuration(client_configuration)


class _FakeInClusterConfigLoader:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def load_and_set(self, client_configuration: Any = None) -> None:
        from kubernetes import client

        if client_configuration is None:
            cfg = type.__call__(client.Configuration)
            _fill_configuration(cfg)
            client.Configuration.set_default(cfg)
        else:
            _fill_configuration(client_configuration)


def _fill_configuration(cfg: Any) -> None:
    cfg.host = _current_host()
    cfg.proxy = None


def _fake_get_loader(*args: Any, **kwargs: Any) -> _FakeKubeConfigLoader:
    return _FakeKubeConfigLoader()


def _fake_load_config(**kwargs: Any) -> None:
    from kubernetes.config import kube_config

    kwargs.pop("kube_config_path", None)
    kwargs.pop("try_refresh_token", None)
    load: Any = kube_config.load_kube_config
    load(**kwargs)


def _current_host() -> str:
    owner = _current()
    return owner.host if owner is not None else "http://kamera-unbound.invalid"


def _send(method: str, url: str, headers: Mapping[str, str], body: bytes | None) -> urllib3.HTTPResponse:
    """One request of another client (httpx, requests) through the same path as the official client's."""
    return PoolManagerStandIn().request(method, url, headers=headers, body=body, preload_content=False)


def _network_blocked(address: str) -> NetworkBlocked:
    return NetworkBlocked("kamera blocked a real network connection while a simulation is running", address)


def _blocked_connection(address: Any = None, *args: Any, **kwargs: Any) -> Any:
    where = ":".join(str(part) for part in address) if isinstance(address, tuple) else str(address or "")
    raise NetworkBlocked("kamera blocked a real network connection while a simulation is running", where)


def _blocked_websocket(*args: Any, **kwargs: Any) -> Any:
    raise NetworkBlocked(
        "kubernetes.stream (exec, attach, port-forward over websockets) is not simulated by kamera"
    )


def _blocked_aio_session(*args: Any, **kwargs: Any) -> Any:
    raise NetworkBlocked("kubernetes.aio (the asyncio client) is not simulated by kamera; use the sync client")


class _Patches:
    """Everything replaced process-wide, with the originals to put back."""

    def __init__(self) -> None:
        self.refs = 1
        self._saved: list[tuple[Any, str, Any]] = []
        self._defaults: list[tuple[Containment, Any, Any]] = []

    def _set(self, target: Any, name: str, value: Any) -> None:
        self._saved.append((target, name, target.__dict__.get(name, _MISSING) if isinstance(target, type)
                            else getattr(target, name, _MISSING)))
        setattr(target, name, value)

    def install(self) -> None:
        import urllib3.connectionpool
        import urllib3.util.connection
        from kubernetes import client, config
        from kubernetes.client import rest
        from kubernetes.config import incluster_config, kube_config
        from kubernetes.dynamic import discovery

        original_init = rest.RESTClientObject.__init__

        def contained_init(self: Any, configuration: Any, *args: Any, **kwargs: Any) -> None:
            try:
                original_init(self, configuration, *args, **kwargs)
            except Exception:
                # e.g. a SOCKS proxy without PySocks: the real pool manager is never used anyway.
                self.configuration = configuration
            real = getattr(self, "pool_manager", None)
            if real is not None and not isinstance(real, PoolManagerStandIn):
                with contextlib.suppress(Exception):
                    real.clear()
            self.pool_manager = PoolManagerStandIn()

        self._set(rest.RESTClientObject, "__init__", contained_init)

        original_discoverer_init: Any = discovery.Discoverer.__init__

        def contained_discoverer_init(self: Any, client_: Any, cache_file: Any) -> None:
            owner = _current()
            if cache_file is None and owner is not None and owner._cache_dir is not None:
                import hashlib

                host = str(client_.configuration.host).encode()
                cache_file = os.path.join(owner._cache_dir, f"osrcp-{hashlib.md5(host).hexdigest()}.json")
            original_discoverer_init(self, client_, cache_file)

        self._set(discovery.Discoverer, "__init__", contained_discoverer_init)

        # kubeconfig / in-cluster loading: patched at the layer the public functions call at run time,
        # so references taken before containment (``from kubernetes.config import load_kube_config``)
        # are covered as well.
        self._set(kube_config, "_get_kube_config_loader", _fake_get_loader)
        self._set(kube_config, "KubeConfigLoader", _FakeKubeConfigLoader)
        self._set(incluster_config, "InClusterConfigLoader", _FakeInClusterConfigLoader)
        self._set(config, "load_config", _fake_load_config)

        # Defence in depth: no urllib3 connection pool can be created and no socket opened through
        # urllib3 while contained (the stand-in never needs either).
        def no_pool(self: Any, host: Any = "", port: Any = None, *args: Any, **kwargs: Any) -> None:
            address = f"{host}:{port}" if port is not None else str(host)
            raise NetworkBlocked("kamera blocked a real network connection while a simulation is running", address)

        self._set(urllib3.connectionpool.HTTPConnectionPool, "__init__", no_pool)
        self._set(urllib3.util.connection, "create_connection", _blocked_connection)
        # Not simulated, so refused rather than let through: exec/attach/port-forward (websockets) and,
        # when the application has loaded it, the asyncio client's aiohttp session.
        with contextlib.suppress(ImportError):
            from kubernetes.stream import ws_client

            self._set(ws_client, "create_websocket", _blocked_websocket)
        # aiohttp (kopf's own client, kubernetes_asyncio): answered by the bound server in-process
        if importlib.util.find_spec("aiohttp") is not None:
            import aiohttp

            from kamera_cli.apiserver.transports.aiohttp import route_request

            self._set(aiohttp.ClientSession, "_request", route_request(_current, _network_blocked))
        if importlib.util.find_spec("kubernetes_asyncio") is not None:
            from kamera_cli.apiserver.transports import kubernetes_asyncio

            kubernetes_asyncio.patch(self._set, _current)
        from kamera_cli.apiserver.transports import install_other_clients

        install_other_clients(self._set, _current_host, _send, _network_blocked)
        aio_rest = sys.modules.get("kubernetes.aio.client.rest")
        if aio_rest is not None and hasattr(aio_rest, "RESTClientObject"):
            self._set(aio_rest.RESTClientObject, "_create_pool_manager", _blocked_aio_session)

        self._cfg_cls = client.Configuration
        self._api_cls = client.ApiClient

    def push_default(self, owner: Containment) -> None:
        cfg_cls, api_cls = self._cfg_cls, self._api_cls
        self._defaults.append((owner, cfg_cls.__dict__.get("_default"), api_cls.__dict__.get("_default", _MISSING)))
        cfg_cls._default = owner.configuration()
        if "_default" in api_cls.__dict__:
            api_cls._default = None

    def pop_default(self, owner: Containment) -> None:
        for i in range(len(self._defaults) - 1, -1, -1):
            if self._defaults[i][0] is owner:
                _, cfg_default, api_default = self._defaults.pop(i)
                if i == len(self._defaults):  # the innermost: put back what it replaced
                    self._cfg_cls._default = cfg_default
                    if api_default is not _MISSING:
                        self._api_cls._default = api_default
                else:  # exited out of order: the one above inherits what this one replaced
                    above = self._defaults[i]
                    self._defaults[i] = (above[0], cfg_default, api_default)
                return

    def uninstall(self) -> None:
        for target, name, value in reversed(self._saved):
            if value is _MISSING:
                with contextlib.suppress(AttributeError):
                    delattr(target, name)
            else:
                setattr(target, name, value)
        self._saved.clear()


class _Missing:
    pass


_MISSING: Any = _Missing()

