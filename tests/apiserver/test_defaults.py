"""Built-in defaulting on every write: what a controller comparing specs sees in a real cluster."""

from __future__ import annotations

import copy

import pytest
from kubernetes import client

from kamera_cli.apiserver import ApiError

DEPLOY = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "default"},
          "spec": {"selector": {"matchLabels": {"app": "d"}},
                   "template": {"metadata": {"labels": {"app": "d"}},
                                "spec": {"containers": [{"name": "c", "image": "nginx:1.25",
                                                         "ports": [{"containerPort": 80}]}]}}}}


def test_deployment_and_pod_template_defaults(server):
    out = server.create(copy.deepcopy(DEPLOY))
    spec = out["spec"]
    assert spec["replicas"] == 1 and spec["revisionHistoryLimit"] == 10 and spec["progressDeadlineSeconds"] == 600
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%",
                                                                           "maxSurge": "25%"}}
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Always" and pod["dnsPolicy"] == "ClusterFirst"
    assert pod["schedulerName"] == "default-scheduler" and pod["terminationGracePeriodSeconds"] == 30
    c = pod["containers"][0]
    assert c["imagePullPolicy"] == "IfNotPresent" and c["ports"][0]["protocol"] == "TCP"
    assert c["terminationMessagePath"] == "/dev/termination-log"


def test_rewriting_the_undefaulted_spec_is_a_no_op(server):
    first = server.create(copy.deepcopy(DEPLOY))
    again = server.update(copy.deepcopy(DEPLOY))
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert again["metadata"]["generation"] == 1


def test_image_pull_policy_follows_the_tag(api_client):
    core = client.CoreV1Api(api_client)
    for name, image, policy in (("a", "nginx", "Always"), ("b", "nginx:latest", "Always"),
                                ("c", "reg.io:5000/nginx:1.2", "IfNotPresent"), ("d", "reg.io:5000/nginx", "Always"),
                                ("e", "nginx@sha256:abc", "IfNotPresent")):
        pod = core.create_namespaced_pod("default", {"metadata": {"name": name}, "spec": {
            "containers": [{"name": "c", "image": image}]}})
        assert pod.spec.containers[0].image_pull_policy == policy, image


def test_service_defaults(server):
    out = server.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "default"},
                         "spec": {"selector": {"app": "d"}, "ports": [{"port": 80}]}})
    assert out["spec"]["type"] == "ClusterIP" and out["spec"]["sessionAffinity"] == "None"
    assert out["spec"]["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]


# -- upstream defaulters, one case each (pkg/apis/*/v1/defaults.go, zz_generated.defaults.go) ---------

def _pod(server, **spec):
    body = {"containers": [{"name": "c", "image": "nginx:1"}], **spec}
    return server.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                          "spec": body})


def test_probe_and_http_get_defaults(server):
    # SetDefaults_Probe, SetDefaults_HTTPGetAction
    out = _pod(server, containers=[{"name": "c", "image": "x:1", "livenessProbe": {"httpGet": {"port": 80}},
                                    "readinessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 5},
                                    "lifecycle": {"preStop": {"httpGet": {"port": 81}}}}])
    c = out["spec"]["containers"][0]
    assert c["livenessProbe"] == {"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
                                  "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}
    assert c["readinessProbe"]["periodSeconds"] == 5 and c["readinessProbe"]["timeoutSeconds"] == 1
    assert c["lifecycle"]["preStop"]["httpGet"] == {"port": 81, "path": "/", "scheme": "HTTP"}


def test_volume_source_defaults(server):
    # SetDefaults_Volume (no source: emptyDir), SetDefaults_{Secret,ConfigMap,DownwardAPI,Projected}VolumeSource,
    # SetDefaults_HostPathVolumeSource, SetDefaults_ServiceAccountTokenProjection, SetDefaults_ObjectFieldSelector
    out = _pod(server, volumes=[
        {"name": "a"}, {"name": "b", "secret": {"secretName": "s"}}, {"name": "c", "configMap": {"name": "m"}},
        {"name": "d", "hostPath": {"path": "/x"}},
        {"name": "e", "downwardAPI": {"items": [{"path": "n", "fieldRef": {"fieldPath": "metadata.name"}}]}},
        {"name": "f", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}}])
    vols = {v["name"]: v for v in out["spec"]["volumes"]}
    assert vols["a"] == {"name": "a", "emptyDir": {}}
    assert vols["b"]["secret"]["defaultMode"] == 420 and vols["c"]["configMap"]["defaultMode"] == 420
    assert vols["d"]["hostPath"] == {"path": "/x", "type": ""}
    assert vols["e"]["downwardAPI"] == {"defaultMode": 420, "items": [
        {"path": "n", "fieldRef": {"fieldPath": "metadata.name", "apiVersion": "v1"}}]}
    assert vols["f"]["projected"] == {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"path": "t", "expirationSeconds": 3600}}]}


