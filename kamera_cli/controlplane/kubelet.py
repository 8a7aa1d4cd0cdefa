"""The fake node agent: schedules a pod onto a node and moves it through its lifecycle.

Why one actor for the scheduler and the kubelet: every extra actor multiplies interleavings, and no
user controller can observe the moment between "bound" and "started" that it could act on
differently from "started" (it sees a Pending pod either way).  One kubelet step takes one pod from
where it is to its next resting point:

* an unscheduled pod is bound to a node through ``pods/binding`` (so the server sets
  ``spec.nodeName`` and ``PodScheduled``) and started: its outcome is the explorer's choice among
  the scenario's rule for it (``ready``, ``running``, ``crashLoop``, ``failed``, ``succeeded``,
  ``pending``), written through ``pods/status`` as the kubelet's status manager writes it;
* a pod with ``schedulingGates`` is left alone until a controller removes them (the scheduler's
  SchedulingGates PreEnqueue plugin; the removal is an update, which brings the pod back);
* a pod no node can take gets ``PodScheduled=False`` / ``Unschedulable`` (the scheduler's wording);
* a pod being deleted (``deletionTimestamp`` set) is removed once its grace period has elapsed on
  the virtual clock (the kubelet's final ``gracePeriodSeconds=0`` delete).

The status fields follow the kubelet's ``generateAPIPodStatus`` (pkg/kubelet/kubelet_pods.go) and
``getPhase``: conditions PodReadyToStartContainers, Initialized, Ready, ContainersReady,
PodScheduled; ``hostIP``, ``podIP(s)``, ``startTime``, ``qosClass`` and per-container statuses.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kamera_cli.controlplane.api import NO_REQUEUE, Cluster, ClusterError, Obj, Outcome, Watch
from kamera_cli.controlplane.objects import (
    deleting,
    meta,
    name_of,
    parse_time,
    selector_matches,
    spec,
    status,
)

#: Every outcome a pod rule may list.
OUTCOMES = ("ready", "running", "crashLoop", "failed", "succeeded", "pending")


@dataclass(frozen=True, slots=True)
class PodRule:
    """Pods whose labels match ``selector`` (in ``namespaces``, when given) end in one of ``outcomes``."""

    selector: Mapping[str, Any]
    outcomes: tuple[str, ...]
    namespaces: tuple[str, ...] = ()
    #: the exit code of a failing container (``failed``, and the last termination of ``crashLoop``)
    exit_code: int = 1

    def applies(self, pod: Mapping[str, Any]) -> bool:
        if self.namespaces and str(meta(pod).get("namespace", "")) not in self.namespaces:
            return False
        found = meta(pod).get("labels")
        return selector_matches(self.selector, found if isinstance(found, Mapping) else {})


@dataclass
class Kubelet:
    """The ``kubelet`` built-in (scheduling included)."""

    rules: Sequence[PodRule] = ()
    default: tuple[str, ...] = ("ready",)
    name: str = "kubelet"
    api_version: str = "v1"
    kind: str = "Pod"
    owns: Sequence[tuple[str, str]] = ()
    watches: Sequence[Watch] = field(default_factory=tuple)

    def outcomes_for(self, pod: Mapping[str, Any]) -> tuple[str, ...]:
        rule = self._rule(pod)
        return rule.outcomes if rule is not None else self.default

    def _rule(self, pod: Mapping[str, Any]) -> PodRule | None:
        return next((rule for rule in self.rules if rule.applies(pod)), None)

    def choices(self, obj: Mapping[str, Any] | None) -> tuple[str, ...]:
        if obj is None or deleting(obj) or spec(obj).get("nodeName") or spec(obj).get("schedulingGates"):
            return ()
        if status(obj).get("phase") not in (None, "Pending"):
            return ()
        options = self.outcomes_for(obj)
        return options if len(options) > 1 else ()

    def reconcile(self, cluster: Cluster, namespace: str, name: str, choice: str) -> Outcome:
        pod = cluster.get("v1", "Pod", namespace, name)
        if pod is None:
            return NO_REQUEUE
        if deleting(pod):
            return self._terminate(cluster, pod)
        if spec(pod).get("nodeName") or status(pod).get("phase") not in (None, "Pending"):
            return NO_REQUEUE  # started already: nothing moves until someone changes it
        if spec(pod).get("schedulingGates"):
            return NO_REQUEUE  # the scheduler's SchedulingGates plugin: not queued until the gates are gone
        outcome = choice or self.outcomes_for(pod)[0]
        nodes = [n for n in cluster.list("v1", "Node") if _schedulable(n, pod)]
        if not nodes:
            self._unschedulable(cluster, pod, len(cluster.list("v1", "Node")))
            return NO_REQUEUE
        node = _pick(nodes, pod)
        try:
            cluster.create({"apiVersion": "v1", "kind": "Binding",
                            "metadata": {"name": name, "namespace": namespace},
                            "target": {"apiVersion": "v1", "kind": "Node", "name": name_of(node)}})
        except ClusterError as exc:
            if exc.conflict or exc.not_found:
                return NO_REQUEUE  # bound meanwhile, or gone: the next event brings it back
            raise
        bound = cluster.get("v1", "Pod", namespace, name)
        if bound is None:
            return NO_REQUEUE
        rule = self._rule(bound)
        bound["status"] = started_status(bound, node, outcome, cluster.stamp(),
                                         exit_code=rule.exit_code if rule is not None else 1)
        cluster.update(bound, subresource="status")
        return NO_REQUEUE

    # ------------------------------------------------------------------ pieces
    def _terminate(self, cluster: Cluster, pod: Obj) -> Outcome:
        if meta(pod).get("finalizers"):
            return NO_REQUEUE  # the kubelet's delete would not remove it; whoever owns the finalizer must
        since = parse_time(meta(pod).get("deletionTimestamp"))
        if since is not None and since > cluster.now():
            return Outcome(requeue_after=since - cluster.now(), retry=True)
        try:
            cluster.delete("v1", "Pod", str(meta(pod).get("namespace", "")), name_of(pod), grace_period_seconds=0,
                           preconditions_uid=str(meta(pod).get("uid", "")))
        except ClusterError as exc:
            if not (exc.not_found or exc.conflict):
                raise
        return NO_REQUEUE

    @staticmethod
    def _unschedulable(cluster: Cluster, pod: Obj, total: int) -> None:
        current = next((c for c in status(pod).get("conditions") or () if c.get("type") == "PodScheduled"), None)
        message = f"0/{total} nodes are available: {total} node(s) didn't match Pod's node affinity/selector " \
                  f"or had untolerated taints." if total else "no nodes available to schedule pods"
        if current is not None and current.get("status") == "False" and current.get("message") == message:
            return
        pod["status"] = {**status(pod), "phase": "Pending", "conditions": [
            *(c for c in status(pod).get("conditions") or () if c.get("type") != "PodScheduled"),
            {"type": "PodScheduled", "status": "False", "lastProbeTime": None,
             "lastTransitionTime": cluster.stamp(), "reason": "Unschedulable", "message": message}]}
        cluster.update(pod, subresource="status")


def _tolerates(tolerations: Sequence[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    """``v1helper.TolerationsTolerateTaint`` / ``Toleration.ToleratesTaint``."""
    for tol in tolerations:
        effect = tol.get("effect") or ""
        if effect and effect != taint.get("effect"):
            continue
        key = tol.get("key") or ""
        if key and key != taint.get("key"):
            continue
        op = tol.get("operator") or "Equal"
        if op == "Exists":
            return True
        if op == "Equal" and (tol.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def _requirement(values: Mapping[str, Any], expr: Mapping[str, Any]) -> bool:
    """``nodeaffinity``'s NodeSelectorRequirement: In, NotIn, Exists, DoesNotExist, Gt, Lt."""
    key, op = str(expr.get("key", "")), expr.get("operator")
    wanted = [str(v) for v in expr.get("values") or ()]
    present = key in values
    if op == "In":
        return present and str(values[key]) in wanted
    if op == "NotIn":
        return not present or str(values[key]) not in wanted
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and len(wanted) == 1:
        try:
            have, bound = int(values[key]), int(wanted[0])
        except ValueError:
            return False
        return have > bound if op == "Gt" else have < bound
    return False


