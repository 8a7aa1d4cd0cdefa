"""The schema-aware walks behind server-side apply and managedFields: which paths an apply
configuration owns, how it merges into a live object, what changed between two objects, and how
fields are pruned.

Why its own module: these walks are structured-merge-diff's value algorithms (ToFieldSet, Merge,
Compare, RemoveItems) and know nothing of managers; ``managed_fields`` builds the bookkeeping on
top.  Every walk resolves list and map semantics through a ``FieldLookup`` (list type, map keys,
map type, falling back to the patch merge key as the apiserver's schema converter does), returns
the input subtree itself wherever nothing changes, and never mutates its inputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kamera_cli.apiserver.patch.errors import PatchError, invalid
from kamera_cli.apiserver.patch.fieldmeta import FieldLookup, FieldMeta
from kamera_cli.apiserver.patch.fieldsv1 import (
    Path,
    field_element,
    key_element,
    path_string,
    prefixes,
    value_element,
)
from kamera_cli.apiserver.patch.json_patch import json_equal

__all__ = ["NO_SELF", "SHALLOW", "STRIPPED", "Diff", "ListKind", "WalkContext", "atomic_map", "config_fields",
           "diff_objects", "index_items", "list_kind", "merge_applied", "merge_config", "prune", "without_removed"]

# Fields nobody owns: the apiserver strips them from every field set (its stripMetaManager).
STRIPPED: frozenset[Path] = frozenset(
    [("f:apiVersion",), ("f:kind",)]
    + [("f:metadata", "f:" + name) for name in ("name", "namespace", "creationTimestamp", "selfLink", "uid",
                                                  "clusterName", "generation", "managedFields", "resourceVersion")]
)
# Top-level maps present in a built-in kind's zero value: adding them records no "." ownership.
NO_SELF: frozenset[Path] = frozenset([("f:metadata",), ("f:spec",), ("f:status",)])
# No path in either set is longer (a tuple's hash is not cached: deeper paths skip the lookups).
SHALLOW = 2
assert all(len(p) <= SHALLOW for p in STRIPPED | NO_SELF)


# -- list semantics -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ListKind:
    """How a list's items are owned: atomic (as one value), as a set of values, or as a map by keys."""

    kind: str  # "atomic" | "set" | "map"
    keys: tuple[str, ...] = ()
    atomic_items: bool = False


_ATOMIC_LIST = ListKind("atomic")


def list_kind(meta: FieldMeta | None) -> ListKind:
    """The ownership of a list field (``x-kubernetes-list-type`` or the patch strategy); atomic when unknown."""
    if meta is None:
        return _ATOMIC_LIST
    atomic_items = meta.map_type == "atomic"
    list_type = meta.list_type
    if list_type == "map":
        keys = meta.map_keys or ((meta.merge_key,) if meta.merge_key else ())
        return ListKind("map", keys, atomic_items) if keys else _ATOMIC_LIST
    if list_type == "set":
        return ListKind("set")
    if list_type == "atomic":
        return _ATOMIC_LIST
    if "merge" in meta.strategies:
        if meta.merge_key:
            return ListKind("map", (meta.merge_key,), atomic_items)
        return ListKind("set")
    return _ATOMIC_LIST


def atomic_map(meta: FieldMeta | None) -> bool:
    """Whether a map field is owned as one value (``x-kubernetes-map-type: atomic``)."""
    return meta is not None and meta.map_type == "atomic" and meta.list_type is None


_UNASKED = object()


class WalkContext:
    """One operation's memo: ``FieldLookup`` answers by schema path, list item elements by list."""

    __slots__ = ("_metas", "elements", "fields", "no_self")

    def __init__(self, fields: FieldLookup, no_self: frozenset[Path] = NO_SELF) -> None:
        self.fields = fields
        # top-level maps whose appearance records no "." of their own (see ``zero_top_level``)
        self.no_self = no_self
        self._metas: dict[tuple[str, ...], FieldMeta | None] = {}
        # _elements_key(list, kind) -> (the list, kept alive so the id stays unique; elements; observed; problem)
        self.elements: dict[_ElementsKey, tuple[list[Any], list[str], dict[str, Any], PatchError | None]] = {}

    def meta(self, spath: tuple[str, ...]) -> FieldMeta | None:
        found = self._metas.get(spath, _UNASKED)  # a context is per operation: most lookups are its first
        if found is _UNASKED:
            found = self._metas[spath] = self.fields(spath)
        return found  # type: ignore[return-value]


