"""Built-in validation on create and update, each case naming the upstream function it follows.

pkg/apis/core/validation (ValidatePodSpec, validateContainerCommon, validateContainerPorts,
ValidateVolumeMounts, ValidateResourceRequirements, validateProbe, ValidateService, ValidateConfigMap,
ValidateSecret, ValidatePersistentVolumeClaim*), pkg/apis/apps/validation, pkg/apis/batch/validation,
staging/src/k8s.io/apimachinery/pkg/api/validation/objectmeta.go; error bodies as ``NewInvalid`` writes them.
"""

from __future__ import annotations

import copy
import json

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from kamera_cli.apiserver.errors import ApiError
from kamera_cli.apiserver.validation.kinds import cron_error

LABELS = {"app": "w"}
CONTAINER = {"name": "c", "image": "nginx:1"}


def _deploy(**spec):
    body = {"selector": {"matchLabels": dict(LABELS)},
            "template": {"metadata": {"labels": dict(LABELS)}, "spec": {"containers": [dict(CONTAINER)]}}}
    body.update(spec)
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "default"},
            "spec": body}


def _pod(**spec):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [dict(CONTAINER)], **spec}}


def _refused(server, obj, *, update=False) -> dict:
    with pytest.raises(ApiError) as exc:
        (server.update if update else server.create)(copy.deepcopy(obj))
    assert exc.value.status == 422 and exc.value.body["reason"] == "Invalid"
    return exc.value.body


def _causes(body) -> list[tuple[str, str, str]]:
    return [(c["reason"], c["field"], c["message"]) for c in body["details"]["causes"]]


# -- ValidatePodSpec / validateContainerCommon --------------------------------------------------------

def test_container_names_are_dns_labels_and_unique(server):
    body = _refused(server, _pod(containers=[{"name": "Bad_Name", "image": "x"}, {"name": "ok", "image": "x"},
                                             {"name": "ok", "image": "x"}]))
    assert _causes(body) == [
        ("FieldValueInvalid", "spec.containers[0].name",
         'Invalid value: "Bad_Name": a lowercase RFC 1123 label must consist of lower case alphanumeric characters '
         "or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used "
         "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"),
        ("FieldValueDuplicate", "spec.containers[2].name", 'Duplicate value: "ok"')]
    assert body["message"].startswith('Pod "p" is invalid: [spec.containers[0].name: Invalid value: "Bad_Name"')


def test_an_init_container_may_not_reuse_a_container_name(server):
    body = _refused(server, _pod(initContainers=[{"name": "c", "image": "x"}]))
    assert ("FieldValueDuplicate", "spec.initContainers[0].name", 'Duplicate value: "c"') in _causes(body)


def test_image_is_required(server):
    body = _refused(server, _pod(containers=[{"name": "c"}]))
    assert body["message"] == 'Pod "p" is invalid: spec.containers[0].image: Required value'


def test_container_ports(server):
    # validateContainerPorts: range, protocol, IANA names, unique names
    body = _refused(server, _pod(containers=[{**CONTAINER, "ports": [
        {"containerPort": 70000, "name": "http"}, {"containerPort": 81, "name": "http"},
        {"containerPort": 82, "protocol": "ICMP"}, {"containerPort": 83, "name": "way-too-long-port-name"}]}]))
    causes = _causes(body)
    assert ("FieldValueInvalid", "spec.containers[0].ports[0].containerPort",
            "Invalid value: 70000: must be between 1 and 65535, inclusive") in causes
    assert ("FieldValueDuplicate", "spec.containers[0].ports[1].name", 'Duplicate value: "http"') in causes
    assert ("FieldValueNotSupported", "spec.containers[0].ports[2].protocol",
            'Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"') in causes
    assert ("FieldValueInvalid", "spec.containers[0].ports[3].name",
            'Invalid value: "way-too-long-port-name": must be no more than 15 characters') in causes


def test_volume_mounts_must_name_a_volume(server):
    # ValidateVolumeMounts: IsMatchedVolume -> field.NotFound
    body = _refused(server, _pod(containers=[{**CONTAINER, "volumeMounts": [{"name": "data", "mountPath": "/d"}]}]))
    assert _causes(body) == [("FieldValueNotFound", "spec.containers[0].volumeMounts[0].name", 'Not found: "data"')]


