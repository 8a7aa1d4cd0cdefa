"""The standard library's HTTP client (``http.client``, and ``urllib.request`` over it), answered in-process.

Why at ``HTTPConnection.connect``: every request of ``http.client`` — ``request()``, the low-level
``putrequest``/``putheader``/``endheaders``/``send``, ``urllib.request.urlopen`` and its openers,
``xmlrpc.client`` — opens its connection there, lazily, the first time something is sent.  For a
host a fake by URL could answer (``spec.fakes[].url``, ``transports/services.py``) or a kamera
cluster host (``kamera-<hex>.invalid``, the URL the official client's configuration names), the
replacement hands the connection an in-memory ``Wire`` instead of a socket: what http.client
writes is parsed as the HTTP/1.1 request it is, answered the moment it is complete (by the fake,
or by the bound API server through the pool-manager stand-in every client shares), and the answer
is handed back as the bytes of an HTTP/1.1 response, which http.client's own ``HTTPResponse``
parses.  So everything above the socket stays the standard library's: ``urlopen(...).read()``,
``.status``, ``.getheader``, ``json.load(resp)``, ``HTTPError`` for an error status, redirects,
keep-alive.  Answering while the request is sent (not when the response is read) puts a refusal
or a failing fake where a refused connection would be: ``urllib.request`` wraps it in ``URLError``.

Any other host keeps the real ``connect``, which meets the sandbox's socket fence exactly as it
did before fakes by URL existed.  ``urllib.request`` would send a request to a proxy named in the
environment: its ``proxy_bypass`` (looked up on each request, also by openers built earlier) says
a faked service or a kamera host is never behind one.  Nothing is encrypted (an ``https`` fake
sees plain bytes, no certificate is checked) and no name is resolved.
"""

from __future__ import annotations

import http
import io
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kamera_cli.apiserver.transports import services
from kamera_cli.apiserver.transports.httpx import is_kamera_host
from kamera_cli.model.services import split_url

__all__ = ["Wire", "parse_request", "patch", "response_bytes"]

#: ``(method, url, headers, body) -> urllib3.HTTPResponse``: the pool-manager stand-in's request
Send = Callable[[str, str, Mapping[str, str], "bytes | None"], Any]
#: one complete request in, the bytes of its response out
Answer = Callable[[str, str, tuple[tuple[str, str], ...], bytes], bytes]

_HEAD_END = b"\r\n\r\n"
_FRAMING = frozenset({"content-length", "transfer-encoding"})


