"""Network addresses as the fence words and judges them: how a refused address is shown, which host
names resolve without leaving the machine (and so may be looked up inside a step), and what a name a
fake by URL answers for resolves to.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable

from kamera_cli.model.services import UrlPattern

__all__ = ["FAKED_ADDRESS", "FAKED_ADDRESS6", "faked_address", "format_address", "is_local_name",
           "resolve_faked_hosts"]

#: what a faked host resolves to: TEST-NET-1 (RFC 5737) and the IPv6 discard-only prefix (RFC 6666).
#: Neither is routed nor local, so a connection to one that got past the fence reaches no listener of
#: this machine (loopback would) and no service anywhere; the fake answers the client's request before
#: any connection is made (apiserver/transports/services.py).
FAKED_ADDRESS = "192.0.2.1"
FAKED_ADDRESS6 = "100::1"

#: the patterns of the scenario's fakes by URL (replaced whole, never changed in place: a resolver
#: thread reads it without a lock)
_faked: tuple[UrlPattern, ...] = ()


def resolve_faked_hosts(patterns: Iterable[UrlPattern]) -> Callable[[], None]:
    """Let the names these fakes by URL answer for resolve inside a step; the returned function undoes it."""
    global _faked
    added = tuple(patterns)
    _faked = (*_faked, *added)

    def undo() -> None:
        global _faked
        _faked = tuple(p for p in _faked if p not in added)

    return undo


def faked_address(host: object, port: object, family: object) -> str | None:
    """The address ``getaddrinfo(host, port)`` gives inside a step when a fake by URL covers the name (at
    that port, when it is a number), whatever the scheme: resolving comes before the client speaks any
    protocol.  None for every other name: the fence refuses it, as before."""
    if not _faked or not isinstance(host, str | bytes):
        return None
    name = host.decode("ascii", "replace") if isinstance(host, bytes) else host
    number = int(port) if isinstance(port, int) or (isinstance(port, str | bytes) and port.isdigit()) else None
    for pattern in _faked:
        if pattern.matches_host(pattern.scheme, name, pattern.port if number is None else number):
            return FAKED_ADDRESS6 if family == socket.AF_INET6 else FAKED_ADDRESS
    return None


def format_address(address: object) -> str:
    if isinstance(address, tuple) and len(address) >= 2:
        host, port = address[0], address[1]
        host_text = f"[{host}]" if isinstance(host, str) and ":" in host else str(host)
        return f"{host_text}:{port}"
    if isinstance(address, bytes):
        return address.decode("utf-8", "replace")
    return str(address)


def is_local_name(host: object) -> bool:
    if host is None:
        return True
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return False
    if host.lower() in ("localhost", "localhost.", ""):
        return True
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True
