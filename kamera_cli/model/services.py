"""HTTP services faked by URL: the URL pattern a scenario names, and the request/response values a fake sees.

Why in ``model``: three layers speak these values and none may import another — the scenario loader
checks a pattern (``scenario/fakes.py``), the transports match a request's URL against it and turn
each client's request into a ``ServiceRequest`` (``apiserver/transports/services.py``), and the
sandbox calls the user's fake with it (``adapters/sandbox/services.py``).  Standard library only.

Pattern syntax (docs/controllers.md, "HTTP services: fakes by URL"): ``scheme://host[:port][/path]``.

* ``scheme`` is ``http`` or ``https``, matched exactly; or ``tcp``, with a port (it has no default),
  which only aiohttp sends HTTP requests to (its ``TCPConnector`` allows the scheme, as plain HTTP):
  the other clients refuse a ``tcp://`` URL themselves, and so do the transports (``find``'s
  ``schemes``).
* ``host`` is dot-separated labels, compared case-insensitively.  ``*`` inside a label matches any
  run of characters within that one label (``*-scheduler`` matches ``dask-scheduler``, never
  ``a.b``); a label that is exactly ``**`` matches one or more whole labels (``**.svc`` matches
  ``scheduler.default.svc``).
* ``port`` is a number or ``*`` (any port); without one, only the scheme's default port (80, 443).
* ``path`` is ``/``-separated segments: ``*`` inside a segment matches within that segment, a
  segment that is exactly ``**`` matches any number of segments (also none).  Without a path
  (``http://host:8787``) the pattern matches every path; ``http://host:8787/`` only the root.  The
  query string is never matched; a pattern may not have one.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

__all__ = ["HTTP_SCHEMES", "ServiceRequest", "ServiceResponse", "UrlPattern", "parse_url_pattern", "split_url"]

_DEFAULT_PORTS = {"http": 80, "https": 443}
#: ``tcp``: aiohttp's ``TCPConnector`` speaks plain HTTP to a ``tcp://host:port`` URL (dask-kubernetes
#: asks its scheduler at ``tcp://<service>.<namespace>:8787/api/v1/...``)
_SCHEMES = frozenset({*_DEFAULT_PORTS, "tcp"})
#: the schemes every HTTP client sends requests to
HTTP_SCHEMES = frozenset(_DEFAULT_PORTS)
_LABEL = re.compile(r"[A-Za-z0-9*_-]+")


@dataclass(frozen=True, slots=True)
class UrlPattern:
    """A parsed ``url:`` of ``spec.fakes``; ``matches`` says whether a request's URL is the fake's."""

    text: str
    scheme: str
    #: host labels, lower-cased; ``**`` is one or more labels
    host: tuple[str, ...]
    #: None: any port
    port: int | None
    #: path segments; None: any path
    path: tuple[str, ...] | None

    def matches_host(self, scheme: str, host: str, port: int | None) -> bool:
        """Whether a connection to ``scheme://host:port`` may carry a request this pattern matches."""
        scheme = scheme.lower()
        if scheme != self.scheme:
            return False
        actual = port if port is not None else _DEFAULT_PORTS.get(scheme)
        if self.port is not None and actual != self.port:
            return False
        return _match_parts(self.host, tuple(host.lower().rstrip(".").split(".")), at_least_one=True)

    def matches(self, url: str) -> bool:
        """Whether ``url`` (absolute) is answered by this pattern's fake."""
        scheme, host, port, path = split_url(url)
        if not self.matches_host(scheme, host, port):
            return False
        if self.path is None:
            return True
        return _match_parts(self.path, _segments(path), at_least_one=False)


def _segments(path: str) -> tuple[str, ...]:
    return tuple(unquote(s) for s in path.strip("/").split("/")) if path.strip("/") else ()


@lru_cache(maxsize=1024)
def _glob(part: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(piece) for piece in part.split("*")), re.DOTALL)


def _match_parts(pattern: tuple[str, ...], actual: tuple[str, ...], *, at_least_one: bool) -> bool:
    """Segment-wise glob: ``*`` within one part, a ``**`` part for several (at least one in a host)."""
    if not pattern:
        return not actual
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        least = 1 if at_least_one else 0
        return any(_match_parts(rest, actual[n:], at_least_one=at_least_one) for n in range(least, len(actual) + 1))
    return bool(actual) and _glob(head).fullmatch(actual[0]) is not None \
        and _match_parts(rest, actual[1:], at_least_one=at_least_one)


