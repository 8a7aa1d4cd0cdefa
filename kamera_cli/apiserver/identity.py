"""A bounded record of objects met before, by identity.

Why: the write path caches serialisations of subtrees that stored objects share from version to
version (a managedFields list, a pod template).  Caching a subtree the first time it is met costs an
extra serialisation call; most are met once (creates, changed templates).  Splicing from a cache only
pays once a subtree is met a second time, which this remembers.  Entries keep their objects alive, so
an id cannot be reused while it is recorded.
"""

from __future__ import annotations

from typing import Any


class Seen:
    """Objects met before, by identity, forgotten wholesale past ``limit`` (crude but bounded)."""

    __slots__ = ("_items", "_limit")

    def __init__(self, limit: int) -> None:
        self._items: dict[int, Any] = {}
        self._limit = limit

    def again(self, value: Any) -> bool:
        """Whether ``value`` was met before; records it when not."""
        if self._items.get(id(value)) is value:
            return True
        if len(self._items) >= self._limit:
            self._items.clear()
        self._items[id(value)] = value
        return False
