"""Response encoding with a per-object cache of serialised JSON.

Why: a list answer re-serialises every object it returns, and controllers list on every reconcile.
Stored objects never change, so each one's JSON is computed once and list bodies are concatenations.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kamera_cli.apiserver.identity import Seen

_LIMIT = 20_000
_CACHE: dict[int, tuple[Any, bytes]] = {}


def encode(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


# A placeholder for the managedFields list while the rest of the object is encoded; an object that
# happens to contain the same text elsewhere is encoded whole instead.
_PLACEHOLDER = "\0kamera:managedFields\0"
_PLACEHOLDER_JSON = encode(_PLACEHOLDER)


def encode_object(obj: Mapping[str, Any]) -> bytes:
    """The JSON of a stored (never mutated) object, cached by identity.

    An object's managedFields list -- most of a workload's JSON -- is usually the very list the
    previous version of the object stored (a write that leaves ownership as it was shares it), so
    its text is cached by identity too and spliced in.
    """
    hit = _CACHE.get(id(obj))
    if hit is not None and hit[0] is obj:
        return hit[1]
    meta = obj.get("metadata")
    managed = meta.get("managedFields") if isinstance(meta, dict) else None
    if isinstance(meta, dict) and isinstance(managed, list) and managed and _second_sight(managed):
        shell = encode({**obj, "metadata": {**meta, "managedFields": _PLACEHOLDER}})
        raw = (shell.replace(_PLACEHOLDER_JSON, _cached(managed)) if shell.count(_PLACEHOLDER_JSON) == 1
               else encode(obj))
    else:
        raw = encode(obj)
    _store(obj, raw)
    return raw


_SEEN = Seen(_LIMIT)


def _second_sight(value: Any) -> bool:
    """Whether the list is cached or was met before: one met for the first time (a create, a write that
    changed ownership) is encoded with its object in one call instead."""
    return _CACHE.get(id(value), (None,))[0] is value or _SEEN.again(value)


def _cached(value: Any) -> bytes:
    hit = _CACHE.get(id(value))
    if hit is not None and hit[0] is value:
        return hit[1]
    raw = encode(value)
    _store(value, raw)
    return raw


def _store(value: Any, raw: bytes) -> None:
    if len(_CACHE) >= _LIMIT:
        _CACHE.clear()  # crude but bounded; entries keep their objects alive, so ids cannot be reused
    _CACHE[id(value)] = (value, raw)


class ListBody(dict[str, Any]):
    """A list answer whose ``items`` are stored objects: encoded from the per-object cache."""

    def encode(self) -> bytes:
        head = encode({k: v for k, v in self.items() if k != "items"})
        items = b",".join(encode_object(o) for o in self.get("items", ()))
        return head[:-1] + b',"items":[' + items + b"]}"
