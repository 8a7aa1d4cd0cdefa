"""What a write to ``/status`` may carry, per kind: the status strategies' ``ValidateUpdate``.

Why: a controller's status writer is code like any other, and the real server refuses a status whose
counts contradict each other (``availableReplicas`` above ``readyReplicas``), a Job flipping back out
of a terminal condition, or a Pod container leaving ``terminated`` under ``restartPolicy: Never``.
A fake that stores any status hides those bugs until the controller meets a cluster.

Upstream, a status strategy validates only the status (and the metadata update), never the spec,
which it copied from the stored object: ``ValidateDeploymentStatusUpdate``,
``ValidateReplicaSetStatusUpdate``, ``ValidateStatefulSetStatusUpdate``,
``ValidateDaemonSetStatusUpdate`` (pkg/apis/apps/validation/validation.go);
``ValidateReplicationControllerStatusUpdate``, ``ValidatePodStatusUpdate``,
``ValidateServiceStatusUpdate`` / ``ValidateLoadBalancerStatus``, ``ValidateNamespaceStatusUpdate``
(pkg/apis/core/validation/validation.go); ``ValidateJobUpdateStatus`` with the options
``getStatusValidationOptions`` picks (pkg/apis/batch/validation, pkg/registry/batch/job/strategy.go);
``ValidateHorizontalPodAutoscalerStatusUpdate``; ``ValidatePodDisruptionBudgetStatusUpdate`` with
metav1 ``ValidateConditions``; ``ValidateIngressStatusUpdate`` (in ``validation_net``).  Table-driven:
the counters of each kind are data, looked up once.
"""

from __future__ import annotations

import datetime as _dt
import ipaddress
import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from kamera_cli.apiserver.validation import field_errors as F
from kamera_cli.apiserver.validation import networking as validation_net
from kamera_cli.apiserver.validation.field_errors import Cause, GoRepr
from kamera_cli.apiserver.validation.quantity import QuantityError, value_of
from kamera_cli.model.objects import MAPPING

Obj = Mapping[str, Any]
_REPLICAS_MSG = "cannot be greater than status.replicas"


def _status(obj: Obj) -> Obj:
    value = obj.get("status")
    return value if isinstance(value, MAPPING) else {}


def _int(status: Obj, key: str) -> int:
    value = status.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _omitted(path: str, detail: str) -> Cause:
    """``field.Invalid(path, field.OmitValueType{}, detail)``: the message names no value."""
    return {"reason": "FieldValueInvalid", "message": f"Invalid value: {detail}", "field": path}


#: Per workload kind: the counters ``ValidateNonnegativeField`` checks, in upstream's order (a
#: trailing ``?`` marks a pointer field, checked only when present), then the ``(field, bound,
#: message)`` relations, then whether ``collisionCount`` may not go down (``IsDecremented``).
_Counts = tuple[tuple[str, ...], tuple[tuple[str, str, str], ...], bool]
_RS_COUNTS: _Counts = (
    ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas", "observedGeneration"),
    (("fullyLabeledReplicas", "replicas", _REPLICAS_MSG), ("readyReplicas", "replicas", _REPLICAS_MSG),
     ("availableReplicas", "replicas", _REPLICAS_MSG),
     ("availableReplicas", "readyReplicas", "cannot be greater than readyReplicas")), False)
