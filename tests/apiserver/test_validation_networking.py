"""Ingress, NetworkPolicy and Namespace validation (pkg/apis/networking/validation ``ValidateIngressSpec``,
``validateIngressBackend``, ``ValidateNetworkPolicySpec``, ``ValidateIPBlock``; core ``ValidateNamespace``)."""

from __future__ import annotations

import copy

import pytest

from kamera_cli.apiserver.errors import ApiError

BACKEND = {"service": {"name": "web", "port": {"number": 80}}}


def _ingress(**spec):
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "i", "namespace": "default"},
            "spec": spec}


def _causes(server, obj):
    with pytest.raises(ApiError) as exc:
        server.create(copy.deepcopy(obj))
    assert exc.value.status == 422
    return [(c["reason"], c["field"], c["message"]) for c in exc.value.body["details"]["causes"]]


def test_a_valid_ingress_is_accepted(server):
    out = server.create(_ingress(rules=[{"host": "*.example.com", "http": {"paths": [
        {"path": "/", "pathType": "Prefix", "backend": BACKEND}]}}]))
    assert out["spec"]["rules"][0]["host"] == "*.example.com"


def test_ingress_paths_must_be_absolute(server):
    causes = _causes(server, _ingress(rules=[{"http": {"paths": [
        {"path": "/a", "pathType": "Prefix", "backend": BACKEND},
        {"path": "relative", "pathType": "Exact", "backend": BACKEND}]}}]))
    assert causes == [("FieldValueInvalid", "spec.rules[0].http.paths[1].path",
                       'Invalid value: "relative": must be an absolute path')]


def test_ingress_paths_need_a_type(server):
    # required by the schema table (upstream adds the detail "pathType must be specified": docs/apiserver.md)
    causes = _causes(server, _ingress(rules=[{"http": {"paths": [{"path": "/a", "backend": BACKEND}]}}]))
    assert causes == [("FieldValueRequired", "spec.rules[0].http.paths[0].pathType", "Required value")]


def test_ingress_needs_rules_or_a_default_backend(server):
    (reason, path, message), = _causes(server, _ingress())
    assert (reason, path) == ("FieldValueInvalid", "spec.rules")
    assert message.endswith("either `defaultBackend` or `rules` must be specified")


def test_ingress_backend_ports(server):
    both = {"service": {"name": "web", "port": {"number": 80, "name": "http"}}}
    (reason, path, message), = _causes(server, _ingress(defaultBackend=both))
    assert (reason, path) == ("FieldValueInvalid", "spec.defaultBackend.service.port")
    assert message.endswith("cannot set both port name & port number")


def _policy(**spec):
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": "n", "namespace": "default"}, "spec": {"podSelector": {}, **spec}}


def test_network_policy_ports_and_ip_blocks(server):
    causes = _causes(server, _policy(ingress=[{"ports": [{"port": 90, "endPort": 80}], "from": [
        {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["192.168.0.0/16"]}}, {"ipBlock": {"cidr": "nonsense"}}]}]))
    assert causes == [
        ("FieldValueInvalid", "spec.ingress[0].ports[0].endPort", "Invalid value: 80: must be greater than or equal "
                                                                  "to `port`"),
        ("FieldValueInvalid", "spec.ingress[0].from[0].ipBlock.except[0]",
         'Invalid value: "192.168.0.0/16": must be a strict subset of `cidr`'),
        ("FieldValueInvalid", "spec.ingress[0].from[1].ipBlock.cidr",
         'Invalid value: "nonsense": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)')]


def test_network_policy_defaults_still_validate(server):
    out = server.create(_policy(egress=[{"ports": [{"port": 53, "protocol": "UDP"}]}]))
    assert out["spec"]["policyTypes"] == ["Ingress", "Egress"]


def test_namespace_finalizers_are_standard_or_qualified(server):
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}, "spec": {"finalizers": ["custom"]}}
    assert _causes(server, ns) == [("FieldValueInvalid", "spec.finalizers", 'Invalid value: "custom": name is '
                                                                            "neither a standard finalizer name nor "
                                                                            "is it fully qualified")]
