"""Server-side apply and managedFields bookkeeping: a documented simplification of
structured-merge-diff (SMD), the library behind the real apiserver's field manager.

What is modelled (see docs/patching.md for the exact differences):

* ownership is a set of field paths per manager (leaves, atomic values, list items keyed by their
  list-map keys or set values), stored in real FieldsV1 notation;
* apply merges the configuration into the live object (maps key by key, ``map`` and ``set`` lists
  item by item in SMD's order, atomic values wholesale), removes what the manager applied last
  time, dropped now, and nobody else owns, and refuses (409) to change a value another manager
  owns unless forced, in which case ownership moves;
* a non-apply write moves every field it added or changed to its manager, and a removed field
  leaves every manager.

List and map semantics come from the ``FieldLookup`` (list type, map keys, map type), falling back
to the patch merge key as the apiserver's schema converter does.  Objects are never mutated.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from kamera_cli.apiserver.fieldmeta import FieldLookup, FieldMeta
from kamera_cli.apiserver.fieldpaths import (
    Path,
    decode_fields_v1,
    encode_fields_v1,
    field_element,
    key_element,
    path_string,
    prefixes,
    value_element,
)
from kamera_cli.apiserver.patch_errors import PatchError, bad_request, invalid
from kamera_cli.apiserver.patch_json import json_equal

__all__ = ["server_side_apply", "update_managed_fields"]

# Fields nobody owns: the apiserver strips them from every field set (its stripMetaManager).
_STRIPPED: frozenset[Path] = frozenset(
    [("f:apiVersion",), ("f:kind",)]
    + [("f:metadata", "f:" + name) for name in ("name", "namespace", "creationTimestamp", "selfLink", "uid",
                                                  "clusterName", "generation", "managedFields", "resourceVersion")]
)
# Top-level maps present in a built-in kind's zero value: adding them records no "." ownership.
_NO_SELF: frozenset[Path] = frozenset([("f:metadata",), ("f:spec",), ("f:status",)])
# Metadata the server owns: an apply configuration cannot change it.
_SERVER_METADATA = ("uid", "resourceVersion", "creationTimestamp", "generation", "selfLink", "managedFields",
                    "deletionTimestamp", "deletionGracePeriodSeconds")


# -- list semantics -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _ListKind:
    kind: str  # "atomic" | "set" | "map"
    keys: tuple[str, ...] = ()
    atomic_items: bool = False


_ATOMIC_LIST = _ListKind("atomic")


def _list_kind(meta: FieldMeta | None) -> _ListKind:
    if meta is None:
        return _ATOMIC_LIST
    atomic_items = meta.map_type == "atomic"
    list_type = meta.list_type
    if list_type == "map":
        keys = meta.map_keys or ((meta.merge_key,) if meta.merge_key else ())
        return _ListKind("map", keys, atomic_items) if keys else _ATOMIC_LIST
    if list_type == "set":
        return _ListKind("set")
    if list_type == "atomic":
        return _ATOMIC_LIST
    if "merge" in meta.strategies:
        if meta.merge_key:
            return _ListKind("map", (meta.merge_key,), atomic_items)
        return _ListKind("set")
    return _ATOMIC_LIST


def _atomic_map(meta: FieldMeta | None) -> bool:
    return meta is not None and meta.map_type == "atomic" and meta.list_type is None


class _Ctx:
    """One operation's schema access: ``FieldLookup`` answers memoised by schema path."""

    __slots__ = ("_fields", "_metas")

    def __init__(self, fields: FieldLookup) -> None:
        self._fields = fields
        self._metas: dict[tuple[str, ...], FieldMeta | None] = {}

    def meta(self, spath: tuple[str, ...]) -> FieldMeta | None:
        try:
            return self._metas[spath]
        except KeyError:
            found = self._fields(spath)
            self._metas[spath] = found
            return found


def _item_element(item: Any, kind: _ListKind, where: Path, index: int, strict: bool) -> str:
    if kind.kind == "set":
        return value_element(item)
    if isinstance(item, dict):
        keys = {name: item[name] for name in kind.keys if name in item and item[name] is not None}
        if keys:
            return key_element(keys)
    if strict:
        raise invalid(f".{path_string(where)[1:]}: associative list with keys has an element that omits key "
                      f"field {kind.keys[0]!r} (and doesn't have default value)",
                      [{"type": "FieldValueRequired", "message": "key field missing",
                        "field": path_string(where)}])
    return f"i:{index}"