def _item_element(item: Any, kind: ListKind, index: int) -> str | None:
    if kind.kind == "set":
        return value_element(item)
    if isinstance(item, dict):
        keys = {name: item[name] for name in kind.keys if name in item and item[name] is not None}
        if keys:
            return key_element(keys)
    return None


# A list's identity and its kind's fields: hashed in C (a ListKind hashes through Python code).
_ElementsKey = tuple[int, str, tuple[str, ...], bool]
_STABLE_LIMIT = 4096
# Elements of lists that are never mutated (a stored object's, an apply configuration's), by the
# same key, across requests: a controller applies the same configuration over and over to an object
# whose lists did not change.  Only lists without a problem; each entry keeps its list alive.
_STABLE: dict[_ElementsKey, tuple[list[Any], list[str], dict[str, Any]]] = {}


def index_items(items: list[Any], kind: ListKind, where: Path, strict: bool,
                 ctx: WalkContext, stable: bool = False) -> tuple[list[str], dict[str, Any]]:
    """Each item's path element, and the first item per element; ``strict`` rejects what an apply
    configuration may not contain (items without key fields, duplicates).  ``stable``: ``items``
    is never mutated (see ``_STABLE``); callers never change what this returns."""
    key = (id(items), kind.kind, kind.keys, kind.atomic_items)
    if stable:
        known = _STABLE.get(key)
        if known is not None and known[0] is items:
            return known[1], known[2]
    cached = ctx.elements.get(key)
    if cached is None:
        elements: list[str] = []
        observed: dict[str, Any] = {}
        problem: PatchError | None = None
        for index, item in enumerate(items):
            element = _item_element(item, kind, index)
            if element is None:
                element = f"i:{index}"
                problem = problem or invalid(
                    f"{path_string(where)}: associative list with keys has an element that omits key field "
                    f"{kind.keys[0]!r} (and doesn't have default value)",
                    [{"type": "FieldValueRequired", "message": f"key field {kind.keys[0]!r} is missing",
                      "field": path_string(where)}])
            if element in observed:
                problem = problem or invalid(
                    f"{path_string(where)}: duplicate entries for key {element[2:]}",
                    [{"type": "FieldValueDuplicate", "message": f"duplicate entries for key {element[2:]}",
                      "field": path_string(where)}])
            else:
                observed[element] = item
            elements.append(element)
        cached = (items, elements, observed, problem)
        ctx.elements[key] = cached
        if stable and problem is None:
            if len(_STABLE) >= _STABLE_LIMIT:
                _STABLE.clear()
            _STABLE[key] = (items, elements, observed)
    if strict and cached[3] is not None:
        raise cached[3]
    return cached[1], cached[2]


# -- field sets -----------------------------------------------------------------------------------


def config_fields(value: Any, meta: FieldMeta | None, spath: tuple[str, ...], prefix: Path, ctx: WalkContext,
                   out: set[Path]) -> None:
    """SMD's ToFieldSet: leaves, atomic values and list items (not granular maps themselves)."""
    if isinstance(value, dict):
        if prefix and atomic_map(meta):
            out.add(prefix)
            return
        _config_map_fields(value, spath, prefix, ctx, out)
    elif isinstance(value, list):
        kind = list_kind(meta)
        if kind.kind == "atomic":
            out.add(prefix)
            return
        elements, _ = index_items(value, kind, prefix, True, ctx)
        for element, item in zip(elements, value):
            item_path = (*prefix, element)
            out.add(item_path)
            if kind.kind == "map" and isinstance(item, dict) and not kind.atomic_items:
                _config_map_fields(item, spath, item_path, ctx, out)
    else:
        out.add(prefix)


