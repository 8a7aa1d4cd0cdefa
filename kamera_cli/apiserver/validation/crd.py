"""Custom resources: structural pruning, defaulting and openAPIV3Schema validation.

Why the order prune → default → validate: it is the real apiserver's order, and it decides what a
controller reads back (an unknown status field silently vanishing is a classic bug, kopf #574).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

import jsonschema

from kamera_cli.apiserver.errors import cause
from kamera_cli.apiserver.validation.cel import rules as cel
from kamera_cli.apiserver.validation.formats import check_formats

_COMPILED: dict[int, tuple[Mapping[str, Any], Any]] = {}
_ROOT_KEEP = ("apiVersion", "kind", "metadata")


def _to_jsonschema(node: Any, root: bool = False) -> Any:
    """OpenAPI v3 (Kubernetes dialect) → a draft-4 JSON Schema jsonschema can check."""
    if isinstance(node, list):
        return [_to_jsonschema(n) for n in node]
    if not isinstance(node, Mapping):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key.startswith("x-kubernetes-") or key in ("default", "example", "description", "nullable", "format"):
            continue
        if key in ("properties", "patternProperties", "definitions"):
            out[key] = {k: _to_jsonschema(v) for k, v in value.items()}
        elif key in ("items", "additionalProperties", "not", "allOf", "anyOf", "oneOf"):
            out[key] = _to_jsonschema(value)
        else:
            out[key] = value
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
    if node.get("x-kubernetes-embedded-resource"):
        out["required"] = sorted({*out.get("required", []), "apiVersion", "kind"})
        props = out.setdefault("properties", {})
        props.setdefault("apiVersion", {"type": "string"})
        props.setdefault("kind", {"type": "string"})
        props.setdefault("metadata", {"type": "object"})
    if root:
        props = out.get("properties")
        if isinstance(props, dict):
            props.pop("metadata", None)  # metadata is validated by the server itself, as in the real one
    return out


def check_schema(schema: Mapping[str, Any]) -> str | None:
    """A reason the schema is unusable, or None."""
    if schema.get("type") != "object" and not (  # a preserve-unknown-fields root may omit its type
            "type" not in schema and schema.get("x-kubernetes-preserve-unknown-fields") is True):
        return "the root must have type: object"
    try:
        jsonschema.Draft4Validator.check_schema(_to_jsonschema(schema, root=True))
    except jsonschema.SchemaError as exc:
        return f"not a valid schema: {exc.message}"
    return _rule_problem(schema)


def _rule_problem(node: Any) -> str | None:
    """A CEL rule that does not compile (the real server refuses such a CRD), or None."""
    if isinstance(node, list):
        return next((p for p in map(_rule_problem, node) if p), None)
    if not isinstance(node, Mapping):
        return None
    rules = node.get("x-kubernetes-validations") or ()
    if rules and not cel.available():
        # checking without the rules would accept objects a cluster refuses: a verdict the extra decided
        return ("has x-kubernetes-validations (CEL rules), and cel-python, which evaluates them, is not "
                "installed: pip install 'kamera-cli[cel]'")
    for rule in rules:
        problem = cel.compile_error(str(rule.get("rule", ""))) if isinstance(rule, Mapping) else None
        if problem:
            return f"x-kubernetes-validations rule {rule.get('rule')!r} does not compile: {problem}"
    return next((p for v in node.values() if isinstance(v, (Mapping, list)) and (p := _rule_problem(v))), None)


def _validator(schema: Mapping[str, Any]) -> Any:
    hit = _COMPILED.get(id(schema))
    if hit is None or hit[0] is not schema:
        hit = (schema, jsonschema.Draft4Validator(_to_jsonschema(schema, root=True)))
        _COMPILED[id(schema)] = hit
    return hit[1]


def prune(obj: Any, schema: Mapping[str, Any], root: bool = False) -> Any:
    """Drop fields the schema does not declare (unless x-kubernetes-preserve-unknown-fields)."""
    if isinstance(obj, dict):
        props = schema.get("properties")
        additional = schema.get("additionalProperties")
        preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
        embedded = bool(schema.get("x-kubernetes-embedded-resource"))
        out: dict[str, Any] = {}
        for key, value in obj.items():
            if (root or embedded) and key in _ROOT_KEEP:
                out[key] = value
            elif isinstance(props, Mapping) and key in props:
                if value is None and _drops_null(props[key]):
                    continue
                out[key] = prune(value, props[key])
            elif isinstance(additional, Mapping):
                if value is None and _drops_null(additional):
                    continue
                out[key] = prune(value, additional)
            elif preserve or additional is True:
                out[key] = value
        return out
    if isinstance(obj, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            return [prune(v, items) for v in obj]
    return obj


def _drops_null(node: Any) -> bool:
    """``PruneNonNullableNullsWithoutDefaults``: a null where the schema allows none and has no default."""
    return isinstance(node, Mapping) and not node.get("nullable") and "default" not in node


def apply_defaults(obj: Any, schema: Mapping[str, Any]) -> Any:
    """Fill ``default`` values for absent properties of objects that exist (as the real server)."""
    if isinstance(obj, dict):
        props = schema.get("properties")
        if isinstance(props, Mapping):
            for key, sub in props.items():
                if isinstance(sub, Mapping) and "default" in sub and (
                        key not in obj or (obj[key] is None and not sub.get("nullable"))):
                    obj[key] = copy.deepcopy(sub["default"])  # a non-nullable null takes the default too
            for key, value in obj.items():
                sub = props.get(key)
                if isinstance(sub, Mapping):
                    obj[key] = apply_defaults(value, sub)
        additional = schema.get("additionalProperties")
        if isinstance(additional, Mapping):
            for key, value in obj.items():
                if not (isinstance(props, Mapping) and key in props):
                    obj[key] = apply_defaults(value, additional)
    elif isinstance(obj, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            for i, value in enumerate(obj):
                obj[i] = apply_defaults(value, items)
    return obj


def _render(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True) if not isinstance(value, str) else f'"{value}"'


def _field(path: Any) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _list_types(obj: Any, schema: Mapping[str, Any], path: str, out: list[dict[str, str]]) -> None:
    """``x-kubernetes-list-type`` set/map: duplicates are ``Duplicate value`` errors, as in the real server."""
    if isinstance(obj, dict):
        props = schema.get("properties")
        additional = schema.get("additionalProperties")
        for key, value in obj.items():
            sub = props.get(key) if isinstance(props, Mapping) else None
            if sub is None and isinstance(additional, Mapping):
                sub = additional
            if isinstance(sub, Mapping):
                _list_types(value, sub, f"{path}.{key}" if path else key, out)
    elif isinstance(obj, list):
        items = schema.get("items")
        list_type = schema.get("x-kubernetes-list-type")
        keys = schema.get("x-kubernetes-list-map-keys") or ()
        seen: set[str] = set()
        for i, item in enumerate(obj):
            if list_type == "set":
                marker = json.dumps(item, sort_keys=True)
                if marker in seen:
                    out.append(cause("FieldValueDuplicate", f"{path}[{i}]", f"Duplicate value: {_render(item)}"))
                seen.add(marker)
            elif list_type == "map" and isinstance(item, Mapping) and keys:
                key_values = {k: item.get(k) for k in keys}
                marker = json.dumps(key_values, sort_keys=True)
                if marker in seen:
                    out.append(cause("FieldValueDuplicate", f"{path}[{i}]",
                                     f"Duplicate value: {_render(key_values)}"))
                seen.add(marker)
            if isinstance(items, Mapping):
                _list_types(item, items, f"{path}[{i}]", out)


def validate(obj: Mapping[str, Any], schema: Mapping[str, Any], old: Mapping[str, Any] | None = None
             ) -> list[dict[str, str]]:
    """Causes in the real apiserver's shape (``FieldValueRequired`` etc.), sorted by field; then the
    CEL rules (``old``: the stored object on update, for transition rules)."""
    causes: list[dict[str, str]] = []
    _list_types(obj, schema, "", causes)
    check_formats(obj, schema, "", causes)
    for err in _validator(schema).iter_errors(obj):
        where = _field(err.absolute_path)
        if err.validator == "required":
            missing = str(err.message).split("'")[1] if "'" in err.message else ""
            causes.append(cause("FieldValueRequired", f"{where}.{missing}" if where else missing, "Required value"))
        elif err.validator == "type":
            want = err.validator_value
            causes.append(cause("FieldValueTypeInvalid", where,
                                f"Invalid value: {_render(err.instance)}: {where or 'body'} in body must be of type "
                                f"{want if isinstance(want, str) else ' or '.join(want)}: {_render(err.instance)}"))
        elif err.validator == "enum":
            allowed = ", ".join(_render(v) for v in err.validator_value)
            causes.append(cause("FieldValueNotSupported", where,
                                f"Unsupported value: {_render(err.instance)}: supported values: {allowed}"))
        else:
            causes.append(cause("FieldValueInvalid", where, f"Invalid value: {_render(err.instance)}: {err.message}"))
    causes.sort(key=lambda c: (c["field"], c["message"]))
    return causes + cel.validate(obj, old, schema)