def _index_items(items: list[Any], kind: _ListKind, where: Path, strict: bool) -> tuple[list[str], dict[str, Any]]:
    elements: list[str] = []
    observed: dict[str, Any] = {}
    for index, item in enumerate(items):
        element = _item_element(item, kind, where, index, strict)
        if element in observed:
            if strict:
                raise invalid(f".{path_string(where)[1:]}: duplicate entries for key {element[2:]}",
                              [{"type": "FieldValueDuplicate", "message": f"duplicate entries for {element}",
                                "field": path_string(where)}])
        else:
            observed[element] = item
        elements.append(element)
    return elements, observed


# -- field sets -----------------------------------------------------------------------------------


def _config_fields(value: Any, meta: FieldMeta | None, spath: tuple[str, ...], prefix: Path, ctx: _Ctx,
                   out: set[Path]) -> None:
    """SMD's ToFieldSet: leaves, atomic values and list items (not granular maps themselves)."""
    if isinstance(value, dict):
        if prefix and _atomic_map(meta):
            out.add(prefix)
            return
        _config_map_fields(value, spath, prefix, ctx, out)
    elif isinstance(value, list):
        kind = _list_kind(meta)
        if kind.kind == "atomic":
            out.add(prefix)
            return
        elements, _ = _index_items(value, kind, prefix, strict=True)
        for element, item in zip(elements, value):
            item_path = (*prefix, element)
            out.add(item_path)
            if kind.kind == "map" and isinstance(item, dict) and not kind.atomic_items:
                _config_map_fields(item, spath, item_path, ctx, out)
    else:
        out.add(prefix)


def _config_map_fields(value: dict[str, Any], spath: tuple[str, ...], prefix: Path, ctx: _Ctx,
                       out: set[Path]) -> None:
    for name, child in value.items():
        path = (*prefix, field_element(name))
        if path in _STRIPPED:
            continue
        sub = (*spath, name)
        _config_fields(child, ctx.meta(sub), sub, path, ctx, out)


@dataclass(slots=True)
class _Diff:
    added: set[Path]
    modified: set[Path]
    removed: set[Path]  # roots of removed subtrees


def _all_nodes(value: Any, meta: FieldMeta | None, spath: tuple[str, ...], prefix: Path, ctx: _Ctx,
               out: set[Path], item_atomic: bool = False) -> None:
    """Every node of a subtree that appeared (SMD's comparison marks each one added)."""
    if prefix in _STRIPPED:
        return
    if prefix and prefix not in _NO_SELF:
        out.add(prefix)
    if isinstance(value, dict):
        if (prefix and _atomic_map(meta)) or item_atomic:
            return
        for name, child in value.items():
            sub = (*spath, name)
            _all_nodes(child, ctx.meta(sub), sub, (*prefix, field_element(name)), ctx, out)
    elif isinstance(value, list):
        kind = _list_kind(meta)
        if kind.kind == "atomic":
            return
        elements, _ = _index_items(value, kind, prefix, strict=False)
        for element, item in zip(elements, value):
            _all_nodes(item, meta if kind.kind == "map" else None, spath, (*prefix, element), ctx, out,
                       item_atomic=kind.kind == "set" or kind.atomic_items)


def _shape(value: Any) -> str:
    if isinstance(value, dict):
        return "map"
    if isinstance(value, list):
        return "list"
    return "leaf"


def _compare(old: Any, new: Any, meta: FieldMeta | None, spath: tuple[str, ...], prefix: Path, ctx: _Ctx,
             diff: _Diff, item_atomic: bool = False) -> None:
    if old is new or prefix in _STRIPPED:
        return
    shape = _shape(old)
    atomic = (shape == "leaf" or item_atomic or (shape == "map" and prefix != () and _atomic_map(meta))
              or (shape == "list" and _list_kind(meta).kind == "atomic"))
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
            sub = (*spath, name)
            path = (*prefix, field_element(name))
            if name in old:
                _compare(old[name], child, ctx.meta(sub), sub, path, ctx, diff)
            else:
                _all_nodes(child, ctx.meta(sub), sub, path, ctx, diff.added)
        for name in old:
            if name not in new:
                path = (*prefix, field_element(name))
                if path not in _STRIPPED:
                    diff.removed.add(path)
        return
    kind = _list_kind(meta)
    old_elements, old_items = _index_items(old, kind, prefix, strict=False)
    new_elements, new_items = _index_items(new, kind, prefix, strict=False)
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


