"""Status subresource: the main endpoint keeps the stored status; /status changes only status."""

from __future__ import annotations

from kubernetes import client

from .crds import widget


def test_main_endpoint_ignores_status(crd_client, crd_server):
    api = client.CustomObjectsApi(crd_client)
    created = api.create_namespaced_custom_object("example.com", "v1", "default", "widgets",
                                                  {**widget(), "status": {"ready": True}})
    assert "status" not in created  # status is dropped on create as well
    created["status"] = {"ready": True}
    created["spec"]["size"] = "large"
    out = api.replace_namespaced_custom_object("example.com", "v1", "default", "widgets", "w", created)
    assert out["spec"]["size"] == "large"
    assert "status" not in out


def test_status_endpoint_ignores_everything_but_status(crd_client):
    api = client.CustomObjectsApi(crd_client)
    created = api.create_namespaced_custom_object("example.com", "v1", "default", "widgets", widget())
    created["status"] = {"ready": True}
    created["spec"]["size"] = "large"
    created["metadata"]["labels"] = {"sneaky": "yes"}
    out = api.replace_namespaced_custom_object_status("example.com", "v1", "default", "widgets", "w", created)
    assert out["status"] == {"ready": True}
    assert out["spec"]["size"] == "small"
    assert "labels" not in out["metadata"]


def test_pod_status_through_typed_client(api_client):
    core = client.CoreV1Api(api_client)
    pod = core.create_namespaced_pod("default", {"metadata": {"name": "p"},
                                                 "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
    assert pod.status.phase == "Pending"
    pod.status.phase = "Running"
    pod.spec.node_name = "ignored"
    out = core.replace_namespaced_pod_status("p", "default", pod)
    assert out.status.phase == "Running"
    assert out.spec.node_name is None


def test_status_patch_via_merge_patch(crd_client, fake_patching):
    api = client.CustomObjectsApi(crd_client)
    api.create_namespaced_custom_object("example.com", "v1", "default", "widgets", widget())
    out = api.patch_namespaced_custom_object_status("example.com", "v1", "default", "widgets", "w",
                                                    {"status": {"ready": True}, "spec": {"size": "large"}})
    assert out["status"] == {"ready": True}
    assert out["spec"]["size"] == "small"