_COUNTS: dict[tuple[str, str], _Counts] = {
    ("apps", "Deployment"): (  # ValidateDeploymentStatus
        ("observedGeneration", "replicas", "updatedReplicas", "readyReplicas", "availableReplicas",
         "unavailableReplicas", "collisionCount?"),
        (("updatedReplicas", "replicas", _REPLICAS_MSG), ("readyReplicas", "replicas", _REPLICAS_MSG),
         ("availableReplicas", "replicas", _REPLICAS_MSG),
         ("availableReplicas", "readyReplicas", "cannot be greater than readyReplicas")), True),
    ("apps", "ReplicaSet"): _RS_COUNTS,  # ValidateReplicaSetStatus
    ("", "ReplicationController"): _RS_COUNTS,  # ValidateReplicationControllerStatus
    ("apps", "StatefulSet"): (  # ValidateStatefulSetStatus: its last message names status.readyReplicas
        ("replicas", "readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas",
         "observedGeneration?", "collisionCount?"),
        (("readyReplicas", "replicas", _REPLICAS_MSG), ("currentReplicas", "replicas", _REPLICAS_MSG),
         ("updatedReplicas", "replicas", _REPLICAS_MSG), ("availableReplicas", "replicas", _REPLICAS_MSG),
         ("availableReplicas", "readyReplicas", "cannot be greater than status.readyReplicas")), True),
    ("apps", "DaemonSet"): (  # validateDaemonSetStatus
        ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady",
         "observedGeneration", "updatedNumberScheduled", "numberAvailable", "numberUnavailable", "collisionCount?"),
        (), True),
    ("autoscaling", "HorizontalPodAutoscaler"): (  # upstream's path really is "desiredReplicasa"
        ("currentReplicas", "desiredReplicas"), (), False),
}
_HPA_PATHS = {"desiredReplicas": "status.desiredReplicasa"}


def _counts(rule: _Counts, kind: str) -> Callable[[Obj, Obj], list[Cause]]:
    fields, relations, collisions = rule
    paths = {name.rstrip("?"): (_HPA_PATHS.get(name) if kind == "HorizontalPodAutoscaler" else None)
             or f"status.{name.rstrip('?')}" for name in fields}

    def check(new: Obj, old: Obj) -> list[Cause]:
        status = _status(new)
        out: list[Cause] = []
        for name in fields:
            key = name.rstrip("?")
            out += F.nonnegative(paths[key], _int(status, key))
        for key, bound, message in relations:
            if _int(status, key) > _int(status, bound):
                out.append(F.invalid(f"status.{key}", _int(status, key), message))
        if collisions:
            before, after = _status(old).get("collisionCount"), status.get("collisionCount")
            if isinstance(before, int) and (after is None or (isinstance(after, int) and after < before)):
                out.append(F.invalid("status.collisionCount", after or 0, "cannot be decremented"))
        return out
    return check


# -- metav1.Condition lists (PodDisruptionBudget) -------------------------------------------------

_REASON_FMT = "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?"
_REASON_RE = re.compile(f"^{_REASON_FMT}$")
_REASON_MSG = ("a condition reason must start with alphabetic character, optionally followed by a string of "
               "alphanumeric characters or '_,:', and must end with an alphanumeric character or '_' (e.g. "
               "'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex "
               f"used for validation is '{_REASON_FMT}')")


def conditions(values: Any, path: str) -> list[Cause]:
    """metav1 ``ValidateConditions`` / ``ValidateCondition`` (types unique, label-name types, known
    statuses, a reason in its format; fields the schema requires are the schema check's)."""
    out: list[Cause] = []
    seen: set[str] = set()
    for at, cond in F.items(values, path):
        ctype = str(cond.get("type") or "")
        if ctype in seen:
            out.append(F.duplicate(f"{at}.type", ctype))
        seen.add(ctype)
        out += F.each_invalid(f"{at}.type", ctype, F.qualified_name(ctype))
        if cond.get("status") not in ("False", "True", "Unknown"):
            out.append(F.not_supported(f"{at}.status", cond.get("status") or "", ("False", "True", "Unknown")))
        generation = cond.get("observedGeneration")
        if isinstance(generation, int) and generation < 0:
            out.append(F.invalid(f"{at}.observedGeneration", generation, "must be greater than or equal to zero"))
        reason = cond.get("reason")
        if isinstance(reason, str) and reason:
            if not _REASON_RE.match(reason):
                out.append(F.invalid(f"{at}.reason", reason, _REASON_MSG))
            if len(reason) > 1024:
                out.append(F.too_long(f"{at}.reason", 1024))
        message = cond.get("message")
        if isinstance(message, str) and len(message) > 32768:
            out.append(F.too_long(f"{at}.message", 32768))
    return out


