"""Field paths and field sets in the FieldsV1 notation of ``metadata.managedFields``.

Why the serialized element strings are the path elements: FieldsV1 *is* a trie of these strings
(``f:spec`` → ``f:replicas``, ``k:{"name":"c"}``, ``v:"x"``, ``.`` marking a node that is owned
itself), so keeping them as-is makes decoding and encoding a plain tree walk and makes paths
hashable tuples that Python sets handle well.  The schema decides which element a list item
gets; that lives in ``managed_fields``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["Path", "decode_fields_v1", "decode_fields_v1_cached", "encode_fields_v1", "field_element", "key_element",
           "path_string", "prefixes", "value_element"]

Path = tuple[str, ...]


def field_element(name: str) -> str:
    return "f:" + name


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _scalar_json(value: Any) -> str:
    """Compact JSON for a key value; the common plain strings and integers skip ``json.dumps``."""
    if isinstance(value, str):
        if value.isprintable() and '"' not in value and "\\" not in value:
            return '"' + value + '"'
    elif isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return _json(value)


def key_element(keys: Mapping[str, Any]) -> str:
    """``k:{"containerPort":80,"protocol":"TCP"}``: the item's key fields, sorted by name."""
    names = sorted(keys)
    return "k:{" + ",".join(_scalar_json(name) + ":" + _scalar_json(keys[name]) for name in names) + "}"


def value_element(value: Any) -> str:
    return "v:" + _scalar_json(value)


def index_element(index: int) -> str:
    return f"i:{index}"


def _element_rank(element: str) -> tuple[int, str]:
    return ({"f": 0, "k": 1, "v": 2, "i": 3}.get(element[:1], 4), element)


_CACHE_LIMIT = 4096
_ENCODED: dict[frozenset[Path], dict[str, Any]] = {}
_DECODED: dict[int, tuple[Any, frozenset[Path]]] = {}


def encode_fields_v1(paths: Iterable[Path]) -> dict[str, Any]:
    """The FieldsV1 object for a set of owned paths (children sorted: fields, keys, values, indexes).

    Results for a frozenset are memoised and shared: treat them as immutable.
    """
    if isinstance(paths, frozenset):
        found = _ENCODED.get(paths)
        if found is None:
            if len(_ENCODED) >= _CACHE_LIMIT:
                _ENCODED.clear()
            found = _ENCODED[paths] = _encode(paths)
        return found
    return _encode(paths)


def decode_fields_v1_cached(fields: Any) -> frozenset[Path]:
    """``decode_fields_v1`` memoised by object identity: stored objects are immutable and share
    their managedFields from write to write, so the same FieldsV1 object comes back again and again."""
    found = _DECODED.get(id(fields))
    if found is not None and found[0] is fields:
        return found[1]
    decoded = frozenset(decode_fields_v1(fields))
    if len(_DECODED) >= _CACHE_LIMIT:
        _DECODED.clear()
    _DECODED[id(fields)] = (fields, decoded)  # holding `fields` keeps its id from being reused
    return decoded


def _encode(paths: Iterable[Path]) -> dict[str, Any]:
    root: dict[str, Any] = {}
    members: set[int] = set()
    for path in paths:
        node = root
        for element in path:
            node = node.setdefault(element, {})
        members.add(id(node))

    def render(node: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if id(node) in members and node:
            out["."] = {}
        for element in sorted(node, key=_element_rank):
            out[element] = render(node[element])
        return out

    return render(root)


def decode_fields_v1(fields: Any) -> set[Path]:
    """The owned paths in a FieldsV1 object; raises ``ValueError`` for something that is not one."""
    out: set[Path] = set()

    def walk(node: Any, prefix: Path) -> None:
        if not isinstance(node, Mapping):
            raise ValueError(f"FieldsV1 node at {path_string(prefix) or '.'} is not an object")
        if not node and prefix:
            out.add(prefix)
            return
        for element, child in node.items():
            if element == ".":
                if prefix:
                    out.add(prefix)
                continue
            if not isinstance(element, str) or element[:2] not in ("f:", "k:", "v:", "i:"):
                raise ValueError(f"unknown FieldsV1 element {element!r}")
            walk(child, (*prefix, element))

    walk(fields, ())
    return out


def path_string(path: Path) -> str:
    """The apiserver's rendering of a field path: ``.spec.containers[name="c"].image``."""
    parts: list[str] = []
    for element in path:
        kind, body = element[:2], element[2:]
        if kind == "f:":
            parts.append("." + body)
        elif kind == "k:":
            try:
                keys = json.loads(body)
            except ValueError:
                parts.append("[" + body + "]")
                continue
            parts.append("[" + ",".join(f"{name}={_json(keys[name])}" for name in sorted(keys)) + "]")
        elif kind == "v:":
            parts.append("[=" + body + "]")
        else:
            parts.append("[" + body + "]")
    return "".join(parts)


def prefixes(paths: Iterable[Path]) -> set[Path]:
    """Every path and every proper prefix of it (the empty root path excluded)."""
    out: set[Path] = set()
    for path in paths:
        for end in range(len(path), 0, -1):
            prefix = path[:end]
            if prefix in out:
                break
            out.add(prefix)
    return out
