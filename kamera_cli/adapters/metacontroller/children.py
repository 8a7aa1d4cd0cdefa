"""What metacontroller's engine does to objects: atomic updates, claiming, applying and deleting children.

Follows metacontroller v4.17 (``pkg/dynamic/clientset`` ``AtomicUpdate``/``AtomicStatusUpdate``,
``pkg/dynamic/controllerref`` and ``pkg/third_party/kubernetes/controller_ref_manager.go`` for claiming,
``pkg/controller/common/manage_children.go`` for the default "dynamic apply" of children).  Go ranges
maps in random order; here every loop is sorted (kind, then namespace and name) so that a step is a
function of what it reads.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from kamera_cli.adapters.metacontroller.apply import ApplyError, apply_update, set_last_applied
from kamera_cli.adapters.metacontroller.rest import ResInfo, Rest, controller_of, meta, status_of

__all__ = ["GVK", "ChildApplier", "ObjectMap", "SyncError", "atomic_update", "delete_child", "manage_children"]

#: (apiVersion, kind)
GVK = tuple[str, str]
#: children by kind, then by (namespace, name)
ObjectMap = dict[GVK, dict[tuple[str, str], dict[str, Any]]]

#: retry.DefaultBackoff's steps: an atomic update gives up after this many conflicts
CONFLICT_ATTEMPTS = 4
#: the finalizers with which the garbage collector deletes in the foreground or orphans
GC_FINALIZERS = ("foregroundDeletion", "orphan")


class ChildApplier(Protocol):
    """What ``manage_children`` needs of ``ssa.SsaApplier`` (a protocol: ``ssa`` imports this module)."""

    def forget(self, info: ResInfo, namespace: str, name: str) -> None: ...

    def apply(self, info: ResInfo, method: str, parent: Mapping[str, Any], observed: Mapping[str, Any] | None,
              desired: Mapping[str, Any]) -> None: ...


class SyncError(Exception):
    """The sync failed in a way metacontroller reports as a ``SyncError`` event and retries."""


def gvk_of(obj: Mapping[str, Any]) -> GVK:
    return str(obj.get("apiVersion") or ""), str(obj.get("kind") or "")


def key_of(obj: Mapping[str, Any]) -> tuple[str, str]:
    m = meta(obj)
    return str(m.get("namespace") or ""), str(m.get("name") or "")


def deleting(obj: Mapping[str, Any]) -> bool:
    return bool(meta(obj).get("deletionTimestamp"))


def finalizers(obj: Mapping[str, Any]) -> list[str]:
    return [str(f) for f in meta(obj).get("finalizers") or []]


def atomic_update(rest: Rest, info: ResInfo, orig: Mapping[str, Any],
                  mutate: Callable[[dict[str, Any]], bool], *, status: bool = False) -> dict[str, Any]:
    """Read the object afresh, change it, write it; again on a conflict (``AtomicUpdate``).

    Raises the 404 answer when the object is gone or is another incarnation (another uid).
    ``status``: write through the status subresource when the resource has one (``AtomicStatusUpdate``).
    """
    from kubernetes.client.exceptions import ApiException

    namespace, name = key_of(orig)
    uid = meta(orig).get("uid")
    last: BaseException | None = None
    for _ in range(CONFLICT_ATTEMPTS):
        current = rest.get(info, namespace or None, name)
        if current is None or meta(current).get("uid") != uid:
            exc = ApiException(status=404, reason="Not Found")
            exc.body = f'{info.plural} "{name}" not found'
            raise exc
        if not mutate(current):
            return current
        sub = "status" if status and info.has_status else ""
        try:
            written = rest.call("PUT", info.path(namespace or None, name, sub), current)
        except Exception as exc:
            if status_of(exc) == 409:
                last = exc
                continue
            raise
        return written if isinstance(written, dict) else current
    assert last is not None
    raise last


def controller_ref(parent: Mapping[str, Any]) -> dict[str, Any]:
    """The ownerReference metacontroller puts on the children it creates or adopts."""
    m = meta(parent)
    return {"apiVersion": parent.get("apiVersion"), "kind": parent.get("kind"), "name": m.get("name"),
            "uid": m.get("uid"), "controller": True, "blockOwnerDeletion": True}


def claim(rest: Rest, info: ResInfo, parent: Mapping[str, Any], candidates: list[dict[str, Any]],
          matches: Callable[[Mapping[str, Any]], bool], can_adopt: Callable[[], None]) -> list[dict[str, Any]]:
    """The candidates this parent keeps: its own that still match, orphans it adopts (``ClaimChildren``).

    Its own children that no longer match the selector are released (its ownerReference removed).
    """
    uid = meta(parent).get("uid")
    claimed: list[dict[str, Any]] = []
    errors: list[BaseException] = []
    for child in candidates:
        ref = controller_of(child)
        try:
            if ref is not None:
                if ref.get("uid") != uid:
                    continue
                if matches(child):
                    claimed.append(child)
                elif not deleting(parent):
                    atomic_update(rest, info, child, lambda obj: _drop_owner(obj, uid))
                continue
            if deleting(parent) or not matches(child) or deleting(child):
                continue
            can_adopt()
            atomic_update(rest, info, child, lambda obj: _add_owner(obj, controller_ref(parent)))
            claimed.append(child)  # as listed, before the adoption (metacontroller keeps the cached copy)
        except Exception as exc:
            if status_of(exc) == 404:
                continue
            errors.append(exc)
    if errors:
        raise errors[0]
    return claimed


def _add_owner(obj: dict[str, Any], ref: dict[str, Any]) -> bool:
    refs = [r for r in meta(obj).get("ownerReferences") or [] if isinstance(r, dict)]
    if any(r.get("uid") == ref["uid"] for r in refs):
        refs = [ref if r.get("uid") == ref["uid"] else r for r in refs]
    else:
        refs.append(ref)
    obj.setdefault("metadata", {})["ownerReferences"] = refs
    return True  # metacontroller writes even when nothing changed


def _drop_owner(obj: dict[str, Any], uid: Any) -> bool:
    refs = [r for r in meta(obj).get("ownerReferences") or [] if isinstance(r, dict) and r.get("uid") != uid]
    obj.setdefault("metadata", {})["ownerReferences"] = refs
    return True


def delete_child(rest: Rest, info: ResInfo, child: Mapping[str, Any]) -> None:
    """Delete with a uid precondition, in the background; already gone is fine."""
    namespace, name = key_of(child)
    body = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background",
            "preconditions": {"uid": meta(child).get("uid")}}
    try:
        rest.call("DELETE", info.path(namespace or None, name), body)
    except Exception as exc:
        if status_of(exc) != 404:
            raise


def manage_children(rest: Rest, resolve_kind: Callable[[str, str], ResInfo | None],
                    methods: Mapping[GVK, str], parent: Mapping[str, Any],
                    observed: ObjectMap, desired: ObjectMap, ssa: ChildApplier | None = None) -> list[BaseException]:
    """Delete the observed children no longer desired, then create or update the desired ones, by
    dynamic apply or (``ssa``, ``--apply-strategy=server-side-apply``) by server-side apply.

    Returns the errors (metacontroller aggregates them and fails the sync after writing the status).
    """
    errors: list[BaseException] = []
    for gvk in sorted(observed):
        info = resolve_kind(*gvk)
        if info is None:
            errors.append(SyncError(f"can't find kind {gvk[1]!r} in apiVersion {gvk[0]!r}"))
            continue
        wanted = desired.get(gvk) or {}
        for key in sorted(observed[gvk]):
            child = observed[gvk][key]
            if deleting(child) or key in wanted:
                continue
            try:
                delete_child(rest, info, child)
            except Exception as exc:
                errors.append(exc)
                continue
            if ssa is not None:
                ssa.forget(info, *key)
    for gvk in sorted(desired):
        info = resolve_kind(*gvk)
        if info is None:
            errors.append(SyncError(f"can't find kind {gvk[1]!r} in apiVersion {gvk[0]!r}"))
            continue
        method = methods.get(gvk, "OnDelete")
        seen = observed.get(gvk) or {}
        for key in sorted(desired[gvk]):
            try:
                if ssa is not None:
                    ssa.apply(info, method, parent, seen.get(key), desired[gvk][key])
                else:
                    _apply(rest, info, method, parent, seen.get(key), desired[gvk][key])
            except ApplyError as exc:
                errors.append(SyncError(str(exc)))
            except Exception as exc:
                errors.append(exc)
    return errors


def _apply(rest: Rest, info: ResInfo, method: str, parent: Mapping[str, Any], observed: dict[str, Any] | None,
           desired: dict[str, Any]) -> None:
    """metacontroller's ``DynamicApply.Apply`` for one child."""
    namespace, name = key_of(desired)
    if observed is not None:
        updated = apply_update(observed, desired)
        if updated == observed or deleting(observed) or method == "OnDelete":
            return
        if method in ("Recreate", "RollingRecreate"):
            delete_child(rest, info, observed)  # recreated by a later sync, once it is gone
            return
        try:  # InPlace, RollingInPlace
            rest.call("PUT", info.path(namespace or None, name), updated)
        except Exception as exc:
            if status_of(exc) not in (404, 409):
                raise
        return
    created = copy.deepcopy(desired)
    set_last_applied(created, copy.deepcopy(desired))
    ref = controller_ref(parent)
    refs = [r for r in meta(created).get("ownerReferences") or [] if isinstance(r, dict)]
    if not any(r.get("uid") == ref["uid"] for r in refs):
        created.setdefault("metadata", {})["ownerReferences"] = [*refs, ref]
    try:
        rest.call("POST", info.path(namespace or None), created)
    except Exception as exc:
        if status_of(exc) != 409:  # AlreadyExists: someone else's object of that name
            raise


