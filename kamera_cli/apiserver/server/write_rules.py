"""Storage-layer rules of writes: resourceVersion on create, update preconditions, the DELETE answer.

Why a module of its own: these answers do not come from a kind's strategy but from the generic
registry and the etcd3 store underneath every kind, so they hold for built-ins and custom
resources alike and are worded by the storage layer (``StorageError``), not by validation.
Upstream: ``staging/src/k8s.io/apiserver/pkg/storage/etcd3/store.go`` (``Create``),
``.../registry/generic/registry/store.go`` (``Update``, ``Delete``, ``finalizeDelete``),
``.../storage/interfaces.go`` (``Preconditions.Check``), ``.../storage/errors.go``.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kamera_cli.apiserver import errors as E
from kamera_cli.apiserver.defaulting.metadata import format_time
from kamera_cli.apiserver.errors import ApiError
from kamera_cli.apiserver.registry.kinds import ResourceInfo
from kamera_cli.model.objects import Manifest

#: Built-in kinds whose store sets ``ReturnDeletedObject`` (pkg/registry/**/storage/storage.go):
#: DELETE answers the object itself; every other built-in answers a ``Status{Success}``.
_RETURNS_OBJECT = frozenset({
    ("", "Pod"), ("", "PodTemplate"), ("", "Service"), ("", "ServiceAccount"), ("", "Namespace"),
    ("", "PersistentVolume"), ("", "PersistentVolumeClaim"),
})
#: Built-ins whose update strategy sets ``AllowCreateOnUpdate`` (pkg/registry/**/strategy.go): a PUT to a
#: missing object creates it (201).  Everything else, custom resources included, answers 404.
CREATE_ON_UPDATE = frozenset({
    ("", "Event"), ("events.k8s.io", "Event"), ("coordination.k8s.io", "Lease"), ("", "Service"),
    ("", "ServiceAccount"), ("", "Endpoints"),
    *(("rbac.authorization.k8s.io", k) for k in ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")),
})
#: Resources whose etcd key is not ``/registry/<resource>`` (the storage prefix overrides).
_KEY_PREFIX = {("", "services"): "services/specs", ("", "nodes"): "minions",
               ("", "replicationcontrollers"): "controllers", ("", "endpoints"): "services/endpoints"}


def parse_resource_version(value: Any) -> int | None:
    """``APIObjectVersioner.ObjectResourceVersion``: "" is 0; a non-number is None (an error)."""
    if value in (None, ""):
        return 0
    text = str(value)
    return int(text) if text.isascii() and text.isdigit() else None


def has_precondition(body: Any) -> bool:
    """Whether a write's body can lose an optimistic-concurrency race (409 Conflict): it names the
    resourceVersion it was built on — an update's or a merge, strategic or apply patch's
    ``metadata.resourceVersion``, or a JSON patch that adds or replaces ``/metadata/resourceVersion``
    — as a number other than 0 ("" and "0" ask for an unconditional write; a non-number is refused
    with 500, not a race). Any other write is applied to the object the server holds. A JSON patch
    whose ``test`` of the version fails is answered 422, not 409."""
    if isinstance(body, list):
        sent = [op.get("value") for op in body if isinstance(op, dict)
                and op.get("path") == "/metadata/resourceVersion" and op.get("op") in ("add", "replace")]
    else:
        meta = body.get("metadata") if isinstance(body, dict) else None
        sent = [meta.get("resourceVersion")] if isinstance(meta, dict) else []
    return any((parse_resource_version(v) or 0) > 0 for v in sent)


def _unknown(status: int, message: str) -> ApiError:
    """A plain Go error from storage: ``ErrorToAPIStatus`` answers it with no reason."""
    return ApiError(status, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                             "message": message, "code": status})


def refuse_resource_version_on_create(meta: Mapping[str, Any]) -> None:
    """The etcd3 store refuses to create an object that carries a (non-zero) resourceVersion.

    The store returns a plain Go error, which the endpoint turns into a 500 with no reason
    (``responsewriters.ErrorToAPIStatus``): controllers that copy a live object and create it
    without stripping ``metadata.resourceVersion`` see exactly this.  A resourceVersion that is
    not a number passes (the store cannot read it and clears it), as ``"0"`` does.
    """
    if parse_resource_version(meta.get("resourceVersion")):
        raise _unknown(500, "resourceVersion should not be set on objects to be created")


def namespace_holds(info: ResourceInfo, obj: Manifest) -> bool:
    """A Namespace stays until its spec.finalizers (the namespace controller's ``kubernetes``) are gone."""
    return info.group == "" and info.kind == "Namespace" and bool((obj.get("spec") or {}).get("finalizers"))


def storage_key(info: ResourceInfo, namespace: str, name: str) -> str:
    """The etcd key the storage layer names in its errors (``/registry/...``)."""
    prefix = _KEY_PREFIX.get((info.group, info.plural)) or (
        f"{info.group}/{info.plural}" if info.custom else info.plural)
    return f"/registry/{prefix}/{namespace}/{name}" if namespace else f"/registry/{prefix}/{name}"


def _precondition_failed(info: ResourceInfo, namespace: str, name: str, why: str) -> ApiError:
    # storage.NewInvalidObjError, mapped to a Conflict by storeerr.InterpretUpdateError/InterpretDeleteError
    text = (f"StorageError: invalid object, Code: 4, Key: {storage_key(info, namespace, name)}, "
            f"ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: {why}")
    return E.conflict(info.plural, info.group, name, text)


def check_preconditions(info: ResourceInfo, namespace: str, name: str, live: Mapping[str, Any],
                        uid: Any = None, resource_version: Any = None) -> None:
    """``storage.Preconditions.Check``: a uid (and for DELETE a resourceVersion) the caller pinned."""
    meta = live.get("metadata") or {}
    if uid and uid != meta.get("uid"):
        raise _precondition_failed(info, namespace, name, f"UID in precondition: {uid}, UID in object meta: "
                                                          f"{meta.get('uid', '')}")
    if resource_version and resource_version != meta.get("resourceVersion"):
        raise _precondition_failed(info, namespace, name, f"ResourceVersion in precondition: {resource_version}, "
                                                          f"ResourceVersion in object meta: "
                                                          f"{meta.get('resourceVersion', '')}")


def check_update_version(info: ResourceInfo, name: str, new_meta: Mapping[str, Any],
                         live: Mapping[str, Any]) -> None:
    """The optimistic-concurrency rules of ``Store.Update`` for an update or a patch result.

    The uid the new object carries is a precondition (``defaultUpdatedObjectInfo.Preconditions``),
    checked first.  A resourceVersion of "" or "0" asks for an unconditional update, which built-ins
    allow and custom resources refuse (422); a non-number fails ``strconv.ParseUint`` inside the
    store (a 500 with no reason); any other value must equal the stored one (409).
    """
    check_preconditions(info, str((live.get("metadata") or {}).get("namespace") or ""), name, live,
                        uid=new_meta.get("uid"))
    raw = new_meta.get("resourceVersion")
    version = parse_resource_version(raw)
    if version is None:
        raise _unknown(500, f'strconv.ParseUint: parsing "{raw}": invalid syntax')
    if version == 0:
        if info.custom:  # customResourceStrategy.AllowUnconditionalUpdate is false
            raise E.invalid(info.kind, info.group, name, [E.cause(
                "FieldValueInvalid", "metadata.resourceVersion",
                "Invalid value: 0x0: must be specified for an update")])
        return
    if str(raw) != (live.get("metadata") or {}).get("resourceVersion"):
        raise E.stale(info.plural, info.group, name)


def check_delete_preconditions(info: ResourceInfo, live: Mapping[str, Any], uid: Any, resource_version: Any
                               ) -> None:
    """``rest.BeforeDelete`` checks a DELETE's preconditions first, with its own wording.

    The Conflict names the *kind* as the resource (``Operation cannot be fulfilled on Deployment.apps
    "d": the UID in the precondition (x) does not match the UID in record (y). …``), so a DELETE never
    reaches the storage layer's ``Precondition failed`` sentence.
    """
    meta = live.get("metadata") or {}
    name = str(meta.get("name", ""))
    if uid and uid != meta.get("uid"):
        raise E.conflict(info.kind, info.group, name, f"the UID in the precondition ({uid}) does not match the UID "
                                                      f"in record ({meta.get('uid', '')}). The object might have "
                                                      f"been deleted and then recreated")
    if resource_version and resource_version != meta.get("resourceVersion"):
        raise E.conflict(info.kind, info.group, name, f"the ResourceVersion in the precondition ({resource_version})"
                                                      f" does not match the ResourceVersion in record "
                                                      f"({meta.get('resourceVersion', '')}). The object might have "
                                                      f"been modified")


@dataclass(frozen=True, slots=True)
class Grace:
    """``rest.BeforeDelete``'s verdict for a kind whose strategy deletes gracefully (Pods).

    ``pending``: a graceful deletion at least as short is under way, the DELETE answers the object
    unchanged.  Otherwise the deletion fields to store: ``timestamp`` (when the grace period ends)
    and ``period``; ``first`` when this starts the deletion (the generation moves).  A ``period`` of
    0 without finalizers removes the object at once.
    """

    pending: bool
    timestamp: str = ""
    period: int = 0
    first: bool = False


def _graceful(info: ResourceInfo) -> bool:
    """Only the pod strategy implements ``RESTGracefulDeleteStrategy`` among the kinds kamera serves."""
    return not info.custom and info.group == "" and info.kind == "Pod"


def _pod_grace_period(pod: Mapping[str, Any], requested: int | None) -> int:
    """``podStrategy.CheckGracefulDelete``: the request's period, else the pod's own, else 0 —
    and 0 for a pod no node runs or one that has already finished."""
    spec = pod.get("spec") or {}
    period = requested if requested is not None else int(spec.get("terminationGracePeriodSeconds") or 0)
    if not spec.get("nodeName") or (pod.get("status") or {}).get("phase") in ("Failed", "Succeeded"):
        period = 0
    return 1 if period < 0 else period


def _seconds(stamp: Any) -> int | None:
    try:
        parsed = _dt.datetime.strptime(str(stamp), "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return None
    return int(parsed.replace(tzinfo=_dt.timezone.utc).timestamp())


def graceful_delete(info: ResourceInfo, live: Mapping[str, Any], requested: int | None, now: int) -> Grace | None:
    """``rest.BeforeDelete`` for graceful kinds; ``None`` means the ordinary (non-graceful) path.

    A negative requested period counts as 1 s.  On an object already being deleted with a non-zero
    grace period only a shorter period changes anything: the deletion time moves to the original
    request time plus the new period; no period (or a longer one) leaves the deletion pending.
    """
    if not _graceful(info):
        return None
    if requested is not None and requested < 0:
        requested = 1
    meta = live.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        current = meta.get("deletionGracePeriodSeconds")
        if not isinstance(current, int) or current <= 0:
            return None  # deleting already with no grace left: delete now (or wait for finalizers)
        if requested is None or requested >= current:
            return Grace(pending=True)
        ends = _seconds(meta["deletionTimestamp"])
        if ends is None:
            return None
        return Grace(pending=False, timestamp=format_time(ends - current + requested), period=requested)
    period = _pod_grace_period(live, requested)
    return Grace(pending=False, timestamp=format_time(now + period), period=period, first=True)


def delete_answer(info: ResourceInfo, final: Mapping[str, Any]) -> Mapping[str, Any]:
    """What DELETE answers once the object is gone: the object, or ``finalizeDelete``'s Status.

    An object only marked for deletion (finalizers) is always answered as itself.
    """
    if info.custom or (info.group, info.kind) in _RETURNS_OBJECT:
        return final
    meta = final.get("metadata") or {}
    details = {"name": meta.get("name", ""), "group": info.group, "kind": info.plural, "uid": meta.get("uid", "")}
    if not info.group:
        del details["group"]
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}


#: Metadata the generic update path always takes from the stored object (``rest.BeforeUpdate``).
SERVER_KEPT = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation", "name",
               "namespace")
