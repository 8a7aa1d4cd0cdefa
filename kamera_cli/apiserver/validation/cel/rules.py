"""CRD ``x-kubernetes-validations``: CEL rules evaluated with cel-python (an optional extra).

Why a maintained CEL implementation: controllers that rely on their CRDs' CEL rules must see the
same refusals as on a cluster, and CEL's semantics (types, overloads, errors) are too subtle to
re-implement.  cel-python (module ``celpy``) is an optional extra (``pip install 'kamera-cli[cel]'``):
without it a CRD that declares rules is refused (``validation/crd.py``), never checked unenforced.

Upstream: staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/validation.go
(``Validator.validateExpressions``): each rule runs with ``self`` bound to the value of the node that
declares it; a transition rule (one naming ``oldSelf``) runs only on update and only where the old
object has a value at the same place; a false result is ``field.Invalid(path, <the node's type>,
message)`` (or the rule's ``reason``), the message being ``message``, the result of
``messageExpression``, or ``failed rule: <rule>``; an evaluation error is reported as
``<error> evaluating rule: <rule>``.  Items of ``listType: map`` lists meet the old item with the same
keys (``MakeMapList``).  Rules are compiled once per schema node, with the Kubernetes CEL libraries
(``validation/cel/library.py``) as extra functions and the macros cel-python lacks
(``validation/cel/macros.py``) in its evaluator.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping
from typing import Any

from kamera_cli.apiserver.validation import field_errors as F
from kamera_cli.apiserver.validation.cel.ext import namespaces, optional, rewrite_optional_syntax
from kamera_cli.apiserver.validation.cel.library import library
from kamera_cli.apiserver.validation.cel.macros import environment, macro_error
from kamera_cli.apiserver.validation.field_errors import Cause

celpy: Any
try:
    celpy = importlib.import_module("celpy")
except ImportError:  # the optional extra is absent: CRDs with rules are refused (validation/crd.py)
    celpy = None

_OLD_SELF = re.compile(r"\boldSelf\b")
_PROGRAMS: dict[tuple[int, str], tuple[Any, Any]] = {}
_LIBRARY: dict[str, Any] = {}


def available() -> bool:
    return celpy is not None


def compile_error(rule: str) -> str | None:
    """Why a rule does not compile (None when it does, or when CEL is not available)."""
    if celpy is None:
        return None
    try:
        tree = celpy.Environment().compile(rewrite_optional_syntax(rule))
    except Exception as exc:  # celpy raises its own parse/compile errors
        return str(exc).strip().splitlines()[0]
    return macro_error(tree)


def _program(node: Mapping[str, Any], text: str) -> Any:
    key = (id(node), text)
    hit = _PROGRAMS.get(key)
    if hit is None or hit[0] is not node:
        if not _LIBRARY:
            _LIBRARY.update(library(celpy))
        env = environment(celpy)
        hit = (node, env.program(env.compile(rewrite_optional_syntax(text)), functions=_LIBRARY))
        _PROGRAMS[key] = hit
    return hit[1]


def _type_of(node: Mapping[str, Any]) -> str:
    if node.get("x-kubernetes-int-or-string"):
        return "integer"  # as the structural schema reports it
    return str(node.get("type") or "object")


def validate(obj: Any, old: Any, schema: Mapping[str, Any]) -> list[Cause]:
    """The causes of every failed rule in ``obj`` (``old``: the stored object on update, else None)."""
    if celpy is None:
        return []
    out: list[Cause] = []
    _walk(obj, old, schema, "", out, root=True)
    return out


def _walk(value: Any, old: Any, node: Mapping[str, Any], path: str, out: list[Cause], root: bool = False) -> None:
    if value is None:
        return
    if isinstance(value, dict):
        found = node.get("properties")
        props: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        extra = node.get("additionalProperties")
        for key, child in value.items():
            if root and key in ("apiVersion", "kind", "metadata"):
                continue
            sub = props.get(key) if key in props else (extra if isinstance(extra, Mapping) else None)
            if isinstance(sub, Mapping):
                before = old.get(key) if isinstance(old, dict) else None
                _walk(child, before, sub, f"{path}.{key}" if path else key, out)
    elif isinstance(value, list) and isinstance(node.get("items"), Mapping):
        olds = _correlated(node, old)
        for i, item in enumerate(value):
            _walk(item, olds(item), node["items"], f"{path}[{i}]", out)
    rules = node.get("x-kubernetes-validations")
    if isinstance(rules, list):
        for rule in rules:
            if isinstance(rule, Mapping) and isinstance(rule.get("rule"), str):
                _check(rule, value, old, node, path, out)


def _correlated(node: Mapping[str, Any], old: Any) -> Any:
    """The old item each new list item is compared with (``MakeMapList``): by the map keys of a
    ``x-kubernetes-list-type: map`` list; items of other lists are not correlated (no ``oldSelf``)."""
    keys = node.get("x-kubernetes-list-map-keys")
    if node.get("x-kubernetes-list-type") != "map" or not isinstance(keys, list) or not isinstance(old, list):
        return lambda _item: None
    by_key = {tuple(repr(o.get(k)) for k in keys): o for o in old if isinstance(o, dict)}
    return lambda item: by_key.get(tuple(repr(item.get(k)) for k in keys)) if isinstance(item, dict) else None


def _check(rule: Mapping[str, Any], value: Any, old: Any, node: Mapping[str, Any], path: str,
           out: list[Cause]) -> None:
    text = rule["rule"]
    transition = bool(_OLD_SELF.search(text))
    if transition and old is None and not rule.get("optionalOldSelf"):
        return  # a transition rule only runs when there is an old value to compare with
    if not _LIBRARY:
        _LIBRARY.update(library(celpy))
    activation = {**namespaces(_LIBRARY), "self": celpy.json_to_cel(_strip_root(value, path))}
    if transition and rule.get("optionalOldSelf"):  # oldSelf is an optional, empty on create
        present = old is not None
        activation["oldSelf"] = optional(celpy, celpy.json_to_cel(_strip_root(old, path)) if present else None,
                                         present)
    elif transition:
        activation["oldSelf"] = celpy.json_to_cel(_strip_root(old, path))
    where = _rule_path(path, rule.get("fieldPath"))
    try:
        result = _program(node, text).evaluate(activation)
    except Exception as exc:  # CELEvalError and friends: the evaluation failed
        out.append(F.invalid(where, _type_of(node), f"{_reason_text(exc)} evaluating rule: {text}"))
        return
    if type(result).__name__ in ("BoolType", "bool") and bool(result):
        return
    message = _message(rule, node, activation)
    reason = rule.get("reason") or "FieldValueInvalid"
    if reason == "FieldValueRequired":
        out.append(F.required(where, message))
    elif reason == "FieldValueForbidden":
        out.append(F.forbidden(where, message))
    elif reason == "FieldValueDuplicate":
        out.append(F.duplicate(where, _type_of(node)))
    else:
        out.append(F.invalid(where, _type_of(node), message))


def _message(rule: Mapping[str, Any], node: Mapping[str, Any], activation: dict[str, Any]) -> str:
    expression = rule.get("messageExpression")
    if isinstance(expression, str) and expression:
        try:
            text = _program(node, expression).evaluate(activation)
            if isinstance(text, str) and text.strip():
                return str(text).strip()
        except Exception:  # a failing messageExpression falls back to message (upstream logs it)
            pass
    if rule.get("message"):
        return str(rule["message"]).strip()
    return f"failed rule: {rule['rule']}"


def _reason_text(exc: Exception) -> str:
    args = getattr(exc, "args", ())
    return str(args[0]) if args else str(exc)


def _strip_root(value: Any, path: str) -> Any:
    """At the root, ``self`` is the object without its metadata beyond name and generateName."""
    if path or not isinstance(value, dict):
        return value
    out = dict(value)
    meta = out.get("metadata")
    if isinstance(meta, dict):
        out["metadata"] = {k: v for k, v in meta.items() if k in ("name", "generateName")}
    return out


def _rule_path(path: str, field_path: Any) -> str:
    """The error's field: the node's path (``<nil>`` at the root, as Go prints a nil path) plus ``fieldPath``."""
    if isinstance(field_path, str) and field_path:
        suffix = field_path if field_path.startswith(("[", ".")) else f".{field_path}"
        return (path + suffix).lstrip(".")
    return path or "<nil>"
