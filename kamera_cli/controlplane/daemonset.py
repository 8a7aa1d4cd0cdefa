"""The DaemonSet controller (pkg/controller/daemon/daemon_controller.go, ``syncDaemonSet``).

One step is one sync of one DaemonSet: for every node, decide whether a daemon pod should run there
(``NodeShouldRunDaemonPod``: the pod's node selector and required node affinity match, and every
NoSchedule/NoExecute taint is tolerated — with the tolerations the controller adds to every daemon
pod), create the missing pods pinned to their node by required node affinity on
``metadata.name`` (the scheduler binds them), delete extra, misplaced and failed ones, roll one
out-of-date pod at a time (``maxUnavailable`` 1), and write the status counters.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kamera_cli.controlplane import rollout as R
from kamera_cli.controlplane.api import NO_REQUEUE, Cluster, Obj, Outcome, Watch
from kamera_cli.controlplane.kubelet import node_fits
from kamera_cli.controlplane.objects import (
    delete_quietly,
    deleting,
    labels,
    meta,
    name_of,
    owned_by,
    parse_time,
    pod_available,
    pod_ready,
    spec,
    status,
    write_status,
)
from kamera_cli.controlplane.pods import pod_from_template
from kamera_cli.controlplane.replicaset import workload_status

REVISION_LABEL = "controller-revision-hash"
#: ``AddOrUpdateDaemonPodTolerations``: what every daemon pod tolerates
DAEMON_TOLERATIONS = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)


def pinned_node(pod: Mapping[str, Any]) -> str:
    """The node a daemon pod belongs to: its ``nodeName``, else its affinity's ``metadata.name``."""
    if spec(pod).get("nodeName"):
        return str(spec(pod)["nodeName"])
    required = (((spec(pod).get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    for term in required.get("nodeSelectorTerms") or ():
        for expr in term.get("matchFields") or ():
            if expr.get("key") == "metadata.name" and expr.get("operator") == "In" and expr.get("values"):
                return str(expr["values"][0])
    return ""


def daemon_template(ds: Mapping[str, Any], revision: str) -> Obj:
    template = copy.deepcopy(dict(spec(ds).get("template") or {}))
    tmeta = template.setdefault("metadata", {})
    tmeta["labels"] = {**(tmeta.get("labels") or {}), REVISION_LABEL: revision}
    pod_spec = template.setdefault("spec", {})
    known = {(t.get("key"), t.get("effect")) for t in pod_spec.get("tolerations") or ()}
    pod_spec["tolerations"] = [*(pod_spec.get("tolerations") or ()),
                               *(dict(t) for t in DAEMON_TOLERATIONS if (t["key"], t["effect"]) not in known)]
    return template


def pin_to(template: Obj, node: str) -> Obj:
    """``ReplaceDaemonSetPodNodeNameNodeAffinity``: a required match on the node's name."""
    out = copy.deepcopy(template)
    affinity = out["spec"].setdefault("affinity", {}).setdefault("nodeAffinity", {})
    affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}
    return out


@dataclass
class DaemonSetController:
    name: str = "daemonset"
    api_version: str = "apps/v1"
    kind: str = "DaemonSet"
    owns: Sequence[tuple[str, str]] = (("v1", "Pod"),)
    watches: Sequence[Watch] = field(default_factory=lambda: (Watch("v1", "Node", "all"),))

    def choices(self, obj: Mapping[str, Any] | None) -> tuple[str, ...]:
        return ()

    def reconcile(self, cluster: Cluster, namespace: str, name: str, choice: str) -> Outcome:
        ds = cluster.get(self.api_version, self.kind, namespace, name)
        if ds is None:
            return NO_REQUEUE
        revision = f"{R.template_hash(spec(ds).get('template') or {}, status(ds).get('collisionCount'))}"
        template = daemon_template(ds, revision)
        nodes = sorted(cluster.list("v1", "Node"), key=name_of)
        pods = [p for p in cluster.list("v1", "Pod", namespace) if owned_by(p, ds) and not deleting(p)]
        by_node: dict[str, list[Obj]] = {}
        for p in pods:
            by_node.setdefault(pinned_node(p), []).append(p)
        should = {name_of(n) for n in nodes if node_fits(n, {"spec": template["spec"]})}
        if not deleting(ds):
            self._manage(cluster, ds, template, nodes, should, by_node, namespace, revision)
            pods = [p for p in cluster.list("v1", "Pod", namespace) if owned_by(p, ds) and not deleting(p)]
            by_node = {}
            for p in pods:
                by_node.setdefault(pinned_node(p), []).append(p)
        return self._status(cluster, ds, should, by_node, revision)

    def _manage(self, cluster: Cluster, ds: Obj, template: Obj, nodes: list[Obj], should: set[str],
                by_node: dict[str, list[Obj]], namespace: str, revision: str) -> None:
        doomed: list[Obj] = []
        for node in nodes:
            node_name = name_of(node)
            here = sorted(by_node.get(node_name, []),
                          key=lambda p: (parse_time(meta(p).get("creationTimestamp")) or 0.0, name_of(p)))
            if node_name not in should:
                doomed.extend(here)
                continue
            failed = [p for p in here if status(p).get("phase") == "Failed"]
            doomed.extend(failed)
            alive = [p for p in here if p not in failed]
            if not alive:
                cluster.create(pod_from_template(pin_to(template, node_name), ds, namespace))
            doomed.extend(alive[1:])  # more than one: keep the oldest
        strategy = spec(ds).get("updateStrategy") or {}
        if (strategy.get("type") or "RollingUpdate") == "RollingUpdate" and not doomed:
            old = [p for n in sorted(by_node) if n in should for p in by_node[n][:1]
                   if labels(p).get(REVISION_LABEL) != revision]
            unavailable = sum(1 for n in should for p in by_node.get(n, [])[:1] if not pod_ready(p))
            if old and unavailable < 1:
                doomed.append(old[0])
        for p in doomed:
            delete_quietly(cluster, "v1", "Pod", p)

    @staticmethod
    def _status(cluster: Cluster, ds: Obj, should: set[str], by_node: dict[str, list[Obj]],
                revision: str) -> Outcome:
        min_ready = int(spec(ds).get("minReadySeconds") or 0)
        scheduled = [by_node[n][0] for n in sorted(should) if by_node.get(n)]
        now = cluster.now() if min_ready else 0
        available = sum(1 for p in scheduled if pod_available(p, min_ready, now))
        fields = {
            "currentNumberScheduled": len(scheduled),
            "numberMisscheduled": sum(1 for n, ps in by_node.items() if n not in should and ps),
            "desiredNumberScheduled": len(should),
            "numberReady": sum(1 for p in scheduled if pod_ready(p)),
            "observedGeneration": meta(ds).get("generation"),
            "updatedNumberScheduled": sum(1 for p in scheduled if labels(p).get(REVISION_LABEL) == revision),
            "numberAvailable": available,
            "numberUnavailable": len(should) - available,
        }
        new = workload_status({k: v for k, v in fields.items()}, list(status(ds).get("conditions") or ()))
        for key in ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady"):
            new.setdefault(key, 0)  # not omitempty in DaemonSetStatus
        write_status(cluster, ds, new)
        return NO_REQUEUE
