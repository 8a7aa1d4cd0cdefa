"""Storage-layer write rules, each case naming the upstream function it follows.

etcd3 ``store.Create`` (resourceVersion on create), ``Store.Update`` with
``defaultUpdatedObjectInfo.Preconditions`` and ``APIObjectVersioner`` (uid precondition, "0"),
``Store.Delete``/``finalizeDelete`` and ``ReturnDeletedObject`` (the DELETE answer),
``Store.DeleteCollection`` (the list it answers).
"""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from kamera_cli.model.objects import ObjectRef

from .crds import widget

WIDGETS = ("example.com", "v1", "default", "widgets")


def _cm(name: str = "a", **meta: str) -> dict:
    return {"metadata": {"name": name, **meta}, "data": {"k": "v"}}


def _fails(call, *args, **kwargs) -> tuple[int, dict]:
    with pytest.raises(ApiException) as exc:
        call(*args, **kwargs)
    return exc.value.status, json.loads(exc.value.body)


# -- etcd3 store.Create: "resourceVersion should not be set on objects to be created" ----------------

def test_create_with_a_resource_version_is_a_500_with_no_reason(api_client, server):
    core = client.CoreV1Api(api_client)
    status, body = _fails(core.create_namespaced_config_map, "default", _cm(resourceVersion="12"))
    assert status == 500
    assert body["message"] == "resourceVersion should not be set on objects to be created"
    assert "reason" not in body and body["status"] == "Failure"  # ErrorToAPIStatus: StatusReasonUnknown
    assert _fails(core.read_namespaced_config_map, "a", "default")[0] == 404  # nothing was stored


def test_copying_a_live_object_into_a_create_is_refused(api_client):
    # the classic bug: read an object, change its name, create it without stripping the RV
    core = client.CoreV1Api(api_client)
    live = core.create_namespaced_config_map("default", _cm())
    copy = client.ApiClient().sanitize_for_serialization(live)
    copy["metadata"] = {"name": "b", "resourceVersion": copy["metadata"]["resourceVersion"]}
    assert _fails(core.create_namespaced_config_map, "default", copy)[0] == 500


def test_validation_answers_before_the_store_and_the_store_before_already_exists(api_client):
    # BeforeCreate (validation) runs before storage.Create, which checks the RV before the key
    core = client.CoreV1Api(api_client)
    status, body = _fails(core.create_namespaced_config_map, "default", _cm("Bad_Name", resourceVersion="3"))
    assert status == 422 and body["reason"] == "Invalid"
    core.create_namespaced_config_map("default", _cm())
    assert _fails(core.create_namespaced_config_map, "default", _cm(resourceVersion="3"))[0] == 500
    assert _fails(core.create_namespaced_config_map, "default", _cm())[0] == 409


def test_zero_and_non_numeric_resource_versions_pass_on_create(api_client):
    # ObjectResourceVersion reads "0" as 0 and cannot read "abc" (the check is skipped, the RV cleared)
    core = client.CoreV1Api(api_client)
    assert core.create_namespaced_config_map("default", _cm("a", resourceVersion="0")).metadata.resource_version
    assert core.create_namespaced_config_map("default", _cm("b", resourceVersion="abc")).metadata.resource_version


def test_a_dry_run_create_with_a_resource_version_is_accepted(api_client):
    # DryRunnableStorage.Create never reaches the etcd3 store
    core = client.CoreV1Api(api_client)
    out = core.create_namespaced_config_map("default", _cm(resourceVersion="7"), dry_run="All")
    assert out.metadata.name == "a"


# -- Store.Update: the uid the object carries is a precondition; "0" is unconditional -----------------

def test_update_with_a_stale_uid_is_a_conflict_worded_by_the_storage_layer(api_client):
    core = client.CoreV1Api(api_client)
    live = core.create_namespaced_config_map("default", _cm())
    body = _cm(uid="0d1f8c4e-0000-4000-8000-000000000000", resourceVersion=live.metadata.resource_version)
    status, answer = _fails(core.replace_namespaced_config_map, "a", "default", body)
    assert status == 409 and answer["reason"] == "Conflict"
    assert answer["message"] == (
        'Operation cannot be fulfilled on configmaps "a": StorageError: invalid object, Code: 4, '
        "Key: /registry/configmaps/default/a, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: "
        f"UID in precondition: 0d1f8c4e-0000-4000-8000-000000000000, UID in object meta: {live.metadata.uid}")