def _pdb(new: Obj, old: Obj) -> list[Cause]:
    """``ValidatePodDisruptionBudgetStatusUpdate`` for policy/v1 (conditions, then four counters)."""
    status = _status(new)
    out = conditions(status.get("conditions"), "status.conditions")
    for key in ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"):
        out += F.nonnegative(f"status.{key}", _int(status, key))
    return out


def _namespace(new: Obj, old: Obj) -> list[Cause]:
    """``ValidateNamespaceStatusUpdate``: the phase follows ``deletionTimestamp`` (upstream's path
    really is ``status.Phase``); an absent phase was defaulted to Active."""
    phase = _status(new).get("phase") or "Active"
    if not (new.get("metadata") or {}).get("deletionTimestamp"):
        if phase != "Active":
            return [F.invalid("status.Phase", phase, "may only be 'Active' if `deletionTimestamp` is empty")]
    elif phase != "Terminating":
        return [F.invalid("status.Phase", phase, "may only be 'Terminating' if `deletionTimestamp` is not empty")]
    return []


# -- Services ---------------------------------------------------------------------------------



def _service(new: Obj, old: Obj) -> list[Cause]:
    """``ValidateLoadBalancerStatus``: ingress only on LoadBalancer Services (the
    ``AllowServiceLBStatusOnNonLB`` gate is off), IPs valid, ``ipMode`` only beside an IP (defaulting
    fills VIP), hostnames DNS subdomains and not IPs."""
    path = "status.loadBalancer.ingress"
    ingress = (_status(new).get("loadBalancer") or {}).get("ingress") or []
    if ingress and (new.get("spec") or {}).get("type") != "LoadBalancer":
        return [F.forbidden(path, "may only be used when `spec.type` is 'LoadBalancer'")]
    out: list[Cause] = []
    for at, item in F.items(ingress, path):
        ip, mode, host = item.get("ip") or "", item.get("ipMode"), item.get("hostname") or ""
        if ip and not F.is_ip(ip):
            out.append(F.invalid(f"{at}.ip", ip, F.IP_MSG))
        if mode is not None and not ip:
            out.append(F.forbidden(f"{at}.ipMode", "may not be specified when `ip` is not set"))
        elif mode is None and ip:
            out.append(F.required(f"{at}.ipMode", "must be specified when `ip` is set"))
        elif mode is not None and mode not in ("Proxy", "VIP"):
            out.append(F.not_supported(f"{at}.ipMode", mode, ("Proxy", "VIP")))
        if host:
            out += F.each_invalid(f"{at}.hostname", host, F.dns1123_subdomain(host))
            if F.is_ip(host):
                out.append(F.invalid(f"{at}.hostname", host, "must be a DNS name, not an IP address"))
    return out


# -- Pods -------------------------------------------------------------------------------------

_SYSTEM_CONDITIONS = frozenset({"PodScheduled", "Ready", "Initialized"})


def _terminated(status: Any) -> Any:
    return ((status.get("state") or {}) if isinstance(status, MAPPING) else {}).get("terminated")


def _state_transitions(new: Any, old: Any, path: str, policy: Any, restartable: frozenset[str]) -> list[Cause]:
    """``ValidateContainerStateTransition`` / ``ValidateInitContainerStateTransition``: under a policy
    other than Always a terminated container (that did not fail under OnFailure, and is not a
    restartable init container) may not leave ``terminated``; the path indexes the *old* list."""
    if policy == "Always":
        return []
    out: list[Cause] = []
    for i, before in enumerate(old or ()):
        done = _terminated(before)
        if not isinstance(done, MAPPING) or before.get("name") in restartable:
            continue
        if done.get("exitCode") and policy == "OnFailure":
            continue
        for after in new or ():
            if isinstance(after, MAPPING) and after.get("name") == before.get("name") and _terminated(after) is None:
                out.append(F.forbidden(f"{path}[{i}].state", "may not be transitioned to non-terminated state"))
    return out


