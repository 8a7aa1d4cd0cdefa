"""What one session wrote, read off the API server's journal, and what a user's action does.

Why apart from the model: both are about requests, not scheduling — the model turns a step's writes
into triggers, and the runtime replays a memoised step by re-sending them — so they are shared by the
model, the runtime and the bootstrap without any of them owning the others. A memoised write replayed
later is written as a fresh run would write it then (``as_written_now``): that is about requests too.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from typing import Any

from kamera_cli.apiserver import ApiError, ApiServer, Snapshot
from kamera_cli.model.objects import KindRef, ObjectRef
from kamera_cli.model.scenario import ActionSpec
from kamera_cli.sim.labels import WriteRec


def object_names(snapshot: Snapshot, kind: KindRef, namespace: str | None = None) -> list[tuple[str, str]]:
    """(namespace, name) of every object of a kind, sorted: what a watch mapping or a re-list enqueues."""
    out = []
    for obj in snapshot.objects_of(kind, namespace):
        meta = obj.get("metadata") or {}
        out.append((str(meta.get("namespace") or ""), str(meta.get("name") or "")))
    return sorted(out)


def journal_writes(server: ApiServer) -> list[WriteRec]:
    """The effective and refused writes of one session, in order, from the server's journal."""
    out: list[WriteRec] = []
    for acc in server.journal:
        if acc.verb not in ("create", "update", "patch", "delete", "apply", "deletecollection"):
            continue
        if getattr(acc, "dry_run", False):
            continue
        ref = _ref_of(acc)
        if acc.status >= 300:
            if ref is not None:
                out.append(WriteRec(acc.verb, ref, acc.subresource or "", None, None, refused=acc.status))
            continue
        sent = acc.request_body if acc.verb == "create" and isinstance(acc.request_body, dict) else None
        for before, after in _changes(acc):
            obj = after if after is not None else before
            assert obj is not None
            out.append(WriteRec(acc.verb, ObjectRef.of(obj), acc.subresource or "", before, after,
                                sent=sent if before is None else None))
    return out


def _changes(acc: Any) -> list[tuple[Mapping[str, Any] | None, Mapping[str, Any] | None]]:
    changes = getattr(acc, "changes", None)
    pairs = list(changes) if changes else [(acc.before, acc.after)]
    return [(b, a) for b, a in pairs if (b is not None or a is not None) and not same_content(b, a)]


def _ref_of(acc: Any) -> ObjectRef | None:
    res = acc.resource
    if res is None:
        return None
    api_version = f"{res.group}/{res.version}" if res.group else res.version
    name = acc.name or ""
    if not name and isinstance(acc.request_body, dict):  # a create names its object in the body
        meta = acc.request_body.get("metadata")
        if isinstance(meta, dict):
            name = str(meta.get("name") or meta.get("generateName") or "")
    return ObjectRef(api_version, res.kind, acc.namespace or "", name)


_VOLATILE = ("resourceVersion", "managedFields")


