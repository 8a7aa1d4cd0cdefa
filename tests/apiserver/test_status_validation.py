"""What a ``/status`` write may carry, per kind (``validation/status.py``).

Each case cites the upstream status-strategy validation it follows; the bodies are the real
``NewInvalid`` 422s.  A status strategy validates only the status: the spec, copied from the stored
object, is never checked again.
"""

from __future__ import annotations

import json

import pytest

from kamera_cli.apiserver.errors import ApiError

_TEMPLATE = {"metadata": {"labels": {"app": "w"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
_WORKLOAD_SPEC = {"selector": {"matchLabels": {"app": "w"}}, "template": _TEMPLATE}


def _obj(api_version: str, kind: str, spec: dict, name: str = "w") -> dict:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "namespace": "default"},
            "spec": spec}


def _status_write(server, live: dict, status: dict) -> dict:
    return server.update({**live, "status": status}, subresource="status")


def _refused(server, live: dict, status: dict) -> dict:
    with pytest.raises(ApiError) as exc:
        _status_write(server, live, status)
    assert exc.value.status == 422 and exc.value.reason == "Invalid"
    return exc.value.body


def _causes(body: dict) -> list[tuple[str, str, str]]:
    return [(c["reason"], c["field"], c["message"]) for c in body["details"]["causes"]]


# -- apps counters (ValidateDeploymentStatus, ValidateReplicaSetStatus, ValidateStatefulSetStatus, ...) ---

def test_deployment_status_counts_must_hold_together(server):
    live = server.create(_obj("apps/v1", "Deployment", _WORKLOAD_SPEC))
    body = _refused(server, live, {"replicas": 2, "readyReplicas": 1, "availableReplicas": 2, "updatedReplicas": -1})
    assert _causes(body) == [
        ("FieldValueInvalid", "status.updatedReplicas", "Invalid value: -1: must be greater than or equal to 0"),
        ("FieldValueInvalid", "status.availableReplicas", "Invalid value: 2: cannot be greater than readyReplicas"),
    ]
    assert body["message"] == ('Deployment.apps "w" is invalid: [status.updatedReplicas: Invalid value: -1: must be '
                               'greater than or equal to 0, status.availableReplicas: Invalid value: 2: cannot be '
                               'greater than readyReplicas]')
    ok = _status_write(server, live, {"replicas": 2, "readyReplicas": 2, "availableReplicas": 1})
    assert ok["status"]["availableReplicas"] == 1


def test_replica_counts_above_status_replicas_are_refused_for_replicasets_and_rcs(server):
    rs = server.create(_obj("apps/v1", "ReplicaSet", _WORKLOAD_SPEC))
    assert _causes(_refused(server, rs, {"replicas": 1, "fullyLabeledReplicas": 2, "readyReplicas": 1})) == [
        ("FieldValueInvalid", "status.fullyLabeledReplicas",
         "Invalid value: 2: cannot be greater than status.replicas")]
    rc = server.create(_obj("v1", "ReplicationController", {"selector": {"app": "w"}, "template": _TEMPLATE}))
    assert _causes(_refused(server, rc, {"replicas": 0, "readyReplicas": 1, "availableReplicas": 1})) == [
        ("FieldValueInvalid", "status.readyReplicas", "Invalid value: 1: cannot be greater than status.replicas"),
        ("FieldValueInvalid", "status.availableReplicas", "Invalid value: 1: cannot be greater than status.replicas"),
    ]


def test_statefulset_names_status_ready_replicas_and_collision_count_may_not_go_down(server):
    live = server.create(_obj("apps/v1", "StatefulSet", {**_WORKLOAD_SPEC, "serviceName": "s"}))
    live = _status_write(server, live, {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1,
                                        "collisionCount": 2})
    body = _refused(server, live, {"replicas": 1, "readyReplicas": 0, "availableReplicas": 1, "collisionCount": 1})
    assert _causes(body) == [
        ("FieldValueInvalid", "status.availableReplicas",
         "Invalid value: 1: cannot be greater than status.readyReplicas"),
        ("FieldValueInvalid", "status.collisionCount", "Invalid value: 1: cannot be decremented"),
    ]
    # dropping the counter is a decrement too (IsDecremented), printed as 0
    assert _causes(_refused(server, live, {"replicas": 1})) == [
        ("FieldValueInvalid", "status.collisionCount", "Invalid value: 0: cannot be decremented")]


def test_daemonset_counters_are_non_negative(server):
    live = server.create(_obj("apps/v1", "DaemonSet", _WORKLOAD_SPEC))
    assert _causes(_refused(server, live, {"currentNumberScheduled": 0, "numberMisscheduled": 0,
                                           "desiredNumberScheduled": 0, "numberReady": -2})) == [
        ("FieldValueInvalid", "status.numberReady", "Invalid value: -2: must be greater than or equal to 0")]


def test_hpa_desired_replicas_error_keeps_upstreams_typo(server):
    # ValidateHorizontalPodAutoscalerStatusUpdate names the path "status.desiredReplicasa"
    live = server.create(_obj("autoscaling/v2", "HorizontalPodAutoscaler", {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}, "maxReplicas": 3}))
    assert _causes(_refused(server, live, {"currentReplicas": 1, "desiredReplicas": -1})) == [
        ("FieldValueInvalid", "status.desiredReplicasa", "Invalid value: -1: must be greater than or equal to 0")]