def test_pods_get_requests_from_limits_and_service_links_but_templates_do_not(server):
    # SetDefaults_Pod runs for Pods only; SetDefaults_PodSpec for every pod spec
    resources = {"limits": {"cpu": "1", "memory": "1Gi"}}
    pod = _pod(server, containers=[{"name": "c", "image": "x:1", "resources": resources}])
    assert pod["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1", "memory": "1Gi"}
    assert pod["spec"]["enableServiceLinks"] is True
    assert pod["status"] == {"phase": "Pending", "qosClass": "Guaranteed"}  # podStrategy.PrepareForCreate
    dep = copy.deepcopy(DEPLOY)
    dep["spec"]["template"]["spec"]["containers"][0]["resources"] = resources
    tmpl = server.create(dep)["spec"]["template"]["spec"]
    assert "requests" not in tmpl["containers"][0]["resources"] and "enableServiceLinks" not in tmpl


@pytest.mark.parametrize(("resources", "qos"), [({}, "BestEffort"), ({"requests": {"cpu": "1"}}, "Burstable"),
                                                ({"limits": {"cpu": "1"}}, "Burstable")])
def test_pod_qos_class(server, resources, qos):
    # qos.GetPodQOS
    assert _pod(server, containers=[{"name": "c", "image": "x:1", "resources": resources}])["status"]["qosClass"] == qos


_FULL = {"limits": {"cpu": "500m", "memory": "1Gi"}}


@pytest.mark.parametrize(("containers", "qos"), [
    ([_FULL, _FULL], "Guaranteed"),  # every container limits cpu and memory; requests default to the limits
    ([_FULL, {"limits": {"cpu": "1"}}], "Burstable"),  # one container without a memory limit
    ([_FULL, {"requests": {"cpu": "0", "memory": "0"}}], "Burstable"),  # zero quantities are not counted
    ([{"requests": {"cpu": "0"}}, {}], "BestEffort"),
])
def test_pod_qos_class_sums_over_containers_and_init_containers(server, containers, qos):
    # qos.ComputePodQOS: positive cpu/memory requests and limits summed per resource over all containers
    specs = [{"name": f"c{i}", "image": "x:1", "resources": r} for i, r in enumerate(containers)]
    pod = _pod(server, containers=specs[:1], initContainers=specs[1:])
    assert pod["status"]["qosClass"] == qos


def test_host_network_defaults_host_ports(server):
    out = _pod(server, hostNetwork=True, containers=[{"name": "c", "image": "x:1", "ports": [{"containerPort": 8080}]}])
    assert out["spec"]["containers"][0]["ports"] == [{"containerPort": 8080, "protocol": "TCP", "hostPort": 8080}]