def test_volumes_are_unique_and_mount_paths_too(server):
    body = _refused(server, _pod(volumes=[{"name": "v", "emptyDir": {}}, {"name": "v", "emptyDir": {}}],
                                 containers=[{**CONTAINER, "volumeMounts": [{"name": "v", "mountPath": "/d"},
                                                                            {"name": "v", "mountPath": "/d"}]}]))
    causes = _causes(body)
    assert ("FieldValueDuplicate", "spec.volumes[1].name", 'Duplicate value: "v"') in causes
    assert ("FieldValueInvalid", "spec.containers[0].volumeMounts[1].mountPath",
            'Invalid value: "/d": must be unique') in causes


def test_requests_may_not_exceed_limits(server):
    # ValidateResourceRequirements (after canonicalisation: the values are shown canonical)
    body = _refused(server, _pod(containers=[{**CONTAINER, "resources": {"limits": {"cpu": "0.5"},
                                                                        "requests": {"cpu": "1"}}}]))
    assert _causes(body) == [("FieldValueInvalid", "spec.containers[0].resources.requests",
                              'Invalid value: "1": must be less than or equal to cpu limit of 500m')]


@pytest.mark.parametrize(("container", "expected"), [
    ({"resources": {"requests": {"gpu": "1"}}},  # validateContainerResourceName
     [("FieldValueInvalid", "spec.containers[0].resources.requests[gpu]",
       'Invalid value: "gpu": must be a standard resource for containers')]),
    ({"resources": {"requests": {"memory": "-1"}}},  # ValidateResourceQuantityValue
     [("FieldValueInvalid", "spec.containers[0].resources.requests[memory]",
       'Invalid value: "-1": must be greater than or equal to 0')]),
    ({"livenessProbe": {"exec": {"command": ["true"]}, "tcpSocket": {"port": 80}}},  # validateHandler
     [("FieldValueForbidden", "spec.containers[0].livenessProbe.tcpSocket",
       "Forbidden: may not specify more than 1 handler type")]),
    ({"livenessProbe": {"exec": {"command": ["true"]}, "successThreshold": 2}},  # validateLivenessProbe
     [("FieldValueInvalid", "spec.containers[0].livenessProbe.successThreshold", "Invalid value: 2: must be 1")]),
])
def test_container_resources_and_probes(server, container, expected):
    assert _causes(_refused(server, _pod(containers=[{**CONTAINER, **container}]))) == expected


def test_restart_policy_values(server):
    body = _refused(server, _pod(restartPolicy="Sometimes"))
    assert _causes(body) == [("FieldValueNotSupported", "spec.restartPolicy",
                              'Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"')]


# -- apps: selectors, templates, strategies -----------------------------------------------------------

def test_the_selector_must_match_the_template_labels(server):
    # ValidatePodTemplateSpecForReplicaSet
    body = _refused(server, _deploy(selector={"matchLabels": {"app": "other"}}))
    assert body["message"] == ('Deployment.apps "d" is invalid: spec.template.metadata.labels: Invalid value: '
                               'map[string]string{"app":"w"}: `selector` does not match template `labels`')
    assert body["details"] == {"name": "d", "group": "apps", "kind": "Deployment", "causes": [{
        "reason": "FieldValueInvalid", "field": "spec.template.metadata.labels",
        "message": 'Invalid value: map[string]string{"app":"w"}: `selector` does not match template `labels`'}]}


def test_workload_templates_must_restart_always(server):
    dep = _deploy()
    dep["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    assert ("FieldValueNotSupported", "spec.template.spec.restartPolicy",
            'Unsupported value: "Never": supported values: "Always"') in _causes(_refused(server, dep))


def test_selector_is_required_and_not_empty(server):
    dep = _deploy()
    del dep["spec"]["selector"]
    assert ("FieldValueRequired", "spec.selector", "Required value") in _causes(_refused(server, dep))
    assert any("empty selector is invalid for deployment" in c[2]
               for c in _causes(_refused(server, _deploy(selector={}))))


def test_rolling_update_may_not_be_zero_and_zero(server):
    # ValidateRollingUpdateDeployment
    body = _refused(server, _deploy(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0,
                                                                                         "maxSurge": 0}}))
    assert _causes(body) == [("FieldValueInvalid", "spec.strategy.rollingUpdate.maxUnavailable",
                              'Invalid value: intstr.IntOrString{Type:0, IntVal:0, StrVal:""}: may not be 0 when '
                              "`maxSurge` is 0")]


