"""Built-in kinds: required fields, basic types and object names, from the shipped schema table.

Why required fields matter beyond fidelity: the v37 client's pydantic models refuse to deserialise
an object missing a required field, so accepting one would crash the controller later in a way the
real system never does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kamera_cli.apiserver import errors as E
from kamera_cli.apiserver.errors import cause
from kamera_cli.apiserver.registry.kinds import ResourceInfo
from kamera_cli.apiserver.registry.schema_plan import PY_TYPES as _PY_TYPES
from kamera_cli.apiserver.registry.schema_plan import element_zero, has_null, is_zero, needs_prune, typed_ok
from kamera_cli.apiserver.validation import field_errors as F
from kamera_cli.apiserver.validation.quantity import QuantityError, canonicalize, plan_for
from kamera_cli.apiserver.validation.rbac import GROUP as _RBAC
from kamera_cli.apiserver.validation.rbac import KINDS as _RBAC_KINDS
from kamera_cli.apiserver.validation.rbac import path_segment_name
from kamera_cli.model.objects import MAPPING

_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                  "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
                  "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
              "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
              "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
_DNS1035_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
                "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")
#: Kinds whose names must be an RFC 1123 label / a DNS-1035 label (everything else: a subdomain).
_LABEL_KINDS = frozenset({("", "Namespace")})
_DNS1035_KINDS = frozenset({("", "Service")})
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_QUALIFIED = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                        r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")

def _quote(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else repr(value)


def validate_generate_name(group: str, kind: str, prefix: str) -> list[dict[str, str]]:
    """``ValidateObjectMeta``'s check of ``generateName``: the kind's name rule in its prefix form, which
    for DNS names first masks a trailing '-' (``maskTrailingDash`` replaces the last *two* characters
    with an 'a', so the one before the dash is never checked); the bad value shown is the prefix as
    sent."""
    if not prefix:
        return []
    if group == _RBAC and kind in _RBAC_KINDS:  # IsPathSegmentPrefix: only the characters
        return [cause("FieldValueInvalid", "metadata.generateName", f"Invalid value: {_quote(prefix)}: {msg}")
                for msg in path_segment_name(prefix) if msg.startswith("may not contain")]
    masked = prefix[:-2] + "a" if len(prefix) > 1 and prefix.endswith("-") else prefix
    return validate_name(group, kind, masked, "metadata.generateName", shown=prefix)


def validate_name(group: str, kind: str, name: str, field: str = "metadata.name",
                  shown: str | None = None) -> list[dict[str, str]]:
    """The kind's name rule (``shown``: the value to print when ``name`` is a masked prefix)."""
    if group == _RBAC and kind in _RBAC_KINDS:  # ValidateRBACName: a path segment, e.g. "system:auth-delegator"
        return [cause("FieldValueInvalid", field, f"Invalid value: {_quote(name)}: {msg}")
                for msg in path_segment_name(name)]
    printed = name if shown is None else shown
    if (group, kind) in _DNS1035_KINDS:
        regex, msg, limit = _DNS1035, _DNS1035_MSG, 63
    elif (group, kind) in _LABEL_KINDS:
        regex, msg, limit = _LABEL, _LABEL_MSG, 63
    else:
        regex, msg, limit = _SUBDOMAIN, _SUBDOMAIN_MSG, 253
    out = []
    if len(name) > limit:
        out.append(cause("FieldValueInvalid", field, f'Invalid value: "{printed}": must be no more than {limit} '
                                                     "characters"))
    if not regex.match(name):
        out.append(cause("FieldValueInvalid", field, f'Invalid value: "{printed}": {msg}'))
    return out


def validate_metadata(meta: Mapping[str, Any]) -> list[dict[str, str]]:
    """``ValidateObjectMetaAccessor``: labels, annotations (keys and total size), owner references (at
    most one controller) and finalizer names, with upstream's paths and messages."""
    out: list[dict[str, str]] = []
    for key in ("labels", "annotations"):
        values = meta.get(key)
        if values is not None and (not isinstance(values, MAPPING) or
                                   not all(isinstance(v, str) for v in values.values())):
            out.append(cause("FieldValueTypeInvalid", f"metadata.{key}", "Invalid value: must be a map of strings"))
            return out
    out += F.labels_and_annotations(meta.get("labels"), meta.get("annotations"), "metadata")
    out += _owner_references(meta.get("ownerReferences"))
    finalizers = meta.get("finalizers") or []
    if isinstance(finalizers, list):  # ValidateFinalizers
        for fin in finalizers:
            out += F.each_invalid("metadata.finalizers", fin, F.qualified_name(fin) if isinstance(fin, str)
                                  else ["must be a string"])
        if "orphan" in finalizers and "foregroundDeletion" in finalizers:
            out.append(F.invalid("metadata.finalizers", finalizers,
                                 "finalizer orphan and foregroundDeletion cannot be both set"))
    return out


