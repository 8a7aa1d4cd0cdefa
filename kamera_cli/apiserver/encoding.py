"""Response encoding with a per-object cache of serialised JSON.

Why: a list answer re-serialises every object it returns, and controllers list on every reconcile.
Stored objects never change, so each one's JSON is computed once and list bodies are concatenations.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

_LIMIT = 20_000
_CACHE: dict[int, tuple[Mapping[str, Any], bytes]] = {}


def encode(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def encode_object(obj: Mapping[str, Any]) -> bytes:
    """The JSON of a stored (never mutated) object, cached by identity."""
    hit = _CACHE.get(id(obj))
    if hit is not None and hit[0] is obj:
        return hit[1]
    raw = encode(obj)
    if len(_CACHE) >= _LIMIT:
        _CACHE.clear()  # crude but bounded; entries keep their objects alive, so ids cannot be reused
    _CACHE[id(obj)] = (obj, raw)
    return raw


class ListBody(dict[str, Any]):
    """A list answer whose ``items`` are stored objects: encoded from the per-object cache."""

    def encode(self) -> bytes:
        head = encode({k: v for k, v in self.items() if k != "items"})
        items = b",".join(encode_object(o) for o in self.get("items", ()))
        return head[:-1] + b',"items":[' + items + b"]}"