def test_pdb_conditions_and_counters(server):
    # ValidatePodDisruptionBudgetStatusUpdate: metav1 ValidateConditions, then the four counters
    live = server.create(_obj("policy/v1", "PodDisruptionBudget", {"minAvailable": 1}))
    cond = {"type": "DisruptionAllowed", "status": "Maybe", "reason": "bad reason",
            "lastTransitionTime": "2026-01-01T00:00:00Z", "message": ""}
    body = _refused(server, live, {"conditions": [cond, {**cond, "status": "True", "reason": "Ok"}],
                                   "disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0,
                                   "expectedPods": -1})
    causes = _causes(body)
    assert causes[0] == ("FieldValueNotSupported", "status.conditions[0].status",
                         'Unsupported value: "Maybe": supported values: "False", "True", "Unknown"')
    assert causes[1][:2] == ("FieldValueInvalid", "status.conditions[0].reason")
    assert "a condition reason must start with alphabetic character" in causes[1][2]
    assert causes[2] == ("FieldValueDuplicate", "status.conditions[1].type", 'Duplicate value: "DisruptionAllowed"')
    assert causes[3] == ("FieldValueInvalid", "status.expectedPods",
                         "Invalid value: -1: must be greater than or equal to 0")


def test_a_status_write_does_not_revalidate_the_spec(server):
    # deploymentStatusStrategy.ValidateUpdate runs ValidateDeploymentStatusUpdate only; the request's
    # spec is replaced by the stored one and never checked
    live = server.create(_obj("apps/v1", "Deployment", _WORKLOAD_SPEC))
    sent = {**live, "spec": {**live["spec"], "replicas": -5}, "status": {"replicas": 2}}
    out = server.update(sent, subresource="status")
    assert out["spec"]["replicas"] == 1 and out["status"] == {"replicas": 2}


# -- Jobs (ValidateJobStatusUpdate, with getStatusValidationOptions under JobManagedBy) --------------

_JOB_SPEC = {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}}
_T0, _T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:05:00Z"


def _cond(ctype: str, status: str = "True") -> dict:
    return {"type": ctype, "status": status, "lastProbeTime": _T1, "lastTransitionTime": _T1}


def test_a_complete_job_needs_its_completion_time_and_no_failed_condition(server):
    live = server.create(_obj("batch/v1", "Job", _JOB_SPEC, name="j"))
    body = _refused(server, live, {"startTime": _T0, "conditions": [_cond("Complete"), _cond("Failed")]})
    assert _causes(body) == [
        ("FieldValueInvalid", "status.conditions",
         "Invalid value: cannot set Complete=True and Failed=true conditions"),
        ("FieldValueRequired", "status.completionTime", "Required value: completionTime is required for Complete jobs"),
    ]
    body = _refused(server, live, {"startTime": _T1, "completionTime": _T0, "succeeded": 1,
                                   "conditions": [_cond("SuccessCriteriaMet"), _cond("Complete")]})
    assert _causes(body) == [("FieldValueInvalid", "status.completionTime",
                              "Invalid value: 2026-01-01 00:00:00 +0000 UTC: completionTime cannot be set before "
                              "startTime")]
    body = _refused(server, live, {"active": 1, "completionTime": _T1,
                                   "conditions": [_cond("SuccessCriteriaMet"), _cond("Complete")]})
    assert _causes(body) == [
        ("FieldValueInvalid", "status.active", "Invalid value: 1: active>0 is invalid for finished job"),
        ("FieldValueRequired", "status.startTime", "Required value: startTime is required for finished job"),
    ]


def test_a_finished_job_stays_finished_and_its_counters_do_not_go_down(server):
    live = server.create(_obj("batch/v1", "Job", _JOB_SPEC, name="j"))
    done = _status_write(server, live, {"startTime": _T0, "completionTime": _T1, "succeeded": 1,
                                        "conditions": [_cond("SuccessCriteriaMet"), _cond("Complete")]})
    body = _refused(server, done, {"startTime": _T0, "succeeded": 0, "conditions": [_cond("SuccessCriteriaMet")]})
    assert _causes(body) == [
        ("FieldValueInvalid", "status.conditions",
         "Invalid value: cannot disable the terminal Complete=True condition"),
        ("FieldValueInvalid", "status.succeeded", "Invalid value: 0: cannot decrease the succeeded counter"),
    ]
    body = _refused(server, done, {**done["status"], "completionTime": "2026-01-01T00:06:00Z"})
    assert _causes(body) == [("FieldValueInvalid", "status.completionTime",
                              "Invalid value: 2026-01-01 00:06:00 +0000 UTC: completionTime cannot be mutated")]


