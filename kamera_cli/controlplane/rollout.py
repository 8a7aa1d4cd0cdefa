"""Deployment arithmetic that does not touch the cluster (pkg/controller/deployment/util).

Kept apart from the controller so each rule — fenceposts, the pod-template hash, revisions, the
replica annotations, the conditions' helpers — can be pinned by a unit test against the upstream
function it follows.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from kamera_cli.controlplane.api import Obj
from kamera_cli.controlplane.objects import meta, name_of, parse_time, spec, status

HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
_NOT_COPIED = frozenset({"kubectl.kubernetes.io/last-applied-configuration", REVISION, REVISION_HISTORY,
                         DESIRED_REPLICAS, MAX_REPLICAS, "deprecated.deployment.rollback.to"})
#: ``rand.SafeEncodeString``'s alphabet: no vowels, no look-alikes
_SAFE = "bcdfghjklmnpqrstvwxz2456789"
MAX_INT32 = 2**31 - 1


def replicas(obj: Mapping[str, Any]) -> int:
    value = spec(obj).get("replicas")
    return 1 if value is None else int(value)


def is_rolling(d: Mapping[str, Any]) -> bool:
    return ((spec(d).get("strategy") or {}).get("type") or "RollingUpdate") == "RollingUpdate"


def scaled_value(value: Any, total: int, round_up: bool) -> int:
    """``intstr.GetScaledValueFromIntOrPercent``."""
    if isinstance(value, int):
        return value
    text = str(value)
    if not text.endswith("%"):
        return int(text)
    share = int(text[:-1]) * total / 100
    return math.ceil(share) if round_up else math.floor(share)


def fenceposts(d: Mapping[str, Any]) -> tuple[int, int]:
    """``ResolveFenceposts``: (maxSurge, maxUnavailable); both zero becomes unavailable 1."""
    rolling = (spec(d).get("strategy") or {}).get("rollingUpdate") or {}
    want = replicas(d)
    surge = scaled_value(rolling.get("maxSurge", "25%"), want, True)
    unavailable = scaled_value(rolling.get("maxUnavailable", "25%"), want, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def max_surge(d: Mapping[str, Any]) -> int:
    return fenceposts(d)[0] if is_rolling(d) else 0


def max_unavailable(d: Mapping[str, Any]) -> int:
    """``MaxUnavailable``: 0 for Recreate or no replicas, never more than the replicas."""
    if not is_rolling(d) or replicas(d) == 0:
        return 0
    return min(fenceposts(d)[1], replicas(d))


def template_hash(template: Mapping[str, Any], collision_count: int | None) -> str:
    """``ComputeHash``: FNV-32a of the template (and the collision count), made name-safe.

    Upstream hashes Go's printed form of the struct; kamera hashes the canonical JSON, so the value
    differs from a real cluster's while keeping its properties: stable, template-determined, changed
    by a collision count, spelled from ``SafeEncodeString``'s alphabet.
    """
    h = 0x811C9DC5
    data = json.dumps(template, sort_keys=True, separators=(",", ":")).encode()
    if collision_count is not None:
        data += int(collision_count).to_bytes(4, "little")
    for byte in data:
        h ^= byte
        h = (h * 0x01000193) & 0xFFFFFFFF
    return "".join(_SAFE[ord(ch) % len(_SAFE)] for ch in str(h))


def without_hash(template: Mapping[str, Any]) -> Obj:
    out = copy.deepcopy(dict(template))
    labels = (out.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        labels.pop(HASH_LABEL, None)
        if not labels:
            out["metadata"].pop("labels")
    return out


def equal_ignore_hash(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """``EqualIgnoreHash``: templates equal once the pod-template-hash label is set aside."""
    return without_hash(a) == without_hash(b)


def revision(obj: Mapping[str, Any]) -> int:
    try:
        return int((meta(obj).get("annotations") or {}).get(REVISION, "0") or 0)
    except ValueError:
        return 0


def by_creation(objs: Sequence[Obj]) -> list[Obj]:
    """``ReplicaSetsByCreationTimestamp``: oldest first, ties by name."""
    return sorted(objs, key=lambda o: (parse_time(meta(o).get("creationTimestamp")) or 0.0, name_of(o)))


def spec_replicas(rss: Sequence[Obj]) -> int:
    return sum(replicas(rs) for rs in rss)


def status_count(rss: Sequence[Obj], key: str) -> int:
    return sum(int(status(rs).get(key) or 0) for rs in rss)


def active(rss: Sequence[Obj]) -> list[Obj]:
    """``FilterActiveReplicaSets``: the ones asked for at least one pod."""
    return [rs for rs in rss if replicas(rs) > 0]


def annotation_int(obj: Mapping[str, Any], key: str) -> int | None:
    value = (meta(obj).get("annotations") or {}).get(key)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def set_replicas_annotations(rs: Obj, desired: int, most: int) -> bool:
    """``SetReplicasAnnotations``: desired-replicas and max-replicas, True when either changed."""
    notes = rs.setdefault("metadata", {}).setdefault("annotations", {})
    changed = False
    for key, value in ((DESIRED_REPLICAS, str(desired)), (MAX_REPLICAS, str(most))):
        if notes.get(key) != value:
            notes[key] = value
            changed = True
    return changed


def set_new_rs_annotations(d: Mapping[str, Any], rs: Obj, new_revision: str, exists: bool) -> bool:
    """``SetNewReplicaSetAnnotations``: copy the Deployment's annotations, bump the revision (keeping
    the old one in revision-history when rolling back), and for a new one the replica annotations."""
    notes = rs.setdefault("metadata", {}).setdefault("annotations", {})
    changed = False
    for key, value in (meta(d).get("annotations") or {}).items():
        if key not in _NOT_COPIED and notes.get(key) != value:
            notes[key] = value
            changed = True
    had = REVISION in notes
    old = notes.get(REVISION, "")
    try:
        old_int = int(old) if old else 0
    except ValueError:
        return changed
    if old_int < int(new_revision):
        notes[REVISION] = new_revision
        changed = True
        if had:
            history = notes.get(REVISION_HISTORY, "")
            notes[REVISION_HISTORY] = f"{history},{old}" if history else old
    if not exists and set_replicas_annotations(rs, replicas(d), replicas(d) + max_surge(d)):
        changed = True
    return changed


def condition(conds: Sequence[Mapping[str, Any]], kind: str) -> Mapping[str, Any] | None:
    return next((c for c in conds if c.get("type") == kind), None)


def new_condition(kind: str, state: str, reason: str, message: str, stamp: str) -> Obj:
    return {"type": kind, "status": state, "lastUpdateTime": stamp, "lastTransitionTime": stamp,
            "reason": reason, "message": message}


def set_deployment_condition(conds: list[Obj], new: Obj) -> list[Obj]:
    """``SetDeploymentCondition``: same status and reason is no change; same status keeps the transition time."""
    current = condition(conds, new["type"])
    if current is not None and current.get("status") == new["status"] and current.get("reason") == new["reason"]:
        return conds
    if current is not None and current.get("status") == new["status"]:
        new = {**new, "lastTransitionTime": current.get("lastTransitionTime")}
    return [*(c for c in conds if c.get("type") != new["type"]), new]


def deployment_complete(d: Mapping[str, Any], st: Mapping[str, Any]) -> bool:
    want = replicas(d)
    return (int(st.get("updatedReplicas") or 0) == want and int(st.get("replicas") or 0) == want
            and int(st.get("availableReplicas") or 0) == want
            and int(st.get("observedGeneration") or 0) >= int(meta(d).get("generation") or 0))


def deployment_progressing(d: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    old = status(d)

    def n(s: Mapping[str, Any], k: str) -> int:
        return int(s.get(k) or 0)

    return (n(new, "updatedReplicas") > n(old, "updatedReplicas")
            or n(new, "replicas") - n(new, "updatedReplicas") < n(old, "replicas") - n(old, "updatedReplicas")
            or n(new, "readyReplicas") > n(old, "readyReplicas")
            or n(new, "availableReplicas") > n(old, "availableReplicas"))


def progress_deadline(d: Mapping[str, Any]) -> int | None:
    value = spec(d).get("progressDeadlineSeconds")
    if value is None or int(value) == MAX_INT32:
        return None
    return int(value)
