"""Service validation, as ``ValidateService`` (pkg/apis/core/validation/validation.go, 1.33) does it.

Why a module of its own: a Service has the most cross-field rules of the core kinds -- its type decides
which of the cluster IPs, IP families, node ports, load-balancer fields and traffic policies may be set
-- and operators that template Services (ingress controllers, databases exposing LoadBalancers) trip
over exactly these.  Runs on the defaulted object after ``allocation.allocate_cluster_ip`` filled the
cluster IPs and families, as upstream validates after its allocator ran (``BeginCreate``).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from kamera_cli.apiserver.validation import field_errors as F
from kamera_cli.apiserver.validation.field_errors import Cause, GoRepr
from kamera_cli.apiserver.validation.formats import is_cidr
from kamera_cli.model.objects import MAPPING

Obj = Mapping[str, Any]
_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
_PROTOCOLS = ("SCTP", "TCP", "UDP")
_POLICIES = ("PreferDualStack", "RequireDualStack", "SingleStack")
_CIDR_MSG = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
_LB_ONLY = "may only be used when `type` is 'LoadBalancer'"


def _mapping(obj: Obj, key: str) -> Obj:
    value = obj.get(key)
    return value if isinstance(value, MAPPING) else {}


def _strings(values: list[Any]) -> GoRepr:
    return GoRepr("[]string{" + ", ".join(f'"{v}"' for v in values) + "}")


def service(obj: Obj) -> list[Cause]:
    """``ValidateService``, in its order (each part names the upstream helper it follows)."""
    spec = _mapping(obj, "spec")
    kind = spec.get("type") or ""
    ports = spec.get("ports") or []
    ips = [str(ip) for ip in spec.get("clusterIPs") or []]
    headless = ips == ["None"]
    out: list[Cause] = []
    if not ports and not headless and kind != "ExternalName":
        out.append(F.required("spec.ports"))
    if kind in ("LoadBalancer", "NodePort") and headless:
        out.append(F.invalid("spec.clusterIPs[0]", "None", f"may not be set to 'None' for {kind} services"))
    elif kind == "ExternalName":
        for key, present in (("clusterIPs", bool(ips)), ("ipFamilies", bool(spec.get("ipFamilies"))),
                             ("ipFamilyPolicy", spec.get("ipFamilyPolicy") is not None)):
            if present:
                out.append(F.forbidden(f"spec.{key}", "may not be set for ExternalName services"))
        external = str(spec.get("externalName") or "").removesuffix(".")
        out += (F.each_invalid("spec.externalName", external, F.dns1123_subdomain(external)) if external
                else [F.required("spec.externalName")])
    out += _ports(ports)
    selector = spec.get("selector")
    for key, value in sorted(selector.items()) if isinstance(selector, MAPPING) else ():  # ValidateLabels
        out += F.each_invalid("spec.selector", key, F.qualified_name(str(key)))
        out += F.each_invalid("spec.selector", value, F.label_value(str(value)))
    out += _affinity(spec)
    if kind != "ExternalName":
        out += _cluster_ips(spec, ips, headless)
    for i, ip in enumerate(spec.get("externalIPs") or ()):
        out += ([F.invalid(f"spec.externalIPs[{i}]", ip, F.IP_MSG)] if not F.is_ip(ip) else
                _non_special(str(ip), f"spec.externalIPs[{i}]"))
    if not kind:
        out.append(F.required("spec.type"))
    elif kind not in _TYPES:
        out.append(F.not_supported("spec.type", kind, _TYPES))
    out += _node_ports(ports, kind) + _pairs(ports) + _load_balancer(obj, spec, kind) + _traffic(spec, kind)
    return out


def _ports(ports: list[Any]) -> list[Cause]:
    """``validateServicePort``: names (required beside others, DNS labels, unique), port, protocol,
    target port, ``appProtocol`` a qualified name."""
    out: list[Cause] = []
    names: set[str] = set()
    for here, port in F.items(ports, "spec.ports"):
        name = port.get("name") or ""
        if len(ports) > 1 and not name:
            out.append(F.required(f"{here}.name"))
        elif name:
            out += F.unique_name(f"{here}.name", name, names, F.dns1123_label)
        out += F.each_invalid(f"{here}.port", port.get("port"), F.port_number(port.get("port")))
        protocol = port.get("protocol") or ""
        if not protocol:
            out.append(F.required(f"{here}.protocol"))
        elif protocol not in _PROTOCOLS:
            out.append(F.not_supported(f"{here}.protocol", protocol, _PROTOCOLS))
        target = port.get("targetPort")
        if isinstance(target, str):
            out += F.each_invalid(f"{here}.targetPort", target, F.port_name(target))
        elif target is not None:
            out += F.each_invalid(f"{here}.targetPort", target, F.port_number(target))
        app = port.get("appProtocol")
        if app is not None:
            out += F.each_invalid(f"{here}.appProtocol", app, F.qualified_name(str(app)))
    return out


def _affinity(spec: Obj) -> list[Cause]:
    """Session affinity and ``validateClientIPAffinityConfig``."""
    affinity = spec.get("sessionAffinity") or ""
    if not affinity:
        return [F.required("spec.sessionAffinity")]
    if affinity not in ("ClientIP", "None"):
        return [F.not_supported("spec.sessionAffinity", affinity, ("ClientIP", "None"))]
    if affinity == "ClientIP":
        timeout = (((spec.get("sessionAffinityConfig") or {}).get("clientIP") or {}).get("timeoutSeconds"))
        if isinstance(timeout, int) and not 0 < timeout <= 86400:
            return [F.invalid("spec.sessionAffinityConfig.clientIP.timeoutSeconds", timeout,
                              "must be greater than 0 and less than 86400")]
    elif spec.get("sessionAffinityConfig") is not None:
        return [F.forbidden("spec.sessionAffinityConfig", "must not be set when session affinity is None")]
    return []


def _cluster_ips(spec: Obj, ips: list[str], headless: bool) -> list[Cause]:
    """``ValidateServiceClusterIPsRelatedFields``: ``clusterIPs`` led by ``clusterIP``, families IPv4/IPv6
    without repeats, a known family policy, valid IPs (``None`` only alone), at most a dual-stack pair,
    each IP of the family its position names."""
    out: list[Cause] = []
    primary = str(spec.get("clusterIP") or "")
    if primary:
        if not ips:
            out.append(F.required("spec.clusterIPs"))
        elif ips[0] != primary:
            out.append(F.invalid("spec.clusterIPs", _strings(ips), "first value must match `clusterIP`"))
    elif ips:
        out.append(F.invalid("spec.clusterIPs", _strings(ips), "must be empty when `clusterIP` is not specified"))
    families = [str(f) for f in spec.get("ipFamilies") or []]
    seen: set[str] = set()
    for i, family in enumerate(families):
        if family not in ("IPv4", "IPv6"):
            out.append(F.not_supported(f"spec.ipFamilies[{i}]", family, ("IPv4", "IPv6")))
        if family in seen:
            out.append(F.duplicate(f"spec.ipFamilies[{i}]", family))
        seen.add(family)
    policy = spec.get("ipFamilyPolicy")
    if policy is not None and policy not in _POLICIES:
        out.append(F.not_supported("spec.ipFamilyPolicy", policy, _POLICIES))
    bad = False
    for i, ip in enumerate(ips):
        if i == 0 and ip == "None":
            if len(ips) > 1:
                bad = True
                out.append(F.invalid("spec.clusterIPs", _strings(ips), "'None' must be the first and only value"))
            continue
        if not F.is_ip(ip):
            bad = True
            out.append(F.invalid(f"spec.clusterIPs[{i}]", ip, F.IP_MSG))
    if len(ips) > 2:
        out.append(F.invalid("spec.clusterIPs", _strings(ips), "may only hold up to 2 values"))
    if bad:
        return out
    if len(ips) > 1 and {ipaddress.ip_address(ip).version for ip in ips} != {4, 6}:
        out.append(F.invalid("spec.clusterIPs", _strings(ips), "may specify no more than one IP for each IP family"))
    if not headless:
        for i, (ip, family) in enumerate(zip(ips, families, strict=False)):
            v6 = ipaddress.ip_address(ip).version == 6
            if family == "IPv4" and v6:
                out.append(F.invalid(f"spec.clusterIPs[{i}]", ip, f"expected an IPv4 value as indicated by "
                                                                  f"`ipFamilies[{i}]`"))
            elif family == "IPv6" and not v6:
                out.append(F.invalid(f"spec.clusterIPs[{i}]", ip, f"expected an IPv6 value as indicated by "
                                                                  f"`ipFamilies[{i}]`"))
    return out


def _non_special(ip: str, path: str) -> list[Cause]:
    """``ValidateNonSpecialIP``: no unspecified, loopback or link-local addresses."""
    address = ipaddress.ip_address(ip)
    out: list[Cause] = []
    if address.is_unspecified:
        out.append(F.invalid(path, ip, f"may not be unspecified ({ip})"))
    if address.is_loopback:
        out.append(F.invalid(path, ip, "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
    if address.is_link_local and not address.is_multicast:
        out.append(F.invalid(path, ip, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
    if address in ipaddress.ip_network("224.0.0.0/24") or (address.version == 6 and address.is_multicast and (
            int(address) >> 112) & 0xF == 2):
        out.append(F.invalid(path, ip, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"))
    return out


def _node_ports(ports: list[Any], kind: str) -> list[Cause]:
    """No node port on ClusterIP Services; no (protocol, node port) twice."""
    out: list[Cause] = []
    if kind == "ClusterIP":
        out += [F.forbidden(f"{here}.nodePort", "may not be used when `type` is 'ClusterIP'")
                for here, port in F.items(ports, "spec.ports") if port.get("nodePort")]
    seen: set[tuple[str, Any]] = set()
    for here, port in F.items(ports, "spec.ports"):
        if port.get("nodePort"):
            key = (str(port.get("protocol") or ""), port["nodePort"])
            if key in seen:
                out.append(F.duplicate(f"{here}.nodePort", port["nodePort"]))
            seen.add(key)
    return out


def _pairs(ports: list[Any]) -> list[Cause]:
    """No (protocol, port) pair twice; the duplicate is reported as the key, printed as Go's ``%#v``."""
    out: list[Cause] = []
    seen: set[tuple[str, Any]] = set()
    for here, port in F.items(ports, "spec.ports"):
        pair = (str(port.get("protocol") or ""), port.get("port"))
        if pair in seen:
            out.append(F.duplicate(here, GoRepr(
                f'core.ServicePort{{Name:"", Protocol:"{pair[0]}", AppProtocol:(*string)(nil), Port:{pair[1]}, '
                'TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:""}, NodePort:0}')))
        seen.add(pair)
    return out


