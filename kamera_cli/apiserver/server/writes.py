"""Writes of the simulated API server: create, update, patch and apply, through validation, defaulting,
managedFields and the session's commit.

Why a collaborator: the writes need the session's state and nothing of the router or the reads;
the deletions use two of their helpers (``track_fields``, ``field_manager``) and nothing else.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from kamera_cli.apiserver import errors as E
from kamera_cli.apiserver.defaulting import metadata as S
from kamera_cli.apiserver.defaulting.allocation import allocate_cluster_ip, keep_allocated, label_namespace
from kamera_cli.apiserver.defaulting.kinds import (
    apply_builtin_defaults,
    default_apply_keys,
    prepare_for_create,
    share_template,
)
from kamera_cli.apiserver.registry.kinds import ResourceInfo
from kamera_cli.apiserver.server import scale as scale_view
from kamera_cli.apiserver.server.base import PATCH_TYPES, Request, object_ref, patching_module, present
from kamera_cli.apiserver.server.binding import SUCCESS as BINDING_SUCCESS
from kamera_cli.apiserver.server.binding import bound_pod
from kamera_cli.apiserver.server.state import SessionState
from kamera_cli.apiserver.server.write_rules import (
    CREATE_ON_UPDATE,
    SERVER_KEPT,
    check_update_version,
    namespace_holds,
    refuse_resource_version_on_create,
    status_update,
)
from kamera_cli.apiserver.validation.crd import apply_defaults, prune
from kamera_cli.apiserver.validation.crd import validate as validate_cr
from kamera_cli.apiserver.validation.field_validation import dropped_fields, refuse_or_warn
from kamera_cli.apiserver.validation.kinds import base64_offset, validate_kind
from kamera_cli.apiserver.validation.schema import (
    canonical_quantities,
    clean_base,
    metadata_as_checked,
    prune_builtin,
    prune_metadata,
    remember_clean,
    validate_builtin,
    validate_generate_name,
    validate_metadata,
    validate_name,
)
from kamera_cli.apiserver.validation.status import validate_status
from kamera_cli.apiserver.validation.update import validate_update
from kamera_cli.model.objects import Manifest, ObjectRef


def field_manager(req: Request) -> str:
    """The request's field manager: ``fieldManager``, else the user agent's product, else "unknown"."""
    manager = req.query.get("fieldManager")
    if manager:
        return manager
    agent = req.headers.get("user-agent", "")
    return agent.split("/", 1)[0] if agent else "unknown"


def _ownership(managed: Any) -> Any:
    """managedFields without their timestamps: what an ownership change is compared on."""
    if not isinstance(managed, list):
        return managed
    return [{k: v for k, v in e.items() if k != "time"} if isinstance(e, dict) else e for e in managed]


def _normalise(info: ResourceInfo, obj: dict[str, Any]) -> None:
    """Secrets: ``type`` defaults to Opaque; write-only ``stringData`` is merged into ``data`` (base64)."""
    if info.custom or info.group or info.kind != "Secret":
        return
    if not obj.get("type"):
        obj["type"] = "Opaque"
    for value in (obj.get("data") or {}).values() if isinstance(obj.get("data"), dict) else ():
        offset = base64_offset(value) if isinstance(value, str) else None
        if offset is not None:  # []byte fields are base64 in JSON: the decoder refuses the body
            raise E.bad_request(f'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at '
                                f"input byte {offset}")
    if "stringData" not in obj:
        return
    string_data = obj.pop("stringData")
    if isinstance(string_data, dict):
        data = dict(obj.get("data") or {})
        for key, value in string_data.items():
            if value is None:
                value = ""  # a map[string]string decodes a null value as ""
            if isinstance(value, str):
                data[key] = base64.b64encode(value.encode()).decode()
        obj["data"] = data


class Writes:
    """The write verbs over a session's state (deletions are ``server/deletes.py``'s)."""

    __slots__ = ("state",)

    def __init__(self, state: SessionState) -> None:
        self.state = state

    def _write_scale(self, req: Request, ref: ObjectRef, live: Manifest, scale: Any) -> tuple[int, Any, None]:
        """A Scale write: its RV (when given) is a precondition; only the replica count reaches the parent."""
        info = req.info
        if not isinstance(scale, dict) or not isinstance(scale.get("spec"), dict):
            raise E.bad_request("the body of a scale request must be an autoscaling/v1 Scale")
        replicas = scale["spec"].get("replicas")
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            raise E.invalid("Scale", "autoscaling", req.name, [E.cause(
                "FieldValueInvalid", "spec.replicas", f"Invalid value: {json.dumps(replicas)}: must be greater than "
                                                      "or equal to 0")])
        rv = (scale.get("metadata") or {}).get("resourceVersion")
        if rv and rv != live["metadata"].get("resourceVersion"):
            raise E.stale(info.plural, info.group, req.name)
        new = scale_view.with_replicas(info, live, replicas)
        new["metadata"] = dict(live["metadata"])
        status, out, _ = self._update(req, ref, live, new, field_manager(req), managed=None)
        return status, scale_view.scale_of(info, self.state.snapshot.get(ref) or out), None

    def track_fields(self, info: ResourceInfo, before: Manifest | None, after: dict[str, Any], manager: str,
                     sub: str) -> None:
        """Record ``manager``'s Update of ``before`` into ``after`` in ``after``'s managedFields."""
        patching = patching_module()
        if patching is None:
            return  # managedFields arrive with the patching module
        api_version = str(after.get("apiVersion", ""))
        # The kind's schema, as the apiserver's Update manager compares typed objects: a keyed list
        # (containers by name, ports by port and protocol) is owned item by item and field by field,
        # not as one atomic value, so another manager's apply meets the creator's ownership of one
        # container's image, and not of the whole list.
        lookup = self.state.registry.field_lookup(info)
        fields = patching.update_managed_fields(before, after, manager=manager,
                                                operation="Update", now=self.state.timestamp(),
                                                api_version=api_version, subresource=sub, fields=lookup,
                                                zero=self.state.registry.zero_fields(info))
        if fields:
            after["metadata"]["managedFields"] = fields
        else:
            after["metadata"].pop("managedFields", None)

    def _check_kind(self, info: ResourceInfo, obj: Any) -> dict[str, Any]:
        if not isinstance(obj, dict):
            raise E.bad_request(f"the body of the request must be a JSON object (a {info.kind})")
        kind, api_version = obj.get("kind"), obj.get("apiVersion")
        if kind not in (None, "", info.kind) or api_version not in (None, "", info.api_version):
            raise E.bad_request(f"the API version in the data ({api_version}) does not match the expected API "
                                f"version ({info.api_version})" if kind in (None, "", info.kind)
                                else f"{kind} in version \"{info.version}\" cannot be handled as a {info.kind}: "
                                     f"the kind in the data does not match the expected kind")
        # Copy-on-write: the server only ever replaces top-level keys and metadata entries of the object
        # it builds, so a shallow copy of those two levels is enough; nested values are shared and, like
        # every stored object, never mutated.
        out: dict[str, Any] = {"apiVersion": info.api_version, "kind": info.kind}
        out.update(obj)
        out["apiVersion"], out["kind"] = info.api_version, info.kind
        meta = out.get("metadata")
        if meta is None:
            out["metadata"] = {}
        elif not isinstance(meta, dict):
            raise E.bad_request("metadata must be an object")
        else:
            out["metadata"] = dict(meta)
        return out

    def _check_namespace(self, req: Request, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        if req.info.namespaced:
            body_ns = meta.get("namespace")
            if body_ns and body_ns != req.namespace:
                raise E.bad_request("the namespace of the provided object does not match the namespace sent on the "
                                    "request")
            meta["namespace"] = req.namespace
        else:
            meta.pop("namespace", None)

    def _namespace_admission(self, req: Request, name: str) -> None:
        if not req.info.namespaced:
            return
        ns = self.state.snapshot.get(ObjectRef("v1", "Namespace", "", req.namespace))
        if ns is None:
            raise E.not_found("namespaces", "", req.namespace)
        if ns.get("metadata", {}).get("deletionTimestamp") or (ns.get("status") or {}).get("phase") == "Terminating":
            raise E.forbidden(req.info.plural, req.info.group, name, f"unable to create new content in namespace "
                                                                     f"{req.namespace} because it is being terminated")

    def _validate(self, info: ResourceInfo, obj: dict[str, Any], name: str, live: Manifest | None = None,
                  main: bool = True) -> dict[str, Any]:
        """Prune and default (custom resources), then validate; returns the object to store.

        ``live``: the stored object being replaced; subtrees shared with it are not walked again when
        it is known to have passed this very pruning and validation whole.
        """
        prefix = str(obj["metadata"].get("generateName") or "") if live is None else ""  # only create checks it
        builtin = not (info.custom and info.schema is not None) and info.definition is not None
        base = clean_base(self.state.registry.definitions, str(info.definition), live) if builtin else None
        causes = validate_generate_name(info.group, info.kind, prefix)
        if base is None or not metadata_as_checked(name, obj["metadata"], base["metadata"]):
            causes += validate_name(info.group, info.kind, name) + validate_metadata(obj["metadata"])
        if info.custom and info.schema is not None:
            sent = obj
            obj = prune(obj, info.schema, root=True)
            obj["metadata"] = prune_metadata(self.state.registry.definitions, sent["metadata"])
            if self.state.field_mode != "Ignore":
                refuse_or_warn(self.state.field_mode, info.kind, info.version,
                               dropped_fields(self.state.registry.definitions, None, sent, obj), self.state.warnings)
            obj = apply_defaults(obj, info.schema)
            causes += validate_cr(obj, info.schema, live)
        elif info.definition is not None:
            definitions = self.state.registry.definitions
            pruned = prune_builtin(definitions, info.definition, obj, base)
            if pruned is not obj:
                refuse_or_warn(self.state.field_mode, info.kind, info.version,
                               dropped_fields(definitions, info.definition, obj, pruned), self.state.warnings)
            obj = pruned
            obj = canonical_quantities(definitions, info, obj, base)
            apply_builtin_defaults(info.group, info.kind, obj)
            if base is not None:
                share_template(obj, base)
            if live is None:
                prepare_for_create(info.group, info.kind, obj)
            typed = validate_builtin(definitions, info.definition, obj, base)
            if typed:
                causes += typed
            elif live is not None and not main:  # a status strategy checks the status, not the spec
                causes += validate_status(info.group, info.kind, live, obj)
            else:  # the kind's strategy: on update (ValidateXUpdate) its update rules come first
                if live is not None:
                    causes += validate_update(info.group, info.kind, live, obj)
                causes += validate_kind(info.group, info.kind, obj)
            if not causes:
                remember_clean(definitions, info.definition, obj)
        if causes:
            raise E.invalid(info.kind, info.group, name, causes)
        return obj

    def do_create(self, req: Request) -> tuple[int, Any, None]:
        info = req.info
        if req.sub == "binding" and info.kind == "Pod" and not info.group:
            return self._bind(req)
        if req.sub:
            raise E.method_not_allowed()
        obj = self._check_kind(info, req.parsed)
        return self._create(req, obj, field_manager(req), managed=None)

    def _bind(self, req: Request) -> tuple[int, Any, None]:
        ref = object_ref(req.info, req.namespace, req.name)
        before = self.state.snapshot.get(ref)
        if before is None:
            raise E.not_found(req.info.plural, req.info.group, req.name)
        after = bound_pod(before, req.parsed, req.name)
        self.state.commit(req, ref, before, after)
        return 201, dict(BINDING_SUCCESS), None

    def _create(self, req: Request, obj: dict[str, Any], manager: str, managed: list[Any] | None,
                via_update: bool = False) -> tuple[int, Any, None]:
        """Create ``obj``: a POST, an apply (``managed``: its managedFields) or a PUT to a missing object of a
        kind that allows it (``via_update``: ``Store.Update``'s create path, which never refuses a sent RV)."""
        info = req.info
        self._check_namespace(req, obj)
        meta = obj["metadata"]
        name = str(meta.get("name") or "")
        if req.name and name and name != req.name:
            raise E.bad_request(f"the name of the object ({name}) does not match the name on the URL ({req.name})")
        name = name or req.name
        self._namespace_admission(req, name)
        ns = req.namespace if info.namespaced else ""
        counters: dict[str, int] = {}
        if not name:
            prefix = str(meta.get("generateName") or "")
            if not prefix:
                raise E.invalid(info.kind, info.group, "", [E.cause(
                    "FieldValueRequired", "metadata.name", "Required value: name or generateName is required")])
            key = S.generate_name_key(info.group, info.kind, ns, prefix)
            attempt = self.state.snapshot.counter(key)
            while True:
                candidate = prefix[:58] + S.name_suffix(info.group, info.kind, ns, prefix, attempt)
                attempt += 1
                if self.state.snapshot.get(object_ref(info, ns, candidate)) is None:
                    break
            counters[key] = attempt
            name = candidate
        meta["name"] = name
        ref = object_ref(info, ns, name)
        existing = self.state.snapshot.get(ref)
        sent_version = meta.get("resourceVersion")
        inc_key = S.incarnation_key(ref)
        incarnation = self.state.snapshot.counter(inc_key) + 1
        counters[inc_key] = incarnation
        for key in ("resourceVersion", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds",
                    "managedFields", "generation"):
            meta.pop(key, None)
        meta["uid"] = S.make_uid(ref.api_version, ref.kind, ns, name, incarnation)
        meta["creationTimestamp"] = self.state.timestamp()
        if info.tracks_generation:
            meta["generation"] = 1
        if info.has_status:
            obj.pop("status", None)
        if not info.group and info.kind == "Service":
            allocate_cluster_ip(self.state.snapshot, obj)
        _normalise(info, obj)
        obj = self._validate(info, obj, name)
        if managed is None and not via_update and not req.dry_run:  # a POST (apply creates through Store.Update)
            refuse_resource_version_on_create({"resourceVersion": sent_version})
        if existing is not None:  # the store answers after validation (BeforeCreate) and the RV check
            deleting = bool((existing.get("metadata") or {}).get("deletionTimestamp"))
            raise E.already_exists(info.plural, info.group, name, deleting=deleting)
        if managed is not None:
            obj["metadata"]["managedFields"] = managed
        else:
            self.track_fields(info, None, obj, manager, "")
        if obj.get("apiVersion") != ref.api_version:
            obj["apiVersion"] = ref.api_version
        if req.dry_run:
            return 201, present(info, obj), None
        stored = self.state.commit(req, ref, None, obj, counters)
        assert stored is not None
        return 201, present(info, stored), None

    def do_update(self, req: Request) -> tuple[int, Any, None]:
        info = req.info
        if req.sub == "scale":
            ref = object_ref(info, req.namespace, req.name)
            live = self.state.snapshot.get(ref)
            if live is None:
                raise E.not_found(info.plural, info.group, req.name)
            return self._write_scale(req, ref, live, req.parsed)
        obj = self._check_kind(info, req.parsed)
        meta = obj["metadata"]
        if meta.get("name") and meta["name"] != req.name:
            raise E.bad_request(f"the name of the object ({meta['name']}) does not match the name on the URL "
                                f"({req.name})")
        self._check_namespace(req, obj)
        ref = object_ref(info, req.namespace, req.name)
        live = self.state.snapshot.get(ref)
        if live is None:
            if req.sub or info.custom or (info.group, info.kind) not in CREATE_ON_UPDATE:
                raise E.not_found(info.plural, info.group, req.name)
            return self._create(req, obj, field_manager(req), managed=None, via_update=True)  # Store.Update creates
        check_update_version(info, req.name, meta, live)
        return self._update(req, ref, live, obj, field_manager(req), managed=None)

    def _update(self, req: Request, ref: ObjectRef, live: Manifest, new: dict[str, Any], manager: str,
                managed: list[Any] | None) -> tuple[int, Any, None]:
        info = req.info
        live_meta: Mapping[str, Any] = live["metadata"]
        if req.sub == "status":
            merged = status_update(info, live, new)
            if managed is not None:
                merged["metadata"]["managedFields"] = managed
        else:
            merged = new
            if info.has_status:
                if "status" in live:
                    merged["status"] = live["status"]
                else:
                    merged.pop("status", None)
            meta = merged["metadata"]
            for key in SERVER_KEPT:
                if key in live_meta:
                    meta[key] = live_meta[key]
                else:
                    meta.pop(key, None)
            if managed is not None:
                meta["managedFields"] = managed
            else:
                meta.pop("managedFields", None)
                if "managedFields" in live_meta:
                    meta["managedFields"] = live_meta["managedFields"]
            if not info.group and info.kind == "Namespace":
                label_namespace(merged)
            elif not info.group and info.kind == "Service":
                keep_allocated(live, merged)
        deleting = bool(live_meta.get("deletionTimestamp"))
        if deleting:
            added = [f for f in merged["metadata"].get("finalizers") or [] if f not in (live_meta.get("finalizers")
                                                                                       or [])]
            if added:
                listed = ", ".join(f'"{f}"' for f in sorted(set(added)))
                raise E.invalid(info.kind, info.group, req.name, [E.cause(
                    "FieldValueForbidden", "metadata.finalizers",
                    f"Forbidden: no new finalizers can be added if the object is being deleted, found new "
                    f"finalizers []string{{{listed}}}")])
        _normalise(info, merged)
        merged = self._validate(info, merged, req.name, live, main=req.sub != "status")
        if info.tracks_generation and S.spec_changed(live, merged, status_counts=info.custom and not info.has_status):
            merged["metadata"]["generation"] = int(live_meta.get("generation") or 0) + 1
        if S.same_ignoring_bookkeeping(live, merged) and (
                managed is None or _ownership(managed) == _ownership(live_meta.get("managedFields"))):
            return 200, present(info, live), None  # a no-op: no new RV, no event (an apply that only
            # moves field ownership is written, as in the real server; timestamps alone are not)
        if managed is None:
            self.track_fields(info, live, merged, manager, req.sub)
        if req.dry_run:
            merged["metadata"]["resourceVersion"] = live_meta.get("resourceVersion", "")
            return 200, present(info, merged), None
        if deleting and not merged["metadata"].get("finalizers") and not namespace_holds(info, merged):
            self.state.commit(req, ref, live, None)
            final = dict(merged)
            final["metadata"] = {**merged["metadata"], "resourceVersion": str(self.state.snapshot.resource_version)}
            return 200, present(info, final), None
        stored = self.state.commit(req, ref, live, merged)
        assert stored is not None
        return 200, present(info, stored), None

    def do_patch(self, req: Request) -> tuple[int, Any, None]:
        info = req.info
        ctype = req.headers.get("content-type", "").split(";")[0].strip().lower()
        kind = PATCH_TYPES.get(ctype)
        if kind is None:
            raise E.error(415, "UnsupportedMediaType", f"the body of the request was in an unknown format - "
                                                       f"accepted media types include: {', '.join(PATCH_TYPES)}")
        if kind == "strategic" and info.custom:
            raise E.error(415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted "
                                                       "media types include: application/json-patch+json, "
                                                       "application/merge-patch+json, application/apply-patch+yaml")
        force = req.query.get("force")
        if force is not None and kind != "apply":
            raise E.error(422, "Invalid", 'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be '
                                          "specified for non-apply patch", group="meta.k8s.io", kind="PatchOptions",
                          causes=[E.cause("FieldValueForbidden", "force",
                                          "Forbidden: may not be specified for non-apply patch")])
        if req.body is None or req.parsed is None:
            raise E.bad_request("the body of the request is empty")
        patching = patching_module()
        if patching is None:
            raise E.internal("patching is not yet available in this build")
        ref = object_ref(info, req.namespace, req.name)
        live = self.state.snapshot.get(ref)
        manager = field_manager(req)
        try:
            if kind == "apply":
                return self._apply(req, ref, live, manager, force or "", patching)
            if live is None:
                raise E.not_found(info.plural, info.group, req.name)
            view = scale_view.scale_of(info, live) if req.sub == "scale" else present(info, live)
            if kind == "json":
                patched = patching.json_patch(dict(view), req.parsed)
            elif kind == "merge":
                patched = patching.merge_patch(dict(view), req.parsed)
            else:
                patched = patching.strategic_merge_patch(dict(view), req.parsed, self.state.registry.field_lookup(info))
        except patching.PatchError as exc:
            raise E.error(exc.status, exc.reason, exc.message, name=req.name, group=info.group, kind=info.plural,
                          causes=exc.causes) from None
        if req.sub == "scale":
            return self._write_scale(req, ref, live, patched)
        new = self._check_kind(info, patched)
        meta = new["metadata"]
        if meta.get("name") != req.name or (info.namespaced and meta.get("namespace") != req.namespace):
            raise E.bad_request("metadata.name and metadata.namespace may not be changed by a patch")
        check_update_version(info, req.name, meta, live)
        return self._update(req, ref, live, new, manager, managed=None)

    def _apply(self, req: Request, ref: ObjectRef, live: Manifest | None, manager: str, force: str,
               patching: Any) -> tuple[int, Any, None]:
        info = req.info
        if not req.query.get("fieldManager"):
            raise E.error(422, "Invalid", 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is '
                                          "required for apply patch", group="meta.k8s.io", kind="PatchOptions",
                          causes=[E.cause("FieldValueRequired", "fieldManager",
                                          "Required value: is required for apply patch")])
        applied = req.parsed
        if not isinstance(applied, dict) or not applied.get("apiVersion") or not applied.get("kind"):
            raise E.bad_request("apply patches must carry apiVersion and kind")
        # ``applied`` is the body parsed as an apply body, then _check_kind's and the key defaults' work,
        # which depend on the resource type only: a body applied before without error is not redone.
        memo_key = patching.applied_memo_key(req.body, info.api_version, info.kind, info.custom)
        remembered = patching.remembered_configuration(memo_key)
        applied = self._check_kind(info, applied) if remembered is None else remembered
        name = applied["metadata"].get("name")
        if name and name != req.name:
            raise E.bad_request(f"the name of the object ({name}) does not match the name on the URL ({req.name})")
        if info.namespaced:
            body_ns = applied["metadata"].get("namespace")
            if body_ns and body_ns != req.namespace:
                raise E.bad_request("the namespace of the provided object does not match the namespace sent on the "
                                    "request")
        fields = self.state.registry.field_lookup(info)
        if not info.custom and remembered is None:
            applied = default_apply_keys(info.group, info.kind, applied)
        result = patching.server_side_apply(None if live is None else dict(present(info, live)), applied,
                                            manager=manager, force=force.lower() in ("true", "1"), fields=fields,
                                            now=self.state.timestamp(), api_version=info.api_version, memo_key=memo_key)
        if remembered is None:
            patching.remember_configuration(memo_key, applied)
        new = self._check_kind(info, result)
        managed = new["metadata"].get("managedFields")
        if live is None:
            if req.sub:
                raise E.not_found(info.plural, info.group, req.name)
            new["metadata"]["name"] = req.name
            return self._create(req, new, manager, managed=managed or [])
        return self._update(req, ref, live, new, manager, managed=managed or [])
