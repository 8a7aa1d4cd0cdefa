"""ControllerRevision history for StatefulSets and DaemonSets (pkg/controller/history).

Why real objects rather than a hash in a label: a StatefulSet that recreates a pod below its
partition must build it from the *current* revision's template, which only the stored revision still
holds once the spec has moved on; and operators (and ``kubectl rollout history``) read these objects.
Each function follows one upstream function: ``getPatch`` (what a revision stores),
``HashControllerRevision`` / ``ControllerRevisionName``, ``NewControllerRevision``,
``CreateControllerRevision`` (a name collision with different data bumps the collision count),
``SortControllerRevisions``, ``EqualRevision``, ``nextRevision``, ``ApplyRevision``, and the
adoption of orphaned revisions.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

from kamera_cli.controlplane.api import Cluster, ClusterError, Obj
from kamera_cli.controlplane.objects import (
    controller_ref,
    meta,
    name_of,
    new_controller_ref,
    parse_time,
    selector_matches,
    spec,
)

#: ``ControllerRevisionHashLabel``: the hash of a revision's data, on the revision itself
HASH_LABEL = "controller.kubernetes.io/hash"
_SAFE = "bcdfghjklmnpqrstvwxz2456789"  # rand.SafeEncodeString's alphabet


def template_patch(owner: Mapping[str, Any]) -> Obj:
    """``getPatch``: what a revision stores — the pod template, marked to replace the whole template
    when applied (``{"spec": {"template": {..., "$patch": "replace"}}}``)."""
    template = copy.deepcopy(dict(spec(owner).get("template") or {}))
    template["$patch"] = "replace"
    return {"spec": {"template": template}}


def _raw(data: Mapping[str, Any]) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":")).encode()


def revision_hash(data: Mapping[str, Any], probe: int | None) -> str:
    """``HashControllerRevision``: FNV-32 (not 32a) of the data's JSON, then the collision count in
    decimal, spelled with ``SafeEncodeString``. The JSON is kamera's canonical form, so the value is
    not a real cluster's, but it has the same properties (stable, data-determined, moved by a probe)."""
    h = 0x811C9DC5
    raw = _raw(data) + (str(int(probe)).encode() if probe is not None else b"")
    for byte in raw:
        h = (h * 0x01000193) & 0xFFFFFFFF
        h ^= byte
    return "".join(_SAFE[ord(ch) % len(_SAFE)] for ch in str(h))


def revision_number(rev: Mapping[str, Any]) -> int:
    try:
        return int(rev.get("revision") or 0)
    except (TypeError, ValueError):
        return 0


def sort_revisions(revisions: Sequence[Obj]) -> list[Obj]:
    """``SortControllerRevisions``: by revision, then creation time, then name."""
    return sorted(revisions, key=lambda r: (revision_number(r), parse_time(meta(r).get("creationTimestamp")) or 0.0,
                                            name_of(r)))


def next_revision(revisions: Sequence[Mapping[str, Any]]) -> int:
    """``nextRevision``: one past the highest revision, 1 for an empty history."""
    return max((revision_number(r) for r in revisions), default=0) + 1


def equal_revision(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """``EqualRevision``: the same stored data. Upstream first compares the hash labels as decimal
    numbers, but the labels are ``SafeEncodeString`` letters that never parse, so in effect only the
    data decides — and so here."""
    return _raw(a.get("data") or {}) == _raw(b.get("data") or {})


def owned_revisions(cluster: Cluster, owner: Mapping[str, Any]) -> list[Obj]:
    """``ListControllerRevisions`` plus adoption: the namespace's revisions the owner's selector matches
    that it controls, oldest first; a matching orphan is adopted first (``adoptOrphanRevisions`` /
    ``ClaimControllerRevisions``: a controller ownerReference, the revision's uid as precondition)."""
    selector = spec(owner).get("selector")
    uid = meta(owner).get("uid")
    namespace = str(meta(owner).get("namespace", ""))
    owned: list[Obj] = []
    for rev in cluster.list("apps/v1", "ControllerRevision", namespace):
        if not selector_matches(selector if isinstance(selector, Mapping) else None, meta(rev).get("labels") or {}):
            continue
        ref = controller_ref(rev)
        if ref is None:
            try:
                rev = cluster.patch("apps/v1", "ControllerRevision", namespace, name_of(rev), {"metadata": {
                    "ownerReferences": [new_controller_ref(owner)], "uid": meta(rev).get("uid")}},
                    patch_type="strategic")
            except ClusterError as exc:
                if exc.not_found or exc.status == 422:
                    continue  # gone, or replaced meanwhile
                raise
        elif ref.get("uid") != uid:
            continue
        owned.append(rev)
    return sort_revisions(owned)


def new_revision(owner: Mapping[str, Any], revision: int, probe: int | None, *, name_hash: str | None = None,
                 extra_labels: Mapping[str, str] | None = None, annotations: Mapping[str, str] | None = None) -> Obj:
    """``NewControllerRevision``: the template's labels plus the hash label, a controller reference, the
    data and the revision number, named ``<owner>-<hash>`` (a DaemonSet names it by its pod-template
    hash instead: ``name_hash``)."""
    data = template_patch(owner)
    digest = revision_hash(data, probe)
    template_labels = ((spec(owner).get("template") or {}).get("metadata") or {}).get("labels") or {}
    rev_meta: Obj = {"name": f"{name_of(owner)[:223]}-{name_hash or digest}",
                     "namespace": meta(owner).get("namespace"),
                     "labels": {**template_labels, **(extra_labels or {}), HASH_LABEL: digest},
                     "ownerReferences": [new_controller_ref(owner)]}
    if annotations:
        rev_meta["annotations"] = dict(annotations)
    return {"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": rev_meta, "data": data,
            "revision": revision}


def create_revision(cluster: Cluster, owner: Mapping[str, Any], revision: int, collisions: int) -> tuple[Obj, int]:
    """``CreateControllerRevision``: create it; a name already taken by the same data is that revision,
    by other data a collision (count one more, hash again). Returns the revision and the count."""
    while True:
        body = new_revision(owner, revision, collisions)
        try:
            return cluster.create(body), collisions
        except ClusterError as exc:
            if exc.status != 409:
                raise
        existing = cluster.get("apps/v1", "ControllerRevision", str(meta(owner).get("namespace", "")),
                               name_of(body))
        if existing is not None and _raw(existing.get("data") or {}) == _raw(body["data"]):
            return existing, collisions
        collisions += 1


def renumber(cluster: Cluster, rev: Obj, revision: int) -> Obj:
    """``UpdateControllerRevision``: give an older revision a new number (a rollback to it)."""
    if revision_number(rev) == revision:
        return rev
    return cluster.update({**rev, "revision": revision})


def applied_template(rev: Mapping[str, Any]) -> Obj:
    """``ApplyRevision``: the pod template a revision stores (the patch replaces the whole template)."""
    template = copy.deepcopy(dict(((rev.get("data") or {}).get("spec") or {}).get("template") or {}))
    template.pop("$patch", None)
    return template


def delete_revision(cluster: Cluster, rev: Mapping[str, Any]) -> None:
    try:
        cluster.delete("apps/v1", "ControllerRevision", str(meta(rev).get("namespace", "")), name_of(rev))
    except ClusterError as exc:
        if not exc.not_found:
            raise
