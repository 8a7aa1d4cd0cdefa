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


def _match(causes, expected):
    """Each cause has the expected reason and field, and its message contains the expected fragment."""
    assert [c[:2] for c in causes] == [e[:2] for e in expected]
    for cause, (_, _, fragment) in zip(causes, expected, strict=True):
        assert fragment in cause[2], (cause, fragment)


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
    # ValidateIngressSpec reports it at the spec itself, printing the nil rules slice
    assert _causes(server, _ingress()) == [("FieldValueInvalid", "spec", "Invalid value: []networking.IngressRule(nil):"
                                                                         " either `defaultBackend` or `rules` must be"
                                                                         " specified")]


def test_ingress_backend_ports(server):
    # validateIngressBackend: the conflict is reported at the backend, with an empty value
    both = {"service": {"name": "web", "port": {"number": 80, "name": "http"}}}
    assert _causes(server, _ingress(defaultBackend=both)) == [
        ("FieldValueInvalid", "spec.defaultBackend", 'Invalid value: "": cannot set both port name & port number')]
    assert _causes(server, _ingress(defaultBackend={"service": {"name": "Web", "port": {}}})) == [
        ("FieldValueInvalid", "spec.defaultBackend.service.name",
         "Invalid value: \"Web\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
         "with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex "
         "used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"),
        ("FieldValueRequired", "spec.defaultBackend", "Required value: port name or number is required")]


def test_ingress_hosts_paths_tls_and_class(server):
    # validateIngressRules (no IP hosts, wildcards), validateHTTPIngressPath (invalid sequences and suffixes),
    # validateIngressTLS (hosts, secret names), the class name a DNS subdomain
    rules = [{"host": "10.0.0.1", "http": {"paths": [{"path": "/a//b/.", "pathType": "Prefix", "backend": BACKEND}]}},
             {"host": "*.*.example.com", "http": {"paths": [{"path": "/", "pathType": "Exact", "backend": BACKEND}]}}]
    causes = _causes(server, _ingress(rules=rules, ingressClassName="Nginx",
                                      tls=[{"hosts": ["ok.example.com", "*.ok.example.com", "bad host"],
                                            "secretName": "tls_secret"}]))
    _match(causes, [("FieldValueInvalid", "spec.rules[0].host", '"10.0.0.1": must be a DNS name, not an IP address'),
                    ("FieldValueInvalid", "spec.rules[0].http.paths[0].path", '"/a//b/.": must not contain \'//\''),
                    ("FieldValueInvalid", "spec.rules[0].http.paths[0].path", '"/a//b/.": cannot end with \'/.\''),
                    ("FieldValueInvalid", "spec.rules[1].host", "a wildcard DNS-1123 subdomain must start with '*.'"),
                    ("FieldValueInvalid", "spec.tls[0].hosts[2]", "RFC 1123 subdomain"),
                    ("FieldValueInvalid", "spec.tls[0].secretName", '"tls_secret"'),
                    ("FieldValueInvalid", "spec.ingressClassName", '"Nginx"')])


def test_ingress_status_load_balancer(server):
    # ValidateIngressStatusUpdate / ValidateIngressLoadBalancerStatus
    live = server.create(_ingress(defaultBackend=BACKEND))
    with pytest.raises(ApiError) as exc:
        server.update({**live, "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3"}, {"hostname": "1.2.3.4"}]}}},
                      subresource="status")
    assert [(c["field"], c["message"]) for c in exc.value.body["details"]["causes"]] == [
        ("status.loadBalancer.ingress[0].ip",
         'Invalid value: "1.2.3": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)'),
        ("status.loadBalancer.ingress[1].hostname", 'Invalid value: "1.2.3.4": must be a DNS name, not an IP address')]


def _policy(**spec):
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": "n", "namespace": "default"}, "spec": {"podSelector": {}, **spec}}


def test_network_policy_ports_and_ip_blocks(server):
    causes = _causes(server, _policy(ingress=[{"ports": [{"port": 90, "endPort": 80}], "from": [
        {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["192.168.0.0/16"]}}, {"ipBlock": {"cidr": "nonsense"}}]}]))
    assert causes == [
        # upstream prints the port, not the endPort, in this one
        ("FieldValueInvalid", "spec.ingress[0].ports[0].endPort", "Invalid value: 90: must be greater than or equal "
                                                                  "to `port`"),
        ("FieldValueInvalid", "spec.ingress[0].from[0].ipBlock.except[0]",
         'Invalid value: "192.168.0.0/16": must be a strict subset of `cidr`'),
        ("FieldValueInvalid", "spec.ingress[0].from[1].ipBlock.cidr",
         'Invalid value: "nonsense": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)')]


def test_network_policy_selectors_and_peers(server):
    # ValidateNetworkPolicySpec's label selectors, ValidateNetworkPolicyPeer, ValidateNetworkPolicyPort
    causes = _causes(server, _policy(podSelector={"matchLabels": {"app": "bad value"}}, egress=[{
        "ports": [{"port": "http", "endPort": 90}],
        "to": [{}, {"ipBlock": {"cidr": "10.0.0.0/8"}, "namespaceSelector": {"matchExpressions": [
            {"key": "team", "operator": "In"}]}}]}]))
    _match(causes, [("FieldValueInvalid", "spec.podSelector.matchLabels", '"bad value"'),
                    ("FieldValueInvalid", "spec.egress[0].ports[0].endPort",
                     "Invalid value: 90: may not be specified when `port` is non-numeric"),
                    ("FieldValueRequired", "spec.egress[0].to[0]", "Required value: must specify a peer"),
                    ("FieldValueRequired", "spec.egress[0].to[1].namespaceSelector.matchExpressions[0].values", ""),
                    ("FieldValueForbidden", "spec.egress[0].to[1]",
                     "Forbidden: may not specify both ipBlock and another peer")])


def test_network_policy_defaults_still_validate(server):
    out = server.create(_policy(egress=[{"ports": [{"port": 53, "protocol": "UDP"}]}]))
    assert out["spec"]["policyTypes"] == ["Ingress", "Egress"]


def test_namespace_finalizers_are_standard_or_qualified(server):
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}, "spec": {"finalizers": ["custom"]}}
    assert _causes(server, ns) == [("FieldValueInvalid", "spec.finalizers", 'Invalid value: "custom": name is '
                                                                            "neither a standard finalizer name nor "
                                                                            "is it fully qualified")]
