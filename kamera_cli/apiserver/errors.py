"""Errors of the simulated API server, and the ``Status`` bodies the real kube-apiserver sends.

Why one module: every refusal the server produces must look exactly like the real one (the
controller under test branches on ``e.status`` and sometimes on ``reason`` or the message), so the
wording lives in one place instead of being improvised at each call site.  ``go_quote`` (Go's ``%q``)
is here for the same reason: validation's field errors and patching's conflict messages both quote
names and values as upstream does, and neither package may import the other.
"""

from __future__ import annotations

from typing import Any

from kamera_cli.errors import KameraError

JSONDict = dict[str, Any]

_GO_ESCAPES: dict[str, str] = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
                      "\v": "\\v", "\\": "\\\\", '"': '\\"'}


def _go_escape(c: str) -> str:
    hit = _GO_ESCAPES.get(c)
    if hit is not None:
        return hit
    if c.isprintable():
        return c
    n = ord(c)
    return f"\\x{n:02x}" if n < 0x80 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


def go_quote(text: str) -> str:
    """Go's ``%q`` of a string (``strconv.Quote``), as upstream messages quote names and values."""
    return '"' + "".join(map(_go_escape, text)) + '"'


class ApiError(KameraError):
    """A request the simulated API server refused; ``body`` is the real ``Status`` object."""

    def __init__(self, status: int, body: JSONDict) -> None:
        self.status = status
        self.body = body
        super().__init__(f"{status} {body.get('reason', '')}: {body.get('message', '')}")

    @property
    def reason(self) -> str:
        return str(self.body.get("reason", ""))

    @property
    def message(self) -> str:
        return str(self.body.get("message", ""))


class CRDError(KameraError):
    """A CustomResourceDefinition manifest kamera cannot register (the message names it and why)."""


def status_body(
    code: int,
    reason: str,
    message: str,
    *,
    name: str | None = None,
    group: str | None = None,
    kind: str | None = None,
    causes: list[dict[str, str]] | None = None,
) -> JSONDict:
    details: JSONDict = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    if kind:
        details["kind"] = kind
    if causes:
        details["causes"] = causes
    body: JSONDict = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
    }
    if details:
        body["details"] = details
    body["code"] = code
    return body


def error(code: int, reason: str, message: str, **kw: Any) -> ApiError:
    return ApiError(code, status_body(code, reason, message, **kw))


def qualified(plural: str, group: str) -> str:
    """``configmaps`` or ``deployments.apps``: how the real server names a resource in messages."""
    return f"{plural}.{group}" if group else plural


def not_found(plural: str, group: str, name: str) -> ApiError:
    return error(404, "NotFound", f'{qualified(plural, group)} "{name}" not found', name=name, group=group,
                 kind=plural)


def already_exists(plural: str, group: str, name: str, *, deleting: bool = False) -> ApiError:
    prefix = "object is being deleted: " if deleting else ""
    return error(409, "AlreadyExists", f'{prefix}{qualified(plural, group)} "{name}" already exists', name=name,
                 group=group, kind=plural)


def conflict(plural: str, group: str, name: str, why: str) -> ApiError:
    return error(409, "Conflict", f'Operation cannot be fulfilled on {qualified(plural, group)} "{name}": {why}',
                 name=name, group=group, kind=plural)


STALE = "the object has been modified; please apply your changes to the latest version and try again"


def stale(plural: str, group: str, name: str) -> ApiError:
    return conflict(plural, group, name, STALE)


def forbidden(plural: str, group: str, name: str, why: str) -> ApiError:
    return error(403, "Forbidden", f'{qualified(plural, group)} "{name}" is forbidden: {why}', name=name,
                 group=group, kind=plural)


def bad_request(message: str) -> ApiError:
    return error(400, "BadRequest", message)


def method_not_allowed(message: str = "the server does not allow this method on the requested resource") -> ApiError:
    return error(405, "MethodNotAllowed", message)


def no_such_path() -> ApiError:
    return error(404, "NotFound", "the server could not find the requested resource")


def gone(message: str) -> ApiError:
    return error(410, "Expired", message)


def cause(reason: str, field: str, message: str) -> dict[str, str]:
    return {"reason": reason, "message": message, "field": field}


def invalid(kind: str, group: str, name: str, causes: list[dict[str, str]]) -> ApiError:
    """422 Invalid, worded like ``NewInvalid``: ``Pod "x" is invalid: spec.containers: Required value``."""
    parts = list(dict.fromkeys(f"{c['field']}: {c['message']}" if "field" in c else c["message"] for c in causes))
    summary = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"  # ToAggregate drops repeats
    return error(422, "Invalid", f'{kind}.{group} "{name}" is invalid: {summary}' if group
                 else f'{kind} "{name}" is invalid: {summary}', name=name, group=group, kind=kind, causes=causes)


def internal(message: str, trace: str = "") -> ApiError:
    causes = [{"reason": "InternalError", "message": trace}] if trace else None
    return error(500, "InternalError", f"kamera internal error: {message}", causes=causes)
