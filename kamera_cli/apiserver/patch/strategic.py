"""Strategic merge patch (``application/strategic-merge-patch+json``), table-driven.

Why our own: no maintained Python implementation exists, and the semantics that controllers
depend on (lists merged by merge key, order kept, the ``$patch`` / ``$retainKeys`` /
``$setElementOrder`` / ``$deleteFromPrimitiveList`` directives) are those of the apiserver's
``strategicpatch.mergeMap`` with ``MergeParallelList`` and ``IgnoreUnmatchedNulls`` on.  This
module follows that algorithm step by step, with the per-field metadata coming from a
``FieldLookup``.  Inputs are never mutated: a map or list is copied shallowly before it changes
and untouched subtrees are shared with the input.  See docs/patching.md for the deviations.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from kamera_cli.apiserver.patch.errors import PatchError, bad_request, invalid
from kamera_cli.apiserver.patch.fieldmeta import FieldLookup, FieldMeta

__all__ = ["strategic_merge_patch"]

_PATCH = "$patch"
_RETAIN = "$retainKeys"
_ORDER = "$setElementOrder/"
_DELETE_PRIMITIVE = "$deleteFromPrimitiveList/"


class _Drop:
    """Marks a new value that a ``$patch: delete`` removes entirely."""


_DROP = _Drop()
_EMPTY: tuple[Any, ...] = ()


def strategic_merge_patch(obj: dict[str, Any], patch: Any, fields: FieldLookup) -> dict[str, Any]:
    """Apply a strategic merge patch to a built-in object; ``obj`` and ``patch`` are not mutated."""
    if not isinstance(obj, dict):
        raise bad_request("invalid JSON document")
    if not isinstance(patch, dict):
        raise bad_request("json: cannot unmarshal a strategic merge patch that is not a JSON object "
                          "into Go value of type map[string]interface {}")
    return _merge_map(obj, patch, (), fields)


def _is_directive(key: str) -> bool:
    return key in (_PATCH, _RETAIN) or key.startswith(_ORDER) or key.startswith(_DELETE_PRIMITIVE)


def _go(value: Any) -> str:
    """Render a value roughly as Go's ``%v`` does in the apiserver's error messages."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{_go(v)}" for k, v in sorted(value.items())) + "]"
    if isinstance(value, list):
        return "[" + " ".join(_go(v) for v in value) + "]"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _no_merge_key(item: Any, merge_key: str) -> PatchError:
    return invalid(f"map: {_go(item)} does not contain declared merge key: {merge_key}")


def _new_value(value: Any) -> Any:
    """A patch value with no counterpart in the original: nulls discarded, directives removed.

    A map carrying ``$patch: delete`` disappears (``_DROP``), as in the apiserver's
    ``removeDirectives``.
    """
    if isinstance(value, dict):
        if value.get(_PATCH) == "delete":
            return _DROP
        out: dict[str, Any] = {}
        for key, item in value.items():
            if item is None or _is_directive(key):
                continue
            cleaned = _new_value(item)
            if cleaned is not _DROP:
                out[key] = cleaned
        return out
    if isinstance(value, list):
        items = [_new_value(item) for item in value]
        return [item for item in items if item is not _DROP]
    return value


def _hkey(value: Any) -> Any:
    """A hashable identity with JSON equality (a boolean never equals a number)."""
    if type(value) is str:
        return value  # the common case; every other kind is a tuple, so no collision
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, (int, float)):
        return ("n", value)
    if isinstance(value, str):
        return ("s", value)
    if value is None:
        return ("z",)
    return ("j", json.dumps(value, sort_keys=True, separators=(",", ":")))


def _item_key(item: Any, merge_key: str | None) -> Any:
    if merge_key is None:
        return _hkey(item)
    if not isinstance(item, dict) or merge_key not in item:
        raise _no_merge_key(item, merge_key)
    return _hkey(item[merge_key])


# -- maps -----------------------------------------------------------------------------------------