def test_statefulset_updates_outside_the_mutable_fields_are_forbidden(server):
    # ValidateStatefulSetUpdate
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s", "namespace": "default"},
           "spec": {"serviceName": "s", "selector": {"matchLabels": dict(LABELS)},
                    "template": {"metadata": {"labels": dict(LABELS)}, "spec": {"containers": [dict(CONTAINER)]}}}}
    server.create(copy.deepcopy(sts))
    scaled = copy.deepcopy(sts)
    scaled["spec"]["replicas"] = 3
    assert server.update(scaled)["spec"]["replicas"] == 3
    moved = copy.deepcopy(sts)
    moved["spec"]["serviceName"] = "other"
    body = _refused(server, moved, update=True)
    assert _causes(body) == [("FieldValueForbidden", "spec",
                              "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', "
                              "'template', 'updateStrategy', 'revisionHistoryLimit', "
                              "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")]


# -- batch ----------------------------------------------------------------------------------------------

def _job(**template_spec):
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "default"},
            "spec": {"template": {"spec": {"containers": [dict(CONTAINER)], **template_spec}}}}


def test_a_job_without_restart_policy_is_refused_not_defaulted_to_always(api_client):
    # validateJobSpec: SetDefaults_PodSpec fills Always, which a Job may not use
    with pytest.raises(ApiException) as exc:
        client.BatchV1Api(api_client).create_namespaced_job("default", _job())
    body = json.loads(exc.value.body)
    assert exc.value.status == 422
    assert body["message"] == ('Job.batch "j" is invalid: spec.template.spec.restartPolicy: Required value: valid '
                               'values: "OnFailure", "Never"')


def test_a_job_with_never_is_accepted_and_its_template_is_immutable(server):
    server.create(_job(restartPolicy="Never"))
    changed = _job(restartPolicy="OnFailure")
    body = _refused(server, changed, update=True)
    assert any(c[1] == "spec.template" and "field is immutable" in c[2] for c in _causes(body))


def test_cronjob_schedule_and_concurrency(server):
    cron = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c", "namespace": "default"},
            "spec": {"schedule": "61 * * * *", "concurrencyPolicy": "Sometimes", "jobTemplate": {"spec": {
                "template": {"spec": {"restartPolicy": "Never", "containers": [dict(CONTAINER)]}}}}}}
    causes = _causes(_refused(server, cron))
    assert ("FieldValueInvalid", "spec.schedule", 'Invalid value: "61 * * * *": end of range (61) above maximum '
                                                 "(59): 61") in causes
    assert ("FieldValueNotSupported", "spec.concurrencyPolicy",
            'Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace"') in causes


@pytest.mark.parametrize(("schedule", "error"), [
    ("*/5 * * * *", None), ("0 0 * * MON-FRI", None), ("@hourly", None), ("@every 5m", None),
    ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"), ("@sometimes", "unrecognized descriptor: @sometimes"),
    ("5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1")])
def test_cron_schedules_as_robfig_cron_parses_them(schedule, error):
    assert cron_error(schedule) == error


# -- Service, ConfigMap, Secret, PVC --------------------------------------------------------------------

def test_multi_port_services_need_port_names(server):
    # ValidateService / validateServicePort
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "default"},
           "spec": {"ports": [{"port": 80}, {"port": 443, "name": "https"}]}}
    assert _causes(_refused(server, svc)) == [("FieldValueRequired", "spec.ports[0].name", "Required value")]


def test_config_map_keys_and_size(server):
    # ValidateConfigMap / IsConfigMapKey
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"},
          "data": {"bad key": "x", "..": "y"}}
    causes = _causes(_refused(server, cm))
    assert causes[0] == ("FieldValueInvalid", "data[..]", "Invalid value: \"..\": must not be '..'")
    assert causes[1][1] == "data[bad key]" and "a valid config key must consist of alphanumeric" in causes[1][2]
    big = {**cm, "data": {"a": "x" * (1024 * 1024 + 1)}}
    assert _causes(_refused(server, big)) == [("FieldValueTooLong", "",
                                               "Too long: may not be more than 1048576 bytes")]


def test_typed_secrets_need_their_keys(server):
    tls = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "t", "namespace": "default"},
           "type": "kubernetes.io/tls", "data": {}}
    assert _causes(_refused(server, tls)) == [("FieldValueRequired", "data[tls.crt]", "Required value"),
                                              ("FieldValueRequired", "data[tls.key]", "Required value")]


@pytest.mark.parametrize(("value", "offset"), [("hunter2", 4), ("aGk", 0), ("a=bc", 1)])
def test_secret_data_that_is_not_base64_is_refused_by_the_decoder(server, value, offset):
    # []byte fields travel as base64: a controller that forgot to encode gets a 400 (CorruptInputError)
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "default"},
              "data": {"password": value}}
    with pytest.raises(ApiError) as exc:
        server.create(secret)
    assert exc.value.status == 400
    assert exc.value.body["message"] == ('Secret in version "v1" cannot be handled as a Secret: illegal base64 '
                                         f"data at input byte {offset}")


