"""An ``apiextensions.k8s.io/v1beta1`` CustomResourceDefinition read as the v1 one the API server
made of it before Kubernetes 1.22 removed the older version.

Why convert instead of refusing: operators written before 1.22 ship v1beta1 CRDs, and a user trying
one should get its kinds served as the cluster it was written for served them, with a note, rather
than a load error about a file they did not write. The conversion follows upstream's defaulting and
v1beta1 → v1 conversion (apiextensions-apiserver ``v1beta1/defaults.go`` and ``conversion.go``):

* ``spec.version`` is the single version when ``spec.versions`` is absent (served, storage);
* the top-level ``spec.validation``, ``spec.subresources`` and ``spec.additionalPrinterColumns``
  apply to every version that has none of its own (a column's ``JSONPath`` is v1's ``jsonPath``);
* ``spec.preserveUnknownFields`` defaults to true in v1beta1: such a CRD prunes nothing, which v1
  can only say per object node, so every object node of the schema (and a missing schema's root)
  gets ``x-kubernetes-preserve-unknown-fields: true``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

V1BETA1 = "apiextensions.k8s.io/v1beta1"
V1 = "apiextensions.k8s.io/v1"

#: what is noted for each CRD read this way (it names the CRD)
NOTE = ("CustomResourceDefinition {name!r} is apiextensions.k8s.io/v1beta1, which Kubernetes 1.22 removed: "
        "it is served as the API server before 1.22 served it (converted to v1{pruning})")


def is_v1beta1(manifest: Mapping[str, Any]) -> bool:
    return manifest.get("apiVersion") == V1BETA1 and manifest.get("kind") == "CustomResourceDefinition"


def from_v1beta1(manifest: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """The v1 manifest and the note to show; a malformed input is converted as far as it goes and
    left for ``parse_crd`` to refuse with its usual messages."""
    out = copy.deepcopy(dict(manifest))
    out["apiVersion"] = V1
    spec = out.get("spec")
    name = str((out.get("metadata") or {}).get("name") or "") if isinstance(out.get("metadata"), Mapping) else ""
    if not isinstance(spec, dict):
        return out, NOTE.format(name=name, pruning="")
    preserve = spec.pop("preserveUnknownFields", True) is not False
    validation = spec.pop("validation", None)
    subresources = spec.pop("subresources", None)
    columns = spec.pop("additionalPrinterColumns", None)
    version = spec.pop("version", None)
    versions = spec.get("versions")
    if not isinstance(versions, list) or not versions:
        versions = [{"name": version, "served": True, "storage": True}] if isinstance(version, str) else []
    converted = []
    for entry in versions:
        if not isinstance(entry, dict):
            converted.append(entry)
            continue
        entry = dict(entry)
        if "schema" not in entry and isinstance(validation, Mapping):
            entry["schema"] = copy.deepcopy(dict(validation))
        if "subresources" not in entry and subresources is not None:
            entry["subresources"] = copy.deepcopy(subresources)
        own = entry.get("additionalPrinterColumns", columns)
        if isinstance(own, list):
            entry["additionalPrinterColumns"] = [_column(c) for c in own]
        schema = entry.get("schema")
        schema = dict(schema) if isinstance(schema, Mapping) else {}
        root = schema.get("openAPIV3Schema")
        if not isinstance(root, Mapping):
            entry["schema"] = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
        elif preserve:
            entry["schema"] = {**schema, "openAPIV3Schema": _preserving(root, top=True)}
        converted.append(entry)
    spec["versions"] = converted
    pruning = ": unknown fields are kept, as preserveUnknownFields was true" if preserve else ""
    return out, NOTE.format(name=name, pruning=pruning)


def _column(column: Any) -> Any:
    if not isinstance(column, Mapping) or "JSONPath" not in column:
        return column
    return {("jsonPath" if key == "JSONPath" else key): value for key, value in column.items()}


def _preserving(node: Mapping[str, Any], top: bool = False) -> dict[str, Any]:
    """``node`` with every object node keeping unknown fields (a node with properties, or typed
    object, or the root); its subschemas likewise."""
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "properties" and isinstance(value, Mapping):
            out[key] = {k: _preserving(v) if isinstance(v, Mapping) else v for k, v in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, Mapping):
            out[key] = _preserving(value)
        else:  # allOf/anyOf/oneOf/not only constrain: a structural schema names no field there
            out[key] = value
    if top or node.get("type") == "object" or ("properties" in node and "type" not in node):
        out["x-kubernetes-preserve-unknown-fields"] = True
    return out