def _config_map_fields(value: dict[str, Any], spath: tuple[str, ...], prefix: Path, ctx: WalkContext,
                       out: set[Path]) -> None:
    for name, child in value.items():
        path = (*prefix, "f:" + name)
        if not isinstance(child, (dict, list)):
            if path not in STRIPPED:
                out.add(path)
            continue
        if path in STRIPPED:
            continue
        sub = (*spath, name)
        config_fields(child, ctx.meta(sub), sub, path, ctx, out)


@dataclass(slots=True)
class Diff:
    added: set[Path]
    modified: set[Path]
    removed: set[Path]  # roots of removed subtrees


def _all_nodes(value: Any, meta: FieldMeta | None, spath: tuple[str, ...], prefix: Path, ctx: WalkContext,
               out: set[Path], item_atomic: bool = False) -> None:
    """Every node of a subtree that appeared (SMD's comparison marks each one added)."""
    if len(prefix) <= SHALLOW and prefix in STRIPPED:
        return
    if prefix and (len(prefix) > 1 or prefix not in ctx.no_self):
        out.add(prefix)
    if isinstance(value, dict):
        if (prefix and atomic_map(meta)) or item_atomic:
            return
        for name, child in value.items():
            sub = (*spath, name)
            _all_nodes(child, ctx.meta(sub), sub, (*prefix, field_element(name)), ctx, out)
    elif isinstance(value, list):
        kind = list_kind(meta)
        if kind.kind == "atomic":
            return
        elements, _ = index_items(value, kind, prefix, False, ctx)
        for element, item in zip(elements, value):
            _all_nodes(item, meta if kind.kind == "map" else None, spath, (*prefix, element), ctx, out,
                       item_atomic=kind.kind == "set" or kind.atomic_items)


def _shape(value: Any) -> str:
    if isinstance(value, dict):
        return "map"
    if isinstance(value, list):
        return "list"
    return "leaf"


def _compare(old: Any, new: Any, meta: FieldMeta | None, spath: tuple[str, ...], prefix: Path, ctx: WalkContext,
             diff: Diff, item_atomic: bool = False) -> None:
    if old is new or (len(prefix) <= SHALLOW and prefix in STRIPPED):
        return
    shape = _shape(old)
    atomic = (shape == "leaf" or item_atomic or (shape == "map" and prefix != () and atomic_map(meta))
              or (shape == "list" and list_kind(meta).kind == "atomic"))
    if shape != _shape(new):
        diff.removed.add(prefix)
        _all_nodes(new, meta, spath, prefix, ctx, diff.added, item_atomic)
        return
    if atomic:
        if not json_equal(old, new):
            diff.modified.add(prefix)
        return
    if shape == "map":
        for name, child in new.items():
            before = old.get(name, _ABSENT)
            if before is child:
                continue
            path = (*prefix, "f:" + name)
            if before is _ABSENT:
                sub = (*spath, name)
                _all_nodes(child, ctx.meta(sub), sub, path, ctx, diff.added)
            elif not isinstance(child, (dict, list)) and not isinstance(before, (dict, list)):
                # Scalar to scalar, the common case: no schema needed.
                if (before != child if type(before) is type(child) else not json_equal(before, child)) \
                        and path not in STRIPPED:
                    diff.modified.add(path)
            else:
                sub = (*spath, name)
                _compare(before, child, ctx.meta(sub), sub, path, ctx, diff)
        for name in old:
            if name not in new:
                path = (*prefix, field_element(name))
                if path not in STRIPPED:
                    diff.removed.add(path)
        return
    kind = list_kind(meta)
    old_elements, old_items = index_items(old, kind, prefix, False, ctx, stable=True)  # the stored object's
    new_elements, new_items = index_items(new, kind, prefix, False, ctx)
    item_meta = meta if kind.kind == "map" else None
    atomic_items = kind.kind == "set" or kind.atomic_items
    for element in new_elements:
        path = (*prefix, element)
        if element in old_items:
            _compare(old_items[element], new_items[element], item_meta, spath, path, ctx, diff, atomic_items)
        else:
            _all_nodes(new_items[element], item_meta, spath, path, ctx, diff.added, atomic_items)
    for element in old_elements:
        if element not in new_items:
            diff.removed.add((*prefix, element))