def _merge_map(original: dict[str, Any] | None, patch: dict[str, Any], path: tuple[str, ...],
               fields: FieldLookup) -> dict[str, Any]:
    if _PATCH in patch:
        directive = patch[_PATCH]
        if directive == "replace":
            replaced = _new_value({k: v for k, v in patch.items() if k != _PATCH})
            assert isinstance(replaced, dict)
            return replaced
        if directive == "delete":
            return {}
        raise invalid(f"unknown patch type: {_go(directive)} in map: {_go(patch)}")
    result: dict[str, Any] = dict(original) if original else {}
    ordered: set[str] = set()
    if any(key[:1] == "$" for key in patch):
        _apply_map_directives(result, patch, path, fields, ordered)
    for key, value in patch.items():
        if (key[:1] == "$" and _is_directive(key)) or (ordered and key in ordered):
            continue
        sub = (*path, key)
        if value is None:
            result.pop(key, None)
            continue
        current = result.get(key, _EMPTY)
        if isinstance(current, dict) and isinstance(value, dict):
            meta = fields(sub)
            if meta is not None and "replace" in meta.strategies:
                result[key] = _new_value({k: v for k, v in value.items() if k != _PATCH})
            else:
                result[key] = _merge_map(current, value, sub, fields)
        elif isinstance(current, list) and isinstance(value, list):
            result[key] = _merge_list_field(current, value, sub, fields(sub), fields)
        else:
            cleaned = _new_value(value)
            if cleaned is _DROP:
                result.pop(key, None)
            else:
                result[key] = cleaned
    return result


def _apply_map_directives(result: dict[str, Any], patch: dict[str, Any], path: tuple[str, ...],
                          fields: FieldLookup, ordered: set[str]) -> None:
    """``$retainKeys``, then ``$setElementOrder/*`` (merging those lists), then deletion lists."""
    if _RETAIN in patch:
        _apply_retain_keys(result, patch)
    for key, order in patch.items():
        if key.startswith(_ORDER):
            name = key[len(_ORDER):]
            if _set_element_order(result, patch, name, order, (*path, name), fields):
                ordered.add(name)
    for key, value in patch.items():
        if not key.startswith(_DELETE_PRIMITIVE):
            continue
        name = key[len(_DELETE_PRIMITIVE):]
        if not isinstance(value, list):
            raise bad_request("invalid patch format of primitive list")
        current = result.get(name)
        if isinstance(current, list):
            sub = (*path, name)
            meta = fields(sub)
            result[name] = _merge_slice(current, value, sub, meta.merge_key if meta else None, True, fields)


def _apply_retain_keys(result: dict[str, Any], patch: dict[str, Any]) -> None:
    keys = patch[_RETAIN]
    if not isinstance(keys, list):
        raise bad_request("invalid patch format of retainKeys")
    retained = {key for key in keys if isinstance(key, str)}
    for key, value in patch.items():
        if value is None or _is_directive(key):
            continue
        if key not in retained:
            raise bad_request("invalid patch format of retainKeys")
    for key in [k for k in result if k not in retained]:
        del result[key]


# -- lists ----------------------------------------------------------------------------------------


def _merge_list_field(original: list[Any], patch: list[Any], path: tuple[str, ...], meta: FieldMeta | None,
                      fields: FieldLookup) -> list[Any]:
    if meta is not None and "merge" in meta.strategies:
        return _merge_slice(original, patch, path, meta.merge_key, False, fields)
    replaced = _new_value(patch)
    assert isinstance(replaced, list)
    return replaced


def _elements_are_maps(*lists: Iterable[Any]) -> bool:
    kind: bool | None = None
    for values in lists:
        for value in values:
            if isinstance(value, list):
                raise invalid("lists of lists are not supported")
            is_map = isinstance(value, dict)
            if kind is None:
                kind = is_map
            elif kind != is_map:
                raise invalid(f"mismatched types in a list: {_go(value)}")
    return bool(kind)


