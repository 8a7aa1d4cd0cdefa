"""Deletion: finalizers keep the object (deletionTimestamp set), preconditions, propagation policies."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from kamera_cli.model.objects import ObjectRef

A = ObjectRef("v1", "ConfigMap", "default", "a")


def _create(core, finalizers=None):
    meta = {"name": "a"}
    if finalizers:
        meta["finalizers"] = finalizers
    return core.create_namespaced_config_map("default", {"metadata": meta})


def test_delete_without_finalizers_removes_the_object_and_answers_a_success_status(api_client, server):
    # ConfigMaps' store does not set ReturnDeletedObject: Store.finalizeDelete answers a Status
    # (see tests/apiserver/test_write_rules.py for the kinds answered with the object)
    core = client.CoreV1Api(api_client)
    uid = _create(core).metadata.uid
    core.delete_namespaced_config_map("a", "default")  # v37 returns a dict, legacy clients a V1Status
    assert server.journal[-1].status == 200
    assert server.journal[-1].response["details"] == {"name": "a", "kind": "configmaps", "uid": uid}
    assert server.snapshot.get(A) is None
    with pytest.raises(ApiException) as exc:
        core.read_namespaced_config_map("a", "default")
    assert exc.value.status == 404


def test_delete_with_finalizers_sets_deletion_timestamp_and_keeps_the_object(api_client, server, clock):
    core = client.CoreV1Api(api_client)
    _create(core, ["example.com/hold"])
    clock.t = 30
    core.delete_namespaced_config_map("a", "default")
    out = server.journal[-1].response
    assert server.journal[-1].status == 200
    assert out["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:30Z"
    assert out["metadata"]["deletionGracePeriodSeconds"] == 0
    still = core.read_namespaced_config_map("a", "default")
    assert still.metadata.deletion_timestamp is not None


def test_no_new_finalizers_once_deleting(api_client):
    core = client.CoreV1Api(api_client)
    _create(core, ["example.com/hold"])
    core.delete_namespaced_config_map("a", "default")
    obj = core.read_namespaced_config_map("a", "default")
    obj.metadata.finalizers = ["example.com/hold", "example.com/more"]
    with pytest.raises(ApiException) as exc:
        core.replace_namespaced_config_map("a", "default", obj)
    assert exc.value.status == 422
    body = json.loads(exc.value.body)
    assert body["reason"] == "Invalid"
    assert ("metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted"
            in body["message"])


def test_removing_the_last_finalizer_removes_the_object(api_client, server):
    core = client.CoreV1Api(api_client)
    _create(core, ["example.com/hold"])
    core.delete_namespaced_config_map("a", "default")
    obj = core.read_namespaced_config_map("a", "default")
    obj.metadata.finalizers = []
    core.replace_namespaced_config_map("a", "default", obj)
    assert server.snapshot.get(A) is None
    assert server.snapshot.log()[-1].type == "DELETED"


def test_foreground_adds_the_foreground_finalizer(api_client, server):
    core = client.CoreV1Api(api_client)
    _create(core)
    core.delete_namespaced_config_map("a", "default", propagation_policy="Foreground")
    stored = server.snapshot.get(A)
    assert stored["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert stored["metadata"]["deletionTimestamp"]


def test_orphan_adds_the_orphan_finalizer(api_client, server):
    core = client.CoreV1Api(api_client)
    _create(core)
    core.delete_namespaced_config_map("a", "default", body=client.V1DeleteOptions(propagation_policy="Orphan"))
    assert server.snapshot.get(A)["metadata"]["finalizers"] == ["orphan"]


@pytest.mark.parametrize("field", ["uid", "resource_version"])
def test_preconditions_mismatch_is_409(api_client, field):
    core = client.CoreV1Api(api_client)
    _create(core)
    pre = client.V1Preconditions(**{field: "not-it"})
    with pytest.raises(ApiException) as exc:
        core.delete_namespaced_config_map("a", "default", body=client.V1DeleteOptions(preconditions=pre))
    assert exc.value.status == 409
    assert "in the precondition (not-it) does not match" in json.loads(exc.value.body)["message"]


def test_preconditions_match_deletes(api_client, server):
    core = client.CoreV1Api(api_client)
    created = _create(core)
    pre = client.V1Preconditions(uid=created.metadata.uid, resource_version=created.metadata.resource_version)
    core.delete_namespaced_config_map("a", "default", body=client.V1DeleteOptions(preconditions=pre))
    assert server.snapshot.get(A) is None


def test_deletecollection_honours_the_label_selector(api_client, server):
    core = client.CoreV1Api(api_client)
    for name, team in (("a", "x"), ("b", "y"), ("c", "x")):
        core.create_namespaced_config_map("default", {"metadata": {"name": name, "labels": {"team": team}}})
    core.delete_collection_namespaced_config_map("default", label_selector="team=x")
    left = core.list_namespaced_config_map("default")
    assert [i.metadata.name for i in left.items] == ["b"]


def test_delete_of_a_missing_object_is_404(api_client):
    with pytest.raises(ApiException) as exc:
        client.CoreV1Api(api_client).delete_namespaced_config_map("zzz", "default")
    assert exc.value.status == 404
    assert json.loads(exc.value.body)["message"] == 'configmaps "zzz" not found'


def test_recreating_a_terminating_object_says_it_is_being_deleted(api_client):
    core = client.CoreV1Api(api_client)
    _create(core, ["example.com/hold"])
    core.delete_namespaced_config_map("a", "default")
    with pytest.raises(ApiException) as exc:
        _create(core)
    body = json.loads(exc.value.body)
    assert exc.value.status == 409 and body["reason"] == "AlreadyExists"
    assert body["message"] == 'object is being deleted: configmaps "a" already exists'
