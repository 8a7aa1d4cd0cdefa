"""Validation of networking kinds and namespaces (pkg/apis/networking/validation, core ``ValidateNamespace``).

Why: operators generate Ingresses and NetworkPolicies from templates, and the usual mistakes -- a
relative path, a missing ``pathType``, a backend port given twice, a malformed CIDR -- are refused by a
real server.  Each function names the upstream one it follows; what is not checked is listed in
docs/apiserver.md.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from kamera_cli.apiserver import field_errors as F
from kamera_cli.apiserver.field_errors import Cause

Obj = Mapping[str, Any]
_PATH_TYPES = ("Exact", "ImplementationSpecific", "Prefix")
_PROTOCOLS = ("SCTP", "TCP", "UDP")


def _dict(obj: Obj, key: str) -> Obj:
    value = obj.get(key)
    return value if isinstance(value, Mapping) else {}


def _backend(backend: Obj, path: str) -> list[Cause]:
    """``validateIngressBackend``: exactly one of service and resource; a service names one port."""
    service, resource = backend.get("service"), backend.get("resource")
    if service is None and resource is None:
        return [F.invalid(path, F.GoRepr("networking.IngressBackend{...}"), "one backend type must be specified")]
    if service is not None and resource is not None:
        return [F.invalid(path, F.GoRepr("networking.IngressBackend{...}"),
                          "cannot set both resource and service backends")]
    if not isinstance(service, Mapping):
        return []
    out: list[Cause] = []
    name = service.get("name") or ""
    if not name:
        out.append(F.required(f"{path}.service.name"))
    port = _dict(service, "port")
    if port.get("name") and port.get("number"):
        out.append(F.invalid(f"{path}.service.port", F.GoRepr("networking.ServiceBackendPort{...}"),
                             "cannot set both port name & port number"))
    elif port.get("name"):
        out += F.each_invalid(f"{path}.service.port.name", port["name"], F.port_name(port["name"]))
    elif port.get("number") is not None:
        out += F.each_invalid(f"{path}.service.port.number", port["number"], F.port_number(port["number"]))
    else:
        out.append(F.invalid(f"{path}.service.port", F.GoRepr("networking.ServiceBackendPort{...}"),
                             "port name or number is required"))
    return out


def ingress(obj: Obj) -> list[Cause]:
    """``ValidateIngressSpec`` / ``validateIngressRules`` / ``validateHTTPIngressPath``."""
    spec = _dict(obj, "spec")
    rules = spec.get("rules") or []
    out: list[Cause] = []
    if spec.get("defaultBackend") is None and not rules:
        out.append(F.invalid("spec.rules", F.GoRepr("[]networking.IngressRule(nil)"),
                             "either `defaultBackend` or `rules` must be specified"))
    if isinstance(spec.get("defaultBackend"), Mapping):
        out += _backend(spec["defaultBackend"], "spec.defaultBackend")
    for here, rule in F.items(rules, "spec.rules"):
        host = rule.get("host") or ""
        if host:
            bare = host[2:] if host.startswith("*.") else host
            out += F.each_invalid(f"{here}.host", host, F.dns1123_subdomain(bare))
        http = rule.get("http")
        if not isinstance(http, Mapping):
            continue
        paths = http.get("paths") or []
        if not paths:
            out.append(F.required(f"{here}.http.paths"))
        for where, item in F.items(paths, f"{here}.http.paths"):
            kind, text = item.get("pathType"), item.get("path") or ""
            if not kind:
                out.append(F.required(f"{where}.pathType", "pathType must be specified"))
            elif kind not in _PATH_TYPES:
                out.append(F.not_supported(f"{where}.pathType", kind, _PATH_TYPES))
            elif kind in ("Exact", "Prefix") and not text.startswith("/"):
                out.append(F.invalid(f"{where}.path", text, "must be an absolute path"))
            out += _backend(_dict(item, "backend"), f"{where}.backend")
    return out


def _policy_ports(ports: Any, path: str) -> list[Cause]:
    out: list[Cause] = []
    for here, port in F.items(ports, path):
        protocol = port.get("protocol")
        if protocol is not None and protocol not in _PROTOCOLS:
            out.append(F.not_supported(f"{here}.protocol", protocol, _PROTOCOLS))
        number, end = port.get("port"), port.get("endPort")
        if isinstance(number, int):
            out += F.each_invalid(f"{here}.port", number, F.port_number(number))
        elif isinstance(number, str):
            out += F.each_invalid(f"{here}.port", number, F.port_name(number))
        if end is not None:
            if not isinstance(number, int):
                out.append(F.required(f"{here}.port", "must specify a numeric port when endPort is set"))
            elif isinstance(end, int) and end < number:
                out.append(F.invalid(f"{here}.endPort", end, "must be greater than or equal to `port`"))
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
            out.append(F.invalid(f"{path}.except[{i}]", excepted, "must be a valid CIDR value"))
            continue
        if inner.version != network.version or not inner.subnet_of(network) or inner == network:  # type: ignore[arg-type]
            out.append(F.invalid(f"{path}.except[{i}]", excepted, "must be a strict subset of `cidr`"))
    return out


def network_policy(obj: Obj) -> list[Cause]:
    """``ValidateNetworkPolicySpec``: policy types, ports, peers' IP blocks."""
    spec = _dict(obj, "spec")
    out: list[Cause] = []
    types = spec.get("policyTypes") or []
    for i, kind in enumerate(types):
        if kind not in ("Egress", "Ingress"):
            out.append(F.not_supported(f"spec.policyTypes[{i}]", kind, ("Egress", "Ingress")))
    if len(types) > 2:
        out.append(F.invalid("spec.policyTypes", F.GoRepr(f"{types}"), "may not specify more than two policyTypes"))
    for direction, peers in (("ingress", "from"), ("egress", "to")):
        for here, rule in F.items(spec.get(direction), f"spec.{direction}"):
            out += _policy_ports(rule.get("ports"), f"{here}.ports")
            for where, peer in F.items(rule.get(peers), f"{here}.{peers}"):
                if isinstance(peer.get("ipBlock"), Mapping):
                    out += _ip_block(peer["ipBlock"], f"{where}.ipBlock")
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
