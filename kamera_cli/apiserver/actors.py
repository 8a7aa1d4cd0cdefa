"""The garbage collector and the namespace controller as actors the explorer interleaves.

Why actors and not inline effects: in a real cluster both run asynchronously, and controller bugs
hide exactly in the window between "owner deleted" and "dependents gone".  ``*_work`` lists what
the actor could do next in a deterministic order; ``*_step`` does ONE item through the server's
ordinary request path (so hooks, journal and RVs behave as for any other client).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kamera_cli.apiserver.errors import ApiError
from kamera_cli.apiserver.registry.kinds import Registry
from kamera_cli.apiserver.server.session import ApiServer
from kamera_cli.apiserver.storage.snapshot import Snapshot
from kamera_cli.model.objects import Manifest, ObjectRef

GC = "garbage-collector"
NAMESPACE = "namespace-controller"
_FOREGROUND = "foregroundDeletion"
_ORPHAN = "orphan"


@dataclass(frozen=True, slots=True, order=True)
class ActorWork:
    """One step an actor can take: ``action`` on ``target`` (``detail`` says which owner/finalizer)."""

    actor: str
    action: str  # delete | orphan | remove-dangling | remove-finalizer | delete-content | finalize
    target: ObjectRef
    detail: str = ""

    def describe(self) -> str:
        what = {
            "delete": "delete",
            "orphan": "remove the ownerReference to " + self.detail + " from",
            "remove-finalizer": f"remove the {self.detail} finalizer from",
            "remove-dangling": "remove ownerReferences to owners that are gone from",
            "delete-content": "delete the contents of",
            "finalize": "remove the kubernetes finalizer from",
        }.get(self.action, self.action)
        why = f" ({self.detail})" if self.action == "delete" and self.detail else ""
        return f"{self.actor}: {what} {self.target}{why}"


def _meta(obj: Manifest) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _deleting(obj: Manifest) -> bool:
    return bool(_meta(obj).get("deletionTimestamp"))


def gc_work(snapshot: Snapshot, registry: Registry) -> list[ActorWork]:
    """What the garbage collector could do now, sorted (one item per step); cached per snapshot."""
    return list(snapshot.derived("gc_work", lambda s: _gc_work(s, registry)))


def _names_namespaced_owner(ref: ObjectRef, obj: Manifest, registry: Registry) -> bool:
    """A cluster-scoped object naming an owner of a namespaced kind: the real GC leaves it alone.

    An ownerReference carries no namespace, so there is nowhere to look such an owner up: the
    garbage collector's ``isDangling`` answers ``namespacedOwnerOfClusterScopedObjectErr`` before
    any lookup, and ``attemptToDeleteItem`` forgets the object — neither deleted nor patched, whatever
    its other references say (it posts an ``OwnerRefInvalidNamespace`` warning). Counting the owner
    as gone instead deleted, say, the Namespace a kopf handler ``adopt``ed, right after creating it.
    """
    if ref.namespace:
        return False
    for owner in _meta(obj).get("ownerReferences") or []:
        if isinstance(owner, Mapping):
            info = registry.lookup(str(owner.get("apiVersion", "")), str(owner.get("kind", "")))
            if info is not None and info.namespaced:
                return True
    return False


def _names_unknown_kind(obj: Manifest, registry: Registry) -> bool:
    """An ownerReference whose kind discovery does not serve: the real GC can do nothing with the object.

    ``isDangling`` asks the RESTMapper for the owner's resource before anything else; when that fails
    ``classifyReferences`` returns the error for the whole object and ``attemptToDeleteItem`` requeues
    it — again and again, until a CRD serving the kind appears. So the object is neither collected nor
    patched, whatever its other references say, and a foreground owner waiting for it keeps waiting.
    Counting such an owner as gone instead deleted the dependent at once.
    """
    return any(registry.lookup(str(owner.get("apiVersion", "")), str(owner.get("kind", ""))) is None
               for owner in _meta(obj).get("ownerReferences") or [] if isinstance(owner, Mapping))


def _gc_work(snapshot: Snapshot, registry: Registry) -> tuple[ActorWork, ...]:
    entries = sorted(snapshot.iter_entries(), key=lambda e: e[0])
    by_uid: dict[str, tuple[ObjectRef, Manifest]] = {}
    for ref, obj in entries:
        uid = _meta(obj).get("uid")
        if isinstance(uid, str):
            by_uid[uid] = (ref, obj)

    def owner_of(dep: ObjectRef, owner: Mapping[str, Any]) -> tuple[ObjectRef, Manifest] | None:
        hit = by_uid.get(str(owner.get("uid", "")))
        if hit is None:
            return None
        oref = hit[0]
        if oref.namespace and oref.namespace != dep.namespace:
            return None  # a namespaced owner in another namespace does not count
        return hit

    work: set[ActorWork] = set()
    dependents: dict[str, list[tuple[ObjectRef, Manifest, Mapping[str, Any]]]] = {}
    stuck: set[ObjectRef] = set()  # naming an owner kind the server does not serve: never acted on
    for ref, obj in entries:
        owners = [o for o in _meta(obj).get("ownerReferences") or [] if isinstance(o, Mapping)]
        if not owners or _names_namespaced_owner(ref, obj, registry):
            continue
        if _names_unknown_kind(obj, registry):
            stuck.add(ref)
        present = False
        dangling: list[str] = []
        for o in owners:
            hit = owner_of(ref, o)
            if hit is not None:
                present = True
                dependents.setdefault(str(o.get("uid")), []).append((ref, obj, o))
            else:
                dangling.append(str(o.get("uid", "")))
        if ref in stuck:
            continue  # still a dependent of its present owners (foreground waits for it), never acted on
        if not present and not _deleting(obj):
            work.add(ActorWork(GC, "delete", ref, "all owners are gone"))
        elif present and dangling:
            work.add(ActorWork(GC, "remove-dangling", ref, ",".join(sorted(dangling))))
    for ref, obj in entries:
        if not _deleting(obj):
            continue
        finalizers = _meta(obj).get("finalizers") or []
        deps = dependents.get(str(_meta(obj).get("uid")), [])
        if _FOREGROUND in finalizers:
            waiting = [d for d in deps if not _deleting(d[1])]
            for dref, _, _ in waiting:
                if dref not in stuck:
                    work.add(ActorWork(GC, "delete", dref, f"foreground deletion of {ref}"))
            blocking = [d for d in deps if d[2].get("blockOwnerDeletion") is True]
            if not waiting and not blocking:
                work.add(ActorWork(GC, "remove-finalizer", ref, _FOREGROUND))
        if _ORPHAN in finalizers:
            for dref, _, _ in deps:
                work.add(ActorWork(GC, "orphan", dref, str(_meta(obj).get("uid"))))
            if not deps:
                work.add(ActorWork(GC, "remove-finalizer", ref, _ORPHAN))
    return tuple(sorted(work, key=lambda w: (w.target, w.action, w.detail)))


def _quietly(call: Any, *args: Any, **kw: Any) -> None:
    """Actors race with controllers: an object already gone or just changed is not an error."""
    try:
        call(*args, **kw)
    except ApiError as exc:
        if exc.status not in (404, 409):
            raise


def gc_step(server: ApiServer, work: ActorWork) -> None:
    """Do one garbage-collector item against the server's current state."""
    obj = server.snapshot.get(work.target)
    if obj is None:
        return
    meta = _meta(obj)
    if work.action == "delete":
        if _deleting(obj):
            return
        policy = "Foreground" if work.detail.startswith("foreground") else "Background"
        _quietly(server.delete, work.target, propagation_policy=policy)
    elif work.action in ("orphan", "remove-dangling"):
        gone = set(work.detail.split(","))
        refs = [o for o in meta.get("ownerReferences") or [] if o.get("uid") not in gone]
        new = {**obj, "metadata": {**meta, "ownerReferences": refs}}
        if not refs:
            new["metadata"].pop("ownerReferences")
        _quietly(server.update, new)
    elif work.action == "remove-finalizer":
        fins = [f for f in meta.get("finalizers") or [] if f != work.detail]
        _quietly(server.update, {**obj, "metadata": {**meta, "finalizers": fins}})


