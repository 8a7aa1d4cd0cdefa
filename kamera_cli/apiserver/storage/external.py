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

This module is the entries' format; ``apiserver/external_store.py`` is ``ExternalStore``, the store
a fake uses, over the bound server.
"""

from __future__ import annotations

from typing import Any

from kamera_cli.apiserver.storage.snapshot import Snapshot
from kamera_cli.model.objects import Manifest, ObjectRef

__all__ = ["EXTERNAL_API_VERSION", "EXTERNAL_CRD", "EXTERNAL_GROUP", "EXTERNAL_KIND", "entry_parts", "with_entries"]

EXTERNAL_GROUP = "external.kamera.dev"
EXTERNAL_API_VERSION = f"{EXTERNAL_GROUP}/v1"
EXTERNAL_KIND = "Entry"

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
