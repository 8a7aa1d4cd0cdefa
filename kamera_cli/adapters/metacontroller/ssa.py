"""metacontroller's ``--apply-strategy=server-side-apply``: children applied with server-side apply.

Follows metacontroller v4.17.2 ``pkg/controller/common/manage_children.go`` (``ServerSideApply.Apply``,
``sanitizeForSSACompare``, ``isCacheInvalid``, ``LastUpdateCache``).  The desired child, with its
controller ownerReference and without server-owned metadata, status and the last-applied
annotation, is applied as the field manager the flag ``--apply-strategy-ssa-field-manager`` names
(``metacontroller`` by default), always with ``force``; the simulated API server's server-side apply
(``apiserver/patch/apply.py``) does the merge and keeps the managed fields.

Why the last-update cache is emulated: metacontroller skips the apply of a child whose desired
object hashes as at its last apply and whose generation (resourceVersion, for an object without a
generation) and uid are unchanged since.  So a change by someone else that leaves the generation
alone (a label, an annotation) is not reverted until the hook's answer changes — a behaviour a
checker must reproduce.  The cache is metacontroller's memory: kamera keeps it in the explored state,
per parent (``SimState.memory``), lost on a crash.  Two substitutions keep equal states equal, since
the explored state does not tell apart objects that differ only in uid and resourceVersion: the
object's ``creationTimestamp`` stands for its uid (another incarnation), and a digest of its content
stands for its resourceVersion (written since).  The desired object's hash is a SHA-256 of its JSON
where metacontroller takes xxhash; only equality matters.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kamera_cli.adapters.metacontroller.apply import LAST_APPLIED, SYSTEM_FIELDS, go_json
from kamera_cli.adapters.metacontroller.children import SyncError, controller_ref, delete_child
from kamera_cli.adapters.metacontroller.rest import ResInfo, Rest, meta, status_of

__all__ = ["APPLY_STRATEGIES", "DEFAULT_FIELD_MANAGER", "SsaApplier", "sanitized"]

#: ``--apply-strategy`` values (metacontroller's ``pkg/server/server.go``)
APPLY_STRATEGIES = ("dynamic-apply", "server-side-apply")
#: ``--apply-strategy-ssa-field-manager``'s default
DEFAULT_FIELD_MANAGER = "metacontroller"


def sanitized(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``sanitizeForSSACompare``: without server-owned metadata, status and the last-applied annotation."""
    out = copy.deepcopy(dict(obj))
    metadata = out.get("metadata")
    if isinstance(metadata, dict):
        for name in SYSTEM_FIELDS:
            metadata.pop(name, None)
        annotations = metadata.get("annotations")
        if isinstance(annotations, dict) and LAST_APPLIED in annotations:
            del annotations[LAST_APPLIED]
    out.pop("status", None)
    return out


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _version(obj: Mapping[str, Any]) -> str:
    """What stands for the object's resourceVersion: its content, without what changes on every write."""
    body = copy.deepcopy(dict(obj))
    metadata = body.get("metadata")
    if isinstance(metadata, dict):
        for name in ("resourceVersion", "managedFields", "uid"):
            metadata.pop(name, None)
    return _digest(go_json(body))


def _record(obj: Mapping[str, Any], desired_hash: str) -> list[Any]:
    """A cache entry (``lastUpdate``): the desired hash, generation, resourceVersion and uid stand-ins."""
    m = meta(obj)
    return [desired_hash, int(m.get("generation") or 0), _version(obj), str(m.get("creationTimestamp") or "")]


