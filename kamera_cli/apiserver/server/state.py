"""The state of one API server session, and the one place it changes: the commit of a write.

Why a collaborator of its own: the reads, the writes and the deletions each get this object and
nothing else of the session (not the router, not each other's helpers), so what one of them may
touch is what this class offers.  ``ApiServer`` exposes its public fields (``snapshot``,
``journal``, ``before_write``, ``registry``, ``now``) unchanged.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from kamera_cli.apiserver.defaulting.metadata import format_time
from kamera_cli.apiserver.errors import ApiError
from kamera_cli.apiserver.registry.kinds import Registry
from kamera_cli.apiserver.server.base import Access, Propagate, Request
from kamera_cli.apiserver.server.encoding import share_unchanged
from kamera_cli.apiserver.storage.snapshot import Snapshot
from kamera_cli.model.objects import KindRef, Manifest, ObjectRef

#: Snapshots kept by resourceVersion for continue tokens and exact-version lists.
HISTORY = 64


class SessionState:
    """A session's snapshot, journal, write hook, stale views and per-request answer details."""

    __slots__ = ("before_write", "field_mode", "history", "journal", "now", "registry", "snapshot", "stale",
                 "warnings", "written")

    def __init__(self, registry: Registry, snapshot: Snapshot, now: Callable[[], int]) -> None:
        self.registry = registry
        self.snapshot = snapshot
        self.now = now
        self.journal: list[Access] = []
        self.before_write: Callable[[Access], None] | None = None
        #: stale views by (apiVersion, kind) and the objects this session wrote since they were set
        self.stale: dict[tuple[str, str], Snapshot] = {}
        self.written: set[ObjectRef] = set()
        self.history: OrderedDict[int, Snapshot] = OrderedDict()
        self.history[snapshot.resource_version] = snapshot
        self.warnings: list[str] = []  # the request in flight's Warning header values
        self.field_mode = "Warn"  # its fieldValidation directive (validation/field_validation.py)

    def set_stale_view(self, kind_ref: KindRef, snapshot: Snapshot | None) -> None:
        """Answer reads of ``kind_ref`` from ``snapshot`` (None: back to the current state)."""
        key = (kind_ref.api_version, kind_ref.kind)
        self.written = {r for r in self.written if (r.api_version, r.kind) != key}
        if snapshot is None:
            self.stale.pop(key, None)
        else:
            self.stale[key] = snapshot

    def timestamp(self) -> str:
        """The virtual clock as an RFC 3339 timestamp (creationTimestamp, managedFields' time)."""
        return format_time(int(self.now()))

    def remember(self, snap: Snapshot) -> None:
        """Keep ``snap`` for continue tokens and exact-version lists (the last ``HISTORY`` of them)."""
        self.history[snap.resource_version] = snap
        while len(self.history) > HISTORY:
            self.history.popitem(last=False)

    def commit(self, req: Request, ref: ObjectRef, before: Manifest | None, after: dict[str, Any] | None,
               counters: Mapping[str, int] | None = None) -> Manifest | None:
        """Stamp the RV, run the hook, store. Nothing is committed when the hook raises."""
        rv = self.snapshot.resource_version + 1
        if after is not None:
            after["metadata"]["resourceVersion"] = str(rv)
            if before is not None:
                share_unchanged(after, before)
        verb = "delete" if req.verb == "deletecollection" else req.verb
        access = Access(req.method, verb, req.info, req.namespace, ref.name, req.sub, req.raw_query, req.parsed,
                        200, after, before, after)
        if self.before_write is not None:
            try:
                self.before_write(access)
            except ApiError:
                raise
            except BaseException as exc:
                raise Propagate(exc) from exc
        snap = self.snapshot
        for key, value in (counters or {}).items():
            snap = snap.with_counter(key, value)
        self.snapshot = snap.with_object(ref, after, rv=rv)
        self.written.add(ref)
        self.remember(self.snapshot)
        req.writes.append(access)
        return after