_CHECKED_METADATA = ("labels", "annotations", "ownerReferences", "finalizers")


def metadata_as_checked(name: str, meta: Mapping[str, Any], clean: Mapping[str, Any]) -> bool:
    """Whether ``validate_name`` and ``validate_metadata`` would find nothing in ``name`` and ``meta``
    because the metadata of a clean object (``clean_base``) passed them with the same values.

    Why equality suffices: both checks read only the name and these four entries, and a clean
    object's entries are the ones that passed (pruning only drops unknown or zero fields inside
    owner references, which cannot turn a passing reference into a failing one).  An update keeps
    its object's name, and most writes leave labels, annotations, owners and finalizers as they are.
    """
    if name != clean.get("name"):
        return False
    for key in _CHECKED_METADATA:
        mine = meta.get(key)
        theirs = clean.get(key)
        if mine is not theirs and mine != theirs:
            return False
    return True


def _owner_references(owners: Any) -> list[dict[str, str]]:
    """``ValidateOwnerReferences`` / ``validateOwnerReference``."""
    if owners is None:
        return []
    if not isinstance(owners, list):
        return [cause("FieldValueTypeInvalid", "metadata.ownerReferences", "Invalid value: must be a list")]
    out: list[dict[str, str]] = []
    path = "metadata.ownerReferences"
    controller = ""
    for i, owner in enumerate(owners):
        if not isinstance(owner, MAPPING):
            out.append(cause("FieldValueTypeInvalid", f"{path}[{i}]", "Invalid value: must be an object"))
            continue
        version = str(owner.get("apiVersion") or "").rsplit("/", 1)[-1]
        for key, value, what in (("apiVersion", version, "version"), ("kind", owner.get("kind"), "kind"),
                                 ("name", owner.get("name"), "name"), ("uid", owner.get("uid"), "uid")):
            if not value:
                out.append(F.invalid(f"{path}.{key}", owner.get(key) or "", f"{what} must not be empty"))
        if owner.get("controller") is True:
            current = f"{owner.get('kind')}/{owner.get('name')}"
            if controller:
                out.append(F.invalid(path, owners, "Only one reference can have Controller set to true. Found "
                                                   f'"true" in references for {controller} and {current}'))
            else:
                controller = current
    return out


