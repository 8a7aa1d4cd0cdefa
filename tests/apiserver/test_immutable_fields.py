"""Immutable fields of built-ins: 422 Invalid like the real server, on PUT and PATCH alike."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from kamera_cli.apiserver.errors import ApiError

POD = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "a"}]}}
DEPLOY = {"metadata": {"name": "d"}, "spec": {
    "selector": {"matchLabels": {"app": "d"}},
    "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}}


def _invalid(exc: pytest.ExceptionInfo[ApiException]) -> dict:
    assert exc.value.status == 422
    body = json.loads(exc.value.body)
    assert body["reason"] == "Invalid"
    return body


def test_pod_image_may_change_but_not_the_rest_of_the_spec(api_client):
    core = client.CoreV1Api(api_client)
    core.create_namespaced_pod("default", POD)
    pod = core.read_namespaced_pod("p", "default")
    pod.spec.containers[0].image = "b"
    assert core.replace_namespaced_pod("p", "default", pod).spec.containers[0].image == "b"
    pod = core.read_namespaced_pod("p", "default")
    pod.spec.containers[0].args = ["--new"]
    with pytest.raises(ApiException) as exc:
        core.replace_namespaced_pod("p", "default", pod)
    body = _invalid(exc)
    assert body["message"].startswith('Pod "p" is invalid: spec: Forbidden: pod updates may not change fields')


TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoExecute", "tolerationSeconds": 30}


def _tolerant_pod(api_client) -> tuple[client.CoreV1Api, client.V1Pod]:
    core = client.CoreV1Api(api_client)
    core.create_namespaced_pod("default", {**POD, "spec": {**POD["spec"], "tolerations": [dict(TOLERATION)]}})
    return core, core.read_namespaced_pod("p", "default")


def test_a_pod_update_may_add_tolerations_and_change_their_seconds(api_client):
    # ValidatePodUpdate / validateOnlyAddedTolerations: additions, and tolerationSeconds, are allowed
    core, pod = _tolerant_pod(api_client)
    pod.spec.tolerations[0].toleration_seconds = 60
    pod.spec.tolerations.append(client.V1Toleration(key="gpu", operator="Exists", effect="NoSchedule"))
    replaced = core.replace_namespaced_pod("p", "default", pod)
    assert [(t.key, t.toleration_seconds) for t in replaced.spec.tolerations] == [("dedicated", 60), ("gpu", None)]


@pytest.mark.parametrize("change", ["remove", "modify"])
def test_a_pod_update_may_not_remove_or_modify_a_toleration(api_client, change):
    core, pod = _tolerant_pod(api_client)
    if change == "remove":
        pod.spec.tolerations = [client.V1Toleration(key="gpu", operator="Exists", effect="NoSchedule")]
    else:
        pod.spec.tolerations[0].value = "web"
    with pytest.raises(ApiException) as exc:
        core.replace_namespaced_pod("p", "default", pod)
    assert [(c["reason"], c["field"], c["message"]) for c in _invalid(exc)["details"]["causes"]] == [
        ("FieldValueForbidden", "spec.tolerations",
         "Forbidden: existing toleration can not be modified except its tolerationSeconds")]
    with pytest.raises(ApiException) as exc:  # a JSON patch removing it is refused alike
        core.patch_namespaced_pod("p", "default", [{"op": "remove", "path": "/spec/tolerations/0"}])
    assert _invalid(exc)["details"]["causes"][0]["field"] == "spec.tolerations"


def test_a_pod_update_may_remove_scheduling_gates_but_not_add_them(api_client):
    # ValidatePodUpdate / validateOnlyDeletedSchedulingGates: removing gates is how a pod is released
    core = client.CoreV1Api(api_client)
    gates = [{"name": "example.com/quota"}, {"name": "example.com/data"}]
    core.create_namespaced_pod("default", {**POD, "spec": {**POD["spec"], "schedulingGates": gates}})
    pod = core.read_namespaced_pod("p", "default")
    pod.spec.scheduling_gates = [client.V1PodSchedulingGate(name="example.com/data")]
    assert [g.name for g in core.replace_namespaced_pod("p", "default", pod).spec.scheduling_gates] == [
        "example.com/data"]
    with pytest.raises(ApiException) as exc:
        core.patch_namespaced_pod("p", "default", [{"op": "add", "path": "/spec/schedulingGates/-",
                                                    "value": {"name": "example.com/late"}}])
    assert [(c["reason"], c["field"], c["message"]) for c in _invalid(exc)["details"]["causes"]] == [
        ("FieldValueForbidden", "spec.schedulingGates[1].name",
         "Forbidden: only deletion is allowed, but found new scheduling gate 'example.com/late'")]
    assert core.patch_namespaced_pod("p", "default", [{"op": "remove", "path": "/spec/schedulingGates"}]
                                     ).spec.scheduling_gates is None


def test_a_gated_pod_may_gain_node_selector_entries_only(api_client):
    # ValidatePodUpdate: while gated, additions to spec.nodeSelector are allowed, no mutations or deletions
    core = client.CoreV1Api(api_client)
    core.create_namespaced_pod("default", {**POD, "spec": {**POD["spec"], "nodeSelector": {"disk": "ssd"},
                                                           "schedulingGates": [{"name": "example.com/q"}]}})
    patched = core.patch_namespaced_pod("p", "default", {"spec": {"nodeSelector": {"zone": "a"}}})
    assert patched.spec.node_selector == {"disk": "ssd", "zone": "a"}
    with pytest.raises(ApiException) as exc:
        core.patch_namespaced_pod("p", "default", {"spec": {"nodeSelector": {"disk": "hdd"}}})
    assert [(c["reason"], c["field"], c["message"]) for c in _invalid(exc)["details"]["causes"]] == [
        ("FieldValueInvalid", "spec.nodeSelector",
         'Invalid value: map[string]string{"disk":"hdd", "zone":"a"}: only additions to spec.nodeSelector are '
         "allowed (no mutations or deletions)")]
    core.patch_namespaced_pod("p", "default", [{"op": "remove", "path": "/spec/schedulingGates"}])
    with pytest.raises(ApiException) as exc:  # released: the spec is fixed again
        core.patch_namespaced_pod("p", "default", {"spec": {"nodeSelector": {"rack": "1"}}})
    assert _invalid(exc)["details"]["causes"][0]["field"] == "spec"


@pytest.mark.parametrize(("before", "after", "message"), [
    (None, 60, None), (60, 30, None),
    (60, 90, "Invalid value: 90: must be less than or equal to previous value"),
    (60, None, "Invalid value: null: must not update from a positive integer to nil value")])
def test_a_pod_deadline_may_be_set_or_shortened_only(server, before, after, message):
    # ValidatePodUpdate's activeDeadlineSeconds rules
    spec = {**POD["spec"], **({"activeDeadlineSeconds": before} if before else {})}
    pod = server.create({"apiVersion": "v1", "kind": "Pod", "metadata": {**POD["metadata"], "namespace": "default"},
                         "spec": spec})
    pod["spec"] = {k: v for k, v in pod["spec"].items() if k != "activeDeadlineSeconds"}
    if after is not None:
        pod["spec"]["activeDeadlineSeconds"] = after
    if message is None:
        assert server.update(pod)["spec"].get("activeDeadlineSeconds") == after
        return
    with pytest.raises(ApiError) as exc:
        server.update(pod)
    assert [(c["field"], c["message"]) for c in exc.value.body["details"]["causes"]] == [
        ("spec.activeDeadlineSeconds", message)]


def test_a_pod_grace_period_is_fixed_unless_a_negative_one_becomes_1(server):
    pod = server.create({"apiVersion": "v1", "kind": "Pod", "metadata": {**POD["metadata"], "namespace": "default"},
                         "spec": {**POD["spec"], "terminationGracePeriodSeconds": -5}})
    with pytest.raises(ApiError) as exc:
        server.update({**pod, "spec": {**pod["spec"], "terminationGracePeriodSeconds": 10}})
    assert exc.value.body["details"]["causes"][0]["field"] == "spec"
    assert server.update({**pod, "spec": {**pod["spec"], "terminationGracePeriodSeconds": 1}}
                         )["spec"]["terminationGracePeriodSeconds"] == 1


def test_deployment_selector_is_immutable(api_client):
    apps = client.AppsV1Api(api_client)
    d = apps.create_namespaced_deployment("default", DEPLOY)
    d.spec.selector.match_labels = {"app": "other"}
    d.spec.template.metadata.labels = {"app": "other"}
    with pytest.raises(ApiException) as exc:
        apps.replace_namespaced_deployment("d", "default", d)
    body = _invalid(exc)
    assert body["details"]["causes"][0]["field"] == "spec.selector"
    assert "field is immutable" in body["message"]


def test_immutable_configmap_refuses_data_changes(api_client):
    core = client.CoreV1Api(api_client)
    core.create_namespaced_config_map("default", {"metadata": {"name": "a"}, "data": {"k": "v"}, "immutable": True})
    with pytest.raises(ApiException) as exc:
        core.replace_namespaced_config_map("a", "default", {"metadata": {"name": "a"}, "data": {"k": "w"},
                                                            "immutable": True})
    assert _invalid(exc)["details"]["causes"][0]["field"] == "data"


def test_status_writes_are_not_subject_to_spec_immutability(api_client):
    core = client.CoreV1Api(api_client)
    core.create_namespaced_pod("default", POD)
    pod = core.read_namespaced_pod("p", "default")
    pod.status.phase = "Running"
    assert core.replace_namespaced_pod_status("p", "default", pod).status.phase == "Running"


def test_secret_string_data_is_stored_as_base64_data(api_client):
    core = client.CoreV1Api(api_client)
    out = core.create_namespaced_secret("default", {"metadata": {"name": "s"}, "stringData": {"pw": "hunter2"},
                                                    "data": {"other": "eA=="}})
    assert out.data == {"other": "eA==", "pw": "aHVudGVyMg=="}
    assert out.string_data is None
    with pytest.raises(ApiException) as exc:
        core.replace_namespaced_secret("s", "default", {"metadata": {"name": "s"}, "type": "kubernetes.io/tls",
                                                        "data": out.data})
    assert _invalid(exc)["details"]["causes"][0]["field"] == "type"


def test_unknown_fields_of_builtins_are_dropped_like_the_real_decoder_does(server):
    out = server.create({"apiVersion": "apps/v1", "kind": "Deployment",
                         "metadata": {"name": "d", "namespace": "default", "labelz": {}}, "typo": 1, "spec": {
                             **DEPLOY["spec"], "replicaz": 3,
                             "template": {"metadata": {"labels": {"app": "d"}}, "spec": {
                                 "containers": [{"name": "c", "image": "x", "imagePullPolicee": "Always"}]}}}})
    assert "typo" not in out and "replicaz" not in out["spec"] and "labelz" not in out["metadata"]
    container = out["spec"]["template"]["spec"]["containers"][0]
    assert "imagePullPolicee" not in container and container["imagePullPolicy"] == "Always"  # defaulted
    assert out["spec"]["selector"] == DEPLOY["spec"]["selector"]