def test_claim_specs_are_immutable_except_a_bound_claims_size(server):
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c", "namespace": "default"},
             "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}
    server.create(copy.deepcopy(claim))
    changed = copy.deepcopy(claim)
    changed["spec"]["accessModes"] = ["ReadWriteMany"]
    assert _causes(_refused(server, changed, update=True))[0][:2] == ("FieldValueForbidden", "spec")
    missing = copy.deepcopy(claim)
    missing["metadata"]["name"] = "d"
    missing["spec"]["accessModes"] = []
    assert ("FieldValueRequired", "spec.accessModes", "Required value: at least 1 access mode is required") in \
        _causes(_refused(server, missing))


# -- ObjectMeta -----------------------------------------------------------------------------------------

def test_only_one_owner_reference_may_be_the_controller(server):
    # ValidateOwnerReferences
    owners = [{"apiVersion": "v1", "kind": "ConfigMap", "name": n, "uid": n, "controller": True} for n in ("a", "b")]
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default",
                                                                "ownerReferences": owners}}
    (reason, path, message), = _causes(_refused(server, cm))
    assert (reason, path) == ("FieldValueInvalid", "metadata.ownerReferences")
    assert message.endswith('Only one reference can have Controller set to true. Found "true" in references for '
                            "ConfigMap/a and ConfigMap/b")


def test_owner_references_need_their_fields(server):
    # validateOwnerReference: empty fields are Invalid (the path has no index)
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default",
                                                                "ownerReferences": [{"apiVersion": "v1",
                                                                                     "kind": "ConfigMap",
                                                                                     "name": "a", "uid": ""}]}}
    assert ("FieldValueInvalid", "metadata.ownerReferences.uid", 'Invalid value: "": uid must not be empty') in \
        _causes(_refused(server, cm))


def test_annotations_are_limited_to_256_kib_in_total(server):
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default",
                                                                "annotations": {"a": "x" * (256 * 1024)}}}
    assert _causes(_refused(server, cm)) == [("FieldValueTooLong", "metadata.annotations",
                                              "Too long: may not be more than 262144 bytes")]


def test_finalizer_names_are_qualified_names(server):
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default",
                                                                "finalizers": ["example.com/ok", "not ok"]}}
    (reason, path, message), = _causes(_refused(server, cm))
    assert (reason, path) == ("FieldValueInvalid", "metadata.finalizers")
    assert message.startswith('Invalid value: "not ok": name part must consist of alphanumeric characters')


def test_the_aggregated_message_lists_several_causes_and_drops_repeats(server):
    # NewInvalid: ErrorList.ToAggregate keeps each distinct "field: message" once
    body = _refused(server, _pod(containers=[{"name": "c"}, {"name": "d"}]))
    assert body["message"] == ('Pod "p" is invalid: [spec.containers[0].image: Required value, '
                               "spec.containers[1].image: Required value]")
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default",
                                                                "finalizers": ["not ok", "not ok"]}}
    twice = _refused(server, cm)
    assert len(twice["details"]["causes"]) == 2 and twice["message"].count("not ok") == 1


# -- ValidateService: session affinity and (protocol, port) pairs ------------------------------------

def test_service_ports_may_not_repeat_a_protocol_and_port(server):
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "default"},
           "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080},
                              {"name": "web", "port": 80, "targetPort": 9090},
                              {"name": "dns", "port": 80, "protocol": "UDP"}],
                    "sessionAffinity": "Sticky"}}
    with pytest.raises(ApiError) as exc:
        server.create(svc)
    causes = [(c["reason"], c["field"], c["message"]) for c in exc.value.body["details"]["causes"]]
    assert causes == [
        ("FieldValueNotSupported", "spec.sessionAffinity",
         'Unsupported value: "Sticky": supported values: "ClientIP", "None"'),
        ("FieldValueDuplicate", "spec.ports[1]",
         'Duplicate value: core.ServicePort{Name:"", Protocol:"TCP", AppProtocol:(*string)(nil), Port:80, '
         'TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:""}, NodePort:0}')]


def test_client_ip_affinity_timeout_is_bounded(server):
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "default"},
           "spec": {"ports": [{"port": 80}], "sessionAffinity": "ClientIP",
                    "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 90000}}}}
    with pytest.raises(ApiError) as exc:
        server.create(svc)
    assert exc.value.body["details"]["causes"] == [{
        "reason": "FieldValueInvalid", "field": "spec.sessionAffinityConfig.clientIP.timeoutSeconds",
        "message": "Invalid value: 90000: must be greater than 0 and less than 86400"}]