def canonical_quantities(definitions: Mapping[str, Any], info: ResourceInfo, obj: dict[str, Any],
                         base: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``obj`` with its quantities canonical (quantity.py); a value the decoder refuses is a 400.

    The plan of where quantities sit is computed once per kind; ``base`` as for ``validate_builtin``.
    """
    plan = plan_for(definitions, str(info.definition))
    if plan is None:
        return obj
    try:
        out: dict[str, Any] = canonicalize(plan, obj, base)
    except QuantityError as exc:
        raise E.bad_request(f'{info.kind} in version "{info.version}" cannot be handled as a {info.kind}: {exc}'
                            ) from None
    return out


# Objects that passed pruning, defaulting and validation whole, by identity (each entry keeps its
# object alive, so an id cannot be reused while it is here): (object, definitions, root definition).
_CLEAN_LIMIT = 4096
_CLEAN: dict[int, tuple[Mapping[str, Any], Mapping[str, Any], str]] = {}


def remember_clean(definitions: Mapping[str, Any], root: str, obj: Mapping[str, Any]) -> None:
    """Record that ``obj`` passed pruning and validation as ``root`` whole (it is about to be stored).

    Why: a patch or apply result shares every untouched subtree with the stored object, and such a
    subtree needs neither pruning nor validation again.  Only the object's metadata entries may still
    be set after this (server-set fields, never looked at through the shortcut: see ``clean_base``).
    """
    if len(_CLEAN) >= _CLEAN_LIMIT:
        _CLEAN.clear()
    _CLEAN[id(obj)] = (obj, definitions, root)


def clean_base(definitions: Mapping[str, Any], root: str, obj: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """``obj`` if it is known to have passed pruning and validation as ``root``, else None."""
    if obj is None:
        return None
    hit = _CLEAN.get(id(obj))
    if hit is None or hit[0] is not obj or hit[1] is not definitions or hit[2] != root:
        return None
    return obj


def validate_builtin(definitions: Mapping[str, Any], root: str, obj: Mapping[str, Any],
                     base: Mapping[str, Any] | None = None) -> list[dict[str, str]]:
    """Required fields and JSON types, recursively through the definition table.

    ``base`` (from ``clean_base``): a clean object whose subtrees ``obj`` may share; a shared
    subtree is skipped, as it was checked at the same schema position before.  The compiled plan
    (``schema_plan``) answers the common case, nothing wrong; the interpreted walk below runs only
    when it finds something, and writes the causes.
    """
    if typed_ok(definitions, root, obj, base):
        return []
    out: list[dict[str, str]] = []
    _walk(definitions, root, obj, "", out, base)
    return out


def _walk(definitions: Mapping[str, Any], name: str, value: Any, path: str, out: list[dict[str, str]],
          base: Any = None) -> None:
    definition = definitions.get(name)
    if definition is None:
        return
    dtype = definition.get("type")
    if "properties" not in definition:
        if name.endswith(".Quantity"):
            if not isinstance(value, (str, int, float)) or isinstance(value, bool):
                out.append(cause("FieldValueTypeInvalid", path, f"Invalid value: {_quote(value)}: must be a quantity"))
        elif dtype != "object":  # property-less objects (RawExtension, JSON, ...) hold any value
            _check_type(dtype, definition.get("format"), value, path, out)
        return
    if not isinstance(value, dict):
        out.append(cause("FieldValueTypeInvalid", path, f"Invalid value: {_quote(value)}: must be an object"))
        return
    for req in definition.get("required", ()):
        if req not in value or value[req] is None:
            if path == "" and req == "metadata":
                continue
            out.append(cause("FieldValueRequired", f"{path}.{req}" if path else req, "Required value"))
    props = definition["properties"]
    if not isinstance(base, dict):
        base = None
    for key, sub in value.items():
        spec = props.get(key)
        if spec is None or sub is None or (path == "" and key == "metadata"):
            continue  # root metadata: server-managed, checked by validate_metadata
        if base is None:
            _prop(definitions, spec, sub, f"{path}.{key}" if path else key, out, None)
            continue
        before = base.get(key)
        if before is not sub:
            _prop(definitions, spec, sub, f"{path}.{key}" if path else key, out, before)


def _prop(definitions: Mapping[str, Any], spec: Mapping[str, Any], value: Any, path: str,
          out: list[dict[str, str]], base: Any) -> None:
    ref = spec.get("ref")
    if ref:
        _walk(definitions, ref, value, path, out, base)
        return
    ptype = spec.get("type")
    if not _check_type(ptype, spec.get("format"), value, path, out):
        return
    if ptype == "array":
        item = spec.get("items")
        for i, v in enumerate(value):
            if v is None:
                continue
            _element(definitions, item, v, f"{path}[{i}]", out)
    elif ptype == "object" and "values" in spec:
        for k, v in value.items():
            if v is None:
                continue
            _element(definitions, spec["values"], v, f"{path}[{k}]", out)


def _element(definitions: Mapping[str, Any], item: Any, value: Any, path: str, out: list[dict[str, str]]) -> None:
    if not isinstance(item, str):
        return
    if item in _PY_TYPES:
        _check_type(item, None, value, path, out)
    else:
        _walk(definitions, item, value, path, out)


def _check_type(ptype: Any, fmt: Any, value: Any, path: str, out: list[dict[str, str]]) -> bool:
    if fmt == "int-or-string":
        ok = isinstance(value, (int, str)) and not isinstance(value, bool)
        want = "int-or-string"
    else:
        if not isinstance(ptype, str) or ptype not in _PY_TYPES:
            return True
        types = _PY_TYPES[ptype]
        ok = isinstance(value, types) and (ptype == "boolean" or not isinstance(value, bool))
        want = ptype
    if not ok:
        out.append(cause("FieldValueTypeInvalid", path, f"Invalid value: {_quote(value)}: must be of type {want}"))
    return ok


def prune_builtin(definitions: Mapping[str, Any], root: str, obj: dict[str, Any],
                  base: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Drop fields the schema does not know, as decoding into the real server's Go types does.

    Returns ``obj`` itself when nothing is unknown; otherwise copies only the dicts on the way to what
    was dropped (stored objects are shared and never mutated).  ``base``: as for ``validate_builtin``.
    The compiled plan (``schema_plan``) answers the common case, nothing to drop.
    """
    if not needs_prune(definitions, root, obj, base):
        return obj
    out = _prune(definitions, root, obj, top=True, base=base)
    return out if isinstance(out, dict) else obj


def _prune(definitions: Mapping[str, Any], name: str, value: Any, top: bool = False, base: Any = None) -> Any:
    definition = definitions.get(name)
    if definition is None or not isinstance(value, dict) or "properties" not in definition:
        return value
    props = definition["properties"]
    changed: dict[str, Any] | None = None
    if not isinstance(base, dict):
        base = None
    for key, sub in value.items():
        spec = props.get(key)
        if spec is None:
            if top and key in ("apiVersion", "kind", "metadata"):
                continue
            if changed is None:
                changed = dict(value)
            del changed[key]
            continue
        if key == "managedFields":  # server-written; never needs pruning
            continue
        if not sub and is_zero(sub, spec.get("omit")):  # encoding/json's omitempty: never written
            if changed is None:
                changed = dict(value)
            del changed[key]
            continue
        before = None if base is None else base.get(key)
        if before is sub:
            continue
        new = _prune_prop(definitions, spec, sub, before)
        if new is not sub:
            if changed is None:
                changed = dict(value)
            changed[key] = new
    return value if changed is None else changed


def _prune_prop(definitions: Mapping[str, Any], spec: Mapping[str, Any], value: Any, base: Any = None) -> Any:
    ref = spec.get("ref")
    if ref:
        return _prune(definitions, ref, value, base=base)
    item = spec.get("items") if spec.get("type") == "array" else spec.get("values")
    fills, zero = element_zero(item)
    if fills and has_null(value):
        if isinstance(value, list):
            return [zero if v is None else v for v in value]
        return {k: zero if v is None else v for k, v in value.items()}
    if not isinstance(item, str) or item in _PY_TYPES or not item:
        return value
    if isinstance(value, list):
        new_items = [_prune(definitions, item, v) for v in value]
        return value if all(a is b for a, b in zip(new_items, value)) else new_items
    if isinstance(value, dict) and spec.get("type") == "object":
        new_map = {k: _prune(definitions, item, v) for k, v in value.items()}
        return value if all(new_map[k] is v for k, v in value.items()) else new_map
    return value


def omitted_zero(definitions: Mapping[str, Any], root: str, path: str, value: Any) -> bool:
    """Whether ``path`` (``spec.containers[0].args``) names a known ``omitempty`` field and ``value`` is
    its zero: dropped by serialisation, not an unknown field to warn about."""
    spec: Mapping[str, Any] | None = {"ref": root}
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        if spec is None:
            return False
        if part.startswith("["):
            item = spec.get("items") if spec.get("type") == "array" else None
            spec = {"ref": item} if isinstance(item, str) else None
            continue
        ref = spec.get("ref")
        if ref is None and spec.get("type") == "object" and isinstance(spec.get("values"), str):
            spec = {"ref": spec["values"]}
            continue
        props = (definitions.get(ref) or {}).get("properties") if isinstance(ref, str) else None
        spec = props.get(part) if isinstance(props, MAPPING) else None
    omit = spec.get("omit") if spec is not None else None
    return isinstance(omit, str) and is_zero(value, omit)


_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


def prune_metadata(definitions: Mapping[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    """ObjectMeta without unknown fields (custom resources: the schema never covers metadata)."""
    if not needs_prune(definitions, _OBJECT_META, meta, top=False):
        return meta
    out = _prune(definitions, _OBJECT_META, meta)
    return out if isinstance(out, dict) else meta
