"""RFC 6902 JSON Patch and RFC 7386 JSON merge patch, copy-on-write.

Why not the ``jsonpatch`` library: it deep-copies the whole document per call, and these run on
the simulated API server's request path.  Here only the containers along each touched path are
copied (shallowly, once per call); every untouched subtree is shared with the input, which is
never mutated.  Atomicity comes for free: a failing operation raises before anything is returned.
"""

from __future__ import annotations

from typing import Any

from kamera_cli.apiserver.patch.errors import PatchError, bad_request, invalid

__all__ = ["create_merge_patch", "json_equal", "json_patch", "merge_patch", "merge_patch_value"]

# The real apiserver answers a JSON Patch that decodes but fails to apply with a generic 422
# whose message is exactly this; the specific reason goes into the single cause.
REJECTED = "the server rejected our request due to an error in our request"


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: like ``==`` but a boolean never equals a number (``True != 1``)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, dict):
        if not isinstance(b, dict) or len(a) != len(b):
            return False
        return all(key in b and json_equal(value, b[key]) for key, value in a.items())
    if isinstance(a, list):
        if not isinstance(b, list) or len(a) != len(b):
            return False
        return all(json_equal(x, y) for x, y in zip(a, b))
    if isinstance(b, (dict, list)):
        return False
    return bool(a == b)


def _deep_copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _deep_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_deep_copy(v) for v in value]
    return value


# -- JSON Patch ------------------------------------------------------------------------------------