def _load_balancer(obj: Obj, spec: Obj, kind: str) -> list[Cause]:
    """Source ranges (field, else the ``service.beta.kubernetes.io/load-balancer-source-ranges``
    annotation), ``allocateLoadBalancerNodePorts`` and ``loadBalancerClass`` (``validateLoadBalancerClassField``)
    only on LoadBalancers.  Upstream's source-range path really is ``spec.LoadBalancerSourceRanges``."""
    out: list[Cause] = []
    ranges = spec.get("loadBalancerSourceRanges") or []
    annotation = ((obj.get("metadata") or {}).get("annotations") or {}).get(
        "service.beta.kubernetes.io/load-balancer-source-ranges")
    if ranges:
        if kind != "LoadBalancer":
            out.append(F.forbidden("spec.LoadBalancerSourceRanges", _LB_ONLY))
        out += [F.invalid(f"spec.LoadBalancerSourceRanges[{i}]", str(v).strip(), _CIDR_MSG)
                for i, v in enumerate(ranges) if not is_cidr(str(v).strip())]
    elif annotation is not None:
        path = "metadata.annotations[service.beta.kubernetes.io/load-balancer-source-ranges]"
        if kind != "LoadBalancer":
            out.append(F.forbidden(path, _LB_ONLY))
        text = str(annotation).strip()
        out += [F.invalid(path, v.strip(), _CIDR_MSG) for v in (text.split(",") if text else ())
                if not is_cidr(v.strip())]
    if spec.get("allocateLoadBalancerNodePorts") is not None and kind != "LoadBalancer":
        out.append(F.forbidden("spec.allocateLoadBalancerNodePorts", _LB_ONLY))
    elif kind == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
        out.append(F.required("allocateLoadBalancerNodePorts"))  # sic: upstream's path has no "spec."
    cls = spec.get("loadBalancerClass")
    if cls is not None:
        out += (F.each_invalid("spec.loadBalancerClass", cls, F.qualified_name(str(cls))) if kind == "LoadBalancer"
                else [F.forbidden("spec.loadBalancerClass", _LB_ONLY)])
    return out


