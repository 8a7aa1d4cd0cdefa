"""cel-go's ``ext.Lists`` (version 3) for cel-python: ``slice``, ``flatten``, ``sort``, ``reverse``,
``distinct``, ``lists.range`` (and the key sorting behind the ``sortBy`` macro, which
``validation/cel/macros.py`` expands).

Why: since 1.34 the API server's base environment (environment/base.go) enables
``ext.Lists(ext.ListsVersion(3))``, so CRD rules may write ``self.items.distinct().size() ==
self.items.size()`` or ``self.versions.sort() == self.versions``; cel-python knows none of these.
Semantics and error texts follow cel-go ext/lists.go (``cannot slice(3, 1), start index must be less
than or equal to end index``, ``level must be non-negative``, ``list elements must be comparable``,
``list elements must have the same type``); ``distinct`` keeps first occurrences by CEL equality
(``1`` and ``1.0`` are one element).  This module is not the Kubernetes list library
(``isSorted``, ``sum``, ``indexOf`` …), which ``validation/cel/library.py`` holds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kamera_cli.apiserver.validation.cel.ext import equal


def comparable_types(celpy: Any) -> tuple[type, ...]:
    """The element types cel-go's ``sort`` accepts (its ``comparableTypes``)."""
    t = celpy.celtypes
    return (t.IntType, t.UintType, t.DoubleType, t.BoolType, t.DurationType, t.TimestampType, t.StringType,
            t.BytesType)


def sort_by_keys(celpy: Any, items: list[Any], keys: list[Any]) -> Any:
    """``@sortByAssociatedKeys``: ``items`` ordered by ``keys`` (one per item).  Python's sort is
    stable where Go's ``sort.Slice`` is not, so only the order of items with equal keys may differ."""
    fail = celpy.CELEvalError
    if len(items) != len(keys):
        raise fail("@sortByAssociatedKeys() expected a list of the same size as the associated keys list, but "
                   f"got {len(items)} and {len(keys)} elements respectively")
    if not items:
        return celpy.celtypes.ListType(items)
    kind = type(keys[0])
    if kind not in comparable_types(celpy):
        raise fail("list elements must be comparable")
    if len(keys) > 1 and any(type(k) is not kind for k in keys):
        raise fail("list elements must have the same type")
    order = sorted(range(len(items)), key=lambda i: keys[i])
    return celpy.celtypes.ListType([items[i] for i in order])


def functions(celpy: Any) -> dict[str, Callable[..., Any]]:
    """The library's functions (``range`` is called with the ``lists`` namespace marker first)."""
    t, fail = celpy.celtypes, celpy.CELEvalError

    def as_list(value: Any) -> list[Any]:
        if not isinstance(value, t.ListType):
            raise fail("no such overload")
        return list(value)

    def slice_(items: Any, start: Any, end: Any) -> Any:
        values, a, b = as_list(items), int(start), int(end)
        if a < 0 or b < 0:
            raise fail(f"cannot slice({a}, {b}), negative indexes not supported")
        if a > b:
            raise fail(f"cannot slice({a}, {b}), start index must be less than or equal to end index")
        if len(values) < b:
            raise fail(f"cannot slice({a}, {b}), list is length {len(values)}")
        return t.ListType(values[a:b])

    def flat(values: list[Any], depth: int) -> list[Any]:
        out: list[Any] = []
        for value in values:
            if isinstance(value, t.ListType) and depth > 0:
                out.extend(flat(list(value), depth - 1))
            else:
                out.append(value)
        return out

    def flatten(items: Any, depth: Any = None) -> Any:
        levels = 1 if depth is None else int(depth)
        if levels < 0:
            raise fail("level must be non-negative")
        return t.ListType(flat(as_list(items), levels))

    def distinct(items: Any) -> Any:
        out: list[Any] = []
        for value in as_list(items):
            if not any(equal(value, seen) for seen in out):
                out.append(value)
        return t.ListType(out)

    def range_(_ns: Any, n: Any) -> Any:
        return t.ListType([t.IntType(i) for i in range(int(n))])

    def sort(items: Any) -> Any:
        values = as_list(items)
        return sort_by_keys(celpy, values, values)

    return {"slice": slice_, "flatten": flatten, "distinct": distinct, "range": range_, "sort": sort,
            "reverse": lambda items: t.ListType(as_list(items)[::-1])}
