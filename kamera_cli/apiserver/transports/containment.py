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
import errno
import importlib.util
import os
import shutil
import sys
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

import urllib3

from kamera_cli.apiserver.transports import kubeconfig, services
from kamera_cli.apiserver.transports.urllib3 import (
    JSON_HEADERS,
    TRUTHY,
    BodyRaw,
    PoolManagerStandIn,
    StreamRaw,
    bind,
    canned_pool_manager,
    http_response,
    status_body,
)
from kamera_cli.errors import KameraError

__all__ = [
    "Containment",
    "HttpServer",
    "NetworkBlocked",
    "PoolManagerStandIn",
    "WatchBlocked",
    "bound_server",
    "canned_pool_manager",
    "observe_refusals",
]


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


class NetworkBlocked(KameraError, ConnectionRefusedError):
    """A real network connection was attempted while a simulation was contained.

    It is what a refused TCP connect raises (``ConnectionRefusedError``, errno ``ECONNREFUSED``), and it
    is raised where the client opens its connection, so each client wraps it as it wraps a refused
    connect on a machine where nothing listens (requests' ``ConnectionError``, httpx's ``ConnectError``,
    aiohttp's ``ClientConnectorError``): code that handles those takes the same path as on a cluster.
    It is a ``KameraError`` so kamera can tell it apart from the user's own errors.  ``blocked_address``
    lets the adapters report it as the controller's network attempt (a finding), like a socket the
    fence refused; the observers (``observe_refusals``) record it even when the controller catches it.
    """

    controller_fault = True

    def __init__(self, message: str, address: str = "") -> None:
        super().__init__(errno.ECONNREFUSED, message)
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
# Containment

_lock = threading.RLock()
_active: list[Containment] = []  # innermost last
_patches: _Patches | None = None


def _current() -> Containment | None:
    return _active[-1] if _active else None


bind(_current)


def _current_host() -> str:
    owner = _current()
    return owner.host if owner is not None else "http://kamera-unbound.invalid"


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
    def dispatch(
        self,
        method: str,
        path: str,
        query: list[tuple[str, str]],
        headers: Mapping[str, str],
        body: bytes | None,
        preload: bool,
    ) -> urllib3.HTTPResponse:
        """One request of the official client (``urllib3.Dispatcher``): answered by the bound server."""
        server = self._server
        if server is None:
            msg = f"no kamera simulation is bound: {method} {path} was not sent anywhere"
            return http_response(503, JSON_HEADERS, BodyRaw(status_body(503, "ServiceUnavailable", msg)), preload)
        watch_key = None
        if method == "GET" and any(k == "watch" and v in TRUTHY for k, v in query):
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
            return http_response(500, JSON_HEADERS, BodyRaw(status_body(500, "InternalError", msg)), preload)
        out_headers: Mapping[str, str] = resp.headers or JSON_HEADERS
        if "Content-Type" not in out_headers and "content-type" not in out_headers:
            out_headers = {**out_headers, **JSON_HEADERS}
        stream = resp.stream
        if stream is None:
            return http_response(resp.status, out_headers, BodyRaw(resp.body), preload)
        on_end = None if watch_key is None else self._idle_recorder(server, watch_key)
        return http_response(resp.status, out_headers, StreamRaw(stream, on_end), preload)

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


def _send(method: str, url: str, headers: Mapping[str, str], body: bytes | None) -> urllib3.HTTPResponse:
    """One request of another client (httpx, requests) through the same path as the official client's."""
    return PoolManagerStandIn().request(method, url, headers=headers, body=body, preload_content=False)


#: where a Kubernetes client goes when its configuration was never loaded: ``localhost`` with no port
#: (the official and asyncio clients' ``http://localhost``), or 80, 443, 8080 (kubectl's old insecure
#: default) or 6443; a client never picks another port by itself
_CLIENT_DEFAULT_PORTS = (None, 80, 443, 6443, 8080)


