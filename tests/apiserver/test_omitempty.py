"""Fields the server never writes at their zero value: Go's ``encoding/json`` ``omitempty``.

Upstream: the struct tags of k8s.io/api and k8s.io/apimachinery (``json:"labels,omitempty"``), read by
scripts/gen_omitempty.py into apiserver/data/omitempty.json; encoding/json's ``isEmptyValue`` (an empty
map or slice, "", false, 0 — never a struct, and a pointer only when nil).  For custom resources only
the metadata is typed (``schemaobjectmeta.Coerce`` round-trips it through ``ObjectMeta``).
"""

from __future__ import annotations

import json
from typing import Any

from kubernetes import client

from kamera_cli.apiserver import Registry
from kamera_cli.model.objects import ObjectRef

from .conftest import make_server
from .crds import WIDGET

CM = ObjectRef("v1", "ConfigMap", "default", "a")


def _deployment(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"a": "b"}}, **spec, "template": {
                "metadata": {"labels": {"a": "b"}, "annotations": {}},
                "spec": {"containers": [{"name": "c", "image": "nginx", "args": [], "env": [], "ports": [],
                                         "workingDir": "", "stdin": False}],
                         "nodeSelector": {}, "hostNetwork": False, "automountServiceAccountToken": False,
                         "tolerations": [], "volumes": []}}}}


def test_the_table_follows_the_go_types() -> None:
    props = Registry.builtin().definitions["io.k8s.api.core.v1.PodSpec"]["properties"]
    assert props["hostNetwork"]["omit"] == "bool" and props["nodeSelector"]["omit"] == "map"
    assert props["automountServiceAccountToken"]["omit"] == "pointer"  # *bool: only nil is omitted
    assert "omit" not in props["containers"]  # no omitempty: [] is written
    assert props["securityContext"]["omit"] == "pointer"  # a pointer to a struct
    deployment = Registry.builtin().definitions["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]
    assert deployment["replicas"]["omit"] == "pointer" and deployment["paused"]["omit"] == "bool"
    assert "omit" not in deployment["selector"]  # *LabelSelector without omitempty


def test_empty_maps_in_metadata_and_data_are_not_stored(api_client, server):
    core = client.CoreV1Api(api_client)
    core.create_namespaced_config_map("default", {"metadata": {"name": "a", "labels": {}, "annotations": {},
                                                               "finalizers": []}, "data": {}})
    stored = server.snapshot.get(CM)
    assert set(stored["metadata"]) == {"name", "namespace", "uid", "creationTimestamp", "resourceVersion"}
    assert "data" not in stored
    read = core.read_namespaced_config_map("a", "default")
    assert read.metadata.labels is None and read.data is None  # what a controller reading it back sees


def test_zero_values_of_omitempty_fields_go_and_pointers_stay(server):
    stored = server.create(_deployment(replicas=0, paused=False, minReadySeconds=0))
    spec = stored["spec"]
    assert spec["replicas"] == 0  # *int32
    assert "paused" not in spec and "minReadySeconds" not in spec
    pod = spec["template"]["spec"]
    assert not {"nodeSelector", "hostNetwork", "tolerations", "volumes"} & set(pod)
    assert pod["automountServiceAccountToken"] is False
    container = pod["containers"][0]
    assert not {"args", "env", "ports", "workingDir", "stdin"} & set(container)
    assert container["resources"] == {}  # a struct: written even when empty
    assert "annotations" not in spec["template"]["metadata"]


def test_resending_empty_maps_is_a_no_op(api_client, server):
    core = client.CoreV1Api(api_client)
    created = core.create_namespaced_config_map("default", {"metadata": {"name": "a"}, "data": {"k": "v"}})
    rv = created.metadata.resource_version
    body = server.get(CM)
    again = core.replace_namespaced_config_map("a", "default", {**body, "metadata": {**body["metadata"],
                                                                                      "labels": {}}})
    assert again.metadata.resource_version == rv  # nothing changed, no new resourceVersion


def test_zero_values_are_not_reported_as_unknown_fields(server):
    body = json.dumps({**_deployment(), "metadata": {"name": "d", "namespace": "default", "labels": {}}}).encode()
    resp = server.handle("POST", "/apis/apps/v1/namespaces/default/deployments", [("fieldValidation", "Strict")],
                         {"Content-Type": "application/json"}, body)
    assert resp.status == 201, resp.body
    unknown = {**_deployment(), "metadata": {"name": "e", "namespace": "default"}}
    unknown["spec"]["template"]["spec"]["containers"][0]["bogus"] = ""
    resp = server.handle("POST", "/apis/apps/v1/namespaces/default/deployments", [("fieldValidation", "Strict")],
                         {"Content-Type": "application/json"}, json.dumps(unknown).encode())
    assert resp.status == 400
    assert 'unknown field "spec.template.spec.containers[0].bogus"' in json.loads(resp.body)["message"]


def test_custom_resources_lose_empty_metadata_maps_but_keep_their_own():
    server = make_server(Registry.builtin().with_crds([WIDGET]))
    stored = server.create({"apiVersion": "example.com/v1", "kind": "Widget",
                            "metadata": {"name": "w", "namespace": "default", "labels": {}},
                            "spec": {"size": "small", "replicas": 0, "items": [], "free": {}}})
    assert "labels" not in stored["metadata"]
    assert stored["spec"] == {"size": "small", "replicas": 0, "items": [], "free": {}}  # unstructured: as sent


def test_nulls_of_omitempty_fields_are_not_stored(server):
    # a null decodes to Go's zero value (nil map, slice or pointer, "", false), which omitempty drops
    body = _deployment(replicas=None, paused=None)
    body["metadata"]["labels"] = None
    body["spec"]["template"]["spec"]["nodeSelector"] = None
    body["spec"]["template"]["spec"]["containers"][0]["args"] = None
    stored = server.create(body)
    assert "labels" not in stored["metadata"] and "paused" not in stored["spec"]
    assert stored["spec"]["replicas"] == 1  # nil, then defaulted
    assert "nodeSelector" not in stored["spec"]["template"]["spec"]
    assert "args" not in stored["spec"]["template"]["spec"]["containers"][0]
    cm = server.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "n", "namespace": "default"},
                        "data": None})
    assert "data" not in cm


def test_null_values_of_scalar_maps_and_arrays_decode_to_their_zero(server):
    """encoding/json decodes a null map value or array item into a fresh element left at its zero value
    (``""`` for ``map[string]string``), and a Quantity's UnmarshalJSON takes null as zero, written
    "0"; a Secret's ``stringData`` is merged after decoding, so a null there is an empty value."""
    stored = server.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default"},
                            "data": {"a": None, "b": "x"}})
    assert stored["data"] == {"a": "", "b": "x"}
    secret = server.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "default"},
                            "stringData": {"user": None, "password": "fake"}})
    assert secret["data"] == {"user": "", "password": "ZmFrZQ=="}
    pod = server.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                         "spec": {"containers": [{"name": "c", "image": "nginx", "args": ["-v", None],
                                                  "resources": {"limits": {"cpu": None, "memory": "1Gi"}}}]}})
    container = pod["spec"]["containers"][0]
    assert container["args"] == ["-v", ""]
    assert container["resources"]["limits"] == {"cpu": "0", "memory": "1Gi"}
    assert server.snapshot.get(CM)["data"] == {"a": "", "b": "x"}  # stored so, not only answered so