def _merge_slice(original: list[Any], patch: list[Any], path: tuple[str, ...], merge_key: str | None,
                 is_delete: bool, fields: FieldLookup) -> list[Any]:
    if not original and not patch:
        return original
    if not _elements_are_maps(original, patch):
        if is_delete:
            doomed = {_hkey(v) for v in patch}
            return [v for v in original if _hkey(v) not in doomed]
        merged: list[Any] = []
        seen: set[Any] = set()
        for value in (*original, *patch):
            key = _hkey(value)
            if key not in seen:
                seen.add(key)
                merged.append(value)
        in_patch = {_hkey(v) for v in patch}
        patch_items = [v for v in merged if _hkey(v) in in_patch]
        server_only = [v for v in merged if _hkey(v) not in in_patch]
        return _normalize_element_order(patch_items, server_only, patch, original, None)
    if not merge_key:
        raise invalid(f"cannot merge lists without merge key for {'.'.join(path)}")
    original, patch = _apply_list_directives(original, patch, merge_key)
    merged = _merge_items(original, patch, merge_key, path, fields)
    in_patch = {_item_key(v, merge_key) for v in patch}
    patch_items = []
    server_only = []
    for item in merged:
        (patch_items if _item_key(item, merge_key) in in_patch else server_only).append(item)
    return _normalize_element_order(patch_items, server_only, patch, original, merge_key)


def _apply_list_directives(original: list[Any], patch: list[Any], merge_key: str) -> tuple[list[Any], list[Any]]:
    """Handle ``$patch`` items: delete by merge key, replace the whole list; returns (original, patch)."""
    plain: list[Any] = []
    replace = False
    for item in patch:
        if _PATCH not in item:
            plain.append(item)
            continue
        directive = item[_PATCH]
        if directive == "delete":
            if merge_key not in item:
                raise _no_merge_key(item, merge_key)
            doomed = _hkey(item[merge_key])
            original = [v for v in original
                        if not (isinstance(v, dict) and merge_key in v and _hkey(v[merge_key]) == doomed)]
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise invalid("merging lists cannot yet be specified in the patch")
        else:
            raise invalid(f"unknown patch type: {_go(directive)} in map: {_go(item)}")
    if replace:
        replaced = _new_value(plain)
        assert isinstance(replaced, list)
        return replaced, []
    return original, plain


def _merge_items(original: list[Any], patch: list[Any], merge_key: str, path: tuple[str, ...],
                 fields: FieldLookup) -> list[Any]:
    result = list(original)
    where: dict[Any, int] = {}
    for index, item in enumerate(result):
        if isinstance(item, dict) and merge_key in item:
            where.setdefault(_hkey(item[merge_key]), index)
    for item in patch:
        if merge_key not in item:
            raise _no_merge_key(item, merge_key)
        key = _hkey(item[merge_key])
        found = where.get(key)
        if found is not None:
            result[found] = _merge_map(result[found], item, path, fields)
        else:
            cleaned = _new_value(item)
            if cleaned is not _DROP:
                where[key] = len(result)
                result.append(cleaned)
    return result


# -- ordering -------------------------------------------------------------------------------------


def _normalize_element_order(patch_items: list[Any], server_only: list[Any], patch_order: list[Any],
                             server_order: list[Any], merge_key: str | None) -> list[Any]:
    """Patch items in patch order, server-only items in live order, interleaved by live order.

    As in the apiserver, an item the live list does not know sorts before the server-only items
    it meets, so a merge patch without ``$setElementOrder`` puts new items first.
    """
    patch_items = _normalize_slice_order(patch_items, patch_order, merge_key)
    server_only = _normalize_slice_order(server_only, server_order, merge_key)
    position: dict[Any, int] = {}
    for index, item in enumerate(server_order):
        key = _safe_key(item, merge_key)
        if key is not None:
            position.setdefault(key, index)
    out: list[Any] = []
    i = j = 0
    while i < len(server_only) or j < len(patch_items):
        if i >= len(server_only):
            out.append(patch_items[j])
            j += 1
        elif j >= len(patch_items):
            out.append(server_only[i])
            i += 1
        else:
            left = position.get(_item_key(server_only[i], merge_key))
            right = position.get(_item_key(patch_items[j], merge_key))
            if left is not None and right is not None and left < right:
                out.append(server_only[i])
                i += 1
            else:
                out.append(patch_items[j])
                j += 1
    return out