def _pod(new: Obj, old: Obj) -> list[Cause]:
    """``ValidatePodStatusUpdate``: custom condition types as qualified names (under
    ``metadata.conditions[i].Type``, as upstream's path has it), ``nominatedNodeName`` a DNS subdomain,
    ``qosClass`` immutable, and no container leaving ``terminated`` when the pod does not restart it."""
    status, before = _status(new), _status(old)
    out: list[Cause] = []
    for at, cond in F.items(status.get("conditions"), "metadata.conditions"):
        ctype = str(cond.get("type") or "")
        if ctype not in _SYSTEM_CONDITIONS:
            out += F.each_invalid(f"{at}.Type", ctype, F.qualified_name(ctype))
    nominated = status.get("nominatedNodeName") or ""
    if nominated and nominated != (before.get("nominatedNodeName") or ""):
        out += F.each_invalid("status.nominatedNodeName", nominated, F.dns1123_subdomain(nominated))
    if status.get("qosClass", "") != before.get("qosClass", ""):
        out.append(F.invalid("status.qosClass", status.get("qosClass", ""), "field is immutable"))
    spec = old.get("spec") or {}
    policy = spec.get("restartPolicy")
    restartable = frozenset(str(c.get("name")) for c in spec.get("initContainers") or ()
                            if isinstance(c, MAPPING) and c.get("restartPolicy") == "Always")
    out += _state_transitions(status.get("containerStatuses"), before.get("containerStatuses"),
                              "status.containerStatuses", policy, frozenset())
    out += _state_transitions(status.get("initContainerStatuses"), before.get("initContainerStatuses"),
                              "status.initContainerStatuses", policy, restartable)
    out += _state_transitions(status.get("ephemeralContainerStatuses"), before.get("ephemeralContainerStatuses"),
                              "status.ephemeralContainerStatuses", "Never", frozenset())
    out += _ip_list(status.get("podIPs"), "status.podIPs", "PodIP", None)
    host_ips = status.get("hostIPs")
    if host_ips:
        out += _ip_list(host_ips, "status.hostIPs", "HostIP", status.get("hostIP") or "")
    return out


def _ip_list(entries: Any, path: str, go_type: str, primary: str | None) -> list[Cause]:
    """``validatePodIPs`` / ``validateHostIPs``: every IP valid, more than one only as a dual-stack
    pair, no duplicates; host IPs also start with ``hostIP`` (``primary``).  Structs print as Go's
    ``%#v`` (``core.PodIP{IP:"…"}``)."""
    ips = [str(e.get("ip") or "") if isinstance(e, MAPPING) else "" for e in entries or ()]
    out: list[Cause] = []
    if primary is not None and ips and ips[0] != primary:
        out.append(F.invalid(f"{path}[0].ip", ips[0], "must be equal to `hostIP`"))
    for i, ip in enumerate(ips):
        if not F.is_ip(ip):
            out.append(F.invalid(f"{path}[{i}]", ip, F.IP_MSG))
    if len(ips) < 2:
        return out
    shown = [GoRepr(f'core.{go_type}{{IP:"{ip}"}}') for ip in ips]
    duplicates = [F.duplicate(f"{path}[{i}]", shown[i]) for i, ip in enumerate(ips) if ip in ips[:i]]
    if primary is not None:
        out += duplicates
    families = {ipaddress.ip_address(ip).version for ip in ips if F.is_ip(ip)}
    if not all(F.is_ip(ip) for ip in ips):
        out.append({"reason": "InternalError", "field": path, "message": "Internal error: failed to check for dual "
                    "stack with error:ip <nil> is invalid"})
    if families != {4, 6} or len(ips) > 2:
        out.append(F.invalid(path, GoRepr(f"[]core.{go_type}{{{', '.join(shown)}}}"),
                             "may specify no more than one IP for each IP family"))
    if primary is None:
        out += duplicates
    return out


# -- Jobs -------------------------------------------------------------------------------------

def _true(status: Obj, ctype: str) -> bool:
    """``IsConditionTrue``."""
    return any(isinstance(c, MAPPING) and c.get("type") == ctype and c.get("status") == "True"
               for c in status.get("conditions") or ())


