"""The simulated API server: one session over a snapshot, answering HTTP-shaped requests.

Why HTTP-shaped: the official client's whole stack (content-type choice, JSON encoding, exception
mapping, deserialisation, watch line splitting) runs unchanged above ``handle``, so a controller
sees exactly what a real cluster would answer.  The request path parses once and copies only the
object being written; stored objects are never mutated.
"""

from __future__ import annotations

import base64
import datetime as _dt
import json
import re
import traceback
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, quote, unquote

import yaml

from kamera_cli.apiserver import errors as E
from kamera_cli.apiserver import scale as scale_view
from kamera_cli.apiserver import semantics as S
from kamera_cli.apiserver import watching
from kamera_cli.apiserver.allocation import allocate_cluster_ip, keep_allocated, label_namespace
from kamera_cli.apiserver.binding import SUCCESS as BINDING_SUCCESS
from kamera_cli.apiserver.binding import bound_pod
from kamera_cli.apiserver.defaults import (
    apply_builtin_defaults,
    default_apply_keys,
    prepare_for_create,
    share_template,
)
from kamera_cli.apiserver.encoding import ListBody, encode, encode_object
from kamera_cli.apiserver.errors import ApiError
from kamera_cli.apiserver.field_validation import directive, dropped_fields, refuse_or_warn, warning_header
from kamera_cli.apiserver.registry import Registry, ResourceInfo
from kamera_cli.apiserver.selectors import SelectorError, field_matcher, label_matcher
from kamera_cli.apiserver.snapshot import Snapshot
from kamera_cli.apiserver.validation import (
    canonical_quantities,
    clean_base,
    prune_builtin,
    prune_metadata,
    remember_clean,
    validate_builtin,
    validate_generate_name,
    validate_metadata,
    validate_name,
)
from kamera_cli.apiserver.validation_crd import apply_defaults, prune
from kamera_cli.apiserver.validation_crd import validate as validate_cr
from kamera_cli.apiserver.validation_kinds import base64_offset, validate_kind
from kamera_cli.apiserver.validation_status import validate_status
from kamera_cli.apiserver.validation_update import validate_update
from kamera_cli.apiserver.write_rules import (
    CREATE_ON_UPDATE,
    SERVER_KEPT,
    Grace,
    check_delete_preconditions,
    check_update_version,
    delete_answer,
    graceful_delete,
    refuse_resource_version_on_create,
    status_update,
)
from kamera_cli.model.objects import KindRef, Manifest, ObjectRef

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


@dataclass(frozen=True, slots=True)
class HttpResponse:
    status: int
    headers: Mapping[str, str]
    body: bytes
    stream: Iterator[bytes] | None = None

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


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
            import kamera_cli.apiserver.patching as module  # type: ignore[import-not-found,no-redef,unused-ignore]
        except ModuleNotFoundError as exc:
            if exc.name != "kamera_cli.apiserver.patching":
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


