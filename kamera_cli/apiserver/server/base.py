"""What every part of the simulated API server shares: the request and answer shapes, routing
constants and the small helpers of reads, writes and deletions (``server.py`` assembles them)."""

from __future__ import annotations

import base64
import datetime as _dt
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from kamera_cli.apiserver import errors as E
from kamera_cli.apiserver.registry.kinds import ResourceInfo
from kamera_cli.apiserver.validation.kinds import base64_offset
from kamera_cli.model.frozen import fast_init
from kamera_cli.model.objects import Manifest

_JSON_HEADERS: Mapping[str, str] = {"Content-Type": "application/json"}
_PATCH_TYPES = {
    "application/json-patch+json": "json",
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
    "application/apply-patch+yaml": "apply",
    "application/apply-patch+cbor": "apply",
}
_PATCH_ALIASES = {"json": "application/json-patch+json", "merge": "application/merge-patch+json",
                  "strategic": "application/strategic-merge-patch+json", "apply": "application/apply-patch+yaml"}
_SIMULATED_SUBRESOURCES = frozenset({"status", "scale", "binding"})
_HISTORY = 64
#: Namespaces the NamespaceLifecycle admission plugin never lets anyone delete.
_IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
_FOREGROUND = "foregroundDeletion"
_ORPHAN = "orphan"


@fast_init
@dataclass(frozen=True, slots=True)
class HttpResponse:
    status: int
    headers: Mapping[str, str]
    body: bytes
    stream: Iterator[bytes] | None = None

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


@fast_init
@dataclass(frozen=True, slots=True)
class Access:
    """One request as the simulator sees it; ``before``/``after`` are the stored states for writes."""

    method: str
    verb: str
    resource: ResourceInfo | None
    namespace: str
    name: str
    subresource: str
    query: tuple[tuple[str, str], ...]
    request_body: Any
    status: int = 0
    response: Any = None
    before: Manifest | None = None
    after: Manifest | None = None
    dry_run: bool = False

    @property
    def is_write(self) -> bool:
        return self.verb in ("create", "update", "patch", "delete", "deletecollection")


_PATCHING: list[Any] = []


def _patching() -> Any:
    """The patching module, imported once (None while it is not part of the build)."""
    if not _PATCHING:
        module: Any
        try:
            import kamera_cli.apiserver.patch.functions as module  # type: ignore[import-not-found,no-redef,unused-ignore]
        except ModuleNotFoundError as exc:
            if exc.name != "kamera_cli.apiserver.patch.functions":
                raise  # a broken dependency of patching.py must not pass for "not merged yet"
            module = None
        _PATCHING.append(module)
    return _PATCHING[0]


class _Propagate(BaseException):  # carries a hook exception out untouched
    def __init__(self, original: BaseException) -> None:
        self.original = original


class _Pending:
    """The journal entry of the request in flight (mutable until it becomes an ``Access``)."""

    __slots__ = ("after", "before", "dry_run", "method", "name", "namespace", "query", "request_body", "resource",
                 "subresource", "verb")

    def __init__(self, method: str, query: tuple[tuple[str, str], ...]) -> None:
        self.method = method
        self.query = query
        self.verb = ""
        self.resource: ResourceInfo | None = None
        self.namespace = ""
        self.name = ""
        self.subresource = ""
        self.request_body: Any = None
        self.before: Manifest | None = None
        self.after: Manifest | None = None
        self.dry_run = False


@dataclass(slots=True)
class _Req:
    method: str
    info: ResourceInfo
    namespace: str
    name: str
    sub: str
    query: dict[str, str]
    raw_query: tuple[tuple[str, str], ...]
    headers: Mapping[str, str]
    body: bytes | None
    parsed: Any = None
    verb: str = ""
    writes: list[Access] = field(default_factory=list)

    def flag(self, key: str) -> bool:
        return self.query.get(key, "").lower() in ("true", "1")

    @property
    def dry_run(self) -> bool:
        return "dryRun" in self.query


def _cascade_requested(req: _Req) -> bool:
    """``orphanDependents: false`` given explicitly (body or query): the deprecated way to ask for a cascade."""
    opts = req.parsed if isinstance(req.parsed, dict) else {}
    if "orphanDependents" in opts:
        return opts["orphanDependents"] is False
    return req.query.get("orphanDependents", "").lower() == "false"


def _deleted(req: _Req, remaining: Manifest | None, body: Any) -> bool:
    """Whether the DELETE removed the object (for a dry run: would have)."""
    if not req.dry_run:
        return remaining is None
    meta = (body.get("metadata") or {}) if isinstance(body, dict) else {}
    return not (meta.get("deletionTimestamp") and (meta.get("finalizers") or meta.get("deletionGracePeriodSeconds")))


