"""Validation of networking kinds and namespaces (pkg/apis/networking/validation, core ``ValidateNamespace``).

Why: operators generate Ingresses and NetworkPolicies from templates, and the usual mistakes -- a
relative path, a missing ``pathType``, a backend port given twice, a malformed CIDR -- are refused by a
real server.  Each function names the upstream one it follows; what is not checked is listed in
docs/apiserver.md.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Any

from kamera_cli.apiserver.validation import field_errors as F
from kamera_cli.apiserver.validation.field_errors import Cause
from kamera_cli.apiserver.validation.pod_fields import label_selector
from kamera_cli.apiserver.validation.rbac import path_segment_name

Obj = Mapping[str, Any]
_PATH_TYPES = ("Exact", "ImplementationSpecific", "Prefix")
_PROTOCOLS = ("SCTP", "TCP", "UDP")


def _dict(obj: Obj, key: str) -> Obj:
    value = obj.get(key)
    return value if isinstance(value, Mapping) else {}


_PATH_SEQUENCES = ("//", "/./", "/../", "%2f", "%2F")  # invalidPathSequences
_PATH_SUFFIXES = ("/..", "/.")  # invalidPathSuffixes
_WILDCARD_FMT = r"\*\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_WILDCARD_RE = re.compile(f"^{_WILDCARD_FMT}$")
_WILDCARD_MSG = ("a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must "
                 "consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character "
                 f"(e.g. '*.example.com', regex used for validation is '{_WILDCARD_FMT}')")




def _host_messages(host: str) -> list[str]:
    """``IsWildcardDNS1123Subdomain`` for a host with a ``*``, else ``IsDNS1123Subdomain``."""
    if "*" not in host:
        return F.dns1123_subdomain(host)
    out = ["must be no more than 253 characters"] if len(host) > 253 else []
    return out + ([] if _WILDCARD_RE.match(host) else [_WILDCARD_MSG])


def _backend(backend: Obj, path: str) -> list[Cause]:
    """``validateIngressBackend``: exactly one of service and resource; a service has a DNS-1035 name
    and names one port; a resource is a typed local reference."""
    service, resource = backend.get("service"), backend.get("resource")
    if service is not None and resource is not None:
        return [F.invalid(path, "", "cannot set both resource and service backends")]
    if isinstance(resource, Mapping):  # validateIngressTypedLocalObjectReference
        out = []
        group = resource.get("apiGroup")
        if group is not None:
            out += F.each_invalid(f"{path}.resource.apiGroup", group, F.dns1123_subdomain(str(group)))
        for key in ("kind", "name"):
            value = str(resource.get(key) or "")
            out += ([F.required(f"{path}.resource.{key}", f"{key} is required")] if not value else
                    F.each_invalid(f"{path}.resource.{key}", value, path_segment_name(value)))
        return out
    if not isinstance(service, Mapping):
        return [F.invalid(path, "", "resource or service backend is required")]
    out = []
    name = str(service.get("name") or "")
    out += ([F.required(f"{path}.service.name")] if not name else
            F.each_invalid(f"{path}.service.name", name, F.dns1035_label(name)))
    port = _dict(service, "port")
    if port.get("name") and port.get("number"):
        out.append(F.invalid(path, "", "cannot set both port name & port number"))
    elif port.get("name"):
        out += F.each_invalid(f"{path}.service.port.name", port["name"], F.port_name(port["name"]))
    elif port.get("number"):
        out += F.each_invalid(f"{path}.service.port.number", port["number"], F.port_number(port["number"]))
    else:
        out.append(F.required(path, "port name or number is required"))
    return out


def _http_path(item: Obj, where: str) -> list[Cause]:
    """``validateHTTPIngressPath``."""
    kind, text = item.get("pathType"), str(item.get("path") or "")
    out: list[Cause] = []
    if not kind:
        return [F.required(f"{where}.pathType", "pathType must be specified")]
    if kind in ("Exact", "Prefix"):
        if not text.startswith("/"):
            out.append(F.invalid(f"{where}.path", text, "must be an absolute path"))
        out += [F.invalid(f"{where}.path", text, f"must not contain '{seq}'") for seq in _PATH_SEQUENCES if seq in text]
        out += [F.invalid(f"{where}.path", text, f"cannot end with '{end}'") for end in _PATH_SUFFIXES
                if text.endswith(end)]
    elif kind == "ImplementationSpecific":
        if text and not text.startswith("/"):
            out.append(F.invalid(f"{where}.path", text, "must be an absolute path"))
    else:
        out.append(F.not_supported(f"{where}.pathType", kind, _PATH_TYPES))
    return out + _backend(_dict(item, "backend"), f"{where}.backend")


def ingress(obj: Obj) -> list[Cause]:
    """``ValidateIngressSpec``: rules or a default backend, rules' hosts (DNS names, wildcards, not IPs) and
    paths, TLS hosts and secret names (``validateIngressTLS``), the class name (a DNS subdomain)."""
    spec = _dict(obj, "spec")
    rules = spec.get("rules") or []
    out: list[Cause] = []
    if spec.get("defaultBackend") is None and not rules:
        out.append(F.invalid("spec", F.GoRepr("[]networking.IngressRule(nil)"),
                             "either `defaultBackend` or `rules` must be specified"))
    if isinstance(spec.get("defaultBackend"), Mapping):
        out += _backend(spec["defaultBackend"], "spec.defaultBackend")
    for here, rule in F.items(rules, "spec.rules"):
        host = str(rule.get("host") or "")
        if host:
            if F.is_ip(host):
                out.append(F.invalid(f"{here}.host", host, "must be a DNS name, not an IP address"))
            out += F.each_invalid(f"{here}.host", host, _host_messages(host))
        http = rule.get("http")
        if not isinstance(http, Mapping):
            continue
        paths = http.get("paths") or []
        if not paths:
            out.append(F.required(f"{here}.http.paths"))
        for where, item in F.items(paths, f"{here}.http.paths"):
            out += _http_path(item, where)
    for here, tls in F.items(spec.get("tls"), "spec.tls"):
        for i, host in enumerate(tls.get("hosts") or ()):
            out += F.each_invalid(f"{here}.hosts[{i}]", host, _host_messages(str(host)))
        secret = str(tls.get("secretName") or "")
        if secret:
            out += F.each_invalid(f"{here}.secretName", secret, F.dns1123_subdomain(secret))
    name = spec.get("ingressClassName")
    if name is not None:
        out += F.each_invalid("spec.ingressClassName", name, F.dns1123_subdomain(str(name)))
    return out


def ingress_status(new: Obj, old: Obj) -> list[Cause]:
    """``ValidateIngressStatusUpdate`` / ``ValidateIngressLoadBalancerStatus``: IPs valid, hostnames DNS
    subdomains and not IPs."""
    balancer = _dict(_dict(new, "status"), "loadBalancer")
    out: list[Cause] = []
    for here, item in F.items(balancer.get("ingress"), "status.loadBalancer.ingress"):
        ip, host = str(item.get("ip") or ""), str(item.get("hostname") or "")
        if ip and not F.is_ip(ip):
            out.append(F.invalid(f"{here}.ip", ip, F.IP_MSG))
        if host:
            out += F.each_invalid(f"{here}.hostname", host, F.dns1123_subdomain(host))
            if F.is_ip(host):
                out.append(F.invalid(f"{here}.hostname", host, "must be a DNS name, not an IP address"))
    return out


def _policy_port(port: Obj, here: str) -> list[Cause]:
    """``ValidateNetworkPolicyPort`` (its ``endPort < port`` error really prints the port)."""
    out: list[Cause] = []
    protocol = port.get("protocol")
    if protocol is not None and protocol not in _PROTOCOLS:
        out.append(F.not_supported(f"{here}.protocol", protocol, ("TCP", "UDP", "SCTP")))
    number, end = port.get("port"), port.get("endPort")
    if isinstance(number, int):
        out += F.each_invalid(f"{here}.port", number, F.port_number(number))
        if isinstance(end, int):
            if end < number:
                out.append(F.invalid(f"{here}.endPort", number, "must be greater than or equal to `port`"))
            out += F.each_invalid(f"{here}.endPort", end, F.port_number(end))
    elif isinstance(number, str):
        if end is not None:
            out.append(F.invalid(f"{here}.endPort", end, "may not be specified when `port` is non-numeric"))
        out += F.each_invalid(f"{here}.port", number, F.port_name(number))
    elif end is not None:
        out.append(F.invalid(f"{here}.endPort", end, "may not be specified when `port` is not specified"))
    return out


def _ip_block(block: Obj, path: str) -> list[Cause]:
    """``ValidateIPBlock``: a CIDR, and exceptions strictly inside it."""
    cidr = block.get("cidr") or ""
    if not cidr:
        return [F.required(f"{path}.cidr")]
    try:
        network = ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return [F.invalid(f"{path}.cidr", cidr, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)")]
    out: list[Cause] = []
    for i, excepted in enumerate(block.get("except") or []):
        try:
            inner = ipaddress.ip_network(str(excepted), strict=False)
        except ValueError:
            out.append(F.invalid(f"{path}.except[{i}]", excepted, "must be a valid CIDR value, (e.g. 10.9.8.0/24 "
                                                                    "or 2001:db8::/64)"))
            continue
        if inner.version != network.version or not inner.subnet_of(network) or inner == network:  # type: ignore[arg-type]
            out.append(F.invalid(f"{path}.except[{i}]", excepted, "must be a strict subset of `cidr`"))
    return out


def _peer(peer: Obj, here: str) -> list[Cause]:
    """``ValidateNetworkPolicyPeer``: label selectors, the IP block, exactly one kind unless selectors pair."""
    out: list[Cause] = []
    count = 0
    for key in ("podSelector", "namespaceSelector"):
        if isinstance(peer.get(key), Mapping):
            count += 1
            out += label_selector(peer[key], f"{here}.{key}")
    if isinstance(peer.get("ipBlock"), Mapping):
        count += 1
        out += _ip_block(peer["ipBlock"], f"{here}.ipBlock")
    if count == 0:
        out.append(F.required(here, "must specify a peer"))
    elif count > 1 and isinstance(peer.get("ipBlock"), Mapping):
        out.append(F.forbidden(here, "may not specify both ipBlock and another peer"))
    return out


def network_policy(obj: Obj) -> list[Cause]:
    """``ValidateNetworkPolicySpec``: the pod selector, each rule's ports and peers, policy types."""
    spec = _dict(obj, "spec")
    out = label_selector(_dict(spec, "podSelector"), "spec.podSelector")
    for direction, peers in (("ingress", "from"), ("egress", "to")):
        for here, rule in F.items(spec.get(direction), f"spec.{direction}"):
            for where, port in F.items(rule.get("ports"), f"{here}.ports"):
                out += _policy_port(port, where)
            for where, peer in F.items(rule.get(peers), f"{here}.{peers}"):
                out += _peer(peer, where)
    types = spec.get("policyTypes") or []
    if len(types) > 2:  # printed by upstream as a pointer to the slice
        out.append(F.invalid("spec.policyTypes", F.GoRepr("&[]networking.PolicyType{" + ", ".join(
            f'"{t}"' for t in types) + "}"), "may not specify more than two policyTypes"))
        return out
    for i, kind in enumerate(types):
        if kind not in ("Egress", "Ingress"):
            out.append(F.not_supported(f"spec.policyTypes[{i}]", kind, ("Ingress", "Egress")))
    return out


def namespace(obj: Obj) -> list[Cause]:
    """``ValidateNamespace``: spec finalizers are standard or fully qualified names."""
    out: list[Cause] = []
    for fin in _dict(obj, "spec").get("finalizers") or []:
        if not isinstance(fin, str):
            continue
        messages = F.qualified_name(fin)
        if not messages and "/" not in fin and fin != "kubernetes":
            messages = ["name is neither a standard finalizer name nor is it fully qualified"]
        out += F.each_invalid("spec.finalizers", fin, messages)
    return out