class ApiServer:
    """A session over a snapshot; ``snapshot`` is replaced by each committed write."""

    def __init__(self, registry: Registry, snapshot: Snapshot, *, now: Callable[[], int]) -> None:
        self.registry = registry
        self.snapshot = snapshot
        self.now = now
        self.journal: list[Access] = []
        self.before_write: Callable[[Access], None] | None = None
        self._stale: dict[tuple[str, str], Snapshot] = {}
        self._written: set[ObjectRef] = set()
        self._history: OrderedDict[int, Snapshot] = OrderedDict()
        self._history[snapshot.resource_version] = snapshot
        self._warnings: list[str] = []  # the request in flight's Warning header values
        self._field_mode = "Warn"  # its fieldValidation directive (field_validation.py)

    # ================================================================ public surface
    def set_stale_view(self, kind_ref: KindRef, snapshot: Snapshot | None) -> None:
        """Answer reads of ``kind_ref`` from ``snapshot`` (None: back to the current state).

        "Objects this session has written" counts from this call on: writes of that kind made before
        the view was set are forgotten, so a server reused across reconciles gives each one a clean view.
        """
        key = (kind_ref.api_version, kind_ref.kind)
        self._written = {r for r in self._written if (r.api_version, r.kind) != key}
        if snapshot is None:
            self._stale.pop(key, None)
        else:
            self._stale[key] = snapshot

    def handle(self, method: str, path: str, query: list[tuple[str, str]] | tuple[tuple[str, str], ...],
               headers: Mapping[str, str], body: bytes | None) -> HttpResponse:
        method = method.upper()
        if "?" in path:
            path, _, qs = path.partition("?")
            query = [*query, *parse_qsl(qs, keep_blank_values=True)]
        raw_query = tuple(query)
        access = _Pending(method, raw_query)
        self._warnings = []
        self._field_mode = "Warn"
        try:
            return self._dispatch(method, path, raw_query, headers, body, access)
        except _Propagate as p:
            raise p.original from None
        except ApiError as exc:
            return self._respond(access, exc.status, exc.body)
        except Exception as exc:  # a kamera bug: answer 500 instead of crashing the controller
            err = E.internal(f"{type(exc).__name__}: {exc}", traceback.format_exc())
            return self._respond(access, 500, err.body)

    # -- programmatic helpers (the same code path as HTTP) ------------------------------------
    def create(self, obj: Manifest, *, dry_run: bool = False) -> dict[str, Any]:
        """Create ``obj``; a ``status`` it carries is written through /status afterwards (seeds)."""
        info = self._info_of(obj)
        ns = str((obj.get("metadata") or {}).get("namespace") or ("default" if info.namespaced else ""))
        query = [("dryRun", "All")] if dry_run else []
        out = self._call("POST", _path(info, ns), query, obj)
        if info.has_status and obj.get("status") and not dry_run:
            ref = ObjectRef(info.api_version, info.kind, ns if info.namespaced else "", out["metadata"]["name"])
            out["status"] = obj["status"]
            out = self._call("PUT", _path(info, ref.namespace, ref.name, "status"), [], out)
        return out

    def update(self, obj: Manifest, *, subresource: str = "") -> dict[str, Any]:
        info = self._info_of(obj)
        ref = ObjectRef.of(obj)
        return self._call("PUT", _path(info, ref.namespace, ref.name, subresource), [], obj)

    def apply(self, obj: Manifest, manager: str, *, force: bool = True, subresource: str = "") -> dict[str, Any]:
        info = self._info_of(obj)
        ref = ObjectRef.of(obj)
        ns = ref.namespace or ("default" if info.namespaced else "")
        query = [("fieldManager", manager)] + ([("force", "true")] if force else [])
        return self._call("PATCH", _path(info, ns, ref.name, subresource), query, obj,
                          content_type="application/apply-patch+yaml")

    def patch(self, ref: ObjectRef, patch_type: str, body: Any, *, subresource: str = "",
              field_manager: str | None = None) -> dict[str, Any]:
        info = self._info_of({"apiVersion": ref.api_version, "kind": ref.kind})
        ctype = _PATCH_ALIASES.get(patch_type, patch_type)
        query = [("fieldManager", field_manager)] if field_manager else []
        return self._call("PATCH", _path(info, ref.namespace, ref.name, subresource), query, body,
                          content_type=ctype)

    def delete(self, ref: ObjectRef, propagation_policy: str | None = None) -> dict[str, Any]:
        info = self._info_of({"apiVersion": ref.api_version, "kind": ref.kind})
        query = [("propagationPolicy", propagation_policy)] if propagation_policy else []
        return self._call("DELETE", _path(info, ref.namespace, ref.name), query, None)

    def get(self, ref: ObjectRef) -> dict[str, Any]:
        info = self._info_of({"apiVersion": ref.api_version, "kind": ref.kind})
        return self._call("GET", _path(info, ref.namespace, ref.name), [], None)

    def list_objects(self, kind_ref: KindRef, namespace: str = "", **params: str) -> dict[str, Any]:
        info = self._info_of({"apiVersion": kind_ref.api_version, "kind": kind_ref.kind})
        return self._call("GET", _path(info, namespace), list(params.items()), None)

    def _info_of(self, obj: Manifest) -> ResourceInfo:
        info = self.registry.lookup(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
        if info is None:
            raise E.error(404, "NotFound", f"the server doesn't have a resource type for "
                                           f"{obj.get('apiVersion')}/{obj.get('kind')}")
        return info

    def _call(self, method: str, path: str, query: list[tuple[str, str]], body: Any,
              content_type: str = "application/json") -> dict[str, Any]:
        try:
            raw = None if body is None else json.dumps(body, separators=(",", ":"), default=_json_default).encode()
        except (TypeError, ValueError) as exc:
            raise E.bad_request(f"the object cannot be sent as JSON: {exc}") from None
        resp = self.handle(method, path, query, {"Content-Type": content_type, "User-Agent": "kamera"}, raw)
        data = json.loads(resp.body) if resp.body else {}
        if resp.status >= 400:
            raise ApiError(resp.status, data)
        result: dict[str, Any] = data
        return result

    # ================================================================ dispatch
    def _respond(self, access: _Pending, status: int, body: Any, stream: Iterator[bytes] | None = None
                 ) -> HttpResponse:
        self.journal.append(Access(access.method, access.verb, access.resource, access.namespace, access.name,
                                   access.subresource, access.query, access.request_body, status, body,
                                   access.before, access.after, access.dry_run))
        if stream is not None:
            raw = b""
        elif isinstance(body, ListBody):
            raw = body.encode()
        elif status < 300 and ((access.verb == "get" and access.resource is not None and not access.subresource)
                               or (body is access.after and body is not None)):
            raw = encode_object(body)  # a stored object (or its per-version view): cached serialisation
        else:
            raw = encode(body)
        headers = {**_JSON_HEADERS, "Warning": warning_header(self._warnings)} if self._warnings else _JSON_HEADERS
        return HttpResponse(status, headers, raw, stream)

    def _dispatch(self, method: str, path: str, raw_query: tuple[tuple[str, str], ...],
                  headers: Mapping[str, str], body: bytes | None, access: _Pending) -> HttpResponse:
        stripped = path.strip("/")
        parts = stripped.split("/") if stripped else []
        if "%" in stripped:
            parts = [unquote(p) for p in parts]
        if len(parts) <= 3 and (not parts or parts[0] in ("version", "api", "apis")) and not (
                len(parts) == 3 and parts[0] == "api"):
            return self._discovery(method, "/" + "/".join(parts), access)
        if parts[0] == "api" and len(parts) >= 3 and parts[1] == "v1":
            group, version, rest = "", "v1", parts[2:]
        elif parts[0] == "apis" and len(parts) >= 4:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise E.no_such_path()
        query: dict[str, str] = {}
        for k, v in raw_query:
            query.setdefault(k, v)
        if rest and rest[0] == "watch":
            query["watch"] = "true"
            rest = rest[1:]
        namespace = ""
        if rest and rest[0] == "namespaces" and len(rest) >= 3 and not (
                len(rest) == 3 and rest[2] in ("status", "finalize")):
            namespace, rest = rest[1], rest[2:]
        if not rest or len(rest) > 3:
            raise E.no_such_path()
        plural, name, sub = rest[0], rest[1] if len(rest) > 1 else "", rest[2] if len(rest) > 2 else ""
        info = self.registry.lookup_plural(group, version, plural)
        if info is None or (namespace and not info.namespaced):
            raise E.no_such_path()
        if info.namespaced and not namespace and name:
            raise E.no_such_path()
        if info.namespaced and not namespace and method != "GET":
            raise E.method_not_allowed()  # only list/watch exist across all namespaces
        hmap = {k.lower(): v for k, v in headers.items()}
        req = _Req(method, info, namespace, name, sub, query, raw_query, hmap, body)
        if sub and sub not in info.subresources:
            raise E.no_such_path()
        if sub and sub not in _SIMULATED_SUBRESOURCES:
            raise E.error(404, "NotFound", f"the server could not find the requested resource (kamera does not "
                                           f"simulate the {plural}/{sub} subresource)")
        verb = req.verb = self._verb(req)
        access.dry_run = "dryRun" in query
        access.verb, access.resource, access.namespace, access.name, access.subresource = (
            verb, info, namespace, name, sub)
        if verb not in info.verbs and verb != "watch":
            raise E.method_not_allowed()
        if verb in ("create", "update", "patch"):
            self._field_mode = directive(verb, query)
        if "dryRun" in query and query["dryRun"] != "All":
            raise E.bad_request(f"dryRun: Unsupported value: \"{query['dryRun']}\": supported values: \"All\"")
        if body and method in ("POST", "PUT", "PATCH", "DELETE"):
            req.parsed = self._parse_body(req)
            access.request_body = req.parsed
        try:
            status, out, stream = getattr(self, "_do_" + verb)(req)
        except ApiError as exc:
            self._journal_writes(req, access)
            return self._respond(access, exc.status, exc.body)
        self._journal_writes(req, access)
        return self._respond(access, status, out, stream)

    def _journal_writes(self, req: _Req, access: _Pending) -> None:
        """One entry per request; a deletecollection also lists each object it removed, before itself."""
        if not req.writes:
            return
        if access.verb == "deletecollection":
            self.journal.extend(req.writes)
            return
        last = req.writes[-1]
        access.before, access.after, access.name = last.before, last.after, last.name

    @staticmethod
    def _verb(req: _Req) -> str:
        m, named = req.method, bool(req.name)
        if m == "GET":
            if req.flag("watch"):
                return "watch"
            return "get" if named else "list"
        if m == "POST" and (not named or req.sub):
            return "create"
        if m == "PUT" and named:
            return "update"
        if m == "PATCH" and named:
            return "patch"
        if m == "DELETE":
            return "delete" if named else "deletecollection"
        raise E.method_not_allowed()

    def _parse_body(self, req: _Req) -> Any:
        assert req.body is not None
        ctype = req.headers.get("content-type", "application/json").split(";")[0].strip().lower()
        if req.method == "PATCH":
            kind = _PATCH_TYPES.get(ctype)
            if kind is None:
                raise E.error(415, "UnsupportedMediaType", f"the body of the request was in an unknown format - "
                                                           f"accepted media types include: {', '.join(_PATCH_TYPES)}")
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
            return json.loads(req.body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise E.bad_request(f"the request body is not valid JSON: {exc}") from None

    def _discovery(self, method: str, path: str, access: _Pending) -> HttpResponse:
        access.verb = "get"
        if method != "GET":
            raise E.method_not_allowed()
        try:
            from kamera_cli.apiserver import discovery  # type: ignore[attr-defined,unused-ignore]
        except ModuleNotFoundError as exc:
            if exc.name != "kamera_cli.apiserver.discovery":
                raise
            raise E.no_such_path() from None
        except ImportError:  # "cannot import name": the module is not part of this build yet
            raise E.no_such_path() from None
        answer = discovery.respond(self.registry, path)
        if answer is None:
            raise E.no_such_path()
        status, doc = answer
        return self._respond(access, int(status), doc)

    # ================================================================ reads
    def _ref(self, info: ResourceInfo, namespace: str, name: str) -> ObjectRef:
        version = info.storage_version or info.version
        api_version = f"{info.group}/{version}" if info.group else version
        return ObjectRef(api_version, info.kind, namespace if info.namespaced else "", name)

    @staticmethod
    def _present(info: ResourceInfo, obj: Manifest) -> Manifest:
        """How a stored object reads through ``info``'s version (CRD conversion strategy None)."""
        if obj.get("apiVersion") == info.api_version:
            return obj
        return {**obj, "apiVersion": info.api_version}

    def _read_view(self, info: ResourceInfo) -> Snapshot | None:
        if not self._stale:
            return None
        ref = self._ref(info, "", "")
        return self._stale.get((ref.api_version, ref.kind))

    def _read(self, info: ResourceInfo, ref: ObjectRef) -> Manifest | None:
        stale = self._read_view(info)
        if stale is not None and ref not in self._written:
            return stale.get(ref)
        return self.snapshot.get(ref)

    def _list_objects(self, info: ResourceInfo, namespace: str, snap: Snapshot | None = None
                      ) -> tuple[list[Manifest], int]:
        kind_ref = self._ref(info, "", "").kind_ref
        ns = namespace if info.namespaced and namespace else None
        if snap is not None:
            return snap.objects_of(kind_ref, ns), snap.resource_version
        stale = self._read_view(info)
        if stale is None:
            return self.snapshot.objects_of(kind_ref, ns), self.snapshot.resource_version
        merged: dict[tuple[str, str], Manifest] = {}
        for obj in stale.objects_of(kind_ref, ns):
            r = ObjectRef.of(obj)
            if r not in self._written:
                merged[(r.namespace, r.name)] = obj
        for r in self._written:
            if r.api_version == kind_ref.api_version and r.kind == kind_ref.kind and (ns is None or r.namespace == ns):
                cur = self.snapshot.get(r)
                if cur is not None:
                    merged[(r.namespace, r.name)] = cur
        return [merged[k] for k in sorted(merged)], stale.resource_version

    def _matchers(self, req: _Req) -> Callable[[Manifest], bool]:
        try:
            lab = label_matcher(req.query.get("labelSelector", ""))
            fld = field_matcher(req.query.get("fieldSelector", ""), req.info)
        except SelectorError as exc:
            raise E.bad_request(str(exc)) from None
        if lab and fld:
            return lambda o: lab(o) and fld(o)
        return lab or fld or _always

    def _do_get(self, req: _Req) -> tuple[int, Any, None]:
        obj = self._read(req.info, self._ref(req.info, req.namespace, req.name))
        if obj is None:
            raise E.not_found(req.info.plural, req.info.group, req.name)
        if req.sub == "scale":
            return 200, scale_view.scale_of(req.info, obj), None
        return 200, self._present(req.info, obj), None

    def _write_scale(self, req: _Req, ref: ObjectRef, live: Manifest, scale: Any) -> tuple[int, Any, None]:
        """A Scale write: its RV (when given) is a precondition; only the replica count reaches the parent."""
        info = req.info
        if not isinstance(scale, dict) or not isinstance(scale.get("spec"), dict):
            raise E.bad_request("the body of a scale request must be an autoscaling/v1 Scale")
        replicas = scale["spec"].get("replicas")
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            raise E.invalid("Scale", "autoscaling", req.name, [E.cause(
                "FieldValueInvalid", "spec.replicas", f"Invalid value: {json.dumps(replicas)}: must be greater than "
                                                      "or equal to 0")])
        rv = (scale.get("metadata") or {}).get("resourceVersion")
        if rv and rv != live["metadata"].get("resourceVersion"):
            raise E.stale(info.plural, info.group, req.name)
        new = scale_view.with_replicas(info, live, replicas)
        new["metadata"] = dict(live["metadata"])
        status, out, _ = self._update(req, ref, live, new, self._manager(req), managed=None)
        return status, scale_view.scale_of(info, self.snapshot.get(ref) or out), None

    def _do_list(self, req: _Req) -> tuple[int, Any, None]:
        info = req.info
        match = self._matchers(req)
        token = req.query.get("continue", "")
        start = ""
        snap: Snapshot | None = None
        if token:
            rv, start = _decode_continue(token)
            snap = self._history.get(rv)
            if snap is None:
                raise E.gone("The provided continue parameter is too old to display a consistent list result. You "
                             "can start a new list without the continue parameter, or use the continue token in "
                             "this response to retrieve the remainder of the results. Continuing with the provided "
                             "token results in an inconsistent list - objects that were created, modified, or "
                             "deleted between the time the first chunk was returned and now may show up in the list.")
        elif req.query.get("resourceVersionMatch") == "Exact" and req.query.get("resourceVersion"):
            rv = _int_param(req, "resourceVersion")
            snap = self._history.get(rv)
            if snap is None:
                raise E.gone(f"too old resource version: {rv} ({self.snapshot.oldest_logged_rv()})")
        objs, rv = self._list_objects(info, req.namespace, snap)
        items = [o for o in objs if match(o)]
        if start:
            items = [o for o in items if _key(o) > start]
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        limit = _int_param(req, "limit") if req.query.get("limit") else 0
        if limit > 0 and len(items) > limit:
            rest = len(items) - limit
            items = items[:limit]
            self._remember(snap or self.snapshot)
            meta["continue"] = _encode_continue(rv, _key(items[-1]))
            meta["remainingItemCount"] = rest
        present = [self._present(info, o) for o in items] if info.storage_version else items
        return 200, ListBody(kind=info.list_kind, apiVersion=info.api_version, metadata=meta, items=present), None

    def _do_watch(self, req: _Req) -> tuple[int, Any, Iterator[bytes]]:
        info = req.info
        match = self._matchers(req)
        if req.name:
            name = req.name
            base = match
            match = lambda o: base(o) and (o.get("metadata") or {}).get("name") == name  # noqa: E731
        if req.query.get("timeoutSeconds"):
            _int_param(req, "timeoutSeconds")  # honoured trivially: every simulated watch ends by itself
        rv_text = req.query.get("resourceVersion", "")
        view = self._read_view(info) or self.snapshot
        events: list[watching.Event]
        kind_ref = self._ref(info, "", "").kind_ref
        ns = req.namespace
        initial = req.flag("sendInitialEvents")
        if initial and req.query.get("resourceVersionMatch") != "NotOlderThan":
            raise E.error(422, "Invalid", "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: "
                                          "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                          group="meta.k8s.io", kind="ListOptions")
        if rv_text in ("", "0") or initial:
            objs, rv = self._list_objects(info, ns)
            events = [{"type": "ADDED", "object": self._present(info, o)} for o in objs if match(o)]
            if initial:
                mark = watching.bookmark(info.kind, info.api_version, rv)
                mark["object"]["metadata"]["annotations"] = {"k8s.io/initial-events-end": "true"}
                events.append(mark)
        else:
            start = _int_param(req, "resourceVersion")
            records = view.writes_since(start)
            rv = view.resource_version
            if records is None:
                status = E.gone(f"too old resource version: {start} ({view.oldest_logged_rv() - 1})").body
                events = [watching.error_event(status)]
                return 200, None, watching.stream(events)
            records = [w for w in records if w.ref.api_version == kind_ref.api_version
                       and w.ref.kind == kind_ref.kind and (not ns or w.ref.namespace == ns)]
            events = watching.events_from_log(records, match, lambda o: self._present(info, o))
        if req.flag("allowWatchBookmarks") and not initial:
            events.append(watching.bookmark(info.kind, info.api_version, rv))
        return 200, None, watching.stream(events)

    # ================================================================ writes
    def _manager(self, req: _Req) -> str:
        manager = req.query.get("fieldManager")
        if manager:
            return manager
        agent = req.headers.get("user-agent", "")
        return agent.split("/", 1)[0] if agent else "unknown"

    def _now(self) -> str:
        return S.format_time(int(self.now()))

    def _remember(self, snap: Snapshot) -> None:
        self._history[snap.resource_version] = snap
        while len(self._history) > _HISTORY:
            self._history.popitem(last=False)

    def _commit(self, req: _Req, ref: ObjectRef, before: Manifest | None, after: dict[str, Any] | None,
                counters: Mapping[str, int] | None = None) -> Manifest | None:
        """Stamp the RV, run the hook, store. Nothing is committed when the hook raises."""
        rv = self.snapshot.resource_version + 1
        if after is not None:
            after["metadata"]["resourceVersion"] = str(rv)
        verb = "delete" if req.verb == "deletecollection" else req.verb
        access = Access(req.method, verb, req.info, req.namespace, ref.name, req.sub, req.raw_query, req.parsed,
                        200, after, before, after)
        if self.before_write is not None:
            try:
                self.before_write(access)
            except ApiError:
                raise
            except BaseException as exc:
                raise _Propagate(exc) from exc
        snap = self.snapshot
        for key, value in (counters or {}).items():
            snap = snap.with_counter(key, value)
        self.snapshot = snap.with_object(ref, after, rv=rv)
        self._written.add(ref)
        self._remember(self.snapshot)
        req.writes.append(access)
        return after

    def _managed(self, before: Manifest | None, after: dict[str, Any], manager: str, sub: str) -> None:
        patching = _patching()
        if patching is None:
            return  # managedFields arrive with the patching module
        api_version = str(after.get("apiVersion", ""))
        fields = patching.update_managed_fields(before, after, manager=manager, operation="Update", now=self._now(),
                                                api_version=api_version, subresource=sub)
        if fields:
            after["metadata"]["managedFields"] = fields
        else:
            after["metadata"].pop("managedFields", None)

    def _check_kind(self, info: ResourceInfo, obj: Any) -> dict[str, Any]:
        if not isinstance(obj, dict):
            raise E.bad_request(f"the body of the request must be a JSON object (a {info.kind})")
        kind, api_version = obj.get("kind"), obj.get("apiVersion")
        if kind not in (None, "", info.kind) or api_version not in (None, "", info.api_version):
            raise E.bad_request(f"the API version in the data ({api_version}) does not match the expected API "
                                f"version ({info.api_version})" if kind in (None, "", info.kind)
                                else f"{kind} in version \"{info.version}\" cannot be handled as a {info.kind}: "
                                     f"the kind in the data does not match the expected kind")
        # Copy-on-write: the server only ever replaces top-level keys and metadata entries of the object
        # it builds, so a shallow copy of those two levels is enough; nested values are shared and, like
        # every stored object, never mutated.
        out: dict[str, Any] = {"apiVersion": info.api_version, "kind": info.kind}
        out.update(obj)
        out["apiVersion"], out["kind"] = info.api_version, info.kind
        meta = out.get("metadata")
        if meta is None:
            out["metadata"] = {}
        elif not isinstance(meta, dict):
            raise E.bad_request("metadata must be an object")
        else:
            out["metadata"] = dict(meta)
        return out

    def _check_namespace(self, req: _Req, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        if req.info.namespaced:
            body_ns = meta.get("namespace")
            if body_ns and body_ns != req.namespace:
                raise E.bad_request("the namespace of the provided object does not match the namespace sent on the "
                                    "request")
            meta["namespace"] = req.namespace
        else:
            meta.pop("namespace", None)

    def _namespace_admission(self, req: _Req, name: str) -> None:
        if not req.info.namespaced:
            return
        ns = self.snapshot.get(ObjectRef("v1", "Namespace", "", req.namespace))
        if ns is None:
            raise E.not_found("namespaces", "", req.namespace)
        if ns.get("metadata", {}).get("deletionTimestamp") or (ns.get("status") or {}).get("phase") == "Terminating":
            raise E.forbidden(req.info.plural, req.info.group, name, f"unable to create new content in namespace "
                                                                     f"{req.namespace} because it is being terminated")

    def _validate(self, info: ResourceInfo, obj: dict[str, Any], name: str, live: Manifest | None = None,
                  main: bool = True) -> dict[str, Any]:
        """Prune and default (custom resources), then validate; returns the object to store.

        ``live``: the stored object being replaced; subtrees shared with it are not walked again when
        it is known to have passed this very pruning and validation whole.
        """
        prefix = str(obj["metadata"].get("generateName") or "") if live is None else ""  # only create checks it
        causes = (validate_generate_name(info.group, info.kind, prefix) + validate_name(info.group, info.kind, name)
                  + validate_metadata(obj["metadata"]))
        if info.custom and info.schema is not None:
            sent = obj
            obj = prune(obj, info.schema, root=True)
            obj["metadata"] = prune_metadata(self.registry.definitions, sent["metadata"])
            if self._field_mode != "Ignore":
                refuse_or_warn(self._field_mode, info.kind, info.version,
                               dropped_fields(self.registry.definitions, None, sent, obj), self._warnings)
            obj = apply_defaults(obj, info.schema)
            causes += validate_cr(obj, info.schema, live)
        elif info.definition is not None:
            definitions = self.registry.definitions
            base = clean_base(definitions, info.definition, live)
            pruned = prune_builtin(definitions, info.definition, obj, base)
            if pruned is not obj:
                refuse_or_warn(self._field_mode, info.kind, info.version,
                               dropped_fields(definitions, info.definition, obj, pruned), self._warnings)
            obj = pruned
            obj = canonical_quantities(definitions, info, obj, base)
            apply_builtin_defaults(info.group, info.kind, obj)
            if base is not None:
                share_template(obj, base)
            if live is None:
                prepare_for_create(info.group, info.kind, obj)
            typed = validate_builtin(definitions, info.definition, obj, base)
            if typed:
                causes += typed
            elif live is not None and not main:  # a status strategy checks the status, not the spec
                causes += validate_status(info.group, info.kind, live, obj)
            else:  # the kind's strategy: on update (ValidateXUpdate) its update rules come first
                if live is not None:
                    causes += validate_update(info.group, info.kind, live, obj)
                causes += validate_kind(info.group, info.kind, obj)
            if not causes:
                remember_clean(definitions, info.definition, obj)
        if causes:
            raise E.invalid(info.kind, info.group, name, causes)
        return obj

    def _do_create(self, req: _Req) -> tuple[int, Any, None]:
        info = req.info
        if req.sub == "binding" and info.kind == "Pod" and not info.group:
            return self._bind(req)
        if req.sub:
            raise E.method_not_allowed()
        obj = self._check_kind(info, req.parsed)
        return self._create(req, obj, self._manager(req), managed=None)

    def _bind(self, req: _Req) -> tuple[int, Any, None]:
        ref = self._ref(req.info, req.namespace, req.name)
        before = self.snapshot.get(ref)
        if before is None:
            raise E.not_found(req.info.plural, req.info.group, req.name)
        after = bound_pod(before, req.parsed, req.name)
        self._commit(req, ref, before, after)
        return 201, dict(BINDING_SUCCESS), None

    def _create(self, req: _Req, obj: dict[str, Any], manager: str, managed: list[Any] | None,
                via_update: bool = False) -> tuple[int, Any, None]:
        """Create ``obj``: a POST, an apply (``managed``: its managedFields) or a PUT to a missing object of a
        kind that allows it (``via_update``: ``Store.Update``'s create path, which never refuses a sent RV)."""
        info = req.info
        self._check_namespace(req, obj)
        meta = obj["metadata"]
        name = str(meta.get("name") or "")
        if req.name and name and name != req.name:
            raise E.bad_request(f"the name of the object ({name}) does not match the name on the URL ({req.name})")
        name = name or req.name
        self._namespace_admission(req, name)
        ns = req.namespace if info.namespaced else ""
        counters: dict[str, int] = {}
        if not name:
            prefix = str(meta.get("generateName") or "")
            if not prefix:
                raise E.invalid(info.kind, info.group, "", [E.cause(
                    "FieldValueRequired", "metadata.name", "Required value: name or generateName is required")])
            key = S.generate_name_key(info.group, info.kind, ns, prefix)
            attempt = self.snapshot.counter(key)
            while True:
                candidate = prefix[:58] + S.name_suffix(info.group, info.kind, ns, prefix, attempt)
                attempt += 1
                if self.snapshot.get(self._ref(info, ns, candidate)) is None:
                    break
            counters[key] = attempt
            name = candidate
        meta["name"] = name
        ref = self._ref(info, ns, name)
        existing = self.snapshot.get(ref)
        sent_version = meta.get("resourceVersion")
        inc_key = S.incarnation_key(ref)
        incarnation = self.snapshot.counter(inc_key) + 1
        counters[inc_key] = incarnation
        for key in ("resourceVersion", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds",
                    "managedFields", "generation"):
            meta.pop(key, None)
        meta["uid"] = S.make_uid(ref.api_version, ref.kind, ns, name, incarnation)
        meta["creationTimestamp"] = self._now()
        if info.tracks_generation:
            meta["generation"] = 1
        if info.has_status:
            obj.pop("status", None)
        if not info.group and info.kind == "Service":
            allocate_cluster_ip(self.snapshot, obj)
        _normalise(info, obj)
        obj = self._validate(info, obj, name)
        if managed is None and not via_update and not req.dry_run:  # a POST (apply creates through Store.Update)
            refuse_resource_version_on_create({"resourceVersion": sent_version})
        if existing is not None:  # the store answers after validation (BeforeCreate) and the RV check
            deleting = bool((existing.get("metadata") or {}).get("deletionTimestamp"))
            raise E.already_exists(info.plural, info.group, name, deleting=deleting)
        if managed is not None:
            obj["metadata"]["managedFields"] = managed
        else:
            self._managed(None, obj, manager, "")
        if obj.get("apiVersion") != ref.api_version:
            obj["apiVersion"] = ref.api_version
        if req.dry_run:
            return 201, self._present(info, obj), None
        stored = self._commit(req, ref, None, obj, counters)
        assert stored is not None
        return 201, self._present(info, stored), None

    def _do_update(self, req: _Req) -> tuple[int, Any, None]:
        info = req.info
        if req.sub == "scale":
            ref = self._ref(info, req.namespace, req.name)
            live = self.snapshot.get(ref)
            if live is None:
                raise E.not_found(info.plural, info.group, req.name)
            return self._write_scale(req, ref, live, req.parsed)
        obj = self._check_kind(info, req.parsed)
        meta = obj["metadata"]
        if meta.get("name") and meta["name"] != req.name:
            raise E.bad_request(f"the name of the object ({meta['name']}) does not match the name on the URL "
                                f"({req.name})")
        self._check_namespace(req, obj)
        ref = self._ref(info, req.namespace, req.name)
        live = self.snapshot.get(ref)
        if live is None:
            if req.sub or info.custom or (info.group, info.kind) not in CREATE_ON_UPDATE:
                raise E.not_found(info.plural, info.group, req.name)
            return self._create(req, obj, self._manager(req), managed=None, via_update=True)  # Store.Update creates
        check_update_version(info, req.name, meta, live)
        return self._update(req, ref, live, obj, self._manager(req), managed=None)

    def _update(self, req: _Req, ref: ObjectRef, live: Manifest, new: dict[str, Any], manager: str,
                managed: list[Any] | None) -> tuple[int, Any, None]:
        info = req.info
        live_meta: Mapping[str, Any] = live["metadata"]
        if req.sub == "status":
            merged = status_update(info, live, new)
            if managed is not None:
                merged["metadata"]["managedFields"] = managed
        else:
            merged = new
            if info.has_status:
                if "status" in live:
                    merged["status"] = live["status"]
                else:
                    merged.pop("status", None)
            meta = merged["metadata"]
            for key in SERVER_KEPT:
                if key in live_meta:
                    meta[key] = live_meta[key]
                else:
                    meta.pop(key, None)
            if managed is not None:
                meta["managedFields"] = managed
            else:
                meta.pop("managedFields", None)
                if "managedFields" in live_meta:
                    meta["managedFields"] = live_meta["managedFields"]
            if not info.group and info.kind == "Namespace":
                label_namespace(merged)
            elif not info.group and info.kind == "Service":
                keep_allocated(live, merged)
        deleting = bool(live_meta.get("deletionTimestamp"))
        if deleting:
            added = [f for f in merged["metadata"].get("finalizers") or [] if f not in (live_meta.get("finalizers")
                                                                                       or [])]
            if added:
                listed = ", ".join(f'"{f}"' for f in sorted(set(added)))
                raise E.invalid(info.kind, info.group, req.name, [E.cause(
                    "FieldValueForbidden", "metadata.finalizers",
                    f"Forbidden: no new finalizers can be added if the object is being deleted, found new "
                    f"finalizers []string{{{listed}}}")])
        _normalise(info, merged)
        merged = self._validate(info, merged, req.name, live, main=req.sub != "status")
        if info.tracks_generation and S.spec_changed(live, merged, status_counts=info.custom and not info.has_status):
            merged["metadata"]["generation"] = int(live_meta.get("generation") or 0) + 1
        if S.same_ignoring_bookkeeping(live, merged) and (
                managed is None or _ownership(managed) == _ownership(live_meta.get("managedFields"))):
            return 200, self._present(info, live), None  # a no-op: no new RV, no event (an apply that only
            # moves field ownership is written, as in the real server; timestamps alone are not)
        if managed is None:
            self._managed(live, merged, manager, req.sub)
        if req.dry_run:
            merged["metadata"]["resourceVersion"] = live_meta.get("resourceVersion", "")
            return 200, self._present(info, merged), None
        if deleting and not merged["metadata"].get("finalizers") and not _namespace_holds(info, merged):
            self._commit(req, ref, live, None)
            final = dict(merged)
            final["metadata"] = {**merged["metadata"], "resourceVersion": str(self.snapshot.resource_version)}
            return 200, self._present(info, final), None
        stored = self._commit(req, ref, live, merged)
        assert stored is not None
        return 200, self._present(info, stored), None

    def _do_patch(self, req: _Req) -> tuple[int, Any, None]:
        info = req.info
        ctype = req.headers.get("content-type", "").split(";")[0].strip().lower()
        kind = _PATCH_TYPES.get(ctype)
        if kind is None:
            raise E.error(415, "UnsupportedMediaType", f"the body of the request was in an unknown format - "
                                                       f"accepted media types include: {', '.join(_PATCH_TYPES)}")
        if kind == "strategic" and info.custom:
            raise E.error(415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted "
                                                       "media types include: application/json-patch+json, "
                                                       "application/merge-patch+json, application/apply-patch+yaml")
        force = req.query.get("force")
        if force is not None and kind != "apply":
            raise E.error(422, "Invalid", 'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be '
                                          "specified for non-apply patch", group="meta.k8s.io", kind="PatchOptions",
                          causes=[E.cause("FieldValueForbidden", "force",
                                          "Forbidden: may not be specified for non-apply patch")])
        if req.body is None or req.parsed is None:
            raise E.bad_request("the body of the request is empty")
        patching = _patching()
        if patching is None:
            raise E.internal("patching is not yet available in this build")
        ref = self._ref(info, req.namespace, req.name)
        live = self.snapshot.get(ref)
        manager = self._manager(req)
        try:
            if kind == "apply":
                return self._apply(req, ref, live, manager, force or "", patching)
            if live is None:
                raise E.not_found(info.plural, info.group, req.name)
            view = scale_view.scale_of(info, live) if req.sub == "scale" else self._present(info, live)
            if kind == "json":
                patched = patching.json_patch(dict(view), req.parsed)
            elif kind == "merge":
                patched = patching.merge_patch(dict(view), req.parsed)
            else:
                patched = patching.strategic_merge_patch(dict(view), req.parsed, self.registry.field_lookup(info))
        except patching.PatchError as exc:
            raise E.error(exc.status, exc.reason, exc.message, name=req.name, group=info.group, kind=info.plural,
                          causes=exc.causes) from None
        if req.sub == "scale":
            return self._write_scale(req, ref, live, patched)
        new = self._check_kind(info, patched)
        meta = new["metadata"]
        if meta.get("name") != req.name or (info.namespaced and meta.get("namespace") != req.namespace):
            raise E.bad_request("metadata.name and metadata.namespace may not be changed by a patch")
        check_update_version(info, req.name, meta, live)
        return self._update(req, ref, live, new, manager, managed=None)

    def _apply(self, req: _Req, ref: ObjectRef, live: Manifest | None, manager: str, force: str,
               patching: Any) -> tuple[int, Any, None]:
        info = req.info
        if not req.query.get("fieldManager"):
            raise E.error(422, "Invalid", 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is '
                                          "required for apply patch", group="meta.k8s.io", kind="PatchOptions",
                          causes=[E.cause("FieldValueRequired", "fieldManager",
                                          "Required value: is required for apply patch")])
        applied = req.parsed
        if not isinstance(applied, dict) or not applied.get("apiVersion") or not applied.get("kind"):
            raise E.bad_request("apply patches must carry apiVersion and kind")
        # ``applied`` is the body parsed as an apply body, then _check_kind's and the key defaults' work,
        # which depend on the resource type only: a body applied before without error is not redone.
        memo_key = patching.applied_memo_key(req.body, info.api_version, info.kind, info.custom)
        remembered = patching.remembered_configuration(memo_key)
        applied = self._check_kind(info, applied) if remembered is None else remembered
        name = applied["metadata"].get("name")
        if name and name != req.name:
            raise E.bad_request(f"the name of the object ({name}) does not match the name on the URL ({req.name})")
        if info.namespaced:
            body_ns = applied["metadata"].get("namespace")
            if body_ns and body_ns != req.namespace:
                raise E.bad_request("the namespace of the provided object does not match the namespace sent on the "
                                    "request")
        fields = self.registry.field_lookup(info)
        if not info.custom and remembered is None:
            applied = default_apply_keys(info.group, info.kind, applied)
        result = patching.server_side_apply(None if live is None else dict(self._present(info, live)), applied,
                                            manager=manager, force=force.lower() in ("true", "1"), fields=fields,
                                            now=self._now(), api_version=info.api_version, memo_key=memo_key)
        if remembered is None:
            patching.remember_configuration(memo_key, applied)
        new = self._check_kind(info, result)
        managed = new["metadata"].get("managedFields")
        if live is None:
            if req.sub:
                raise E.not_found(info.plural, info.group, req.name)
            new["metadata"]["name"] = req.name
            return self._create(req, new, manager, managed=managed or [])
        return self._update(req, ref, live, new, manager, managed=managed or [])

    # ---------------------------------------------------------------- deletion
    def _delete_options(self, req: _Req) -> tuple[str, dict[str, Any], int | None]:
        opts = req.parsed if isinstance(req.parsed, dict) else {}
        if req.parsed is not None and not isinstance(req.parsed, dict):
            raise E.bad_request("the request body must be a DeleteOptions object")
        policy = opts.get("propagationPolicy") or req.query.get("propagationPolicy") or ""
        orphan = opts.get("orphanDependents")
        if orphan is None and "orphanDependents" in req.query:
            orphan = req.query["orphanDependents"].lower() == "true"
        if orphan is not None and policy:
            raise E.error(422, "Invalid", 'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: '
                                          f'"{policy}": orphanDependents and deletionPropagation cannot be both set')
        if orphan is not None:
            policy = "Orphan" if orphan else "Background"
        if policy and policy not in ("Background", "Foreground", "Orphan"):
            raise E.error(422, "Invalid", f'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported '
                                          f'value: "{policy}": supported values: "Foreground", "Background", "Orphan"')
        dry = opts.get("dryRun")
        if dry is not None and dry not in ([], ["All"]):
            raise E.bad_request(f"dryRun: Unsupported value: {json.dumps(dry)}: supported values: \"All\"")
        if dry == ["All"]:
            req.query["dryRun"] = "All"
        grace = opts.get("gracePeriodSeconds", req.query.get("gracePeriodSeconds"))
        if grace is not None and not isinstance(grace, int):
            try:
                grace = int(str(grace))
            except ValueError:
                raise E.bad_request(f'gracePeriodSeconds: invalid value "{grace}"') from None
        return policy or "Background", opts.get("preconditions") or {}, grace

    def _do_delete(self, req: _Req) -> tuple[int, Any, None]:
        if req.sub:
            raise E.method_not_allowed()
        info = req.info
        policy, pre, grace = self._delete_options(req)
        ref = self._ref(info, req.namespace, req.name)
        live = self.snapshot.get(ref)
        if live is None:
            raise E.not_found(info.plural, info.group, req.name)
        if info.group == "" and info.kind == "Namespace" and req.name in _IMMORTAL_NAMESPACES:
            raise E.forbidden("namespaces", "", req.name, "this namespace may not be deleted")
        status, body, _ = self._delete(req, ref, live, policy, pre, grace)
        if _cascade_requested(req) and not _deleted(req, self.snapshot.get(ref), body):
            status = 202  # the DELETE handler: not gone yet, and the caller asked orphanDependents=false
        return status, body, None

    def _delete(self, req: _Req, ref: ObjectRef, live: Manifest, policy: str, pre: Mapping[str, Any],
                grace_seconds: int | None = None) -> tuple[int, Any, None]:
        """``Store.Delete``: preconditions, graceful deletion (Pods), finalizers, then removal."""
        info = req.info
        meta = live["metadata"]
        check_delete_preconditions(info, live, pre.get("uid"), pre.get("resourceVersion"))
        grace = graceful_delete(info, live, grace_seconds, int(self.now())) if self.registry.graceful_deletion else None
        if grace is not None and grace.pending:
            return 200, self._present(info, live), None  # Store.Delete: finalizeDelete of the unchanged object
        finalizers = list(meta.get("finalizers") or [])
        if policy == "Foreground" and _FOREGROUND not in finalizers and not meta.get("deletionTimestamp"):
            finalizers.append(_FOREGROUND)
        elif policy == "Orphan" and _ORPHAN not in finalizers and not meta.get("deletionTimestamp"):
            finalizers.append(_ORPHAN)
        holds = _namespace_holds(info, live)
        if grace is not None and (grace.period > 0 or finalizers):
            return self._mark_deleting(req, ref, live, finalizers, grace)
        if not finalizers and not holds:
            final = dict(live)
            if grace is not None:  # updateForGracefulDeletionAndFinalizers stored the deletion fields first
                final["metadata"] = {**meta, "deletionTimestamp": grace.timestamp,
                                     "deletionGracePeriodSeconds": grace.period}
            if req.dry_run:
                return 200, delete_answer(info, self._present(info, final)), None
            self._commit(req, ref, live, None)
            final["metadata"] = {**final["metadata"], "resourceVersion": str(self.snapshot.resource_version)}
            return 200, delete_answer(info, self._present(info, final)), None
        if meta.get("deletionTimestamp"):
            return 200, self._present(info, live), None  # already being deleted: nothing changes
        return self._mark_deleting(req, ref, live, finalizers, None)

    def _mark_deleting(self, req: _Req, ref: ObjectRef, live: Manifest, finalizers: list[str], grace: Grace | None
                       ) -> tuple[int, Any, None]:
        """Store the deletion fields: ``BeforeDelete``'s for a graceful deletion, else ``markAsDeleting``'s
        (now, grace 0).  The object stays, answered as itself."""
        info = req.info
        new = {**live, "metadata": dict(live["metadata"])}
        nmeta = new["metadata"]
        first = grace.first if grace is not None else not nmeta.get("deletionTimestamp")
        nmeta["deletionTimestamp"] = grace.timestamp if grace is not None else self._now()
        nmeta["deletionGracePeriodSeconds"] = grace.period if grace is not None else 0
        if finalizers:
            nmeta["finalizers"] = finalizers
        if info.tracks_generation and first:
            nmeta["generation"] = int(nmeta.get("generation") or 0) + 1
        if info.group == "" and info.kind == "Namespace":
            new["status"] = {**(live.get("status") or {}), "phase": "Terminating"}
        self._managed(live, new, self._manager(req), "")
        if req.dry_run:
            return 200, self._present(info, new), None
        stored = self._commit(req, ref, live, new)
        assert stored is not None
        return 200, self._present(info, stored), None

    def _do_deletecollection(self, req: _Req) -> tuple[int, Any, None]:
        info = req.info
        policy, pre, grace = self._delete_options(req)
        match = self._matchers(req)
        objs, _ = self._list_objects(info, req.namespace, self.snapshot)
        deleted = []
        for obj in objs:
            if not match(obj):
                continue
            self._delete(req, ObjectRef.of(obj), obj, policy, pre, grace)
            deleted.append(self._present(info, obj))  # Store.DeleteCollection answers the list it deleted
        return 200, {"kind": info.list_kind, "apiVersion": info.api_version,
                     "metadata": {"resourceVersion": str(self.snapshot.resource_version)}, "items": deleted}, None


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
        return json.loads(body, parse_float=_refuse, parse_constant=_refuse)
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
