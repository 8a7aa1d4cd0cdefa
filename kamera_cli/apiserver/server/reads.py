"""Reads of the simulated API server: get, list (with continue tokens and selectors) and watch, from
the current snapshot or a controller's stale view.

Why a collaborator: reads only look at the session's state (and remember snapshots for continue
tokens); the writes and deletions never call them, except a deletecollection, which lists and
matches as a list does.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from typing import Any

from kamera_cli.apiserver import errors as E
from kamera_cli.apiserver.registry.kinds import ResourceInfo
from kamera_cli.apiserver.server import scale as scale_view
from kamera_cli.apiserver.server import watching
from kamera_cli.apiserver.server.base import Request, object_ref, present
from kamera_cli.apiserver.server.encoding import ListBody
from kamera_cli.apiserver.server.selectors import SelectorError, field_matcher, label_matcher
from kamera_cli.apiserver.server.state import SessionState
from kamera_cli.apiserver.storage.snapshot import Snapshot
from kamera_cli.model.objects import Manifest, ObjectRef


def _always(_obj: Manifest) -> bool:
    return True


def _key(obj: Manifest) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"


def _int_param(req: Request, key: str) -> int:
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


class Reads:
    """The read verbs over a session's state."""

    __slots__ = ("state",)

    def __init__(self, state: SessionState) -> None:
        self.state = state

    def read_view(self, info: ResourceInfo) -> Snapshot | None:
        if not self.state.stale:
            return None
        ref = object_ref(info, "", "")
        return self.state.stale.get((ref.api_version, ref.kind))

    def read(self, info: ResourceInfo, ref: ObjectRef) -> Manifest | None:
        stale = self.read_view(info)
        if stale is not None and ref not in self.state.written:
            return stale.get(ref)
        return self.state.snapshot.get(ref)

    def list_objects(self, info: ResourceInfo, namespace: str, snap: Snapshot | None = None
                      ) -> tuple[list[Manifest], int]:
        kind_ref = object_ref(info, "", "").kind_ref
        ns = namespace if info.namespaced and namespace else None
        if snap is not None:
            return snap.objects_of(kind_ref, ns), snap.resource_version
        stale = self.read_view(info)
        if stale is None:
            return self.state.snapshot.objects_of(kind_ref, ns), self.state.snapshot.resource_version
        merged: dict[tuple[str, str], Manifest] = {}
        for obj in stale.objects_of(kind_ref, ns):
            r = ObjectRef.of(obj)
            if r not in self.state.written:
                merged[(r.namespace, r.name)] = obj
        for r in self.state.written:
            if r.api_version == kind_ref.api_version and r.kind == kind_ref.kind and (ns is None or r.namespace == ns):
                cur = self.state.snapshot.get(r)
                if cur is not None:
                    merged[(r.namespace, r.name)] = cur
        return [merged[k] for k in sorted(merged)], stale.resource_version

    def matchers(self, req: Request) -> Callable[[Manifest], bool]:
        try:
            lab = label_matcher(req.query.get("labelSelector", ""))
            fld = field_matcher(req.query.get("fieldSelector", ""), req.info)
        except SelectorError as exc:
            raise E.bad_request(str(exc)) from None
        if lab and fld:
            return lambda o: lab(o) and fld(o)
        return lab or fld or _always

    def do_get(self, req: Request) -> tuple[int, Any, None]:
        obj = self.read(req.info, object_ref(req.info, req.namespace, req.name))
        if obj is None:
            raise E.not_found(req.info.plural, req.info.group, req.name)
        if req.sub == "scale":
            return 200, scale_view.scale_of(req.info, obj), None
        return 200, present(req.info, obj), None

    def do_list(self, req: Request) -> tuple[int, Any, None]:
        info = req.info
        match = self.matchers(req)
        token = req.query.get("continue", "")
        start = ""
        snap: Snapshot | None = None
        if token:
            rv, start = _decode_continue(token)
            snap = self.state.history.get(rv)
            if snap is None:
                raise E.gone("The provided continue parameter is too old to display a consistent list result. You "
                             "can start a new list without the continue parameter, or use the continue token in "
                             "this response to retrieve the remainder of the results. Continuing with the provided "
                             "token results in an inconsistent list - objects that were created, modified, or "
                             "deleted between the time the first chunk was returned and now may show up in the list.")
        elif req.query.get("resourceVersionMatch") == "Exact" and req.query.get("resourceVersion"):
            rv = _int_param(req, "resourceVersion")
            snap = self.state.history.get(rv)
            if snap is None:
                raise E.gone(f"too old resource version: {rv} ({self.state.snapshot.oldest_logged_rv()})")
        objs, rv = self.list_objects(info, req.namespace, snap)
        items = [o for o in objs if match(o)]
        if start:
            items = [o for o in items if _key(o) > start]
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        limit = _int_param(req, "limit") if req.query.get("limit") else 0
        if limit > 0 and len(items) > limit:
            rest = len(items) - limit
            items = items[:limit]
            self.state.remember(snap or self.state.snapshot)
            meta["continue"] = _encode_continue(rv, _key(items[-1]))
            meta["remainingItemCount"] = rest
        shown = [present(info, o) for o in items] if info.storage_version else items
        return 200, ListBody(kind=info.list_kind, apiVersion=info.api_version, metadata=meta, items=shown), None

    def do_watch(self, req: Request) -> tuple[int, Any, Iterator[bytes]]:
        info = req.info
        match = self.matchers(req)
        if req.name:
            name = req.name
            base = match
            match = lambda o: base(o) and (o.get("metadata") or {}).get("name") == name  # noqa: E731
        if req.query.get("timeoutSeconds"):
            _int_param(req, "timeoutSeconds")  # honoured trivially: every simulated watch ends by itself
        rv_text = req.query.get("resourceVersion", "")
        view = self.read_view(info) or self.state.snapshot
        events: list[watching.Event]
        kind_ref = object_ref(info, "", "").kind_ref
        ns = req.namespace
        initial = req.flag("sendInitialEvents")
        if initial and req.query.get("resourceVersionMatch") != "NotOlderThan":
            raise E.error(422, "Invalid", "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: "
                                          "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                          group="meta.k8s.io", kind="ListOptions")
        if rv_text in ("", "0") or initial:
            objs, rv = self.list_objects(info, ns)
            events = [{"type": "ADDED", "object": present(info, o)} for o in objs if match(o)]
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
            events = watching.events_from_log(records, match, lambda o: present(info, o))
        if req.flag("allowWatchBookmarks") and not initial:
            events.append(watching.bookmark(info.kind, info.api_version, rv))
        return 200, None, watching.stream(events)
