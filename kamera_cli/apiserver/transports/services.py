"""HTTP services faked by URL: which fake answers a request, and urllib3's side of answering it in-process.

Why process-wide, like the fakes of ``replace:``: a scenario's fakes are installed for the whole
scenario (``sim/bootstrap.py`` calls ``install_routes`` after the sandbox loaded them, and undoes it
when the scenario ends), and a controller's client may have been built at import, under no
particular containment.  Each client module asks ``find(url)`` at the point where it already tells
kamera's cluster host from the rest — aiohttp's ``ClientSession._request``, httpx's
``_transport_for_url`` — and urllib3 (``requests``, or urllib3 itself) at its connection pool: a
pool is let be created only for a host some pattern could match (no socket is opened by creating
one), and its ``urlopen`` answers from the fake, never from a connection — also when the
environment names a proxy, which a faked service is never behind.  A request no pattern
matches meets the same refusal as before fakes by URL existed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from kamera_cli.apiserver.transports.urllib3 import BodyRaw, body_bytes, check_guards, http_response
from kamera_cli.model.services import HTTP_SCHEMES, ServiceRequest, ServiceResponse, UrlPattern

__all__ = ["Handler", "absolute_url", "call", "find", "install_routes", "patch_urllib3", "serves_host"]

#: a fake, as the sandbox adapted it: one request in, one response out (raises what the fake raised)
Handler = Callable[[ServiceRequest], ServiceResponse]

_lock = threading.Lock()
_routes: list[tuple[UrlPattern, Handler]] = []  # the scenario's, in its order (the first match answers)


def install_routes(routes: Iterable[tuple[UrlPattern, Handler]]) -> Callable[[], None]:
    """Put ``routes`` in place (after any installed already); the returned function takes them out again."""
    added = list(routes)
    with _lock:
        _routes.extend(added)

    def undo() -> None:
        with _lock:
            for route in added:
                if route in _routes:
                    _routes.remove(route)

    return undo


def find(url: str, schemes: Collection[str] = HTTP_SCHEMES) -> Handler | None:
    """The fake that answers ``url`` (absolute), or None: then the request stays blocked.

    ``schemes``: those the calling client sends HTTP requests to; a URL of another scheme is the
    client's own to refuse (httpx's ``UnsupportedProtocol`` for ``tcp://``), never answered."""
    if not _routes or urlsplit(url).scheme.lower() not in schemes:
        return None
    with _lock:
        routes = list(_routes)
    return next((handler for pattern, handler in routes if pattern.matches(url)), None)


def serves_host(scheme: str, host: str, port: int | None) -> bool:
    """Whether some fake's pattern could match a request to ``scheme://host:port``."""
    with _lock:
        routes = list(_routes)
    return any(pattern.matches_host(scheme, host, port) for pattern, _ in routes)


def absolute_url(scheme: str, host: str, port: int | None, target: str) -> str:
    """``target`` (a path with its query, or already absolute) on ``scheme://host:port``."""
    if "://" in target:
        return target
    default = {"http": 80, "https": 443}.get(scheme)
    if ":" in host and not host.startswith("["):  # an IPv6 address, as clients keep it: bracketed in a URL
        host = f"[{host}]"
    where = host if port in (None, default) else f"{host}:{port}"
    return f"{scheme}://{where}{target if target.startswith('/') else '/' + target}"


def call(handler: Handler, method: str, url: str, headers: Mapping[str, str] | Iterable[tuple[str, str]] | None,
         body: bytes | None) -> ServiceResponse:
    """Ask ``handler`` with one request as the fake sees it (unless a guard refuses it: a reconcile's thread)."""
    check_guards(method.upper(), url)
    pairs = headers.items() if isinstance(headers, Mapping) else headers or ()
    return handler(ServiceRequest(method.upper(), url, tuple((str(k), str(v)) for k, v in pairs), body or b""))


_SERVICE = "_kamera_service_pool"


def patch_urllib3(set_attr: Callable[[Any, str, Any], None]) -> None:
    """Answer the requests of urllib3 pools for faked hosts from the fakes.

    Every other request (another host, or a faked host at a path no pattern matches) goes urllib3's
    own way, to a connection the containment refuses where urllib3 opens it, so urllib3 wraps the
    refusal as it wraps a refused connect (``NewConnectionError``, then ``MaxRetryError``).
    """
    import urllib3.connectionpool

    pool_cls: Any = urllib3.connectionpool.HTTPConnectionPool
    real_init, real_urlopen = pool_cls.__init__, pool_cls.urlopen

    def init(pool: Any, host: Any = "", port: Any = None, *args: Any, **kwargs: Any) -> None:
        real_init(pool, host, port, *args, **kwargs)  # a queue of empty slots: no connection, no socket
        if serves_host(type(pool).scheme, str(host), port):
            setattr(pool, _SERVICE, True)

    def urlopen(pool: Any, method: str, url: str, body: Any = None, headers: Any = None, *args: Any,
                **kwargs: Any) -> Any:
        handler = None
        full = url
        if getattr(pool, _SERVICE, False):
            full = absolute_url(pool.scheme, pool.host, pool.port, url)
            handler = find(full)
        if handler is None:
            return real_urlopen(pool, method, url, body, headers, *args, **kwargs)
        answer = call(handler, method, full, headers, body_bytes(body))
        return http_response(answer.status, dict(answer.headers), BodyRaw(answer.body),
                             bool(kwargs.get("preload_content", True)))

    set_attr(pool_cls, "__init__", init)
    set_attr(pool_cls, "urlopen", urlopen)

    # A proxy from the environment (``HTTP_PROXY``, which requests honours) would make the pool one to
    # the proxy; a faked service is never behind one, so its requests get the service's own pool.
    import urllib3.poolmanager

    proxy_cls: Any = urllib3.poolmanager.ProxyManager
    real_from_host = proxy_cls.connection_from_host

    def from_host(manager: Any, host: Any, port: Any = None, scheme: Any = "http", pool_kwargs: Any = None) -> Any:
        if host and serves_host(str(scheme or "http"), str(host), port):
            return urllib3.poolmanager.PoolManager.connection_from_host(manager, host, port, scheme, pool_kwargs)
        return real_from_host(manager, host, port, scheme, pool_kwargs)

    set_attr(proxy_cls, "connection_from_host", from_host)
