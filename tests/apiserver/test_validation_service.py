"""Service validation (``validation/service.py``), after 1.33's ``ValidateService`` and
``ValidateServiceUpdate``: IP families and cluster IPs, external IPs, load-balancer fields, traffic
policies; each case names the upstream helper."""

from __future__ import annotations

import pytest

from kamera_cli.apiserver.errors import ApiError


def _svc(name: str = "s", **spec) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "default"},
            "spec": {"ports": [{"port": 80}], **spec}}


def _causes(call) -> list[tuple[str, str, str]]:
    with pytest.raises(ApiError) as exc:
        call()
    assert exc.value.status == 422
    return [(c["reason"], c["field"], c["message"]) for c in exc.value.body["details"]["causes"]]


def test_cluster_ips_follow_the_cluster_ip_and_their_families(server):
    # ValidateServiceClusterIPsRelatedFields (the allocator normalises clusterIP from clusterIPs first)
    out = server.create(_svc("dual", clusterIPs=["10.96.0.10", "fd00::10"], ipFamilyPolicy="PreferDualStack"))
    assert out["spec"]["clusterIP"] == "10.96.0.10" and out["spec"]["ipFamilies"] == ["IPv4", "IPv6"]
    assert _causes(lambda: server.create(_svc(clusterIP="10.96.0.11", clusterIPs=["10.96.0.12"]))) == [
        ("FieldValueInvalid", "spec.clusterIPs", 'Invalid value: []string{"10.96.0.12"}: first value must match '
                                                 '`clusterIP`')]
    causes = _causes(lambda: server.create(_svc(clusterIPs=["10.96.0.13", "10.96.0.14"], ipFamilies=["IPv4", "IPv4"],
                                                ipFamilyPolicy="Dual")))
    assert causes == [
        ("FieldValueDuplicate", "spec.ipFamilies[1]", 'Duplicate value: "IPv4"'),
        ("FieldValueNotSupported", "spec.ipFamilyPolicy",
         'Unsupported value: "Dual": supported values: "PreferDualStack", "RequireDualStack", "SingleStack"'),
        ("FieldValueInvalid", "spec.clusterIPs", 'Invalid value: []string{"10.96.0.13", "10.96.0.14"}: may specify '
                                                 'no more than one IP for each IP family'),
    ]
    assert _causes(lambda: server.create(_svc(clusterIP="fd00::20", ipFamilies=["IPv4"]))) == [
        ("FieldValueInvalid", "spec.clusterIPs[0]",
         'Invalid value: "fd00::20": expected an IPv4 value as indicated by `ipFamilies[0]`')]


def test_headless_and_external_name_services(server):
    assert _causes(lambda: server.create(_svc(type="NodePort", clusterIP="None"))) == [
        ("FieldValueInvalid", "spec.clusterIPs[0]", 'Invalid value: "None": may not be set to \'None\' for NodePort '
                                                    'services')]
    # the allocator gives an ExternalName nothing; families sent by the client are refused
    assert _causes(lambda: server.create(_svc(type="ExternalName", externalName="db.example.com.",
                                              ipFamilies=["IPv4"]))) == [
        ("FieldValueForbidden", "spec.ipFamilies", "Forbidden: may not be set for ExternalName services")]


def test_external_ips_are_valid_and_not_special(server):
    # ValidateNonSpecialIP
    causes = _causes(lambda: server.create(_svc(externalIPs=["127.0.0.1", "169.254.1.1", "nope", "0.0.0.0"])))
    assert causes == [
        ("FieldValueInvalid", "spec.externalIPs[0]",
         'Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)'),
        ("FieldValueInvalid", "spec.externalIPs[1]",
         'Invalid value: "169.254.1.1": may not be in the link-local range (169.254.0.0/16, fe80::/10)'),
        ("FieldValueInvalid", "spec.externalIPs[2]",
         'Invalid value: "nope": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)'),
        ("FieldValueInvalid", "spec.externalIPs[3]", 'Invalid value: "0.0.0.0": may not be unspecified (0.0.0.0)'),
    ]


def test_load_balancer_fields_only_on_load_balancers(server):
    causes = _causes(lambda: server.create(_svc(loadBalancerSourceRanges=["10.0.0.0/8", "bogus"],
                                                loadBalancerClass="example.com/lb", allocateLoadBalancerNodePorts=True,
                                                externalTrafficPolicy="Local")))
    assert causes == [
        ("FieldValueForbidden", "spec.LoadBalancerSourceRanges",  # upstream's capital L
         "Forbidden: may only be used when `type` is 'LoadBalancer'"),
        ("FieldValueInvalid", "spec.LoadBalancerSourceRanges[1]",
         'Invalid value: "bogus": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)'),
        ("FieldValueForbidden", "spec.allocateLoadBalancerNodePorts",
         "Forbidden: may only be used when `type` is 'LoadBalancer'"),
        ("FieldValueForbidden", "spec.loadBalancerClass", "Forbidden: may only be used when `type` is 'LoadBalancer'"),
        ("FieldValueInvalid", "spec.externalTrafficPolicy",
         'Invalid value: "Local": may only be set for externally-accessible services'),
    ]
    lb = server.create(_svc("lb", type="LoadBalancer", loadBalancerClass="example.com/lb",
                            loadBalancerSourceRanges=[" 10.0.0.0/8 "]))
    assert lb["spec"]["allocateLoadBalancerNodePorts"] is True  # defaulted, so never Required
    # validateLoadBalancerClassField on update
    assert _causes(lambda: server.update({**lb, "spec": {**lb["spec"], "loadBalancerClass": "example.com/other"}})) == [
        ("FieldValueInvalid", "spec.loadBalancerClass", 'Invalid value: "example.com/other": may not change once set')]


def test_port_app_protocol_and_node_ports(server):
    causes = _causes(lambda: server.create(_svc(type="NodePort", ports=[
        {"name": "a", "port": 80, "nodePort": 30080, "appProtocol": "bad protocol"},
        {"name": "b", "port": 81, "nodePort": 30080}])))
    assert [c[:2] for c in causes] == [("FieldValueInvalid", "spec.ports[0].appProtocol"),
                                       ("FieldValueDuplicate", "spec.ports[1].nodePort")]
    assert causes[1][2] == "Duplicate value: 30080"


def test_cluster_ips_may_not_change_once_set(server):
    # validateUpgradeDowngradeClusterIPs
    live = server.create(_svc("a"))
    assert _causes(lambda: server.update({**live, "spec": {**live["spec"], "clusterIP": "10.96.0.99",
                                                            "clusterIPs": ["10.96.0.99"]}})) == [
        ("FieldValueInvalid", "spec.clusterIPs[0]", 'Invalid value: []string{"10.96.0.99"}: may not change once set')]
