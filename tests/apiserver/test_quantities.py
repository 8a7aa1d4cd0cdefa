"""Canonical quantities, as staging/src/k8s.io/apimachinery/pkg/api/resource writes them back.

``ParseQuantity`` (grammar, format from the suffix), ``Quantity.RoundUp(-3)`` via
``SetDefaults_ResourceList`` (pkg/apis/core/v1/defaults.go, ResourceLists only) and
``CanonicalizeBytes`` (the serialised text).
"""

from __future__ import annotations

import copy
import json

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from kamera_cli.apiserver.validation.quantity import QuantityError, canonical


@pytest.mark.parametrize(("sent", "stored"), [
    ("0.5", "500m"), (0.5, "500m"), ("1000m", "1"), ("1.5", "1500m"), (2, "2"), ("10000", "10k"),
    ("100M", "100M"), ("1024Mi", "1Gi"), ("2048Ki", "2Mi"), ("1.5Gi", "1536Mi"), ("1000Mi", "1000Mi"),
    ("0.5Ki", "512"), ("1Ki", "1Ki"), ("1.5Ki", "1536"),  # BinarySI below 1024 or with a remainder: decimal
    ("1e3", "1e3"), ("129e6", "129e6"), ("12e-1", "1200e-3"),  # DecimalExponent keeps its notation
    ("0", "0"), ("0Mi", "0"), (".5", "500m"), ("5.", "5"), ("1n", "1n"),
])
def test_canonical_form_follows_canonicalize_bytes(sent, stored):
    assert canonical(sent) == stored


@pytest.mark.parametrize(("sent", "stored"), [("0.0001", "1m"), ("1n", "1m"), ("100n", "1m"), ("-0.0001", "-1m"),
                                              ("1500u", "2m"), ("250m", "250m")])
def test_resource_lists_are_rounded_up_to_milli_away_from_zero(sent, stored):
    assert canonical(sent, round_milli=True) == stored


@pytest.mark.parametrize(("text", "message"), [
    ("abc", "quantities must match the regular expression"), ("1.2.3", "quantities must match"),
    ("1Mb", "quantities must match"), ("1e", "unable to parse quantity's suffix"), (True, "quantities must match"),
])
def test_parse_errors_use_upstream_wording(text, message):
    with pytest.raises(QuantityError, match=message):
        canonical(text)


POD = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "nginx:1", "resources": {
    "limits": {"cpu": "0.5", "memory": "1024Mi"}, "requests": {"cpu": "0.25"}}}],
    "volumes": [{"name": "v", "emptyDir": {"sizeLimit": "1n"}}]}}


def test_a_pod_reads_back_canonical_quantities(api_client):
    pod = client.CoreV1Api(api_client).create_namespaced_pod("default", copy.deepcopy(POD))
    res = pod.spec.containers[0].resources
    assert res.limits == {"cpu": "500m", "memory": "1Gi"}
    assert res.requests == {"cpu": "250m", "memory": "1Gi"}  # memory: SetDefaults_Pod copies it from the limit
    assert pod.spec.volumes[0].empty_dir.size_limit == "1n"  # a single Quantity is not a ResourceList: no rounding


def test_desired_vs_live_drift_shows_as_on_a_cluster(server):
    # a controller comparing its desired "0.5" with the live value sees "500m" and must not loop on it
    desired = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "default"},
               "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}},
                        "spec": {"containers": [{"name": "c", "image": "x:1", "resources": {
                            "requests": {"cpu": "0.5"}}}]}}}}
    live = server.create(copy.deepcopy(desired))
    assert live["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "500m"}
    again = server.update(copy.deepcopy(desired))  # re-sending the desired spec is a no-op
    assert again["metadata"]["resourceVersion"] == live["metadata"]["resourceVersion"]


def test_a_malformed_quantity_is_refused_by_the_decoder(api_client):
    bad = copy.deepcopy(POD)
    bad["spec"]["containers"][0]["resources"]["limits"]["cpu"] = "lots"
    with pytest.raises(ApiException) as exc:
        client.CoreV1Api(api_client).create_namespaced_pod("default", bad)
    assert exc.value.status == 400
    assert json.loads(exc.value.body)["message"] == (
        'Pod in version "v1" cannot be handled as a Pod: quantities must match the regular expression '
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")


def test_quantities_of_other_kinds_are_canonical_too(server):
    out = server.create({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {
        "name": "c", "namespace": "default"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {
            "requests": {"storage": "1024Mi"}}}})
    assert out["spec"]["resources"]["requests"] == {"storage": "1Gi"}