def test_the_uid_precondition_is_checked_before_the_resource_version(api_client):
    core = client.CoreV1Api(api_client)
    core.create_namespaced_config_map("default", _cm())
    status, answer = _fails(core.replace_namespaced_config_map, "a", "default", _cm(uid="other", resourceVersion="1"))
    assert status == 409 and "Precondition failed: UID in precondition: other" in answer["message"]


def test_update_with_the_right_uid_goes_through(api_client):
    core = client.CoreV1Api(api_client)
    live = core.create_namespaced_config_map("default", _cm())
    out = core.replace_namespaced_config_map("a", "default", {**_cm(uid=live.metadata.uid), "data": {"k": "w"}})
    assert out.data == {"k": "w"}


def test_a_patch_that_changes_the_uid_is_a_conflict(api_client):
    core = client.CoreV1Api(api_client)
    core.create_namespaced_config_map("default", _cm())
    status, answer = _fails(core.patch_namespaced_config_map, "a", "default", {"metadata": {"uid": "forged"}})
    assert status == 409 and "UID in precondition: forged" in answer["message"]


def test_resource_version_zero_on_update_is_unconditional_for_builtins(api_client):
    core = client.CoreV1Api(api_client)
    core.create_namespaced_config_map("default", _cm())
    core.patch_namespaced_config_map("a", "default", {"data": {"k": "w"}})  # the RV moves on
    out = core.replace_namespaced_config_map("a", "default", {**_cm(resourceVersion="0"), "data": {"k": "x"}})
    assert out.data == {"k": "x"}


def test_resource_version_zero_on_update_is_refused_for_custom_resources(crd_client):
    api = client.CustomObjectsApi(crd_client)
    api.create_namespaced_custom_object(*WIDGETS, widget())
    body = widget(size="large")
    body["metadata"]["resourceVersion"] = "0"
    status, answer = _fails(api.replace_namespaced_custom_object, *WIDGETS, "w", body)
    assert status == 422
    assert "metadata.resourceVersion: Invalid value: 0x0: must be specified for an update" in answer["message"]


def test_a_merge_patch_removing_the_resource_version_of_a_custom_resource_is_refused(crd_client):
    api = client.CustomObjectsApi(crd_client)
    api.create_namespaced_custom_object(*WIDGETS, widget())
    status, _ = _fails(api.patch_namespaced_custom_object, *WIDGETS, "w", {"metadata": {"resourceVersion": None}})
    assert status == 422


def test_a_non_numeric_resource_version_on_update_fails_inside_the_store(api_client):
    core = client.CoreV1Api(api_client)
    core.create_namespaced_config_map("default", _cm())
    status, answer = _fails(core.replace_namespaced_config_map, "a", "default", _cm(resourceVersion="abc"))
    assert status == 500 and answer["message"] == 'strconv.ParseUint: parsing "abc": invalid syntax'


# -- Store.Delete / finalizeDelete: the answer per kind ----------------------------------------------

