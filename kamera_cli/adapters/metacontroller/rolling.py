"""Rolling child updates: ControllerRevisions, one hook call per revision, one child at a time.

Follows metacontroller v4.17 ``pkg/controller/composite/controller_revision.go`` (``syncRevisions``,
``manageRevisions``, ``newControllerRevision``) and ``rolling_update.go``.  When a child resource has
``RollingRecreate`` or ``RollingInPlace``, the parent's history is kept in ControllerRevisions (the
recorded ``revisionHistory.fieldPaths`` of the parent, default ``spec``, and which children belong to
the revision); the sync hook is called once per revision with the parent as that revision had it, and
a child moves to the latest revision only when every child already there is updated and passes the
``statusChecks`` — so a bad rollout stops after one child.  The ``Updated`` condition in the parent's
status says where the rollout is.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from kamera_cli.adapters.metacontroller.apply import ApplyError, apply_update
from kamera_cli.adapters.metacontroller.children import (
    ObjectMap,
    SyncError,
    claim,
    controller_ref,
    delete_child,
)
from kamera_cli.adapters.metacontroller.hooks import HookAnswer
from kamera_cli.adapters.metacontroller.manifest import MetaSpec
from kamera_cli.adapters.metacontroller.rest import ResInfo, Rest, label_selector_matches, meta

__all__ = ["RollingEngine", "rolling_sync"]


class RollingEngine(Protocol):
    """What a rolling update needs of ``sync.Engine``, which calls it (a protocol: no import circle)."""

    spec: MetaSpec
    rest: Rest
    parent_info: ResInfo

    def resolve(self, api_version: str, name: str, /) -> ResInfo | None: ...

    def call_for(self, parent: Mapping[str, Any], seen: Mapping[str, Any], observed: ObjectMap,
                 related: ObjectMap) -> HookAnswer: ...

    def related_of(self, parent: Mapping[str, Any]) -> ObjectMap: ...

    def desired_children(self, parent: Mapping[str, Any], items: Any, what: str) -> ObjectMap: ...

    def selector_of(self, parent: Mapping[str, Any]) -> dict[str, Any]: ...

REVISIONS = ("metacontroller.k8s.io/v1alpha1", "controllerrevisions")
LABEL_GROUP = "metacontroller.k8s.io/apiGroup"
LABEL_RESOURCE = "metacontroller.k8s.io/resource"
#: (API group, kind)
GK = tuple[str, str]


@dataclass
class _Revision:
    parent: dict[str, Any]
    revision: dict[str, Any]
    body: dict[str, Any] = field(default_factory=dict)
    #: the hook's children of this revision: (group, kind) -> relative name -> object
    desired: dict[GK, dict[str, dict[str, Any]]] = field(default_factory=dict)

    def names(self, gk: GK) -> list[str]:
        for entry in self.revision.get("children") or []:
            if (entry.get("apiGroup") or "", entry.get("kind")) == gk:
                return list(entry.get("names") or [])
        return []

    def add(self, gk: GK, name: str) -> None:
        entries = self.revision.setdefault("children", [])
        for entry in entries:
            if (entry.get("apiGroup") or "", entry.get("kind")) == gk:
                if name not in entry.setdefault("names", []):
                    entry["names"].append(name)
                return
        entries.append({"apiGroup": gk[0], "kind": gk[1], "names": [name]})

    def remove(self, gk: GK, name: str) -> None:
        for entry in self.revision.get("children") or []:
            if (entry.get("apiGroup") or "", entry.get("kind")) == gk and name in (entry.get("names") or []):
                entry["names"].remove(name)
                return

    def count(self) -> int:
        return sum(len(e.get("names") or []) for e in self.revision.get("children") or [])


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def _relative(parent: Mapping[str, Any], obj: Mapping[str, Any]) -> str:
    namespace = meta(obj).get("namespace") or ""
    name = str(meta(obj).get("name") or "")
    return f"{namespace}/{name}" if not meta(parent).get("namespace") and namespace else name


def _find(objects: ObjectMap, parent: Mapping[str, Any], gk: GK, name: str) -> dict[str, Any] | None:
    for (api_version, kind), group in sorted(objects.items()):
        if (_group(api_version), kind) == gk:
            for obj in group.values():
                if _relative(parent, obj) == name:
                    return obj
    return None


def _lookup(source: Any, parts: list[str]) -> tuple[bool, Any]:
    """The value at a dotted path's parts, and whether it is there (``NestedFieldNoCopy``)."""
    for part in parts:
        if not isinstance(source, dict) or part not in source:
            return False, None
        source = source[part]
    return True, source