@dataclass
class SsaApplier:
    """One sync's server-side applies, with the parent's last-update cache (kept between syncs)."""

    rest: Rest
    field_manager: str = DEFAULT_FIELD_MANAGER
    #: ``group/Kind/namespace/name`` → ``[desired hash, generation, version, incarnation]``
    cache: dict[str, list[Any]] = field(default_factory=dict)

    @staticmethod
    def key(info: ResInfo, namespace: str, name: str) -> str:
        """``lastUpdateCacheKey``."""
        return f"{info.group}/{info.kind}/{namespace}/{name}"

    def forget(self, info: ResInfo, namespace: str, name: str) -> None:
        """A child deleted by the sync leaves the cache (``lastUpdatedCache.Delete``)."""
        self.cache.pop(self.key(info, namespace, name), None)

    def _valid(self, key: str, observed: Mapping[str, Any], desired_hash: str) -> bool:
        """``!isCacheInvalid``: applied with this desired object, and the child unchanged since."""
        entry = self.cache.get(key)
        if entry is None:
            return False
        _hash, generation, version, incarnation = entry
        m = meta(observed)
        if incarnation != str(m.get("creationTimestamp") or "") or _hash != desired_hash:
            return False
        observed_generation = int(m.get("generation") or 0)
        if observed_generation == 0 and version != _version(observed):
            return False
        return bool(generation == observed_generation)

    def _patch(self, info: ResInfo, namespace: str, name: str, body: str, *, dry_run: bool = False) -> Any:
        query = {"fieldManager": self.field_manager, "force": "true"}
        if dry_run:
            query["dryRun"] = "All"
        return self.rest.call("PATCH", info.path(namespace or None, name), body, query=query,
                              content_type="application/apply-patch+yaml")

    def apply(self, info: ResInfo, method: str, parent: Mapping[str, Any], observed: Mapping[str, Any] | None,
              desired: Mapping[str, Any]) -> None:
        """``ServerSideApply.Apply`` for one child."""
        if observed is not None and meta(observed).get("deletionTimestamp"):
            return  # pending deletion: wait for it to go
        desired = sanitized(desired)
        ref = controller_ref(parent)  # claimOwnership: we always claim what we create or update
        refs = [r for r in meta(desired).get("ownerReferences") or [] if isinstance(r, dict)]
        if not any(r.get("uid") == ref["uid"] for r in refs):
            desired.setdefault("metadata", {})["ownerReferences"] = [*refs, ref]
        body = go_json(desired)
        desired_hash = _digest(body)
        namespace, name = str(meta(desired).get("namespace") or ""), str(meta(desired).get("name") or "")
        key = self.key(info, namespace, name)
        if observed is not None:
            if self._valid(key, observed, desired_hash):
                return  # applied before, nothing changed since: no request at all
            if method == "OnDelete":
                self.cache[key] = _record(observed, desired_hash)
                return
            if method in ("Recreate", "RollingRecreate"):
                self._recreate(info, key, namespace, name, observed, body, desired_hash)
                return
            if LAST_APPLIED in (meta(observed).get("annotations") or {}):
                # a child dynamic apply wrote before: its annotation is removed first
                pointer = "/metadata/annotations/" + LAST_APPLIED.replace("~", "~0").replace("/", "~1")
                try:
                    self.rest.call("PATCH", info.path(namespace or None, name), [{"op": "remove", "path": pointer}],
                                   content_type="application/json-patch+json")
                except Exception as exc:
                    if status_of(exc) == 404:
                        return
                    raise
        try:
            patched = self._patch(info, namespace, name, body)
        except Exception as exc:
            if status_of(exc) == 409:  # changed since the sync started: the next sync applies again
                return
            raise
        if isinstance(patched, dict):
            self.cache[key] = _record(patched, desired_hash)

    def _recreate(self, info: ResInfo, key: str, namespace: str, name: str, observed: Mapping[str, Any], body: str,
                  desired_hash: str) -> None:
        """Recreate only when a dry-run apply says the child would change (then delete it; a later sync
        creates it afresh)."""
        try:
            dry = self._patch(info, namespace, name, body, dry_run=True)
        except Exception as exc:
            if status_of(exc) in (400, 403):  # invalid or forbidden: never delete the child for it
                self.cache[key] = _record(observed, desired_hash)
                return
            raise
        dry = dry if isinstance(dry, dict) else {}
        m, d = meta(observed), meta(dry)
        if (m.get("generation") or 0) != (d.get("generation") or 0) or m.get("uid") != d.get("uid"):
            raise SyncError(f"generation or UID changed during dry run for server-side apply of {name}: "
                               f"expected generation {m.get('generation') or 0} and UID {m.get('uid')}, got "
                               f"generation {d.get('generation') or 0} and UID {d.get('uid')}")
        if sanitized(dry) == sanitized(observed):
            self.cache[key] = _record(observed, desired_hash)
            return
        delete_child(self.rest, info, observed)
        self.cache.pop(key, None)
