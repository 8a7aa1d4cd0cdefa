"""How far each workload kind validates its pod template, after the upstream function that does it.

pkg/apis/apps/validation/validation.go: ``ValidatePodTemplateSpecForStatefulSet`` (labels and
annotations only -- never the pod spec, so containers may mount ``volumeClaimTemplates``),
``ValidatePodTemplateSpecForReplicaSet`` (Deployment, ReplicaSet: the full ``ValidatePodTemplateSpec``),
``ValidateDaemonSetSpec`` / ``ValidateRollingUpdateDaemonSet``; pkg/apis/batch/validation
(Job, CronJob); pkg/apis/core/validation ``ValidatePodTemplate``.  A false refusal of a valid manifest
is worse than a missed check, so every kind is tried with a manifest a real server accepts.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kamera_cli.apiserver.errors import ApiError
from kamera_cli.controlplane.statefulset import StatefulSetController
from tests.controlplane.harness import Harness

LABELS = {"app": "db"}


def _statefulset(**template_spec: Any) -> dict[str, Any]:
    """The canonical StatefulSet: its container mounts the claim template ``data``."""
    spec: dict[str, Any] = {"containers": [{"name": "db", "image": "postgres:16",
                                            "volumeMounts": [{"name": "data", "mountPath": "/var/lib/data"}]}]}
    spec.update(template_spec)
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "namespace": "default"},
            "spec": {"serviceName": "db", "replicas": 2, "selector": {"matchLabels": dict(LABELS)},
                     "template": {"metadata": {"labels": dict(LABELS)}, "spec": spec},
                     "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                         "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}}


def _causes(server: Any, obj: dict[str, Any]) -> list[tuple[str, str, str]]:
    with pytest.raises(ApiError) as exc:
        server.create(copy.deepcopy(obj))
    assert exc.value.status == 422, exc.value.body
    return [(c["reason"], c["field"], c["message"]) for c in exc.value.body["details"]["causes"]]


# -- ValidatePodTemplateSpecForStatefulSet ---------------------------------------------------------

def test_a_statefulset_container_may_mount_its_claim_template(server):
    created = server.create(_statefulset())
    mounts = created["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]
    assert mounts == [{"name": "data", "mountPath": "/var/lib/data"}]
    assert "volumes" not in created["spec"]["template"]["spec"]


def test_a_statefulset_template_spec_is_not_validated_as_a_pod_spec(server):
    # upstream's TODO: the pod spec is left to the pods the controller creates
    odd = _statefulset(containers=[{"name": "Not_A_Label", "image": "x",
                                    "volumeMounts": [{"name": "nowhere", "mountPath": "/a"}]}])
    assert server.create(odd)["metadata"]["name"] == "db"


def test_a_statefulset_template_must_restart_always_and_have_no_deadline(server):
    assert _causes(server, _statefulset(restartPolicy="OnFailure", activeDeadlineSeconds=5)) == [
        ("FieldValueNotSupported", "spec.template.spec.restartPolicy",
         'Unsupported value: "OnFailure": supported values: "Always"'),
        ("FieldValueForbidden", "spec.template.spec.activeDeadlineSeconds",
         "Forbidden: activeDeadlineSeconds in StatefulSet is not Supported")]


def test_a_statefulset_template_still_checks_selector_and_pod_annotations(server):
    sts = _statefulset()
    sts["spec"]["template"]["metadata"] = {"labels": {"app": "other"},
                                           "annotations": {"controller.kubernetes.io/pod-deletion-cost": "x"}}
    assert _causes(server, sts) == [
        ("FieldValueInvalid", "spec.template.metadata.labels",
         'Invalid value: map[string]string{"app":"other"}: `selector` does not match template `labels`'),
        ("FieldValueInvalid", "spec.template.annotations[controller.kubernetes.io/pod-deletion-cost]",
         'Invalid value: "x": must be a 32bit integer')]


def test_the_pods_of_the_canonical_statefulset_are_valid_pods():
    # the controller adds the claim as a volume, so the pod it creates passes ValidatePodSpec
    h = Harness()
    h.create(_statefulset())
    StatefulSetController().reconcile(h.cluster, "default", "db", "")
    [pod] = h.pods()
    assert {"name": "data", "persistentVolumeClaim": {"claimName": "data-db-0"}} in pod["spec"]["volumes"]


# -- validateRollingUpdateStatefulSet, ValidatePersistentVolumeClaimRetentionPolicy, ordinals ------------

def test_statefulset_max_unavailable_retention_and_ordinals(server):
    sts = _statefulset()
    sts["spec"].update(updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0}},
                       persistentVolumeClaimRetentionPolicy={"whenDeleted": "Keep"}, ordinals={"start": -1})
    assert _causes(server, sts) == [
        ("FieldValueInvalid", "spec.updateStrategy.rollingUpdate.maxUnavailable",
         'Invalid value: intstr.IntOrString{Type:0, IntVal:0, StrVal:""}: cannot be 0'),
        ("FieldValueNotSupported", "spec.persistentVolumeClaimRetentionPolicy.whenDeleted",
         'Unsupported value: "Keep": supported values: "Retain", "Delete"'),
        ("FieldValueInvalid", "spec.ordinals.start", "Invalid value: -1: must be greater than or equal to 0")]
    sts["spec"].update(updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "50%"}},
                       persistentVolumeClaimRetentionPolicy={"whenDeleted": "Delete"}, ordinals={"start": 3})
    assert server.create(sts)["spec"]["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Delete",
                                                                                  "whenScaled": "Retain"}


# -- ValidateDaemonSetSpec / ValidateRollingUpdateDaemonSet ------------------------------------------------

def _daemonset(rolling: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "namespace": "default"},
            "spec": {"selector": {"matchLabels": dict(LABELS)},
                     "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": rolling},
                     "template": {"metadata": {"labels": dict(LABELS)},
                                  "spec": {"containers": [{"name": "agent", "image": "agent:1"}]}}}}


@pytest.mark.parametrize(("rolling", "expected"), [
    ({"maxUnavailable": 0, "maxSurge": "25%"}, []),
    ({"maxUnavailable": "10%"}, []),  # maxSurge defaults to 0
    ({"maxSurge": 1}, [  # maxUnavailable defaults to 1: a surge then needs maxUnavailable 0
        ("FieldValueInvalid", "spec.updateStrategy.rollingUpdate.maxSurge",
         'Invalid value: intstr.IntOrString{Type:0, IntVal:1, StrVal:""}: may not be set when maxUnavailable is '
         "non-zero")]),
    ({"maxUnavailable": 0, "maxSurge": 0}, [
        ("FieldValueRequired", "spec.updateStrategy.rollingUpdate.maxUnavailable",
         "Required value: cannot be 0 when maxSurge is 0")]),
    ({"maxUnavailable": 0, "maxSurge": "150%"}, [
        ("FieldValueInvalid", "spec.updateStrategy.rollingUpdate.maxSurge",
         'Invalid value: "150%": must not be greater than 100%')]),
])
def test_a_daemonset_rolls_with_exactly_one_of_surge_and_unavailability(server, rolling, expected):
    if expected:
        assert _causes(server, _daemonset(rolling)) == expected
    else:
        assert server.create(_daemonset(rolling))["metadata"]["name"] == "agent"


def test_a_deployment_may_surge_and_be_unavailable_at_once_and_surge_over_100_percent(server):
    # ValidateRollingUpdateDeployment caps maxUnavailable only, and allows both non-zero
    deploy = _daemonset({})
    deploy["kind"] = "Deployment"
    deploy["spec"].pop("updateStrategy")
    deploy["spec"]["strategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": "200%"}}
    assert server.create(deploy)["spec"]["strategy"]["rollingUpdate"]["maxSurge"] == "200%"


# -- ValidatePodTemplateSpec / ValidatePodTemplateSpecForStatefulSet: the template's own metadata ----------

_BAD_META = {"labels": {"app": "db", "bad key!": "x", "tier": "not a value"}, "annotations": {"ok/": "y"}}
_BAD_CAUSES = [
    ("FieldValueInvalid", "spec.template.labels",
     "Invalid value: \"bad key!\": name part must consist of alphanumeric characters, '-', '_' or '.', and must "
     "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
     "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
    ("FieldValueInvalid", "spec.template.labels",
     "Invalid value: \"not a value\": a valid label must be an empty string or consist of alphanumeric "
     "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
     "'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"),
    ("FieldValueInvalid", "spec.template.annotations",
     "Invalid value: \"ok/\": name part must be non-empty")]


@pytest.mark.parametrize("kind", ["StatefulSet", "Deployment"])
def test_template_labels_and_annotations_are_validated_at_the_template_path(server, kind):
    obj = _statefulset()
    obj["kind"] = kind
    if kind == "Deployment":
        obj["spec"] = {k: v for k, v in obj["spec"].items() if k in ("selector", "template")}
        obj["spec"]["template"]["spec"]["volumes"] = [{"name": "data", "emptyDir": {}}]
    obj["spec"]["template"]["metadata"] = copy.deepcopy(_BAD_META)
    causes = _causes(server, obj)
    assert causes[:3] == _BAD_CAUSES and len(causes) == 3


# -- no false refusal: a pod spec using the features real manifests use passes in every kind's template ---

_RICH_SPEC: dict[str, Any] = {
    "initContainers": [
        {"name": "sidecar", "image": "envoy", "restartPolicy": "Always",  # a native sidecar, with probes
         "readinessProbe": {"tcpSocket": {"port": 9901}}, "startupProbe": {"httpGet": {"path": "/", "port": "admin"}},
         "ports": [{"name": "admin", "containerPort": 9901}]},
        {"name": "init", "image": "busybox", "command": ["sh", "-c", "true"]}],
    "containers": [{
        "name": "app", "image": "app:1", "ports": [{"name": "http", "containerPort": 8080}],
        "livenessProbe": {"grpc": {"port": 8081}, "initialDelaySeconds": 5},
        "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "successThreshold": 2},
        "lifecycle": {"preStop": {"exec": {"command": ["sleep", "5"]}}, "postStart": {"sleep": {"seconds": 1}}},
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi", "hugepages-2Mi": "2Mi"},
                      "limits": {"memory": "256Mi", "hugepages-2Mi": "2Mi", "nvidia.com/gpu": "1"}},
        "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}}],
        "envFrom": [{"configMapRef": {"name": "cfg"}, "prefix": "CFG_"}],
        "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "allowPrivilegeEscalation": False,
                            "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]},
                            "seccompProfile": {"type": "RuntimeDefault"}},
        "volumeMounts": [{"name": "cfg", "mountPath": "/etc/cfg", "readOnly": True},
                         {"name": "tmp", "mountPath": "/tmp"}, {"name": "token", "mountPath": "/var/run/token"},
                         {"name": "scratch", "mountPath": "/scratch"}]}],
    "volumes": [
        {"name": "cfg", "configMap": {"name": "cfg", "items": [{"key": "a", "path": "a.conf"}]}},
        {"name": "tmp", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}},
        {"name": "token", "projected": {"sources": [
            {"serviceAccountToken": {"path": "token", "audience": "api", "expirationSeconds": 3600}},
            {"downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}}]}},
        {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}}],
    "securityContext": {"fsGroup": 2000, "runAsNonRoot": True,
                        "sysctls": [{"name": "net.ipv4.ip_local_port_range", "value": "1024 65535"}]},
    "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                   "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": LABELS},
                                   "matchLabelKeys": ["pod-template-hash"]}],
    "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                                            "labelSelector": {"matchLabels": LABELS}}}]}},
    "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                     "tolerationSeconds": 300}],
    "terminationGracePeriodSeconds": 60, "priorityClassName": "high", "serviceAccountName": "app",
    "automountServiceAccountToken": False, "dnsConfig": {"options": [{"name": "ndots", "value": "2"}]},
    "hostAliases": [{"ip": "127.0.0.1", "hostnames": ["foo.local"]}], "os": {"name": "linux"},
    "readinessGates": [{"conditionType": "example.com/ready"}], "shareProcessNamespace": True,
    "enableServiceLinks": False}


def _rich(kind: str) -> dict[str, Any]:
    template = {"metadata": {"labels": dict(LABELS),
                             "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"}},
                "spec": copy.deepcopy(_RICH_SPEC)}
    meta = {"name": "w", "namespace": "default"}
    if kind == "PodTemplate":
        return {"apiVersion": "v1", "kind": kind, "metadata": meta, "template": template}
    if kind in ("Job", "CronJob"):
        template["spec"]["restartPolicy"] = "Never"
        job = {"template": template}
        if kind == "Job":
            return {"apiVersion": "batch/v1", "kind": kind, "metadata": meta, "spec": job}
        return {"apiVersion": "batch/v1", "kind": kind, "metadata": meta,
                "spec": {"schedule": "*/5 * * * *", "timeZone": "Europe/Paris", "jobTemplate": {"spec": job}}}
    if kind == "ReplicationController":
        return {"apiVersion": "v1", "kind": kind, "metadata": meta, "spec": {"template": template}}
    extra = {"StatefulSet": {"serviceName": "w"},
             "Deployment": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%",
                                                                                   "maxUnavailable": 0}}}}
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": meta,
            "spec": {"selector": {"matchLabels": dict(LABELS)}, "template": template, **extra.get(kind, {})}}


@pytest.mark.parametrize("kind", ["Deployment", "ReplicaSet", "DaemonSet", "StatefulSet", "Job", "CronJob",
                                  "PodTemplate", "ReplicationController"])
def test_a_rich_valid_template_is_accepted_by_every_kind(server, kind):
    created = server.create(_rich(kind))
    assert created["kind"] == kind and created["metadata"]["name"] == "w"