def _reason(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""


def response_bytes(status: int, headers: Iterable[tuple[str, str]], body: bytes, *, head: bool = False) -> bytes:
    """An HTTP/1.1 response as a server writes it, framed by a ``Content-Length`` of the body it carries.

    The answer's own framing headers are replaced (a WSGI app's ``Transfer-Encoding`` describes a
    body that is handed over whole here); a ``HEAD`` answer keeps its headers and carries no body.
    """
    lines = [f"HTTP/1.1 {status} {_reason(status)}"]
    pairs = [(str(k), str(v)) for k, v in headers if head or str(k).lower() not in _FRAMING]
    if not head:
        pairs.append(("Content-Length", str(len(body))))
    for name, value in pairs:
        if any(c in name + value for c in "\r\n"):
            raise ValueError(f"the response header {name!r}: {value!r} contains a line break")
        lines.append(f"{name}: {value}")
    text = "\r\n".join(lines) + "\r\n\r\n"
    try:
        data = text.encode("latin-1")
    except UnicodeEncodeError:  # what a server writing UTF-8 headers puts on the wire
        data = text.encode()
    return data + (b"" if head else body)


def _bad_request(reason: str) -> bytes:
    return response_bytes(400, [("Content-Type", "text/plain")], f"kamera: a malformed HTTP request: {reason}".encode())


def parse_request(data: bytearray) -> tuple[str, str, tuple[tuple[str, str], ...], bytes] | None:
    """The first complete request in ``data`` (taken out of it), or None while it is still incomplete.

    ``(method, target, headers, body)``: the body framed by ``Content-Length`` or chunked
    ``Transfer-Encoding``, empty with neither (what HTTP/1.1 says of a request without framing).
    ``ValueError`` when what was sent is not an HTTP request.
    """
    end = data.find(_HEAD_END)
    if end < 0:
        return None
    head = bytes(data[:end]).decode("latin-1").split("\r\n")
    parts = head[0].split(" ")
    if len(parts) != 3 or not parts[0] or not parts[2].startswith("HTTP/"):
        raise ValueError(f"the request line {head[0]!r} is not 'METHOD target HTTP/1.x'")
    headers: list[tuple[str, str]] = []
    for line in head[1:]:
        name, colon, value = line.partition(":")
        if not colon or not name.strip():
            raise ValueError(f"the header line {line!r} has no name")
        headers.append((name.strip(), value.strip()))
    fields = {name.lower(): value for name, value in headers}
    start = end + len(_HEAD_END)
    if "chunked" in fields.get("transfer-encoding", "").lower():
        framed = _chunked(data, start)
        if framed is None:
            return None
        body, stop = framed
    else:
        length_text = fields.get("content-length", "0")
        if not length_text.isdigit():
            raise ValueError(f"the Content-Length {length_text!r} is not a number")
        stop = start + int(length_text)
        if len(data) < stop:
            return None
        body = bytes(data[start:stop])
    del data[:stop]
    return parts[0], parts[1], tuple(headers), body


def _chunked(data: bytearray, at: int) -> tuple[bytes, int] | None:
    """A chunked body starting at ``at``: its bytes and where it ends, or None while incomplete."""
    body = bytearray()
    while True:
        eol = data.find(b"\r\n", at)
        if eol < 0:
            return None
        size_text = bytes(data[at:eol]).split(b";", 1)[0].strip()
        if not size_text or any(c not in b"0123456789abcdefABCDEF" for c in size_text):
            raise ValueError(f"the chunk size {size_text!r} is not hexadecimal")
        size = int(size_text, 16)
        if size == 0:  # the last chunk, then trailer lines up to an empty one
            end = data.find(_HEAD_END, eol)
            return None if end < 0 else (bytes(body), end + len(_HEAD_END))
        if len(data) < eol + 2 + size + 2:
            return None
        body += data[eol + 2 : eol + 2 + size]
        at = eol + 2 + size + 2


class Wire:
    """What an ``http.client`` connection takes for its socket: requests in, their answers out, in memory.

    Each request is answered as soon as its last byte is sent (so several may share one
    connection, as with keep-alive); ``makefile`` — which ``HTTPResponse`` calls once per response —
    hands out the next answer.  Nothing here owns a file descriptor.
    """

    def __init__(self, answer: Answer) -> None:
        self._answer = answer
        self._sent = bytearray()
        self._answers: deque[bytes] = deque()

    def sendall(self, data: Any) -> None:
        self._sent += data
        while True:
            try:
                request = parse_request(self._sent)
            except ValueError as err:
                self._sent.clear()
                self._answers.append(_bad_request(str(err)))
                return
            if request is None:
                return
            self._answers.append(self._answer(*request))

    def send(self, data: Any) -> int:
        self.sendall(data)
        return len(data)

    def makefile(self, mode: str = "rb", *args: Any, **kwargs: Any) -> io.BufferedReader:
        if not self._answers:
            raise TimeoutError("kamera: the response was read before the request was complete (the body is "
                               "shorter than its Content-Length, or its last chunk was never sent): a server "
                               "would still be waiting for the rest")
        return io.BufferedReader(io.BytesIO(self._answers.popleft()))

    def close(self) -> None:
        self._sent.clear()

    def settimeout(self, timeout: float | None) -> None:
        """Nothing waits: answers are immediate."""

    def setsockopt(self, *args: Any) -> None:
        """No socket to set options on."""


def _host_port(conn: Any) -> tuple[str, int]:
    """Where the connection's requests go: the tunnel's end when one is set (``set_tunnel``), else its host."""
    tunnel = getattr(conn, "_tunnel_host", None)
    if tunnel:
        return str(tunnel), int(getattr(conn, "_tunnel_port", None) or conn.default_port)
    return str(conn.host), int(conn.port or conn.default_port)


def _url(scheme: str, host: str, port: int, target: str) -> str:
    return services.absolute_url(scheme, host, port, target)


def _from_fake(blocked: Callable[[str], BaseException], scheme: str, host: str, port: int) -> Answer:
    def answer(method: str, target: str, headers: tuple[tuple[str, str], ...], body: bytes) -> bytes:
        url = _url(scheme, host, port, target)
        handler = services.find(url)
        if handler is None:  # a faked host, a path no pattern matches
            raise blocked(f"{host}:{port}")
        reply = services.call(handler, method, url, headers, body)
        return response_bytes(reply.status, reply.headers, reply.body, head=method.upper() == "HEAD")

    return answer


def _from_cluster(send: Send, scheme: str, host: str, port: int) -> Answer:
    def answer(method: str, target: str, headers: tuple[tuple[str, str], ...], body: bytes) -> bytes:
        reply = send(method.upper(), _url(scheme, host, port, target), dict(headers), body or None)
        data: bytes = reply.read()  # a watch is read to its end, as from a server closing the stream
        return response_bytes(reply.status, reply.headers.items(), data, head=method.upper() == "HEAD")

    return answer


def patch(set_attr: Callable[[Any, str, Any], None], send: Send, blocked: Callable[[str], BaseException]) -> None:
    """Give ``http.client`` connections to faked services and kamera hosts a ``Wire``; leave every other one be.

    ``send`` answers a kamera host (the pool-manager stand-in); ``blocked(address)`` is the exception
    for a faked host's request that no pattern's path matches.
    """
    import http.client
    import urllib.request

    plain: Any = http.client.HTTPConnection
    tls: Any = getattr(http.client, "HTTPSConnection", None)  # absent from a Python built without ssl
    plain_connect = plain.connect
    tls_connect = tls.connect if tls is not None else plain_connect

    def wire_for(conn: Any, scheme: str) -> Wire | None:
        host, port = _host_port(conn)
        if is_kamera_host(host):
            return Wire(_from_cluster(send, scheme, host, port))
        if services.serves_host(scheme, host, port):
            return Wire(_from_fake(blocked, scheme, host, port))
        return None

    def connect(conn: Any) -> None:
        wire = wire_for(conn, "https" if tls is not None and isinstance(conn, tls) else "http")
        if wire is None:
            plain_connect(conn)  # the real one: the sandbox's fence refuses it
        else:
            conn.sock = wire

    def connect_tls(conn: Any) -> None:
        wire = wire_for(conn, "https")
        if wire is None:
            tls_connect(conn)
        else:
            conn.sock = wire

    real_bypass = urllib.request.proxy_bypass

    def proxy_bypass(host: str) -> bool:
        _, name, port, _ = split_url(f"//{host}")
        if is_kamera_host(name) or any(services.serves_host(scheme, name, port) for scheme in ("http", "https")):
            return True
        return bool(real_bypass(host))

    set_attr(plain, "connect", connect)
    if tls is not None:
        set_attr(tls, "connect", connect_tls)
    set_attr(urllib.request, "proxy_bypass", proxy_bypass)