def zero_top_level(zero: frozenset[Path]) -> frozenset[Path]:
    """The top-level maps whose appearance records no ``.``, given the kind's zero-value paths
    (``Registry.zero_fields``): ``metadata`` (the apiserver strips it from every field set) and the
    top-level fields the zero value has (a built-in's ``spec`` and ``status``; none for a custom
    resource, whose ``spec`` is added like any other map)."""
    hit = _TOP_LEVEL.get(id(zero))
    if hit is not None and hit[0] is zero:
        return hit[1]
    top = frozenset([("f:metadata",), *(path for path in zero if len(path) == 1)])
    if len(_TOP_LEVEL) >= 256:
        _TOP_LEVEL.clear()
    _TOP_LEVEL[id(zero)] = (zero, top)  # keeping ``zero`` alive keeps its id unique
    return top


_TOP_LEVEL: dict[int, tuple[frozenset[Path], frozenset[Path]]] = {}


def diff_objects(old: dict[str, Any], new: dict[str, Any], ctx: WalkContext) -> Diff:
    diff = Diff(set(), set(), set())
    _compare(old, new, None, (), (), ctx, diff)
    return diff


def without_removed(paths: frozenset[Path], removed: set[Path]) -> frozenset[Path]:
    if not removed:
        return paths
    depth = max(len(p) for p in removed)
    return frozenset(p for p in paths if not any(p[:n] in removed for n in range(1, min(len(p), depth) + 1)))


# -- merging and pruning ------------------------------------------------------------------------


_FIXED_LIMIT = 4096
# Pairs (live subtree, configuration subtree) whose merge gave the live subtree itself, by identity
# and schema position, across requests.  Both sides are never mutated (a stored object's subtrees;
# an apply configuration, remembered and reused for the same body), so the merge would give the
# same answer again: a controller re-applying its configuration to an object whose pod template did
# not change skips walking the template.  Each entry keeps its objects alive; forgotten wholesale.
_METADATA: Path = ("f:metadata",)
_FIXED: dict[tuple[int, int, tuple[str, ...], bool, bool], tuple[Any, Any, FieldLookup]] = {}


def merge_config(live: Any, config: Any, meta: FieldMeta | None, spath: tuple[str, ...], prefix: Path, ctx: WalkContext,
                 item_atomic: bool = False, out: set[Path] | None = None) -> Any:
    """``config`` merged into ``live``; returns ``live`` itself where nothing changes, so the
    comparison that follows can skip unchanged subtrees by identity.

    With ``out`` (and not ``item_atomic``), also adds ``config_fields`` of ``config`` to it: apply
    needs both, and collecting the field set during the merge walks the configuration once instead
    of twice.  Where the merge does not descend, ``config_fields`` walks the rest.  The first error
    may then come from a different place than ``config_fields`` alone would find first, so a caller
    that reports errors runs ``config_fields`` again on failure (see ``merge_applied``).

    Below the root, a pair of containers met before unchanged (``_FIXED``) answers at once when no
    field set is being collected; the merge's answer depends on the schema position (the schema
    path, whether items are atomic, whether there is field metadata) besides the two subtrees.
    """
    if not prefix or prefix == _METADATA or not isinstance(config, (dict, list)):
        # (the live metadata is a per-request copy without managedFields: never met again)
        return _merge_config(live, config, meta, spath, prefix, ctx, item_atomic, out)
    key = (id(live), id(config), spath, item_atomic, meta is None)
    if out is None:
        hit = _FIXED.get(key)
        if hit is not None and hit[0] is live and hit[1] is config and hit[2] is ctx.fields:
            return live
    merged = _merge_config(live, config, meta, spath, prefix, ctx, item_atomic, out)
    if merged is live:
        if len(_FIXED) >= _FIXED_LIMIT:
            _FIXED.clear()
        _FIXED[key] = (live, config, ctx.fields)
    return merged


