"""Deletions in the simulated API server: options, preconditions, finalizers, graceful Pods,
collections.

Why a collaborator: a deletion commits through the session's state, records field ownership as a
write does (``Writes.track_fields``) and, for a collection, lists and matches as a list does
(``Reads``); it needs nothing else of either.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kamera_cli.apiserver import errors as E
from kamera_cli.apiserver.server.base import Request, object_ref, present
from kamera_cli.apiserver.server.reads import Reads
from kamera_cli.apiserver.server.state import SessionState
from kamera_cli.apiserver.server.write_rules import (
    Grace,
    check_delete_preconditions,
    delete_answer,
    graceful_delete,
    namespace_holds,
)
from kamera_cli.apiserver.server.writes import Writes, field_manager
from kamera_cli.model.objects import Manifest, ObjectRef

#: Namespaces the NamespaceLifecycle admission plugin never lets anyone delete.
_IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
_FOREGROUND = "foregroundDeletion"
_ORPHAN = "orphan"


def _cascade_requested(req: Request) -> bool:
    """``orphanDependents: false`` given explicitly (body or query): the deprecated way to ask for a cascade."""
    opts = req.parsed if isinstance(req.parsed, dict) else {}
    if "orphanDependents" in opts:
        return opts["orphanDependents"] is False
    return req.query.get("orphanDependents", "").lower() == "false"


def _deleted(req: Request, remaining: Manifest | None, body: Any) -> bool:
    """Whether the DELETE removed the object (for a dry run: would have)."""
    if not req.dry_run:
        return remaining is None
    meta = (body.get("metadata") or {}) if isinstance(body, dict) else {}
    return not (meta.get("deletionTimestamp") and (meta.get("finalizers") or meta.get("deletionGracePeriodSeconds")))


class Deletes:
    """DELETE and deletecollection over a session's state."""

    __slots__ = ("reads", "state", "writes")

    def __init__(self, state: SessionState, reads: Reads, writes: Writes) -> None:
        self.state = state
        self.reads = reads
        self.writes = writes

    def _delete_options(self, req: Request) -> tuple[str, dict[str, Any], int | None]:
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

    def do_delete(self, req: Request) -> tuple[int, Any, None]:
        if req.sub:
            raise E.method_not_allowed()
        info = req.info
        policy, pre, grace = self._delete_options(req)
        ref = object_ref(info, req.namespace, req.name)
        live = self.state.snapshot.get(ref)
        if live is None:
            raise E.not_found(info.plural, info.group, req.name)
        if info.group == "" and info.kind == "Namespace" and req.name in _IMMORTAL_NAMESPACES:
            raise E.forbidden("namespaces", "", req.name, "this namespace may not be deleted")
        status, body, _ = self._delete(req, ref, live, policy, pre, grace)
        if _cascade_requested(req) and not _deleted(req, self.state.snapshot.get(ref), body):
            status = 202  # the DELETE handler: not gone yet, and the caller asked orphanDependents=false
        return status, body, None

    def _delete(self, req: Request, ref: ObjectRef, live: Manifest, policy: str, pre: Mapping[str, Any],
                grace_seconds: int | None = None) -> tuple[int, Any, None]:
        """``Store.Delete``: preconditions, graceful deletion (Pods), finalizers, then removal."""
        info = req.info
        meta = live["metadata"]
        check_delete_preconditions(info, live, pre.get("uid"), pre.get("resourceVersion"))
        state = self.state
        graceful = state.registry.graceful_deletion
        grace = graceful_delete(info, live, grace_seconds, int(state.now())) if graceful else None
        if grace is not None and grace.pending:
            return 200, present(info, live), None  # Store.Delete: finalizeDelete of the unchanged object
        finalizers = list(meta.get("finalizers") or [])
        if policy == "Foreground" and _FOREGROUND not in finalizers and not meta.get("deletionTimestamp"):
            finalizers.append(_FOREGROUND)
        elif policy == "Orphan" and _ORPHAN not in finalizers and not meta.get("deletionTimestamp"):
            finalizers.append(_ORPHAN)
        holds = namespace_holds(info, live)
        if grace is not None and (grace.period > 0 or finalizers):
            return self._mark_deleting(req, ref, live, finalizers, grace)
        if not finalizers and not holds:
            final = dict(live)
            if grace is not None:  # updateForGracefulDeletionAndFinalizers stored the deletion fields first
                final["metadata"] = {**meta, "deletionTimestamp": grace.timestamp,
                                     "deletionGracePeriodSeconds": grace.period}
            if req.dry_run:
                return 200, delete_answer(info, present(info, final)), None
            self.state.commit(req, ref, live, None)
            final["metadata"] = {**final["metadata"], "resourceVersion": str(self.state.snapshot.resource_version)}
            return 200, delete_answer(info, present(info, final)), None
        if meta.get("deletionTimestamp"):
            return 200, present(info, live), None  # already being deleted: nothing changes
        return self._mark_deleting(req, ref, live, finalizers, None)

    def _mark_deleting(self, req: Request, ref: ObjectRef, live: Manifest, finalizers: list[str], grace: Grace | None
                       ) -> tuple[int, Any, None]:
        """Store the deletion fields: ``BeforeDelete``'s for a graceful deletion, else ``markAsDeleting``'s
        (now, grace 0).  The object stays, answered as itself."""
        info = req.info
        new = {**live, "metadata": dict(live["metadata"])}
        nmeta = new["metadata"]
        first = grace.first if grace is not None else not nmeta.get("deletionTimestamp")
        nmeta["deletionTimestamp"] = grace.timestamp if grace is not None else self.state.timestamp()
        nmeta["deletionGracePeriodSeconds"] = grace.period if grace is not None else 0
        if finalizers:
            nmeta["finalizers"] = finalizers
        if info.tracks_generation and first:
            nmeta["generation"] = int(nmeta.get("generation") or 0) + 1
        if info.group == "" and info.kind == "Namespace":
            new["status"] = {**(live.get("status") or {}), "phase": "Terminating"}
        self.writes.track_fields(info, live, new, field_manager(req), "")
        if req.dry_run:
            return 200, present(info, new), None
        stored = self.state.commit(req, ref, live, new)
        assert stored is not None
        return 200, present(info, stored), None

    def do_deletecollection(self, req: Request) -> tuple[int, Any, None]:
        info = req.info
        policy, pre, grace = self._delete_options(req)
        match = self.reads.matchers(req)
        objs, _ = self.reads.list_objects(info, req.namespace, self.state.snapshot)
        deleted = []
        for obj in objs:
            if not match(obj):
                continue
            self._delete(req, ObjectRef.of(obj), obj, policy, pre, grace)
            deleted.append(present(info, obj))  # Store.DeleteCollection answers the list it deleted
        return 200, {"kind": info.list_kind, "apiVersion": info.api_version,
                     "metadata": {"resourceVersion": str(self.state.snapshot.resource_version)}, "items": deleted}, None
