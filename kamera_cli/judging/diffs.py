"""Compact diffs between two versions of an object, for counterexample stories.

Why our own: stories need small, stable, readable diffs (JSON Pointer paths, old → new), without
server bookkeeping (resourceVersion, managedFields) that changes on every write and says nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kamera_cli.model.result import DiffEntry

_NOISE = {("metadata", "resourceVersion"), ("metadata", "managedFields")}
#: server-assigned fields that say nothing in the story of a creation
_CREATION_NOISE = _NOISE | {("metadata", "uid"), ("metadata", "creationTimestamp"), ("apiVersion",), ("kind",),
                            ("metadata", "name"), ("metadata", "namespace"), ("metadata", "generation")}


def _escape(part: str) -> str:
    return part.replace("~", "~0").replace("/", "~1")


def diff(old: Any, new: Any, *, limit: int = 40) -> tuple[DiffEntry, ...]:
    out: list[DiffEntry] = []
    _walk(old, new, (), out)
    return tuple(out[:limit])


def created(new: Any, *, limit: int = 40) -> tuple[DiffEntry, ...]:
    """The content of a new object as added leaves (maps flattened), without server-assigned noise."""
    out: list[DiffEntry] = []
    _leaves(new, (), out)
    return tuple(out[:limit])


def created_as_sent(new: Any, sent: Mapping[str, Any], *, limit: int = 40) -> tuple[tuple[DiffEntry, ...], int]:
    """What the writer put in a new object, and how many more leaves the server filled in (defaults).

    Why: a created Deployment carries dozens of defaulted fields; the story should show what the
    controller wrote and fold the rest into a count.
    """
    out: list[DiffEntry] = []
    _leaves(new, (), out)
    mine = [e for e in out if _sent_has(sent, e.path)]
    return tuple(mine[:limit]), len(out) - len(mine)


def _sent_has(sent: Any, pointer: str) -> bool:
    node = sent
    for raw in pointer.split("/")[1:]:
        key = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return False
    return True


def _leaves(value: Any, path: tuple[str, ...], out: list[DiffEntry]) -> None:
    if path in _CREATION_NOISE:
        return
    if isinstance(value, Mapping) and value:
        for key in sorted(value, key=str):
            _leaves(value[key], (*path, str(key)), out)
        return
    out.append(DiffEntry("add", _pointer(path), new=value))


def _walk(old: Any, new: Any, path: tuple[str, ...], out: list[DiffEntry]) -> None:
    if path in _NOISE:
        return
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for key in sorted(set(old) | set(new), key=str):
            sub = (*path, str(key))
            if sub in _NOISE:
                continue
            if key not in new:
                out.append(DiffEntry("remove", _pointer(sub), old=old[key]))
            elif key not in old:
                out.append(DiffEntry("add", _pointer(sub), new=new[key]))
            elif old[key] != new[key]:
                _walk(old[key], new[key], sub, out)
        return
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new)):
            if a != b:
                _walk(a, b, (*path, str(i)), out)
        return
    if old != new:
        out.append(DiffEntry("replace", _pointer(path), old=old, new=new))


def _pointer(path: tuple[str, ...]) -> str:
    return "/" + "/".join(_escape(p) for p in path) if path else ""