def _host_port(netloc: str) -> tuple[str, int | None]:
    """``host[:port]`` (IPv6 in brackets, or bare as a socket address gives it) to (host, port)."""
    netloc = netloc.strip().lower()
    if netloc.startswith("["):
        host, _, rest = netloc[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    elif netloc.count(":") == 1:
        host, _, port_text = netloc.partition(":")
    else:
        host, port_text = netloc, ""
    return host, int(port_text) if port_text.isdigit() else None


def likely_cause(address: str) -> str:
    """Why a controller most likely addressed ``address`` (host[:port]) instead of the simulated cluster.

    A blocked call is nearly always one of three things; naming which saves the user reading the
    transport's traceback: a client whose configuration was never loaded (the official and asyncio
    clients default to ``localhost``), a cluster-internal name (a Service, the API server's in-cluster
    name), or a service outside the cluster.
    """
    netloc = "" if address.startswith("/") else address.rsplit("@", 1)[-1]
    host, port = _host_port(netloc)
    if host in ("localhost", "127.0.0.1", "::1") and port not in _CLIENT_DEFAULT_PORTS:
        return (f"a service on the local machine (port {port}), such as a URL left from local development: "
                "nothing listens there in the simulated cluster; stand in for it with a fake (spec.fakes)")
    if host in ("localhost", "127.0.0.1", "::1", ""):
        return ("the default host of a Kubernetes client whose configuration was never loaded: call "
                "config.load_kube_config() or load_incluster_config() (kamera routes both), or, in a kopf "
                "operator, configure the client in its @kopf.on.login handler, which kamera runs")
    if host.startswith("kubernetes.default") or host == "kubernetes":
        return ("the API server's in-cluster name: load the client's configuration with load_incluster_config() "
                "(kamera routes it) instead of building the URL by hand")
    if host.endswith((".svc", ".svc.cluster.local", ".cluster.local")):
        return "a Service inside the cluster, which kamera does not run: stand in for it with a fake (spec.fakes)"
    return "a service outside the simulated cluster: stand in for it with a fake (spec.fakes)"


#: told the address of every connection the containment refuses (``observe_refusals``)
_observers: list[Callable[[str], None]] = []


def observe_refusals(note: Callable[[str], None]) -> None:
    """Have ``note(address)`` told of every connection the containment refuses, before it raises.

    Why: the refusal surfaces as the client's own connection error, which the controller may well
    catch; the sandbox records each as the running step's network attempt, so it stays a finding.
    Installing the same observer twice is a no-op.
    """
    if note not in _observers:
        _observers.append(note)


def _network_blocked(address: str, *, attempted: bool = True) -> NetworkBlocked:
    """The refusal of a connection to ``address``, told to the observers first unless no connection was
    ``attempted`` (a URL without a host: the client would fail before connecting)."""
    for note in list(_observers) if attempted else ():
        note(address)
    where = f"a URL without a host ({address})" if address.startswith("/") else address or "an unknown address"
    return NetworkBlocked(f"kamera blocked a real network connection to {where} while a simulation is running; "
                          f"it is most likely {likely_cause(address)}", address)


def _misaddressed(url: str) -> NetworkBlocked:
    return _network_blocked(url, attempted=False)


def _blocked_connection(address: Any = None, *args: Any, **kwargs: Any) -> Any:
    where = ":".join(str(part) for part in address) if isinstance(address, tuple) else str(address or "")
    raise _network_blocked(where)


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
        import urllib3.util.connection
        from kubernetes import client
        from kubernetes.client import rest
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
        kubeconfig.patch(self._set, _current_host)

        # No socket is opened through urllib3 while contained: its connections are refused where urllib3
        # opens them, so urllib3 (and requests above it) wrap the refusal as they wrap a refused connect
        # (``NewConnectionError``, ``MaxRetryError``, requests' ``ConnectionError``). A pool for a host
        # that a fake by URL answers (``spec.fakes[].url``) answers from the fake, never from a connection.
        services.patch_urllib3(self._set)
        self._set(urllib3.util.connection, "create_connection", _blocked_connection)
        # Not simulated, so refused rather than let through: exec/attach/port-forward (websockets) and,
        # when the application has loaded it, the asyncio client's aiohttp session.
        with contextlib.suppress(ImportError):
            from kubernetes.stream import ws_client

            self._set(ws_client, "create_websocket", _blocked_websocket)
        # aiohttp (kopf's own client, kubernetes_asyncio): answered by the bound server in-process
        if importlib.util.find_spec("aiohttp") is not None:
            import aiohttp

            from kamera_cli.apiserver.transports.aiohttp import refuse_connections, route_request

            self._set(aiohttp.ClientSession, "_request", route_request(_current, aiohttp.ClientSession._request,
                                                                         _misaddressed))
            refuse_connections(self._set, _network_blocked)
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

