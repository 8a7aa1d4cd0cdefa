"""Namespace lifecycle: 404 for a missing namespace, Terminating, 403 on create, the controller actor."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from kamera_cli.apiserver import namespace_step, namespace_work
from kamera_cli.model.objects import ObjectRef

NS = ObjectRef("v1", "Namespace", "", "team")


def test_create_in_a_missing_namespace_is_404(api_client):
    with pytest.raises(ApiException) as exc:
        client.CoreV1Api(api_client).create_namespaced_config_map("nowhere", {"metadata": {"name": "a"}})
    assert exc.value.status == 404
    assert json.loads(exc.value.body)["message"] == 'namespaces "nowhere" not found'


def test_new_namespace_is_active_with_the_kubernetes_finalizer(api_client):
    ns = client.CoreV1Api(api_client).create_namespace({"metadata": {"name": "team"}})
    assert ns.status.phase == "Active"
    assert ns.spec.finalizers == ["kubernetes"]


def test_deleting_a_namespace_terminates_it_and_refuses_new_content(api_client, server):
    core = client.CoreV1Api(api_client)
    core.create_namespace({"metadata": {"name": "team"}})
    core.create_namespaced_config_map("team", {"metadata": {"name": "a"}})
    core.delete_namespace("team")
    ns = core.read_namespace("team")
    assert ns.status.phase == "Terminating"
    assert ns.metadata.deletion_timestamp is not None
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_config_map("team", {"metadata": {"name": "b"}})
    assert exc.value.status == 403
    body = json.loads(exc.value.body)
    assert body["reason"] == "Forbidden"
    assert body["message"] == ('configmaps "b" is forbidden: unable to create new content in namespace team '
                               "because it is being terminated")


def test_namespace_controller_empties_then_finalizes(api_client, server):
    core = client.CoreV1Api(api_client)
    core.create_namespace({"metadata": {"name": "team"}})
    core.create_namespaced_config_map("team", {"metadata": {"name": "a"}})
    core.create_namespaced_config_map("team", {"metadata": {"name": "held", "finalizers": ["x.io/f"]}})
    assert namespace_work(server.snapshot, server.registry) == []
    core.delete_namespace("team")
    work = namespace_work(server.snapshot, server.registry)
    assert [(w.actor, w.action, w.target) for w in work] == [("namespace-controller", "delete-content", NS)]
    namespace_step(server, work[0])
    assert server.snapshot.get(ObjectRef("v1", "ConfigMap", "team", "a")) is None
    assert namespace_work(server.snapshot, server.registry) == []  # waits for the finalizer
    held = core.read_namespaced_config_map("held", "team")
    held.metadata.finalizers = []
    core.replace_namespaced_config_map("held", "team", held)
    work = namespace_work(server.snapshot, server.registry)
    assert [w.action for w in work] == ["finalize"]
    namespace_step(server, work[0])
    assert server.snapshot.get(NS) is None


@pytest.mark.parametrize("name", ["default", "kube-system", "kube-public"])
def test_system_namespaces_may_not_be_deleted(api_client, name):
    with pytest.raises(ApiException) as exc:
        client.CoreV1Api(api_client).delete_namespace(name)
    assert exc.value.status == 403
    message = json.loads(exc.value.body)["message"]
    assert message == f'namespaces "{name}" is forbidden: this namespace may not be deleted'


@pytest.mark.parametrize("status", [{}, {"conditions": []}, None])
def test_a_status_write_without_phase_is_defaulted_to_active(api_client, status):
    """SetDefaults_NamespaceStatus (pkg/apis/core/v1/defaults.go): an empty phase is Active, on every
    write, the status subresource's included."""
    core = client.CoreV1Api(api_client)
    core.create_namespace({"metadata": {"name": "team", "labels": {"a": "1"}}})
    body = {"metadata": {"name": "team"}, "status": status}
    assert core.replace_namespace_status("team", body).status.phase == "Active"
    assert core.replace_namespace("team", body).status.phase == "Active"
    assert core.read_namespace("team").status.phase == "Active"


def test_a_terminating_namespace_status_without_phase_is_refused(api_client):
    """Defaulted to Active, the phase of a namespace being deleted is invalid (ValidateNamespaceStatusUpdate)."""
    core = client.CoreV1Api(api_client)
    core.create_namespace({"metadata": {"name": "team"}})
    core.create_namespaced_config_map("team", {"metadata": {"name": "a"}})
    core.delete_namespace("team")
    with pytest.raises(ApiException) as exc:
        core.replace_namespace_status("team", {"metadata": {"name": "team"}, "status": {}})
    assert exc.value.status == 422
    assert core.read_namespace("team").status.phase == "Terminating"