def _diff(old: dict[str, Any], new: dict[str, Any], ctx: _Ctx) -> _Diff:
    diff = _Diff(set(), set(), set())
    _compare(old, new, None, (), (), ctx, diff)
    return diff


def _without_removed(paths: frozenset[Path], removed: set[Path]) -> frozenset[Path]:
    if not removed:
        return paths
    depth = max(len(p) for p in removed)
    return frozenset(p for p in paths if not any(p[:n] in removed for n in range(1, min(len(p), depth) + 1)))


# -- merging and pruning ------------------------------------------------------------------------


def _merge(live: Any, config: Any, meta: FieldMeta | None, spath: tuple[str, ...], prefix: Path, ctx: _Ctx,
           item_atomic: bool = False) -> Any:
    if isinstance(config, dict):
        if not isinstance(live, dict) or item_atomic or (prefix and _atomic_map(meta)):
            return _without_nulls(config)
        result = dict(live)
        for name, child in config.items():
            if child is None:
                result.pop(name, None)
                continue
            sub = (*spath, name)
            if name in live:
                result[name] = _merge(live[name], child, ctx.meta(sub), sub, (*prefix, field_element(name)), ctx)
            else:
                result[name] = _without_nulls(child)
        return result
    if isinstance(config, list) and isinstance(live, list):
        kind = _list_kind(meta)
        if kind.kind != "atomic":
            return _merge_list(live, config, kind, meta, spath, prefix, ctx)
    return _without_nulls(config)


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _merge_list(live: list[Any], config: list[Any], kind: _ListKind, meta: FieldMeta | None,
                spath: tuple[str, ...], prefix: Path, ctx: _Ctx) -> list[Any]:
    """SMD's list merge: live-only items keep their place, shared and new items follow the config."""
    rhs, observed_rhs = _index_items(config, kind, prefix, strict=True)
    lhs, observed_lhs = _index_items(live, kind, prefix, strict=False)
    item_meta = meta if kind.kind == "map" else None
    atomic_items = kind.kind == "set" or kind.atomic_items

    def merged(element: str) -> Any:
        if element in observed_lhs:
            return _merge(observed_lhs[element], observed_rhs[element], item_meta, spath, (*prefix, element), ctx,
                          atomic_items)
        return _without_nulls(observed_rhs[element])

    shared = [e for e in rhs if e in observed_lhs]
    shared_at = 0
    next_shared = shared[0] if shared else None
    out: list[Any] = []
    done: set[str] = set()
    li = ri = 0
    while li < len(lhs) or ri < len(rhs):
        if li < len(lhs) and ri < len(rhs):
            element = lhs[li]
            if element == rhs[ri]:
                done.add(element)
                out.append(merged(element))
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
                out.append(live[li])
                li += 1
                continue
            if element in done:
                li += 1
                continue
        if ri < len(rhs):
            element = rhs[ri]
            done.add(element)
            out.append(merged(element))
            ri += 1
            if next_shared is not None and next_shared == element:
                shared_at += 1
                next_shared = shared[shared_at] if shared_at < len(shared) else None
    return out


class _Gone:
    pass


_GONE = _Gone()


def _remove(value: Any, doomed: set[Path], reach: set[Path], meta: FieldMeta | None, spath: tuple[str, ...],
            prefix: Path, ctx: _Ctx, keep: set[Path], item_atomic: bool = False) -> Any:
    """``value`` without the subtrees at ``doomed`` (``reach``: their prefixes, to skip the rest);
    granular maps emptied by the removal go too unless someone owns them."""
    if prefix in doomed:
        return _GONE
    if isinstance(value, dict) and not item_atomic:
        result: dict[str, Any] | None = None
        for name, child in value.items():
            path = (*prefix, field_element(name))
            if path not in reach:
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
        kind = _list_kind(meta)
        if kind.kind == "atomic":
            return value
        elements, _ = _index_items(value, kind, prefix, strict=False)
        item_meta = meta if kind.kind == "map" else None
        out: list[Any] = []
        changed = False
        for element, item in zip(elements, value):
            path = (*prefix, element)
            if path not in reach:
                out.append(item)
                continue
            pruned = _remove(item, doomed, reach, item_meta, spath, path, ctx, keep,
                             kind.kind == "set" or kind.atomic_items)
            if pruned is not item:
                changed = True
            if pruned is not _GONE:
                out.append(pruned)
        return out if changed else value
    return value


def _prune(obj: dict[str, Any], doomed: set[Path], ctx: _Ctx, keep: set[Path]) -> dict[str, Any]:
    if not doomed:
        return obj
    pruned = _remove(obj, doomed, prefixes(doomed), None, (), (), ctx, keep)
    assert isinstance(pruned, dict)
    return pruned