def _merge_config(live: Any, config: Any, meta: FieldMeta | None, spath: tuple[str, ...], prefix: Path,
                  ctx: WalkContext, item_atomic: bool, out: set[Path] | None) -> Any:
    if isinstance(config, dict):
        if not isinstance(live, dict) or item_atomic or (prefix and atomic_map(meta)):
            if out is not None:
                config_fields(config, meta, spath, prefix, ctx, out)
            return live if json_equal(live, config) else _without_nulls(config)
        result: dict[str, Any] | None = None
        for name, child in config.items():
            path = (*prefix, "f:" + name)
            leaf = not isinstance(child, (dict, list))
            collect = out
            if out is not None and path in STRIPPED:
                collect = None
            elif out is not None and leaf:
                out.add(path)
            if child is None:
                if name in live:
                    if result is None:
                        result = dict(live)
                    del result[name]
                continue
            if name in live:
                before = live[name]
                if leaf and not isinstance(before, (dict, list)):
                    # Scalars of one type are JSON-equal exactly when ==; only mixed types (a bool
                    # against a number, 1 against 1.0) need json_equal.
                    if before == child if type(before) is type(child) else json_equal(before, child):
                        continue
                    value = child
                else:
                    sub = (*spath, name)
                    value = merge_config(before, child, ctx.meta(sub), sub, path, ctx,
                                         out=None if leaf else collect)
                    if value is before:
                        continue
            else:
                if collect is not None and not leaf:
                    sub = (*spath, name)
                    config_fields(child, ctx.meta(sub), sub, path, ctx, collect)
                value = _without_nulls(child)
            if result is None:
                result = dict(live)
            result[name] = value
        return live if result is None else result
    if isinstance(config, list) and isinstance(live, list):
        kind = list_kind(meta)
        if kind.kind != "atomic":
            merged = _merge_list(live, config, kind, meta, spath, prefix, ctx, out)
            if len(merged) == len(live) and all(a is b for a, b in zip(merged, live)):
                return live
            return merged
    if out is not None:
        config_fields(config, meta, spath, prefix, ctx, out)
    if json_equal(live, config):
        return live
    return _without_nulls(config)


