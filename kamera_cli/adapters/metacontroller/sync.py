"""One sync of one parent, as metacontroller's CompositeController and DecoratorController do it.

Follows metacontroller v4.17: ``pkg/controller/composite/controller.go`` (``syncParentObject``,
``claimChildren``, ``makeSelector``, ``updateParentStatus``) and ``hooks.go`` (which hook to call),
``pkg/controller/decorator/controller.go`` (``syncParentObject``, ``getChildren``, ``updateStringMap``)
and ``selector.go``, ``pkg/controller/common/finalizer`` and ``pkg/controller/common/customize``.
One call is one step: its requests (hooks called in between) are the step's reads and writes, in
metacontroller's order, so a crash can strike between any two writes.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kamera_cli.adapters.metacontroller.children import (
    GC_FINALIZERS,
    ObjectMap,
    SyncError,
    atomic_update,
    claim,
    deleting,
    finalizers,
    key_of,
    manage_children,
    object_map,
    relative_map,
)
from kamera_cli.adapters.metacontroller.hooks import HookAnswer, HookError, HookTarget, call_hook
from kamera_cli.adapters.metacontroller.manifest import MetaSpec
from kamera_cli.adapters.metacontroller.rest import (
    ResInfo,
    Rest,
    controller_of,
    label_selector_matches,
    meta,
    parent_selected,
)
from kamera_cli.adapters.metacontroller.rolling import rolling_sync
from kamera_cli.adapters.metacontroller.ssa import SsaApplier

__all__ = ["DECORATOR_ANNOTATION", "Engine", "SyncOutcome"]

#: the annotation a DecoratorController puts on its attachments (which decorator owns them)
DECORATOR_ANNOTATION = "metacontroller.k8s.io/decorator-controller"


@dataclass(frozen=True, slots=True)
class SyncOutcome:
    """When the parent is synced again: the hook's ``resyncAfterSeconds``, or a 429's Retry-After."""

    resync_after: float = 0.0
    retry_after: float = 0.0
    #: the parent is gone, or neither selected nor carrying the finalizer: the informer's periodic
    #: resync never enqueues it (``enqueueParentObject`` filters it out), so no resync is due
    ignored: bool = False


@dataclass
class Engine:
    """The engine of one controller manifest for one parent resource, over one step's client."""

    spec: MetaSpec
    manifest: Mapping[str, Any]
    rest: Rest
    hooks: Mapping[str, HookTarget]
    parent_info: ResInfo
    #: resolves (apiVersion, plural) and (apiVersion, Kind) to resources (the cluster's discovery)
    resolve: Callable[[str, str], ResInfo | None]
    label_selector: str = ""
    annotation_selector: str = ""
    #: the customize hook's last answer for this parent, ``{"key": {uid, generation}, "rules": [...]}``:
    #: metacontroller calls the hook again only when the parent's uid or generation changed
    customize_cache: dict[str, Any] | None = None
    #: ``--apply-strategy=server-side-apply``: the children's applier, with the parent's last-update cache
    ssa: SsaApplier | None = None

    # -- the parent --------------------------------------------------------------------------------------------
    def sync(self, namespace: str | None, name: str) -> SyncOutcome:
        """One sync; a hook's 429 (``TooManyRequestError``) ends it, to be retried after Retry-After."""
        try:
            return self._sync(namespace, name)
        except _Backoff as backoff:
            return SyncOutcome(retry_after=backoff.seconds)

    def _sync(self, namespace: str | None, name: str) -> SyncOutcome:
        """The steps both controllers share: finalizer, children, related objects, the hook's answer."""
        parent = self.rest.get(self.parent_info, namespace, name)
        if parent is None or self._ignored(parent):
            return SyncOutcome(ignored=True)  # deleted, or not selected and not ours to finalize
        parent = self._sync_finalizer(parent)
        if self._ignored(parent):
            return SyncOutcome(ignored=True)
        composite = self.spec.composite
        observed = self._claim_children(parent) if composite else self._attachments(parent)
        related = self.related_of(parent)
        kids = "children" if composite else "attachments"
        if composite and self._rolls(parent):  # one hook call per ControllerRevision (rolling.py)
            body = rolling_sync(self, parent, observed)
        else:
            body = self.call_for(parent, parent, observed, related).body
        desired = self.desired_children(parent, body.get(kids), kids)
        resync = _seconds(body.get("resyncAfterSeconds"))
        finish = self._composite if composite else self._decorator
        return finish(parent, observed, desired, body, resync)

    def _rolls(self, parent: Mapping[str, Any]) -> bool:
        """A rolling strategy on some child resource, unless the parent is going away unfinalized."""
        return any(c.rolling for c in self.spec.children) and (not deleting(parent) or self._should_finalize(parent))

    def _manage(self, parent: Mapping[str, Any], observed: ObjectMap, desired: ObjectMap) -> list[BaseException]:
        """Children are managed unless the parent is going away without a finalize hook holding it."""
        if deleting(parent) and not self._should_finalize(parent):
            return []
        methods = {(i.api_version, i.kind): m for i, m in self._child_infos()}
        return manage_children(self.rest, self.resolve, methods, parent, observed, desired, self.ssa)

    def _selected(self, parent: Mapping[str, Any]) -> bool:
        return parent_selected(self.label_selector, self.annotation_selector, parent)

    def _ignored(self, parent: Mapping[str, Any]) -> bool:
        return self.spec.finalizer not in finalizers(parent) and not self._selected(parent)

    def _sync_finalizer(self, parent: dict[str, Any]) -> dict[str, Any]:
        """Add the finalizer when a finalize hook exists (not while deleting); remove it otherwise."""
        enabled = "finalize" in self.hooks
        name = self.spec.finalizer
        if (name in finalizers(parent)) == enabled or (enabled and deleting(parent)):
            return parent

        def change(obj: dict[str, Any]) -> bool:
            current = finalizers(obj)
            if (name in current) == enabled:
                return False
            obj.setdefault("metadata", {})["finalizers"] = [*current, name] if enabled else \
                [f for f in current if f != name]
            return True

        return atomic_update(self.rest, self.parent_info, parent, change)

    def _remove_finalizer(self, parent: dict[str, Any]) -> dict[str, Any]:
        name = self.spec.finalizer

        def change(obj: dict[str, Any]) -> bool:
            if name not in finalizers(obj):
                return False
            obj["metadata"]["finalizers"] = [f for f in finalizers(obj) if f != name]
            return True

        return atomic_update(self.rest, self.parent_info, parent, change)

    def _should_finalize(self, parent: Mapping[str, Any]) -> bool:
        """Children are still managed while the parent waits for its finalize hook (``ShouldFinalize``)."""
        return ("finalize" in self.hooks and self.spec.finalizer in finalizers(parent)
                and not any(f in GC_FINALIZERS for f in finalizers(parent)))

    def _hook(self, parent: Mapping[str, Any]) -> tuple[str, bool]:
        """The hook to call: finalize while the parent is deleted or no longer selected, else sync."""
        if "finalize" in self.hooks and (deleting(parent) or not self._selected(parent)):
            return "finalize", True
        return "sync", False

    def _call(self, hook: str, request: dict[str, Any]) -> HookAnswer:
        answer = call_hook(self.hooks[hook], request)
        if answer.retry_after is not None:
            raise _Backoff(answer.retry_after)
        return answer

    def call_for(self, parent: Mapping[str, Any], seen: Mapping[str, Any], observed: ObjectMap,
                 related: ObjectMap) -> HookAnswer:
        """Call sync or finalize about ``seen`` (the parent, or the parent as a revision had it)."""
        hook, finalizing = self._hook(seen)
        uniform = self.spec.hook_version(hook) == "v2"
        root, kids = ("parent", "children") if self.spec.composite else ("object", "attachments")
        return self._call(hook, {"controller": dict(self.manifest), root: seen,
                                 kids: relative_map(parent, observed, uniform),
                                 "related": relative_map(parent, related, uniform), "finalizing": finalizing})

    # -- related objects (the customize hook) ------------------------------------------------------------------
    def related_of(self, parent: Mapping[str, Any]) -> ObjectMap:
        """The related objects the customize hook selects for ``parent`` (none without that hook)."""
        if "customize" not in self.hooks:
            return {}
        key = {"uid": meta(parent).get("uid"), "generation": meta(parent).get("generation") or 0}
        cache = self.customize_cache
        if cache is not None and cache.get("key") == key:
            rules = cache.get("rules") or []
        else:
            answer = self._call("customize", {"controller": dict(self.manifest), "parent": parent})
            rules = answer.body.get("relatedResources") or []
            if not isinstance(rules, list):
                raise HookError("customize hook answered relatedResources that is not a list")
            self.customize_cache = {"key": key, "rules": rules}
        related: ObjectMap = {}
        parent_ns = meta(parent).get("namespace") or ""
        for rule in rules:
            if not isinstance(rule, dict):
                raise HookError(f"customize hook answered a related resource rule that is not an object: {rule!r}")
            info = self.resolve(str(rule.get("apiVersion") or ""), str(rule.get("resource") or ""))
            if info is None:
                raise SyncError(f"can't find resource {rule.get('resource')!r} "
                                f"in apiVersion {rule.get('apiVersion')!r}")
            related.setdefault((info.api_version, info.kind), {})
            for obj in self._related_objects(rule, info, parent_ns):
                related[(info.api_version, info.kind)][key_of(obj)] = obj
        return related

    def _related_objects(self, rule: Mapping[str, Any], info: ResInfo, parent_ns: str) -> list[dict[str, Any]]:
        """The objects one related rule selects (``GetRelatedObjects``, v1 hooks)."""
        selector = rule.get("labelSelector")
        namespace = str(rule.get("namespace") or "")
        names = [str(n) for n in rule.get("names") or []]
        if names and (selector is not None or rule.get("namespaceSelector") is not None):
            raise SyncError("related rule cannot have both names and labelSelector/namespaceSelector specified")
        if namespace and rule.get("namespaceSelector") is not None:
            raise SyncError("related rule cannot have both namespace and namespaceSelector specified")
        # v1 customize hooks of a namespaced parent stay in its namespace; v2 hooks may look anywhere
        both = self.parent_info.namespaced and info.namespaced and self.spec.hook_version("customize") == "v1"
        if rule.get("namespaceSelector") is not None:
            return self._by_namespace_selector(rule, info, both)
        if both and namespace and namespace != parent_ns:
            raise SyncError(f"requested related object namespace {namespace} differs from parent object "
                            f"namespace {parent_ns}")
        if names or (namespace and selector is None):  # by namespace and names: every namespace when none
            objects = self.rest.list(info, namespace or None)
            return [o for o in objects if not names or meta(o).get("name") in names]
        # by labels: in the rule's namespace, or (v1, both namespaced) the parent's, or everywhere
        objects = self.rest.list(info, namespace or (parent_ns if both else None))
        try:
            return [o for o in objects if label_selector_matches(selector if isinstance(selector, dict) else None,
                                                                 meta(o).get("labels"))]
        except ValueError as exc:
            raise SyncError(str(exc)) from None

    def _by_namespace_selector(self, rule: Mapping[str, Any], info: ResInfo, both: bool) -> list[dict[str, Any]]:
        """The objects (matching the rule's labelSelector) in every namespace the namespaceSelector selects."""
        if both:
            raise SyncError("namespaceSelector is not supported for namespaced parent in v1 hook version")
        if not info.namespaced:
            raise SyncError("namespaceSelector is only supported for namespaced related resources")
        namespaces = self.resolve("v1", "namespaces")
        assert namespaces is not None, "namespaces are always served"
        selector = rule.get("labelSelector")
        found: list[dict[str, Any]] = []
        try:
            for ns in self.rest.list(namespaces, None):
                if label_selector_matches(rule.get("namespaceSelector"), meta(ns).get("labels")):
                    found += [o for o in self.rest.list(info, str(meta(ns).get("name")))
                              if label_selector_matches(selector if isinstance(selector, dict) else None,
                                                        meta(o).get("labels"))]
        except ValueError as exc:
            raise SyncError(str(exc)) from None
        return found

    # -- CompositeController -----------------------------------------------------------------------------------
    def _child_infos(self) -> list[tuple[ResInfo, str]]:
        out: list[tuple[ResInfo, str]] = []
        for rule in self.spec.children:
            info = self.resolve(rule.api_version, rule.resource)
            if info is None:
                raise SyncError(f"no informer for resource {rule.resource!r} in apiVersion {rule.api_version!r}")
            out.append((info, rule.update_method))
        return out

    def selector_of(self, parent: Mapping[str, Any]) -> dict[str, Any]:
        """The label selector the parent's children are claimed by (generated from its uid, or its spec's)."""
        if self.spec.generate_selector:
            return {"matchLabels": {"controller-uid": meta(parent).get("uid")}}
        selector = (parent.get("spec") or {}).get("selector") if isinstance(parent.get("spec"), dict) else None
        if not isinstance(selector, dict) or not (selector.get("matchLabels") or selector.get("matchExpressions")):
            raise SyncError(".spec.selector must have either matchLabels, matchExpressions, or both")
        return selector

    def _claim_children(self, parent: dict[str, Any]) -> ObjectMap:
        selector = self.selector_of(parent)
        uid = meta(parent).get("uid")
        namespace = meta(parent).get("namespace") if self.parent_info.namespaced else None
        adopt_checked: list[bool] = []

        def can_adopt() -> None:  # once per sync, the parent read afresh (RecheckDeletionTimestamp)
            if adopt_checked:
                return
            fresh = self.rest.get(self.parent_info, namespace, str(meta(parent).get("name")))
            if fresh is None or meta(fresh).get("uid") != uid or deleting(fresh):
                raise SyncError(f"can't adopt children: {meta(parent).get('name')} is gone or being deleted")
            adopt_checked.append(True)

        def matches(obj: Mapping[str, Any]) -> bool:
            try:
                return label_selector_matches(selector, meta(obj).get("labels"))
            except ValueError as exc:
                raise SyncError(str(exc)) from None

        observed: ObjectMap = {}
        for info, _method in self._child_infos():
            candidates = []
            for obj in self.rest.list(info, namespace):
                ref = controller_of(obj)
                if ref is None or ref.get("uid") == uid:
                    candidates.append(obj)
            group = observed.setdefault((info.api_version, info.kind), {})
            for obj in claim(self.rest, info, parent, candidates, matches, can_adopt):
                group[key_of(obj)] = obj
        return observed

    def _composite(self, parent: dict[str, Any], observed: ObjectMap, desired: ObjectMap, body: Mapping[str, Any],
                   resync: float) -> SyncOutcome:
        if body.get("finalized") is True:
            parent = self._remove_finalizer(parent)
        selector = self.selector_of(parent)
        for group in desired.values():
            for child in group.values():
                labels = meta(child).get("labels") or {}
                if self.spec.generate_selector and "controller-uid" not in labels:
                    labels = {**labels, "controller-uid": meta(parent).get("uid")}
                    child["metadata"]["labels"] = labels
                if not label_selector_matches(selector, labels):
                    raise SyncError(f"labels on desired child {child.get('kind')} {meta(child).get('name')} "
                                    "don't match parent selector")
        errors = self._manage(parent, observed, desired)
        self._update_status(parent, body.get("status"))
        if errors:
            raise errors[0]
        return SyncOutcome(resync_after=resync)

    def _update_status(self, parent: Mapping[str, Any], status: Any) -> None:
        """Replace the parent's whole status with the hook's, plus observedGeneration (404/409: dropped)."""
        wanted = copy.deepcopy(status) if isinstance(status, dict) else {}
        wanted["observedGeneration"] = meta(parent).get("generation") or 0

        def change(obj: dict[str, Any]) -> bool:
            if obj.get("status") == wanted:
                return False
            obj["status"] = wanted
            return True

        try:
            atomic_update(self.rest, self.parent_info, parent, change, status=True)
        except Exception as exc:
            if getattr(exc, "status", None) not in (404, 409):
                raise

    def desired_children(self, parent: Mapping[str, Any], items: Any, what: str) -> ObjectMap:
        """The children a hook answered (``what``: the answer's field), by kind, checked and defaulted."""
        if items is None:
            items = []
        if not isinstance(items, list):
            raise HookError(f"the hook answered {what} that is not a list")
        objects: list[dict[str, Any]] = []
        for item in items:
            if item is None:
                continue
            if not isinstance(item, dict) or not item.get("apiVersion") or not item.get("kind") \
                    or not meta(item).get("name"):
                raise HookError(f"the hook answered a {what} entry without apiVersion, kind and metadata.name: "
                                f"{item!r}"[:300])
            obj = copy.deepcopy(item)
            if not meta(obj).get("namespace") and meta(parent).get("namespace"):
                obj["metadata"]["namespace"] = meta(parent)["namespace"]
            objects.append(obj)
        return object_map(parent, objects, [])

    # -- DecoratorController -----------------------------------------------------------------------------------
    def _attachments(self, parent: Mapping[str, Any]) -> ObjectMap:
        uid = meta(parent).get("uid")
        namespace = meta(parent).get("namespace") or None
        observed: ObjectMap = {}
        for info, _method in self._child_infos():
            group = observed.setdefault((info.api_version, info.kind), {})
            for obj in self.rest.list(info, namespace):
                ref = controller_of(obj)
                if ref is None or ref.get("uid") != uid:
                    continue
                if (meta(obj).get("annotations") or {}).get(DECORATOR_ANNOTATION) != self.spec.name:
                    continue
                group[key_of(obj)] = obj
        return observed

    def _decorator(self, parent: dict[str, Any], observed: ObjectMap, desired: ObjectMap, body: Mapping[str, Any],
                   resync: float) -> SyncOutcome:
        if not self._update_decorated(parent, body):
            return SyncOutcome(resync_after=resync)
        for group in desired.values():
            for child in group.values():
                child["metadata"].setdefault("annotations", {})
                child["metadata"]["annotations"] = {**(child["metadata"]["annotations"] or {}),
                                                    DECORATOR_ANNOTATION: self.spec.name}
        errors = self._manage(parent, observed, desired)
        if errors:
            raise errors[0]
        return SyncOutcome(resync_after=resync)

    def _update_decorated(self, parent: dict[str, Any], body: Mapping[str, Any]) -> bool:
        """Labels, annotations and status from the hook; finalizer removal. False: stop the sync (404/409)."""
        updated = copy.deepcopy(parent)
        m = updated.setdefault("metadata", {})
        labels = dict(m.get("labels") or {})
        annotations = dict(m.get("annotations") or {})
        old_status = parent.get("status") if isinstance(parent.get("status"), dict) else None
        status = body.get("status") if isinstance(body.get("status"), dict) else old_status
        changed = _update_string_map(labels, body.get("labels"), "labels")
        changed = _update_string_map(annotations, body.get("annotations"), "annotations") or changed
        status_changed = old_status != status
        finalized = body.get("finalized") is True
        if not (changed or status_changed or (finalized and self.spec.finalizer in finalizers(parent))):
            return True
        m["labels"] = labels
        m["annotations"] = annotations
        updated["status"] = status
        namespace, name = key_of(parent)
        info = self.parent_info
        try:
            if status_changed and info.has_status:
                result = self.rest.call("PUT", info.path(namespace or None, name, "status"), updated)
                m["resourceVersion"] = meta(result).get("resourceVersion")
            if finalized:
                m["finalizers"] = [f for f in finalizers(updated) if f != self.spec.finalizer]
            self.rest.call("PUT", info.path(namespace or None, name), updated)
        except Exception as exc:
            if getattr(exc, "status", None) in (404, 409):
                return False
            raise
        return True


class _Backoff(Exception):
    """A hook answered 429: the sync stops where it is (``TooManyRequestError``)."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"retry after {seconds:g}s")
        self.seconds = seconds


def _update_string_map(dest: dict[str, Any], updates: Any, what: str) -> bool:
    """A decorator hook's labels or annotations: null deletes a key, a string sets it."""
    if updates is None:
        return False
    if not isinstance(updates, dict):
        raise HookError(f"the hook answered {what} that is not an object")
    changed = False
    for key in sorted(updates):
        value = updates[key]
        if value is None:
            if key in dest:
                del dest[key]
                changed = True
        elif not isinstance(value, str):
            raise HookError(f"the hook answered {what}[{key!r}] = {value!r}, not a string or null")
        elif dest.get(key) != value:
            dest[key] = value
            changed = True
    return changed


def _seconds(value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value)
    return 0.0

