"""The string ``format``s a CRD schema may declare, checked as the apiextensions-apiserver checks them.

Why: a controller writing ``datetime.utcnow().isoformat()`` (no time zone) into a ``date-time`` field
is refused by a real server; a simulation that ignores ``format`` hides that bug.  Upstream:
k8s.io/kube-openapi/pkg/validation/strfmt (``IsDateTime``, ``IsDate``, ``ParseDuration``, the
``default.go`` checkers) and validate's ``InvalidType`` error, which the apiextensions validation maps
to ``FieldValueTypeInvalid`` with the message ``<path> in body must be of type <format>: "<value>"``.
Formats kamera does not know are accepted, as unknown formats are upstream.
"""

from __future__ import annotations

import base64
import binascii
import datetime as _dt
import ipaddress
import re
from collections.abc import Callable, Mapping
from typing import Any

from kamera_cli.apiserver.errors import cause

_TIME = re.compile(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$")
_DURATION = re.compile(r"^[-+]?([0-9]*(\.[0-9]*)?\s*(ns|us|µs|ms|s|m|h|d|w)\s*)+$")
_HOSTNAME = re.compile(r"^(?=.{1,255}$)[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?"
                       r"(\.[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*\.?$")
_UUID = re.compile(r"^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$", re.IGNORECASE)
_UUID_VERSION = {"uuid3": "3", "uuid4": "4", "uuid5": "5"}
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")
_MAC = re.compile(r"^([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}$|^([0-9A-Fa-f]{4}\.){2}[0-9A-Fa-f]{4}$")


def _date(text: str) -> bool:
    try:
        _dt.datetime.strptime(text, "%Y-%m-%d")
    except ValueError:
        return False
    return len(text) == 10


def _date_time(text: str) -> bool:
    """``strfmt.IsDateTime``: a valid date, "t", and a time with a zone (``z`` or ``±hh:mm``)."""
    if len(text) < 4:
        return False
    parts = text.lower().split("t")
    if len(parts) < 2 or not _date(parts[0]):
        return False
    match = _TIME.match(parts[1])
    if match is None:
        return False
    return match.group(1) <= "23" and match.group(2) <= "59" and match.group(3) <= "59"


def _byte(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _ip(version: int) -> Callable[[str], bool]:
    def check(text: str) -> bool:
        try:
            return ipaddress.ip_address(text).version == version
        except ValueError:
            return False
    return check


def is_cidr(text: str) -> bool:
    """A CIDR (an address and a prefix length), as ``ParseCIDRSloppy`` reads one."""
    try:
        ipaddress.ip_network(text, strict=False)
    except ValueError:
        return False
    return "/" in text


def _uuid(name: str) -> Callable[[str], bool]:
    def check(text: str) -> bool:
        if not _UUID.match(text):
            return False
        version = _UUID_VERSION.get(name)
        return version is None or text.replace("-", "")[12] == version
    return check


_CHECKS: dict[str, Callable[[str], bool]] = {
    "date-time": _date_time, "datetime": _date_time, "date": _date, "duration": lambda t: bool(_DURATION.match(t)),
    "byte": _byte, "ipv4": _ip(4), "ipv6": _ip(6), "cidr": is_cidr, "hostname": lambda t: bool(_HOSTNAME.match(t)),
    "email": lambda t: bool(_EMAIL.match(t)), "mac": lambda t: bool(_MAC.match(t)),
    **{name: _uuid(name) for name in ("uuid", "uuid3", "uuid4", "uuid5")},
}


def matches(fmt: str, text: str) -> bool:
    """Whether ``text`` is of the named ``strfmt`` format (unknown formats match, as upstream)."""
    check = _CHECKS.get(fmt)
    return check is None or check(text)


def check_formats(obj: Any, schema: Mapping[str, Any], path: str, out: list[dict[str, str]]) -> None:
    """Append a ``FieldValueTypeInvalid`` cause for each string that does not match its ``format``."""
    if isinstance(obj, str):
        fmt = schema.get("format")
        check = _CHECKS.get(str(fmt)) if fmt else None
        if check is not None and not check(obj):
            quoted = '"' + obj.replace("\\", "\\\\").replace('"', '\\"') + '"'
            out.append(cause("FieldValueTypeInvalid", path, f"Invalid value: {quoted}: {path or 'body'} in body "
                                                            f"must be of type {fmt}: {quoted}"))
    elif isinstance(obj, dict):
        found = schema.get("properties")
        props: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        additional = schema.get("additionalProperties")
        for key, value in obj.items():
            sub = props.get(key) if key in props else (additional if isinstance(additional, Mapping) else None)
            if isinstance(sub, Mapping):
                check_formats(value, sub, f"{path}.{key}" if path else key, out)
    elif isinstance(obj, list) and isinstance(schema.get("items"), Mapping):
        for i, item in enumerate(obj):
            check_formats(item, schema["items"], f"{path}[{i}]", out)