def merge_applied(live: dict[str, Any], config: dict[str, Any], ctx: WalkContext) -> tuple[Any, frozenset[Path]]:
    """An apply configuration merged into ``live`` and the fields it owns, in one walk.

    Errors are those ``config_fields`` reports (it is run on its own when the joint walk fails), so
    the message names the same first offending list as before.
    """
    out: set[Path] = set()
    try:
        merged = merge_config(live, config, None, (), (), ctx, out=out)
    except PatchError:
        config_fields(config, None, (), (), ctx, set())
        raise
    return merged, frozenset(out)


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _merge_list(live: list[Any], config: list[Any], kind: ListKind, meta: FieldMeta | None,
                spath: tuple[str, ...], prefix: Path, ctx: WalkContext, out: set[Path] | None = None) -> list[Any]:
    """SMD's list merge: live-only items keep their place, shared and new items follow the config.
    With ``out``, also collects the configuration's fields (see ``merge_config``)."""
    rhs, observed_rhs = index_items(config, kind, prefix, True, ctx, stable=True)
    lhs, observed_lhs = index_items(live, kind, prefix, False, ctx, stable=True)
    item_meta = meta if kind.kind == "map" else None
    atomic_items = kind.kind == "set" or kind.atomic_items
    # A map item's own fields are collected as config_fields would (strict indexing guarantees each
    # item of a map list is a dict with its keys); set items and atomic items are leaves.
    collect = out if kind.kind == "map" and not atomic_items else None
    if out is not None:
        for element, item in zip(rhs, config):
            item_path = (*prefix, element)
            out.add(item_path)
            if collect is not None and element not in observed_lhs and isinstance(item, dict):
                _config_map_fields(item, spath, item_path, ctx, collect)

    def merged(element: str) -> Any:
        if element in observed_lhs:
            return merge_config(observed_lhs[element], observed_rhs[element], item_meta, spath, (*prefix, element), ctx,
                                atomic_items, collect)
        return _without_nulls(observed_rhs[element])

    shared = [e for e in rhs if e in observed_lhs]
    shared_at = 0
    next_shared = shared[0] if shared else None
    result: list[Any] = []
    done: set[str] = set()
    li = ri = 0
    while li < len(lhs) or ri < len(rhs):
        if li < len(lhs) and ri < len(rhs):
            element = lhs[li]
            if element == rhs[ri]:
                done.add(element)
                result.append(merged(element))
                li += 1
                ri += 1
                shared_at += 1
                next_shared = shared[shared_at] if shared_at < len(shared) else None
                continue
            if element in observed_rhs and next_shared is not None and next_shared != element:
                li += 1
                continue
        if li < len(lhs):
            element = lhs[li]
            if element not in observed_rhs:
                result.append(live[li])
                li += 1
                continue
            if element in done:
                li += 1
                continue
        if ri < len(rhs):
            element = rhs[ri]
            done.add(element)
            result.append(merged(element))
            ri += 1
            if next_shared is not None and next_shared == element:
                shared_at += 1
                next_shared = shared[shared_at] if shared_at < len(shared) else None
    return result


class _Absent:
    pass


_ABSENT = _Absent()


class _Gone:
    pass


_GONE = _Gone()


def _remove(value: Any, doomed: set[Path], reach: set[Path], meta: FieldMeta | None, spath: tuple[str, ...],
            prefix: Path, ctx: WalkContext, keep: set[Path], item_atomic: bool = False,
            item_keys: tuple[str, ...] = ()) -> Any:
    """``value`` without the subtrees at ``doomed`` (``reach``: their prefixes, to skip the rest);
    granular maps emptied by the removal go too unless someone owns them.  The key fields of a
    list item that stays are never removed: they are its identity."""
    if prefix in doomed:
        return _GONE
    if isinstance(value, dict) and not item_atomic:
        result: dict[str, Any] | None = None
        for name, child in value.items():
            path = (*prefix, field_element(name))
            if path not in reach or name in item_keys:
                continue
            sub = (*spath, name)
            pruned = _remove(child, doomed, reach, ctx.meta(sub), sub, path, ctx, keep)
            if pruned is child:
                continue
            if result is None:
                result = dict(value)
            if pruned is _GONE:
                del result[name]
            else:
                result[name] = pruned
        if result is None:
            return value
        if not result and len(prefix) > 1 and prefix not in keep:
            return _GONE
        return result
    if isinstance(value, list):
        kind = list_kind(meta)
        if kind.kind == "atomic":
            return value
        elements, _ = index_items(value, kind, prefix, False, ctx)
        item_meta = meta if kind.kind == "map" else None
        out: list[Any] = []
        changed = False
        for element, item in zip(elements, value):
            path = (*prefix, element)
            if path not in reach:
                out.append(item)
                continue
            pruned = _remove(item, doomed, reach, item_meta, spath, path, ctx, keep,
                             kind.kind == "set" or kind.atomic_items, kind.keys)
            if pruned is not item:
                changed = True
            if pruned is not _GONE:
                out.append(pruned)
        return out if changed else value
    return value


def prune(obj: dict[str, Any], doomed: set[Path], ctx: WalkContext, keep: set[Path]) -> dict[str, Any]:
    if not doomed:
        return obj
    pruned = _remove(obj, doomed, prefixes(doomed), None, (), (), ctx, keep)
    assert isinstance(pruned, dict)
    return pruned
