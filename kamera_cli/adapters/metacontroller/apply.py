"""metacontroller's "dynamic apply": a three-way merge against its own last-applied annotation.

Why re-implemented rather than mapped onto server-side apply or kubectl's strategic merge:
metacontroller's default apply strategy (``pkg/dynamic/apply/apply.go``, ``pkg/controller/common/
manage_children.go``, v4.17) is neither.  It keeps what it last applied in the annotation
``metacontroller.k8s.io/last-applied-configuration`` and merges the hook's desired object into the
observed one field by field: a field it applied before and no longer desires is removed, a field
someone else set and it never applied is kept, lists of objects that share a known key (``name``,
``port``, ``containerPort``, ``mountPath``, ``uid``, ``ip``, ``path``) are merged item by item, any
other list or scalar is replaced.  Which children get written at all, and the bugs that come from
fields a hook stops returning, depend on exactly this merge.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

__all__ = ["LAST_APPLIED", "apply_update", "get_last_applied", "merge", "set_last_applied"]

#: metacontroller's own last-applied annotation (not kubectl's)
LAST_APPLIED = "metacontroller.k8s.io/last-applied-configuration"

#: the list item keys metacontroller recognises as merge keys, in its order of preference
KNOWN_MERGE_KEYS = ("containerPort", "port", "mountPath", "name", "uid", "ip", "path")

#: ObjectMeta fields the server owns: an update never changes them (``objectMetaSystemFields``)
SYSTEM_FIELDS = ("selfLink", "uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
                 "deletionGracePeriodSeconds", "managedFields")


class ApplyError(ValueError):
    """The last-applied annotation cannot be read (metacontroller's error for that child)."""


def get_last_applied(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """The object's last-applied configuration, or None when it has none (or it is empty)."""
    text = ((obj.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED) or ""
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ApplyError(f"can't unmarshal {LAST_APPLIED!r} annotation: {exc}") from None
    if not isinstance(value, dict):
        raise ApplyError(f"can't unmarshal {LAST_APPLIED!r} annotation: not an object")
    return value


#: what Go's json.Marshal escapes beyond what Python's json does (HTML characters, JS line separators)
_GO_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028",
                             "\u2029": "\\u2029"})


def go_json(value: Any) -> str:
    """``json.Marshal`` of a map: keys sorted, no spaces, UTF-8 kept, HTML characters escaped."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).translate(_GO_ESCAPES)


def set_last_applied(obj: dict[str, Any], applied: Mapping[str, Any]) -> None:
    """Record ``applied`` in the annotation, as text identical to what metacontroller writes."""
    text = go_json(applied)
    metadata = obj.setdefault("metadata", {})
    annotations = metadata.get("annotations")
    if not isinstance(annotations, dict):
        annotations = {}
        metadata["annotations"] = annotations
    annotations[LAST_APPLIED] = text


def merge(observed: Mapping[str, Any], last_applied: Mapping[str, Any] | None,
          desired: Mapping[str, Any]) -> dict[str, Any]:
    """``desired`` merged into a copy of ``observed``, given what was ``last_applied`` (``apply.Merge``)."""
    destination = copy.deepcopy(dict(observed))
    _merge("", destination, last_applied, desired)
    return destination


def _merge(path: str, destination: Any, last: Any, desired: Any) -> Any:
    # Go's type assertions in apply.go leave a nil map/slice when the value has another type, and
    # the nil check after them never fires: a desired (or last-applied) value of another type than
    # the observed one counts as absent, so the observed map or list is kept.  Reproduced as is.
    if isinstance(destination, dict):
        return _merge_object(path, destination, last if isinstance(last, dict) else None,
                             desired if isinstance(desired, dict) else None)
    if isinstance(destination, list):
        return _merge_list(path, destination, last if isinstance(last, list) else None,
                           desired if isinstance(desired, list) else None)
    return copy.deepcopy(desired)


def _merge_object(path: str, destination: dict[str, Any], last: Mapping[str, Any] | None,
                  desired: Mapping[str, Any] | None) -> dict[str, Any]:
    last = last or {}
    desired = desired or {}
    for key in list(last):
        if key not in desired:
            destination.pop(key, None)  # applied before, not desired any more: removed
    for key in sorted(desired):  # Go ranges a map in random order; the result does not depend on it
        destination[key] = _merge(f"{path}[{key}]", destination.get(key), last.get(key), desired[key])
    return destination


def _merge_list(path: str, destination: list[Any], last: list[Any] | None, desired: list[Any] | None) -> Any:
    key = _list_map_key(destination, last or [], desired or [])
    if not key:
        return copy.deepcopy(desired)
    dest_map = _list_map(key, destination)
    _merge_object(path, dest_map, _list_map(key, last or []), _list_map(key, desired or []))
    out: list[Any] = []
    added: set[str] = set()
    for item in destination:  # observed order first, then what is new, in desired order
        name = _key_text(item[key])
        if name in dest_map and name not in added:
            out.append(dest_map[name])
            added.add(name)
    for item in desired or []:
        name = _key_text(item[key])
        if name not in added:
            out.append(dest_map[name])
            added.add(name)
    return out


def _list_map(key: str, items: list[Any]) -> dict[str, Any]:
    return {_key_text(item[key]): item for item in items}


def _key_text(value: Any) -> str:
    """Go's ``fmt.Sprintf("%v")`` for the JSON values a merge key can hold."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _list_map_key(*lists: list[Any]) -> str:
    """The known merge key every item of every list has, or "" (lists of scalars are replaced)."""
    common: set[str] | None = None
    for items in lists:
        for item in items:
            if not isinstance(item, dict):
                return ""
            common = set(item) if common is None else common & set(item)
    for key in KNOWN_MERGE_KEYS:
        if common and key in common:
            return key
    return ""


def apply_update(observed: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any]:
    """What metacontroller would write to update ``observed`` towards ``desired`` (``ApplyUpdate``).

    The desired object minus the annotation is merged into the observed one against the observed
    object's last-applied configuration; server-owned metadata and ``.status`` are put back as
    observed; the new last-applied configuration is the desired object (minus the annotation).
    """
    last = get_last_applied(observed)
    update = copy.deepcopy(dict(desired))
    annotations = (update.get("metadata") or {}).get("annotations")
    if isinstance(annotations, dict) and LAST_APPLIED in annotations:
        del annotations[LAST_APPLIED]
    result = merge(observed, last, update)
    observed_meta = observed.get("metadata") or {}
    result_meta = result.setdefault("metadata", {})
    for name in SYSTEM_FIELDS:
        if name in observed_meta:
            result_meta[name] = copy.deepcopy(observed_meta[name])
        else:
            result_meta.pop(name, None)
    if "status" in observed:
        result["status"] = copy.deepcopy(observed["status"])
    else:
        result.pop("status", None)
    set_last_applied(result, update)
    return result
