"""Reads of the simulated API server: get, list (with continue tokens and selectors) and watch, from
the current snapshot or a controller's stale view."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

from kamera_cli.apiserver import errors as E
from kamera_cli.apiserver.registry.kinds import Registry, ResourceInfo
from kamera_cli.apiserver.server import scale as scale_view
from kamera_cli.apiserver.server import watching
from kamera_cli.apiserver.server.base import (
    _HISTORY,
    Access,
    _always,
    _decode_continue,
    _encode_continue,
    _int_param,
    _key,
    _Req,
)
from kamera_cli.apiserver.server.encoding import ListBody
from kamera_cli.apiserver.server.selectors import SelectorError, field_matcher, label_matcher
from kamera_cli.apiserver.storage.snapshot import Snapshot
from kamera_cli.model.objects import Manifest, ObjectRef


class ReadMixin:
    """The read verbs; the session state they read is ``ApiServer``'s."""

    # the session's state, set by ApiServer.__init__
    registry: Registry
    snapshot: Snapshot
    now: Callable[[], int]
    journal: list[Access]
    before_write: Callable[[Access], None] | None
    _stale: dict[tuple[str, str], Snapshot]
    _written: set[ObjectRef]
    _history: OrderedDict[int, Snapshot]
    _warnings: list[str]
    _field_mode: str

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

    def _remember(self, snap: Snapshot) -> None:
        self._history[snap.resource_version] = snap
        while len(self._history) > _HISTORY:
            self._history.popitem(last=False)