def split_url(url: str) -> tuple[str, str, int | None, str]:
    """``(scheme, host, port, path)`` of an absolute URL; the port None when the URL names none."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = -1  # matches no pattern
    return parts.scheme.lower(), (parts.hostname or "").lower(), port, parts.path or "/"


def parse_url_pattern(text: str) -> UrlPattern:
    """The pattern ``text`` names; ``ValueError`` with a message saying what is wrong with it."""
    if not text or text != text.strip() or any(c.isspace() for c in text):
        raise ValueError(f"url {text!r} is empty or contains whitespace")
    scheme, sep, rest = text.partition("://")
    if not sep:
        raise ValueError(f"url {text!r} has no scheme: write http://host/... or https://host/...")
    if scheme not in _SCHEMES:
        raise ValueError(f"url {text!r}: the scheme {scheme!r} is not http, https or tcp")
    if "?" in rest or "#" in rest:
        raise ValueError(f"url {text!r} has a query or fragment: a pattern matches the scheme, host, port "
                         "and path only")
    authority, slash, path_text = rest.partition("/")
    if "@" in authority:
        raise ValueError(f"url {text!r} has user information: a pattern names no credentials")
    host_text, colon, port_text = authority.partition(":")
    if not host_text:
        raise ValueError(f"url {text!r} has no host")
    labels = tuple(host_text.lower().split("."))
    for label in labels:
        if not _LABEL.fullmatch(label) or ("**" in label and label != "**"):
            raise ValueError(f"url {text!r}: the host label {label!r} is not a name, a glob with '*', or '**'")
    port: int | None = _DEFAULT_PORTS.get(scheme)
    if port is None and not colon:
        raise ValueError(f"url {text!r}: a tcp:// pattern names its port (tcp has no default port), "
                         "for example tcp://*-scheduler.*:8787")
    if colon:
        if port_text == "*":
            port = None
        elif port_text.isdigit() and 0 < int(port_text) < 65536:
            port = int(port_text)
        else:
            raise ValueError(f"url {text!r}: the port {port_text!r} is not a number from 1 to 65535 or '*'")
    path: tuple[str, ...] | None = None
    if slash:  # ``http://host/`` is the root only; ``http://host`` every path
        path = tuple(path_text.strip("/").split("/")) if path_text.strip("/") else ()
        for segment in path:
            if not segment:
                raise ValueError(f"url {text!r} has an empty path segment ('//')")
            if "**" in segment and segment != "**":
                raise ValueError(f"url {text!r}: '**' must be a whole path segment, not part of {segment!r}")
    return UrlPattern(text, scheme, labels, port, path)


# --------------------------------------------------------------------------------------------------
# What a fake is called with, and what it answers


def _headers(items: Any) -> tuple[tuple[str, str], ...]:
    pairs = items.items() if isinstance(items, dict) else items
    return tuple((str(k), str(v)) for k, v in pairs)


@dataclass(frozen=True, slots=True)
class ServiceRequest:
    """One HTTP request a controller sent to a faked service, whichever client sent it.

    ``url`` is absolute (``http://dask-scheduler.default.svc:8787/workers?idle=1``); ``headers`` keep
    the client's order and spelling; ``body`` is the bytes sent (empty for none).
    """

    method: str
    url: str
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""

    @property
    def path(self) -> str:
        """The URL's path, still quoted as sent (``/api/v1/retire_workers``)."""
        return urlsplit(self.url).path or "/"

    @property
    def query_string(self) -> str:
        return urlsplit(self.url).query

    @property
    def query(self) -> dict[str, list[str]]:
        """Each query parameter's values, in the order sent."""
        out: dict[str, list[str]] = {}
        for key, value in parse_qsl(self.query_string, keep_blank_values=True):
            out.setdefault(key, []).append(value)
        return out

    @property
    def host(self) -> str:
        return (urlsplit(self.url).hostname or "").lower()

    def header(self, name: str, default: str | None = None) -> str | None:
        """A header's value, its name compared case-insensitively (the first when sent twice)."""
        wanted = name.lower()
        return next((v for k, v in self.headers if k.lower() == wanted), default)

    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def json(self) -> Any:
        """The body parsed as JSON (``None`` for an empty body)."""
        return json.loads(self.body) if self.body.strip() else None


@dataclass(frozen=True, slots=True)
class ServiceResponse:
    """What a function fake answers: a status, headers and a body.

    ``ServiceResponse.of_json(value)`` is the common case; a function may also return a plain ``dict``
    or ``list``, answered as ``of_json(value)`` (status 200).
    """

    status: int = 200
    headers: tuple[tuple[str, str], ...] = field(default=())
    body: bytes = b""

    def __post_init__(self) -> None:
        if not isinstance(self.status, int) or not 100 <= self.status <= 599:
            raise ValueError(f"ServiceResponse status {self.status!r} is not an HTTP status from 100 to 599")
        body: Any = self.body  # a str or a list of pairs is taken too, as a fake most naturally writes them
        if isinstance(body, str):
            object.__setattr__(self, "body", body.encode())
        headers: Any = self.headers
        if not isinstance(headers, tuple):
            object.__setattr__(self, "headers", _headers(headers))

    @classmethod
    def of_json(cls, value: Any, status: int = 200, headers: Any = ()) -> ServiceResponse:
        """``value`` as a JSON body (sorted keys, so that equal values give equal bytes)."""
        extra = _headers(headers)
        if not any(k.lower() == "content-type" for k, _ in extra):
            extra = (("Content-Type", "application/json"), *extra)
        return cls(status, extra, json.dumps(value, sort_keys=True, separators=(",", ":")).encode())

    def header(self, name: str, default: str | None = None) -> str | None:
        wanted = name.lower()
        return next((v for k, v in self.headers if k.lower() == wanted), default)
