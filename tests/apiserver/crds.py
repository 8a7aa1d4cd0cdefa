"""CRD manifests shared by the tests."""

from __future__ import annotations

import copy
from typing import Any

from kamera_cli.apiserver import ApiError
from kamera_cli.model.objects import ObjectRef


def crd(kind: str, plural: str, *, status: bool, scope: str = "Namespaced", schema: dict[str, Any] | None = None,
        versions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    schema = schema or {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "replicas": {"type": "integer", "default": 1},
                    "size": {"type": "string", "enum": ["small", "large"]},
                    "port": {"x-kubernetes-int-or-string": True},
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                    "items": {"type": "array", "items": {"type": "object", "required": ["name"],
                                                         "properties": {"name": {"type": "string"}}}},
                },
                "required": ["size"],
            },
            "status": {"type": "object", "properties": {"ready": {"type": "boolean"},
                                                        "observedGeneration": {"type": "integer"}}},
        },
    }
    version: dict[str, Any] = {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}
    if status:
        version["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": kind + "List"},
            "scope": scope,
            "versions": versions or [version],
        },
    }


WIDGET = crd("Widget", "widgets", status=True)
GADGET = crd("Gadget", "gadgets", status=False)


def widget(name: str = "w", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name, "namespace": "default"},
            "spec": {"size": "small", **spec}}


def gadget(name: str = "g", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": name, "namespace": "default"},
            "spec": {"size": "small", **spec}}


def thing_refusals(server: Any, **spec: Any) -> list[str]:
    """The cause messages of the 422 refusing a ``Thing`` with ``spec``; none when it is created (it is
    then deleted, so the next case starts from the same server)."""
    obj = {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "x", "namespace": "default"},
           "spec": spec}
    try:
        server.create(copy.deepcopy(obj))
    except ApiError as exc:
        assert exc.status == 422
        return [c["message"] for c in exc.body["details"]["causes"]]
    server.delete(ObjectRef("example.com/v1", "Thing", "default", "x"))
    return []