# -- managers -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Entry:
    manager: str
    operation: str
    api_version: str
    time: str | None
    subresource: str
    fields: frozenset[Path]

    @property
    def key(self) -> tuple[str, str, str, str]:
        # The apiserver identifies an applier without its apiVersion, an updater with it.
        version = self.api_version if self.operation != "Apply" else ""
        return (self.manager, self.operation, version, self.subresource)

    def describe(self) -> str:
        text = f'"{_go_quote(self.manager)}"'
        if self.subresource:
            text += f' with subresource "{_go_quote(self.subresource)}"'
        if self.operation == "Update":
            text += f" using {self.api_version}"
        return text

    def render(self) -> dict[str, Any]:
        out: dict[str, Any] = {"manager": self.manager, "operation": self.operation, "apiVersion": self.api_version}
        if self.time is not None:
            out["time"] = self.time
        out["fieldsType"] = "FieldsV1"
        out["fieldsV1"] = encode_fields_v1(self.fields)
        if self.subresource:
            out["subresource"] = self.subresource
        return out


def _go_quote(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


_Managers = dict[tuple[str, str, str, str], _Entry]


def _decode_entries(raw: Any) -> _Managers | None:
    """The managers recorded in a managedFields list; None when it is absent, empty or malformed."""
    if not isinstance(raw, list) or not raw:
        return None
    managers: _Managers = {}
    for item in raw:
        if not isinstance(item, Mapping):
            return None
        try:
            fields = frozenset(decode_fields_v1(item.get("fieldsV1", {})))
        except ValueError:
            return None
        manager, operation = item.get("manager", ""), item.get("operation", "")
        time, version, sub = item.get("time"), item.get("apiVersion", ""), item.get("subresource", "")
        if not all(isinstance(x, str) for x in (manager, operation, version, sub)):
            return None
        entry = _Entry(manager, operation, version, time if isinstance(time, str) else None, sub, fields)
        previous = managers.get(entry.key)
        if previous is not None:
            entry = replace(entry, fields=entry.fields | previous.fields)
        managers[entry.key] = entry
    return managers


def _managed(obj: Mapping[str, Any] | None) -> Any:
    if not obj:
        return None
    meta = obj.get("metadata")
    return meta.get("managedFields") if isinstance(meta, Mapping) else None


def _render(managers: _Managers) -> list[dict[str, Any]]:
    entries = [e for e in managers.values() if e.fields]
    entries.sort(key=lambda e: (e.operation, e.time or "", e.manager, e.api_version, e.subresource))
    return [e.render() for e in entries]


def _with_managed_fields(obj: dict[str, Any], rendered: list[dict[str, Any]]) -> dict[str, Any]:
    meta = dict(obj.get("metadata") or {})
    if rendered:
        meta["managedFields"] = rendered
    else:
        meta.pop("managedFields", None)
    out = dict(obj)
    out["metadata"] = meta
    return out


def _strip_managed(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    if isinstance(meta, Mapping) and "managedFields" in meta:
        out = dict(obj)
        out["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
        return out
    return dict(obj)


# -- update ---------------------------------------------------------------------------------------


def update_managed_fields(before: dict[str, Any] | None, after: dict[str, Any], *, manager: str, operation: str,
                          now: str, api_version: str, subresource: str = "",
                          fields: FieldLookup | None = None) -> list[dict[str, Any]]:
    """managedFields after a non-apply write: what the write added or changed moves to ``manager``.

    As in the apiserver, managedFields sent in ``after`` (a client writing them on purpose) are the
    starting point when present; otherwise those of ``before``.  ``[{}]`` resets them to nothing.
    """
    sent = _managed(after)
    if isinstance(sent, list) and len(sent) == 1 and sent[0] == {}:
        return []
    managers = _decode_entries(sent)
    if managers is None:
        managers = _decode_entries(_managed(before)) or {}
    ctx = _Ctx(fields if fields is not None else _no_fields)
    diff = _diff(_strip_managed(before or {}), _strip_managed(after), ctx)
    changed = diff.added | diff.modified
    self_entry = _Entry(manager, operation, api_version, now, subresource, frozenset())
    result: _Managers = {}
    for key, entry in managers.items():
        kept = _without_removed(entry.fields - changed, diff.removed)
        if key == self_entry.key:
            continue
        if kept:
            result[key] = replace(entry, fields=kept)
    previous = managers.get(self_entry.key)
    if changed:
        own = (_without_removed(previous.fields, diff.removed) if previous else frozenset()) | changed
        result[self_entry.key] = replace(self_entry, fields=frozenset(own))
    elif previous is not None:
        kept = _without_removed(previous.fields, diff.removed)
        if kept:
            result[self_entry.key] = replace(previous, fields=kept)
    return _render(result)


def _no_fields(_path: tuple[str, ...]) -> FieldMeta | None:
    return None


# -- apply ----------------------------------------------------------------------------------------


def server_side_apply(live: dict[str, Any] | None, applied: dict[str, Any], *, manager: str, force: bool,
                      fields: FieldLookup, now: str, api_version: str, subresource: str = "") -> dict[str, Any]:
    """The object after ``manager`` applies ``applied`` (``live`` None creates), with managedFields."""
    if not isinstance(applied, dict):
        raise bad_request("the apply configuration must be a YAML or JSON object")
    for required in ("apiVersion", "kind"):
        if not isinstance(applied.get(required), str) or not applied[required]:
            raise bad_request(f"Object '{'Kind' if required == 'kind' else required}' is missing in the apply "
                              "configuration")
    meta = applied.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        raise bad_request("metadata in the apply configuration must be an object")
    if isinstance(meta, dict) and meta.get("managedFields") is not None:
        raise bad_request("metadata.managedFields must be nil")
    ctx = _Ctx(fields)
    config_fields: set[Path] = set()
    _config_fields(applied, None, (), (), ctx, config_fields)
    base = _strip_managed(live) if live is not None else {}
    managers = (_decode_entries(_managed(live)) or {}) if live is not None else {}
    me = _Entry(manager, "Apply", api_version, now, subresource, frozenset(config_fields))
    previous = managers.get(me.key)
    merged = _merge(base, applied, None, (), (), ctx)
    assert isinstance(merged, dict)
    merged = _keep_server_metadata(merged, base)
    managers[me.key] = me
    if previous is not None:
        owned = prefixes(p for e in managers.values() for p in e.fields)
        doomed = {p for p in previous.fields - me.fields if p not in owned}
        merged = _prune(merged, doomed, ctx, owned)
    diff = _diff(base, merged, ctx)
    changed = diff.added | diff.modified
    conflicts: list[tuple[_Entry, Path]] = []
    for key, entry in managers.items():
        if key != me.key:
            conflicts.extend((entry, path) for path in entry.fields & changed)
    if conflicts and not force:
        raise _conflict_error(conflicts)
    result: _Managers = {}
    for key, entry in managers.items():
        if key == me.key:
            # The apiserver stamps the applier's time only when the object changed.
            touched = bool(changed or diff.removed) or previous is None
            result[key] = me if touched or previous is None else replace(me, time=previous.time)
            continue
        kept = _without_removed(entry.fields - changed, diff.removed)
        if kept:
            result[key] = replace(entry, fields=kept)
    return _with_managed_fields(merged, _render(result))


def _keep_server_metadata(merged: dict[str, Any], live: Mapping[str, Any]) -> dict[str, Any]:
    merged_meta = merged.get("metadata")
    if not isinstance(merged_meta, dict):
        return merged
    live_meta = live.get("metadata") if isinstance(live.get("metadata"), Mapping) else {}
    assert isinstance(live_meta, Mapping)
    meta = dict(merged_meta)
    for name in _SERVER_METADATA:
        if name in live_meta:
            meta[name] = live_meta[name]
        else:
            meta.pop(name, None)
    out = dict(merged)
    out["metadata"] = meta
    return out


def _conflict_error(conflicts: Iterable[tuple[_Entry, Path]]) -> PatchError:
    ordered = sorted(conflicts, key=lambda c: (c[0].manager, c[0].key, path_string(c[1])))
    causes = [{"type": "FieldManagerConflict", "message": f"conflict with {entry.describe()}",
               "field": path_string(path)} for entry, path in ordered]
    if len(ordered) == 1:
        entry, path = ordered[0]
        message = f"Apply failed with 1 conflict: conflict with {entry.describe()}: {path_string(path)}"
    else:
        lines: list[str] = []
        current: str | None = None
        for entry, path in ordered:
            who = entry.describe()
            if who != current:
                lines.append(f"conflicts with {who}:")
                current = who
            lines.append(f"- {path_string(path)}")
        message = f"Apply failed with {len(ordered)} conflicts: " + "\n".join(lines)
    return PatchError(409, "Conflict", message, causes)