def same_content(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool:
    """Equal but for server bookkeeping: a write that changes only these emits no meaningful event."""
    if a is None or b is None:
        return a is b
    if a is b:
        return True
    ma, mb = a.get("metadata") or {}, b.get("metadata") or {}
    if {k: v for k, v in a.items() if k != "metadata"} != {k: v for k, v in b.items() if k != "metadata"}:
        return False
    return {k: v for k, v in ma.items() if k not in _VOLATILE} == {k: v for k, v in mb.items() if k not in _VOLATILE}


#: the field manager a server-side apply action is recorded under when it names none
USER_FIELD_MANAGER = "kamera-user"


def perform_action(server: ApiServer, spec: ActionSpec) -> None:
    """Apply one external action through the API server, as a user with kubectl would."""
    if spec.verb == "delete":
        assert spec.target is not None
        server.delete(spec.target)
        return
    if spec.verb == "patch":
        assert spec.target is not None
        manager = spec.field_manager or USER_FIELD_MANAGER
        if spec.patch_type == "apply":
            body = {**spec.patch, "metadata": {**(spec.patch.get("metadata") or {})}}
            if spec.target.namespace:
                body["metadata"]["namespace"] = spec.target.namespace
            server.apply(body, manager, force=spec.force, subresource=spec.subresource)
            return
        ptype = {"merge": "merge", "json": "json", "strategic": "strategic"}[spec.patch_type]
        server.patch(spec.target, ptype, spec.patch, subresource=spec.subresource,
                     field_manager=spec.field_manager or None)
        return
    if spec.verb == "replace":
        for obj in spec.objects:
            # kubectl replace: a PUT of the whole object, unconditional (the current resourceVersion)
            current = server.get(ObjectRef.of(obj))
            meta = {**(obj.get("metadata") or {}), "resourceVersion": current["metadata"]["resourceVersion"]}
            server.update({**obj, "metadata": meta})
        return
    for obj in spec.objects:
        ref = ObjectRef.of(obj)
        try:
            server.get(ref)
        except ApiError as exc:
            if exc.status != 404:
                raise
            server.create(dict(obj))
            continue
        info = server.registry.lookup(ref.api_version, ref.kind) if hasattr(server, "registry") else None
        ptype = "merge" if info is None or info.custom else "strategic"
        server.patch(ref, ptype, dict(obj))


_RFC3339 = "%Y-%m-%dT%H:%M:%SZ"


def _moved(stamp: str, then: str, now: str) -> str:
    """``stamp``, written by a run at ``then``, as the same run at ``now`` writes it (same distance)."""
    try:
        shift = _dt.datetime.strptime(now, _RFC3339) - _dt.datetime.strptime(then, _RFC3339)
        return (_dt.datetime.strptime(stamp, _RFC3339) + shift).strftime(_RFC3339)
    except ValueError:  # not a time the server wrote: left as it is
        return stamp


def as_written_now(obj: Mapping[str, Any], rv: int, stamps: tuple[str, str] | None = None,
             recorded_before: Mapping[str, Any] | None = None,
             current_before: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``obj`` (a memoised write's result) at resourceVersion ``rv`` as a fresh run would have made it
    now. The memo matched on what the run read, which leaves out server bookkeeping; so what the
    server keeps from the stored object (creationTimestamp, uid, other managers' managedFields) comes
    from the object stored now, and what it stamped at the write (``stamps``: then, now) moves to now."""
    meta = dict(obj.get("metadata") or {})
    meta["resourceVersion"] = str(rv)
    old = (recorded_before or {}).get("metadata") or {}
    now_meta = (current_before or {}).get("metadata") or {}
    if current_before is not None and recorded_before is not None:
        for key in ("creationTimestamp", "uid"):
            if key in now_meta and meta.get(key) == old.get(key):
                meta[key] = now_meta[key]
    then, now = stamps if stamps is not None else ("", "")
    if stamps is not None:
        for key in ("creationTimestamp", "deletionTimestamp"):
            if meta.get(key) == then and old.get(key) != then:
                meta[key] = now
        # a graceful delete's deadline (now + grace period) was stamped at the write too, later than now
        stamped = meta.get("deletionTimestamp")
        if isinstance(stamped, str) and stamped not in (now, old.get("deletionTimestamp")):
            meta["deletionTimestamp"] = _moved(stamped, then, now)
    if current_before is not None and "deletionTimestamp" in old and "deletionTimestamp" in now_meta:
        # an update never changes a deletion already under way (the server keeps the stored
        # deletionTimestamp and grace period): the object stored now may have been marked at another
        # instant than the one the memoised run met (timestamps are not in what the memo matched on)
        for key in ("deletionTimestamp", "deletionGracePeriodSeconds"):
            if meta.get(key) == old.get(key) and key in now_meta:
                meta[key] = now_meta[key]
    fields = meta.get("managedFields")
    if isinstance(fields, list) and (stamps is not None or current_before is not None):
        was = {_field_owner(f): f for f in old.get("managedFields") or [] if isinstance(f, dict)}
        stored = {_field_owner(f): f for f in now_meta.get("managedFields") or [] if isinstance(f, dict)}
        out = []
        for f in fields:
            if isinstance(f, dict):
                owner = _field_owner(f)
                prev = was.get(owner)
                if prev == f:  # untouched by the write: as stored now
                    f = stored.get(owner, f)
                elif (prev is not None and prev.get("time") == f.get("time") and owner in stored
                      and "time" in stored[owner] and _within(f.get("fieldsV1"), prev.get("fieldsV1"))):
                    # another manager's entry that only lost fields to the write: its time is the stored one
                    f = {**f, "time": stored[owner]["time"]}
                elif stamps is not None and f.get("time") == then:
                    f = {**f, "time": now}  # the writer's own entry (new, grown or re-stamped): stamped now
            out.append(f)
        if all(isinstance(f, dict) for f in out):
            # the server keeps the list sorted (``managed_fields._render``): with times moved to now,
            # the recorded order may no longer be the order a fresh run would store
            out.sort(key=_field_order)
        meta["managedFields"] = out
    return {**obj, "metadata": meta}


def _within(fields: Any, other: Any) -> bool:
    """Whether a fieldsV1 tree only has paths ``other`` has (an entry that lost fields, gained none)."""
    if not isinstance(fields, dict) or not isinstance(other, dict):
        return bool(fields == other)
    return all(k in other and _within(v, other[k]) for k, v in fields.items())


def _field_order(entry: Mapping[str, Any]) -> tuple[str, str, str, str, str]:
    return (str(entry.get("operation") or ""), str(entry.get("time") or ""), str(entry.get("manager") or ""),
            str(entry.get("apiVersion") or ""), str(entry.get("subresource") or ""))


def _field_owner(entry: Mapping[str, Any]) -> tuple[Any, ...]:
    return (entry.get("manager"), entry.get("operation"), entry.get("subresource"), entry.get("apiVersion"))