def object_map(parent: Mapping[str, Any], objects: list[dict[str, Any]], groups: list[GVK]) -> ObjectMap:
    """Objects by kind and (namespace, name), with an (empty) group for each of ``groups``."""
    out: ObjectMap = {gvk: {} for gvk in groups}
    for obj in objects:
        out.setdefault(gvk_of(obj), {})[key_of(obj)] = obj
    return out


def relative_map(parent: Mapping[str, Any], objects: ObjectMap, uniform: bool = False) -> dict[str, dict[str, Any]]:
    """A hook request's map: ``Kind.apiVersion`` → name → object.

    v1 hooks (``RelativeObjectMap``): the name, or ``namespace/name`` for a namespaced object under a
    cluster-scoped parent; v2 hooks (``uniform``, ``UniformObjectMap``): ``namespace/name`` for every
    namespaced object.
    """
    parent_ns = meta(parent).get("namespace") or ""
    out: dict[str, dict[str, Any]] = {}
    for (api_version, kind), group in sorted(objects.items()):
        entries = out.setdefault(f"{kind}.{api_version}", {})
        for (namespace, name), obj in sorted(group.items()):
            qualified = namespace and (uniform or not parent_ns)
            entries[f"{namespace}/{name}" if qualified else name] = obj
    return out
