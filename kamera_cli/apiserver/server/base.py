"""The vocabulary every collaborator of a session shares: the request and answer shapes, how a
request names and shows its object, and how its body is decoded.

Why one module: the router (``session.py``), the reads, the writes and the deletions all take a
``Request`` and answer through the same ``Access`` journal entries; none of them may import another
to get these, so they live below all four.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from kamera_cli.apiserver import errors as E
from kamera_cli.apiserver.registry.kinds import ResourceInfo
from kamera_cli.model.frozen import fast_init
from kamera_cli.model.objects import Manifest, ObjectRef

#: The patch content types the server accepts, to the patch kind each names.
PATCH_TYPES: Mapping[str, str] = {
    "application/json-patch+json": "json",
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
    "application/apply-patch+yaml": "apply",
    "application/apply-patch+cbor": "apply",
}


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


def patching_module() -> Any:
    """The patching module, imported once (None while it is not part of the build).

    Why not a plain import: ``_PATCHING`` is the seam tests use to stand a build without patching
    in (a PATCH then answers 500, not a crash).
    """
    if not _PATCHING:
        module: Any
        try:
            import kamera_cli.apiserver.patch.functions as module  # type: ignore[import-not-found,no-redef,unused-ignore]
        except ModuleNotFoundError as exc:
            if exc.name != "kamera_cli.apiserver.patch.functions":
                raise  # a broken dependency of patching must not pass for "not merged yet"
            module = None
        _PATCHING.append(module)
    return _PATCHING[0]


class Propagate(BaseException):
    """Carries an exception of the ``before_write`` hook out of the request untouched (a crash point)."""

    def __init__(self, original: BaseException) -> None:
        self.original = original


@dataclass(slots=True)
class Request:
    """A resource request once routed: what the reads, writes and deletions are given."""

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


def object_ref(info: ResourceInfo, namespace: str, name: str) -> ObjectRef:
    """The stored object a request names: its storage version names it, whichever version was asked."""
    version = info.storage_version or info.version
    api_version = f"{info.group}/{version}" if info.group else version
    return ObjectRef(api_version, info.kind, namespace if info.namespaced else "", name)


def present(info: ResourceInfo, obj: Manifest) -> Manifest:
    """How a stored object reads through ``info``'s version (CRD conversion strategy None)."""
    if obj.get("apiVersion") == info.api_version:
        return obj
    return {**obj, "apiVersion": info.api_version}


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


_OPENERS = (b"{", b"[")
_DECODER = json.JSONDecoder()  # json.loads' own default decoder


def parse_body(req: Request) -> Any:
    """The request body as JSON, or for an apply patch as YAML; a body the server cannot read is a 400/415."""
    assert req.body is not None
    ctype = req.headers.get("content-type", "application/json").split(";")[0].strip().lower()
    if req.method == "PATCH":
        kind = PATCH_TYPES.get(ctype)
        if kind is None:
            raise E.error(415, "UnsupportedMediaType", f"the body of the request was in an unknown format - "
                                                       f"accepted media types include: {', '.join(PATCH_TYPES)}")
        if kind == "apply":
            plain = _plain_json(req.body)
            if plain is not _NOT_PLAIN:
                return plain
            try:
                return yaml.safe_load(req.body.decode())
            except (yaml.YAMLError, UnicodeDecodeError) as exc:
                raise E.bad_request(f"error decoding YAML: {exc}") from None
    elif ctype not in ("application/json", "", "*/*"):
        raise E.error(415, "UnsupportedMediaType", f'the body of the request was in an unknown format - '
                                                   f'accepted media types include: application/json, '
                                                   f'application/yaml (got "{ctype}")')
    try:
        body = req.body
        if body[:1] in _OPENERS and body[1:2] != b"\0":
            # What ``json.loads`` reads as UTF-8 (no BOM, no NUL among the first two bytes), without
            # its encoding detection in Python on every request.
            return _DECODER.decode(body.decode("utf-8", "surrogatepass"))
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise E.bad_request(f"the request body is not valid JSON: {exc}") from None
