"""The managedFields diff of a non-apply write, which runs without a schema: ``patch_ssa``'s
comparison specialised to "no field has list or map semantics" (every list atomic, no atomic map).

Why a separate walk: every create, update and patch diffs the stored object against the new one to
move ownership, and the general comparison asks the (empty) schema lookup, the shape of both sides
and the list kind at every node.  Without a schema those answers are fixed, so this walk only
compares.  It gives exactly what ``patch_ssa.diff_objects`` gives with a lookup that knows no field
(``test_plain_diff.py`` compares them).
"""

from __future__ import annotations

from typing import Any

from kamera_cli.apiserver.patch_fieldsv1 import Path
from kamera_cli.apiserver.patch_json import json_equal
from kamera_cli.apiserver.patch_ssa import _ABSENT, _NO_SELF, _SHALLOW, _STRIPPED, Diff

__all__ = ["diff_plain", "schemaless_nodes"]

_CONTAINERS = (dict, list)
# "f:<name>" per field name, made once: a path element kept has its hash computed once too, and every
# path containing it is hashed into a set.  Names repeat from write to write; forgotten when full.
_ELEMENTS: dict[str, str] = {}


def _element(name: str) -> str:
    if len(_ELEMENTS) >= 4096:
        _ELEMENTS.clear()
    element = _ELEMENTS[name] = "f:" + name
    return element


def schemaless_nodes(value: dict[str, Any], prefix: Path, out: set[Path]) -> None:
    """``_all_nodes`` of each entry of ``value`` when no field has list or map semantics (every list
    atomic): the path of every map entry, down through maps only.  The non-apply write path diffs
    without a schema, and a create adds everything, so this is its whole diff."""
    shallow = len(prefix) < _SHALLOW  # deeper paths are in neither _STRIPPED nor _NO_SELF: no lookups
    for name, child in value.items():
        path = prefix + (_ELEMENTS.get(name) or _element(name),)  # noqa: RUF005 -- concatenation: no list built
        if shallow:
            if path in _STRIPPED:
                continue
            if path not in _NO_SELF:
                out.add(path)
        else:
            out.add(path)
        if isinstance(child, dict) and child:
            schemaless_nodes(child, path, out)


def diff_plain(old: dict[str, Any], new: dict[str, Any]) -> Diff:
    """``diff_objects(old, new, WalkContext(<a lookup that knows no field>))``."""
    diff = Diff(set(), set(), set())
    _compare(old, new, (), diff)
    return diff


def _nodes(value: Any, prefix: Path, out: set[Path]) -> None:
    """``_all_nodes`` without a schema: ``prefix`` itself and, below a map, every entry's path."""
    if len(prefix) <= _SHALLOW:
        if prefix in _STRIPPED:
            return
        if prefix and (len(prefix) > 1 or prefix not in _NO_SELF):
            out.add(prefix)
    else:
        out.add(prefix)
    if isinstance(value, dict):
        schemaless_nodes(value, prefix, out)


def _compare(old: Any, new: Any, prefix: Path, diff: Diff) -> None:
    if old is new or (len(prefix) <= _SHALLOW and prefix in _STRIPPED):
        return
    old_map, new_map = isinstance(old, dict), isinstance(new, dict)
    if old_map != new_map or (not old_map and isinstance(old, list) != isinstance(new, list)):
        diff.removed.add(prefix)  # the shape changed
        _nodes(new, prefix, diff.added)
        return
    if not old_map:  # a leaf or a list: atomic
        if not json_equal(old, new):
            diff.modified.add(prefix)
        return
    shallow = len(prefix) < _SHALLOW
    for name, child in new.items():
        before = old.get(name, _ABSENT)
        if before is child:
            continue
        path = prefix + (_ELEMENTS.get(name) or _element(name),)  # noqa: RUF005 -- concatenation: no list built
        if before is _ABSENT:
            _nodes(child, path, diff.added)
        elif not isinstance(child, _CONTAINERS) and not isinstance(before, _CONTAINERS):
            # Scalar to scalar, the common case.
            if (before != child if type(before) is type(child) else not json_equal(before, child)) and not (
                    shallow and path in _STRIPPED):
                diff.modified.add(path)
        else:
            _compare(before, child, path, diff)
    for name in old:
        if name not in new:
            path = (*prefix, "f:" + name)
            if not (shallow and path in _STRIPPED):
                diff.removed.add(path)
