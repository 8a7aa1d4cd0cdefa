"""Deletions in the simulated API server: options, preconditions, finalizers, graceful Pods,
collections."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kamera_cli.apiserver import errors as E
from kamera_cli.apiserver.server.base import (
    _FOREGROUND,
    _IMMORTAL_NAMESPACES,
    _ORPHAN,
    _cascade_requested,
    _deleted,
    _namespace_holds,
    _Req,
)
from kamera_cli.apiserver.server.write_rules import (
    Grace,
    check_delete_preconditions,
    delete_answer,
    graceful_delete,
)
from kamera_cli.apiserver.server.writes import WriteMixin
from kamera_cli.model.objects import Manifest, ObjectRef


class DeleteMixin(WriteMixin):
    """DELETE and deletecollection."""


    # ---------------------------------------------------------------- deletion
    def _delete_options(self, req: _Req) -> tuple[str, dict[str, Any], int | None]:
        opts = req.parsed if isinstance(req.parsed, dict) else {}
        if req.parsed is not None and not isinstance(req.parsed, dict):
            raise E.bad_request("the request body must be a DeleteOptions object")
        policy = opts.get("propagationPolicy") or req.query.get("propagationPolicy") or ""
        orphan = opts.get("orphanDependents")
        if orphan is None and "orphanDependents" in req.query:
            orphan = req.query["orphanDependents"].lower() == "true"
        if orphan is not None and policy:
            raise E.error(422, "Invalid", 'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: '
                                          f'"{policy}": orphanDependents and deletionPropagation cannot be both set')
        if orphan is not None:
            policy = "Orphan" if orphan else "Background"
        if policy and policy not in ("Background", "Foreground", "Orphan"):
            raise E.error(422, "Invalid", f'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported '
                                          f'value: "{policy}": supported values: "Foreground", "Background", "Orphan"')
        dry = opts.get("dryRun")
        if dry is not None and dry not in ([], ["All"]):
            raise E.bad_request(f"dryRun: Unsupported value: {json.dumps(dry)}: supported values: \"All\"")
        if dry == ["All"]:
            req.query["dryRun"] = "All"
        grace = opts.get("gracePeriodSeconds", req.query.get("gracePeriodSeconds"))
        if grace is not None and not isinstance(grace, int):
            try:
                grace = int(str(grace))
            except ValueError:
                raise E.bad_request(f'gracePeriodSeconds: invalid value "{grace}"') from None
        return policy or "Background", opts.get("preconditions") or {}, grace

    def _do_delete(self, req: _Req) -> tuple[int, Any, None]:
        if req.sub:
            raise E.method_not_allowed()
        info = req.info
        policy, pre, grace = self._delete_options(req)
        ref = self._ref(info, req.namespace, req.name)
        live = self.snapshot.get(ref)
        if live is None:
            raise E.not_found(info.plural, info.group, req.name)
        if info.group == "" and info.kind == "Namespace" and req.name in _IMMORTAL_NAMESPACES:
            raise E.forbidden("namespaces", "", req.name, "this namespace may not be deleted")
        status, body, _ = self._delete(req, ref, live, policy, pre, grace)
        if _cascade_requested(req) and not _deleted(req, self.snapshot.get(ref), body):
            status = 202  # the DELETE handler: not gone yet, and the caller asked orphanDependents=false
        return status, body, None

    def _delete(self, req: _Req, ref: ObjectRef, live: Manifest, policy: str, pre: Mapping[str, Any],
                grace_seconds: int | None = None) -> tuple[int, Any, None]:
        """``Store.Delete``: preconditions, graceful deletion (Pods), finalizers, then removal."""
        info = req.info
        meta = live["metadata"]
        check_delete_preconditions(info, live, pre.get("uid"), pre.get("resourceVersion"))
        grace = graceful_delete(info, live, grace_seconds, int(self.now())) if self.registry.graceful_deletion else None
        if grace is not None and grace.pending:
            return 200, self._present(info, live), None  # Store.Delete: finalizeDelete of the unchanged object
        finalizers = list(meta.get("finalizers") or [])
        if policy == "Foreground" and _FOREGROUND not in finalizers and not meta.get("deletionTimestamp"):
            finalizers.append(_FOREGROUND)
        elif policy == "Orphan" and _ORPHAN not in finalizers and not meta.get("deletionTimestamp"):
            finalizers.append(_ORPHAN)
        holds = _namespace_holds(info, live)
        if grace is not None and (grace.period > 0 or finalizers):
            return self._mark_deleting(req, ref, live, finalizers, grace)
        if not finalizers and not holds:
            final = dict(live)
            if grace is not None:  # updateForGracefulDeletionAndFinalizers stored the deletion fields first
                final["metadata"] = {**meta, "deletionTimestamp": grace.timestamp,
                                     "deletionGracePeriodSeconds": grace.period}
            if req.dry_run:
                return 200, delete_answer(info, self._present(info, final)), None
            self._commit(req, ref, live, None)
            final["metadata"] = {**final["metadata"], "resourceVersion": str(self.snapshot.resource_version)}
            return 200, delete_answer(info, self._present(info, final)), None
        if meta.get("deletionTimestamp"):
            return 200, self._present(info, live), None  # already being deleted: nothing changes
        return self._mark_deleting(req, ref, live, finalizers, None)

    def _mark_deleting(self, req: _Req, ref: ObjectRef, live: Manifest, finalizers: list[str], grace: Grace | None
                       ) -> tuple[int, Any, None]:
        """Store the deletion fields: ``BeforeDelete``'s for a graceful deletion, else ``markAsDeleting``'s
        (now, grace 0).  The object stays, answered as itself."""
        info = req.info
        new = {**live, "metadata": dict(live["metadata"])}
        nmeta = new["metadata"]
        first = grace.first if grace is not None else not nmeta.get("deletionTimestamp")
        nmeta["deletionTimestamp"] = grace.timestamp if grace is not None else self._now()
        nmeta["deletionGracePeriodSeconds"] = grace.period if grace is not None else 0
        if finalizers:
            nmeta["finalizers"] = finalizers
        if info.tracks_generation and first:
            nmeta["generation"] = int(nmeta.get("generation") or 0) + 1
        if info.group == "" and info.kind == "Namespace":
            new["status"] = {**(live.get("status") or {}), "phase": "Terminating"}
        self._managed(info, live, new, self._manager(req), "")
        if req.dry_run:
            return 200, self._present(info, new), None
        stored = self._commit(req, ref, live, new)
        assert stored is not None
        return 200, self._present(info, stored), None

    def _do_deletecollection(self, req: _Req) -> tuple[int, Any, None]:
        info = req.info
        policy, pre, grace = self._delete_options(req)
        match = self._matchers(req)
        objs, _ = self._list_objects(info, req.namespace, self.snapshot)
        deleted = []
        for obj in objs:
            if not match(obj):
                continue
            self._delete(req, ObjectRef.of(obj), obj, policy, pre, grace)
            deleted.append(self._present(info, obj))  # Store.DeleteCollection answers the list it deleted
        return 200, {"kind": info.list_kind, "apiVersion": info.api_version,
                     "metadata": {"resourceVersion": str(self.snapshot.resource_version)}, "items": deleted}, None
