"""A create's managedFields diff with the kind's schema: every node of the new object, as
``patch_ssa.diff_objects({}, obj, ...)`` finds them, through a schema trie compiled once per kind.

Why a separate walk: a create adds everything, so its whole diff is ``patch_ssa._all_nodes`` of
each top-level field, and that walk builds a schema path tuple and asks the operation's lookup memo
at every node (~40 of them in a small Deployment).  The answers depend on the schema path only, so
here they are kept in a trie that lives as long as the kind's lookup: a node's children are found
by one dict probe on the field name.  ``test_typed_nodes.py`` checks that the two walks agree on
objects of every built-in kind.
"""

from __future__ import annotations

from typing import Any

from kamera_cli.apiserver.patch.apply import (
    NO_SELF,
    SHALLOW,
    STRIPPED,
    ListKind,
    WalkContext,
    atomic_map,
    index_items,
    list_kind,
)
from kamera_cli.apiserver.patch.fieldmeta import FieldLookup, FieldMeta
from kamera_cli.apiserver.patch.fieldsv1 import Path, field_element

__all__ = ["typed_nodes"]


class _Trie:
    """What the lookup answers at one schema path, and the tries of its fields, made on first use.

    A list's items share their list's schema path (and so its field tries); ``item`` is the view of
    the same path that ``_all_nodes`` passes to each item: the list's metadata for a keyed list,
    none otherwise.
    """

    __slots__ = ("_item", "atomic_map", "children", "element", "in_zero", "list_kind", "lookup", "spath", "zero")

    def __init__(self, lookup: FieldLookup, zero: frozenset[Path], spath: tuple[str, ...], meta: FieldMeta | None,
                 children: dict[str, _Trie] | None = None) -> None:
        self.lookup = lookup
        self.zero = zero
        self.spath = spath
        # the path element of this field, made once: its hash is then computed once too
        self.element = field_element(spath[-1]) if spath else ""
        # whether the kind's Go zero value has this field (only chains of fields from the root are in
        # ``zero``, so an item's field never is)
        self.in_zero = bool(zero) and children is None and tuple(field_element(n) for n in spath) in zero
        self.atomic_map = atomic_map(meta)
        self.list_kind: ListKind = list_kind(meta)
        self.children: dict[str, _Trie] = {} if children is None else children
        self._item: _Trie | None = None

    def child(self, name: str) -> _Trie:
        node = self.children.get(name)
        if node is None:
            spath = (*self.spath, name)
            node = self.children[name] = _Trie(self.lookup, self.zero, spath, self.lookup(spath))
        return node

    def item(self) -> _Trie:
        if self._item is None:
            keyed = self.list_kind.kind == "map"
            meta = self.lookup(self.spath) if keyed and self.spath else None
            self._item = _Trie(self.lookup, self.zero, self.spath, meta, self.children)
        return self._item


_ROOTS: dict[tuple[int, int], tuple[FieldLookup, frozenset[Path], _Trie]] = {}


def _root(lookup: FieldLookup, zero: frozenset[Path]) -> _Trie:
    held = _ROOTS.get((id(lookup), id(zero)))
    if held is None or held[0] is not lookup or held[1] is not zero:
        if len(_ROOTS) >= 1024:
            _ROOTS.clear()
        held = _ROOTS[(id(lookup), id(zero))] = (lookup, zero, _Trie(lookup, zero, (), None))
    return held[2]


# With a zero value, only ``metadata`` is never recorded itself (the apiserver strips it from every
# field set, its stripMetaManager); the zero value's own top-level fields are left out by ``in_zero``.
_METADATA: frozenset[Path] = frozenset([("f:metadata",)])


def typed_nodes(obj: dict[str, Any], lookup: FieldLookup, ctx: WalkContext,
                zero: frozenset[Path] | None = None) -> set[Path]:
    """``diff_objects({}, obj, ctx).added``: the path of every node of ``obj`` that a field set records.

    With ``zero`` (``Registry.zero_fields``: the paths the kind's Go zero value has; empty for a
    custom resource, whose "zero value" is an empty object), the nodes a comparison with that value
    finds added or changed, as the apiserver's create does: a map or a list the zero value has is
    not added itself (no ``.``), only what is below it; one it has and that holds no more than a zero
    (``{}``, ``[]``, null, ``""``, 0, false) did not change; any other value it has (an atomic
    ``selector``, a container's ``name``) changed and is recorded.  Every other top-level map but
    ``metadata`` is added with its ``.`` (a custom resource's ``spec``).
    """
    out: set[Path] = set()
    no_self = NO_SELF if zero is None else _METADATA
    _fields(obj, _root(lookup, zero or frozenset()), (), out, ctx, no_self)
    return out


def _is_zero(value: Any) -> bool:
    return value is None or value is False or value in ("", 0) or value == {} or value == []


def _fields(value: dict[str, Any], node: _Trie, prefix: Path, out: set[Path], ctx: WalkContext,
            no_self: frozenset[Path]) -> None:
    """The nodes below a map that is not atomic: each entry's path, and what is below it."""
    children = node.children
    shallow = len(prefix) < SHALLOW  # deeper paths are in neither STRIPPED nor NO_SELF: no lookups
    for name, child in value.items():
        sub = children.get(name) or node.child(name)
        path = prefix + (sub.element,)  # noqa: RUF005 -- concatenation: no list built
        if shallow:
            if path in STRIPPED:
                continue
            recorded = len(path) > 1 or path not in no_self
        else:
            recorded = True
        if sub.in_zero:
            if isinstance(child, dict) and not sub.atomic_map:
                if child:
                    _fields(child, sub, path, out, ctx, no_self)
            elif isinstance(child, list) and sub.list_kind.kind != "atomic":
                if child:
                    _items(child, sub, path, out, ctx, no_self)
            elif recorded and not _is_zero(child):
                out.add(path)
            continue
        if recorded:
            out.add(path)
        if isinstance(child, dict):
            if child and not sub.atomic_map:
                _fields(child, sub, path, out, ctx, no_self)
        elif isinstance(child, list) and child:
            _items(child, sub, path, out, ctx, no_self)


def _items(value: list[Any], node: _Trie, prefix: Path, out: set[Path], ctx: WalkContext,
           no_self: frozenset[Path]) -> None:
    """The nodes of a list's items, as a keyed list or a set records them (an atomic list: none)."""
    kind = node.list_kind
    if kind.kind == "atomic":
        return
    elements, _ = index_items(value, kind, prefix, False, ctx)
    item = node.item()
    atomic_items = kind.kind == "set" or kind.atomic_items
    for element, entry in zip(elements, value):
        path = prefix + (element,)  # noqa: RUF005 -- an item's element is never in STRIPPED or NO_SELF
        out.add(path)
        if isinstance(entry, dict):
            if entry and not atomic_items and not item.atomic_map:
                _fields(entry, item, path, out, ctx, no_self)
        elif isinstance(entry, list) and entry:
            _items(entry, item, path, out, ctx, no_self)
