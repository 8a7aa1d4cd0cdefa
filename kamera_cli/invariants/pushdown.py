"""Running ``$.items[?@.kind == 'K' && ...]...`` over the items of kind K only.

Why: nearly every invariant starts by picking one kind out of the state document, and a forEach
template join runs such a query once per node, so its cost grows with nodes × objects. When a query
provably cannot select an item of another kind, it is run over a smaller document holding only the
items of that kind (built once per state), and the normalized paths are mapped back. The result is
the same node list, in the same order, with the same paths.

The query qualifies only when all of these hold (anything else runs unchanged):
- it is ``$.items`` followed by a filter whose top-level ``&&`` chain has a conjunct ``@.kind ==
  'K'`` (either operand order): an item whose kind is not K makes the whole filter false;
- nothing in it refers to the root again (no ``$`` after the first character, even inside string
  literals: a false alarm only costs speed), so the smaller document cannot change any filter.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from jsonpath.filter import InfixExpression, RelativeFilterQuery, StringLiteral
from jsonpath.path import JSONPath
from jsonpath.segments import JSONPathChildSegment
from jsonpath.selectors import Filter, NameSelector

_PREFIX = "$['items']["


def _conjunct_kind(node: Any) -> str | None:
    if not isinstance(node, InfixExpression):
        return None
    if node.operator == "&&":
        return _conjunct_kind(node.left) or _conjunct_kind(node.right)
    if node.operator != "==":
        return None
    for query, literal in ((node.left, node.right), (node.right, node.left)):
        if isinstance(query, RelativeFilterQuery) and isinstance(literal, StringLiteral) and str(query) == "@['kind']":
            return str(literal.value)
    return None


def kind_scope(query: Any) -> str | None:
    """The kind K the query is confined to, or None when it does not qualify (see the module doc)."""
    if type(query) is not JSONPath or getattr(query, "pseudo_root", False) or "$" in str(query)[1:]:
        return None
    segments = query.segments
    if len(segments) < 2 or any(type(s) is not JSONPathChildSegment for s in segments[:2]):
        return None
    (first, *more), (second, *others) = segments[0].selectors, segments[1].selectors
    if more or others or not isinstance(first, NameSelector) or first.name != "items":
        return None
    if not isinstance(second, Filter):
        return None
    return _conjunct_kind(getattr(second.expression, "expression", None))


class _KindIndex:
    """Per document: kind -> (a document holding only that kind's items, their original indexes)."""

    __slots__ = ("by_kind", "document")

    def __init__(self, document: Mapping[str, Any], items: list[Any]) -> None:
        self.document = document  # held so that the identity check below cannot match a recycled id
        grouped: dict[str, tuple[list[Any], list[int]]] = {}
        for index, item in enumerate(items):
            kind = item.get("kind") if isinstance(item, Mapping) else None
            if isinstance(kind, str):
                bucket = grouped.setdefault(kind, ([], []))
                bucket[0].append(item)
                bucket[1].append(index)
        self.by_kind: dict[str, tuple[dict[str, Any], list[int]]] = {
            kind: ({"items": found}, indexes) for kind, (found, indexes) in grouped.items()
        }


_last: list[_KindIndex] = []
_EMPTY: tuple[dict[str, Any], list[int]] = ({"items": []}, [])


def reduced(document: Any, kind: str) -> tuple[dict[str, Any], list[int]] | None:
    """The smaller document for ``kind`` and the original index of each of its items; None if n/a."""
    if not isinstance(document, Mapping):
        return None
    if _last and _last[0].document is document:
        index = _last[0]
    else:
        items = document.get("items")
        if not isinstance(items, list):
            return None
        index = _KindIndex(document, items)
        _last[:] = [index]
    found: tuple[dict[str, Any], list[int]] = index.by_kind.get(kind, _EMPTY)
    return found


def remap(path: str, indexes: list[int]) -> str:
    """``$['items'][j]...`` in the smaller document -> the same node's path in the full one."""
    close = path.index("]", len(_PREFIX))
    return f"{_PREFIX}{indexes[int(path[len(_PREFIX) : close])]}{path[close:]}"


@lru_cache(maxsize=4096)
def cached_kind_scope(text: str, query: Any) -> str | None:
    return kind_scope(query)
