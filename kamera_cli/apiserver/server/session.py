"""The simulated API server: one session over a snapshot, answering HTTP-shaped requests.

Why HTTP-shaped: the official client's whole stack (content-type choice, JSON encoding, exception
mapping, deserialisation, watch line splitting) runs unchanged above ``handle``, so a controller
sees exactly what a real cluster would answer.  The request path parses once and copies only the
object being written; stored objects are never mutated.

``ApiServer`` is the router and the public surface; the work is its collaborators': the session's
state and commit (``state.py``), the read verbs (``reads.py``), the write verbs (``writes.py``) and
the deletions (``deletes.py``).  Each gets only what it needs.
"""

from __future__ import annotations

import datetime as _dt
import functools
import json
import traceback
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import parse_qsl, quote, unquote

from kamera_cli.apiserver import errors as E
from kamera_cli.apiserver.errors import ApiError
from kamera_cli.apiserver.registry.kinds import Registry, ResourceInfo
from kamera_cli.apiserver.server.base import Access, HttpResponse, Propagate, Request, parse_body
from kamera_cli.apiserver.server.deletes import Deletes
from kamera_cli.apiserver.server.encoding import ListBody, encode, encode_object
from kamera_cli.apiserver.server.reads import Reads
from kamera_cli.apiserver.server.state import SessionState
from kamera_cli.apiserver.server.writes import Writes
from kamera_cli.apiserver.storage.snapshot import Snapshot
from kamera_cli.apiserver.validation.field_validation import directive, warning_header
from kamera_cli.model.objects import KindRef, Manifest, ObjectRef

__all__ = ["Access", "ApiServer", "HttpResponse"]

_JSON_HEADERS: Mapping[str, str] = {"Content-Type": "application/json"}
_PATCH_ALIASES = {"json": "application/json-patch+json", "merge": "application/merge-patch+json",
                  "strategic": "application/strategic-merge-patch+json", "apply": "application/apply-patch+yaml"}
_SIMULATED_SUBRESOURCES = frozenset({"status", "scale", "binding"})
_Answer = tuple[int, Any, "Iterator[bytes] | None"]


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