def _safe_key(item: Any, merge_key: str | None) -> Any:
    if merge_key is None:
        return _hkey(item)
    if isinstance(item, dict) and merge_key in item:
        return _hkey(item[merge_key])
    return None


def _normalize_slice_order(to_sort: list[Any], order: list[Any], merge_key: str | None) -> list[Any]:
    doomed: set[Any] = set()
    position: dict[Any, int] = {}
    for index, item in enumerate(order):
        if merge_key is not None:
            if not isinstance(item, dict) or merge_key not in item:
                raise _no_merge_key(item, merge_key)
            if item.get(_PATCH) == "delete":
                doomed.add(_hkey(item[merge_key]))
                continue
        position.setdefault(_item_key(item, merge_key), index)
    keyed = [(position.get(_item_key(item, merge_key), len(order)), n, item) for n, item in enumerate(to_sort)]
    keyed.sort(key=lambda entry: (entry[0], entry[1]))
    return [item for _, _, item in keyed if merge_key is None or _item_key(item, merge_key) not in doomed]


def _set_element_order(result: dict[str, Any], patch: dict[str, Any], name: str, order: Any,
                       path: tuple[str, ...], fields: FieldLookup) -> bool:
    """Merge the list ``name`` and impose ``$setElementOrder/name``; True when the list was handled."""
    if not isinstance(order, list):
        raise bad_request("invalid patch format of setElementOrder list")
    found_original = name in result
    found_patch = name in patch
    current = result.get(name)
    incoming = patch.get(name)
    if found_original and not isinstance(current, list):
        raise invalid(f"expected a list at {'.'.join(path)}, got {_go(current)}")
    if found_patch and not isinstance(incoming, list):
        raise invalid(f"expected a list in the patch at {'.'.join(path)}, got {_go(incoming)}")
    meta = fields(path)
    merge_key = meta.merge_key if meta is not None and "merge" in meta.strategies else None
    original_list: list[Any] = current if isinstance(current, list) else []
    patch_list: list[Any] = incoming if isinstance(incoming, list) else []
    is_map = _elements_are_maps(original_list, patch_list, order)
    key_name = merge_key if is_map else None
    _validate_order(patch_list, order, key_name)
    if found_original and not found_patch:
        merged = original_list
    elif found_patch and not found_original:
        merged = _new_value(patch_list)
    elif found_patch and found_original:
        merged = _merge_list_field(original_list, patch_list, path, meta, fields)
    else:
        return False
    if is_map and key_name is None:
        raise invalid(f"cannot merge lists without merge key for {'.'.join(path)}")
    in_order = {_safe_key(item, key_name) for item in order}
    patch_items = [v for v in merged if _item_key(v, key_name) in in_order]
    server_only = [v for v in merged if _item_key(v, key_name) not in in_order]
    result[name] = _normalize_element_order(patch_items, server_only, order, original_list, key_name)
    return True


def _validate_order(patch_list: list[Any], order: list[Any], merge_key: str | None) -> None:
    """Every non-delete patch item must appear in the order list, in the same relative order."""
    if not patch_list or not order:
        return
    items = [v for v in patch_list if not (isinstance(v, dict) and _PATCH in v)] if merge_key else patch_list
    p = s = 0
    while p < len(items) and s < len(order):
        if _safe_key(items[p], merge_key) == _safe_key(order[s], merge_key):
            p += 1
        s += 1
    if p < len(items):
        raise invalid(f"The order in patch list:\n{_go(patch_list)}\n doesn't match $setElementOrder list:\n"
                      f"{_go(order)}\n")