def _traffic(spec: Obj, kind: str) -> list[Cause]:
    """``validateServiceExternalTrafficPolicy`` (without the health-check node port's Required: kamera
    allocates no node ports), ``validateServiceInternalTrafficFieldsValue``,
    ``validateServiceTrafficDistribution``."""
    out: list[Cause] = []
    external = spec.get("externalTrafficPolicy") or ""
    accessible = kind in ("LoadBalancer", "NodePort") or (kind == "ClusterIP" and bool(spec.get("externalIPs")))
    if not accessible and external:
        out.append(F.invalid("spec.externalTrafficPolicy", external,
                             "may only be set for externally-accessible services"))
    elif accessible and not external:
        out.append(F.required("spec.externalTrafficPolicy"))
    elif accessible and external not in ("Cluster", "Local"):
        out.append(F.not_supported("spec.externalTrafficPolicy", external, ("Cluster", "Local")))
    check = spec.get("healthCheckNodePort")
    if check and not (kind == "LoadBalancer" and external == "Local"):
        out.append(F.invalid("spec.healthCheckNodePort", check,
                             "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"))
    elif check:
        out += F.each_invalid("spec.healthCheckNodePort", check, F.port_number(check))
    internal = spec.get("internalTrafficPolicy")
    if internal is None and kind in ("NodePort", "LoadBalancer", "ClusterIP"):
        out.append(F.required("spec.internalTrafficPolicy"))
    elif internal is not None and internal not in ("Cluster", "Local"):
        out.append(F.not_supported("spec.internalTrafficPolicy", internal, ("Cluster", "Local")))
    distribution = spec.get("trafficDistribution")
    if distribution is not None and distribution != "PreferClose":
        out.append(F.not_supported("spec.trafficDistribution", distribution, ("PreferClose",)))
    return out