#: What each built-in status strategy's ``PrepareForUpdate`` resets besides the spec
#: (pkg/registry/**/strategy.go): a Deployment's labels, a Pod's owner references.
_STATUS_RESETS: dict[tuple[str, str], tuple[str, ...]] = {("apps", "Deployment"): ("labels",),
                                                          ("", "Pod"): ("ownerReferences",)}


def status_update(info: ResourceInfo, live: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """The object a write to ``/status`` stores, before validation.

    Built-in status strategies reset only the spec (plus the fields in ``_STATUS_RESETS``), so the
    request's labels, annotations, finalizers and owner references are kept; a custom resource's
    status strategy copies everything but ``.status`` from the stored object.
    """
    live_meta: Mapping[str, Any] = live.get("metadata") or {}
    if info.custom:
        merged: dict[str, Any] = {**live, "metadata": dict(live_meta)}
    else:
        merged = {**new, "metadata": dict(new.get("metadata") or {})}
        if "spec" in live:
            merged["spec"] = live["spec"]
        else:
            merged.pop("spec", None)
        meta = merged["metadata"]
        for key in (*SERVER_KEPT, "managedFields", *_STATUS_RESETS.get((info.group, info.kind), ())):
            if key in live_meta:
                meta[key] = live_meta[key]
            else:
                meta.pop(key, None)
    if "status" in new:
        merged["status"] = new["status"]
        if not info.custom and info.kind == "Pod" and not info.group:
            _backfill_qos(merged, live)
    else:
        merged.pop("status", None)
    return merged


def _backfill_qos(merged: dict[str, Any], live: Mapping[str, Any]) -> None:
    """``podStatusStrategy.PrepareForUpdate``: a status without ``qosClass`` keeps the stored one (old
    kubelets dropped it), so only a *different* class reaches the immutability check."""
    status, stored = merged["status"], (live.get("status") or {}).get("qosClass")
    if isinstance(status, dict) and not status.get("qosClass") and stored:
        merged["status"] = {**status, "qosClass": stored}
