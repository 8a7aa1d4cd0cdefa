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


# -- per-kind status strategies (pkg/registry/**/strategy.go, *StatusStrategy.PrepareForUpdate) -------

def _status_write(server, obj, **meta):
    live = server.create(obj)
    sent = {**live, "metadata": {**live["metadata"], **meta}, "status": {"observedGeneration": 1}}
    return server.update(sent, subresource="status")


def test_a_built_in_status_write_keeps_the_requests_metadata(server):
    # jobStatusStrategy resets only the spec: labels, annotations and finalizers of the request stick
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "default"},
           "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}}}
    out = _status_write(server, job, labels={"team": "a"}, annotations={"note": "n"},
                        finalizers=["example.com/hold"])
    meta = out["metadata"]
    assert meta["labels"] == {"team": "a"} and meta["annotations"] == {"note": "n"}
    assert meta["finalizers"] == ["example.com/hold"]


def test_a_deployment_status_write_keeps_the_stored_labels(server):
    # deploymentStatusStrategy also resets the labels (annotations stick: the revision lives there)
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "default",
                                                                       "labels": {"a": "1"}},
           "spec": {"selector": {"matchLabels": {"a": "1"}}, "template": {
               "metadata": {"labels": {"a": "1"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}}
    out = _status_write(server, dep, labels={"a": "2"}, annotations={"deployment.kubernetes.io/revision": "1"})
    assert out["metadata"]["labels"] == {"a": "1"}
    assert out["metadata"]["annotations"] == {"deployment.kubernetes.io/revision": "1"}


def test_a_pod_status_write_keeps_the_stored_owner_references(server):
    # podStatusStrategy: owner references come from the stored pod (old kubelets corrupted them)
    owner = server.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "o", "namespace": "default"}})
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": owner["metadata"]["uid"]}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "x"}]}}
    out = _status_write(server, pod, ownerReferences=[ref], labels={"x": "y"})
    assert "ownerReferences" not in out["metadata"] and out["metadata"]["labels"] == {"x": "y"}
