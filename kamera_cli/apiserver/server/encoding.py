"""Response encoding with a per-object cache of serialised JSON.

Why: a list answer re-serialises every object it returns, and controllers list on every reconcile.
Stored objects never change, so each one's JSON is computed once and list bodies are concatenations.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from kamera_cli.apiserver.storage.identity import TextCache
from kamera_cli.apiserver.storage.jsontext import compact

# Serialised JSON of stored objects and of their managedFields lists.
# 4,096, not 20,000: an entry holds its object, so a larger cache kept objects of states the search
# had let go of (issue #26: webapps-2-1 at 20,000 states, 0.5 KiB per state each); and at most 2 MiB
# of JSON: a Deployment's is about 2.4 KiB, so 4,096 of them held 10 MiB of text besides their objects
# (webapps-2-2: the cache filled over the first 6,000 states, 0.5 KiB per state)
_CACHE: TextCache[bytes] = TextCache(4096, budget=2 << 20)


def encode(value: Any) -> bytes:
    return compact(value).encode()


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
    hit = _CACHE.get(obj)
    if hit is not None:
        return hit
    raw = _encode_object(obj)
    _CACHE.put(obj, raw)
    return raw


def _encode_object(obj: Mapping[str, Any]) -> bytes:
    meta = obj.get("metadata")
    managed = meta.get("managedFields") if isinstance(meta, dict) else None
    if isinstance(meta, dict) and isinstance(managed, list) and managed and _CACHE.met_before(managed):
        shell = encode({**obj, "metadata": {**meta, "managedFields": _PLACEHOLDER}})
        spliced = shell.count(_PLACEHOLDER_JSON) == 1
        raw = shell.replace(_PLACEHOLDER_JSON, _CACHE.derive(managed, encode)) if spliced else encode(obj)
    else:
        raw = encode(obj)
    return raw


class EqualObjects:
    """One object for each stored object's JSON text met lately (by a digest of it), the oldest
    forgotten first past ``limit``.

    Why: a memo replay copies each object its run wrote, at the replay's resourceVersion and
    instant, and many replays on many paths make equal copies (webapps-2-2: 5,935 copies in the first
    6,000 states, 2,066 distinct). Each copy lived as long as the states holding it; equal ones are
    now one object. Equal JSON text (keys in the same order) means equal values that read back the
    same in every way but identity, and the identity caches only ever answer what equal values give.
    The text is the one ``encode_object`` caches, so the object's first read costs nothing more.
    """

    __slots__ = ("_items", "_limit")

    def __init__(self, limit: int) -> None:
        self._items: dict[bytes, Mapping[str, Any]] = {}
        self._limit = limit

    def one(self, obj: Mapping[str, Any]) -> Mapping[str, Any]:
        """``obj``, or an object met before with the same JSON text."""
        raw = _CACHE.get(obj)
        if raw is None:
            try:
                raw = _encode_object(obj)
            except (TypeError, ValueError):  # not JSON (a seed's datetime): kept as it is
                return obj
        key = hashlib.blake2b(raw, digest_size=16).digest()
        items = self._items
        hit = items.get(key)
        if hit is not None:
            return hit
        while len(items) >= self._limit:
            del items[next(iter(items))]  # the oldest (a dict keeps insertion order): see ``RecentCache``
        items[key] = obj
        _CACHE.put(obj, raw)
        return obj


def share_unchanged(new: dict[str, Any], old: Mapping[str, Any], depth: int = 4) -> None:
    """Make the members of ``new`` equal to those of ``old`` under the same key (or index) the very
    objects ``old`` holds, in place, down to ``depth`` levels.

    Why: a write's object is decoded afresh from the body its client sent, so an update that changes
    a Deployment's status stored a second copy of its spec, pod template and managedFields, equal to
    those of the version it replaced; every state and memo entry holding the new version kept them
    (issue #26: webapps-2-2, the built-ins' decoded bodies were the largest holder, about 0.4 KiB per
    state). Equal means the same JSON text (key order, ``1`` against ``1.0`` or ``true``) and the
    same container types, so ``new`` reads back the same in every way but the identity of its parts.
    """
    for key, value in new.items():
        was = old.get(key, _ABSENT)
        if was is value or type(was) is not type(value):
            continue
        if isinstance(value, str):
            if value == was:
                new[key] = was
        elif isinstance(value, (dict, list)):
            if value == was and _same_text(value, was):
                new[key] = was
            elif depth > 1:
                if isinstance(value, dict):
                    share_unchanged(value, was, depth - 1)
                elif len(value) == len(was):
                    _share_items(value, was, depth - 1)


def _share_items(new: list[Any], old: list[Any], depth: int) -> None:
    for i, (value, was) in enumerate(zip(new, old, strict=True)):
        if was is value or type(was) is not type(value) or not isinstance(value, dict):
            continue
        if value == was and _same_text(value, was):
            new[i] = was
        elif depth > 1:
            share_unchanged(value, was, depth - 1)


_ABSENT = object()


def _same_text(a: Any, b: Any) -> bool:
    try:
        return compact(a) == compact(b)
    except (TypeError, ValueError):  # not JSON (a seed's datetime): not shared
        return False


class ListBody(dict[str, Any]):
    """A list answer whose ``items`` are stored objects: encoded from the per-object cache."""

    def encode(self) -> bytes:
        head = encode({k: v for k, v in self.items() if k != "items"})
        items = b",".join(encode_object(o) for o in self.get("items", ()))
        return head[:-1] + b',"items":[' + items + b"]}"