def _json_default(value: Any) -> Any:
    """YAML seeds may hold timestamps and dates as Python objects: send them as RFC 3339 / ISO strings."""
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        return value.astimezone(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(value, _dt.date):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


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


_Route = tuple[str, str, bool, str, str, str, str]  # group, version, /watch/, namespace, plural, name, subresource


@functools.lru_cache(maxsize=4096)
def _route(path: str) -> _Route | str:
    """What a resource path names, or the discovery path it is; pure, and controllers ask for the same
    paths over and over, so it is cached (a path that names nothing raises, uncached)."""
    stripped = path.strip("/")
    parts = stripped.split("/") if stripped else []
    if "%" in stripped:
        parts = [unquote(p) for p in parts]
    if len(parts) <= 3 and (not parts or parts[0] in ("version", "api", "apis")) and not (
            len(parts) == 3 and parts[0] == "api"):
        return "/" + "/".join(parts)
    if parts[0] == "api" and len(parts) >= 3 and parts[1] == "v1":
        group, version, rest = "", "v1", parts[2:]
    elif parts[0] == "apis" and len(parts) >= 4:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        raise E.no_such_path()
    watch = bool(rest) and rest[0] == "watch"
    if watch:
        rest = rest[1:]
    namespace = ""
    if rest and rest[0] == "namespaces" and len(rest) >= 3 and not (
            len(rest) == 3 and rest[2] in ("status", "finalize")):
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        raise E.no_such_path()
    return group, version, watch, namespace, rest[0], rest[1] if len(rest) > 1 else "", rest[2] if len(rest) > 2 else ""


@functools.lru_cache(maxsize=1024)
def _query_pairs(qs: str) -> tuple[tuple[str, str], ...]:
    """A query string's pairs (blank values kept), once per distinct string."""
    return tuple(parse_qsl(qs, keep_blank_values=True))


class ApiServer:
    """A session over a snapshot; ``snapshot`` is replaced by each committed write."""

    def __init__(self, registry: Registry, snapshot: Snapshot, *, now: Callable[[], int]) -> None:
        state = self._state = SessionState(registry, snapshot, now)
        self._reads, self._writes = Reads(state), Writes(state)
        self._deletes = Deletes(state, self._reads, self._writes)

    # ================================================================ public surface
    @property
    def registry(self) -> Registry:
        return self._state.registry

    @property
    def now(self) -> Callable[[], int]:
        """The virtual clock, whole seconds since the epoch 2026-01-01T00:00:00Z."""
        return self._state.now

    @property
    def snapshot(self) -> Snapshot:
        """The current snapshot (replaced by each write)."""
        return self._state.snapshot

    @snapshot.setter
    def snapshot(self, value: Snapshot) -> None:
        self._state.snapshot = value

    @property
    def journal(self) -> list[Access]:
        """Every request in order (a deletecollection also lists each object it removed, before itself)."""
        return self._state.journal

    @property
    def before_write(self) -> Callable[[Access], None] | None:
        """Called before a write is committed; it may raise to refuse the write or abort the caller."""
        return self._state.before_write

    @before_write.setter
    def before_write(self, hook: Callable[[Access], None] | None) -> None:
        self._state.before_write = hook

    def set_stale_view(self, kind_ref: KindRef, snapshot: Snapshot | None) -> None:
        """Answer reads of ``kind_ref`` from ``snapshot`` (None: back to the current state).

        "Objects this session has written" counts from this call on: writes of that kind made before
        the view was set are forgotten, so a server reused across reconciles gives each one a clean view.
        """
        self._state.set_stale_view(kind_ref, snapshot)

    def handle(self, method: str, path: str, query: list[tuple[str, str]] | tuple[tuple[str, str], ...],
               headers: Mapping[str, str], body: bytes | None) -> HttpResponse:
        method = method.upper()
        if "?" in path:
            path, _, qs = path.partition("?")
            query = [*query, *_query_pairs(qs)]
        raw_query = tuple(query)
        access = _Pending(method, raw_query)
        self._state.warnings = []
        self._state.field_mode = "Warn"
        try:
            return self._dispatch(method, path, raw_query, headers, body, access)
        except Propagate as p:
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
        info = self._state.registry.lookup(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
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
        self._state.journal.append(Access(access.method, access.verb, access.resource, access.namespace, access.name,
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
        warnings = self._state.warnings
        headers = {**_JSON_HEADERS, "Warning": warning_header(warnings)} if warnings else _JSON_HEADERS
        return HttpResponse(status, headers, raw, stream)

    def _dispatch(self, method: str, path: str, raw_query: tuple[tuple[str, str], ...],
                  headers: Mapping[str, str], body: bytes | None, access: _Pending) -> HttpResponse:
        route = _route(path)
        if isinstance(route, str):
            return self._discovery(method, route, access)
        group, version, watch, namespace, plural, name, sub = route
        query: dict[str, str] = {}
        for k, v in raw_query:
            query.setdefault(k, v)
        if watch:
            query["watch"] = "true"
        info = self._state.registry.lookup_plural(group, version, plural)
        if info is None or (namespace and not info.namespaced):
            raise E.no_such_path()
        if info.namespaced and not namespace and name:
            raise E.no_such_path()
        if info.namespaced and not namespace and method != "GET":
            raise E.method_not_allowed()  # only list/watch exist across all namespaces
        hmap = {k.lower(): v for k, v in headers.items()}
        req = Request(method, info, namespace, name, sub, query, raw_query, hmap, body)
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
            self._state.field_mode = directive(verb, query)
        if "dryRun" in query and query["dryRun"] != "All":
            raise E.bad_request(f"dryRun: Unsupported value: \"{query['dryRun']}\": supported values: \"All\"")
        if body and method in ("POST", "PUT", "PATCH", "DELETE"):
            req.parsed = parse_body(req)
            access.request_body = req.parsed
        try:
            status, out, stream = getattr(self, "_do_" + verb)(req)
        except ApiError as exc:
            self._journal_writes(req, access)
            return self._respond(access, exc.status, exc.body)
        self._journal_writes(req, access)
        return self._respond(access, status, out, stream)

    def _journal_writes(self, req: Request, access: _Pending) -> None:
        """One entry per request; a deletecollection also lists each object it removed, before itself."""
        if not req.writes:
            return
        if access.verb == "deletecollection":
            self._state.journal.extend(req.writes)
            return
        last = req.writes[-1]
        access.before, access.after, access.name = last.before, last.after, last.name

    # -- one handler per verb: the router's seam, each handing the request to its collaborator
    def _do_get(self, req: Request) -> _Answer:
        return self._reads.do_get(req)

    def _do_list(self, req: Request) -> _Answer:
        return self._reads.do_list(req)

    def _do_watch(self, req: Request) -> _Answer:
        return self._reads.do_watch(req)

    def _do_create(self, req: Request) -> _Answer:
        return self._writes.do_create(req)

    def _do_update(self, req: Request) -> _Answer:
        return self._writes.do_update(req)

    def _do_patch(self, req: Request) -> _Answer:
        return self._writes.do_patch(req)

    def _do_delete(self, req: Request) -> _Answer:
        return self._deletes.do_delete(req)

    def _do_deletecollection(self, req: Request) -> _Answer:
        return self._deletes.do_deletecollection(req)

    @staticmethod
    def _verb(req: Request) -> str:
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

    def _discovery(self, method: str, path: str, access: _Pending) -> HttpResponse:
        access.verb = "get"
        if method != "GET":
            raise E.method_not_allowed()
        from kamera_cli.apiserver.server import discovery  # deferred: only discovery requests need it

        answer = discovery.respond(self._state.registry, path)
        if answer is None:
            raise E.no_such_path()
        status, doc = answer
        return self._respond(access, int(status), doc)