def _ownership(managed: Any) -> Any:
    """managedFields without their timestamps: what an ownership change is compared on."""
    if not isinstance(managed, list):
        return managed
    return [{k: v for k, v in e.items() if k != "time"} if isinstance(e, dict) else e for e in managed]


# Bytes a JSON text may hold for YAML to read it exactly as JSON does: printable ASCII on one line,
# no backslash (escapes differ in corner cases), no tab, no DEL (YAML refuses it).
_PLAIN_TEXT = re.compile(rb"[ -\[\]-~]*")
# PyYAML gives up on a flow-mapping key spanning more than 1024 characters up to its colon.
_LONG_KEY = re.compile(rb'"[^"]{900,}" *:|" {100,}:')
# Bounds the nesting depth, so YAML's deeper recursion cannot fail where json's succeeds.
_MAX_BRACKETS = 128
_NOT_PLAIN = object()


class _NotPlain(Exception):
    pass


def _refuse(_text: str) -> Any:
    raise _NotPlain


# Built once: ``json.loads`` with these hooks would build a decoder on every call.
_PLAIN_DECODER = json.JSONDecoder(parse_float=_refuse, parse_constant=_refuse)


def _plain_json(body: bytes) -> Any:
    """An apply body parsed by ``json`` when YAML would read it identically, else ``_NOT_PLAIN``.

    Why: clients send apply configurations as JSON, and PyYAML's pure-Python parser costs
    milliseconds for a Deployment.  JSON is YAML only up to details this restricts away: floats
    (YAML 1.1 reads ``1e5`` as a string), ``NaN``/``Infinity``, escapes, non-printable bytes, line
    breaks, very long keys and deep nesting.
    """
    if (not _PLAIN_TEXT.fullmatch(body) or body.count(b"{") + body.count(b"[") > _MAX_BRACKETS
            or _LONG_KEY.search(body)):
        return _NOT_PLAIN
    try:
        # The text is printable ASCII, which ``json.loads`` would decode as UTF-8 to the same string.
        return _PLAIN_DECODER.decode(body.decode("ascii"))
    except (ValueError, _NotPlain, RecursionError):
        return _NOT_PLAIN


def _json_default(value: Any) -> Any:
    """YAML seeds may hold timestamps and dates as Python objects: send them as RFC 3339 / ISO strings."""
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        return value.astimezone(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(value, _dt.date):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _always(_obj: Manifest) -> bool:
    return True


def _key(obj: Manifest) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"


def _int_param(req: _Req, key: str) -> int:
    text = req.query.get(key, "")
    try:
        value = int(text)
    except ValueError:
        raise E.bad_request(f'invalid value for {key}: "{text}" is not an integer') from None
    if value < 0:
        raise E.bad_request(f'invalid value for {key}: "{text}" must not be negative')
    return value


def _encode_continue(rv: int, start: str) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode()


def _decode_continue(token: str) -> tuple[int, str]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        return int(data["rv"]), str(data["start"])
    except (ValueError, KeyError, TypeError):
        raise E.bad_request(f'continue key is not valid: "{token}"') from None


def _namespace_holds(info: ResourceInfo, obj: Manifest) -> bool:
    """A Namespace stays until its spec.finalizers (the namespace controller's ``kubernetes``) are gone."""
    return info.group == "" and info.kind == "Namespace" and bool((obj.get("spec") or {}).get("finalizers"))


def _normalise(info: ResourceInfo, obj: dict[str, Any]) -> None:
    """Secrets: ``type`` defaults to Opaque; write-only ``stringData`` is merged into ``data`` (base64)."""
    if info.custom or info.group or info.kind != "Secret":
        return
    if not obj.get("type"):
        obj["type"] = "Opaque"
    for value in (obj.get("data") or {}).values() if isinstance(obj.get("data"), dict) else ():
        offset = base64_offset(value) if isinstance(value, str) else None
        if offset is not None:  # []byte fields are base64 in JSON: the decoder refuses the body
            raise E.bad_request(f'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at '
                                f"input byte {offset}")
    if "stringData" not in obj:
        return
    string_data = obj.pop("stringData")
    if isinstance(string_data, dict):
        data = dict(obj.get("data") or {})
        for key, value in string_data.items():
            if isinstance(value, str):
                data[key] = base64.b64encode(value.encode()).decode()
        obj["data"] = data


def _path(info: ResourceInfo, namespace: str, name: str = "", sub: str = "") -> str:
    base = f"/apis/{info.group}/{info.version}" if info.group else f"/api/{info.version}"
    if info.namespaced and namespace:
        base += f"/namespaces/{quote(namespace, safe='')}"
    base += f"/{info.plural}"
    if name:
        base += f"/{quote(name, safe='')}"
    if sub:
        base += f"/{sub}"
    return base
