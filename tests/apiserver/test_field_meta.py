"""FieldLookup builders: the compact built-in table and CRD schemas, checked against the raw OpenAPI."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import kamera_cli.apiserver as apiserver_pkg
from kamera_cli.apiserver.patch.functions import FieldMeta, builtin_field_lookup, openapi_field_lookup

TABLE: dict[str, Any] = json.loads(
    (Path(apiserver_pkg.__file__).parent / "data" / "builtin.json").read_text(encoding="utf-8"))
DEFS: dict[str, Any] = TABLE["definitions"]
OPENAPI = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "kubernetes-openapi-v2.json"


def test_deployment_paths_with_transparent_list_items() -> None:
    lookup = builtin_field_lookup(DEFS, "io.k8s.api.apps.v1.Deployment")
    assert lookup(("spec", "template", "spec", "containers")) == FieldMeta(
        merge_key="name", strategies=frozenset({"merge"}), list_type="map", map_keys=("name",))
    assert lookup(("spec", "template", "spec", "containers", "ports")) == FieldMeta(
        merge_key="containerPort", strategies=frozenset({"merge"}), list_type="map",
        map_keys=("containerPort", "protocol"))
    assert lookup(("spec", "template", "spec", "volumes")).strategies == {"merge", "retainKeys"}  # type: ignore[union-attr]
    assert lookup(("spec", "strategy")) == FieldMeta(strategies=frozenset({"retainKeys"}))
    assert lookup(("spec", "selector")) == FieldMeta(map_type="atomic")
    assert lookup(("spec", "template", "spec", "tolerations")) == FieldMeta(list_type="atomic")
    assert lookup(("metadata", "labels")) == FieldMeta()
    assert lookup(("metadata", "labels", "any-key")) == FieldMeta()
    assert lookup(("spec", "no-such-field")) is None
    assert lookup(("spec", "replicas", "deeper")) is None


def test_list_of_atomic_items_reports_their_map_type() -> None:
    lookup = builtin_field_lookup(DEFS, "io.k8s.api.core.v1.Pod")
    refs = lookup(("metadata", "ownerReferences"))
    assert refs is not None and refs.map_type == "atomic" and refs.map_keys == ("uid",)


def test_lookup_is_cached_per_root() -> None:
    a = builtin_field_lookup(DEFS, "io.k8s.api.core.v1.Pod")
    assert builtin_field_lookup(DEFS, "io.k8s.api.core.v1.Pod") is a
    assert builtin_field_lookup(DEFS, "io.k8s.api.core.v1.Service") is not a


def test_map_values_with_a_schema_are_walked() -> None:
    # ResourceRequirements.limits is map[string]Quantity; a key inside it has no metadata of its own.
    lookup = builtin_field_lookup(DEFS, "io.k8s.api.core.v1.Pod")
    assert lookup(("spec", "containers", "resources", "limits", "cpu")) == FieldMeta()


def test_openapi_lookup_reads_crd_extensions() -> None:
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "rules": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["host", "port"],
                  "items": {"type": "object", "properties": {
                      "host": {"type": "string"},
                      "paths": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}}}},
        "selector": {"type": "object", "x-kubernetes-map-type": "atomic"},
        "labels": {"type": "object", "additionalProperties": {"type": "object", "properties": {
            "deep": {"type": "array", "x-kubernetes-list-type": "atomic"}}}},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    }}}}
    lookup = openapi_field_lookup(schema)
    assert lookup(("spec", "rules")) == FieldMeta(list_type="map", map_keys=("host", "port"))
    assert lookup(("spec", "rules", "paths")) == FieldMeta(list_type="set")
    assert lookup(("spec", "selector")) == FieldMeta(map_type="atomic")
    assert lookup(("spec", "labels", "x", "deep")) == FieldMeta(list_type="atomic")
    assert lookup(("spec", "free", "anything")) is None
    assert lookup(("nope",)) is None


def test_custom_resource_metadata_is_standard_object_meta() -> None:
    lookup = openapi_field_lookup({"type": "object", "properties": {"metadata": {"type": "object"}}})
    assert lookup(("metadata", "finalizers")) == FieldMeta(strategies=frozenset({"merge"}), list_type="set")
    refs = lookup(("metadata", "ownerReferences"))
    assert refs is not None and refs.map_keys == ("uid",) and refs.map_type == "atomic"
    assert lookup(("metadata", "labels", "app")) == FieldMeta()
    builtin = builtin_field_lookup(DEFS, "io.k8s.api.core.v1.ConfigMap")
    for name in ("finalizers", "ownerReferences", "managedFields", "labels"):
        assert lookup(("metadata", name)) == builtin(("metadata", name)), name


def _raw_walk(doc: dict[str, Any], root: str, depth: int) -> Iterator[tuple[tuple[str, ...], dict[str, Any]]]:
    """Every property path under ``root`` in the raw OpenAPI document (list items transparent)."""
    definitions = doc["definitions"]

    def target(schema: dict[str, Any]) -> str | None:
        ref = schema.get("$ref") or schema.get("items", {}).get("$ref")
        return ref.rsplit("/", 1)[-1] if isinstance(ref, str) else None

    stack: list[tuple[tuple[str, ...], str]] = [((), root)]
    while stack:
        path, name = stack.pop()
        for prop, schema in definitions.get(name, {}).get("properties", {}).items():
            sub = (*path, prop)
            yield sub, schema
            nxt = target(schema)
            if nxt and len(sub) < depth and nxt not in ("io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry",):
                stack.append((sub, nxt))


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    if not OPENAPI.exists():
        pytest.skip(f"raw OpenAPI document not available at {OPENAPI}")
    loaded: dict[str, Any] = json.loads(OPENAPI.read_text(encoding="utf-8"))
    return loaded


@pytest.mark.parametrize("root", ["io.k8s.api.apps.v1.Deployment", "io.k8s.api.core.v1.Pod",
                                  "io.k8s.api.apps.v1.StatefulSet", "io.k8s.api.core.v1.Service",
                                  "io.k8s.api.batch.v1.CronJob", "io.k8s.api.networking.v1.Ingress"])
def test_builtin_lookup_agrees_with_the_raw_openapi_document(root: str, openapi: dict[str, Any]) -> None:
    doc = openapi
    lookup = builtin_field_lookup(DEFS, root)
    checked = 0
    for path, schema in _raw_walk(doc, root, depth=8):
        meta = lookup(path)
        assert meta is not None, path
        assert meta.merge_key == schema.get("x-kubernetes-patch-merge-key"), path
        assert meta.strategies == frozenset(
            s for s in schema.get("x-kubernetes-patch-strategy", "").split(",") if s), path
        assert meta.list_type == schema.get("x-kubernetes-list-type"), path
        assert meta.map_keys == tuple(schema.get("x-kubernetes-list-map-keys", ())), path
        checked += 1
    assert checked > 30
