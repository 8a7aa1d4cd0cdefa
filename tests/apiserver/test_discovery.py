"""The discovery documents: shapes the real client relies on, derived from the registry."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from transport_fakes import WIDGET, FakeRegistry

from kamera_cli.apiserver.server.discovery import respond

REG = FakeRegistry((WIDGET,))


def _ok(path: str) -> dict:  # type: ignore[type-arg]
    answer = respond(REG, path)
    assert answer is not None, path
    status, doc = answer
    assert status == 200, (path, doc)
    return doc


def test_version_is_a_realistic_version_info() -> None:
    doc = _ok("/version")
    assert doc["major"] == "1"
    assert doc["gitVersion"] == f"v1.{doc['minor']}.0"
    assert set(doc) >= {"gitCommit", "gitTreeState", "buildDate", "goVersion", "compiler", "platform"}


def test_core_api_versions() -> None:
    doc = _ok("/api")
    assert doc["kind"] == "APIVersions"
    assert doc["versions"] == ["v1"]


def test_group_list_preferred_version_is_one_of_its_versions() -> None:
    doc = _ok("/apis")
    assert doc["kind"] == "APIGroupList"
    groups = {g["name"]: g for g in doc["groups"]}
    for group in groups.values():
        assert group["preferredVersion"] in group["versions"]  # DynamicClient compares with ==
    assert groups["apps"]["preferredVersion"] == {"groupVersion": "apps/v1", "version": "v1"}
    assert groups["autoscaling"]["preferredVersion"]["version"] == "v2"  # GA, higher major first
    versions = [v["version"] for v in groups["resource.k8s.io"]["versions"]]
    assert versions[0] == "v1"
    assert versions.index("v1beta2") < versions.index("v1beta1") < versions.index("v1alpha3")
    # built-in groups first, custom groups after them
    names = [g["name"] for g in doc["groups"]]
    assert names[-1] == "example.com"
    assert names[:-1] == sorted(names[:-1])
    assert "" not in names


def test_group_document() -> None:
    doc = _ok("/apis/apps")
    assert doc["kind"] == "APIGroup"
    assert doc["name"] == "apps"
    assert doc["preferredVersion"] in doc["versions"]


def test_core_resource_list() -> None:
    doc = _ok("/api/v1")
    assert doc["kind"] == "APIResourceList"
    assert doc["groupVersion"] == "v1"
    by_name = {r["name"]: r for r in doc["resources"]}
    cm = by_name["configmaps"]
    assert cm == {"name": "configmaps", "singularName": "configmap", "namespaced": True, "kind": "ConfigMap",
                  "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
                  "shortNames": ["cm"]}
    assert by_name["namespaces"]["namespaced"] is False
    assert by_name["pods"]["categories"] == ["all"]
    status = by_name["pods/status"]
    assert (status["kind"], status["singularName"], status["verbs"]) == ("Pod", "", ["get", "patch", "update"])
    eviction = by_name["pods/eviction"]
    assert (eviction["kind"], eviction["group"], eviction["version"]) == ("Eviction", "policy", "v1")
    names = [r["name"] for r in doc["resources"]]
    assert names == sorted(names)


def test_group_resource_list_with_scale_subresource() -> None:
    doc = _ok("/apis/apps/v1")
    assert doc["groupVersion"] == "apps/v1"
    by_name = {r["name"]: r for r in doc["resources"]}
    assert by_name["deployments"]["shortNames"] == ["deploy"]
    scale = by_name["deployments/scale"]
    assert (scale["kind"], scale["group"], scale["version"]) == ("Scale", "autoscaling", "v1")


def test_custom_resource_list() -> None:
    doc = _ok("/apis/example.com/v1")
    by_name = {r["name"]: r for r in doc["resources"]}
    assert by_name["widgets"]["kind"] == "Widget"
    assert "categories" not in by_name["widgets"]
    assert by_name["widgets/status"]["kind"] == "Widget"


def test_unknown_discovery_paths_are_404_and_other_paths_are_not_discovery() -> None:
    for path in ("/apis/nope", "/apis/nope/v1", "/apis/apps/v9", "/api/v2"):
        answer = respond(REG, path)
        assert answer is not None
        assert answer[0] == 404
        assert answer[1]["kind"] == "Status"
        assert answer[1]["reason"] == "NotFound"
    for path in ("/api/v1/namespaces", "/apis/apps/v1/deployments", "/api/v1/namespaces/x/pods", "/healthz", "/"):
        assert respond(REG, path) is None, path


def test_documents_are_deterministic_and_json_serialisable() -> None:
    first = json.dumps([respond(REG, p) for p in ("/apis", "/api/v1", "/apis/apps/v1")], sort_keys=True)
    again = json.dumps([respond(FakeRegistry((WIDGET,)), p) for p in ("/apis", "/api/v1", "/apis/apps/v1")],
                       sort_keys=True)
    assert first == again


def test_with_the_real_registry_and_a_crd() -> None:
    from transport_fakes import WIDGET_CRD

    from kamera_cli.apiserver import Registry

    registry = Registry.builtin().with_crds([WIDGET_CRD])
    groups = respond(registry, "/apis")
    assert groups is not None
    for group in groups[1]["groups"]:
        assert group["preferredVersion"] in group["versions"]
    assert groups[1]["groups"][-1]["name"] == "example.com"
    widgets = respond(registry, "/apis/example.com/v1")
    assert widgets is not None
    by_name = {r["name"]: r for r in widgets[1]["resources"]}
    assert by_name["widgets"]["shortNames"] == ["wd"]
    assert by_name["widgets/status"]["verbs"] == ["get", "patch", "update"]
    core = respond(Registry.builtin(), "/api/v1")
    assert core is not None
    assert {"pods", "pods/status", "configmaps", "namespaces"} <= {r["name"] for r in core[1]["resources"]}
