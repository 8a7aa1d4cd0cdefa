"""Where a node sits, said the way a reader names it: ``ConfigMap shop/app-copy .data.shard-c``.

Why: queries report RFC 9535 normalized paths (``$['items'][6]['data']['shard-c']``), exact but
unreadable: the index of an object in the state document says nothing to someone who knows their
cluster by kinds and names. Reports name the object and the field path inside it; the normalized path
is kept where tools read it (a counterexample's selected nodes in the JSON result).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kamera_cli.model.objects import ObjectRef

_SEGMENT = re.compile(r"\[(?:(-?\d+)|'((?:[^'\\]|\\.)*)')\]")
_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "/": "/", "\\": "\\", "'": "'", '"': '"'}
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def _unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            code = text[i + 1]
            if code == "u" and i + 6 <= len(text):
                out.append(chr(int(text[i + 2 : i + 6], 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(code, code))
            i += 2
            continue
        out.append(char)
        i += 1
    return "".join(out)


def path_parts(normalized: str) -> tuple[str | int, ...] | None:
    """``$['items'][0]['data']`` as ``("items", 0, "data")``; None for anything else."""
    if not normalized.startswith("$"):
        return None
    parts: list[str | int] = []
    position = 1
    for match in _SEGMENT.finditer(normalized, 1):
        if match.start() != position:
            return None
        index, name = match.groups()
        parts.append(int(index) if index is not None else _unescape(name))
        position = match.end()
    return tuple(parts) if position == len(normalized) else None


def field_path(parts: tuple[str | int, ...], *, plain: re.Pattern[str] = _PLAIN_KEY) -> str:
    """``("data", "shard-c")`` as ``.data.shard-c``; a key that is not ``plain`` is quoted (``['a.b']``)."""
    out = []
    for part in parts:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif plain.fullmatch(part):
            out.append(f".{part}")
        else:
            escaped = part.replace("\\", "\\\\").replace("'", "\\'")
            out.append(f"['{escaped}']")
    return "".join(out)


def object_ref(node: Any) -> ObjectRef | None:
    """The object ``node`` is, when it is a Kubernetes object (a kind and a metadata.name)."""
    if isinstance(node, Mapping):
        meta = node.get("metadata")
        if isinstance(node.get("kind"), str) and isinstance(meta, Mapping) and isinstance(meta.get("name"), str):
            return ObjectRef.of(node)
    return None


def locate(normalized: str, document: Any) -> tuple[str, ObjectRef | None]:
    """A node's place for a reader, and the object it is or lies in (None outside any object).

    ``$['items'][6]['data']['shard-c']`` -> ``ConfigMap shop/app-copy .data.shard-c``; a path outside
    the objects (``$['external']['aws'][0]``) reads ``$.external.aws[0]``; one that is not a
    normalized path is returned as it is.
    """
    parts = path_parts(normalized)
    if parts is None:
        return normalized, None
    if len(parts) >= 2 and parts[0] == "items" and isinstance(parts[1], int) and isinstance(document, Mapping):
        items = document.get("items")
        if isinstance(items, list) and 0 <= parts[1] < len(items):
            ref = object_ref(items[parts[1]])
            if ref is not None:
                inside = field_path(parts[2:])
                return (f"{ref.kind} {ref.key} {inside}" if inside else f"{ref.kind} {ref.key}"), ref
    return "$" + field_path(parts), None
