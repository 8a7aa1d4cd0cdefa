"""The DaemonSet controller (pkg/controller/daemon/daemon_controller.go, ``syncDaemonSet``).

One step is one sync of one DaemonSet: for every node, decide whether a daemon pod should run there
(``NodeShouldRunDaemonPod``: the pod's node selector and required node affinity match, and every
NoSchedule/NoExecute taint is tolerated — with the tolerations the controller adds to every daemon
pod), create the missing pods pinned to their node by required node affinity on
``metadata.name`` (the scheduler binds them), delete extra, misplaced and failed ones, roll one
out-of-date pod at a time (``maxUnavailable`` 1), and write the status counters.

Revisions are ControllerRevision objects as ``constructHistory`` / ``snapshot`` / ``cleanupHistory``
keep them: ``<ds>-<hash>`` (the pod-template hash, also each pod's ``controller-revision-hash``),
numbered one past the older ones, the oldest unused ones pruned beyond ``revisionHistoryLimit``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kamera_cli.controlplane import history as H
from kamera_cli.controlplane import rollout as R
from kamera_cli.controlplane.api import NO_REQUEUE, Cluster, ClusterError, Obj, Outcome, Watch
from kamera_cli.controlplane.kubelet import node_fits
from kamera_cli.controlplane.objects import (
    delete_quietly,
    deleting,
    labels,
    meta,
    name_of,
    new_controller_ref,
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
        if deleting(ds):
            revision = R.template_hash(spec(ds).get("template") or {}, status(ds).get("collisionCount"))
            old: list[Obj] = []
        else:
            found = self._construct_history(cluster, ds)
            if found is None:
                return NO_REQUEUE  # a name collision: the collision count was raised, its event brings us back
            revision, old = found
        template = daemon_template(ds, revision)
        nodes = sorted(cluster.list("v1", "Node"), key=name_of)
        pods = [p for p in cluster.list("v1", "Pod", namespace) if owned_by(p, ds) and not deleting(p)]
        by_node: dict[str, list[Obj]] = {}
        for p in pods:
            by_node.setdefault(pinned_node(p), []).append(p)
        should = {name_of(n) for n in nodes if node_fits(n, {"spec": template["spec"]})}
        if not deleting(ds):
            self._manage(cluster, ds, template, nodes, should, by_node, namespace, revision)
            self._cleanup_history(cluster, ds, pods, old)
            pods = [p for p in cluster.list("v1", "Pod", namespace) if owned_by(p, ds) and not deleting(p)]
            by_node = {}
            for p in pods:
                by_node.setdefault(pinned_node(p), []).append(p)
        return self._status(cluster, ds, should, by_node, revision)

    # ------------------------------------------------------------------ history
    @staticmethod
    def _construct_history(cluster: Cluster, ds: Obj) -> tuple[str, list[Obj]] | None:
        """``constructHistory``: the revision holding today's template (renumbered to newest when an
        older number), or a new ``snapshot``; returns its hash and the other revisions. None when the
        name was taken by another template: the collision count goes up and the next sync retries."""
        data = H.template_patch(ds)
        current: list[Obj] = []
        old: list[Obj] = []
        for rev in H.owned_revisions(cluster, ds):
            (current if rev.get("data") == data else old).append(rev)
        number = H.next_revision(old)
        if current:
            # dedupCurHistories: keep the highest-numbered copy
            keep = max(current, key=H.revision_number)
            for extra in current:
                if extra is not keep:
                    H.delete_revision(cluster, extra)
            keep = H.renumber(cluster, keep, max(number, H.revision_number(keep)))
            return str((meta(keep).get("labels") or {}).get(REVISION_LABEL) or name_of(keep)), old
        collisions = status(ds).get("collisionCount")
        digest = R.template_hash(spec(ds).get("template") or {}, collisions)
        template_labels = ((spec(ds).get("template") or {}).get("metadata") or {}).get("labels") or {}
        body: Obj = {"apiVersion": "apps/v1", "kind": "ControllerRevision", "revision": number, "data": data,
                     "metadata": {"name": f"{name_of(ds)}-{digest}", "namespace": meta(ds).get("namespace"),
                                  "labels": {**template_labels, REVISION_LABEL: digest},
                                  "ownerReferences": [new_controller_ref(ds)]}}
        if meta(ds).get("annotations"):
            body["metadata"]["annotations"] = dict(meta(ds)["annotations"])
        try:
            cluster.create(body)
            return digest, old
        except ClusterError as exc:
            if exc.status != 409:
                raise
        existing = cluster.get("apps/v1", "ControllerRevision", str(meta(ds).get("namespace", "")),
                               name_of(body))
        if existing is not None and existing.get("data") == data:
            return digest, old
        new_status = {**status(ds), "collisionCount": int(collisions or 0) + 1}
        write_status(cluster, ds, new_status)
        return None

    @staticmethod
    def _cleanup_history(cluster: Cluster, ds: Obj, pods: list[Obj], old: list[Obj]) -> None:
        """``cleanupHistory``: beyond ``revisionHistoryLimit`` old revisions, delete the oldest that no
        daemon pod runs."""
        limit = spec(ds).get("revisionHistoryLimit")
        to_kill = len(old) - (int(limit) if limit is not None else 10)
        live = {labels(p).get(REVISION_LABEL) for p in pods}
        for rev in H.sort_revisions(old):
            if to_kill <= 0:
                return
            if (meta(rev).get("labels") or {}).get(REVISION_LABEL) in live:
                continue
            H.delete_revision(cluster, rev)
            to_kill -= 1

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
