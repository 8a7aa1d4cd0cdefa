"""Pod-spec validation of env, tolerations, affinity and topology spread, each case naming its upstream function.

pkg/apis/core/validation/validation.go: ``ValidateEnv``/``validateEnvVarValueFrom``,
``ValidateEnvFrom``, ``ValidateTolerations``, ``validateAffinity``/``ValidateNodeSelectorRequirement``/
``validatePodAffinityTerm``, ``ValidateTopologySpreadConstraints``; apimachinery
``ValidateLabelSelectorRequirement``.  Pods and templates share them (a Deployment is checked too).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kamera_cli.apiserver import ApiError


def _pod(container: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "nginx", **(container or {})}], **spec}}


def _causes(server, obj) -> list[tuple[str, str, str]]:
    with pytest.raises(ApiError) as exc:
        server.create(copy.deepcopy(obj))
    assert exc.value.status == 422
    return [(c["reason"], c["field"], c["message"]) for c in exc.value.body["details"]["causes"]]


# -- ValidateEnv / validateEnvVarValueFrom / ValidateEnvFrom ----------------------------------------

def test_value_and_value_from_together_are_refused(server):
    env = [{"name": "A", "value": "x", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]
    assert _causes(server, _pod({"env": env})) == [
        ("FieldValueInvalid", "spec.containers[0].env[0].valueFrom",
         'Invalid value: "": may not be specified when `value` is not empty')]


@pytest.mark.parametrize(("source", "expected"), [
    ({}, ("FieldValueInvalid", "spec.containers[0].env[0].valueFrom", 'Invalid value: "": must specify one of: '
          "`fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`")),
    ({"configMapKeyRef": {"name": "c"}}, ("FieldValueRequired", "spec.containers[0].env[0].valueFrom."
                                          "configMapKeyRef.key", "Required value")),
    ({"fieldRef": {"fieldPath": "spec.hostname"}},
     ("FieldValueNotSupported", "spec.containers[0].env[0].valueFrom.fieldRef.fieldPath",
      'Unsupported value: "spec.hostname": supported values: "metadata.name", "metadata.namespace", '
      '"metadata.uid", "spec.nodeName", "spec.serviceAccountName", "status.hostIP", "status.podIP", '
      '"status.podIPs"')),
    ({"resourceFieldRef": {"resource": "limits.gpu"}},
     ("FieldValueNotSupported", "spec.containers[0].env[0].valueFrom.resourceFieldRef.resource",
      'Unsupported value: "limits.gpu": supported values: "limits.cpu", "limits.ephemeral-storage", '
      '"limits.memory", "requests.cpu", "requests.ephemeral-storage", "requests.memory"')),
])
def test_value_from_sources_are_checked(server, source, expected):
    assert _causes(server, _pod({"env": [{"name": "A", "valueFrom": source}]})) == [expected]


def test_defaulted_field_refs_pass_and_names_are_relaxed(server):
    env = [{"name": "POD-NAME.1", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
           {"name": "LABEL", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
           {"name": "1st var", "value": "ok"}]  # IsRelaxedEnvVarName: printable ASCII, no '='
    server.create(_pod({"env": env}))


def test_env_names_with_an_equals_sign_and_env_from_without_a_source(server):
    container = {"env": [{"name": "A=B", "value": "x"}], "envFrom": [{"prefix": "P_"}]}
    assert _causes(server, _pod(container)) == [
        ("FieldValueInvalid", "spec.containers[0].env[0].name", 'Invalid value: "A=B": a valid environment '
         "variable name must consist only of printable ASCII characters other than '='"),
        ("FieldValueInvalid", "spec.containers[0].envFrom",
         'Invalid value: "": must specify one of: `configMapRef` or `secretRef`')]


# -- ValidateTolerations ----------------------------------------------------------------------------

def test_exists_with_a_value_is_refused_showing_the_toleration(server):
    tolerations = [{"key": "gpu", "operator": "Exists", "value": "true", "effect": "NoSchedule"}]
    assert _causes(server, _pod(tolerations=tolerations)) == [
        ("FieldValueInvalid", "spec.tolerations[0].operator",
         'Invalid value: core.Toleration{Key:"gpu", Operator:"Exists", Value:"true", Effect:"NoSchedule", '
         "TolerationSeconds:(*int64)(nil)}: value must be empty when `operator` is 'Exists'")]


def test_toleration_operator_effect_and_seconds(server):
    tolerations = [{"operator": "Equal", "value": "x"},
                   {"key": "k", "operator": "In"},
                   {"key": "k", "effect": "NoSchedule", "tolerationSeconds": 30},
                   {"key": "k", "effect": "Never"}]
    assert _causes(server, _pod(tolerations=tolerations)) == [
        ("FieldValueInvalid", "spec.tolerations[0].operator", 'Invalid value: "Equal": operator must be Exists '
         'when `key` is empty, which means "match all values and all keys"'),
        ("FieldValueNotSupported", "spec.tolerations[1].operator",
         'Unsupported value: "In": supported values: "Equal", "Exists"'),
        ("FieldValueInvalid", "spec.tolerations[2].effect",
         "Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set"),
        ("FieldValueNotSupported", "spec.tolerations[3].effect",
         'Unsupported value: "Never": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"')]


def test_a_match_all_toleration_is_accepted(server):
    server.create(_pod(tolerations=[{"operator": "Exists"}]))


# -- validateAffinity -------------------------------------------------------------------------------

def test_node_affinity_terms(server):
    affinity = {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "zone", "operator": "In"}, {"key": "gpu", "operator": "Exists", "values": ["1"]},
            {"key": "x", "operator": "Is", "values": ["1"]}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 0, "preference": {}}]}}
    base = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
    assert _causes(server, _pod(affinity=affinity)) == [
        ("FieldValueRequired", f"{base}.matchExpressions[0].values",
         "Required value: must be specified when `operator` is 'In' or 'NotIn'"),
        ("FieldValueForbidden", f"{base}.matchExpressions[1].values",
         "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"),
        ("FieldValueInvalid", f"{base}.matchExpressions[2].operator",
         'Invalid value: "Is": not a valid selector operator'),
        ("FieldValueInvalid", "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
         "Invalid value: 0: must be in the range 1-100")]


def test_an_empty_required_node_selector_is_refused(server):
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}
    assert _causes(server, _pod(affinity=affinity)) == [
        ("FieldValueRequired", "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
         "nodeSelectorTerms", "Required value: must have at least one node selector term")]


def test_pod_anti_affinity_needs_a_topology_key(server):
    affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": ""}]}}
    causes = _causes(server, _pod(affinity=affinity))
    where = "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey"
    assert causes[0] == ("FieldValueRequired", where, "Required value: can not be empty")
    assert causes[1][:2] == ("FieldValueInvalid", where)  # ValidateLabelName("") as well, as upstream


# -- ValidateTopologySpreadConstraints --------------------------------------------------------------

def test_topology_spread_constraints(server):
    constraints = [{"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
                   {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
                   {"maxSkew": 1, "topologyKey": "", "whenUnsatisfiable": "Sometimes"},
                   {"maxSkew": 1, "topologyKey": "host", "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 2}]
    assert _causes(server, _pod(topologySpreadConstraints=constraints)) == [
        ("FieldValueInvalid", "spec.topologySpreadConstraints[0].maxSkew",
         "Invalid value: 0: must be greater than zero"),
        ("FieldValueDuplicate", "spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}",
         'Duplicate value: "{zone, DoNotSchedule}"'),
        ("FieldValueRequired", "spec.topologySpreadConstraints[2].topologyKey", "Required value: can not be empty"),
        ("FieldValueNotSupported", "spec.topologySpreadConstraints[2].whenUnsatisfiable",
         'Unsupported value: "Sometimes": supported values: "DoNotSchedule", "ScheduleAnyway"'),
        ("FieldValueInvalid", "spec.topologySpreadConstraints[3].minDomains",
         "Invalid value: 2: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway")]


def test_templates_are_checked_too(server):
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "default"},
                  "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
                      "metadata": {"labels": {"a": "b"}},
                      "spec": {"containers": [{"name": "c", "image": "nginx"}],
                               "tolerations": [{"key": "k", "operator": "Exists", "value": "v"}]}}}}
    (reason, path, _), = _causes(server, deployment)
    assert (reason, path) == ("FieldValueInvalid", "spec.template.spec.tolerations[0].operator")


# -- ValidateSecurityContext / ValidatePodSecurityContext / validateHostNetwork ------------------------

def test_privileged_containers_cannot_forbid_privilege_escalation(server):
    container = {"securityContext": {"privileged": True, "allowPrivilegeEscalation": False,
                                     "runAsUser": -1, "capabilities": {"add": ["CAP_SYS_ADMIN"]}}}
    assert _causes(server, _pod(container)) == [
        ("FieldValueInvalid", "spec.containers[0].securityContext.runAsUser",
         "Invalid value: -1: must be between 0 and 2147483647, inclusive"),
        ("FieldValueInvalid", "spec.containers[0].securityContext", "Invalid value: &core.SecurityContext{…}: "
         "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"),
        ("FieldValueInvalid", "spec.containers[0].securityContext", "Invalid value: &core.SecurityContext{…}: "
         "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN")]


def test_pod_security_context_ids_seccomp_and_process_namespace(server):
    context = {"fsGroup": -2, "supplementalGroups": [1, 2147483648], "seccompProfile": {"type": "Localhost"}}
    # shareProcessNamespace and hostPID are pod spec fields, reported under the internal securityContext
    assert _causes(server, _pod(securityContext=context, hostPID=True, shareProcessNamespace=True)) == [
        ("FieldValueInvalid", "spec.securityContext.fsGroup",
         "Invalid value: -2: must be between 0 and 2147483647, inclusive"),
        ("FieldValueInvalid", "spec.securityContext.supplementalGroups[1]",
         "Invalid value: 2147483648: must be between 0 and 2147483647, inclusive"),
        ("FieldValueInvalid", "spec.securityContext.shareProcessNamespace",
         "Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled"),
        ("FieldValueRequired", "spec.securityContext.seccompProfile.localhostProfile",
         "Required value: must be set when seccomp type is Localhost")]


def test_seccomp_profile_types(server):
    container = {"securityContext": {"seccompProfile": {"type": "Strict"}}}
    assert _causes(server, _pod(container)) == [
        ("FieldValueNotSupported", "spec.containers[0].securityContext.seccompProfile.type",
         'Unsupported value: "Strict": supported values: "Localhost", "RuntimeDefault", "Unconfined"')]
    server.create(_pod({"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}, "runAsUser": 1000,
                                            "allowPrivilegeEscalation": False}}))


def test_host_network_ports_must_match(server):
    container = {"ports": [{"containerPort": 8080, "hostPort": 80}]}
    assert _causes(server, _pod(container, hostNetwork=True)) == [
        ("FieldValueInvalid", "spec.containers[0].ports[0].containerPort",
         "Invalid value: 8080: must match `hostPort` when `hostNetwork` is true")]
    server.create(_pod({"ports": [{"containerPort": 8080}]}, hostNetwork=True))  # defaulting copies the port


# -- ValidatePodSpec: node selector labels and the names a pod spec carries ---------------------------

def test_node_selector_labels_and_spec_names(server):
    spec = {"nodeSelector": {"disk": "fast ssd"}, "hostname": "Web_1", "priorityClassName": "High"}
    causes = _causes(server, _pod(**spec))
    assert [(reason, path) for reason, path, _ in causes] == [
        ("FieldValueInvalid", "spec.nodeSelector"), ("FieldValueInvalid", "spec.hostname"),
        ("FieldValueInvalid", "spec.priorityClassName")]
    assert causes[0][2].startswith('Invalid value: "fast ssd": a valid label must be an empty string or consist of')


def test_match_label_keys_beside_their_selectors(server):
    # validateMatchLabelKeysInTopologySpread and validateMatchLabelKeysAndMismatchLabelKeys
    spread = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "w"}}, "matchLabelKeys": ["app", "pod-template-hash"]},
              {"maxSkew": 1, "topologyKey": "host", "whenUnsatisfiable": "DoNotSchedule", "matchLabelKeys": ["x"]}]
    term = {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "w"}},
            "matchLabelKeys": ["team"], "mismatchLabelKeys": ["team"]}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "x"}], "topologySpreadConstraints": spread,
                    "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}}}
    with pytest.raises(ApiError) as exc:
        server.create(pod)
    causes = {(c["field"], c["message"]) for c in exc.value.body["details"]["causes"]}
    assert ("spec.topologySpreadConstraints[0].matchLabelKeys[0]",
            'Invalid value: "app": exists in both matchLabelKeys and labelSelector') in causes
    assert ("spec.topologySpreadConstraints[1].matchLabelKeys",
            "Forbidden: must not be specified when labelSelector is not set") in causes
    assert ("spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].matchLabelKeys[0]",
            'Invalid value: "team": exists in both matchLabelKeys and mismatchLabelKeys') in causes
    assert len(causes) == 3
