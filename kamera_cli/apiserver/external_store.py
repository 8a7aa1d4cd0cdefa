"""``ExternalStore``: the versioned key/value store a fake keeps its state in, over the bound server.

Why here, above the packages: it finds the server of the running step through the containment
(``transports``) and reads and writes that server's snapshot and journal as a request would
(``server``), in the entries' format of ``storage/external.py``; docs/scenario.md, "fakes".
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from typing import Any

from kamera_cli.apiserver.registry.kinds import ResourceInfo
from kamera_cli.apiserver.server.session import Access, ApiServer
from kamera_cli.apiserver.storage.external import EXTERNAL_API_VERSION, EXTERNAL_KIND, entry_parts
from kamera_cli.apiserver.transports.containment import bound_server
from kamera_cli.errors import KameraError
from kamera_cli.model.objects import Manifest, ObjectRef

__all__ = ["ExternalStore", "NoSimulation", "VersionConflict"]

_STORE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


class VersionConflict(Exception):
    """``put``/``delete`` with ``version=`` found the key at another version (compare-and-set failed)."""


class NoSimulation(KameraError):
    """An external store was used outside a simulation that declares fakes."""


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
    server.journal.append(Access(method, verb, info, "", name, "", (), None, status, found, found, None))


def _commit(server: ApiServer, info: ResourceInfo, method: str, verb: str, ref: ObjectRef, before: Manifest | None,
            after: Manifest | None, rv: int) -> None:
    """As the API server commits a write: the hook first (crash injection), nothing stored when it raises."""
    access = Access(method, verb, info, "", ref.name, "", (), after, 200, after, before, after)
    if server.before_write is not None:
        server.before_write(access)
    server.snapshot = server.snapshot.with_object(ref, after, rv=rv)
    server.journal.append(access)