def _affinity_matches(node: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """Required node affinity: any term whose every label expression and field expression matches."""
    required = (((spec(pod).get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution"))
    if not required:
        return True
    node_labels = meta(node).get("labels") or {}
    fields = {"metadata.name": name_of(node)}
    return any(all(_requirement(node_labels, e) for e in term.get("matchExpressions") or ())
               and all(_requirement(fields, e) for e in term.get("matchFields") or ())
               for term in required.get("nodeSelectorTerms") or ())


def node_fits(node: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """The node-side filters: nodeSelector, required node affinity, NoSchedule/NoExecute taints.

    An ``unschedulable`` (cordoned) node carries the ``node.kubernetes.io/unschedulable`` taint's
    meaning here: only a pod tolerating it fits (daemon pods do).
    """
    node_labels = meta(node).get("labels") or {}
    for key, value in (spec(pod).get("nodeSelector") or {}).items():
        if node_labels.get(key) != value:
            return False
    if not _affinity_matches(node, pod):
        return False
    tolerations = [t for t in spec(pod).get("tolerations") or () if isinstance(t, Mapping)]
    taints = list(spec(node).get("taints") or ())
    if spec(node).get("unschedulable"):
        taints.append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})
    return all(not (taint.get("effect") in ("NoSchedule", "NoExecute") and not _tolerates(tolerations, taint))
               for taint in taints)


def _schedulable(node: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """What the simulated scheduler requires: a Ready node the pod fits."""
    ready = next((c for c in status(node).get("conditions") or () if c.get("type") == "Ready"), None)
    if ready is not None and ready.get("status") != "True":
        return False
    return node_fits(node, pod)


def _pick(nodes: Sequence[Obj], pod: Mapping[str, Any]) -> Obj:
    """A feasible node chosen by a stable hash of the pod's name (the real scheduler scores nodes)."""
    ordered = sorted(nodes, key=name_of)
    key = f"{meta(pod).get('namespace', '')}/{name_of(pod)}".encode()
    return ordered[int.from_bytes(hashlib.sha256(key).digest()[:4], "big") % len(ordered)]


def pod_ip(pod: Mapping[str, Any]) -> str:
    """A stable address in 10.244.0.0/16 for the pod (a CNI would allocate one)."""
    key = f"{meta(pod).get('namespace', '')}/{name_of(pod)}/{meta(pod).get('uid', '')}".encode()
    n = int.from_bytes(hashlib.sha256(key).digest()[:2], "big")
    return f"10.244.{n >> 8}.{(n & 0xFF) or 1}"


def _qos(pod: Mapping[str, Any]) -> str:
    """``qos.GetPodQOS`` reduced to the three classes by requests and limits of cpu and memory."""
    containers = [c for c in spec(pod).get("containers") or () if isinstance(c, Mapping)]
    guaranteed = bool(containers)
    any_set = False
    for c in containers:
        res = c.get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        any_set = any_set or bool(req) or bool(lim)
        for what in ("cpu", "memory"):
            if what not in lim or str(req.get(what, lim[what])) != str(lim[what]):
                guaranteed = False
    if guaranteed:
        return "Guaranteed"
    return "Burstable" if any_set else "BestEffort"


def started_status(pod: Mapping[str, Any], node: Mapping[str, Any], outcome: str, t: str, *,
                   exit_code: int = 1) -> Obj:
    """The status the kubelet reports once the pod's containers reached ``outcome`` (at time ``t``);
    a failing container exits with ``exit_code``."""
    restart = spec(pod).get("restartPolicy") or "Always"
    containers = [c for c in spec(pod).get("containers") or () if isinstance(c, Mapping)]
    # what the containers do, given the restart policy: a container that exits is restarted under
    # Always (and under OnFailure when it failed), which a kubelet shows as a crash loop
    if outcome == "failed" and restart != "Never":
        outcome = "crashLoop"
    if outcome == "succeeded" and restart == "Always":
        outcome = "crashLoop"
    phase = {"ready": "Running", "running": "Running", "crashLoop": "Running", "failed": "Failed",
             "succeeded": "Succeeded", "pending": "Pending"}[outcome]
    ready = outcome == "ready"
    statuses = []
    for c in containers:
        cs: Obj = {"name": c.get("name"), "image": c.get("image"), "imageID": "", "ready": ready,
                   "restartCount": 1 if outcome == "crashLoop" else 0, "started": outcome in ("ready", "running")}
        if outcome in ("ready", "running"):
            cs["state"] = {"running": {"startedAt": t}}
        elif outcome == "crashLoop":
            cs["state"] = {"waiting": {"reason": "CrashLoopBackOff",
                                       "message": f"back-off 10s restarting failed container={c.get('name')}"}}
            cs["lastState"] = {"terminated": {"exitCode": exit_code, "reason": "Error", "startedAt": t,
                                              "finishedAt": t}}
        elif outcome in ("failed", "succeeded"):
            code = 0 if outcome == "succeeded" else exit_code
            cs["state"] = {"terminated": {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                                          "startedAt": t, "finishedAt": t}}
        else:
            cs["state"] = {"waiting": {"reason": "ErrImagePull", "message": f"failed to pull image {c.get('image')}"}}
        if outcome != "pending":
            cs["containerID"] = "containerd://" + hashlib.sha256(f"{pod_ip(pod)}/{c.get('name')}".encode()).hexdigest()
        statuses.append(cs)
    terminal = phase in ("Succeeded", "Failed")
    reason = "PodCompleted" if terminal else ("" if ready else "ContainersNotReady")
    unready = ", ".join(str(c.get("name")) for c in containers)
    message = "" if ready or terminal else f"containers with unready status: [{unready}]"

    def cond(kind: str, ok: bool, why: str = "", msg: str = "") -> Obj:
        out: Obj = {"type": kind, "status": "True" if ok else "False", "lastProbeTime": None,
                    "lastTransitionTime": t}
        if why:
            out["reason"] = why
        if msg:
            out["message"] = msg
        return out

    conditions = [
        cond("PodReadyToStartContainers", not terminal and outcome != "pending"),
        cond("Initialized", True, "PodCompleted" if terminal else ""),
        cond("Ready", ready, reason, message),
        cond("ContainersReady", ready, reason, message),
        cond("PodScheduled", True),
    ]
    node_ip = next((a.get("address") for a in status(node).get("addresses") or ()
                    if a.get("type") == "InternalIP"), "")
    out: Obj = {"phase": phase, "conditions": conditions, "hostIP": node_ip,
                "hostIPs": [{"ip": node_ip}] if node_ip else [], "startTime": t, "qosClass": _qos(pod),
                "containerStatuses": statuses}
    if outcome != "pending":
        ip = pod_ip(pod)
        out["podIP"] = ip
        out["podIPs"] = [{"ip": ip}]
    return out
