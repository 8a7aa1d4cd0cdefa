"""The state document invariants are evaluated against.

Why a ``kind: List``: it is the shape ``kubectl get ... -o json`` prints, so expressions a user tries
against a real cluster (``$.items[?@.kind == 'ConfigMap']``) work unchanged here. Items are sorted so
that node order, and with it every message, is the same in every run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kamera_cli.apiserver.storage.external import entry_parts
from kamera_cli.model.objects import Manifest


def _sort_key(obj: Manifest) -> tuple[str, str, str, str]:
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        meta = {}
    return (
        str(obj.get("apiVersion", "")),
        str(obj.get("kind", "")),
        str(meta.get("namespace") or ""),
        str(meta.get("name") or ""),
    )


def state_document(objects: Iterable[Manifest]) -> dict[str, Any]:
    """``{"apiVersion": "v1", "kind": "List", "items": [...]}`` sorted by apiVersion, kind, namespace, name.

    The objects are shared, not copied (they are never mutated once stored); each must already carry
    ``apiVersion`` and ``kind``, as objects read from the API server do.  The state of external
    systems (fakes) is not a cluster object: it is ``external``, ``{store: {key: value}}`` (sorted),
    present when a scenario has fakes.
    """
    items: list[Manifest] = []
    external: dict[str, dict[str, Any]] = {}
    for obj in objects:
        entry = entry_parts(obj)
        if entry is None:
            items.append(obj)
        else:
            external.setdefault(entry[0], {})[entry[1]] = entry[2]
    doc: dict[str, Any] = {"apiVersion": "v1", "kind": "List", "items": sorted(items, key=_sort_key)}
    if external:
        doc["external"] = {store: dict(sorted(keys.items())) for store, keys in sorted(external.items())}
    return doc