def test_job_rules_that_only_run_when_their_fields_change(server):
    # RejectCompleteJobWithFailedCondition runs only when Complete or Failed changed: an unrelated write to a
    # job whose stored status already breaks it is not refused for it (the ratchet upstream documents)
    live = server.create(_obj("batch/v1", "Job", _JOB_SPEC, name="j"))
    running = _status_write(server, live, {"startTime": _T0, "active": 1, "ready": 0})
    assert running["status"]["active"] == 1
    assert _causes(_refused(server, running, {"startTime": _T0, "active": 1, "completedIndexes": "0"})) == [
        ("FieldValueInvalid", "status.completedIndexes",
         'Invalid value: "0": cannot set non-empty completedIndexes when non-indexed completion mode')]
    assert _causes(_refused(server, running, {"active": 1})) == [
        ("FieldValueRequired", "status.startTime", "Required value: startTime cannot be removed for unsuspended job")]


# -- Pods (ValidatePodStatusUpdate) ----------------------------------------------------------------

_POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}


def test_pod_status_condition_types_qos_and_nominated_node(server):
    live = server.create(_POD)
    body = _refused(server, live, {"phase": "Pending", "qosClass": "Guaranteed", "nominatedNodeName": "Node_1",
                                   "conditions": [{"type": "Ready", "status": "False"},
                                                  {"type": "example.com/bad type", "status": "True"}]})
    causes = _causes(body)
    # upstream validates the conditions under the *metadata* path, with a capital "Type"
    assert causes[0][:2] == ("FieldValueInvalid", "metadata.conditions[1].Type")
    assert causes[1][:2] == ("FieldValueInvalid", "status.nominatedNodeName")
    assert causes[2] == ("FieldValueInvalid", "status.qosClass", 'Invalid value: "Guaranteed": field is immutable')
    # a status without qosClass keeps the stored one (podStatusStrategy.PrepareForUpdate backfills it)
    assert _status_write(server, live, {"phase": "Pending"})["status"]["qosClass"] == "BestEffort"


def test_a_terminated_container_of_a_never_restarting_pod_stays_terminated(server):
    live = server.create(_POD)
    done = {"name": "c", "image": "x", "imageID": "", "ready": False, "restartCount": 0,
            "state": {"terminated": {"exitCode": 1}}}
    live = _status_write(server, live, {"phase": "Failed", "containerStatuses": [done]})
    again = {**done, "state": {"running": {"startedAt": _T1}}}
    assert _causes(_refused(server, live, {"phase": "Running", "containerStatuses": [again]})) == [
        ("FieldValueForbidden", "status.containerStatuses[0].state",
         "Forbidden: may not be transitioned to non-terminated state")]


# -- Services, Namespaces ----------------------------------------------------------------------------

