"""What one step of the simulation touched, as the explorer's partial-order reduction reads it.

Why here: the explorer knows nothing of Kubernetes; it compares opaque tokens. This module turns a
reconcile's recorded regions (objects fetched or written, list queries, name counters — the same
record the memo keys on), its effective writes and the requests it enqueued into those tokens:

- an object is ``("obj", group, kind, namespace, name)`` (versions of one kind are one object);
- a list query is ``("list", group, kind, namespace)``, ``namespace`` "*" for every namespace; a write
  marks both its namespace's list and the all-namespaces list, so a new, changed or deleted object
  conflicts with every list that could show the change (selectors are ignored: coarser, still sound);
- a kopf operator's index of a kind is the kind's all-namespaces list token extended by
  ``("index", operator)`` (``memo_keys.index_token``): a write marks it only when the object's
  index entries change (``memo_keys.IndexReads.marks``);
- a server counter (generateName attempts) is ``("counter", key)``, read and written;
- a request for work is the process ``("reconcile", controller, namespace, name)``.

Writes the garbage collector or the namespace controller could react to are judged by
:func:`actor_reads`: most (creating or updating an object whose owners exist) give them no work
and only add the owners to what the step read (docs/semantics.md, "Partial-order reduction").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any

from kamera_cli.apiserver import Registry, Snapshot
from kamera_cli.apiserver.server.selectors import SelectorError, parse_label_selector
from kamera_cli.explore import Footprint
from kamera_cli.model.objects import KindRef, ObjectRef
from kamera_cli.sim.labels import WriteRec
from kamera_cli.sim.memo_keys import index_token, list_scope


def process_of(controller: str, namespace: str, name: str) -> tuple[str, str, str, str]:
    return ("reconcile", controller, namespace, name)


def object_token(ref: ObjectRef) -> tuple[str, ...]:
    return ("obj", ref.kind_ref.group, ref.kind, ref.namespace, ref.name)


def list_token(kind: KindRef, namespace: str | None) -> tuple[str, ...]:
    return ("list", kind.group, kind.kind, namespace or "*")


def claim_tokens(kind: KindRef, namespace: str, selector: Mapping[str, Any] | None,
                 controllers: Iterable[str]) -> set[Hashable]:
    """What a claim listing reads: the controlled objects' owner tokens, and for the selector one label
    token every matching object must carry (a matchLabels pair, else each value of an ``In``); a
    selector with neither (only NotIn/Exists/DoesNotExist) reads the whole list.

    Sound because every write marks the label pairs and controller uid of the object before and
    after it (``write_marks``): an object that enters, leaves or changes inside the claim's answer
    matches it before or after, so it carries the chosen pair then, or the controller uid.
    """
    if not namespace:
        return {list_token(kind, None)}
    out: set[Hashable] = {("owned", kind.group, kind.kind, namespace, uid) for uid in controllers}
    if selector is None or not (selector.get("matchLabels") or selector.get("matchExpressions")):
        return out
    pairs = sorted((str(k), str(v)) for k, v in (selector.get("matchLabels") or {}).items())
    if pairs:
        return out | {("label", kind.group, kind.kind, namespace, *pairs[0])}
    for expr in selector.get("matchExpressions") or ():
        if isinstance(expr, Mapping) and expr.get("operator") == "In":
            key = str(expr.get("key", ""))
            return out | {("label", kind.group, kind.kind, namespace, key, str(v)) for v in expr.get("values") or ()}
    return out | {list_token(kind, namespace)}


def query_tokens(info: Any, namespace: str, query: Sequence[tuple[str, str]]) -> set[Hashable]:
    """What a list query reads, narrowed by its selectors where a write's marks make that sound.

    A field selector ``metadata.name=X`` answers from one object (kr8s's ``get`` is such a list), so
    it reads that object's token, which every write of it writes; ``metadata.namespace=X`` scopes an
    all-namespaces list to X. In a namespace, a label selector's equality (or ``in``) requirement reads
    the label tokens of its values: an object entering, leaving or changing in the answer carries the
    pair before or after the write, and ``write_marks`` marks both. Anything else reads the list.
    """
    fields = dict(query).get("fieldSelector", "")
    labels = dict(query).get("labelSelector", "")
    name = ""
    for raw in fields.split(",") if fields and "\\" not in fields else ():
        m = re.match(r"^\s*(metadata\.name|metadata\.namespace)\s*(==|=)\s*(\S*)\s*$", raw)
        if m and m.group(1) == "metadata.name":
            name = m.group(3)
        elif m and info.namespaced and not namespace:
            namespace = m.group(3)
    if name and (namespace or not info.namespaced):
        return {("obj", info.group, info.kind, namespace, name)}
    if labels and namespace:
        try:
            requirements = parse_label_selector(labels)
        except SelectorError:
            requirements = ()
        for req in requirements:
            if req.op in ("=", "in"):
                return {("label", info.group, info.kind, namespace, req.key, v) for v in req.values}
    return {("list", info.group, info.kind, namespace or "*")}


def write_marks(w: WriteRec) -> set[Hashable]:
    """The list tokens a write shows to readers: the kind's lists, and its label pairs and controller
    uid before and after (what claim listings read)."""
    kind, ns = w.ref.kind_ref, w.ref.namespace
    marks: set[Hashable] = {list_token(kind, ns or None), list_token(kind, None)}
    if not ns:
        return marks
    for obj in (w.before, w.after):
        meta = _meta(obj)
        found = meta.get("labels")
        for k, v in (found.items() if isinstance(found, Mapping) else ()):
            marks.add(("label", kind.group, kind.kind, ns, str(k), str(v)))
        for owner in _owner_refs(obj):
            if isinstance(owner, Mapping) and owner.get("controller") is True:
                marks.add(("owned", kind.group, kind.kind, ns, str(owner.get("uid", ""))))
    return marks


def step_footprint(registry: Registry, process: Hashable, regions: Sequence[tuple[Any, ...]],
                   writes: Iterable[WriteRec], listed: Iterable[tuple[KindRef, str | None]],
                   wakes: Iterable[Hashable],
                   claims: Sequence[tuple[tuple[KindRef, str], Sequence[Any]]] = (),
                   index_marks: Callable[[WriteRec], set[Hashable]] | None = None) -> Footprint | None:
    """The footprint of a step, or None when a region cannot be scoped (an unknown collection).

    ``claims``: a built-in's claim listings per (kind, namespace); the list regions of those read
    only what :func:`claim_tokens` says. An index region reads its owner's index of the kind
    (``index_token``), which a write marks only where ``index_marks`` says it changes it.
    """
    reads: set[Hashable] = set()
    written: set[Hashable] = set()
    claimed = {(kind.group, kind.kind, ns) for (kind, ns), _ in claims}
    for (kind, ns), made in claims:
        for claim in made:
            reads.update(claim_tokens(kind, ns, claim.selector, claim.controllers))
    for region in regions:
        if region[0] == "obj":
            reads.add(object_token(region[1]))
        elif region[0] == "counter":
            reads.add(("counter", region[1]))
            written.add(("counter", region[1]))
        else:
            scope = list_scope(registry, region[1])
            if scope is None:
                return None
            info, namespace = scope
            if region[0] == "index":
                reads.add(index_token(region[2], info.group, info.kind))
            elif (info.group, info.kind, namespace or "") not in claimed:
                reads |= query_tokens(info, namespace, region[2] if len(region) > 2 else ())
    reads.update(list_token(kind, ns) for kind, ns in listed)
    marks: set[Hashable] = set()
    for w in writes:
        if w.ref.namespace:  # whether it exists, or is terminating, decides a write's fate (refused too)
            reads.add(object_token(ObjectRef("v1", "Namespace", "", w.ref.namespace)))
        if w.refused:
            continue
        written.add(object_token(w.ref))
        marks |= write_marks(w)
        if index_marks is not None:
            marks |= index_marks(w)
    return Footprint(process, frozenset(reads), frozenset(written), frozenset(marks), frozenset(wakes))


def _meta(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    meta = obj.get("metadata") if obj is not None else None
    return meta if isinstance(meta, Mapping) else {}


def _owner_refs(obj: Mapping[str, Any] | None) -> list[Any]:
    refs = _meta(obj).get("ownerReferences")
    return list(refs) if isinstance(refs, list) else []


def _live_owner(registry: Registry, snapshot: Snapshot, namespace: str, owner: Any) -> ObjectRef | None:
    """The owner an ownerReference names, when it exists with that uid and is not being deleted.

    The collector resolves owners by uid among every object; a reference it would resolve to an
    owner that is present and not deleting gives it nothing to do for this dependent.
    """
    uid = owner.get("uid") if isinstance(owner, Mapping) else None
    ref = _named_owner(registry, namespace, owner) if isinstance(uid, str) and uid else None
    if ref is None:
        return None
    found = snapshot.get(ref)
    meta = _meta(found)
    if found is None or meta.get("uid") != uid or meta.get("deletionTimestamp"):
        return None
    return ref


def actor_reads(registry: Registry, after: Snapshot, write: WriteRec) -> frozenset[Hashable] | None:
    """What ``write`` makes its step read on behalf of the collector and the namespace controller, or
    ``None`` when the write may give either of them work (the step is then global).

    Neither actor gets work from a write that deletes nothing, leaves deletionTimestamp as it was
    (and finalizers too, on an object being deleted: a finalizer an operator adds to a live object,
    kopf's own, is no work for either), lands in a namespace that is not terminating (nor is a
    terminating Namespace), and either keeps ownerReferences as they were or names only owners that exist, with
    that uid, and are not being deleted — before and after the change. The owners are then read: a
    step that deletes or replaces one conflicts with this one.
    """
    if write.refused:
        return frozenset()
    if write.after is None:
        return None
    before, after_meta = _meta(write.before), _meta(write.after)
    if before.get("deletionTimestamp") != after_meta.get("deletionTimestamp"):
        return None
    if before.get("finalizers") != after_meta.get("finalizers") and after_meta.get("deletionTimestamp"):
        return None  # the collector acts on the finalizers of an object being deleted, and only there
    ref = write.ref
    if ref.kind == "Namespace" and ref.kind_ref.group == "" and after_meta.get("deletionTimestamp"):
        return None
    if ref.namespace:
        ns = after.get(ObjectRef("v1", "Namespace", "", ref.namespace))
        if ns is not None and _meta(ns).get("deletionTimestamp"):
            return None
    old, new = _owner_refs(write.before), _owner_refs(write.after)
    if old == new:
        return frozenset()
    owners: set[Hashable] = set()
    for owner in (*old, *new):
        live = _live_owner(registry, after, ref.namespace, owner)
        if live is None:
            return None
        owners.add(object_token(live))
    return frozenset(owners)


def owner_root(registry: Registry, snapshot: Snapshot, kind: Any, namespace: str, name: str) -> Hashable | None:
    """The object at the root of ``name``'s controller ownerReferences, as a reduction unit key, or
    ``None`` when the object is not there. Only a key: a wrong guess costs reduction, never soundness
    (docs/semantics.md, "Partial-order reduction": units)."""
    info = registry.lookup(str(kind.api_version), str(kind.kind))
    if info is None:
        return None
    ref = ObjectRef(str(kind.api_version), str(kind.kind), namespace if info.namespaced else "", name)
    obj = snapshot.get(ref)
    if obj is None:
        return None
    for _ in range(8):  # ownership chains are short; a longer (or circular) one stops here
        owner = next((o for o in _owner_refs(obj) if isinstance(o, Mapping) and o.get("controller") is True), None)
        up = _live_owner(registry, snapshot, ref.namespace, owner) if owner is not None else None
        found = snapshot.get(up) if up is not None else None
        if up is None or found is None:
            break
        ref, obj = up, found
    return ("root", ref.kind_ref.group, ref.kind, ref.namespace, ref.name)


def collector_footprint(registry: Registry, process: Hashable, target: ObjectRef, writes: Iterable[WriteRec],
                        listed: Iterable[tuple[KindRef, str | None]], wakes: Iterable[Hashable],
                        index_marks: Callable[[WriteRec], set[Hashable]] | None = None) -> Footprint | None:
    """The footprint of one garbage-collector step on ``target`` (docs/semantics.md, "The collector
    as a process").

    The collector's next item is the first of its work list, a function of every object's uid,
    ownerReferences, deletionTimestamp and (on objects being deleted) finalizers; a step that may
    change any of those wakes it (``actor_reads``), so no reorderable step changes the list, and the
    item depends only on the target it reads (and on owners by uid, which no reorderable step can bring back). The
    caller keeps the step global while a namespace is terminating (the namespace controller's work
    would change with it).
    """
    found = step_footprint(registry, process, [("obj", target)], writes, listed, wakes, index_marks=index_marks)
    if found is None:
        return None
    owners = {object_token(ref) for w in writes if not w.refused for o in _owner_refs(w.before)
              if (ref := _named_owner(registry, w.ref.namespace, o)) is not None}
    return Footprint(found.process, found.reads | owners, found.writes, found.marks, found.wakes)


def _named_owner(registry: Registry, namespace: str, owner: Any) -> ObjectRef | None:
    if not isinstance(owner, Mapping):
        return None
    api_version, kind, name = (owner.get(k) for k in ("apiVersion", "kind", "name"))
    if not all(isinstance(v, str) and v for v in (api_version, kind, name)):
        return None
    info = registry.lookup(str(api_version), str(kind))
    if info is None:
        return None
    return ObjectRef(str(api_version), str(kind), namespace if info.namespaced else "", str(name))