def _go_time(stamp: Any) -> GoRepr:
    """A ``*metav1.Time`` as ``ErrorBody`` prints it: Go's ``time.Time.String()``."""
    try:
        moment = _dt.datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        return GoRepr(str(stamp))
    return GoRepr(moment.astimezone(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S +0000 UTC"))


def _before(a: Any, b: Any) -> bool:
    try:
        return _dt.datetime.fromisoformat(str(a).replace("Z", "+00:00")) < _dt.datetime.fromisoformat(
            str(b).replace("Z", "+00:00"))
    except ValueError:
        return False


def _job_status(new: Obj, old: Obj) -> list[Cause]:
    """``validateJobStatus`` with the options the job status strategy sets when ``JobManagedBy`` is on
    (1.32+): most terminal-state rules run only when the fields they read changed."""
    st, was, spec = _status(new), _status(old), new.get("spec") or {}
    out: list[Cause] = []
    for key in ("active", "succeeded", "failed"):
        out += F.nonnegative(f"status.{key}", _int(st, key))
    for key in ("ready", "terminating"):
        if key in st:
            out += F.nonnegative(f"status.{key}", _int(st, key))
    uncounted = st.get("uncountedTerminatedPods")
    seen: set[str] = set()
    for part in ("succeeded", "failed"):
        for i, uid in enumerate((uncounted or {}).get(part) or () if isinstance(uncounted, MAPPING) else ()):
            at = f"status.uncountedTerminatedPods.{part}[{i}]"
            if uid == "":
                out.append(F.invalid(at, uid, "must not be empty"))
            elif uid in seen:
                out.append(F.duplicate(at, uid))
            else:
                seen.add(uid)
    complete, failed = _true(st, "Complete"), _true(st, "Failed")
    finished, was_finished = complete or failed, _true(was, "Complete") or _true(was, "Failed")
    target, met = _true(st, "FailureTarget"), _true(st, "SuccessCriteriaMet")
    complete_changed = complete != _true(was, "Complete")
    finished_changed = finished != was_finished
    completion, start = st.get("completionTime"), st.get("startTime")
    completion_changed, start_changed = completion != was.get("completionTime"), start != was.get("startTime")
    if (complete_changed or failed != _true(was, "Failed")) and complete and failed:
        out.append(_omitted("status.conditions", "cannot set Complete=True and Failed=true conditions"))
    if (complete_changed or target != _true(was, "FailureTarget")) and complete and target:
        out.append(_omitted("status.conditions", "cannot set Complete=True and FailureTarget=true conditions"))
    if complete_changed or completion_changed:
        if completion is not None and not complete:
            out.append(F.invalid("status.completionTime", _go_time(completion),
                                 "cannot set completionTime when there is no Complete=True condition"))
        if completion is None and complete:
            out.append(F.required("status.completionTime", "completionTime is required for Complete jobs"))
    if (start_changed or completion_changed) and start is not None and completion is not None and _before(
            completion, start):
        out.append(F.invalid("status.completionTime", _go_time(completion),
                             "completionTime cannot be set before startTime"))
    if (finished_changed or _int(st, "active") != _int(was, "active")) and _int(st, "active") > 0 and finished:
        out.append(F.invalid("status.active", _int(st, "active"), "active>0 is invalid for finished job"))
    if (finished_changed or start_changed) and start is None and finished:
        out.append(F.required("status.startTime", "startTime is required for finished job"))
    if (finished_changed or uncounted != was.get("uncountedTerminatedPods")) and finished and isinstance(
            uncounted, MAPPING) and (uncounted.get("failed") or uncounted.get("succeeded")):
        out.append(F.invalid("status.uncountedTerminatedPods", uncounted,
                             "uncountedTerminatedPods needs to be empty for finished job"))
    out += _indexes(st, was, spec)
    if met and failed:
        out.append(_omitted("status.conditions", "cannot set SuccessCriteriaMet=True and Failed=true conditions"))
    if met and target:
        out.append(_omitted("status.conditions",
                            "cannot set SuccessCriteriaMet=True and FailureTarget=true conditions"))
    if spec.get("successPolicy") is not None and not met and complete:
        out.append(_omitted("status.conditions",
                            "cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True"))
    return out


_INDEX = re.compile(r"^[+-]?[0-9]+$")


def _interval(text: str, completions: int) -> tuple[int, int] | str:
    """``parseIndexInterval``: ``x`` or ``x-y`` below ``completions``, or why not."""
    limits = text.split("-")
    if len(limits) > 2:
        return (f"the fragment {json.dumps(text)} violates the requirement that an index interval can have at most "
                "two parts separated by '-'")
    bounds: list[int] = []
    for limit in limits:
        if not _INDEX.match(limit):
            return f"cannot convert string to integer for index: {json.dumps(limit)}"
        if int(limit) >= completions:
            return f"too large index: {json.dumps(limit)}"
        bounds.append(int(limit))
    if len(bounds) == 2 and bounds[0] >= bounds[1]:
        return f"non-increasing order, previous: {bounds[0]}, current: {bounds[1]}"
    return bounds[0], bounds[-1]


def _index_list(text: str, completions: int) -> list[tuple[int, int]] | str:
    """``validateIndexesFormat``: comma-separated intervals in increasing order, or why not."""
    out: list[tuple[int, int]] = []
    for part in text.split(",") if text else ():
        parsed = _interval(part, completions)
        if isinstance(parsed, str):
            return parsed
        if out and out[-1][1] >= parsed[0]:
            return f"non-increasing order, previous: {out[-1][1]}, current: {parsed[0]}"
        out.append(parsed)
    return out


def _indexes(st: Obj, was: Obj, spec: Obj) -> list[Cause]:
    """The completed/failed index rules of ``validateJobStatus``, each run when its fields changed."""
    out: list[Cause] = []
    completed, failed = str(st.get("completedIndexes") or ""), st.get("failedIndexes")
    completed_changed = completed != str(was.get("completedIndexes") or "")
    failed_changed = failed != was.get("failedIndexes")
    completions = spec.get("completions")
    if completed_changed and isinstance(completions, int):
        parsed = _index_list(completed, completions)
        if isinstance(parsed, str):
            out.append(F.invalid("status.completedIndexes", completed, f"error parsing completedIndexes: {parsed}"))
    if failed_changed and isinstance(completions, int) and spec.get("backoffLimitPerIndex") is not None and (
            failed is not None):
        parsed = _index_list(str(failed), completions)
        if isinstance(parsed, str):
            out.append(F.invalid("status.failedIndexes", failed, f"error parsing failedIndexes: {parsed}"))
    if completed_changed and completed and spec.get("completionMode") != "Indexed":
        out.append(F.invalid("status.completedIndexes", completed,
                             "cannot set non-empty completedIndexes when non-indexed completion mode"))
    if failed_changed and spec.get("backoffLimitPerIndex") is None and failed is not None:
        out.append(F.invalid("status.failedIndexes", failed,
                             "cannot set non-null failedIndexes when backoffLimitPerIndex is null"))
    if (failed_changed or completed_changed) and isinstance(completions, int) and failed is not None:
        overlap = _overlap(completed, str(failed), completions)
        if overlap is not None:
            out.append(F.invalid("status.failedIndexes", failed,
                                 f"failedIndexes and completedIndexes overlap at index: {overlap}"))
    return out


def _overlap(completed: str, failed: str, completions: int) -> int | None:
    """``validateFailedIndexesNotOverlapCompleted``: the first index in both (unparsable intervals skipped)."""
    if not completed or not failed:
        return None
    done = [i for i in (_interval(p, completions) for p in completed.split(",")) if not isinstance(i, str)]
    bad = [i for i in (_interval(p, completions) for p in failed.split(",")) if not isinstance(i, str)]
    c = f = 0
    while c < len(done) and f < len(bad):
        (cx, cy), (fx, fy) = done[c], bad[f]
        if cx <= fy and fx <= cy:
            return max(cx, fx)
        if cx <= fx:
            c += 1
        else:
            f += 1
    return None


def _job(new: Obj, old: Obj) -> list[Cause]:
    """``ValidateJobStatusUpdate``: ``validateJobStatus``, then the transitions no status may make."""
    out = _job_status(new, old)
    st, was, spec = _status(new), _status(old), new.get("spec") or {}
    for ctype in ("Failed", "Complete", "FailureTarget"):
        if _true(was, ctype) and not _true(st, ctype):
            out.append(_omitted("status.conditions", f"cannot disable the terminal {ctype}=True condition"))
    if _int(st, "failed") < _int(was, "failed"):
        out.append(F.invalid("status.failed", _int(st, "failed"), "cannot decrease the failed counter"))
    scalable = spec.get("completionMode") == "Indexed" and spec.get("completions") == spec.get("parallelism")
    if not scalable and _int(st, "succeeded") < _int(was, "succeeded"):
        out.append(F.invalid("status.succeeded", _int(st, "succeeded"), "cannot decrease the succeeded counter"))
    completion = st.get("completionTime")
    if completion is not None and was.get("completionTime") is not None and completion != was["completionTime"]:
        out.append(F.invalid("status.completionTime", _go_time(completion), "completionTime cannot be mutated"))
    if was.get("startTime") is not None and was["startTime"] != st.get("startTime") and not spec.get("suspend"):
        out.append(F.required("status.startTime", "startTime cannot be removed for unsuspended job"))
    if _true(was, "SuccessCriteriaMet") and not _true(st, "SuccessCriteriaMet"):
        out.append(_omitted("status.conditions", "cannot disable the SuccessCriteriaMet=True condition"))
    if _true(was, "Complete") and not _true(was, "SuccessCriteriaMet") and _true(st, "SuccessCriteriaMet"):
        out.append(_omitted("status.conditions",
                            "cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions"))
    return out


def _resource_version(new: Obj) -> list[Cause]:
    """Volume status updates require a resourceVersion: an unconditional PUT (none sent) is refused here,
    not allowed as for other built-ins (``ValidatePersistentVolume(Claim)StatusUpdate``)."""
    return [] if (new.get("metadata") or {}).get("resourceVersion") else [F.required("resourceVersion")]


def _claim(new: Obj, old: Obj) -> list[Cause]:
    """``ValidatePersistentVolumeClaimStatusUpdate``: a resourceVersion, access modes (under upstream's
    ``Spec.accessModes``), capacities not negative (``validateBasicResource``)."""
    out = _resource_version(new)
    if not (new.get("spec") or {}).get("accessModes"):
        out.append(F.required("Spec.accessModes"))
    capacity = _status(new).get("capacity")
    for name, quantity in sorted(capacity.items()) if isinstance(capacity, MAPPING) else ():
        try:
            value = value_of(str(quantity))
        except QuantityError:
            continue  # the decoder refused it already
        if value < 0:
            out.append(F.invalid(f"status.capacity[{name}]", math.ceil(value), "must be a valid resource quantity"))
    return out


_RULES: dict[tuple[str, str], Callable[[Obj, Obj], list[Cause]]] = {
    **{key: _counts(rule, key[1]) for key, rule in _COUNTS.items()},
    ("", "Pod"): _pod, ("", "Service"): _service, ("", "Namespace"): _namespace,
    ("batch", "Job"): _job, ("policy", "PodDisruptionBudget"): _pdb,
    ("networking.k8s.io", "Ingress"): validation_net.ingress_status,
    ("", "PersistentVolumeClaim"): _claim, ("", "PersistentVolume"): lambda new, old: _resource_version(new),
}


def validate_status(group: str, kind: str, old: Obj, new: Obj) -> list[Cause]:
    """The causes the kind's status strategy finds in a ``/status`` write (``old``: the stored
    object).  A status the write left as the stored object itself was checked when it was stored."""
    rule = _RULES.get((group, kind))
    if rule is None or (new.get("status") is old.get("status") and kind != "Namespace"):
        return []
    return rule(new, old)