def service_update(old: Obj, new: Obj) -> list[Cause]:
    """``ValidateServiceUpdate``'s own rules: ``validateUpgradeDowngradeClusterIPs`` (the cluster IPs may
    only gain or lose a secondary, never change), the same for the first IP family, the load-balancer
    class of a LoadBalancer that stays one, and the health-check node port while both need one."""
    before, after = _mapping(old, "spec"), _mapping(new, "spec")
    out: list[Cause] = []
    if "ExternalName" not in (before.get("type"), after.get("type")):
        out += _upgrade_downgrade(before, after)
    if before.get("type") == after.get("type") == "LoadBalancer" and (
            before.get("loadBalancerClass") != after.get("loadBalancerClass")):
        out.append(F.invalid("spec.loadBalancerClass", after.get("loadBalancerClass"), "may not change once set"))
    if all(s.get("type") == "LoadBalancer" and s.get("externalTrafficPolicy") == "Local" for s in (before, after)) and (
            before.get("healthCheckNodePort") != after.get("healthCheckNodePort")):
        out.append(F.forbidden("spec.healthCheckNodePort", "field is immutable"))
    return out


def _upgrade_downgrade(before: Obj, after: Obj) -> list[Cause]:
    """``validateUpgradeDowngradeClusterIPs`` and ``validateUpgradeDowngradeIPFamilies`` (their bad
    values are the whole new lists, as upstream prints them)."""
    old_ips, new_ips = list(before.get("clusterIPs") or []), list(after.get("clusterIPs") or [])
    old_headless, new_headless = old_ips == ["None"], new_ips == ["None"]
    out: list[Cause] = []
    if not (old_headless and new_headless):
        shown = _strings(new_ips)
        if len(old_ips) == len(new_ips):
            out += [F.invalid(f"spec.clusterIPs[{i}]", shown, "may not change once set")
                    for i, ip in enumerate(old_ips) if ip != new_ips[i]]
        elif len(old_ips) > len(new_ips):
            if not new_ips:
                out.append(F.invalid("spec.clusterIPs[0]", shown, "primary clusterIP can not be unset"))
            elif old_ips[0] != new_ips[0]:
                out.append(F.invalid("spec.clusterIPs[0]", shown, "may not change once set"))
            if len(new_ips) == 1 and after.get("ipFamilyPolicy") != "SingleStack":
                out.append(F.invalid("spec.ipFamilyPolicy", after.get("ipFamilyPolicy"),
                                     "must be set to 'SingleStack' when releasing the secondary clusterIP"))
        elif old_ips and old_ips[0] != new_ips[0]:
            out.append(F.invalid("spec.clusterIPs[0]", shown, "may not change once set"))
    old_families, new_families = list(before.get("ipFamilies") or []), list(after.get("ipFamilies") or [])
    if old_headless or new_headless:
        return out
    families = GoRepr("[]core.IPFamily{" + ", ".join(f'"{f}"' for f in new_families) + "}")
    if len(old_families) == len(new_families):
        out += [F.invalid("spec.ipFamilies[0]", families, "may not change once set")
                for i, family in enumerate(old_families) if family != new_families[i]]
    elif new_families and old_families and new_families[0] != old_families[0]:
        out.append(F.invalid("spec.ipFamilies[0]", _strings(new_ips), "may not change once set"))
    return out
