"""Per-field patch metadata (merge keys, patch strategies, list and map types) behind one callable.

Why a callable keyed by a path of field names: strategic merge patch and server-side apply both
walk an object and ask, at each list or map, "how is this field merged?".  Built-in kinds answer
from the compact schema table (``data/builtin.json``), custom resources from their CRD's
``openAPIV3Schema``; the merge code must not care which.  List items are transparent in the path
(``("spec", "containers", "ports")`` is the ports list inside any container), which is all either
algorithm needs and lets each answer be cached once per distinct path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["FieldLookup", "FieldMeta", "builtin_field_lookup", "openapi_field_lookup"]


@dataclass(frozen=True, slots=True)
class FieldMeta:
    """How one field merges.

    ``map_type`` on a *list* field describes its items (e.g. ``ownerReferences`` items are atomic
    maps): a list has no map type of its own, and items are otherwise not addressable by path.
    """

    merge_key: str | None = None  # x-kubernetes-patch-merge-key
    strategies: frozenset[str] = frozenset()  # x-kubernetes-patch-strategy, split on ","
    list_type: str | None = None  # x-kubernetes-list-type: atomic | set | map
    map_keys: tuple[str, ...] = ()  # x-kubernetes-list-map-keys
    map_type: str | None = None  # x-kubernetes-map-type: atomic | granular


FieldLookup = Callable[[tuple[str, ...]], "FieldMeta | None"]

_PLAIN = FieldMeta()


def _strategies(raw: object) -> frozenset[str]:
    if not isinstance(raw, str) or not raw:
        return frozenset()
    return frozenset(part.strip() for part in raw.split(",") if part.strip())


def _keys(raw: object) -> tuple[str, ...]:
    if isinstance(raw, list):
        return tuple(str(k) for k in raw)
    return ()


def _str_or_none(raw: object) -> str | None:
    return raw if isinstance(raw, str) else None


# -- built-in kinds -------------------------------------------------------------------------------

# A position in the walk: ("def", name) inside a definition, ("map", values) at a map key,
# or ("leaf", "") where nothing below has a schema.
_Node = tuple[str, str]

_BUILTIN_CACHE: dict[int, tuple[Mapping[str, Any], dict[str, FieldLookup]]] = {}


def builtin_field_lookup(definitions: Mapping[str, Any], root_definition: str) -> FieldLookup:
    """Lookup over the compact definitions table (see ``scripts/gen_registry.py``); cached per root."""
    held = _BUILTIN_CACHE.get(id(definitions))
    if held is None or held[0] is not definitions:
        held = (definitions, {})  # keeping `definitions` alive keeps its id unique
        _BUILTIN_CACHE[id(definitions)] = held
    lookups = held[1]
    found = lookups.get(root_definition)
    if found is None:
        found = _BuiltinLookup(definitions, root_definition)
        lookups[root_definition] = found
    return found


class _BuiltinLookup:
    __slots__ = ("_cache", "_defs", "_root")

    def __init__(self, definitions: Mapping[str, Any], root: str) -> None:
        self._defs = definitions
        self._root = root
        self._cache: dict[tuple[str, ...], FieldMeta | None] = {}

    def __call__(self, path: tuple[str, ...]) -> FieldMeta | None:
        try:
            return self._cache[path]
        except KeyError:
            pass
        meta = self._resolve(path)
        self._cache[path] = meta
        return meta

    def _def_map_type(self, name: object) -> str | None:
        if isinstance(name, str):
            entry = self._defs.get(name)
            if isinstance(entry, Mapping):
                return _str_or_none(entry.get("mapType"))
        return None

    def _meta(self, prop: Mapping[str, Any]) -> FieldMeta:
        map_type = _str_or_none(prop.get("mapType"))
        if map_type is None:
            target = prop.get("items") if prop.get("type") == "array" else prop.get("ref")
            map_type = self._def_map_type(target)
        meta = FieldMeta(
            merge_key=_str_or_none(prop.get("mergeKey")),
            strategies=_strategies(prop.get("strategy")),
            list_type=_str_or_none(prop.get("listType")),
            map_keys=_keys(prop.get("mapKeys")),
            map_type=map_type,
        )
        return _PLAIN if meta == _PLAIN else meta

    def _next(self, prop: Mapping[str, Any]) -> _Node:
        if prop.get("type") == "array":
            items = prop.get("items")
            return ("def", items) if isinstance(items, str) and items in self._defs else ("leaf", "")
        values = prop.get("values")
        if isinstance(values, str):
            return ("map", values)
        ref = prop.get("ref")
        if isinstance(ref, str) and ref in self._defs:
            return ("def", ref)
        return ("leaf", "")

    def _resolve(self, path: tuple[str, ...]) -> FieldMeta | None:
        node: _Node = ("def", self._root)
        meta: FieldMeta | None = FieldMeta(map_type=self._def_map_type(self._root))
        for segment in path:
            kind, name = node
            if kind == "def":
                entry = self._defs.get(name)
                props = entry.get("properties") if isinstance(entry, Mapping) else None
                prop = props.get(segment) if isinstance(props, Mapping) else None
                if not isinstance(prop, Mapping):
                    return None
                meta = self._meta(prop)
                node = self._next(prop)
            elif kind == "map":
                meta = FieldMeta(map_type=self._def_map_type(name))
                node = ("def", name) if name in self._defs else ("leaf", "")
            else:
                return None
        return meta


# -- custom resources ------------------------------------------------------------------------------


def openapi_field_lookup(schema: Mapping[str, Any]) -> FieldLookup:
    """Lookup over a CRD version's ``openAPIV3Schema`` (structural schema)."""
    cache: dict[tuple[str, ...], FieldMeta | None] = {}

    def lookup(path: tuple[str, ...]) -> FieldMeta | None:
        try:
            return cache[path]
        except KeyError:
            pass
        meta = _resolve_openapi(schema, path)
        cache[path] = meta
        return meta

    return lookup


