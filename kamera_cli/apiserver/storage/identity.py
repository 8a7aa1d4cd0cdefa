"""Records and caches keyed by the identity of objects that are never mutated.

Why: the write path caches serialisations of subtrees that stored objects share from version to
version (a managedFields list, a pod template).  Stored objects are never mutated, so what was
derived from one stays valid for as long as that very object lives, and an identity lookup costs
one dict probe where a value comparison would walk the subtree.  Every entry keeps its object
alive, so an id cannot be reused by another object while it is recorded. ``IdentityCache`` forgets
everything at once past its limit (crude but bounded); ``Seen`` and ``RecentCache`` forget their oldest
entries first, so that what they hold does not swing with a cycle of fills. A cache of texts is also bounded by their
total length (``TextCache``): a count alone let a cache of large texts (a workload's JSON is a few
KiB) hold tens of MiB, with the objects of states the search had let go of (issue #26).

Caching a subtree the first time it is met costs an extra serialisation call; most are met once
(creates, changed templates).  Splicing from a cache only pays once a subtree is met a second time,
which ``Seen`` remembers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

V = TypeVar("V")
T = TypeVar("T", str, bytes)


class Seen:
    """Objects met before, by identity: past ``limit`` the oldest are forgotten first.

    Why not wholesale: every entry keeps its object alive (often one of a state the search has let
    go of), and forgotten all at once the table went from empty to full and back every few thousand
    states, so how much it held was a matter of where the search stood in that cycle. Oldest first, a
    small table is full early and then holds as many objects for the rest of the search."""

    __slots__ = ("_items", "_limit")

    def __init__(self, limit: int) -> None:
        self._items: dict[int, Any] = {}
        self._limit = limit

    def again(self, value: Any) -> bool:
        """Whether ``value`` was met before; records it when not."""
        items = self._items
        if items.get(id(value)) is value:
            return True
        while len(items) >= self._limit:
            del items[next(iter(items))]
        items[id(value)] = value
        return False


class IdentityCache(Generic[V]):
    """What was derived from never-mutated objects, by their identity, forgotten wholesale past ``limit``."""

    __slots__ = ("_items", "_limit", "_seen")

    def __init__(self, limit: int, seen: int | None = None) -> None:
        self._items: dict[int, tuple[Any, V]] = {}
        self._limit = limit
        # objects met once (``met_before``): 1,024 at most, so that the table is full within the
        # first thousand states or so (issue #26: the JSON cache's, at 4,096, was still filling
        # between 2,000 and 6,000 states)
        self._seen = Seen(min(limit, 1024) if seen is None else seen)

    def get(self, key: Any) -> V | None:
        hit = self._items.get(id(key))
        return hit[1] if hit is not None and hit[0] is key else None

    def put(self, key: Any, value: V) -> None:
        items = self._items
        if len(items) >= self._limit:
            items.clear()
        items[id(key)] = (key, value)

    def derive(self, key: Any, compute: Callable[[Any], V]) -> V:
        """The cached value for ``key``, else ``compute(key)``, cached."""
        hit = self._items.get(id(key))
        if hit is not None and hit[0] is key:
            return hit[1]
        value = compute(key)
        self.put(key, value)
        return value

    def met_before(self, key: Any) -> bool:
        """Whether ``key`` is cached or was met before (recording it): splicing a cached value into a
        larger serialisation pays only from the second sight on, so a first one is serialised whole."""
        hit = self._items.get(id(key))
        return (hit is not None and hit[0] is key) or self._seen.again(key)


class RecentCache(IdentityCache[V]):
    """An ``IdentityCache`` that forgets its oldest entries to make room, not all of them at once.

    Why: every entry keeps its object alive, often an object of a state the search has let go of. A
    cache forgotten wholesale went from empty to full and back every few thousand states, so what it
    held at any moment was a matter of where the search stood in that cycle; forgetting oldest first,
    a small cache is full early on and then holds the same number of objects for the rest of the
    search (issue #26: the fingerprint members' cache, 4,096 entries forgotten wholesale, was still
    filling between 2,000 and 6,000 states on webapps-2-2, about 0.2 KiB per state).
    """

    __slots__ = ()

    def put(self, key: Any, value: V) -> None:
        items = self._items
        items.pop(id(key), None)
        while len(items) >= self._limit:
            del items[next(iter(items))]  # the oldest (a dict keeps insertion order)
        items[id(key)] = (key, value)


class TextCache(IdentityCache[T]):
    """An ``IdentityCache`` of texts bounded by ``limit`` entries and ``budget`` characters, which
    forgets its oldest entries to make room, not all of them at once.

    Why oldest first: this cache holds up to ``budget`` of text and the objects it was derived from,
    often objects of states the search has let go of, so forgotten wholesale it went from full to empty
    and back every few thousand states, and the heap's peak moved by as much as the cache with where a
    search stopped in that cycle (issue #26: webapps-2-2, up to 2 MiB, half a KiB per state of the
    2,000->6,000 window). Kept full, it is the same from its first fill on.
    """

    __slots__ = ("_budget", "_weight")

    def __init__(self, limit: int, budget: int) -> None:
        super().__init__(limit, min(limit, 1024))
        self._budget = budget
        self._weight = 0

    def put(self, key: Any, value: T) -> None:
        items = self._items
        weight = self._weight + len(value)
        if len(value) > self._budget:
            return  # would push out everything else
        old = items.pop(id(key), None)
        if old is not None:
            weight -= len(old[1])
        while items and (weight > self._budget or len(items) >= self._limit):
            weight -= len(items.pop(next(iter(items)))[1])  # the oldest (a dict keeps insertion order)
        self._weight = weight
        items[id(key)] = (key, value)
