"""Network addresses as the fence words and judges them: how a refused address is shown, and which host
names resolve without leaving the machine (and so may be looked up inside a step).
"""

from __future__ import annotations

import ipaddress

__all__ = ["format_address", "is_local_name"]


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