def test_load_balancer_status_only_on_load_balancers_with_valid_ingress(server):
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "default"},
           "spec": {"ports": [{"port": 80}]}}
    plain = server.create(svc)
    assert _causes(_refused(server, plain, {"loadBalancer": {"ingress": [{"ip": "10.0.0.1"}]}})) == [
        ("FieldValueForbidden", "status.loadBalancer.ingress",
         "Forbidden: may only be used when `spec.type` is 'LoadBalancer'")]
    lb = server.create({**svc, "metadata": {"name": "lb", "namespace": "default"},
                        "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}})
    body = _refused(server, lb, {"loadBalancer": {"ingress": [{"ip": "10.0.0.300"}, {"hostname": "1.2.3.4"},
                                                              {"hostname": "lb.example.com", "ipMode": "VIP"}]}})
    assert _causes(body) == [
        ("FieldValueInvalid", "status.loadBalancer.ingress[0].ip",
         'Invalid value: "10.0.0.300": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)'),
        ("FieldValueInvalid", "status.loadBalancer.ingress[1].hostname",
         'Invalid value: "1.2.3.4": must be a DNS name, not an IP address'),
        ("FieldValueForbidden", "status.loadBalancer.ingress[2].ipMode",
         "Forbidden: may not be specified when `ip` is not set"),
    ]
    # an IP without a mode is defaulted to a VIP (SetDefaults_Service), not refused
    out = _status_write(server, lb, {"loadBalancer": {"ingress": [{"ip": "10.0.0.1"}]}})
    assert out["status"]["loadBalancer"]["ingress"] == [{"ip": "10.0.0.1", "ipMode": "VIP"}]


def test_namespace_phase_follows_the_deletion_timestamp(server):
    live = server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    body = _refused(server, live, {"phase": "Terminating"})
    assert _causes(body) == [("FieldValueInvalid", "status.Phase",
                              "Invalid value: \"Terminating\": may only be 'Active' if `deletionTimestamp` is empty")]


def test_pod_ips_are_valid_and_at_most_a_dual_stack_pair(server):
    # validatePodIPs / validateHostIPs
    live = server.create(_POD)
    body = _refused(server, live, {"phase": "Running", "hostIP": "10.0.0.1",
                                   "hostIPs": [{"ip": "10.0.0.2"}],
                                   "podIPs": [{"ip": "10.1.0.1"}, {"ip": "10.1.0.1"}]})
    assert _causes(body) == [
        ("FieldValueInvalid", "status.podIPs",
         'Invalid value: []core.PodIP{core.PodIP{IP:"10.1.0.1"}, core.PodIP{IP:"10.1.0.1"}}: '
         "may specify no more than one IP for each IP family"),
        ("FieldValueDuplicate", "status.podIPs[1]", 'Duplicate value: core.PodIP{IP:"10.1.0.1"}'),
        ("FieldValueInvalid", "status.hostIPs[0].ip", 'Invalid value: "10.0.0.2": must be equal to `hostIP`'),
    ]
    dual = _status_write(server, live, {"phase": "Running", "hostIP": "10.0.0.1", "hostIPs": [{"ip": "10.0.0.1"}],
                                        "podIPs": [{"ip": "10.1.0.1"}, {"ip": "fd00::1"}]})
    assert dual["status"]["podIPs"][1] == {"ip": "fd00::1"}


def test_volume_status_writes_need_a_resource_version_and_valid_capacities(server):
    # ValidatePersistentVolumeClaimStatusUpdate / ValidatePersistentVolumeStatusUpdate: unlike other built-ins,
    # an unconditional status PUT (no resourceVersion) is refused
    claim = server.create({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                           "metadata": {"name": "c", "namespace": "default"},
                           "spec": {"accessModes": ["ReadWriteOnce"],
                                    "resources": {"requests": {"storage": "1Gi"}}}})
    unconditional = {**claim, "metadata": {k: v for k, v in claim["metadata"].items() if k != "resourceVersion"}}
    assert _causes(_refused(server, unconditional, {"phase": "Bound", "capacity": {"storage": "-1"}})) == [
        ("FieldValueRequired", "resourceVersion", "Required value"),
        ("FieldValueInvalid", "status.capacity[storage]", "Invalid value: -1: must be a valid resource quantity"),
    ]
    bound = _status_write(server, claim, {"phase": "Bound", "capacity": {"storage": "1Gi"}})
    assert bound["status"]["capacity"] == {"storage": "1Gi"}
    volume = server.create({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "v"},
                            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                                     "hostPath": {"path": "/data"}}})
    bare = {**volume, "metadata": {k: v for k, v in volume["metadata"].items() if k != "resourceVersion"}}
    assert _causes(_refused(server, bare, {"phase": "Available"})) == [
        ("FieldValueRequired", "resourceVersion", "Required value")]


def test_indexed_job_index_lists_are_parsed_as_upstream(server):
    # validateIndexesFormat / parseIndexInterval / validateFailedIndexesNotOverlapCompleted
    spec = {**_JOB_SPEC, "completionMode": "Indexed", "completions": 5, "parallelism": 5, "backoffLimitPerIndex": 1}
    live = server.create(_obj("batch/v1", "Job", spec, name="j"))
    running = {"startTime": _T0, "active": 1}
    cases = [
        ("3-1", "error parsing completedIndexes: non-increasing order, previous: 3, current: 1"),
        ("1,x", 'error parsing completedIndexes: cannot convert string to integer for index: "x"'),
        ("7", 'error parsing completedIndexes: too large index: "7"'),
        ("1-2-3", "error parsing completedIndexes: the fragment \"1-2-3\" violates the requirement that an "
                  "index interval can have at most two parts separated by '-'"),
        ("2,1", "error parsing completedIndexes: non-increasing order, previous: 2, current: 1"),
    ]
    for text, message in cases:
        assert _causes(_refused(server, live, {**running, "completedIndexes": text})) == [
            ("FieldValueInvalid", "status.completedIndexes", f"Invalid value: {json.dumps(text)}: {message}")]
    assert _causes(_refused(server, live, {**running, "completedIndexes": "0-2", "failedIndexes": "2,4"})) == [
        ("FieldValueInvalid", "status.failedIndexes",
         'Invalid value: "2,4": failedIndexes and completedIndexes overlap at index: 2')]
    ok = _status_write(server, live, {**running, "completedIndexes": "0-1,3", "failedIndexes": "4"})
    assert ok["status"]["completedIndexes"] == "0-1,3"
