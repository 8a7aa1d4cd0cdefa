"""A tiny stand-in for ``ApiServer`` used by the transport tests.

It implements just enough of the HTTP surface (``handle`` and ``registry``) to exercise the
transport with the real ``kubernetes`` client: CRUD, list with ``items``, three patch types (applied
naively), apply, watch streams and discovery (through the real ``discovery.respond``).  It records
every request so tests can assert what the client actually sent.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kamera_cli.apiserver.server import discovery

BUILTIN = Path(__file__).resolve().parents[2] / "kamera_cli" / "apiserver" / "data" / "builtin.json"


@dataclass(frozen=True, slots=True)
class FakeInfo:
    group: str
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    verbs: tuple[str, ...]
    subresources: tuple[str, ...]
    has_status: bool
    custom: bool
    list_kind: str


class FakeRegistry:
    def __init__(self, extra: tuple[FakeInfo, ...] = ()) -> None:
        rows = json.loads(BUILTIN.read_text())["resources"]
        infos = [
            FakeInfo(r["group"], r["version"], r["kind"], r["plural"], r["singular"], r["namespaced"],
                     tuple(r["verbs"]), tuple(r["subresources"]), "status" in r["subresources"], False,
                     r["listKind"])
            for r in rows
        ]
        infos.extend(extra)
        self._infos = sorted(infos, key=lambda i: (i.group, i.version, i.plural))

    def resources(self) -> list[FakeInfo]:
        return list(self._infos)

    def lookup_plural(self, group: str, version: str, plural: str) -> FakeInfo | None:
        for info in self._infos:
            if (info.group, info.version, info.plural) == (group, version, plural):
                return info
        return None


WIDGET = FakeInfo("example.com", "v1", "Widget", "widgets", "widget", True,
                  ("create", "delete", "get", "list", "patch", "update", "watch"), ("status",), True, True,
                  "WidgetList")


@dataclass(slots=True)
class Response:
    status: int
    headers: Mapping[str, str]
    body: bytes
    stream: Iterator[bytes] | None = None


@dataclass(slots=True)
class Seen:
    method: str
    path: str
    query: list[tuple[str, str]]
    headers: dict[str, str]
    body: Any


def _merge(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = _merge(out.get(k), v)
    return out


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}


class FakeServer:
    def __init__(self, registry: FakeRegistry | None = None) -> None:
        self.registry = registry or FakeRegistry((WIDGET,))
        self.objects: dict[tuple[str, str, str, str], dict[str, Any]] = {}
        self.events: list[tuple[int, str, str, str, dict[str, Any]]] = []  # rv, type, group/plural, ns, obj
        self.rv = 100
        self.seen: list[Seen] = []
        self.uid = 0

    # ---- HTTP surface -------------------------------------------------------------------------
    def handle(self, method: str, path: str, query: list[tuple[str, str]], headers: Mapping[str, str],
               body: bytes | None) -> Response:
        parsed = json.loads(body) if body else None
        self.seen.append(Seen(method, path, list(query), dict(headers), parsed))
        disc = discovery.respond(self.registry, path)
        if disc is not None:
            return self._json(*disc)
        route = self._route(path)
        if route is None:
            return self._json(404, _status(404, "NotFound", "the server could not find the requested resource"))
        info, ns, name, _sub = route
        q = dict(query)
        if method == "GET" and name is None and q.get("watch") == "true":
            return Response(200, {"Content-Type": "application/json"}, b"", self._watch(info, ns, q))
        if method == "GET" and name is None:
            return self._list(info, ns, q)
        if method == "GET":
            return self._get(info, ns, name)
        if method == "POST":
            return self._create(info, ns, parsed or {})
        if method == "PUT" and name is not None:
            return self._replace(info, ns, name, parsed or {})
        if method == "PATCH" and name is not None:
            return self._patch(info, ns, name, headers.get("Content-Type", ""), parsed, q)
        if method == "DELETE" and name is not None:
            return self._delete(info, ns, name)
        return self._json(405, _status(405, "MethodNotAllowed", "method not allowed"))

    # ---- helpers ------------------------------------------------------------------------------
    def _json(self, status: int, doc: Any) -> Response:
        return Response(status, {"Content-Type": "application/json"}, json.dumps(doc).encode())

    def _route(self, path: str) -> tuple[FakeInfo, str, str | None, str | None] | None:
        parts = [p for p in path.split("/") if p]
        if parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            return None
        ns = ""
        if len(rest) >= 3 and rest[0] == "namespaces":
            ns, rest = rest[1], rest[2:]
        if not rest:
            return None
        info = self.registry.lookup_plural(group, version, rest[0])
        if info is None:
            return None
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        return info, ns, name, sub

    def _key(self, info: FakeInfo, ns: str, name: str) -> tuple[str, str, str, str]:
        return (info.group, info.plural, ns, name)

    def _not_found(self, info: FakeInfo, name: str) -> Response:
        return self._json(404, _status(404, "NotFound", f'{info.plural} "{name}" not found'))

    def _commit(self, info: FakeInfo, ns: str, obj: dict[str, Any], kind: str) -> dict[str, Any]:
        self.rv += 1
        obj = copy.deepcopy(obj)
        obj["apiVersion"] = f"{info.group}/{info.version}" if info.group else info.version
        obj["kind"] = info.kind
        meta = obj.setdefault("metadata", {})
        meta["resourceVersion"] = str(self.rv)
        if ns:
            meta["namespace"] = ns
        key = self._key(info, ns, meta["name"])
        if kind == "DELETED":
            self.objects.pop(key, None)
        else:
            self.objects[key] = obj
        self.events.append((self.rv, kind, f"{info.group}/{info.plural}", ns, copy.deepcopy(obj)))
        return obj

    def _list(self, info: FakeInfo, ns: str, q: dict[str, str]) -> Response:
        items = [o for (g, p, n, _), o in sorted(self.objects.items()) if (g, p) == (info.group, info.plural)
                 and (not ns or n == ns)]
        selector = q.get("labelSelector")
        if selector:
            k, _, v = selector.partition("=")
            items = [o for o in items if (o["metadata"].get("labels") or {}).get(k) == v]
        return self._json(200, {"kind": info.list_kind, "apiVersion": f"{info.group}/{info.version}".lstrip("/"),
                                "metadata": {"resourceVersion": str(self.rv)}, "items": items})

    def _watch(self, info: FakeInfo, ns: str, q: dict[str, str]) -> Iterator[bytes]:
        since = q.get("resourceVersion")
        if not since or since == "0":
            snapshot = [o for (g, p, n, _), o in sorted(self.objects.items())
                        if (g, p) == (info.group, info.plural) and (not ns or n == ns)]
            for obj in snapshot:
                yield json.dumps({"type": "ADDED", "object": obj}).encode() + b"\n"
            return
        for rv, kind, gp, n, obj in list(self.events):
            if rv > int(since) and gp == f"{info.group}/{info.plural}" and (not ns or n == ns):
                yield json.dumps({"type": kind, "object": obj}).encode() + b"\n"

    def _get(self, info: FakeInfo, ns: str, name: str) -> Response:
        obj = self.objects.get(self._key(info, ns, name))
        return self._json(200, obj) if obj is not None else self._not_found(info, name)

    def _create(self, info: FakeInfo, ns: str, body: dict[str, Any]) -> Response:
        name = body.get("metadata", {}).get("name", "")
        if self._key(info, ns, name) in self.objects:
            return self._json(409, _status(409, "AlreadyExists", f'{info.plural} "{name}" already exists'))
        self.uid += 1
        body = copy.deepcopy(body)
        body.setdefault("metadata", {})["uid"] = f"00000000-0000-4000-8000-{self.uid:012d}"
        body["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
        return self._json(201, self._commit(info, ns, body, "ADDED"))

    def _replace(self, info: FakeInfo, ns: str, name: str, body: dict[str, Any]) -> Response:
        old = self.objects.get(self._key(info, ns, name))
        if old is None:
            return self._not_found(info, name)
        rv = body.get("metadata", {}).get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            msg = (f'Operation cannot be fulfilled on {info.plural} "{name}": the object has been modified; '
                   "please apply your changes to the latest version and try again")
            return self._json(409, _status(409, "Conflict", msg))
        return self._json(200, self._commit(info, ns, body, "MODIFIED"))

    def _patch(self, info: FakeInfo, ns: str, name: str, ctype: str, patch: Any, q: dict[str, str]) -> Response:
        old = self.objects.get(self._key(info, ns, name))
        if ctype.startswith("application/apply-patch"):
            if "fieldManager" not in q:
                return self._json(422, _status(422, "Invalid", "fieldManager is required for apply"))
            new = _merge(old or {}, patch)
            return self._json(201 if old is None else 200,
                              self._commit(info, ns, new, "ADDED" if old is None else "MODIFIED"))
        if old is None:
            return self._not_found(info, name)
        if ctype == "application/json-patch+json":
            import jsonpatch

            new = jsonpatch.apply_patch(old, patch)
        elif ctype in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
            if ctype.startswith("application/strategic") and info.custom:
                return self._json(415, _status(415, "UnsupportedMediaType", f"the body of the request was in an "
                                               f"unknown format - accepted media types include: {ctype}"))
            new = _merge(old, patch)
        else:
            return self._json(415, _status(415, "UnsupportedMediaType", f"unsupported {ctype!r}"))
        return self._json(200, self._commit(info, ns, new, "MODIFIED"))

    def _delete(self, info: FakeInfo, ns: str, name: str) -> Response:
        old = self.objects.get(self._key(info, ns, name))
        if old is None:
            return self._not_found(info, name)
        return self._json(200, self._commit(info, ns, old, "DELETED"))

    # ---- programmatic ---------------------------------------------------------------------------
    def seed(self, api_version: str, plural: str, ns: str, obj: dict[str, Any]) -> dict[str, Any]:
        group, _, version = api_version.rpartition("/")
        info = self.registry.lookup_plural(group, version, plural)
        assert info is not None
        return self._commit(info, ns, obj, "ADDED")

    @property
    def snapshot(self) -> Any:
        return _Snap(self.rv)


@dataclass(frozen=True, slots=True)
class _Snap:
    resource_version: int
    extra: tuple[Any, ...] = field(default=())


WIDGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList",
                  "shortNames": ["wd"]},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}},
        }],
    },
}