def test_statefulset_defaults(server):
    # apps/v1 SetDefaults_StatefulSet: partition only when the strategy type was defaulted; PVC templates
    base = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"namespace": "default"}, "spec": {
        "serviceName": "s", "selector": {"matchLabels": {"app": "d"}}, "template": DEPLOY["spec"]["template"],
        "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}}
    first = server.create(copy.deepcopy({**base, "metadata": {"name": "a", "namespace": "default"}}))
    spec = first["spec"]
    assert spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert spec["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Retain"}
    claim = spec["volumeClaimTemplates"][0]
    assert claim["spec"]["volumeMode"] == "Filesystem" and claim["status"] == {"phase": "Pending"}
    explicit = copy.deepcopy({**base, "metadata": {"name": "b", "namespace": "default"}})
    explicit["spec"]["updateStrategy"] = {"type": "RollingUpdate"}
    assert server.create(explicit)["spec"]["updateStrategy"] == {"type": "RollingUpdate"}


def test_job_defaults(server):
    # batch/v1 SetDefaults_Job: completions only when parallelism is unset too; labels from the template
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "default"}, "spec": {
        "parallelism": 3, "template": {"metadata": {"labels": {"app": "j"}}, "spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "x:1"}]}}}}
    out = server.create(job)
    spec = out["spec"]
    assert "completions" not in spec and spec["parallelism"] == 3 and spec["backoffLimit"] == 6
    assert spec["completionMode"] == "NonIndexed" and spec["suspend"] is False
    assert spec["podReplacementPolicy"] == "TerminatingOrFailed"
    assert out["metadata"]["labels"] == {"app": "j"}


def test_job_selector_is_generated(server):
    # jobStrategy.PrepareForCreate -> generateSelector
    out = server.create({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "default"},
                         "spec": {"template": {"spec": {"restartPolicy": "Never",
                                                        "containers": [{"name": "c", "image": "x:1"}]}}}})
    uid = out["metadata"]["uid"]
    assert out["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert out["spec"]["template"]["metadata"]["labels"] == {
        "job-name": "j", "batch.kubernetes.io/job-name": "j", "controller-uid": uid,
        "batch.kubernetes.io/controller-uid": uid}


def test_cronjob_defaults_leave_the_job_template_spec_alone(server):
    out = server.create({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c", "namespace": "default"},
                         "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": {"spec": {
                             "restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "x:1"}]}}}}}})
    spec = out["spec"]
    assert (spec["concurrencyPolicy"], spec["suspend"], spec["successfulJobsHistoryLimit"],
            spec["failedJobsHistoryLimit"]) == ("Allow", False, 3, 1)
    assert "backoffLimit" not in spec["jobTemplate"]["spec"]
    assert spec["jobTemplate"]["spec"]["template"]["spec"]["dnsPolicy"] == "ClusterFirst"


def test_service_traffic_policies_and_load_balancer_defaults(server):
    # SetDefaults_Service
    out = server.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "lb", "namespace": "default"},
                         "spec": {"type": "LoadBalancer", "sessionAffinity": "ClientIP", "ports": [{"port": 80}]}})
    spec = out["spec"]
    assert spec["externalTrafficPolicy"] == "Cluster" and spec["internalTrafficPolicy"] == "Cluster"
    assert spec["allocateLoadBalancerNodePorts"] is True
    assert spec["sessionAffinityConfig"] == {"clientIP": {"timeoutSeconds": 10800}}
    assert out["status"] == {"loadBalancer": {}}


def test_workload_status_is_an_empty_object(server):
    # the Go status structs always serialise: a new Deployment reads back "status: {}"
    assert server.create(copy.deepcopy(DEPLOY))["status"] == {}


def test_claims_volumes_and_bindings(server):
    claim = server.create({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {
        "name": "c", "namespace": "default"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {
            "requests": {"storage": "1Gi"}}}})
    assert claim["spec"]["volumeMode"] == "Filesystem" and claim["status"] == {"phase": "Pending"}
    binding = server.create({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {
        "name": "b", "namespace": "default"}, "roleRef": {"kind": "Role", "name": "r"},
        "subjects": [{"kind": "User", "name": "u"}, {"kind": "ServiceAccount", "name": "sa", "namespace": "default"}]})
    assert binding["roleRef"]["apiGroup"] == "rbac.authorization.k8s.io"
    user, account = binding["subjects"]
    assert user["apiGroup"] == "rbac.authorization.k8s.io" and "apiGroup" not in account


def test_an_already_defaulted_spec_keeps_its_identity():
    # copy-on-write: nothing is copied when nothing is added
    from kamera_cli.apiserver.defaulting.kinds import apply_builtin_defaults

    obj = {"metadata": {}, **copy.deepcopy(DEPLOY)}
    apply_builtin_defaults("apps", "Deployment", obj)
    spec = obj["spec"]
    again = {**obj, "metadata": {}}
    apply_builtin_defaults("apps", "Deployment", again)
    assert again["spec"] is spec


def test_a_template_without_a_spec_is_defaulted_as_an_empty_spec(server):
    # SetObjectDefaults_PodTemplate: PodTemplateSpec.Spec is a value in Go, so SetDefaults_PodSpec runs
    # on it (restartPolicy Always) before ValidatePodTemplate; only the missing containers are refused
    with pytest.raises(ApiError) as err:
        server.create({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t", "namespace": "default"},
                       "template": {}})
    fields = [c["field"] for c in err.value.body["details"]["causes"]]
    assert fields == ["template.spec.containers"]
