"""apiextensions.k8s.io/v1beta1 CRDs, served as the API server before 1.22 served them.

Upstream: apiextensions-apiserver ``pkg/apis/apiextensions/v1beta1`` — ``defaults.go`` (a single
``spec.version`` is the served storage version; ``preserveUnknownFields`` defaults to true) and the
v1beta1 ↔ internal ↔ v1 conversion (top-level ``validation``, ``subresources`` and
``additionalPrinterColumns`` become every version's; ``JSONPath`` is ``jsonPath``). Operators written
before 1.22 ship such CRDs; kamera converts them on load and says so.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from kamera_cli.apiserver import Registry
from kamera_cli.apiserver.registry.crd_v1beta1 import from_v1beta1, is_v1beta1
from kamera_cli.model.objects import ObjectRef
from kamera_cli.scenario import load_scenario

from .conftest import make_server


def _old(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "gizmos.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced", "version": "v1alpha1",
                     "names": {"kind": "Gizmo", "plural": "gizmos", "singular": "gizmo"}, **spec}}


SCHEMA = {"openAPIV3Schema": {"properties": {
    "spec": {"properties": {"image": {"type": "string", "minLength": 1}}, "required": ["image"]},
    "status": {"type": "object", "properties": {"count": {"type": "integer"}}}}}}
GIZMO = ObjectRef("example.com/v1alpha1", "Gizmo", "default", "g")


def test_a_single_version_gets_the_top_level_schema_subresources_and_columns() -> None:
    old = _old(validation=SCHEMA, subresources={"status": {}},
               additionalPrinterColumns=[{"name": "Image", "type": "string", "JSONPath": ".spec.image"}])
    assert is_v1beta1(old)
    new, note = from_v1beta1(old)
    assert new["apiVersion"] == "apiextensions.k8s.io/v1"
    (version,) = new["spec"]["versions"]
    assert version["name"] == "v1alpha1" and version["served"] is True and version["storage"] is True
    assert version["subresources"] == {"status": {}}
    assert version["additionalPrinterColumns"] == [{"name": "Image", "type": "string", "jsonPath": ".spec.image"}]
    root = version["schema"]["openAPIV3Schema"]
    assert root["x-kubernetes-preserve-unknown-fields"] is True  # preserveUnknownFields defaulted to true
    assert root["properties"]["spec"]["x-kubernetes-preserve-unknown-fields"] is True
    assert "x-kubernetes-preserve-unknown-fields" not in root["properties"]["spec"]["properties"]["image"]
    assert not {"validation", "subresources", "additionalPrinterColumns", "version"} & set(new["spec"])
    assert "gizmos.example.com" in note and "unknown fields are kept" in note
    assert old["apiVersion"] == "apiextensions.k8s.io/v1beta1"  # the input is left alone


def test_the_converted_crd_keeps_unknown_fields_and_still_validates() -> None:
    server = make_server(Registry.builtin().with_crds([from_v1beta1(_old(validation=SCHEMA,
                                                                         subresources={"status": {}}))[0]]))
    stored = server.create({"apiVersion": "example.com/v1alpha1", "kind": "Gizmo",
                            "metadata": {"name": "g", "namespace": "default"},
                            "spec": {"image": "nginx", "extra": {"kept": 1}}})
    assert stored["spec"] == {"image": "nginx", "extra": {"kept": 1}}
    assert server.snapshot.get(GIZMO)["spec"]["extra"] == {"kept": 1}
    with pytest.raises(Exception, match="image"):
        server.create({"apiVersion": "example.com/v1alpha1", "kind": "Gizmo",
                       "metadata": {"name": "h", "namespace": "default"}, "spec": {"image": ""}})


def test_preserve_unknown_fields_false_prunes_as_v1_does() -> None:
    schema = {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"image": {"type": "string"}}}}}}
    new, note = from_v1beta1(_old(validation=schema, preserveUnknownFields=False))
    server = make_server(Registry.builtin().with_crds([new]))
    stored = server.create({"apiVersion": "example.com/v1alpha1", "kind": "Gizmo",
                            "metadata": {"name": "g", "namespace": "default"}, "spec": {"image": "x", "extra": 1}})
    assert stored["spec"] == {"image": "x"}
    assert "unknown fields are kept" not in note


def test_versions_keep_their_own_schema_and_a_crd_without_one_takes_anything() -> None:
    own = {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object"}}}}
    new, _ = from_v1beta1(_old(versions=[{"name": "v1", "served": True, "storage": True, "schema": own},
                                         {"name": "v1alpha1", "served": True, "storage": False}]))
    first, second = new["spec"]["versions"]
    assert first["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-preserve-unknown-fields"] is True
    assert second["schema"] == {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    registry = Registry.builtin().with_crds([new])
    assert registry.lookup("example.com/v1", "Gizmo") is not None
    assert registry.lookup("example.com/v1alpha1", "Gizmo") is not None


def test_a_scenario_with_a_v1beta1_crd_loads_with_a_located_note(tmp_path: Path) -> None:
    import yaml

    (tmp_path / "crd.yaml").write_text(yaml.safe_dump(_old(validation=SCHEMA)))
    (tmp_path / "c.py").write_text("def reconcile(request):\n    return None\n")
    (tmp_path / "s.yaml").write_text(textwrap.dedent("""\
        apiVersion: kamera.dev/v1alpha1
        kind: Scenario
        metadata: {name: old-crd}
        spec:
          crds: [crd.yaml]
          controllers:
            - {name: c, entrypoint: c.py:reconcile, for: example.com/v1alpha1/Gizmo}
          seed:
            - {apiVersion: example.com/v1alpha1, kind: Gizmo, metadata: {name: g, namespace: default},
               spec: {image: nginx}}
        """))
    scenario = load_scenario(tmp_path / "s.yaml")
    (note,) = scenario.notes
    assert "crd.yaml:1:1: $: CustomResourceDefinition 'gizmos.example.com' is apiextensions.k8s.io/v1beta1" \
        in note
