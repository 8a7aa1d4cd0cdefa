"""CRDs: registration errors, schema validation (422 with causes), pruning and defaulting on every write."""

from __future__ import annotations

import copy
import json

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from kamera_cli.apiserver import CRDError, Registry

from .crds import WIDGET, crd, widget

G, V, NS, P = "example.com", "v1", "default", "widgets"


def test_registry_serves_the_crd(crd_server):
    info = crd_server.registry.lookup("example.com/v1", "Widget")
    assert info is not None and info.custom and info.has_status and info.namespaced
    assert info.list_kind == "WidgetList" and info.plural == "widgets"
    assert crd_server.registry.lookup_plural("example.com", "v1", "widgets") == info


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda c: c.update(kind="Nope"), "apiVersion must be apiextensions.k8s.io/v1"),
    (lambda c: c["metadata"].update(name="wrong"), "metadata.name must be"),
    (lambda c: c["spec"].update(scope="Galaxy"), "spec.scope must be Namespaced or Cluster"),
    (lambda c: c["spec"]["versions"][0].update(storage=False), "exactly one version must have storage"),
    (lambda c: c["spec"]["versions"][0].pop("schema"), "openAPIV3Schema is required"),
    (lambda c: c["spec"]["versions"][0]["schema"]["openAPIV3Schema"].update(type="string"), "root must have type"),
    (lambda c: c["spec"]["versions"][0]["schema"]["openAPIV3Schema"].update(minProperties="x"),
     "not a valid schema"),
])
def test_bad_crd_is_a_clear_crd_error(mutate, message):
    bad = copy.deepcopy(WIDGET)
    mutate(bad)
    with pytest.raises(CRDError) as exc:
        Registry.builtin().with_crds([bad])
    assert message in str(exc.value)
    assert "widgets.example.com" in str(exc.value) or "wrong" in str(exc.value)


def test_duplicate_crd_is_refused():
    with pytest.raises(CRDError, match="already defined"):
        Registry.builtin().with_crds([WIDGET, WIDGET])


def test_schema_violations_are_422_with_causes(crd_client):
    api = client.CustomObjectsApi(crd_client)
    bad = widget(replicas="three", size="huge")
    with pytest.raises(ApiException) as exc:
        api.create_namespaced_custom_object(G, V, NS, P, bad)
    assert exc.value.status == 422
    body = json.loads(exc.value.body)
    assert body["reason"] == "Invalid" and body["details"]["kind"] == "Widget"
    causes = {c["field"]: c for c in body["details"]["causes"]}
    assert causes["spec.replicas"]["reason"] == "FieldValueTypeInvalid"
    assert causes["spec.size"]["reason"] == "FieldValueNotSupported"
    assert 'supported values: "small", "large"' in causes["spec.size"]["message"]


def test_required_property_is_reported(crd_client):
    api = client.CustomObjectsApi(crd_client)
    obj = widget()
    del obj["spec"]["size"]
    with pytest.raises(ApiException) as exc:
        api.create_namespaced_custom_object(G, V, NS, P, obj)
    causes = json.loads(exc.value.body)["details"]["causes"]
    assert causes == [{"reason": "FieldValueRequired", "message": "Required value", "field": "spec.size"}]


def test_unknown_fields_are_pruned_unless_preserved(crd_client):
    api = client.CustomObjectsApi(crd_client)
    obj = widget(unknown=1, free={"anything": {"goes": True}})
    obj["extra"] = "dropped"
    out = api.create_namespaced_custom_object(G, V, NS, P, obj)
    assert "unknown" not in out["spec"] and "extra" not in out
    assert out["spec"]["free"] == {"anything": {"goes": True}}


def test_defaults_are_applied_and_int_or_string_accepted(crd_client):
    api = client.CustomObjectsApi(crd_client)
    out = api.create_namespaced_custom_object(G, V, NS, P, widget(port="http"))
    assert out["spec"]["replicas"] == 1 and out["spec"]["port"] == "http"
    out2 = api.create_namespaced_custom_object(G, V, NS, P, widget("w2", port=8080))
    assert out2["spec"]["port"] == 8080


def test_validation_runs_on_updates_too(crd_client):
    api = client.CustomObjectsApi(crd_client)
    out = api.create_namespaced_custom_object(G, V, NS, P, widget())
    out["spec"]["items"] = [{"nameless": True}]
    with pytest.raises(ApiException) as exc:
        api.replace_namespaced_custom_object(G, V, NS, P, "w", out)
    assert json.loads(exc.value.body)["details"]["causes"][0]["field"] == "spec.items[0].name"


def test_cluster_scoped_custom_resource():
    reg = Registry.builtin().with_crds([crd("Thing", "things", status=False, scope="Cluster")])
    info = reg.lookup("example.com/v1", "Thing")
    assert info is not None and not info.namespaced


def test_multi_version_crd_stores_once_and_reads_through_each_version():
    from .conftest import make_server

    versions = [
        {"name": "v1beta1", "served": True, "storage": False,
         "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}},
        {"name": "v1", "served": True, "storage": True,
         "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}},
    ]
    reg = Registry.builtin().with_crds([crd("Thing", "things", status=False, versions=versions)])
    server = make_server(reg)
    server.create({"apiVersion": "example.com/v1beta1", "kind": "Thing",
                   "metadata": {"name": "t", "namespace": "default"}, "spec": {"a": 1}})
    resp = server.handle("GET", "/apis/example.com/v1/namespaces/default/things/t", [], {}, None)
    assert json.loads(resp.body)["apiVersion"] == "example.com/v1"
    resp = server.handle("GET", "/apis/example.com/v1beta1/namespaces/default/things/t", [], {}, None)
    assert json.loads(resp.body)["apiVersion"] == "example.com/v1beta1"
    assert [g.versions for g in reg.groups() if g.name == "example.com"] == [("v1", "v1beta1")]


def test_list_type_set_and_map_refuse_duplicates():
    from .conftest import make_server

    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                  "items": {"type": "object", "properties": {"name": {"type": "string"},
                                                             "port": {"type": "integer"}}}}}}}}
    server = make_server(Registry.builtin().with_crds([crd("Thing", "things", status=False, schema=schema)]))
    body = {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"},
            "spec": {"tags": ["a", "b", "a"], "ports": [{"name": "x", "port": 1}, {"name": "x", "port": 2}]}}
    resp = server.handle("POST", "/apis/example.com/v1/namespaces/default/things", [], {}, json.dumps(body).encode())
    assert resp.status == 422
    causes = resp.json()["details"]["causes"]
    assert [(c["reason"], c["field"]) for c in causes] == [
        ("FieldValueDuplicate", "spec.ports[1]"), ("FieldValueDuplicate", "spec.tags[2]")]
    assert causes[1]["message"] == 'Duplicate value: "a"'
