"""Turning apiextensions.k8s.io/v1 CustomResourceDefinition manifests into served resources.

Why strict here: a CRD the real apiserver would reject must not silently produce a half-working
kind in the simulation, so every problem is a ``CRDError`` naming the CRD and the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kamera_cli.apiserver.errors import CRDError
from kamera_cli.apiserver.registry.resources import ResourceInfo

_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


def _fail(name: str, message: str) -> CRDError:
    return CRDError(f"CustomResourceDefinition {name!r}: {message}")


def parse_crd(manifest: Mapping[str, Any]) -> list[ResourceInfo]:
    """One ResourceInfo per served version; raises CRDError naming the first problem found."""
    if not isinstance(manifest, Mapping):
        raise CRDError("a CustomResourceDefinition must be a mapping")
    meta = manifest.get("metadata") or {}
    name = str(meta.get("name") or "") if isinstance(meta, Mapping) else ""
    if manifest.get("apiVersion") != "apiextensions.k8s.io/v1" or manifest.get("kind") != "CustomResourceDefinition":
        raise _fail(name, "apiVersion must be apiextensions.k8s.io/v1 and kind CustomResourceDefinition "
                          f"(got {manifest.get('apiVersion')!r} / {manifest.get('kind')!r})")
    spec = manifest.get("spec")
    if not isinstance(spec, Mapping):
        raise _fail(name, "spec is required")
    group = spec.get("group")
    if not isinstance(group, str) or "." not in group:
        raise _fail(name, f"spec.group must be a domain name with a dot (got {group!r})")
    names = spec.get("names")
    if not isinstance(names, Mapping):
        raise _fail(name, "spec.names is required")
    plural, kind = names.get("plural"), names.get("kind")
    if not isinstance(plural, str) or not plural or plural != plural.lower():
        raise _fail(name, f"spec.names.plural must be a lowercase name (got {plural!r})")
    if not isinstance(kind, str) or not kind:
        raise _fail(name, "spec.names.kind is required")
    singular = names.get("singular") or kind.lower()
    list_kind = names.get("listKind") or kind + "List"
    if name != f"{plural}.{group}":
        raise _fail(name, f"metadata.name must be spec.names.plural + '.' + spec.group ({plural}.{group!s})")
    scope = spec.get("scope")
    if scope not in ("Namespaced", "Cluster"):
        raise _fail(name, f"spec.scope must be Namespaced or Cluster (got {scope!r})")
    versions = spec.get("versions")
    if not isinstance(versions, list) or not versions:
        raise _fail(name, "spec.versions must list at least one version")
    storage = [v.get("name") for v in versions if isinstance(v, Mapping) and v.get("storage") is True]
    if len(storage) != 1:
        raise _fail(name, f"exactly one version must have storage: true (found {len(storage)})")
    from kamera_cli.apiserver.validation.crd import check_schema

    out: list[ResourceInfo] = []
    seen: set[str] = set()
    for i, v in enumerate(versions):
        if not isinstance(v, Mapping) or not isinstance(v.get("name"), str) or not v["name"]:
            raise _fail(name, f"spec.versions[{i}].name is required")
        vname: str = v["name"]
        if vname in seen:
            raise _fail(name, f"spec.versions[{i}].name {vname!r} is duplicated")
        seen.add(vname)
        schema = (v.get("schema") or {}).get("openAPIV3Schema") if isinstance(v.get("schema"), Mapping) else None
        if not isinstance(schema, Mapping):
            raise _fail(name, f"spec.versions[{i}].schema.openAPIV3Schema is required")
        problem = check_schema(schema)
        if problem:
            raise _fail(name, f"spec.versions[{i}].schema.openAPIV3Schema: {problem}")
        if not v.get("served", False):
            continue
        subs = v.get("subresources") or {}
        if not isinstance(subs, Mapping):
            raise _fail(name, f"spec.versions[{i}].subresources must be a mapping")
        sub_names = tuple(sorted(s for s in ("scale", "status") if s in subs))
        scale = subs.get("scale")
        if scale is not None and (not isinstance(scale, Mapping) or not isinstance(scale.get("specReplicasPath"), str)
                                  or not isinstance(scale.get("statusReplicasPath"), str)):
            raise _fail(name, f"spec.versions[{i}].subresources.scale needs specReplicasPath and statusReplicasPath")
        out.append(ResourceInfo(
            group=group, version=vname, kind=kind, plural=plural, singular=str(singular),
            namespaced=scope == "Namespaced", verbs=_VERBS, subresources=sub_names, has_status="status" in subs,
            custom=True, list_kind=str(list_kind), schema=schema, storage_version=str(storage[0]),
            scale={str(k): str(v) for k, v in scale.items()} if isinstance(scale, Mapping) else None,
            short_names=tuple(names.get("shortNames") or ()), categories=tuple(names.get("categories") or ()),
        ))
    if not out:
        raise _fail(name, "no version is served")
    return out