def _through_items(node: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """List items are transparent: step into ``items`` (repeatedly, for lists of lists)."""
    current: Mapping[str, Any] | None = node
    while isinstance(current, Mapping) and current.get("type") == "array":
        items = current.get("items")
        current = items if isinstance(items, Mapping) else None
    return current


def _openapi_meta(node: Mapping[str, Any]) -> FieldMeta:
    map_type = _str_or_none(node.get("x-kubernetes-map-type"))
    if node.get("type") == "array" and map_type is None:
        items = node.get("items")
        if isinstance(items, Mapping):
            map_type = _str_or_none(items.get("x-kubernetes-map-type"))
    meta = FieldMeta(
        merge_key=_str_or_none(node.get("x-kubernetes-patch-merge-key")),
        strategies=_strategies(node.get("x-kubernetes-patch-strategy")),
        list_type=_str_or_none(node.get("x-kubernetes-list-type")),
        map_keys=_keys(node.get("x-kubernetes-list-map-keys")),
        map_type=map_type,
    )
    return _PLAIN if meta == _PLAIN else meta


# A custom resource's metadata is always the standard ObjectMeta, whatever its CRD schema says (the
# apiserver prunes and merges it with the built-in schema); these are the fields whose merge
# semantics are not plain.
_OBJECT_META_LISTS = {
    "finalizers": FieldMeta(strategies=frozenset({"merge"}), list_type="set"),
    "ownerReferences": FieldMeta(merge_key="uid", strategies=frozenset({"merge"}), list_type="map",
                                 map_keys=("uid",), map_type="atomic"),
    "managedFields": FieldMeta(list_type="atomic"),
}


def _object_meta(rest: tuple[str, ...]) -> FieldMeta:
    if len(rest) == 1:
        return _OBJECT_META_LISTS.get(rest[0], _PLAIN)
    return _PLAIN


def _resolve_openapi(schema: Mapping[str, Any], path: tuple[str, ...]) -> FieldMeta | None:
    if path and path[0] == "metadata":
        return _object_meta(path[1:])
    node: Mapping[str, Any] | None = schema
    meta: FieldMeta | None = _openapi_meta(schema)
    for segment in path:
        node = _through_items(node) if node is not None else None
        if node is None:
            return None
        props = node.get("properties")
        child = props.get(segment) if isinstance(props, Mapping) else None
        if not isinstance(child, Mapping):
            extra = node.get("additionalProperties")
            child = extra if isinstance(extra, Mapping) else None
        if child is None:
            return None
        node = child
        meta = _openapi_meta(child)
    return meta