def namespace_work(snapshot: Snapshot, registry: Registry) -> list[ActorWork]:
    """What the namespace controller could do now: per terminating namespace, empty it, then finalize it."""
    return list(snapshot.derived("namespace_work", _namespace_work))


def _namespace_work(snapshot: Snapshot) -> tuple[ActorWork, ...]:
    out: list[ActorWork] = []
    terminating = [o for o in snapshot.objects_of(_NS_KIND) if _deleting(o)]
    if not terminating:
        return ()
    content: dict[str, list[Manifest]] = {}
    for ref, obj in snapshot.iter_entries():
        if ref.namespace:
            content.setdefault(ref.namespace, []).append(obj)
    for ns in terminating:
        name = str(_meta(ns).get("name"))
        ref = ObjectRef("v1", "Namespace", "", name)
        objs = content.get(name, [])
        if any(not _deleting(o) for o in objs):
            out.append(ActorWork(NAMESPACE, "delete-content", ref, f"{len(objs)} objects"))
        elif not objs and "kubernetes" in ((ns.get("spec") or {}).get("finalizers") or []):
            out.append(ActorWork(NAMESPACE, "finalize", ref))
    return tuple(out)


def namespace_step(server: ApiServer, work: ActorWork) -> None:
    """Do one namespace-controller item; ``delete-content`` deletes everything left in one step."""
    ns = server.snapshot.get(work.target)
    if ns is None or not _deleting(ns):
        return
    if work.action == "delete-content":
        victims = sorted(ref for ref, obj in server.snapshot.iter_entries()
                         if ref.namespace == work.target.name and not _deleting(obj))
        for ref in victims:
            _quietly(server.delete, ref)
    elif work.action == "finalize":
        spec = dict(ns.get("spec") or {})
        spec["finalizers"] = [f for f in spec.get("finalizers") or [] if f != "kubernetes"]
        _quietly(server.update, {**ns, "spec": spec})


_NS_KIND = ObjectRef("v1", "Namespace", "", "").kind_ref
