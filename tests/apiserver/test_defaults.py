"""Built-in defaulting on every write: what a controller comparing specs sees in a real cluster."""

from __future__ import annotations

import copy

from kubernetes import client

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