class _OpFailed(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _pointer(raw: Any, what: str) -> list[str]:
    if not isinstance(raw, str):
        raise _OpFailed(f"{what} must be a string JSON pointer, got {raw!r}")
    if raw == "":
        return []
    if not raw.startswith("/"):
        raise _OpFailed(f"invalid JSON pointer {raw!r}: must start with '/'")
    return [part.replace("~1", "/").replace("~0", "~") for part in raw[1:].split("/")]


def _index(token: str, length: int, *, allow_end: bool, pointer: str) -> int:
    if token == "-" and allow_end:
        return length
    if not (token.isascii() and token.isdigit()) or (len(token) > 1 and token[0] == "0"):
        raise _OpFailed(f"invalid array index {token!r} in {pointer!r}")
    idx = int(token)
    if idx > length or (idx == length and not allow_end):
        raise _OpFailed(f"array index {idx} out of bounds in {pointer!r}")
    return idx


class _Doc:
    """The working document: containers in ``_own`` were copied by this call and may be mutated."""

    __slots__ = ("_own", "root")

    def __init__(self, root: Any) -> None:
        self.root = root
        # id -> container; holding the container keeps its id from being reused by another object
        self._own: dict[int, Any] = {}

    def _owned(self, value: Any) -> Any:
        if isinstance(value, (dict, list)) and id(value) not in self._own:
            value = value.copy()
            self._own[id(value)] = value
        return value

    def get(self, parts: list[str], pointer: str) -> Any:
        node = self.root
        for token in parts:
            if isinstance(node, dict):
                if token not in node:
                    raise _OpFailed(f"doc is missing path: {pointer!r}")
                node = node[token]
            elif isinstance(node, list):
                node = node[_index(token, len(node), allow_end=False, pointer=pointer)]
            else:
                raise _OpFailed(f"doc is missing path: {pointer!r}")
        return node

    def parent(self, parts: list[str], pointer: str) -> Any:
        """The (owned, mutable) container holding the last token; copies the path on the way."""
        self.root = self._owned(self.root)
        node = self.root
        for token in parts[:-1]:
            if isinstance(node, dict):
                if token not in node:
                    raise _OpFailed(f"doc is missing path: {pointer!r}")
                child = self._owned(node[token])
                node[token] = child
            elif isinstance(node, list):
                idx = _index(token, len(node), allow_end=False, pointer=pointer)
                child = self._owned(node[idx])
                node[idx] = child
            else:
                raise _OpFailed(f"doc is missing path: {pointer!r}")
            node = child
        if not isinstance(node, (dict, list)):
            raise _OpFailed(f"doc is missing path: {pointer!r}")
        return node

    def add(self, parts: list[str], value: Any, pointer: str) -> None:
        if not parts:
            self.root = value
            return
        container = self.parent(parts, pointer)
        token = parts[-1]
        if isinstance(container, dict):
            container[token] = value
        else:
            container.insert(_index(token, len(container), allow_end=True, pointer=pointer), value)

    def remove(self, parts: list[str], pointer: str) -> Any:
        if not parts:
            raise _OpFailed("cannot remove the whole document")
        container = self.parent(parts, pointer)
        token = parts[-1]
        if isinstance(container, dict):
            if token not in container:
                raise _OpFailed(f"unable to remove nonexistent key: {token}: missing value")
            return container.pop(token)
        return container.pop(_index(token, len(container), allow_end=False, pointer=pointer))

    def replace(self, parts: list[str], value: Any, pointer: str) -> None:
        if not parts:
            self.root = value
            return
        container = self.parent(parts, pointer)
        token = parts[-1]
        if isinstance(container, dict):
            if token not in container:
                raise _OpFailed(f"replace operation does not apply: doc is missing key: {pointer}: missing value")
            container[token] = value
        else:
            container[_index(token, len(container), allow_end=False, pointer=pointer)] = value


def _apply_op(doc: _Doc, op: dict[str, Any]) -> None:
    kind = op.get("op")
    path_raw = op.get("path")
    parts = _pointer(path_raw, "path")
    pointer = str(path_raw)
    if kind in ("add", "replace", "test") and "value" not in op:
        raise _OpFailed(f"{kind} operation at {pointer!r} has no value")
    if kind == "add":
        doc.add(parts, op["value"], pointer)
    elif kind == "remove":
        doc.remove(parts, pointer)
    elif kind == "replace":
        doc.replace(parts, op["value"], pointer)
    elif kind in ("move", "copy"):
        if "from" not in op:
            raise _OpFailed(f"{kind} operation at {pointer!r} has no from")
        src = _pointer(op["from"], "from")
        source = str(op["from"])
        if kind == "move":
            if parts[: len(src)] == src and len(parts) > len(src):
                raise _OpFailed(f"cannot move {source!r} into its own child {pointer!r}")
            value = doc.remove(src, source) if src else doc.root
        else:
            # A copy must not alias containers this call may still mutate in place.
            value = _deep_copy(doc.get(src, source))
        doc.add(parts, value, pointer)
    elif kind == "test":
        try:
            current = doc.get(parts, pointer)
        except _OpFailed:
            raise _OpFailed(f"testing value {pointer} failed: test failed") from None
        if not json_equal(current, op["value"]):
            raise _OpFailed(f"testing value {pointer} failed: test failed")
    else:
        raise _OpFailed(f"Unexpected kind: {kind}")


def json_patch(obj: dict[str, Any], ops: Any) -> dict[str, Any]:
    """Apply an RFC 6902 patch atomically; ``obj`` and ``ops`` are never mutated."""
    if not isinstance(ops, list) or not all(isinstance(op, dict) for op in ops):
        raise bad_request("json: cannot unmarshal into Go value of type jsonpatch.Patch: "
                          "a JSON Patch must be a JSON array of operation objects")
    doc = _Doc(obj)
    for number, op in enumerate(ops):
        try:
            _apply_op(doc, op)
        except _OpFailed as exc:
            raise invalid(REJECTED, [{"type": "FieldValueInvalid", "message": exc.message,
                                      "field": f"patch[{number}]"}]) from None
    if not isinstance(doc.root, dict):
        raise PatchError(400, "BadRequest", "the patched document is not a JSON object")
    return doc.root


# -- JSON merge patch -------------------------------------------------------------------------------


def merge_patch_value(target: Any, patch: Any) -> Any:
    """RFC 7386 over any JSON values: objects merge, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            result[key] = merge_patch_value(result.get(key), value)
        else:
            result[key] = value
    return result


def merge_patch(obj: dict[str, Any], patch: Any) -> dict[str, Any]:
    """Apply a JSON merge patch to an object; a patch whose result is not an object is a 400."""
    if patch is None:
        raise bad_request("Invalid JSON Patch")
    result = merge_patch_value(obj, patch)
    if not isinstance(result, dict):
        raise bad_request(f"the merge patch replaces the object with a JSON {type(result).__name__}, "
                          "not an object")
    return result


def create_merge_patch(original: Any, modified: Any) -> Any:
    """The smallest merge patch turning ``original`` into ``modified`` (nulls inside objects of
    ``modified`` cannot be expressed by RFC 7386 and come out as deletions)."""
    if not isinstance(original, dict) or not isinstance(modified, dict):
        return _deep_copy(modified)
    patch: dict[str, Any] = {}
    for key in original:
        if key not in modified:
            patch[key] = None
    for key, value in modified.items():
        if key in original:
            before = original[key]
            if json_equal(before, value):
                continue
            if isinstance(before, dict) and isinstance(value, dict):
                patch[key] = create_merge_patch(before, value)
                continue
        patch[key] = _deep_copy(value)
    return patch
