"""Small, shared facts about objects that several built-in controllers need.

Why hand-written here rather than borrowed from the API server: the built-ins sit beside the server
(same layer) and must not import it; what they need is the controller-side half of the API
conventions (label selectors as ``metav1.LabelSelectorAsSelector`` reads them, controller
references, pod readiness as ``podutil.IsPodAvailable`` defines it, RFC 3339 times).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Mapping
from typing import Any

from kamera_cli.controlplane.api import Cluster, ClusterError, Obj


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    value = obj.get("metadata")
    return value if isinstance(value, Mapping) else {}


def spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    value = obj.get("spec")
    return value if isinstance(value, Mapping) else {}


def status(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    value = obj.get("status")
    return value if isinstance(value, Mapping) else {}


def labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    value = meta(obj).get("labels")
    return value if isinstance(value, Mapping) else {}


def name_of(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("name", ""))


def deleting(obj: Mapping[str, Any]) -> bool:
    return bool(meta(obj).get("deletionTimestamp"))


def rfc3339(seconds: float) -> str:
    """The virtual clock's seconds since the Unix epoch as the API's second-precision time."""
    moment = _dt.datetime.fromtimestamp(int(seconds), tz=_dt.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: Any) -> float | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return _dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=_dt.timezone.utc).timestamp()
    except ValueError:
        return None


# --------------------------------------------------------------------------- selectors
def selector_matches(selector: Mapping[str, Any] | None, obj_labels: Mapping[str, str]) -> bool:
    """``metav1.LabelSelectorAsSelector(selector).Matches(labels)``.

    A nil selector matches nothing (``labels.Nothing()``); an empty one matches everything. A
    malformed expression (an unknown operator) matches nothing, as the controllers treat a selector
    they cannot convert: they skip the object.
    """
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if obj_labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or ():
        if not isinstance(expr, Mapping):
            return False
        key = str(expr.get("key", ""))
        op = expr.get("operator")
        values = [str(v) for v in expr.get("values") or ()]
        present = key in obj_labels
        if op == "In":
            ok = present and obj_labels[key] in values
        elif op == "NotIn":
            ok = not present or obj_labels[key] not in values
        elif op == "Exists":
            ok = present
        elif op == "DoesNotExist":
            ok = not present
        else:
            return False
        if not ok:
            return False
    return True


def selector_is_empty(selector: Mapping[str, Any] | None) -> bool:
    return selector is not None and not selector.get("matchLabels") and not selector.get("matchExpressions")


# --------------------------------------------------------------------------- controller references
def controller_ref(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """``metav1.GetControllerOf``: the ownerReference with ``controller: true``, if any."""
    for ref in meta(obj).get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return ref
    return None


def new_controller_ref(owner: Mapping[str, Any]) -> Obj:
    """``metav1.NewControllerRef``: controller and blockOwnerDeletion both true."""
    return {
        "apiVersion": owner.get("apiVersion"),
        "kind": owner.get("kind"),
        "name": name_of(owner),
        "uid": meta(owner).get("uid"),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def owned_by(obj: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    ref = controller_ref(obj)
    return ref is not None and ref.get("uid") == meta(owner).get("uid")


# --------------------------------------------------------------------------- pods
def pod_condition(pod: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for cond in status(pod).get("conditions") or ():
        if isinstance(cond, Mapping) and cond.get("type") == kind:
            return cond
    return None


def pod_ready(pod: Mapping[str, Any]) -> bool:
    """``podutil.IsPodReady``: the Ready condition is True."""
    cond = pod_condition(pod, "Ready")
    return cond is not None and cond.get("status") == "True"


def pod_available(pod: Mapping[str, Any], min_ready_seconds: int, now: float) -> bool:
    """``podutil.IsPodAvailable``: ready, and ready for at least ``minReadySeconds`` by ``now``."""
    if not pod_ready(pod):
        return False
    if min_ready_seconds <= 0:
        return True
    cond = pod_condition(pod, "Ready") or {}
    since = parse_time(cond.get("lastTransitionTime"))
    return since is not None and since + min_ready_seconds <= now


def pod_active(pod: Mapping[str, Any]) -> bool:
    """``controller.IsPodActive``: not Succeeded, not Failed, not being deleted."""
    phase = status(pod).get("phase")
    return phase not in ("Succeeded", "Failed") and not deleting(pod)


def set_condition(conditions: list[Obj], kind: str, state: str, reason: str, message: str, stamp: str,
                  *, probe: bool = False) -> list[Obj]:
    """Replace the condition of ``kind``; keep its lastTransitionTime when the status did not change."""
    out = [dict(c) for c in conditions if c.get("type") != kind]
    old = next((c for c in conditions if c.get("type") == kind), None)
    since = old.get("lastTransitionTime") if old is not None and old.get("status") == state else None
    cond: Obj = {"type": kind, "status": state}
    if probe:
        cond["lastProbeTime"] = None
    cond["lastTransitionTime"] = since or stamp
    if reason:
        cond["reason"] = reason
    if message:
        cond["message"] = message
    if old is not None and old.get("status") == state and old.get("lastUpdateTime"):
        cond["lastUpdateTime"] = old["lastUpdateTime"]
    out.append(cond)
    return out


def sorted_by_name(objs: Iterable[Obj]) -> list[Obj]:
    return sorted(objs, key=name_of)


# --------------------------------------------------------------------------- writes every built-in makes
def write_status(cluster: Cluster, obj: Obj, new: Obj) -> Obj:
    """Write ``new`` as the status when it differs; an object gone or changed meanwhile is left to the
    next sync (its event brings the controller back), as upstream's status updaters do."""
    if new == dict(status(obj)):
        return obj
    obj["status"] = new
    try:
        return cluster.update(obj, subresource="status")
    except ClusterError as exc:
        if not (exc.not_found or exc.conflict):
            raise
        return obj


def delete_quietly(cluster: Cluster, api_version: str, kind: str, obj: Mapping[str, Any]) -> None:
    """Delete ``obj``; already gone is fine."""
    try:
        cluster.delete(api_version, kind, str(meta(obj).get("namespace", "")), name_of(obj))
    except ClusterError as exc:
        if not exc.not_found:
            raise
