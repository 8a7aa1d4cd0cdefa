"""Update-time rules of built-in kinds: the immutable fields controllers most often trip over.

Why these: a controller that rewrites a Deployment's selector or a Pod's spec works against a naive
fake and fails against a real cluster; these are the cases reconcile loops actually hit.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from kamera_cli.apiserver.errors import cause
from kamera_cli.apiserver.validation import field_errors as F
from kamera_cli.apiserver.validation import service as validation_service
from kamera_cli.apiserver.validation.quantity import QuantityError, value_of
from kamera_cli.model.objects import MAPPING

Causes = list[dict[str, str]]
_POD_MESSAGE = (
    "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing "
    "tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)


def _get(obj: Mapping[str, Any], *path: str) -> Any:
    node: Any = obj
    for part in path:
        if not isinstance(node, MAPPING):
            return None
        node = node.get(part)
    return node


def _render(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _immutable(old: Mapping[str, Any], new: Mapping[str, Any], *path: str) -> Causes:
    before, after = _get(old, *path), _get(new, *path)
    if before != after:
        return [cause("FieldValueInvalid", ".".join(path), f"Invalid value: {_render(after)}: field is immutable")]
    return []


def _pod(old: Mapping[str, Any], new: Mapping[str, Any]) -> Causes:
    # a gated pod's nodeSelector may gain entries (how a queue such as Kueue places it before release)
    deadline = _deadline(_get(old, "spec", "activeDeadlineSeconds"), _get(new, "spec", "activeDeadlineSeconds"))
    if deadline:
        return deadline
    gated = bool(_get(old, "spec", "schedulingGates"))
    old_grace = _get(old, "spec", "terminationGracePeriodSeconds")
    relaxed = isinstance(old_grace, int) and old_grace < 0 and _get(new, "spec", "terminationGracePeriodSeconds") == 1
    mutable = ("activeDeadlineSeconds", "tolerations", "schedulingGates", *(("nodeSelector",) if gated else ()),
               *(("terminationGracePeriodSeconds",) if relaxed else ()))

    def mutable_removed(spec: Any) -> Any:
        if not isinstance(spec, MAPPING):
            return spec
        out = {k: v for k, v in spec.items() if k not in mutable}
        for key in ("containers", "initContainers"):
            if isinstance(out.get(key), list):
                out[key] = [{k: v for k, v in c.items() if k != "image"} if isinstance(c, MAPPING) else c
                            for c in out[key]]
        return out

    old_spec, new_spec = old.get("spec"), new.get("spec")
    out = _only_added_tolerations(_get(old, "spec", "tolerations"), _get(new, "spec", "tolerations"))
    out += _only_deleted_gates(_get(old, "spec", "schedulingGates"), _get(new, "spec", "schedulingGates"))
    if gated:
        out += _only_added_selector(_get(old, "spec", "nodeSelector"), _get(new, "spec", "nodeSelector"))
    if mutable_removed(old_spec) != mutable_removed(new_spec):
        out.append(cause("FieldValueForbidden", "spec", _POD_MESSAGE))
    return out


def _deadline(old: Any, new: Any) -> Causes:
    """``ValidatePodUpdate``'s ``activeDeadlineSeconds`` rules (the update stops at the first): within
    0..2^31-1, never raised, never unset once set; setting it where there was none is allowed."""
    path = "spec.activeDeadlineSeconds"
    if isinstance(new, int):
        if not 0 <= new <= 2147483647:
            return [F.invalid(path, new, "must be between 0 and 2147483647, inclusive")]
        if isinstance(old, int) and old < new:
            return [F.invalid(path, new, "must be less than or equal to previous value")]
    elif new is None and old is not None:
        return [F.invalid(path, None, "must not update from a positive integer to nil value")]
    return []


def _only_added_selector(old: Any, new: Any) -> Causes:
    """``ValidatePodUpdate`` for a gated pod: ``spec.nodeSelector`` may only gain entries."""
    before = old if isinstance(old, MAPPING) else {}
    after = new if isinstance(new, MAPPING) else {}
    if all(key in after and after[key] == value for key, value in before.items()):
        return []
    return [F.invalid("spec.nodeSelector", dict(after),
                      "only additions to spec.nodeSelector are allowed (no mutations or deletions)")]


def _toleration_key(toleration: Any) -> Any:
    """A toleration as ``validateOnlyAddedTolerations`` compares it: without ``tolerationSeconds``, and
    with empty fields dropped (Go's ``DeepEqual`` sees an absent string and ``""`` alike)."""
    if not isinstance(toleration, MAPPING):
        return toleration
    return {k: v for k, v in toleration.items() if k != "tolerationSeconds" and v not in ("", None)}


def _gate_names(gates: Any) -> list[Any]:
    return [g.get("name") if isinstance(g, MAPPING) else g for g in gates] if isinstance(gates, list) else []


def _only_deleted_gates(old: Any, new: Any) -> Causes:
    """``validateOnlyDeletedSchedulingGates`` (from ``ValidatePodUpdate``): a controller releases a gated
    pod by removing its gates, so removals pass; a gate the old pod lacked is one cause each, in list
    order (upstream walks a map, in random order)."""
    before = set(_gate_names(old))
    return [cause("FieldValueForbidden", f"spec.schedulingGates[{i}].name",
                  f"Forbidden: only deletion is allowed, but found new scheduling gate '{name}'")
            for i, name in enumerate(_gate_names(new)) if name not in before]


def _only_added_tolerations(old: Any, new: Any) -> Causes:
    """``validateOnlyAddedTolerations`` (pkg/apis/core/validation, from ``ValidatePodUpdate``): every
    existing toleration must still be there, only its ``tolerationSeconds`` may change; one cause at
    most.  (Its ``ValidateTolerations`` of the new list is the create-time rule, which runs anyway.)"""
    kept = [_toleration_key(t) for t in new] if isinstance(new, list) else []
    for toleration in old if isinstance(old, list) else ():
        if _toleration_key(toleration) not in kept:
            return [cause("FieldValueForbidden", "spec.tolerations",
                          "Forbidden: existing toleration can not be modified except its tolerationSeconds")]
    return []


def _selector(old: Mapping[str, Any], new: Mapping[str, Any]) -> Causes:
    return _immutable(old, new, "spec", "selector")


_STS_MUTABLE = ("replicas", "ordinals", "template", "updateStrategy", "minReadySeconds", "revisionHistoryLimit",
                "persistentVolumeClaimRetentionPolicy")
_STS_MESSAGE = ("Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
                "'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and "
                "'minReadySeconds' are forbidden")


def _statefulset(old: Mapping[str, Any], new: Mapping[str, Any]) -> Causes:
    """``ValidateStatefulSetUpdate``: everything but the listed spec fields is fixed at creation."""
    def fixed(obj: Mapping[str, Any]) -> Any:
        spec = obj.get("spec")
        return {k: v for k, v in spec.items() if k not in _STS_MUTABLE} if isinstance(spec, MAPPING) else spec
    return [cause("FieldValueForbidden", "spec", _STS_MESSAGE)] if fixed(old) != fixed(new) else []


_PVC_MESSAGE = ("Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName "
                "for bound claims")


def _claim(old: Mapping[str, Any], new: Mapping[str, Any]) -> Causes:
    """``ValidatePersistentVolumeClaimUpdate``: volumeName may be set once; a bound claim may grow."""
    def fixed(obj: Mapping[str, Any], bound: bool) -> Any:
        spec = dict(obj.get("spec") or {})
        spec.pop("volumeAttributesClassName", None)
        if not (old.get("spec") or {}).get("volumeName"):
            spec.pop("volumeName", None)
        if (old.get("spec") or {}).get("storageClassName") is None:  # RetroactiveDefaultStorageClass
            spec.pop("storageClassName", None)
        if bound:
            resources = dict(spec.get("resources") or {})
            resources["requests"] = {k: v for k, v in (resources.get("requests") or {}).items() if k != "storage"}
            spec["resources"] = resources
        return spec
    bound = (new.get("status") or {}).get("phase") == "Bound"
    out: Causes = []
    if fixed(old, bound) != fixed(new, bound):
        out.append(cause("FieldValueForbidden", "spec", _PVC_MESSAGE))
    before = ((old.get("spec") or {}).get("resources") or {}).get("requests", {}).get("storage")
    after = ((new.get("spec") or {}).get("resources") or {}).get("requests", {}).get("storage")
    try:
        if before is not None and after is not None and value_of(after) < value_of(before):
            out.append(cause("FieldValueForbidden", "spec.resources.requests.storage",
                             "Forbidden: field can not be less than previous value"))
    except QuantityError:
        pass
    return out


def _job(old: Mapping[str, Any], new: Mapping[str, Any]) -> Causes:
    return _immutable(old, new, "spec", "selector") + _immutable(old, new, "spec", "template") + _immutable(
        old, new, "spec", "completionMode")


def _immutable_data(old: Mapping[str, Any], new: Mapping[str, Any]) -> Causes:
    if old.get("immutable") is not True:
        return []
    out: Causes = []
    if new.get("immutable") is not True:
        out.append(cause("FieldValueForbidden", "immutable",
                         "Forbidden: field is immutable when `immutable` is set"))
    for key in ("data", "binaryData"):
        if old.get(key) != new.get(key):
            out.append(cause("FieldValueForbidden", key, "Forbidden: field is immutable when `immutable` is set"))
    return out


def _secret(old: Mapping[str, Any], new: Mapping[str, Any]) -> Causes:
    return _immutable(old, new, "type") + _immutable_data(old, new)


_RULES: dict[tuple[str, str], Callable[[Mapping[str, Any], Mapping[str, Any]], Causes]] = {
    ("", "Pod"): _pod,
    ("apps", "Deployment"): _selector,
    ("apps", "ReplicaSet"): _selector,
    ("apps", "StatefulSet"): _statefulset,
    ("", "PersistentVolumeClaim"): _claim,
    ("apps", "DaemonSet"): _selector,
    ("batch", "Job"): _job,
    ("", "ConfigMap"): _immutable_data,
    ("", "Secret"): _secret,
    ("", "Service"): validation_service.service_update,
}


def validate_update(group: str, kind: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> Causes:
    """Causes for changes the real server refuses on update of this built-in kind (main endpoint)."""
    rule = _RULES.get((group, kind))
    return rule(old, new) if rule is not None else []