def make_patch(source: Mapping[str, Any], paths: tuple[str, ...]) -> dict[str, Any]:
    """The parent's recorded fields (``makePatch``): each dotted path that exists, copied."""
    patch: dict[str, Any] = {}
    apply_patch(patch, source, paths)
    return patch


def apply_patch(dest: dict[str, Any], patch: Mapping[str, Any], paths: tuple[str, ...]) -> None:
    """Each recorded field present in ``patch`` set in ``dest`` (``applyPatch``; ``makePatch`` into {})."""
    for path in paths:
        parts = path.split(".")
        found, value = _lookup(patch, parts)
        if found:
            _set(dest, parts, copy.deepcopy(value))


def _set(dest: dict[str, Any], parts: list[str], value: Any) -> None:
    for part in parts[:-1]:
        nxt = dest.get(part)
        if not isinstance(nxt, dict):
            nxt = {}
            dest[part] = nxt
        dest = nxt
    dest[parts[-1]] = value


def _set_condition(status: dict[str, Any], kind: str, value: str, reason: str, message: str) -> None:
    """``dynamicobject.SetCondition``, including its quirk: it edits a deep copy of an existing
    condition list (``NestedSlice``), so a condition of that type already present is left as it is."""
    conditions = status.get("conditions")
    if isinstance(conditions, list) and any(isinstance(c, dict) and c.get("type") == kind for c in conditions):
        return
    condition = {"type": kind, "status": value}
    if reason:
        condition["reason"] = reason
    if message:
        condition["message"] = message
    status["conditions"] = [*(conditions if isinstance(conditions, list) else []), condition]


def rolling_sync(engine: RollingEngine, parent: dict[str, Any], observed: ObjectMap) -> dict[str, Any]:
    """The combined hook answer of every revision (``syncRevisions``)."""
    info = engine.resolve(*REVISIONS)
    if info is None:
        raise SyncError("a rolling update strategy needs metacontroller's ControllerRevision CRD "
                        "(controllerrevisions.metacontroller.k8s.io) in the cluster")
    observed_revisions = _claim_revisions(engine, info, parent)
    paths = engine.spec.revision_field_paths
    latest_patch = make_patch(parent, paths)
    latest = _Revision(parent, {})
    revisions = [latest]
    for revision in observed_revisions:
        patch = revision.get("parentPatch") or {}
        if patch == latest_patch:
            latest.revision = copy.deepcopy(revision)
            continue
        old_parent = copy.deepcopy(parent)
        apply_patch(old_parent, patch, paths)
        revisions.append(_Revision(old_parent, copy.deepcopy(revision)))
    if not latest.revision:
        latest.revision = _new_revision(engine, parent, latest_patch)
    for rev in revisions:
        answer = engine.call_for(parent, rev.parent, observed, engine.related_of(rev.parent))
        rev.body = answer.body
        for obj in engine.desired_children(parent, answer.body.get("children"), "children").values():
            for child in obj.values():
                rev.desired.setdefault((_group(str(child["apiVersion"])), str(child["kind"])), {})[
                    _relative(parent, child)] = child
    status = latest.body.get("status")
    latest.body["status"] = status if isinstance(status, dict) else {}
    _roll(engine, revisions, observed, parent)
    revisions = [latest, *(r for r in revisions[1:] if r.count() > 0)]
    _manage_revisions(engine, info, parent, observed_revisions, [r.revision for r in revisions])
    children = {key: dict(group) for key, group in latest.desired.items()}
    for rev in revisions[1:]:
        for entry in rev.revision.get("children") or []:
            gk = (entry.get("apiGroup") or "", str(entry.get("kind")))
            for name in entry.get("names") or []:
                older = rev.desired.get(gk, {}).get(name)
                if older is not None and name in children.get(gk, {}):
                    children[gk][name] = older  # not rolled yet: the child as its revision wants it
    resyncs = [float(r.body.get("resyncAfterSeconds") or 0) for r in revisions]
    positive = [s for s in resyncs if s > 0]
    return {"status": latest.body["status"],
            "children": [children[gk][name] for gk in sorted(children) for name in sorted(children[gk])],
            "resyncAfterSeconds": min(positive) if positive else 0,
            "finalized": all(r.body.get("finalized") is True for r in revisions)}


