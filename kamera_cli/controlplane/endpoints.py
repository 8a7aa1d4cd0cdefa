"""The Endpoints and EndpointSlice controllers (pkg/controller/endpoint, pkg/controller/endpointslice).

Both sync one Service: the pods its selector matches that have an IP become addresses, ready ones in
``addresses`` / ``ready: true`` and the others in ``notReadyAddresses`` / ``ready: false`` (all of
them ready with ``publishNotReadyAddresses``), each service port resolved against the pod
(``podutil.FindPort``: a number, or a container port's name). Selector-less Services are left
alone, as upstream leaves them to whoever manages their endpoints.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kamera_cli.controlplane.api import NO_REQUEUE, Cluster, ClusterError, Obj, Outcome, Watch
from kamera_cli.controlplane.objects import (
    deleting,
    labels,
    meta,
    name_of,
    new_controller_ref,
    owned_by,
    pod_ready,
    spec,
    status,
)

MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
CONTROLLER = "endpointslice-controller.k8s.io"
SERVICE_NAME = "kubernetes.io/service-name"
MAX_PER_SLICE = 100


def _in_endpoints(pod: Mapping[str, Any]) -> bool:
    """``ShouldPodBeInEndpoints`` (terminal pods excluded, by restart policy)."""
    phase = status(pod).get("phase")
    policy = spec(pod).get("restartPolicy") or "Always"
    if policy == "Never":
        return phase not in ("Failed", "Succeeded")
    if policy == "OnFailure":
        return phase != "Succeeded"
    return True


def find_port(pod: Mapping[str, Any], port: Mapping[str, Any]) -> int | None:
    """``podutil.FindPort``: the target port as a number, or the named container port with its protocol."""
    target = port.get("targetPort", port.get("port"))
    if isinstance(target, int):
        return target
    if isinstance(target, str) and target.isdigit():
        return int(target)
    protocol = port.get("protocol") or "TCP"
    for container in spec(pod).get("containers") or ():
        for cport in container.get("ports") or ():
            if cport.get("name") == target and (cport.get("protocol") or "TCP") == protocol:
                return int(cport.get("containerPort", 0))
    return None


def members(cluster: Cluster, svc: Mapping[str, Any]) -> list[tuple[Obj, bool]]:
    """(pod, ready) for every pod the Service selects that has an IP and belongs in endpoints."""
    selector = spec(svc).get("selector") or {}
    tolerate = bool(spec(svc).get("publishNotReadyAddresses"))
    out = []
    for pod in cluster.list("v1", "Pod", str(meta(svc).get("namespace", ""))):
        if not all(labels(pod).get(k) == v for k, v in selector.items()):
            continue
        if not status(pod).get("podIP") or (deleting(pod) and not tolerate) or not _in_endpoints(pod):
            continue
        out.append((pod, tolerate or pod_ready(pod)))
    return sorted(out, key=lambda e: (str(status(e[0]).get("podIP")), name_of(e[0])))


def _target(pod: Mapping[str, Any]) -> Obj:
    return {"kind": "Pod", "namespace": meta(pod).get("namespace"), "name": name_of(pod), "uid": meta(pod).get("uid")}


class _ServiceSync:
    owns: Sequence[tuple[str, str]] = ()
    api_version = "v1"
    kind = "Service"

    def choices(self, obj: Mapping[str, Any] | None) -> tuple[str, ...]:
        return ()


@dataclass
class EndpointsController(_ServiceSync):
    """``syncService`` of the Endpoints controller: one Endpoints object named like the Service."""

    name: str = "endpoints"
    watches: Sequence[Watch] = field(default_factory=lambda: (Watch("v1", "Pod", "namespace"),
                                                              Watch("v1", "Endpoints", "sameName")))

    def reconcile(self, cluster: Cluster, namespace: str, name: str, choice: str) -> Outcome:
        svc = cluster.get("v1", "Service", namespace, name)
        current = cluster.get("v1", "Endpoints", namespace, name)
        if svc is None:
            if current is not None:
                _delete(cluster, "v1", "Endpoints", namespace, name)
            return NO_REQUEUE
        if spec(svc).get("selector") is None:
            return NO_REQUEUE
        subsets = self._subsets(cluster, svc)
        want_labels = dict(labels(svc))
        if spec(svc).get("clusterIP") == "None":
            want_labels["service.kubernetes.io/headless"] = ""
        if current is not None and (current.get("subsets") or []) == subsets and labels(current) == want_labels:
            return NO_REQUEUE
        body: Obj = {"apiVersion": "v1", "kind": "Endpoints",
                     "metadata": {"name": name, "namespace": namespace, **({"labels": want_labels} if want_labels
                                                                           else {})}}
        if subsets:
            body["subsets"] = subsets
        if current is None:
            cluster.create(body)
        else:
            body["metadata"] = {**meta(current), **body["metadata"]}
            if not want_labels:
                body["metadata"].pop("labels", None)
            cluster.update(body)
        return NO_REQUEUE

    @staticmethod
    def _subsets(cluster: Cluster, svc: Obj) -> list[Obj]:
        """Addresses grouped by identical resolved ports (``RepackSubsets``), addresses sorted by IP."""
        groups: dict[tuple[tuple[str, int, str], ...], dict[str, list[Obj]]] = {}
        for pod, ready in members(cluster, svc):
            ports = []
            for sp in spec(svc).get("ports") or ():
                number = find_port(pod, sp)
                if number is not None:
                    ports.append((str(sp.get("name") or ""), number, str(sp.get("protocol") or "TCP")))
            if not ports and spec(svc).get("ports"):
                continue
            address: Obj = {"ip": status(pod)["podIP"], "targetRef": _target(pod)}
            if spec(pod).get("nodeName"):
                address["nodeName"] = spec(pod)["nodeName"]
            if spec(pod).get("hostname") and spec(pod).get("subdomain") == name_of(svc):
                address["hostname"] = spec(pod)["hostname"]
            bucket = groups.setdefault(tuple(sorted(ports)), {"addresses": [], "notReadyAddresses": []})
            bucket["addresses" if ready else "notReadyAddresses"].append(address)
        subsets = []
        for ports_key, bucket in sorted(groups.items()):
            subset: Obj = {k: v for k, v in bucket.items() if v}
            if ports_key:
                subset["ports"] = [{**({"name": n} if n else {}), "port": p, "protocol": proto}
                                   for n, p, proto in ports_key]
            subsets.append(subset)
        return subsets


@dataclass
class EndpointSliceController(_ServiceSync):
    """The EndpointSlice controller's reconcile for one Service: its slices hold at most 100 endpoints."""

    name: str = "endpointslice"
    watches: Sequence[Watch] = field(default_factory=lambda: (Watch("v1", "Pod", "namespace"),))
    owns: Sequence[tuple[str, str]] = (("discovery.k8s.io/v1", "EndpointSlice"),)

    def reconcile(self, cluster: Cluster, namespace: str, name: str, choice: str) -> Outcome:
        svc = cluster.get("v1", "Service", namespace, name)
        if svc is None or spec(svc).get("selector") is None:
            return NO_REQUEUE  # the garbage collector removes slices the Service owned
        mine = sorted((s for s in cluster.list("discovery.k8s.io/v1", "EndpointSlice", namespace)
                       if owned_by(s, svc) and labels(s).get(MANAGED_BY) == CONTROLLER), key=name_of)
        ports = [{**({"name": p["name"]} if p.get("name") else {}), "protocol": p.get("protocol") or "TCP",
                  "port": 0, "_svc": p} for p in spec(svc).get("ports") or ()]
        endpoints: list[Obj] = []
        resolved: list[Obj] | None = None
        for pod, ready in members(cluster, svc):
            pod_ports = []
            for p in ports:
                number = find_port(pod, p["_svc"])
                pod_ports.append({k: v for k, v in p.items() if k != "_svc"} | {"port": number})
            if resolved is None:
                resolved = pod_ports
            terminating = deleting(pod)
            ep: Obj = {"addresses": [status(pod)["podIP"]],
                       "conditions": {"ready": ready and not terminating, "serving": pod_ready(pod),
                                      "terminating": terminating},
                       "targetRef": _target(pod)}
            if spec(pod).get("nodeName"):
                ep["nodeName"] = spec(pod)["nodeName"]
            endpoints.append(ep)
        want_ports = resolved if resolved is not None else [{k: v for k, v in p.items() if k not in ("_svc", "port")}
                                                            for p in ports]
        chunks = [endpoints[i:i + MAX_PER_SLICE] for i in range(0, len(endpoints), MAX_PER_SLICE)] or [[]]
        slice_labels = {**labels(svc), SERVICE_NAME: name, MANAGED_BY: CONTROLLER}
        for i, chunk in enumerate(chunks):
            body: Obj = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "addressType": "IPv4",
                         "endpoints": chunk, "ports": want_ports,
                         "metadata": {"namespace": namespace, "labels": slice_labels,
                                      "ownerReferences": [new_controller_ref(svc)]}}
            if i < len(mine):
                current = mine[i]
                if (current.get("endpoints") or []) == chunk and (current.get("ports") or []) == want_ports \
                        and labels(current) == slice_labels:
                    continue
                body["metadata"] = {**meta(current), **body["metadata"]}
                cluster.update(body)
            else:
                body["metadata"]["generateName"] = f"{name}-"
                cluster.create(body)
        for extra in mine[len(chunks):]:
            _delete(cluster, "discovery.k8s.io/v1", "EndpointSlice", namespace, name_of(extra))
        return NO_REQUEUE


def _delete(cluster: Cluster, api_version: str, kind: str, namespace: str, name: str) -> None:
    try:
        cluster.delete(api_version, kind, namespace, name)
    except ClusterError as exc:
        if not exc.not_found:
            raise
