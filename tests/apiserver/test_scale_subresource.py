"""The scale subresource: an autoscaling/v1 Scale view; writes change only the replica count."""

from __future__ import annotations

import copy
import json

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from kamera_cli.apiserver import Registry
from kamera_cli.apiserver.server.scale import selector_string

from .conftest import make_server
from .crds import WIDGET, widget

DEPLOY = {"metadata": {"name": "d"}, "spec": {
    "replicas": 2,
    "selector": {"matchLabels": {"app": "d"}, "matchExpressions": [{"key": "tier", "operator": "In",
                                                                    "values": ["b", "a"]}]},
    "template": {"metadata": {"labels": {"app": "d", "tier": "a"}},
                 "spec": {"containers": [{"name": "c", "image": "x"}]}}}}


def test_read_and_replace_deployment_scale(api_client):
    apps = client.AppsV1Api(api_client)
    apps.create_namespaced_deployment("default", DEPLOY)
    scale = apps.read_namespaced_deployment_scale("d", "default")
    assert scale.spec.replicas == 2 and scale.status.replicas == 0
    assert scale.status.selector == "app=d,tier in (a,b)"
    scale.spec.replicas = 5
    out = apps.replace_namespaced_deployment_scale("d", "default", scale)
    assert out.spec.replicas == 5
    d = apps.read_namespaced_deployment("d", "default")
    assert d.spec.replicas == 5 and d.metadata.generation == 2


def test_stale_scale_write_conflicts(api_client):
    apps = client.AppsV1Api(api_client)
    apps.create_namespaced_deployment("default", DEPLOY)
    scale = apps.read_namespaced_deployment_scale("d", "default")
    scale.spec.replicas = 3
    apps.replace_namespaced_deployment_scale("d", "default", scale)
    scale.spec.replicas = 4
    with pytest.raises(ApiException) as exc:
        apps.replace_namespaced_deployment_scale("d", "default", scale)
    assert exc.value.status == 409


def test_patch_scale(api_client, fake_patching):
    apps = client.AppsV1Api(api_client)
    apps.create_namespaced_deployment("default", DEPLOY)
    out = apps.patch_namespaced_deployment_scale("d", "default", {"spec": {"replicas": 7}})
    assert out.spec.replicas == 7
    assert apps.read_namespaced_deployment("d", "default").spec.replicas == 7


def test_custom_resource_scale_uses_the_crd_paths():
    crd = copy.deepcopy(WIDGET)
    crd["spec"]["versions"][0]["subresources"]["scale"] = {
        "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.observedGeneration"}
    server = make_server(Registry.builtin().with_crds([crd]))
    server.create(widget(replicas=3))
    path = "/apis/example.com/v1/namespaces/default/widgets/w/scale"
    scale = server.handle("GET", path, [], {}, None).json()
    assert scale["spec"]["replicas"] == 3 and scale["kind"] == "Scale"
    scale["spec"]["replicas"] = 1
    resp = server.handle("PUT", path, [], {}, json.dumps(scale).encode())
    assert resp.status == 200 and resp.json()["spec"]["replicas"] == 1


def test_negative_replicas_are_invalid(server):
    server.create({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "default"},
                   **{k: v for k, v in DEPLOY.items() if k != "metadata"}})
    body = {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "d"}, "spec": {"replicas": -1}}
    resp = server.handle("PUT", "/apis/apps/v1/namespaces/default/deployments/d/scale", [], {},
                         json.dumps(body).encode())
    assert resp.status == 422


def test_selector_string_for_replication_controllers():
    assert selector_string({"b": "2", "a": "1"}) == "a=1,b=2"
    assert selector_string({"matchExpressions": [{"key": "x", "operator": "DoesNotExist"},
                                                 {"key": "w", "operator": "Exists"}]}) == "w,!x"