def _claim_revisions(engine: RollingEngine, info: ResInfo, parent: dict[str, Any]) -> list[dict[str, Any]]:
    selector = copy.deepcopy(engine.selector_of(parent))
    selector["matchLabels"] = {**(selector.get("matchLabels") or {}), LABEL_GROUP: engine.parent_info.group,
                               LABEL_RESOURCE: engine.parent_info.plural}
    namespace = meta(parent).get("namespace") or None

    def can_adopt() -> None:
        fresh = engine.rest.get(engine.parent_info, namespace, str(meta(parent).get("name")))
        if fresh is None or meta(fresh).get("uid") != meta(parent).get("uid") or meta(fresh).get("deletionTimestamp"):
            raise SyncError("can't adopt ControllerRevisions: the parent is gone or being deleted")

    def matches(obj: Mapping[str, Any]) -> bool:
        return label_selector_matches(selector, meta(obj).get("labels"))

    return claim(engine.rest, info, parent, engine.rest.list(info, namespace), matches, can_adopt)


def _new_revision(engine: RollingEngine, parent: Mapping[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    data = json.dumps(patch, sort_keys=True, separators=(",", ":"))
    uid = str(meta(parent).get("uid") or "")
    info = engine.parent_info
    prefix = f"{info.plural}.{info.group or 'core'}"[: 253 - 41]
    name = f"{prefix}-{hashlib.sha1((uid + data).encode(), usedforsecurity=False).hexdigest()}"
    if engine.spec.generate_selector:
        labels = {"controller-uid": uid}
    else:
        template = ((parent.get("spec") or {}).get("template") or {}) if isinstance(parent.get("spec"), dict) else {}
        labels = dict((template.get("metadata") or {}).get("labels") or {}) if isinstance(template, dict) else {}
    labels.update({LABEL_GROUP: info.group, LABEL_RESOURCE: info.plural})
    return {"apiVersion": REVISIONS[0], "kind": "ControllerRevision",
            "metadata": {"name": name, "namespace": meta(parent).get("namespace"), "labels": labels,
                         "ownerReferences": [controller_ref(parent)]},
            "parentPatch": patch}


def _roll(engine: RollingEngine, revisions: list[_Revision], observed: ObjectMap, parent: Mapping[str, Any]) -> None:
    """Which revision each rolling child belongs to; at most one child moves to the latest per sync."""
    methods = {(_group(c.api_version), info.kind): c for c in engine.spec.children
               if (info := engine.resolve(c.api_version, c.resource)) is not None}

    def rolling(gk: GK) -> bool:
        rule = methods.get(gk)
        return rule is not None and rule.rolling

    latest = revisions[0]
    claimed: dict[GK, dict[str, _Revision]] = {}
    for rev in revisions:  # syncRevisionClaims: each child belongs to the first revision listing it
        kept = []
        for entry in rev.revision.get("children") or []:
            gk = (entry.get("apiGroup") or "", str(entry.get("kind")))
            if not rolling(gk):
                continue
            names = [n for n in entry.get("names") or []
                     if n in latest.desired.get(gk, {}) and n not in claimed.get(gk, {})]
            for name in names:
                claimed.setdefault(gk, {})[name] = rev
            if names:
                kept.append(entry)
        rev.revision["children"] = kept
    for gk in sorted(latest.desired):
        if not rolling(gk):
            continue
        for name in sorted(latest.desired[gk]):
            owner = claimed.get(gk, {}).get(name)
            if owner is None:  # a new child starts on the latest revision
                latest.add(gk, name)
                claimed.setdefault(gk, {})[name] = latest
                continue
            child = _find(observed, parent, gk, name)
            if owner is latest or child is None:
                continue
            try:
                updated = apply_update(child, latest.desired[gk][name])
            except ApplyError:
                continue
            if updated == child:  # already what the latest revision wants
                latest.add(gk, name)
                owner.remove(gk, name)
                claimed[gk][name] = latest
    status = latest.body["status"]
    for child in latest.body.get("children") or []:
        if not isinstance(child, dict):
            continue
        gk = (_group(str(child.get("apiVersion") or "")), str(child.get("kind") or ""))
        name = str(meta(child).get("name") or "")
        if not rolling(gk) or claimed.get(gk, {}).get(name) is latest:
            continue
        waiting = _not_ready(latest, observed, parent, methods)
        if waiting:
            _set_condition(status, "Updated", "False", "RolloutWaiting", waiting)
            return
        latest.add(gk, name)
        for rev in revisions[1:]:
            rev.remove(gk, name)
        _set_condition(status, "Updated", "False", "RolloutProgressing", f"updating {gk[1]} {name}")
        return
    _set_condition(status, "Updated", "True", "OnLatestRevision",
                   f"latest ControllerRevision: {meta(latest.revision).get('name')}")


def _not_ready(latest: _Revision, observed: ObjectMap, parent: Mapping[str, Any], methods: Mapping[GK, Any]) -> str:
    """Why the rollout must wait (``shouldContinueRolling``), or "" when the next child may go."""
    for entry in latest.revision.get("children") or []:
        gk = (entry.get("apiGroup") or "", str(entry.get("kind")))
        rule = methods.get(gk)
        if rule is None or not rule.rolling:
            continue
        for name in entry.get("names") or []:
            child = _find(observed, parent, gk, name)
            if child is None:
                return f"missing child {gk[1]} {name}"
            try:
                updated = apply_update(child, latest.desired.get(gk, {}).get(name) or {})
            except ApplyError as exc:
                return f"can't check if child {gk[1]} {name} is updated: {exc}"
            if updated != child:
                return f"child {gk[1]} {name} is not updated yet"
            found = child.get("status")
            status: Mapping[str, Any] = found if isinstance(found, dict) else {}
            seen = status.get("observedGeneration")
            if rule.update_method == "RollingInPlace" and isinstance(seen, int) and 0 < seen < (
                    meta(child).get("generation") or 0):
                return f"child {gk[1]} {name} with RollingInPlace update strategy hasn't observed latest spec"
            failed = _status_check(json.loads(rule.status_checks) if rule.status_checks else [], status)
            if failed:
                return f"child {gk[1]} {name} failed status check: {failed}"
    return ""


def _status_check(checks: list[Any], status: Mapping[str, Any]) -> str:
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
    for check in checks:
        found = next((c for c in conditions if c.get("type") == check.get("type")), None)
        if found is None:
            return f"required condition type missing: {check.get('type')!r}"
        for key in ("status", "reason"):
            if check.get(key) is not None and found.get(key) != check[key]:
                return f"{check.get('type')!r} condition {key} is {found.get(key)!r} (want {check[key]!r})"
    return ""


def _manage_revisions(engine: RollingEngine, info: ResInfo, parent: Mapping[str, Any], observed: list[dict[str, Any]],
                      desired: list[dict[str, Any]]) -> None:
    """Delete the revisions no longer needed, update the changed ones, create the new one."""
    namespace = meta(parent).get("namespace") or None
    wanted = {meta(r).get("name") for r in desired}
    by_name = {meta(r).get("name"): r for r in observed}
    for revision in observed:
        if meta(revision).get("name") not in wanted:
            delete_child(engine.rest, info, revision)
    for revision in desired:
        name = str(meta(revision).get("name"))
        old = by_name.get(name)
        if old is None:
            engine.rest.call("POST", info.path(namespace), revision)
        elif old != revision:
            revision.setdefault("metadata", {})["resourceVersion"] = meta(old).get("resourceVersion")
            engine.rest.call("PUT", info.path(namespace, name), revision)