def test_deleting_a_deployment_answers_a_status_naming_group_and_resource(api_client, server):
    apps = client.AppsV1Api(api_client)
    dep = apps.create_namespaced_deployment("default", {
        "metadata": {"name": "d"}, "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
            "metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}})
    apps.delete_namespaced_deployment("d", "default")
    assert server.journal[-1].response == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
        "details": {"name": "d", "group": "apps", "kind": "deployments", "uid": dep.metadata.uid}}


@pytest.mark.parametrize("kind", ["Pod", "Service", "ServiceAccount"])
def test_kinds_whose_store_returns_the_deleted_object(server, kind):
    spec = {"Pod": {"containers": [{"name": "c", "image": "x"}]}, "Service": {"ports": [{"port": 80}]},
            "ServiceAccount": None}[kind]
    obj = {"apiVersion": "v1", "kind": kind, "metadata": {"name": "x", "namespace": "default"}}
    if spec:
        obj["spec"] = spec
    server.create(obj)
    out = server.delete(ObjectRef("v1", kind, "default", "x"))
    assert out["kind"] == kind and out["metadata"]["name"] == "x"


def test_custom_resources_return_the_deleted_object(crd_client):
    api = client.CustomObjectsApi(crd_client)
    api.create_namespaced_custom_object(*WIDGETS, widget())
    out = api.delete_namespaced_custom_object(*WIDGETS, "w")
    assert out["kind"] == "Widget" and out["metadata"]["name"] == "w"


def test_an_object_held_by_a_finalizer_is_answered_as_itself(api_client, server):
    # Store.Delete returns the object when updateForGracefulDeletionAndFinalizers keeps it
    core = client.CoreV1Api(api_client)
    core.create_namespaced_config_map("default", _cm(finalizers=["example.com/hold"]))
    core.delete_namespaced_config_map("a", "default")
    body = server.journal[-1].response
    assert body["kind"] == "ConfigMap" and body["metadata"]["deletionTimestamp"]


def test_delete_precondition_failures_are_worded_by_before_delete(api_client):
    # rest.BeforeDelete checks them before the storage layer (test_graceful_deletion.py has both fields)
    core = client.CoreV1Api(api_client)
    live = core.create_namespaced_config_map("default", _cm())
    status, answer = _fails(core.delete_namespaced_config_map, "a", "default",
                            body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="nope")))
    assert status == 409
    assert answer["message"] == (f'Operation cannot be fulfilled on ConfigMap "a": the UID in the precondition '
                                 f'(nope) does not match the UID in record ({live.metadata.uid}). The object '
                                 f'might have been deleted and then recreated')
    assert answer["details"] == {"name": "a", "kind": "ConfigMap"}


def test_deletecollection_answers_the_objects_as_listed(api_client, server):
    core = client.CoreV1Api(api_client)
    core.create_namespaced_config_map("default", _cm("a"))
    core.create_namespaced_config_map("default", _cm("b", finalizers=["example.com/hold"]))
    core.delete_collection_namespaced_config_map("default")
    items = server.journal[-1].response["items"]
    assert [i["metadata"]["name"] for i in items] == ["a", "b"]
    assert all("deletionTimestamp" not in i["metadata"] for i in items)  # the state before deletion


# -- Store.Update with AllowCreateOnUpdate: a PUT creates the kinds whose strategy allows it ---------

def test_a_put_creates_a_missing_lease_and_answers_201(api_client, server):
    coordination = client.CoordinationV1Api(api_client)
    lease = {"metadata": {"name": "leader", "resourceVersion": "7"},  # no RV check when creating this way
             "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15}}
    out = coordination.replace_namespaced_lease("leader", "default", lease)
    assert server.journal[-1].status == 201 and out.spec.holder_identity == "me"
    assert out.metadata.uid and out.metadata.resource_version != "7"


@pytest.mark.parametrize(("call", "body"), [
    ("replace_namespaced_config_map", {"metadata": {"name": "a"}}),
    ("replace_namespaced_pod", {"metadata": {"name": "a"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}),
])
def test_a_put_to_a_missing_object_of_other_kinds_is_404(api_client, call, body):
    status, answer = _fails(getattr(client.CoreV1Api(api_client), call), "a", "default", body)
    assert status == 404 and answer["reason"] == "NotFound"


def test_a_put_creates_rbac_objects_and_services(api_client, server):
    rbac = client.RbacAuthorizationV1Api(api_client)
    rbac.replace_namespaced_role_binding("rb", "default", {
        "metadata": {"name": "rb"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                                 "name": "r"}})
    svc = client.CoreV1Api(api_client).replace_namespaced_service("s", "default", {
        "metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}})
    assert svc.spec.cluster_ip  # created through the ordinary create path: an address is allocated
    assert server.snapshot.get(ObjectRef("rbac.authorization.k8s.io/v1", "RoleBinding", "default", "rb"))


def test_a_put_to_a_missing_custom_resource_is_404(api_client, server):
    from kamera_cli.apiserver import Registry

    from .conftest import make_server
    from .crds import WIDGET

    crs = make_server(Registry.builtin().with_crds([WIDGET]))
    resp = crs.handle("PUT", "/apis/example.com/v1/namespaces/default/widgets/w", [],
                      {"Content-Type": "application/json"}, json.dumps(widget()).encode())
    assert resp.status == 404
