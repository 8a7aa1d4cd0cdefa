"""metadata.generation: 1 on create for tracking kinds; bumps on spec changes, never on status."""

from __future__ import annotations

from kubernetes import client

from kamera_cli.model.objects import ObjectRef

from .crds import gadget, widget

DEPLOY = {
    "metadata": {"name": "d"},
    "spec": {"selector": {"matchLabels": {"app": "d"}},
             "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}},
}


def test_configmaps_have_no_generation(api_client):
    cm = client.CoreV1Api(api_client).create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    assert cm.metadata.generation is None


def test_deployment_generation_moves_on_spec_changes_only(api_client):
    apps = client.AppsV1Api(api_client)
    d = apps.create_namespaced_deployment("default", DEPLOY)
    assert d.metadata.generation == 1
    d.metadata.labels = {"x": "y"}
    d = apps.replace_namespaced_deployment("d", "default", d)
    assert d.metadata.generation == 1  # metadata only
    d.spec.replicas = 3
    d = apps.replace_namespaced_deployment("d", "default", d)
    assert d.metadata.generation == 2
    d.status = client.V1DeploymentStatus(replicas=3, observed_generation=2)
    d = apps.replace_namespaced_deployment_status("d", "default", d)
    assert d.metadata.generation == 2
    assert d.status.replicas == 3


def test_custom_resource_with_status_subresource_ignores_status_for_generation(crd_server):
    w = crd_server.create(widget())
    assert w["metadata"]["generation"] == 1
    w["status"] = {"ready": True}
    w = crd_server.update(w, subresource="status")
    assert w["metadata"]["generation"] == 1
    w["spec"]["size"] = "large"
    w = crd_server.update(w)
    assert w["metadata"]["generation"] == 2


def test_custom_resource_without_status_subresource_bumps_on_status_writes(crd_server):
    g = crd_server.create(gadget())
    g["status"] = {"ready": True}
    g = crd_server.update(g)
    assert g["status"] == {"ready": True}
    assert g["metadata"]["generation"] == 2  # the metacontroller #176 hot loop


def test_setting_deletion_timestamp_bumps_generation(crd_server):
    w = widget()
    w["metadata"]["finalizers"] = ["example.com/hold"]
    created = crd_server.create(w)
    assert created["metadata"]["generation"] == 1
    deleted = crd_server.delete(ObjectRef.of(created))
    assert deleted["metadata"]["deletionTimestamp"]
    assert deleted["metadata"]["generation"] == 2
