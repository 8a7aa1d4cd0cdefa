"""The state of external systems (the fakes a scenario substitutes), kept in the explored cluster state.

Why in the snapshot: a fake's state must fork with every branch of the exploration, survive a
controller's crash as the cluster does, be part of what identifies a state, show up in
counterexample stories and be visible to invariants.  The snapshot already does all of that for
objects, so each key of a store is stored as one object of a kind only kamera uses
(``external.kamera.dev/v1 Entry``, cluster-scoped, named ``<store>:<key>``).  Reads and writes go into
the step's journal like API requests: memoization sees what a reconcile read from the fake, the
determinism check compares them, partial-order reduction treats two steps that touch the same key as
dependent, a crash can be injected after a fake's write as after an API write, and stories list the
writes.  Each key carries a version (the object's resourceVersion, left out of fingerprints as it is
for Kubernetes objects) for compare-and-set.

The kind is served only in scenarios that declare ``fakes:`` (its registration is ``EXTERNAL_CRD``);
the state document shows entries under ``$.external.<store>.<key>``, not in ``$.items``.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from kamera_cli.apiserver.registry.kinds import ResourceInfo
from kamera_cli.apiserver.storage.snapshot import Snapshot
from kamera_cli.errors import KameraError
from kamera_cli.model.objects import Manifest, ObjectRef

if TYPE_CHECKING:
    from kamera_cli.apiserver.server.session import ApiServer

__all__ = ["EXTERNAL_API_VERSION", "EXTERNAL_CRD", "EXTERNAL_KIND", "ExternalStore", "VersionConflict",
           "entry_parts", "with_entries"]

EXTERNAL_GROUP = "external.kamera.dev"
EXTERNAL_API_VERSION = f"{EXTERNAL_GROUP}/v1"
EXTERNAL_KIND = "Entry"
_STORE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")

EXTERNAL_CRD: Manifest = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"entries.{EXTERNAL_GROUP}"},
    "spec": {
        "group": EXTERNAL_GROUP,
        "scope": "Cluster",
        "names": {"plural": "entries", "singular": "entry", "kind": EXTERNAL_KIND, "listKind": "EntryList"},
        "versions": [{"name": "v1", "served": True, "storage": True,
                      "schema": {"openAPIV3Schema": {"type": "object",
                                                     "x-kubernetes-preserve-unknown-fields": True}}}],
    },
}


class VersionConflict(Exception):
    """``put``/``delete`` with ``version=`` found the key at another version (compare-and-set failed)."""


class NoSimulation(KameraError):
    """An external store was used outside a simulation that declares fakes."""


def entry_parts(obj: Manifest) -> tuple[str, str, Any] | None:
    """``(store, key, value)`` of a stored entry; None for any other object."""
    if obj.get("apiVersion") != EXTERNAL_API_VERSION or obj.get("kind") != EXTERNAL_KIND:
        return None
    store, _, key = str((obj.get("metadata") or {}).get("name", "")).partition(":")
    return store, key, obj.get("value")


def with_entries(into: Snapshot, written: Snapshot) -> Snapshot:
    """``into`` plus the entries stored in ``written``: what fakes stored while they were imported.

    Why: a fake's import runs before the exploration (its module is loaded once per scenario), so
    what it stores then is what the external systems hold when the scenario starts — the way to
    model a cloud that already has a user, a DNS zone or a bucket.  Only entries are carried over:
    anything else the import did through the API is discarded, as a controller's import writes are.
    """
    out = into
    for obj in written.objects():
        if entry_parts(obj) is not None:
            rv = out.resource_version + 1
            stored = {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(rv)}}
            out = out.with_object(ObjectRef.of(stored), stored, rv=rv)
    return out


class ExternalStore:
    """A fake's state: a versioned key/value store that kamera explores with the cluster.

    ``store`` names it in invariants (``$.external.<store>.<key>``) and stories.  Values are JSON:
    what ``get`` returns is a copy, so mutating it changes nothing until it is ``put`` back.
    """

    def __init__(self, store: str) -> None:
        if not isinstance(store, str) or not _STORE_NAME.fullmatch(store):
            raise ValueError(f"an external store's name is letters, digits, '_', '.', '-' (got {store!r})")
        self.store = store

    # -- reads ---------------------------------------------------------------------------------------
    def get(self, key: str, default: Any = None) -> Any:
        obj = self._read(key)
        return default if obj is None else copy.deepcopy(obj["value"])

    def version(self, key: str) -> int:
        """The key's version (0: absent); it changes on every ``put``."""
        obj = self._read(key)
        return 0 if obj is None else int(obj["metadata"]["resourceVersion"])

    def __contains__(self, key: str) -> bool:
        return self._read(key) is not None

    def items(self) -> list[tuple[str, Any]]:
        """Every ``(key, value)`` of the store, sorted by key."""
        server, info = self._server()
        found = sorted((parts[1], parts[2]) for parts in map(entry_parts, server.snapshot.objects_of(info.kind_ref))
                       if parts is not None and parts[0] == self.store)
        _journal(server, info, "GET", "list", "", 200, None)
        return [(key, copy.deepcopy(value)) for key, value in found]

    def keys(self) -> list[str]:
        return [key for key, _ in self.items()]

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    # -- writes --------------------------------------------------------------------------------------
    def put(self, key: str, value: Any, *, version: int | None = None) -> int:
        """Store ``value`` under ``key``; with ``version``, only if the key is at that version (0: absent).

        Returns the new version.
        """
        try:
            stored = json.loads(json.dumps(value, allow_nan=False))
        except (TypeError, ValueError) as exc:
            raise TypeError(f"external store {self.store!r}: the value for {key!r} is not JSON: {exc}") from None
        server, info = self._server()
        ref = self._ref(key)
        before = server.snapshot.get(ref)
        self._check_version(key, before, version)
        rv: int = server.snapshot.resource_version + 1
        after = {"apiVersion": EXTERNAL_API_VERSION, "kind": EXTERNAL_KIND,
                 "metadata": {"name": ref.name, "resourceVersion": str(rv)}, "value": stored}
        # "apply" for an overwrite: a put is unconditional unless asked, so it is not a write an
        # optimistic-concurrency conflict can answer (the explorer injects those into updates)
        _commit(server, info, "POST" if before is None else "PUT", "create" if before is None else "apply",
                ref, before, after, rv)
        return rv

    def delete(self, key: str, *, version: int | None = None) -> bool:
        """Remove ``key``; False when it was absent."""
        server, info = self._server()
        ref = self._ref(key)
        before = server.snapshot.get(ref)
        self._check_version(key, before, version)
        if before is None:
            _journal(server, info, "DELETE", "delete", ref.name, 404, None)
            return False
        _commit(server, info, "DELETE", "delete", ref, before, None, server.snapshot.resource_version + 1)
        return True

    # -- plumbing ------------------------------------------------------------------------------------
    def _ref(self, key: str) -> ObjectRef:
        if not isinstance(key, str) or not key:
            raise TypeError(f"external store {self.store!r}: a key is a non-empty string (got {key!r})")
        return ObjectRef(EXTERNAL_API_VERSION, EXTERNAL_KIND, "", f"{self.store}:{key}")

    def _read(self, key: str) -> Manifest | None:
        server, info = self._server()
        ref = self._ref(key)
        obj: Manifest | None = server.snapshot.get(ref)
        _journal(server, info, "GET", "get", ref.name, 200 if obj is not None else 404, obj)
        return obj

    def _check_version(self, key: str, before: Manifest | None, version: int | None) -> None:
        if version is None:
            return
        current = 0 if before is None else int(before["metadata"]["resourceVersion"])
        if current != version:
            raise VersionConflict(f"external store {self.store!r}: {key!r} is at version {current}, not {version}")

    def _server(self) -> tuple[ApiServer, ResourceInfo]:
        # imported here: the state document (invariants/) reads entries without the server's weight
        from kamera_cli.apiserver.server.session import ApiServer
        from kamera_cli.apiserver.transports.containment import bound_server

        server = bound_server()
        if isinstance(server, ApiServer):
            info = server.registry.lookup(EXTERNAL_API_VERSION, EXTERNAL_KIND)
            if info is not None:
                return server, info
        raise NoSimulation(
            f"external store {self.store!r} used outside a kamera simulation step of a scenario with "
            "'fakes:' (a fake's state lives in the explored state; see docs/scenario.md, 'fakes')")


def _journal(server: ApiServer, info: ResourceInfo, method: str, verb: str, name: str, status: int,
             found: Manifest | None) -> None:
    """A read, recorded as the API server records a request (what memoization and the determinism check see)."""
    from kamera_cli.apiserver.server.session import Access

    server.journal.append(Access(method, verb, info, "", name, "", (), None, status, found, found, None))


def _commit(server: ApiServer, info: ResourceInfo, method: str, verb: str, ref: ObjectRef, before: Manifest | None,
            after: Manifest | None, rv: int) -> None:
    """As the API server commits a write: the hook first (crash injection), nothing stored when it raises."""
    from kamera_cli.apiserver.server.session import Access

    access = Access(method, verb, info, "", ref.name, "", (), after, 200, after, before, after)
    if server.before_write is not None:
        server.before_write(access)
    server.snapshot = server.snapshot.with_object(ref, after, rv=rv)
    server.journal.append(access)
