"""Fields the API server fills in itself: Service cluster IPs and the Namespace name label.

Why: controllers wait for a Service's ``clusterIP`` and select namespaces by
``kubernetes.io/metadata.name``; a simulated server that leaves them empty sends those controllers
down paths no real cluster would. Follows the Service REST storage's IP allocation
(pkg/registry/core/service/storage/alloc.go: ``allocClusterIPs``, ``patchAllocatedValues``) and the
namespace strategy's ``PrepareForCreate``/``PrepareForUpdate`` (pkg/registry/core/namespace/strategy.go).
"""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Mapping
from typing import Any

from kamera_cli.model.objects import KindRef

#: the service CIDR of a default kubeadm/kind cluster; .1 is the ``kubernetes`` Service's
SERVICE_CIDR = ipaddress.ip_network("10.96.0.0/12")
NAME_LABEL = "kubernetes.io/metadata.name"
_ALLOCATED = ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy")


def label_namespace(obj: dict[str, Any]) -> None:
    """Every Namespace carries ``kubernetes.io/metadata.name: <its name>`` (forced on create and update)."""
    meta = obj.setdefault("metadata", {})
    name = meta.get("name")
    if isinstance(name, str) and name:
        meta["labels"] = {**(meta.get("labels") or {}), NAME_LABEL: name}


def allocate_cluster_ip(snapshot: Any, obj: dict[str, Any]) -> None:
    """Give a new Service a cluster IP unless it is headless (``None``) or an ExternalName.

    A requested address is kept as given; otherwise the address is chosen by a stable hash of the
    Service's namespace and name, probing past addresses other Services hold (deterministic, unlike
    upstream's random allocator).
    """
    spec = obj.get("spec")
    if not isinstance(spec, dict) or spec.get("type") == "ExternalName":
        return
    ips = spec.get("clusterIPs")
    if not spec.get("clusterIP") and isinstance(ips, list) and ips:
        spec["clusterIP"] = ips[0]  # NormalizeClusterIPs: the list's first names the primary
    if spec.get("clusterIP") == "None":
        spec.setdefault("clusterIPs", ["None"])
    else:
        if not spec.get("clusterIP"):
            spec["clusterIP"] = _free_address(snapshot, obj)
        if not spec.get("clusterIPs"):
            spec["clusterIPs"] = [spec["clusterIP"]]
    if not spec.get("ipFamilies"):  # the families of the addresses (IPv4 for a headless Service)
        spec["ipFamilies"] = [("IPv6" if ":" in str(ip) else "IPv4") for ip in spec["clusterIPs"] if ip != "None"
                              ] or ["IPv4"]
    spec.setdefault("ipFamilyPolicy", "SingleStack")


def keep_allocated(live: Mapping[str, Any], new: dict[str, Any]) -> None:
    """``patchAllocatedValues``: an update that omits the allocated fields keeps the live ones."""
    old_spec, new_spec = live.get("spec"), new.get("spec")
    if not isinstance(old_spec, Mapping) or not isinstance(new_spec, dict):
        return
    if new_spec.get("type") == "ExternalName":
        return
    for key in _ALLOCATED:
        if not new_spec.get(key) and old_spec.get(key):
            new_spec[key] = old_spec[key]


def _free_address(snapshot: Any, obj: Mapping[str, Any]) -> str:
    used = {str((s.get("spec") or {}).get("clusterIP")) for s in snapshot.objects_of(KindRef("", "v1", "Service"))}
    meta = obj.get("metadata") or {}
    key = f"{meta.get('namespace', '')}/{meta.get('name', '')}".encode()
    size = SERVICE_CIDR.num_addresses - 2  # no network or broadcast address
    start = int.from_bytes(hashlib.sha256(key).digest()[:4], "big") % size
    for step in range(size):
        offset = 2 + (start + step) % (size - 1)  # .1 is the kubernetes Service
        candidate = str(SERVICE_CIDR.network_address + offset)
        if candidate not in used:
            return candidate
    raise RuntimeError("the service CIDR is full")
